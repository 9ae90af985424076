"""The scaled-out job backend: Celery workers fed by a Redis broker.

With ``BNVIZ_BROKER_URL=redis://host:6379/0`` set, a submitted job is stored in the shared
store (Redis by default, see :mod:`bnviz.records.store`) and sent to the broker as the task
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

This module is the app as both sides need it (its broker, its settings, the task's name):
:mod:`bnviz.jobs` sends with it.  The worker's side (the task's body, the reaper thread,
``worker_main``) is :mod:`bnviz.jobs.celery_worker`, which calls :mod:`bnviz.jobs` back; kept
apart, neither imports the other in a circle.
"""

from __future__ import annotations

import os
from functools import cache

__all__ = ["PART_TASK_NAME", "TASK_NAME", "broker_url", "celery_app"]

TASK_NAME = "bnviz.run_job"
#: One part of a job that fans its work out (a slice job's tile: ``ctx.fan_out``), run by
#: whichever worker is free (:func:`bnviz.jobs.celery_worker.run_part_task`).
PART_TASK_NAME = "bnviz.run_job_part"


def broker_url() -> str | None:
    url = os.environ.get("BNVIZ_BROKER_URL", "").strip()
    return url or None


@cache
def celery_app(url: str):
    """The Celery app for a broker URL (one per process); a worker registers the task on it
    (:func:`bnviz.jobs.celery_worker.run_celery_worker`), a sender sends by name."""
    from celery import Celery

    app = Celery("bnviz", broker=url)
    app.conf.update(
        task_serializer="json", accept_content=["json"], result_backend=None,
        task_ignore_result=True, worker_prefetch_multiplier=1, task_acks_late=True,
        task_reject_on_worker_lost=True, broker_connection_retry_on_startup=True,
        broker_connection_timeout=5, worker_hijack_root_logger=False,
        task_default_queue="bnviz")
    return app
