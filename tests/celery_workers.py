"""Celery workers of bnviz (``python -m bnviz worker``, a solo pool each) started and stopped
by a test, on the loopback redis-server of the ``redis_server`` fixture."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def celery_env(redis_url: str, database: int) -> dict[str, str]:
    """This test's environment with BNVIZ_BROKER_URL at a flushed ``database`` of its own
    (the job store is then Redis too)."""
    import redis

    url = redis_url.rsplit("/", 1)[0] + f"/{database}"
    redis.Redis.from_url(url).flushdb()
    env = dict(os.environ, BNVIZ_BROKER_URL=url, PYTHONPATH=str(ROOT))
    env.pop("BNVIZ_STORE_URL", None)
    return env


def start_worker(env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """A worker in its own session (its pid is its process group's), once it is ready."""
    log = open(log_path, "ab")  # noqa: SIM115 (the child keeps it)
    start = log_path.stat().st_size
    proc = subprocess.Popen([sys.executable, "-m", "bnviz", "worker"], env=env, cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    deadline = time.monotonic() + 90
    while b"ready." not in log_path.read_bytes()[start:]:
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_worker(proc)
            pytest.fail("celery worker did not start:\n" + log_path.read_text()[-2000:])
        time.sleep(0.2)
    return proc


def stop_worker(proc: subprocess.Popen) -> None:
    """SIGTERM (a warm shutdown), then SIGKILL after 30 s; a stopped worker is continued."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGCONT)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
