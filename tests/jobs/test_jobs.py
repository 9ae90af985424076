"""Tests of the background jobs: persistence and the embedded backend (the stores' semantics
and reaping: tests/records/test_store.py).

* The embedded backend is tested with real processes: ``python -m bnviz jobs ...`` in
  subprocesses, the detached local worker it starts, and a job process per job. Jobs are tiny
  (smart-init on digits, width 4, one epoch, one run); the "long" job (1000 epochs) is only ever
  killed or cancelled.

Every test that can start a local worker uses the ``home`` fixture (``jobs_home`` plus a
teardown that stops the worker and reaps it, see :func:`_stop_local_worker`).

Celery is tested elsewhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from jobruns import (
    LONG_PARAMS,
    ROOT,
    TINY,
    TINY_PARAMS,
    bnviz,
    ended,
    one_error_line,
    wait_for,
    wait_running,
)

from bnviz.cli import main
from bnviz.images.experiments import summarise
from bnviz.images.params import ARMS, check_params
from bnviz.jobs import (
    cancel_job,
    get_job,
    job_details,
    list_jobs,
    rerun_job,
    submit_job,
    wait_job,
)
from bnviz.jobs.local import ensure_local_worker, local_worker_pid
from bnviz.records.sqlite_store import SQLiteStore
from bnviz.records.store import (
    open_store,
    pid_alive,
)

SMART_INIT_ARMS = set(ARMS["smart-init"])


# --------------------------------------------------------------------------- persistence


def test_jobs_metrics_and_logs_survive_a_restart(jobs_home: Path) -> None:
    path = jobs_home / "jobs" / "jobs.sqlite"
    assert open_store().url == f"sqlite:///{path}"  # the default store of this BNVIZ_HOME
    first = SQLiteStore(path)
    params = check_params("smart-init", TINY_PARAMS)
    job = first.create("smart-init", params)
    assert first.claim(job.id, os.getpid())
    first.update(job.id, device="cpu", progress=0.5)
    rows = [{"arm": arm, "run": 0, "epoch": 1, "train_loss": 1.0 + i, "test_accuracy": 0.25 * i,
             "seconds": 0.1} for i, arm in enumerate(ARMS["smart-init"])]
    lines = [f"log line {i}" for i in range(7)]
    for row in rows:
        first.add_metric(job.id, row)
    for line in lines:
        first.add_log(job.id, line)
    assert first.finish(job.id, "succeeded", summary=summarise("smart-init", rows))
    other = first.create("smart-init", params)
    assert first.request_cancel(other.id) == "cancelled"
    saved, saved_other = first.get(job.id), first.get(other.id)
    del first

    again = SQLiteStore(path)  # another store object: what a restarted server opens
    assert again.get(job.id) == saved and again.get(other.id) == saved_other
    assert again.metrics(job.id) == rows
    assert again.logs(job.id) == lines
    assert [j.id for j in again.list()] == [other.id, job.id]

    shown = bnviz("jobs", "show", job.id, "--json")  # another process
    assert shown.returncode == 0, shown.stderr
    details = json.loads(shown.stdout)
    assert details["id"] == job.id and details["status"] == "succeeded"
    assert details["params"] == params and details["device"] == "cpu"
    assert details["metrics"] == rows and details["log"] == lines
    assert details["summary"] == saved.summary
    bn_init = list(ARMS["smart-init"]).index("bn_init")
    assert details["summary"]["arms"]["bn_init"]["final"] == 0.25 * bn_init


# --------------------------------------------------------------------------- embedded backend


@pytest.mark.slow
def test_embedded_backend_end_to_end(home: Path) -> None:
    # the id alone, for scripts (the Celery test reads --json's)
    submitted = bnviz("jobs", "submit", *TINY, "--id-only")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert submitted.stdout == job_id + "\n" and len(job_id) == 12

    waited = bnviz("jobs", "wait", job_id, "--timeout", "110")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert waited.stdout.split() == [job_id, "succeeded"]

    shown = bnviz("jobs", "show", job_id, "--json")
    assert shown.returncode == 0, shown.stderr
    details = json.loads(shown.stdout)
    assert {"id", "type", "status", "params", "metrics", "device", "error"} <= set(details)
    assert (details["id"], details["type"], details["status"], details["error"]) == (
        job_id, "smart-init", "succeeded", None)
    assert details["device"] and details["progress"] == 1.0
    assert details["params"] == check_params("smart-init", TINY_PARAMS)
    metrics = details["metrics"]
    assert len(metrics) == len(SMART_INIT_ARMS) and {r["arm"] for r in metrics} == SMART_INIT_ARMS
    for row in metrics:
        assert (row["run"], row["epoch"]) == (0, 1)
        assert 0.0 <= row["test_accuracy"] <= 1.0
    assert set(details["summary"]["arms"]) == SMART_INIT_ARMS

    listed = bnviz("jobs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    jobs = json.loads(listed.stdout)["jobs"]
    assert [(j["id"], j["status"]) for j in jobs] == [(job_id, "succeeded")]

    again = rerun_job(job_id)  # the worker the CLI started is still there
    assert again.id != job_id and again.rerun_of == job_id
    assert (again.type, again.params) == ("smart-init", details["params"])
    assert wait_job(again.id, timeout=90).status == "succeeded"
    assert [j.id for j in list_jobs()] == [again.id, job_id]
    assert get_job(again.id).rerun_of == job_id


@pytest.mark.slow
def test_cancel_a_queued_and_a_running_job(home: Path) -> None:
    long = submit_job("smart-init", LONG_PARAMS)
    running = wait_running(long.id)
    queued = submit_job("smart-init", TINY_PARAMS)  # one job at a time: this one waits
    assert get_job(queued.id).status == "queued"
    assert cancel_job(queued.id) == "cancelled"
    job = get_job(queued.id)
    assert (job.status, job.started) == ("cancelled", None)

    t0 = time.monotonic()
    assert cancel_job(long.id) == "running"
    assert get_job(long.id).cancel_requested
    # the job process stops at its next look at the flag (about a second), or the worker
    # kills it after CANCEL_GRACE_SECONDS (10 s)
    done = wait_for(lambda: ended(long.id), 20, "the running job to stop")
    assert done.status == "cancelled", done
    assert "cancelled" in done.error and done.finished is not None
    assert time.monotonic() - t0 < 20
    wait_for(lambda: not pid_alive(running.pid), 10, f"job process {running.pid} to exit")
    time.sleep(1.0)  # a few worker rounds: the cancelled queued job is never started
    job = get_job(queued.id)
    assert (job.status, job.started) == ("cancelled", None)


def test_cancel_of_an_unknown_job_is_one_line_and_exit_code_2(
        jobs_home: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    result = bnviz("jobs", "cancel", "0123456789ab")  # as a shell sees it
    line = one_error_line(result.returncode, result.stdout, result.stderr)
    assert "0123456789ab" in line and "no job" in line
    capsysbinary.readouterr()
    for args, text in ((["cancel", "not-an-id"], "not a job id"),
                       (["show", "0123456789ab"], "no job 0123456789ab"),
                       (["wait", "0123456789ab"], "no job 0123456789ab"),
                       (["rerun", "0123456789ab"], "no job 0123456789ab")):
        rc = main(["jobs", *args])
        captured = capsysbinary.readouterr()
        assert text in one_error_line(rc, captured.out.decode(), captured.err.decode())


@pytest.mark.parametrize(("args", "expected"), [
    (["smart-init", "--epochs", "0"], ["--epochs", "from 1 to 1000"]),
    (["smart-init", "--lr", "nan"], ["--lr: enter a number from 1e-06 to 10, got 'nan'"]),
    (["smart-init", "--width", "4.5"], ["--width", "whole number"]),
    (["smart-init", "--dataset", "../x"], ["--dataset", "'../x'"]),
    (["smart-init", "--dataset", "folder:../x"], ["--dataset", "folder:../x"]),
    (["smart-init", "--dataset", "cifar10"], ["CIFAR-10", "cifar-10-batches-py", "download"]),
    (["smart-init", "--epochs", "1000", "--runs", "50", "--max-train", "1000000"], ["cap"]),
    (["no-such-type"], ["no-such-type"]),
])
def test_bad_parameters_are_refused_and_nothing_is_stored(
        jobs_home: Path, capsysbinary: pytest.CaptureFixture[bytes], args: list[str],
        expected: list[str]) -> None:
    capsysbinary.readouterr()
    rc = main(["jobs", "submit", *args])
    captured = capsysbinary.readouterr()
    line = one_error_line(rc, captured.out.decode(), captured.err.decode())
    for text in expected:
        assert text in line, line
    if "cifar10" in args:  # names where it looked
        assert str(jobs_home / "data" / "cifar-10-batches-py") in line, line
    path = jobs_home / "jobs" / "jobs.sqlite"
    assert not path.exists() or SQLiteStore(path).list() == []
    assert local_worker_pid() is None  # and no worker was started for it


def test_rerun_makes_a_new_job_with_the_same_params(home: Path) -> None:
    store = open_store()
    params = check_params("smart-init", {**TINY_PARAMS, "seed": 7})
    old = store.create("smart-init", params)
    assert store.finish(old.id, "failed", "out of memory")
    new = rerun_job(old.id)
    assert cancel_job(new.id) in ("cancelled", "running")  # it need not run to be checked
    got = get_job(new.id)
    assert got.id != old.id and got.rerun_of == old.id
    assert (got.type, got.params) == ("smart-init", params)
    assert got.created > old.created
    assert get_job(old.id).status == "failed" and get_job(old.id).rerun_of is None
    with pytest.raises(KeyError):
        rerun_job("0123456789ab")
    assert wait_job(new.id, timeout=30).status == "cancelled"
    # the worker rerun_job started: let it take the lock, so that the teardown stops it
    wait_for(lambda: (local_worker_pid() or 0) > 0, 60, "the worker to start")


# --------------------------------------------------------------------------- worker lock


@pytest.mark.slow
def test_one_local_worker_per_home_and_the_lock_dies_with_it(home: Path) -> None:
    assert local_worker_pid() is None
    with (home / "first-worker.log").open("wb") as log:
        first = subprocess.Popen([sys.executable, "-m", "bnviz", "worker", "--idle-exit", "0"],
                                 cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: local_worker_pid() == first.pid, 60, "the first worker to start")
        second = bnviz("worker", "--idle-exit", "0", timeout=60)
        line = one_error_line(second.returncode, second.stdout, second.stderr)
        assert "already running" in line, line
        assert first.poll() is None and local_worker_pid() == first.pid
        assert ensure_local_worker() == first.pid  # nothing new is started either
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert local_worker_pid() is None  # the kernel dropped the lock with the process
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    new = ensure_local_worker()  # a crashed worker does not block the next one
    assert new != first.pid
    wait_for(lambda: local_worker_pid() == new, 60, "a new worker to take the lock")


class _CountingSubprocess:
    """bnviz.jobs.local's ``subprocess``, counting the processes it starts."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)

    def Popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen:  # noqa: N802 (the name)
        proc = subprocess.Popen(*args, **kwargs)
        self.started.append(proc)
        return proc


@pytest.mark.slow
def test_reading_a_queued_job_starts_no_second_worker(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bnviz.jobs import local

    spy = _CountingSubprocess()
    monkeypatch.setattr(local, "subprocess", spy)
    job = submit_job("smart-init", TINY_PARAMS)
    try:
        for _ in range(3):  # a page polling the new job
            assert get_job(job.id) is not None
            time.sleep(0.1)
        wait_for(lambda: (local_worker_pid() or 0) > 0, 60, "a worker to take the lock")
        workers = [p for p in spy.started if "worker" in p.args]
        assert len(workers) == 1, [p.pid for p in workers]
    finally:
        holder = local_worker_pid()
        for p in spy.started:
            if p.pid != holder:
                try:
                    p.wait(60)  # the extra workers exit ('already running')
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


# --------------------------------------------------------------------------- wait_job, ids


def test_wait_job_times_out_on_a_running_job(jobs_home: Path) -> None:
    store = open_store()
    job = store.create("smart-init", check_params("smart-init", TINY_PARAMS))
    assert store.claim(job.id, os.getpid())  # "running" in this (live) process: not reaped
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="still running"):
        wait_job(job.id, timeout=0.5, poll=0.05)
    assert 0.5 <= time.monotonic() - t0 < 10
    assert get_job(job.id).status == "running"
    assert store.finish(job.id, "succeeded")
    assert wait_job(job.id, timeout=0.5).status == "succeeded"
    assert get_job(job.id.upper()).id == job.id  # ids are case-insensitive
    assert local_worker_pid() is None


@pytest.mark.parametrize("bad", ["", "nope", "../../etc/passwd", "0123456789abc", "g123456789ab",
                                 "0123-5678-ab", 123, None])
def test_invalid_job_ids_raise_value_error(jobs_home: Path, bad: Any) -> None:
    for fn in (get_job, job_details, cancel_job, rerun_job, wait_job):
        with pytest.raises(ValueError, match="not a job id"):
            fn(bad)


def test_unknown_job_ids(jobs_home: Path) -> None:
    unknown = "0123456789ab"
    assert get_job(unknown) is None and job_details(unknown) is None
    for fn in (cancel_job, rerun_job, wait_job):
        with pytest.raises(KeyError):
            fn(unknown)
