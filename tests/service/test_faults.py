"""Faults: a web worker killed mid-request, the web server restarted, the local job worker
killed mid-run. After each, jobs and data are intact and the page answers again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from served import JOBS_REFRESH, free_port, post_callback

from bnviz.params.jobs import ARMS
from bnviz.records.sqlite_store import SQLiteStore
from bnviz.records.store import pid_alive

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "bnviz.web.app:server"]
class Server:
    """The Dockerfile's gunicorn command on a loopback port, startable and stoppable."""

    def __init__(self, home: Path):
        self.home, self.port, self.proc = home, free_port(), None
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = dict(os.environ, BNVIZ_BIND=f"127.0.0.1:{self.port}", BNVIZ_HOME=str(self.home),
                   BNVIZ_WEB_WORKERS="2", BNVIZ_ACCESS_LOG="0", PYTHONPATH=str(ROOT))
        log = open(self.home / "gunicorn.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(GUNICORN, cwd=ROOT, env=env, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.wait_healthy()

    def wait_healthy(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2) as r:
                    if json.load(r)["status"] == "ok":
                        return
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("server not healthy:\n" +
                                     (self.home / "gunicorn.log").read_text()[-3000:])
            time.sleep(0.3)

    def workers(self) -> list[int]:
        text = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        return [int(p) for p in text.split() if pid_alive(int(p))]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture
def server(jobs_home: Path):
    s = Server(jobs_home)
    yield s
    s.stop()


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, BNVIZ_HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "bnviz", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_web_worker_killed_mid_request_is_replaced(server):
    server.start()
    # the first worker forked from the preloaded app answers /healthz before the master has
    # forked the second (gunicorn sleeps up to 0.1 s between two forks)
    deadline = time.monotonic() + 30
    while len(before := server.workers()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(before) == 2
    results: list[object] = []

    def slow_requests() -> None:  # keep both workers busy with requests while one dies
        for _ in range(6):
            try:
                results.append(post_callback(server.base, JOBS_REFRESH, timeout=30))
            except (urllib.error.URLError, ConnectionError, OSError) as exc:
                results.append(exc)

    threads = [threading.Thread(target=slow_requests) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    os.kill(before[0], signal.SIGKILL)
    for t in threads:
        t.join(120)
    # the master replaces the dead worker; every request afterwards succeeds
    deadline = time.monotonic() + 60
    while len(server.workers()) < 2 or before[0] in server.workers():
        assert time.monotonic() < deadline, "gunicorn did not replace the killed worker"
        time.sleep(0.2)
    assert before[0] not in server.workers() and len(server.workers()) == 2
    for _ in range(10):
        reply = post_callback(server.base, JOBS_REFRESH)
        assert "No jobs yet" in json.dumps(reply["response"]["jobs-table"])
    assert sum(isinstance(r, dict) for r in results) >= len(results) - 4  # at most the ones
    server.wait_healthy()                                                 # in flight failed


def test_restarting_the_server_keeps_jobs_and_their_results(server, jobs_home):
    server.start()
    out = _cli(jobs_home, "jobs", "submit", "smart-init", "--epochs", "3", "--runs", "1",
               "--width", "4", "--max-train", "400", "--json")
    assert out.returncode == 0, out.stderr
    job_id = json.loads(out.stdout)["id"]
    assert job_id in json.dumps(post_callback(server.base, JOBS_REFRESH)["response"])
    server.stop()  # the web server goes away while the job runs in the detached worker
    waited = _cli(jobs_home, "jobs", "wait", job_id, "--timeout", "120")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    server.start()
    table = json.dumps(post_callback(server.base, JOBS_REFRESH)["response"]["jobs-table"])
    assert job_id in table and "succeeded" in table
    store = SQLiteStore(jobs_home / "jobs" / "jobs.sqlite")
    assert len(store.metrics(job_id)) == 3 * len(ARMS["smart-init"])  # every arm, 3 epochs
    assert store.get(job_id).summary["arms"]["bn_init"]["epoch"] == [1, 2, 3]


def test_a_killed_local_worker_loses_no_job(jobs_home):
    """SIGKILL of the local worker: the job process it started runs on (its own session)
    and finishes; the next submit starts a new worker, which runs the next job."""
    out = _cli(jobs_home, "jobs", "submit", "smart-init", "--epochs", "4", "--runs", "1",
               "--width", "4", "--max-train", "400", "--json")
    job_id = json.loads(out.stdout)["id"]
    store = SQLiteStore(jobs_home / "jobs" / "jobs.sqlite")
    deadline = time.monotonic() + 90
    while (job := store.get(job_id)).status != "running" or job.pid is None or \
            job.pid == int((jobs_home / "jobs" / "worker.lock").read_text() or 0):
        assert time.monotonic() < deadline, f"never ran: {job}"
        time.sleep(0.2)
    worker = int((jobs_home / "jobs" / "worker.lock").read_text())
    os.kill(worker, signal.SIGKILL)
    waited = _cli(jobs_home, "jobs", "wait", job_id, "--timeout", "120")
    assert waited.returncode == 0 and "succeeded" in waited.stdout, waited.stdout
    assert len(store.metrics(job_id)) == 4 * len(ARMS["smart-init"])  # every arm, 4 epochs
    out = _cli(jobs_home, "jobs", "submit", "affine-ablation", "--epochs", "1", "--runs", "1",
               "--width", "4", "--json")
    second = json.loads(out.stdout)["id"]
    assert _cli(jobs_home, "jobs", "wait", second, "--timeout", "120").returncode == 0
    new_worker = int((jobs_home / "jobs" / "worker.lock").read_text())
    assert new_worker != worker
