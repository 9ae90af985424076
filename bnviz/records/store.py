"""Where jobs live: their parameters, status, progress, metrics and logs, persisted.

This module chooses the store (:func:`open_store`, the factory: it imports both stores, which
import only :mod:`bnviz.records.jobstore`, never this module) and is where callers import the
store's names from.  Two stores behind one interface (:class:`~bnviz.records.jobstore.JobStore`,
whose status logic is written once in :mod:`bnviz.records.jobstore`):

* :class:`~bnviz.records.sqlite_store.SQLiteStore`, the embedded default:
  ``$BNVIZ_HOME/jobs/jobs.sqlite`` (WAL mode; every web worker, job process and CLI call opens
  it), so jobs and results survive a restart.
* :class:`~bnviz.records.redis_store.RedisStore`, shared by web servers and Celery workers on
  other machines.

``BNVIZ_STORE_URL`` picks one (``sqlite:///path`` or ``redis://host:port/db``); without it, the
Redis broker's URL when ``BNVIZ_BROKER_URL`` is a Redis URL, else SQLite under BNVIZ_HOME.

Status changes are compare-and-set (queued -> running -> succeeded | failed | cancelled), so a
job is claimed by one worker only and an ended job never changes again. A running job whose
process died, or whose heartbeat stopped, is queued again by ``JobStore.reap``, which the job
system's readers call (:mod:`bnviz.jobs`: list, get, start; the API): no job is left
"running" forever.

Each job has a ``key``, a hash of its type and checked parameters. ``JobStore.create_unless``
is what the pages use: atomically, it returns the live job of the same key (queued, running,
or succeeded, with no cancel asked) instead of a new one, and refuses a new one with
:class:`QueueFull` while ``limit`` jobs are queued or running.
"""

from __future__ import annotations

import os
import threading

from bnviz.config import bnviz_home
from bnviz.messages import brief
from bnviz.records.job import (
    ACTIVE,
    ENDED,
    FIELDS,
    HOST,
    JOB_ID,
    JSON_FIELDS,
    MAX_LOG_LINES,
    REUSABLE,
    STATUSES,
    ClientBusy,
    Job,
    QueueFull,
    StoreError,
    check_job_id,
    job_key,
    pid_alive,
    stale_seconds,
)
from bnviz.records.jobstore import JobStore, max_attempts
from bnviz.records.redis_store import RedisStore
from bnviz.records.sqlite_store import SQLiteStore

__all__ = ["ACTIVE", "ENDED", "FIELDS", "HOST", "JOB_ID", "JSON_FIELDS", "MAX_LOG_LINES",
           "REUSABLE", "STATUSES", "ClientBusy", "Job", "JobStore", "QueueFull", "StoreError",
           "check_job_id", "job_key", "max_attempts", "open_store", "pid_alive",
           "stale_seconds", "store_url"]


def store_url() -> str:
    """The configured store (see the module docstring)."""
    url = os.environ.get("BNVIZ_STORE_URL", "").strip()
    if url:
        return url
    broker = os.environ.get("BNVIZ_BROKER_URL", "").strip()
    if broker.startswith(("redis://", "rediss://")):
        return broker
    return f"sqlite:///{bnviz_home() / 'jobs' / 'jobs.sqlite'}"


_STORES: dict[str, JobStore] = {}
_LOCK = threading.Lock()


def open_store(url: str | None = None) -> JobStore:
    """The store for ``url`` (default :func:`store_url`), one object per URL and process."""
    url = url or store_url()
    with _LOCK:
        if url not in _STORES:
            if url.startswith(("redis://", "rediss://", "unix://")):
                _STORES[url] = RedisStore(url)
            elif url.startswith("sqlite:///"):
                _STORES[url] = SQLiteStore(url[len("sqlite:///"):])
            else:
                raise StoreError(f"BNVIZ_STORE_URL {brief(url)}: use sqlite:///PATH or redis://...")
        return _STORES[url]
