"""The scaled-out job backend: Celery workers fed by a Redis broker.

With ``BNVIZ_BROKER_URL=redis://host:6379/0`` set, a submitted job is stored in the shared
store (Redis by default, see :mod:`bnviz.jobs.store`) and sent to the broker as the task
``bnviz.run_job`` with the job's id; any machine that runs

    BNVIZ_BROKER_URL=redis://host:6379/0 python -m bnviz worker

picks it up and runs it with :func:`bnviz.jobs.runner.run_job` (cuda when it has a GPU).
Messages are JSON (never pickle). A worker takes one job at a time (``--pool solo``, one
process per GPU is the usual layout; ``--concurrency N`` starts a prefork pool instead).
"""

from __future__ import annotations

import os
from functools import cache

from bnviz.jobs.store import HOST

__all__ = ["TASK_NAME", "broker_url", "celery_app", "run_celery_worker"]

TASK_NAME = "bnviz.run_job"


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
        task_ignore_result=True, worker_prefetch_multiplier=1, task_acks_late=False,
        broker_connection_retry_on_startup=True, broker_connection_timeout=5,
        worker_hijack_root_logger=False, task_default_queue="bnviz")

    @app.task(name=TASK_NAME)
    def run_job_task(job_id: str) -> str:
        from bnviz.jobs.runner import run_job

        return run_job(job_id)

    return app


def run_celery_worker(concurrency: int = 1) -> None:
    """Start a Celery worker for the configured broker (blocks)."""
    url = broker_url()
    if url is None:
        raise ValueError("BNVIZ_BROKER_URL is not set")
    pool = "solo" if concurrency == 1 else "prefork"
    celery_app(url).worker_main(["worker", f"--pool={pool}", f"--concurrency={concurrency}",
                                 "--loglevel=INFO", "-Q", "bnviz", "-n", f"bnviz@{HOST}",
                                 "--without-gossip", "--without-mingle"])
