"""Helpers for tests that run ``bnviz serve`` (nginx, gunicorn and the job worker) or a bare
gunicorn on loopback: start one in its own process group, wait until it answers, and stop the
whole group afterwards, so that a test never leaves a process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def group_pids(pgid: int) -> list[int]:
    """The live processes of a process group (zombies excluded), read from /proc."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, pgrp
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(entry))
    return pids


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start ``argv`` in the repository root in a new session (its own process group), its
    output in ``log``."""
    with open(log, "ab") as out:  # O_APPEND: nginx appends to it too (/dev/stdout)
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def wait_answering(proc: subprocess.Popen, url: str, log: Path, seconds: float = 150) -> None:
    """Wait until ``url`` answers 200; AssertionError (with the log's end) when the process
    ends first or the time is up."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        assert proc.poll() is None, f"ended with {proc.returncode}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no answer from {url}:\n{log.read_text()[-3000:]}"
        time.sleep(0.3)


def stop_group(proc: subprocess.Popen, sig: int = signal.SIGTERM, seconds: float = 60) -> int:
    """Signal the process group of ``proc`` and wait for it to end; whatever is left of the
    group after ``seconds`` is killed (a fixture's teardown: a test that checks the stop
    itself signals and waits on its own). Returns the exit code of ``proc``."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        code = proc.wait(seconds)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        code = proc.wait()
    deadline = time.monotonic() + seconds
    while group_pids(proc.pid):
        if time.monotonic() > deadline:
            kill_group(proc)
            break
        time.sleep(0.1)
    return code


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL whatever is left of the process group of ``proc`` (a test's last resort)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
