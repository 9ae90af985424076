"""Background jobs: every computation that outlives a request, persisted, on a local worker or
on Celery workers (see :mod:`bnviz.jobs.local`, :mod:`bnviz.jobs.celery_app`).

The job types (the table: :mod:`bnviz.jobs.registry`; what a type is:
:mod:`bnviz.records.types`) are the BN paper's image experiments and the four computations the
pages start: the density page's Figure 3 (``density``), the debate page's 2D landscape run
(``landscape-2d``), the jitter page's training (``jitter-training``) and the /slice page's
cut (``slice``).

This module is the one entry point the CLI and the pages use:

* :func:`submit_job` (the CLI, the jobs page): always a new job;
* :func:`start_job` (the pages' background runs): the same type and parameters are computed
  once and reused, also after a restart (a queued, running or succeeded job of the same key is
  returned; a succeeded one whose result file is gone is computed again), and at most
  :func:`max_runs` jobs may be queued or running when a page starts a new one
  (:class:`QueueFull`, whose message the page shows);
* list, show, cancel (from any process: the store's cancel flag), re-run and wait.

A submission from a client (the HTTP API, a page: ``client``, an opaque id of its address)
is refused with :class:`ClientBusy` while that client has ``BNVIZ_JOBS_PER_CLIENT`` jobs
queued or running; any new work is refused with :class:`~bnviz.service.disk.DiskFull` while
the disk of ``BNVIZ_HOME`` has less than ``BNVIZ_MIN_FREE_MB`` free.

Every reader first reaps jobs whose worker died (:meth:`JobStore.reap`): such a job is queued
again and handed to a worker, to resume from its last checkpoint (at most
``BNVIZ_JOB_ATTEMPTS`` starts).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bnviz.config import setting
from bnviz.jobs.celery_app import TASK_NAME, broker_url, celery_app
from bnviz.jobs.local import ensure_local_worker
from bnviz.jobs.registry import get_job_type
from bnviz.records.results import has_result
from bnviz.records.store import (
    ENDED,
    ClientBusy,
    Job,
    JobStore,
    QueueFull,
    StoreError,
    check_job_id,
    job_key,
    open_store,
)
from bnviz.records.types import Cancelled, ParamError
from bnviz.service.disk import DiskFull, check_free_disk

__all__ = ["Cancelled", "ClientBusy", "DiskFull", "Job", "ParamError", "QueueFull", "StoreError",
           "backend", "cancel_job", "get_job", "job_details", "jobs_per_client", "list_jobs",
           "max_runs", "reap", "redispatch", "rerun_job", "start_job", "submit_job", "wait_job"]


def backend() -> str:
    """``celery`` when BNVIZ_BROKER_URL is set, else ``local`` (the embedded default)."""
    return "celery" if broker_url() else "local"


def max_runs() -> int:
    """Jobs that may be queued or running when a page starts one: ``BNVIZ_MAX_RUNS``, else the
    number of cores (at least 2). Each is CPU-bound: more would only slow every job down."""
    return int(setting("BNVIZ_MAX_RUNS"))


def jobs_per_client() -> int:
    """``BNVIZ_JOBS_PER_CLIENT``: jobs one client may have queued or running."""
    return int(setting("BNVIZ_JOBS_PER_CLIENT"))


def _dispatch(job: Job) -> None:
    if job.backend == "celery":
        url = broker_url()
        try:
            celery_app(url).send_task(TASK_NAME, args=[job.id], task_id=job.id,
                                      queue="bnviz")
        except Exception as exc:  # kombu raises many kinds; the job must not stay queued
            open_store().finish(job.id, "failed", f"cannot reach the broker {url}: {exc}")
            raise StoreError(f"cannot reach the broker {url}: {exc}") from None
    else:
        ensure_local_worker()


def redispatch(job_id: str) -> None:
    """Hand a queued job to a worker again (a stopped worker's job)."""
    job = open_store().get(job_id)
    if job is not None and job.status == "queued":
        _dispatch(job)


def reap(store: JobStore | None = None) -> list[str]:
    """Queue again the running jobs whose worker was lost (:meth:`JobStore.reap`) and hand
    them to a worker: the local one, or the broker again (its first message was taken by the
    lost worker). Returns their ids."""
    store = store or open_store()
    requeued = store.reap()
    for job_id in requeued:
        job = store.get(job_id)
        if job is not None and job.status == "queued":
            try:
                _dispatch(job)
            except StoreError:
                pass  # the job is failed by _dispatch; the reaper goes on
    return requeued


def submit_job(job_type: str, params: dict[str, Any], rerun_of: str | None = None,
               client: str | None = None) -> Job:
    """Check the parameters (ParamError on bad ones), store a new job and hand it to the
    backend; returns the stored job (queued). ``client``: who submits (ClientBusy when it
    has :func:`jobs_per_client` jobs active); DiskFull when the disk is nearly full."""
    checked = get_job_type(job_type).check(params)
    check_free_disk()
    job = open_store().create(job_type, checked, backend(), rerun_of, job_key(job_type, checked),
                              client, jobs_per_client() if client else None)
    _dispatch(job)
    return job


def start_job(job_type: str, params: dict[str, Any], client: str | None = None) -> Job:
    """What a page's button does: the job of these parameters, reused or new (see the module
    docstring). ParamError on bad parameters, QueueFull at the cap (ClientBusy at the
    client's), DiskFull when the disk is nearly full."""
    spec = get_job_type(job_type)
    checked = spec.check(params)
    store = open_store()
    reap(store)  # a dead worker's job is neither reused nor counted
    gone = [j.id for j in store.find(job_key(job_type, checked))
            if spec.result and j.status == "succeeded" and not has_result(j.id)]
    check_free_disk()
    job, new = store.create_unless(job_type, checked, backend(), max_runs(), gone, client,
                                   jobs_per_client() if client else None)
    if new:
        _dispatch(job)
    elif job.status == "queued" and job.backend == "local" == backend():
        ensure_local_worker()  # queued before a restart: the worker picks it up again
    return job


def list_jobs(limit: int = 200) -> list[Job]:
    store = open_store()
    reap(store)
    jobs = store.list(limit)
    if any(j.status == "queued" and j.backend == "local" for j in jobs) and backend() == "local":
        ensure_local_worker()  # queued before a restart: the worker picks them up again
    return jobs


def get_job(job_id: str) -> Job | None:
    job_id = check_job_id(job_id)
    store = open_store()
    reap(store)
    job = store.get(job_id)
    if job is not None and job.status == "queued" and job.backend == "local" == backend():
        ensure_local_worker()
    return job


def job_details(job_id: str, log_tail: int = 200) -> dict[str, Any] | None:
    """Everything `jobs show` prints: the job, its metrics rows, summary and log tail."""
    job = get_job(job_id)
    if job is None:
        return None
    store = open_store()
    out = job.to_json()
    out["metrics"] = store.metrics(job.id)
    out["log"] = store.logs(job.id, log_tail)
    return out


def cancel_job(job_id: str) -> str:
    """Ask a job to stop, from any process; returns its status after the request (KeyError
    if unknown)."""
    return open_store().request_cancel(check_job_id(job_id))


def rerun_job(job_id: str, client: str | None = None) -> Job:
    job = get_job(job_id)
    if job is None:
        raise KeyError(job_id)
    return submit_job(job.type, job.params, rerun_of=job.id, client=client)


def wait_job(job_id: str, timeout: float | None = None, poll: float = 0.5,
             progress: Callable[[float], None] = lambda fraction: None) -> Job:
    """Block until the job ends (TimeoutError after ``timeout`` seconds); ``progress`` hears
    the job's own fraction done at every poll."""
    job_id = check_job_id(job_id)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        job = get_job(job_id)
        if job is None:
            raise KeyError(job_id)
        if job.status in ENDED:
            return job
        progress(job.progress or 0.0)
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} is still {job.status} after {timeout:g} s")
        time.sleep(poll)
