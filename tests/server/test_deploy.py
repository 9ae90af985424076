"""Deployment: the Dockerfile's exact command (``bnviz serve``: nginx in front of gunicorn, and
the job worker), run on loopback with this venv (no Docker engine on these machines), serves
the page, a callback and /healthz through nginx, refuses an oversized body in nginx, and its
HEALTHCHECK command tells "ok" from anything else."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from served import JOBS_REFRESH, free_port
from stackrun import start, stop_group, wait_answering

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
    """The Dockerfile's CMD (``bnviz serve``), run with this venv on a free loopback port."""
    cmd = _instruction("CMD")
    assert cmd == ["bnviz", "serve"]
    port = free_port()
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, BNVIZ_HOST="127.0.0.1", BNVIZ_PORT=str(port), BNVIZ_HOME=str(home),
               BNVIZ_WEB_WORKERS="2")
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL", "BNVIZ_JOBS_TOKEN"):
        env.pop(name, None)
    log = home / "serve.log"
    proc = start([sys.executable, "-m", "bnviz", *cmd[1:]], env, log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(proc, base + "/healthz", log)
        yield base, port, proc, log
    finally:
        stop_group(proc)


def test_the_page_is_served_through_nginx(served):
    base, *_ = served
    with urllib.request.urlopen(base + "/", timeout=30) as r:
        assert r.status == 200 and b"<title>bnviz</title>" in r.read()
        assert r.headers["Server"] == "nginx"  # nginx answers; gunicorn's header is not shown
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
    with urllib.request.urlopen(base + "/healthz", timeout=30) as r:
        status, server, health = r.status, r.headers["Server"], json.load(r)
    assert status == 200 and server == "nginx"
    assert health["status"] == "ok" and health["device"] == "cpu"
    assert health["version"] == __import__("bnviz").__version__
    jobs = health["jobs"]
    assert (jobs["backend"], jobs["store"], jobs["store_reachable"], jobs["reachable"]) == \
        ("local", "sqlite", True, True)


def test_nginx_refuses_a_3_mb_body(served):
    """413 from nginx itself (its JSON line, its Server header), before gunicorn reads a byte:
    the callback route's cap is 2 MB."""
    base, *_ = served
    with pytest.raises(urllib.error.HTTPError) as refused:
        _get(base + "/_dash-update-component", b"x" * (3 * 2**20))
    assert refused.value.code == 413 and refused.value.headers["Server"] == "nginx"
    assert "over its cap" in json.load(refused.value)["error"]


def _healthcheck(port: int) -> int:
    check = _instruction("HEALTHCHECK")
    assert check[0] == "python" and "/healthz" in check[-1]
    env = dict(os.environ, BNVIZ_PORT=str(port))
    return subprocess.run([sys.executable, "-c", check[-1]], env=env, timeout=30,
                          capture_output=True).returncode


def test_the_healthcheck_command_passes(served):
    _, port, *_ = served
    assert _healthcheck(port) == 0


@pytest.mark.parametrize("reply", [b'{"status": "degraded"}', b'{"status": "OK"}', b"{}",
                                   b"not json"])
def test_the_healthcheck_fails_unless_the_status_is_ok(reply):
    """A server that answers /healthz with anything but status "ok" is unhealthy."""

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert _healthcheck(server.server_address[1]) == 1
    finally:
        server.shutdown()
        server.server_close()


def test_two_gunicorn_workers_serve_and_debug_is_off(served):
    _, _, _, log = served
    # the stack says "serving" once it has seen both gunicorns answer: since the workers are
    # forked ready (preload_app) a request can be answered before that line is written
    deadline = time.monotonic() + 60
    while "serving http" not in (text := log.read_text()):
        assert time.monotonic() < deadline, text[-3000:]
        time.sleep(0.2)
    line = text.split("serving http", 1)[1].split("\n", 1)[0]
    masters = [int(pid) for pid in re.findall(r"gunicorn-\d (\d+)", line)]
    assert len(masters) == 2  # two gunicorns of one worker each: one takes over the other's
    children = [c for m in masters
                for c in Path(f"/proc/{m}/task/{m}/children").read_text().split()]
    assert len(children) == 2  # BNVIZ_WEB_WORKERS in all
    assert "Using worker: gthread" in text and "Debug mode" not in text


def test_healthz_degraded_when_the_broker_is_down(monkeypatch, tmp_home):
    from bnviz.server.health import health

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
            except (urllib.error.URLError, ConnectionError, TimeoutError):  # still booting
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
