"""The scaled-out job backend: Celery workers fed by a Redis broker.

With ``BNVIZ_BROKER_URL=redis://host:6379/0`` set, a submitted job is stored in the shared
store (Redis by default, see :mod:`bnviz.jobs.store`) and sent to the broker as the task
``bnviz.run_job`` with the job's id; any machine that runs

    BNVIZ_BROKER_URL=redis://host:6379/0 python -m bnviz worker

picks it up and runs it with :func:`bnviz.jobs.runner.run_job` (cuda when it has a GPU).
Messages are JSON (never pickle). A worker takes one job at a time (``--pool solo``, one
process per GPU is the usual layout; ``--concurrency N`` starts a prefork pool instead).

No job is lost (at least once, with the store as the judge of who runs a job):

* messages are acknowledged late (after the task) and rejected back to the queue when the
  worker process is lost, one message at a time (prefetch 1);
* a warm shutdown (SIGTERM: a deploy) makes the running job stop at its next progress
  report; it goes back to the queue in the store and is sent to the broker again, to resume
  from its checkpoint on the next worker;
* each worker reaps every REAP_SECONDS (:func:`bnviz.jobs.reap`): a job whose worker died
  (no heartbeat) is queued again and sent again; a duplicate message finds the job claimed
  (``run_job`` claims queued jobs only) and does nothing.
"""

from __future__ import annotations

import os
import sys
import threading
from functools import cache

from bnviz.jobs.store import HOST

__all__ = ["REAP_SECONDS", "TASK_NAME", "broker_url", "celery_app", "run_celery_worker"]

TASK_NAME = "bnviz.run_job"
#: How often each worker looks for jobs whose worker was lost.
REAP_SECONDS = 10.0


def broker_url() -> str | None:
    url = os.environ.get("BNVIZ_BROKER_URL", "").strip()
    return url or None


@cache
def celery_app(url: str):
    """The Celery app for a broker URL (one per process)."""
    from celery import Celery

    app = Celery("bnviz", broker=url)
    app.conf.update(
        task_serializer="json", accept_content=["json"], result_backend=None,
        task_ignore_result=True, worker_prefetch_multiplier=1, task_acks_late=True,
        task_reject_on_worker_lost=True, broker_connection_retry_on_startup=True,
        broker_connection_timeout=5, worker_hijack_root_logger=False,
        task_default_queue="bnviz")

    @app.task(name=TASK_NAME)
    def run_job_task(job_id: str) -> str:
        from bnviz.jobs import redispatch
        from bnviz.jobs.runner import run_job

        status = run_job(job_id)
        if status == "queued":  # stopped by a warm shutdown: another worker resumes it
            redispatch(job_id)
        return status

    return app


def _reaper(stop: threading.Event) -> None:
    """Every REAP_SECONDS: say this worker is alive (``/healthz`` counts the workers that
    beat) and queue again the jobs whose worker was lost."""
    from bnviz.jobs import reap
    from bnviz.jobs.store import StoreError, open_store

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

    pool = "solo" if concurrency == 1 else "prefork"
    worker_shutting_down.connect(_on_shutdown, weak=False)
    threading.Thread(target=_reaper, args=(threading.Event(),), daemon=True,
                     name="bnviz-reaper").start()
    celery_app(url).worker_main(["worker", f"--pool={pool}", f"--concurrency={concurrency}",
                                 "--loglevel=INFO", "-Q", "bnviz", "-n", f"bnviz@{HOST}",
                                 "--without-gossip", "--without-mingle"])
