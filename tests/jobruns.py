"""Helpers of the tests that run jobs on the embedded backend with real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from bnviz.jobs import get_job
from bnviz.jobs.local import local_worker_pid
from bnviz.records.store import Job, open_store, pid_alive

ROOT = Path(__file__).resolve().parents[1]
TINY = ["smart-init", "--epochs", "1", "--runs", "1", "--width", "4"]
TINY_PARAMS = {"epochs": 1, "runs": 1, "width": 4}
#: Minutes of training on a CPU (3 arms x 1000 epochs): long enough to be killed or cancelled.
LONG_PARAMS = {"epochs": 1000, "runs": 1, "width": 4}

T = TypeVar("T")


def bnviz(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m bnviz ARGS`` in a subprocess with this test's environment (BNVIZ_HOME)."""
    return subprocess.run([sys.executable, "-m", "bnviz", *args], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)


def wait_for(predicate: Callable[[], T | None], timeout: float, what: str,
             poll: float = 0.1) -> T:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(poll)


def ended(job_id: str) -> Job | None:
    job = get_job(job_id)
    assert job is not None
    return job if job.ended else None


def wait_running(job_id: str, timeout: float = 90) -> Job:
    """Wait until the job's own process runs it (its pid and device are set by the runner).
    Reads the store itself: get_job on a queued job would start more workers (see
    test_reading_a_queued_job_starts_no_second_worker)."""
    store = open_store()

    def running() -> Job | None:
        job = store.get(job_id)
        assert job is not None
        if job.ended:
            pytest.fail(f"job {job_id} ended before it was seen running: {job.status} "
                        f"({job.error})")
        return job if job.status == "running" and job.device is not None else None

    return wait_for(running, timeout, f"job {job_id} to run", poll=0.2)


def one_error_line(rc: int, out: str, err: str) -> str:
    """Exit code 2, nothing on stdout, exactly one 'bnviz: error:' line on stderr."""
    assert rc == 2, (rc, out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("bnviz: error: "), err
    return lines[0]


def stop_local_worker(home: Path) -> None:
    """SIGTERM the local worker of ``home`` (it kills its job processes) and wait until it is
    gone; reap it when it is this process's child. A worker started by a CLI subprocess was
    re-parented to PID 1, which in some containers never reaps: once it is dead (a zombie at
    most), clear the lock file so that jobs_home's teardown does not wait on the zombie."""
    pid = local_worker_pid()
    if pid is None or pid <= 0:
        return
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
        except ChildProcessError:  # not our child
            if not pid_alive(pid):
                break
        time.sleep(0.05)
    if local_worker_pid() is None:
        (home / "jobs" / "worker.lock").write_text("")
