"""/healthz's report (bnviz.server.health): the store, the queue, the workers' heartbeats,
the free disk; "degraded" (which the container's HEALTHCHECK counts as unhealthy) exactly
when the service cannot do all its work, with one line per problem."""

from __future__ import annotations

import os
import threading
import time
from collections import namedtuple
from pathlib import Path

import pytest

from bnviz.records.store import open_store
from bnviz.server.health import health
from bnviz.service import disk


@pytest.fixture
def home(jobs_home: Path) -> Path:
    open_store()  # the store file exists, as on a server that has started
    return jobs_home


def test_a_fresh_server_is_ok(home: Path) -> None:
    report = health()
    assert report["status"] == "ok" and report["problems"] == []
    jobs = report["jobs"]
    assert (jobs["backend"], jobs["store"], jobs["store_reachable"], jobs["reachable"]) == (
        "local", "sqlite", True, True)
    assert (jobs["queued"], jobs["running"], jobs["workers_alive"]) == (0, 0, 0)
    assert report["disk"]["ok"] and report["disk"]["free_mb"] > report["disk"]["min_free_mb"]


def test_the_queue_and_the_workers_are_reported(home: Path) -> None:
    store = open_store()
    jobs = [store.create("smart-init", {}) for _ in range(3)]
    assert store.claim(jobs[0].id, 1)
    store.beat_worker("local@here:1", {"backend": "local", "running": 1})
    report = health()
    assert report["status"] == "ok"
    assert (report["jobs"]["queued"], report["jobs"]["running"]) == (2, 1)
    assert [w["name"] for w in report["jobs"]["workers"]] == ["local@here:1"]
    assert report["jobs"]["workers"][0]["seconds_since_beat"] < 60


def test_a_job_waiting_with_no_worker_is_degraded(home: Path, monkeypatch) -> None:
    store = open_store()
    job = store.create("smart-init", {})
    assert health()["status"] == "ok"  # just queued: a worker is starting
    store.update(job.id, created=time.time() - 120)
    report = health()
    assert report["status"] == "degraded"
    assert report["problems"] == ["a job has waited 120 s and no worker is running"]
    store.beat_worker("celery@elsewhere:7", {"backend": "celery"})
    assert health()["status"] == "ok"  # a worker beats: it will take the job
    monkeypatch.setenv("BNVIZ_JOB_STALE_SECONDS", "1")
    time.sleep(1.2)
    assert health()["status"] == "degraded"  # its heartbeat is stale now


Usage = namedtuple("Usage", "total used free")


def test_a_nearly_full_disk_is_degraded(home: Path, monkeypatch) -> None:
    monkeypatch.setattr(disk.shutil, "disk_usage", lambda p: Usage(10**12, 10**12, 2**20 * 80))
    report = health()
    assert report["status"] == "degraded" and not report["disk"]["ok"]
    assert report["disk"]["free_mb"] == 80.0
    assert report["problems"] == ["the disk is nearly full (80 MB free, 500 MB kept spare): "
                                  "new work is refused"]


def test_a_hanging_store_is_reported_not_waited_for(home: Path, monkeypatch) -> None:
    """A store that does not answer (a Redis behind a dead network, a disk that hangs):
    /healthz answers while the store still hangs, and says what is wrong; once the store
    answers again, so does /healthz."""
    from bnviz.records import store as store_module

    release = threading.Event()
    real = store_module.open_store()

    class Hanging:
        def __getattr__(self, name):
            def call(*args, **kwargs):
                release.wait(30)
                return getattr(real, name)(*args, **kwargs)
            return call

    monkeypatch.setattr(store_module, "open_store", lambda url=None: Hanging())
    try:
        report = health()
        assert not release.is_set()  # answered while the store still hangs
        assert report["status"] == "degraded" and not report["jobs"]["store_reachable"]
        assert report["problems"] == ["the job store cannot be reached within 2 s"]
        assert "queued" not in report["jobs"]
        assert health()["problems"] == report["problems"]  # hung checks are not piled up
    finally:
        release.set()
    monkeypatch.setattr(store_module, "open_store", lambda url=None: real)
    deadline = time.monotonic() + 30
    while health()["status"] != "ok":  # the hung checks end, and it recovers
        assert time.monotonic() < deadline
        time.sleep(0.2)


# --------------------------------------------------------------------------- its own process


def _call(path: str, method: str = "GET", authorization: str | None = None
          ) -> tuple[str, dict, bytes]:
    """One request through bnviz.server.health_app's WSGI callable."""
    import io

    from bnviz.server.health_app import app

    seen: dict = {}

    def start_response(status: str, headers: list) -> None:
        seen["status"], seen["headers"] = status, dict(headers)

    environ = {"PATH_INFO": path, "REQUEST_METHOD": method, "wsgi.input": io.BytesIO()}
    if authorization is not None:
        environ["HTTP_AUTHORIZATION"] = authorization
    body = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], body


def test_the_health_app_checks_that_the_dashboard_accepts(home: Path, tmp_path: Path,
                                                          monkeypatch) -> None:
    """bnviz serve's /healthz process: ok while the dashboard's socket accepts (busy or not),
    degraded once nothing listens there."""
    import json
    import socket

    path = tmp_path / "dashboard.sock"
    monkeypatch.setenv("BNVIZ_WEB_SOCKET", str(path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(str(path))
        listening.listen(1)  # never accepts: the kernel still queues a connection
        status, headers, body = _call("/healthz")
        report = json.loads(body)
        assert status.startswith("200") and headers["Content-Type"] == "application/json"
        assert report["status"] == "ok" and report["web"]["accepting"] is True
    path.unlink()
    report = json.loads(_call("/healthz")[2])
    assert report["status"] == "degraded" and report["web"]["accepting"] is False
    assert report["problems"] == ["the dashboard's server does not accept connections"]
    assert _call("/healthz", "HEAD")[2] == b""


def test_one_of_two_dashboard_gunicorns_down_is_degraded(home: Path, tmp_path: Path,
                                                          monkeypatch) -> None:
    """bnviz serve's two dashboard gunicorns (issue 42): while one is being started again the
    other serves (accepting), but the report says which share is down."""
    import json
    import socket

    up, down = tmp_path / "one.sock", tmp_path / "two.sock"
    monkeypatch.setenv("BNVIZ_WEB_SOCKET", f"{up}{os.pathsep}{down}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(str(up))
        listening.listen(1)
        report = json.loads(_call("/healthz")[2])
    web = report["web"]
    assert web["accepting"] is True and (web["servers"], web["servers_accepting"]) == (2, 1)
    assert report["status"] == "degraded"
    assert "1 of the dashboard's 2 servers do not accept connections" in report["problems"][0]


def _dashboard(path: Path, delay: float, stop: threading.Event) -> threading.Thread:
    """A stand-in for the dashboard's gunicorn on a unix socket: answers every request with
    200 after ``delay`` seconds, one at a time, until ``stop``."""
    import socket

    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(path))
    listening.listen(8)
    listening.settimeout(0.1)

    def serve() -> None:
        with listening:
            while not stop.is_set():
                try:
                    conn, _ = listening.accept()
                except TimeoutError:
                    continue
                with conn:
                    try:
                        if not conn.recv(65536):  # a connect-only check (accepting)
                            continue
                        stop.wait(delay)
                        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                     b"Connection: close\r\n\r\n{}")
                    except OSError:
                        continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("delay,status", [(0.0, "ok"), (4.0, "degraded")])
def test_a_dashboard_slow_to_answer_a_light_request_is_degraded(home: Path, tmp_path: Path,
                                                                delay: float, status: str):
    """/healthz times a light request to the dashboard in the background (issue 30: heavy
    work once stalled every page while /healthz said "ok") and answers at once itself."""
    from bnviz.server.health import LIGHT_GOAL_SECONDS

    stop = threading.Event()
    path = tmp_path / f"dash-{delay:g}.sock"
    server = _dashboard(path, delay, stop)
    try:
        health(str(path))  # starts the monitor
        time.sleep(LIGHT_GOAL_SECONDS + 0.6)
        t0 = time.monotonic()
        report = health(str(path))
        assert time.monotonic() - t0 < 1.0
    finally:
        stop.set()
        server.join(10)
    assert report["status"] == status, report["problems"]
    seconds = report["web"]["light_request_seconds"]
    if status == "ok":
        assert seconds is not None and seconds < 0.5 and report["problems"] == []
    else:
        assert seconds > LIGHT_GOAL_SECONDS
        assert any("light request" in p for p in report["problems"])


def test_the_health_app_serves_nothing_else(home: Path) -> None:
    assert _call("/")[0].startswith("404") and _call("/healthz/x")[0].startswith("404")
    status, headers, body = _call("/healthz", "POST")
    assert status.startswith("405") and headers["Allow"] == "GET, HEAD"
    # issue 42: its answers carry the browser headers, as every answer of the stack does
    for answer in (headers, _call("/healthz")[1], _call("/")[1]):
        assert answer["Content-Security-Policy"].startswith("default-src 'none'")
        assert answer["X-Content-Type-Options"] == "nosniff" and answer["X-Frame-Options"]
    assert body == b'{"error": "only GET /healthz"}\n'


def test_with_a_jobs_token_anonymous_readers_see_only_the_status(home: Path, monkeypatch):
    """issue 30: nothing internal to anonymous readers (no host or pid in a worker's name,
    no device, no store error's text); the token shows everything, in both /healthz."""
    import json

    from bnviz.web import app as dashboard

    store = open_store()
    store.create("smart-init", {})
    store.beat_worker("local@secret-host:4242", {"backend": "local", "running": 0})
    monkeypatch.setenv("BNVIZ_JOBS_TOKEN", "s3cret")
    flask = dashboard.server.test_client()
    for auth in (None, "Bearer wrong", "s3cret", "Basic s3cret"):
        headers = {} if auth is None else {"Authorization": auth}
        for raw in (_call("/healthz", authorization=auth)[2],
                    flask.get("/healthz", headers=headers).get_data()):
            text = raw.decode()
            report = json.loads(text)
            assert report["status"] == "ok" and report["jobs"] == {"queued": 1, "running": 0}
            assert report["problems"] == 0
            assert "secret-host" not in text and "4242" not in text and "device" not in report
    for raw in (_call("/healthz", authorization="Bearer s3cret")[2],
                flask.get("/healthz", headers={"Authorization": "Bearer s3cret"}).get_data()):
        report = json.loads(raw)
        assert [w["name"] for w in report["jobs"]["workers"]] == ["local@secret-host:4242"]
        assert "device" in report
    monkeypatch.delenv("BNVIZ_JOBS_TOKEN")  # no token: a local server shows everything
    assert "workers" in json.loads(_call("/healthz")[2])["jobs"]


def test_a_lost_job_says_so_without_host_or_pid(home: Path):
    """The job's log is public: the reaper's reason names neither the host nor the pid."""
    from bnviz.records.job import HOST

    store = open_store()
    job = store.create("smart-init", {})
    assert store.claim(job.id, 2**22 + 12345)  # no such process on this host
    assert store.reap() == [job.id]
    log = "\n".join(store.logs(job.id))
    assert "its process ended" in log
    assert HOST not in log and str(2**22 + 12345) not in log

