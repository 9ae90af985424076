"""Cold start (issue 15, item 4): a fresh server's first requests, many at once, all succeed.

Each round starts the real app under gunicorn (``gunicorn.conf.py``, 2 workers) on a free port
and fires 30 requests at once the moment its socket accepts, as its workers are forked from
the master that imported the app (``preload_app``; before that, as they booted), so that they
are the workers' first: /healthz, /_dash-dependencies, /_dash-layout, /, /papers,
the page router's callback for /papers and the debate page's callbacks as the page sends them
when it loads (the claims table, the weight plane, Luo et al.'s statistics). Every answer must
be 200, and /_dash-dependencies complete: the same callbacks as a warmed-up app lists.

The rounds share one BNVIZ_HOME, as a restarted server does: the first computes the claims
(torch.func, ~15 s) while the other requests run; the later ones read them from the disk
cache. Measured before Dash's setup, the caches and torch's lazy imports were warmed or
locked: 2 of 14 fresh starts failed (a 500 on /healthz, a /_dash-dependencies without the
callbacks), and /papers 15 of 32 cold requests.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from served import callback_request, free_port, page_values
from stackrun import start, stop_group

from bnviz.web import app as dashboard
from bnviz.web.callbacks.papers import ids
from bnviz.web.layouts.papers import layout as papers_layout

pytestmark = pytest.mark.slow

ROUNDS = 6
REQUESTS = 30
WARM_DEPENDENCIES = dashboard.server.test_client().get("/_dash-dependencies").get_json()


def _canonical(dependencies: list[dict]) -> list[str]:
    """The callbacks a /_dash-dependencies lists, in an order of their own (a process's
    order is that of its imports: the test process's differs from the server's)."""
    return sorted(json.dumps(d, sort_keys=True) for d in dependencies)


def _callback(output_start: str, values: dict[str, dict]) -> dict:
    return callback_request(WARM_DEPENDENCIES, output_start, values)


PAGE = page_values(papers_layout())
ROUTER = {"_pages_location": {"pathname": "/papers", "search": ""}}
#: (method, path, body, what a complete answer contains)
MIX = [
    ("GET", "/healthz", None, b'"status"'),
    ("GET", "/_dash-dependencies", None, b"_pages_content"),
    ("GET", "/_dash-layout", None, b"_pages_location"),
    ("GET", "/", None, b"<title>bnviz</title>"),
    ("GET", "/papers", None, b"<title>bnviz</title>"),
    ("POST", "/_dash-update-component", _callback(".._pages_content", ROUTER), ids.CLAIMS.encode()),
    ("POST", "/_dash-update-component", _callback(f"..{ids.DJ_GRAPH}", PAGE), b"dj-lemma-verdict"),
    ("POST", "/_dash-update-component", _callback(f"..{ids.LUO_STATS}", PAGE), b"gap at"),
    ("POST", "/_dash-update-component", _callback(ids.CLAIMS, PAGE), b"holds"),
]


def _send(base: str, method: str, path: str, body: dict | None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=180) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError as exc:
        return 0, repr(exc).encode()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("home")


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_concurrent_first_requests_to_a_fresh_server(round_, home, tmp_path):
    port = free_port()
    env = dict(os.environ, BNVIZ_BIND=f"127.0.0.1:{port}", BNVIZ_HOME=str(home),
               BNVIZ_WEB_WORKERS="2", BNVIZ_ACCESS_LOG="0")
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL"):
        env.pop(name, None)
    log = tmp_path / "gunicorn.log"
    proc = start([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                  "bnviz.web.app:server"], env, log)
    try:
        deadline = time.monotonic() + 120
        while True:  # the master listens; its workers are being forked
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, "gunicorn did not listen"
                time.sleep(0.02)
        requests = [MIX[i % len(MIX)] for i in range(REQUESTS)]
        with ThreadPoolExecutor(REQUESTS) as pool:
            answers = list(pool.map(lambda r: _send(f"http://127.0.0.1:{port}", *r[:3]),
                                    requests))
    finally:
        stop_group(proc)
    pairs = list(zip(requests, answers, strict=True))
    failed = [(r[0], r[1], status, body[:200]) for r, (status, body) in pairs
              if status != 200 or r[3] not in body]
    assert not failed, f"{failed}\n{log.read_text()[-3000:]}"
    for (_, path, *_), (_, body) in pairs:
        if path == "/_dash-dependencies":
            assert _canonical(json.loads(body)) == _canonical(WARM_DEPENDENCIES)
