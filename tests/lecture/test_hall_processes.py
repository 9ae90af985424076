"""The hall's answers are shared by a server's processes (issue 46, item 6): gunicorn runs
several web workers, so a phone's tap reaches one and the projector's poll another. Two
processes serve the hall's routes on one BNVIZ_HOME (each on its own port, so the test
chooses which one answers); a question opened on one, taps posted to it, are counted by the
other, and closing the question there deletes the taps for both."""

from __future__ import annotations

import http.client
import json
import os
import sys

import pytest
from served import free_port
from stackrun import start, stop_group, wait_answering

from bnviz.lecture.hall import hall_id
from bnviz.server.hall import API, CLIENT_COOKIE

SESSION = "hallprocesses00000001"
#: Where the phones post their taps (the session's hall id: the QR code's link).
TAPS = f"{API}/phone/{hall_id(SESSION)}/taps"
#: One web process: the hall's routes on a bare Flask server (what bnviz.web.app registers).
SERVE = ("import sys; from flask import Flask; from werkzeug.serving import run_simple; "
         "from bnviz.server.hall import add_lecture_hall; app = Flask('hall'); "
         "add_lecture_hall(app); run_simple('127.0.0.1', int(sys.argv[1]), app, "
         "threaded=True)")


@pytest.fixture
def two_processes(tmp_path):
    """Two web processes on one BNVIZ_HOME; yields their ports."""
    env = os.environ | {"BNVIZ_HOME": str(tmp_path / "home"), "PYTHONPATH": "."}
    procs, ports = [], []
    try:
        for i in range(2):
            port = free_port()
            log = tmp_path / f"web{i}.log"
            procs.append(start([sys.executable, "-c", SERVE, str(port)], env, log))
            wait_answering(procs[-1], f"http://127.0.0.1:{port}{API}/{SESSION}", log)
            ports.append(port)
        yield ports
    finally:
        for proc in procs:
            stop_group(proc)


def call(port: int, method: str, path: str, body: dict | None = None,
         cookie: str | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Content-Type": "application/json"} | ({"Cookie": cookie} if cookie else {})
        conn.request(method, path, None if body is None else json.dumps(body).encode(), headers)
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def test_taps_posted_to_one_process_are_counted_by_another(two_processes):
    one, other = two_processes
    status, _ = call(one, "POST", f"{API}/{SESSION}/question",
                     {"step": 2, "x": [-2, 2], "y": [-2, 2]})
    assert status == 200
    cookies = []
    for i in range(5):
        conn = http.client.HTTPConnection("127.0.0.1", [one, other][i % 2], timeout=30)
        conn.request("GET", f"/hall/{hall_id(SESSION)}")
        response = conn.getresponse()
        response.read()
        cookies.append(response.getheader("Set-Cookie").split(";")[0])
        conn.close()
        assert cookies[-1].startswith(CLIENT_COOKIE)
    for i, cookie in enumerate(cookies):
        assert call(one, "POST", TAPS, {"x": 0.1 * i, "y": -0.1 * i},
                    cookie)[0] == 200
    status, density = call(other, "GET", f"{API}/{SESSION}")
    assert status == 200 and density["count"] == 5
    assert sorted(density["x"]) == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    # the other process knows the first tap's time too: one a second per client, everywhere
    assert call(other, "POST", TAPS, {"x": 1, "y": 1}, cookies[0])[0] == 429
    assert call(other, "POST", f"{API}/{SESSION}/close", {})[1] == {"closed": True}
    assert call(one, "GET", f"{API}/{SESSION}")[1] == {"question": None, "count": 0}
    assert call(one, "POST", TAPS, {"x": 0, "y": 0}, cookies[1])[0] == 409
