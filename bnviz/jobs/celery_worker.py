"""A Celery worker of bnviz's jobs (``python -m bnviz worker`` with ``BNVIZ_BROKER_URL``): the
task's body, the reaper thread and the worker's main loop (:mod:`bnviz.jobs.celery_app` says
how no job is lost).  Its own module because it calls :mod:`bnviz.jobs` (``reap``,
``redispatch``), which sends through :mod:`bnviz.jobs.celery_app`: the sender's side never
imports this one.
"""

from __future__ import annotations

import os
import sys
import threading

from bnviz.jobs import reap, redispatch
from bnviz.jobs.celery_app import PART_TASK_NAME, TASK_NAME, broker_url, celery_app
from bnviz.records.store import HOST, StoreError, open_store

__all__ = ["REAP_SECONDS", "run_celery_worker", "run_part_task"]

#: How often each worker looks for jobs whose worker was lost.
REAP_SECONDS = 10.0


def run_job_task(job_id: str) -> str:
    """The task ``bnviz.run_job``: run the job (the store says whether this worker may), and
    send it again when a warm shutdown stopped it (another worker resumes it)."""
    from bnviz.jobs.runner import run_job  # torch: only in the worker

    status = run_job(job_id)
    if status == "queued":  # stopped by a warm shutdown: another worker resumes it
        redispatch(job_id)
    return status


def run_part_task(job_id: str, part: str) -> str:
    """The task ``bnviz.run_job_part``: one part of a job that fans out (a slice job's tile),
    while the job is still wanted; the part's own code decides whether this worker runs it
    (:data:`bnviz.jobs.registry.PART_RUNNERS`)."""
    from bnviz.jobs.registry import get_part_runner

    job = open_store().get(job_id)
    if job is None or job.ended or job.cancel_requested:
        return "ended"
    return get_part_runner(job.type)(job_id, job.params, part)


def _reaper(stop: threading.Event) -> None:
    """Every REAP_SECONDS: say this worker is alive (``/healthz`` counts the workers that
    beat) and queue again the jobs whose worker was lost."""
    while True:
        try:
            open_store().beat_worker(f"celery@{HOST}:{os.getpid()}",
                                     {"backend": "celery", "host": HOST, "pid": os.getpid()})
            reap()
        except StoreError as exc:
            print(f"bnviz worker: {exc}", file=sys.stderr, flush=True)
        if stop.wait(REAP_SECONDS):
            return


def _on_shutdown(**_: object) -> None:
    from bnviz.jobs.runner import STOPPING

    STOPPING.set()


def run_celery_worker(concurrency: int = 1) -> None:
    """Start a Celery worker for the configured broker (blocks)."""
    url = broker_url()
    if url is None:
        raise ValueError("BNVIZ_BROKER_URL is not set")
    from celery.signals import worker_shutting_down

    app = celery_app(url)
    app.task(name=TASK_NAME)(run_job_task)
    app.task(name=PART_TASK_NAME)(run_part_task)
    pool = "solo" if concurrency == 1 else "prefork"
    worker_shutting_down.connect(_on_shutdown, weak=False)
    threading.Thread(target=_reaper, args=(threading.Event(),), daemon=True,
                     name="bnviz-reaper").start()
    app.worker_main(["worker", f"--pool={pool}", f"--concurrency={concurrency}",
                     "--loglevel=INFO", "-Q", "bnviz", "-n", f"bnviz@{HOST}",
                     "--without-gossip", "--without-mingle"])
