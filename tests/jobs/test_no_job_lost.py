"""No job is lost, tested by killing and stopping processes for real on the embedded backend
(a detached local worker, a process per job, the SQLite store):

* a job process killed with SIGKILL: its job goes back to the queue, the worker starts it
  again, and it resumes from its last checkpoint (its rows are not written twice);
* a worker stopped with SIGTERM (a deploy): its running job goes back to the queue with its
  checkpoint, and the next worker resumes it;
* a job process that went silent and was given to a later attempt stops by itself;
* a store locked by another process for longer than a busy wait does not kill the worker.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path

import pytest
from jobruns import TINY_PARAMS, stop_local_worker, wait_for, wait_running

from bnviz.images.params import ARMS
from bnviz.jobs import cancel_job, get_job, submit_job, wait_job
from bnviz.jobs.local import ensure_local_worker, local_worker_pid
from bnviz.records.results import checkpoint_path
from bnviz.records.store import open_store, pid_alive

#: A few seconds of training on the CPU (36 epoch-arms): long enough that a stop sent
#: after its first checkpoint finds it still running (with 4 epochs it once finished first).
RESUMABLE = {"epochs": 12, "runs": 1, "width": 4, "max_train": 600}


def _rows_after(job_id: str, count: int, timeout: float = 120) -> list[dict]:
    store = open_store()
    return wait_for(lambda: (rows := store.metrics(job_id)) and len(rows) >= count and rows,
                    timeout, f"{count} metric rows of job {job_id}", poll=0.1)


def _check_rows_once_each(job_id: str) -> None:
    rows = open_store().metrics(job_id)
    keys = Counter((r["arm"], r["run"], r["epoch"]) for r in rows)
    expected = {(arm, 0, epoch) for arm in ARMS["smart-init"]
                for epoch in range(1, RESUMABLE["epochs"] + 1)}
    assert set(keys) == expected and max(keys.values()) == 1, keys


@pytest.mark.slow
def test_a_killed_job_process_is_started_again_and_resumes(home: Path) -> None:
    job = submit_job("smart-init", RESUMABLE)
    running = wait_running(job.id)
    worker = local_worker_pid()
    _rows_after(job.id, 1)
    wait_for(checkpoint_path(job.id).is_file, 30, "the first checkpoint")
    os.kill(running.pid, signal.SIGKILL)
    again = wait_for(lambda: (j := get_job(job.id)).attempts == 2 and j.status == "running"
                     and j.pid != running.pid and j, 60, "the job to run again")
    assert local_worker_pid() == worker  # the worker itself goes on
    log = open_store().logs(job.id, 100)
    # the worker (the process ended with -9) or a reader's reap (its process ended) saw it
    # first; the public log names no pid
    assert any("queued again" in line and ("code -9" in line or "its process ended" in line)
               for line in log), log
    assert not any(str(running.pid) in line for line in log), log
    done = wait_job(job.id, timeout=180)
    assert done.status == "succeeded", done
    assert any("resumed from the checkpoint" in line for line in open_store().logs(job.id))
    _check_rows_once_each(job.id)
    assert not checkpoint_path(job.id).exists()  # removed once the job ended
    assert again.attempts == 2


@pytest.mark.slow
def test_a_stopped_worker_queues_its_job_and_the_next_one_resumes_it(home: Path) -> None:
    job = submit_job("smart-init", RESUMABLE)
    running = wait_running(job.id)
    _rows_after(job.id, 1)
    wait_for(checkpoint_path(job.id).is_file, 30, "the first checkpoint")
    worker = local_worker_pid()
    os.kill(worker, signal.SIGTERM)  # what a deploy does to the worker
    wait_for(lambda: local_worker_pid() is None, 30, "the worker to stop")
    wait_for(lambda: not pid_alive(running.pid), 10, "the job process to stop")
    stopped = open_store().get(job.id)  # (get_job would start a worker for it)
    assert stopped.status == "queued" and stopped.attempts == 1, stopped
    kept = len(open_store().metrics(job.id))
    assert kept >= 1 and checkpoint_path(job.id).is_file()
    assert any("stopped" in line and "queued again" in line
               for line in open_store().logs(job.id, 50))
    ensure_local_worker()  # the next worker (a restart; any reader starts one too)
    done = wait_job(job.id, timeout=180)
    assert done.status == "succeeded" and done.attempts == 2, done
    _check_rows_once_each(job.id)


@pytest.mark.slow
def test_a_silent_job_given_to_a_later_attempt_stops_its_old_process(home: Path) -> None:
    job = submit_job("smart-init", {**RESUMABLE, "epochs": 200})
    running = wait_running(job.id)
    store = open_store()
    # what every reader's reap does once a heartbeat is late (beats come every 2 s)
    wait_for(lambda: job.id in store.reap(stale=0.3), 10, "reap(stale=0.3) to queue it again")
    wait_for(lambda: not pid_alive(running.pid), 20, "the old job process to stop")
    again = wait_running(job.id)
    assert again.attempts == 2 and again.pid != running.pid
    assert cancel_job(job.id) == "running"
    assert wait_job(job.id, timeout=30).status == "cancelled"


_LOCK_SECONDS = 6.0


@pytest.mark.slow
def test_a_locked_store_does_not_kill_the_worker(home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A SQLite write lock held far longer than the store's busy budget (here 1 s,
    BNVIZ_STORE_BUSY_SECONDS): the worker says so, waits and goes on."""
    monkeypatch.setenv("BNVIZ_STORE_BUSY_SECONDS", "1")
    ensure_local_worker()
    worker = wait_for(lambda: (pid := local_worker_pid()) and pid > 0 and pid, 60,
                      "the worker to start")
    path = home / "jobs" / "jobs.sqlite"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    time.sleep(_LOCK_SECONDS)
    db.execute("COMMIT")
    db.close()
    assert local_worker_pid() == worker and pid_alive(worker)
    log = (home / "jobs" / "worker.log").read_text()
    assert "locked" in log and "trying again" in log, log[-2000:]
    tiny = submit_job("smart-init", TINY_PARAMS)
    assert wait_job(tiny.id, timeout=120).status == "succeeded"
    assert local_worker_pid() == worker
    stop_local_worker(home)
