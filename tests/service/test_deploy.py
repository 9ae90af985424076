"""Deployment: the Dockerfile's exact gunicorn command, run on loopback (no Docker engine on
these machines), serves the page, a callback and /healthz; its HEALTHCHECK command passes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from served import JOBS_REFRESH, free_port

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _instruction(name: str) -> list[str]:
    """The JSON-array form of the last ``name`` instruction (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    lines = [line for line in text.splitlines() if line.startswith(name + " ")]
    assert lines, f"no {name} in the Dockerfile"
    return json.loads(lines[-1][len(name):].strip().split("CMD", 1)[-1].strip())


def _get(url: str, data: bytes | None = None, timeout: float = 30):
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The Dockerfile's CMD, run with this venv's gunicorn on a free loopback port."""
    cmd = _instruction("CMD")
    assert cmd[0] == "gunicorn" and "app:server" in cmd
    port = free_port()
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, BNVIZ_BIND=f"127.0.0.1:{port}", BNVIZ_HOME=str(home),
               BNVIZ_WEB_WORKERS="2", BNVIZ_ACCESS_LOG="0")
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL"):
        env.pop(name, None)
    log = open(home / "gunicorn.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", *cmd], cwd=ROOT, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            _get(base + "/healthz", timeout=2)
            break
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("gunicorn did not start:\n" +
                            (home / "gunicorn.log").read_text()[-3000:])
            time.sleep(0.3)
    yield base, port, proc, home
    proc.terminate()
    proc.wait(30)
    log.close()


def test_the_page_is_served(served):
    base, *_ = served
    status, body = _get(base + "/")
    assert status == 200 and b"<title>bnviz</title>" in body
    status, body = _get(base + "/_dash-layout")
    assert status == 200 and b"Jobs (Fig. 4, 5, 10)" in body


def test_a_callback_answers(served):
    base, *_ = served
    payload = JOBS_REFRESH
    status, body = _get(base + "/_dash-update-component", json.dumps(payload).encode())
    reply = json.loads(body)
    assert status == 200
    assert "No jobs yet" in json.dumps(reply["response"]["jobs-table"])
    assert "local worker pool" in reply["response"]["jobs-backend"]["children"]


def test_healthz(served):
    base, *_ = served
    status, body = _get(base + "/healthz")
    health = json.loads(body)
    assert status == 200
    assert health["status"] == "ok" and health["device"] == "cpu"
    assert health["version"] == __import__("bnviz").__version__
    assert health["jobs"] == {"backend": "local", "store": "sqlite", "store_reachable": True,
                              "reachable": True}


def test_the_healthcheck_command_passes(served):
    _, port, *_ = served
    check = _instruction("HEALTHCHECK")
    assert check[0] == "python" and "/healthz" in check[-1]
    code = check[-1].replace("8050", str(port))
    assert subprocess.run([sys.executable, "-c", code], timeout=30).returncode == 0


def test_two_gunicorn_workers_serve_and_debug_is_off(served):
    _, _, proc, home = served
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    assert len(children) == 2  # BNVIZ_WEB_WORKERS
    log = (home / "gunicorn.log").read_text()
    assert "Using worker: gthread" in log and "Debug mode" not in log


def test_healthz_degraded_when_the_broker_is_down(monkeypatch, tmp_home):
    from bnviz.service.health import health

    monkeypatch.setenv("BNVIZ_BROKER_URL", f"redis://127.0.0.1:{free_port()}/0")
    monkeypatch.setenv("BNVIZ_STORE_URL", f"sqlite:///{tmp_home / 'jobs.sqlite'}")
    report = health()
    assert report["status"] == "degraded"
    assert report["jobs"]["backend"] == "celery" and report["jobs"]["broker_reachable"] is False


def test_make_run_serves_with_gunicorn_on_the_readmes_address(tmp_path):
    """`make run` (README) serves the dashboard with gunicorn's threaded workers, not Flask's
    development server, on BNVIZ_HOST:BNVIZ_PORT; SIGTERM to its group stops it."""
    import signal

    port = free_port()
    env = {**os.environ, "BNVIZ_HOST": "127.0.0.1", "BNVIZ_PORT": str(port),
           "BNVIZ_HOME": str(tmp_path / "home"), "BNVIZ_WEB_WORKERS": "1",
           "BNVIZ_ACCESS_LOG": "0", "PYTHON": sys.executable}
    proc = subprocess.Popen(["make", "--no-print-directory", "run"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                status, body = _get(f"http://127.0.0.1:{port}/healthz", timeout=5)
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
                assert time.monotonic() < deadline, "make run did not serve"
                time.sleep(0.5)
        assert status == 200 and json.loads(body)["status"] in ("ok", "degraded")
        req = urllib.request.Request(f"http://127.0.0.1:{port}/")
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200 and "gunicorn" in r.headers.get("Server", "")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=60)[0].decode()
    assert "Booting worker" in out and "gthread" in out
