"""The lecture's shared state through the server (issue 46, bnviz.server.lecture_sync): the
newest version wins and an older one gets the newest back; the store is bounded and shared
by processes; the route, over HTTP (a served app on loopback, raw requests), refuses crafted
input with a one-line JSON 4xx, never a 5xx."""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest
from fuzzing import FUZZ, JUNK, TOO_BIG
from hypothesis import given
from hypothesis import strategies as st
from served import free_port
from werkzeug.serving import make_server

from bnviz.caps import LECTURE_SYNC_MAX_BODY
from bnviz.lecture.tour import TOUR
from bnviz.server import lecture_sync
from bnviz.server.lecture_sync import (
    ROUTE,
    RateLimit,
    SessionStore,
    SyncRefused,
    check_state,
    newer,
)

SESSION = "k3v9q0w2e8r7t6y5u4i1"


def _state(counter: int = 1, window: str = "windowaa", **fields) -> dict:
    return {"v": [counter, window], "step": 3, "sliders": None, "theme": "light",
            "split": False, "blank": False, "ask": False, "play": 0, "reset": 0} | fields


# --------------------------------------------------------------------------- the state


def test_a_good_state_passes_as_it_was_sent():
    state = _state(7, sliders={"mu": 0.5, "sigma": -1.25, "batch": 4, "depth": 2},
                   theme="dark", split=True, blank=True, ask=True, play=3, reset=1)
    assert check_state(state) == state
    older = _state()  # a page from before the hall's question travelled: not asked
    del older["ask"]
    assert check_state(older) == _state()
    assert check_state(_state(step=0, query="step=0&n_points=50"))["query"] == \
        "step=0&n_points=50"


@pytest.mark.parametrize("field, value", [
    ("v", [0, "windowaa"]), ("v", [1, "UPPER0000"]), ("v", [1]), ("v", "1"),
    ("v", [True, "abcdefgh"]),
    ("v", [2**53, "windowaa"]), ("step", len(TOUR) + 1), ("step", -1), ("step", True),
    ("step", 2.0), ("step", "3"), ("sliders", {"mu": 0.5}), ("sliders", [1, 2, 3, 4]),
    ("sliders", {"mu": 2.0, "sigma": 0, "batch": 4, "depth": 2}),
    ("sliders", {"mu": 0.5, "sigma": 0, "batch": 4.5, "depth": 2}),
    ("sliders", {"mu": 0.5, "sigma": 0, "batch": 4, "depth": 99}),
    ("sliders", {"mu": True, "sigma": 0, "batch": 4, "depth": 2}),
    ("theme", "blue"), ("split", 1), ("blank", None), ("ask", "yes"), ("play", -1), ("reset", 1.5),
    ("query", "step=0&<script>"), ("query", "x" * 601), ("extra", 1),
])
def test_every_field_is_checked(field, value):
    with pytest.raises(SyncRefused) as caught:
        check_state(_state() | {field: value})
    assert caught.value.status == 400
    assert field in str(caught.value) or "unknown field" in str(caught.value)


def test_a_missing_field_is_refused():
    state = _state()
    del state["theme"]
    with pytest.raises(SyncRefused, match="missing field 'theme'"):
        check_state(state)


def test_the_newer_version_is_the_larger_counter_then_the_larger_window():
    assert newer([2, "a"], [1, "z"]) and newer([1, "b"], [1, "a"])
    assert not newer([1, "a"], [1, "a"]) and not newer([1, "z"], [2, "a"])


# --------------------------------------------------------------------------- the store


def test_the_store_keeps_the_newest_and_answers_it_to_an_older(tmp_path):
    store = SessionStore(tmp_path / "s.sqlite3")
    assert store.get(SESSION) is None
    assert store.offer(SESSION, _state(2, step=5)) == (_state(2, step=5), True)
    # an older or equal version: refused, and the newest comes back
    assert store.offer(SESSION, _state(1, step=9)) == (_state(2, step=5), False)
    assert store.offer(SESSION, _state(2, step=9)) == (_state(2, step=5), False)
    assert store.offer(SESSION, _state(2, "windowbb", step=6)) == \
        (_state(2, "windowbb", step=6), True)
    assert store.get(SESSION) == _state(2, "windowbb", step=6)
    # another process (another store on the same file) sees it
    assert SessionStore(tmp_path / "s.sqlite3").get(SESSION)["step"] == 6


def test_the_store_is_bounded_and_forgets_old_sessions(tmp_path):
    store = SessionStore(tmp_path / "s.sqlite3", max_sessions=3)
    sessions = [f"session{i:012d}" for i in range(5)]
    for i, session in enumerate(sessions):
        store.offer(session, _state(1, step=i))
        time.sleep(0.01)
    kept = [s for s in sessions if store.get(s) is not None]
    assert kept == sessions[-3:]
    stale = SessionStore(tmp_path / "s.sqlite3", keep_seconds=0.0)
    time.sleep(0.01)
    assert stale.get(sessions[-1]) is None


def test_concurrent_offers_end_at_the_newest(tmp_path):
    """Two windows offering on a fresh store at once: every offer answered (none raised: the
    file's switch to write-ahead logging once lost a thread, test_small_sqlite.py), and the
    larger window id wins the last counter."""
    store, errors = SessionStore(tmp_path / "s.sqlite3"), []

    def offer(window: str) -> None:
        try:
            for counter in range(1, 31):
                store.offer(SESSION, _state(counter, window, step=1 + counter % len(TOUR)))
        except Exception as exc:  # noqa: BLE001 - a thread's error, shown by the assert
            errors.append(repr(exc))

    threads = [threading.Thread(target=offer, args=(w,)) for w in ("windowaa", "windowbb")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.get(SESSION)["v"] == [30, "windowbb"]


def test_the_rate_limit_refuses_past_its_burst_and_refills():
    limit = RateLimit(rate=1000, burst=3, max_clients=2)
    assert [limit.allow("a") for _ in range(4)] == [True, True, True, False]
    time.sleep(0.01)
    assert limit.allow("a")
    limit.allow("b")
    limit.allow("c")  # past max_clients: the longest idle ("a") is forgotten
    assert len(limit._buckets) == 2 and "a" not in limit._buckets


# --------------------------------------------------------------------------- over HTTP


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The dashboard's Flask server on loopback (a thread), its sessions in a temporary
    file; yields (host, port)."""
    from bnviz.web.app import server

    old = lecture_sync.STORE
    lecture_sync.STORE = SessionStore(tmp_path_factory.mktemp("sync") / "s.sqlite3")
    port = free_port()
    httpd = make_server("127.0.0.1", port, server, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "127.0.0.1", port
    httpd.shutdown()
    lecture_sync.STORE = old


def _request(served, method: str, path: str, body: bytes | None = None,
             headers: dict | None = None) -> tuple[int, dict, dict | None]:
    conn = http.client.HTTPConnection(*served, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        raw = r.read()
        data = json.loads(raw) if raw and r.getheader("Content-Type", "").startswith(
            "application/json") else None
        return r.status, dict(r.getheaders()), data
    finally:
        conn.close()


def _post(served, session: str, body, raw: bytes | None = None, headers: dict | None = None):
    data = raw if raw is not None else json.dumps(body).encode()
    return _request(served, "POST", f"{ROUTE}/{session}", data,
                    {"Content-Type": "application/json"} | (headers or {}))


def test_two_windows_meet_at_the_newest_state_over_http(served):
    session = "httpsession000000001"
    assert _request(served, "GET", f"{ROUTE}/{session}")[::2] == (200, {"state": None})
    status, headers, body = _post(served, session, {"state": _state(3, step=4)})
    assert (status, body) == (200, {"state": _state(3, step=4), "accepted": True})
    assert headers["Cache-Control"] == "no-store"
    # the projector, behind (an older counter), gets the presenter's state back
    assert _post(served, session, {"state": _state(2, "windowbb", step=2)})[2] == \
        {"state": _state(3, step=4), "accepted": False}
    assert _request(served, "GET", f"{ROUTE}/{session}")[2] == {"state": _state(3, step=4)}


#: Crafted requests and the status each must get (never a 5xx).
CRAFTED = [
    ("GET", f"{ROUTE}/short", None, {}, 400),
    ("GET", f"{ROUTE}/{'a' * 41}", None, {}, 400),
    ("GET", f"{ROUTE}/UPPERCASEUPPERCASE00", None, {}, 400),
    ("GET", f"{ROUTE}/%C3%A9{'a' * 18}", None, {}, 400),
    ("GET", f"{ROUTE}/{SESSION}/../../etc/passwd", None, {}, 400),
    ("GET", f"{ROUTE}/{SESSION}%00", None, {}, 400),
    ("PUT", f"{ROUTE}/{SESSION}", b"{}", {}, 405),
    ("DELETE", f"{ROUTE}/{SESSION}", b"", {}, 405),
    ("OPTIONS", f"{ROUTE}/{SESSION}", None, {}, 204),
    ("HEAD", f"{ROUTE}/{SESSION}", None, {}, 200),
    ("POST", f"{ROUTE}/{SESSION}", b"{}", {"Content-Type": "text/plain"}, 415),
    ("POST", f"{ROUTE}/{SESSION}", b"", {"Content-Type": "application/json"}, 400),
    ("POST", f"{ROUTE}/{SESSION}", b"[" * 50_000 + b"]" * 50_000,
     {"Content-Type": "application/json"}, 413),
    ("POST", f"{ROUTE}/{SESSION}", b"[" * 2000 + b"]" * 2000,
     {"Content-Type": "application/json"}, 400),
    ("POST", f"{ROUTE}/{SESSION}", b'{"state": NaN}', {"Content-Type": "application/json"},
     400),
    ("POST", f"{ROUTE}/{SESSION}", b"\xff\xfe", {"Content-Type": "application/json"}, 400),
    ("POST", f"{ROUTE}/{SESSION}", b'{"state": {}, "more": 1}',
     {"Content-Type": "application/json"}, 400),
    ("POST", f"{ROUTE}/{SESSION}", json.dumps({"state": _state(TOO_BIG)}).encode(),
     {"Content-Type": "application/json"}, 400),
    ("POST", f"{ROUTE}/{SESSION}", b"x" * (LECTURE_SYNC_MAX_BODY + 1),
     {"Content-Type": "application/json"}, 413),
    ("POST", f"{ROUTE}/{SESSION}", b"{}", {"Content-Type": "application/json",
                                           "Content-Length": "-5"}, 400),
    ("GET", "/api/lecture/other", None, {}, 404),
]


@pytest.mark.parametrize("method, path, body, headers, expected", CRAFTED)
def test_crafted_requests_get_a_clear_4xx(served, method, path, body, headers, expected):
    status, answer_headers, data = _request(served, method, path, body, headers)
    assert status == expected
    if status >= 400:
        assert isinstance(data, dict) and list(data) == ["error"]
        assert "\n" not in data["error"] and len(data["error"]) <= 300
    if status == 405:
        assert "POST" in answer_headers.get("Allow", "")


@FUZZ
@given(st.dictionaries(st.sampled_from([*lecture_sync.FIELDS, "x"]), JUNK, max_size=10))
def test_junk_states_never_get_a_5xx(served, junk):
    try:
        body = json.dumps({"state": _state() | junk}).encode()
    except ValueError:
        return
    status, _, data = _post(served, "fuzzsession000000001", None, raw=body)
    assert status in (200, 400, 413), data
    assert status != 200 or data["state"]["v"][0] >= 1


def test_a_client_past_its_rate_gets_429_with_retry_after(served, monkeypatch):
    monkeypatch.setattr(lecture_sync, "LIMIT", RateLimit(rate=0.01, burst=2))
    statuses = [_request(served, "GET", f"{ROUTE}/{SESSION}")[0] for _ in range(3)]
    assert statuses == [200, 200, 429]
    status, headers, data = _request(served, "GET", f"{ROUTE}/{SESSION}")
    assert status == 429 and headers["Retry-After"] == "1" and "too many" in data["error"]


def test_a_store_that_cannot_write_is_503_not_500(served, monkeypatch, tmp_path):
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(lecture_sync, "STORE", SessionStore(tmp_path / "file" / "s.sqlite3"))
    status, headers, data = _post(served, SESSION, {"state": _state()})
    assert status == 503 and headers["Retry-After"] and "error" in data
