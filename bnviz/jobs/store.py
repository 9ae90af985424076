"""Where jobs live: their parameters, status, progress, metrics and logs, persisted.

Two stores behind one interface (:class:`JobStore`):

* :class:`~bnviz.jobs.sqlite_store.SQLiteStore`, the embedded default:
  ``$BNVIZ_HOME/jobs/jobs.sqlite`` (WAL mode; every web worker, job process and CLI call opens
  it), so jobs and results survive a restart.
* :class:`~bnviz.jobs.redis_store.RedisStore`, shared by web servers and Celery workers on
  other machines.

``BNVIZ_STORE_URL`` picks one (``sqlite:///path`` or ``redis://host:port/db``); without it, the
Redis broker's URL when ``BNVIZ_BROKER_URL`` is a Redis URL, else SQLite under BNVIZ_HOME.

Status changes are compare-and-set (queued -> running -> succeeded | failed | cancelled), so a
job is claimed by one worker only and an ended job never changes again. A running job whose
process died, or whose heartbeat stopped, is marked failed by :meth:`JobStore.reap`, which
every reader calls: no job is left "running" forever.

Each job has a ``key``, a hash of its type and checked parameters. :meth:`JobStore.create_unless`
is what the pages use: atomically, it returns the live job of the same key (queued, running,
or succeeded, with no cancel asked) instead of a new one, and refuses a new one with
:class:`ServerBusy` while ``limit`` jobs are queued or running.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from bnviz.config import bnviz_home, setting
from bnviz.messages import brief

__all__ = ["ACTIVE", "ENDED", "HOST", "JOB_ID", "STATUSES", "Job", "JobStore", "ServerBusy",
           "StoreError", "check_job_id", "job_key", "open_store", "pid_alive", "stale_seconds",
           "store_url"]

STATUSES: tuple[str, ...] = ("queued", "running", "succeeded", "failed", "cancelled")
ENDED = frozenset({"succeeded", "failed", "cancelled"})
#: Jobs that occupy a worker or wait for one (what the run cap counts).
ACTIVE: tuple[str, ...] = ("queued", "running")
#: Jobs a page may reuse instead of starting the same computation again.
REUSABLE: tuple[str, ...] = ("queued", "running", "succeeded")
HOST = socket.gethostname()
#: Keep at most this many log lines per job (the tail).
MAX_LOG_LINES = 5000
JOB_ID = re.compile(r"^[0-9a-f]{12}$")


class StoreError(RuntimeError):
    """The job store cannot be reached or read: a message for the user."""


class ServerBusy(ValueError):
    """As many jobs as the server allows are queued or running; the message says so."""

    def __init__(self, active: int):
        super().__init__(f"the server is busy: {active} background computations are going on, "
                         "the most it runs at once; try again when one ends")
        self.active = active


def check_job_id(job_id: object) -> str:
    """A job id as given by a user (URL, CLI, a page's store): 12 hex digits, or ValueError."""
    if not isinstance(job_id, str) or not JOB_ID.match(job_id.strip().lower()):
        raise ValueError(f"{brief(job_id)} is not a job id (12 hex digits, as `jobs list` shows)")
    return job_id.strip().lower()


def job_key(job_type: str, params: dict[str, Any]) -> str:
    """The dedupe key of a job: its type and checked parameters, hashed (24 hex digits)."""
    text = json.dumps({"type": job_type, "params": params}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def stale_seconds() -> float:
    """A running job whose heartbeat is older than this is taken to be dead
    (``BNVIZ_JOB_STALE_SECONDS``, default 60; job processes beat every 2 s)."""
    return setting("BNVIZ_JOB_STALE_SECONDS")


def pid_alive(pid: int) -> bool:
    """Whether a process of this host is alive (a zombie is dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


@dataclass
class Job:
    """One job, as stored. Times are Unix seconds (None until they happen)."""

    id: str
    type: str
    params: dict[str, Any]
    status: str = "queued"
    progress: float = 0.0
    device: str | None = None
    error: str | None = None
    created: float = 0.0
    started: float | None = None
    finished: float | None = None
    heartbeat: float | None = None
    host: str | None = None
    pid: int | None = None
    cancel_requested: bool = False
    backend: str = "local"
    rerun_of: str | None = None
    summary: dict[str, Any] | None = None
    key: str | None = None

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def seconds(self) -> float | None:
        if self.started is None:
            return None
        return (self.finished or time.time()) - self.started

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = self.seconds()
        return out


FIELDS = [f.name for f in fields(Job)]
JSON_FIELDS = frozenset({"params", "summary"})


class JobStore(ABC):
    """The operations every store has; the status logic lives here once."""

    url: str

    # -- primitives a store implements
    @abstractmethod
    def _insert(self, job: Job) -> None: ...

    @abstractmethod
    def _insert_unless(self, job: Job, skip: tuple[str, ...], limit: int | None
                       ) -> tuple[str, int]:
        """Atomically: the id of the newest job with ``job.key`` whose status is in REUSABLE,
        with no cancel asked and not in ``skip``, and -1; else ("", the number of ACTIVE
        jobs) when that number is ``limit`` or more; else insert ``job`` and return
        (job.id, that number)."""

    @abstractmethod
    def get(self, job_id: str) -> Job | None: ...

    @abstractmethod
    def list(self, limit: int = 200) -> list[Job]: ...

    @abstractmethod
    def find(self, key: str, limit: int = 20) -> list[Job]:
        """The jobs with this key, newest first."""

    @abstractmethod
    def _cas(self, job_id: str, allowed: tuple[str, ...], status: str,
             values: dict[str, Any]) -> bool:
        """Set status and values if the job's status is in ``allowed``; atomically."""

    @abstractmethod
    def update(self, job_id: str, **values: Any) -> None:
        """Set fields of an existing job (progress, heartbeat, device, pid, ...)."""

    @abstractmethod
    def add_metric(self, job_id: str, row: dict[str, Any]) -> None: ...

    @abstractmethod
    def metrics(self, job_id: str) -> list[dict[str, Any]]: ...

    @abstractmethod
    def add_log(self, job_id: str, line: str) -> None: ...

    @abstractmethod
    def logs(self, job_id: str, tail: int = 200) -> list[str]: ...

    @abstractmethod
    def ping(self) -> bool: ...

    # -- the status logic
    @staticmethod
    def _new(job_type: str, params: dict[str, Any], backend: str, rerun_of: str | None,
             key: str | None) -> Job:
        return Job(uuid.uuid4().hex[:12], job_type, params, created=time.time(),
                   backend=backend, rerun_of=rerun_of, key=key)

    def create(self, job_type: str, params: dict[str, Any], backend: str = "local",
               rerun_of: str | None = None, key: str | None = None) -> Job:
        job = self._new(job_type, params, backend, rerun_of, key)
        self._insert(job)
        return job

    def create_unless(self, job_type: str, params: dict[str, Any], backend: str = "local",
                      limit: int | None = None, skip: Iterable[str] = ()) -> tuple[Job, bool]:
        """The live job of the same type and parameters (see :class:`JobStore._insert_unless`;
        ``skip``: jobs not to reuse, e.g. succeeded ones whose result file is gone) and False,
        or a new queued job and True; ServerBusy when ``limit`` jobs are active already."""
        job = self._new(job_type, params, backend, None, job_key(job_type, params))
        found, active = self._insert_unless(job, tuple(skip), limit)
        if not found:
            raise ServerBusy(active)
        if found == job.id:
            return job, True
        existing = self.get(found)
        if existing is None:  # deleted in between (by hand): make a new one after all
            return self.create_unless(job_type, params, backend, limit, skip)
        return existing, False

    def claim(self, job_id: str, pid: int) -> bool:
        """queued -> running, for the process ``pid`` of this host."""
        now = time.time()
        return self._cas(job_id, ("queued",), "running",
                         {"started": now, "heartbeat": now, "host": HOST, "pid": pid})

    def claim_next(self, pid: int) -> str | None:
        """Claim the oldest queued job, if any."""
        for job in sorted(self.list(1000), key=lambda j: j.created):
            if job.status == "queued" and not job.cancel_requested and self.claim(job.id, pid):
                return job.id
        return None

    def finish(self, job_id: str, status: str, error: str | None = None,
               summary: dict[str, Any] | None = None) -> bool:
        """running (or queued) -> an ended status; an ended job is never changed."""
        if status not in ENDED:
            raise ValueError(f"not an end status: {status}")
        values: dict[str, Any] = {"finished": time.time(), "error": error}
        if status == "succeeded":
            values["progress"] = 1.0
        if summary is not None:
            values["summary"] = summary
        return self._cas(job_id, ("queued", "running"), status, values)

    def request_cancel(self, job_id: str) -> str:
        """Cancel: a queued job ends at once; a running job is asked to stop (its process
        checks between mini-batches) and is marked cancelled when it does. Returns the job's
        status after the request."""
        if self._cas(job_id, ("queued",), "cancelled",
                     {"finished": time.time(), "cancel_requested": True}):
            return "cancelled"
        job = self.get(job_id)
        if job is None:
            raise KeyError(job_id)
        if job.status == "running":
            self.update(job_id, cancel_requested=True)
        return job.status

    def reap(self, stale: float | None = None) -> list[str]:
        """Mark running jobs whose process is gone (same host) or whose heartbeat is older
        than ``stale`` seconds as failed (cancelled if a cancel was asked); returns their ids."""
        stale = stale_seconds() if stale is None else stale
        now, reaped = time.time(), []
        for job in self.list(1000):
            if job.status != "running":
                continue
            dead = job.host == HOST and job.pid is not None and not pid_alive(job.pid)
            silent = now - (job.heartbeat or job.started or job.created) > stale
            if not (dead or silent):
                continue
            if job.cancel_requested:
                ok = self.finish(job.id, "cancelled", "cancelled")
            else:
                why = (f"process {job.pid} on {job.host} died" if dead else
                       f"no heartbeat from {job.host} for {now - (job.heartbeat or now):.0f} s")
                ok = self.finish(job.id, "failed",
                                 f"the worker running this job stopped ({why}); re-run it")
            if ok:
                reaped.append(job.id)
        return reaped


# --------------------------------------------------------------------------- choosing one


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
                from bnviz.jobs.redis_store import RedisStore

                _STORES[url] = RedisStore(url)
            elif url.startswith("sqlite:///"):
                from bnviz.jobs.sqlite_store import SQLiteStore

                _STORES[url] = SQLiteStore(url[len("sqlite:///"):])
            else:
                raise StoreError(f"BNVIZ_STORE_URL {brief(url)}: use sqlite:///PATH or redis://...")
        return _STORES[url]
