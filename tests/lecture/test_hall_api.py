"""The hall's answers over HTTP (issue 46, item 6; bnviz.server.hall, bnviz.lecture.hall),
against the dashboard's own Flask server on loopback: 50 phones tap and the projector counts
50 while ``/`` still answers; one tap a second per client, the last one wins; hostile bodies
get one line and a 4xx, and lose nothing; the phones' link warns when it is a loopback one."""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fuzzing import TOO_BIG
from served import free_port
from werkzeug.serving import make_server

from bnviz.caps import LECTURE_HALL_MAX_BODY
from bnviz.lecture import hall
from bnviz.lecture.hall import HallStore, answer_point, hall_id
from bnviz.lecture.tour import step_by_key
from bnviz.server import hall as hall_server
from bnviz.server.hall import API, CLIENT_COOKIE, RateLimit

SESSION = "hallsession000000000001"
#: The axes of the question the tests open (step 2, Corollary 2).
RANGES = {"x": [-3.0, 3.0], "y": [-2.0, 4.0]}
COR2 = step_by_key("cor2").number


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The dashboard's Flask server on loopback (threads), its hall in a temporary file;
    yields (host, port)."""
    from bnviz.web.app import server

    old = hall_server.STORE
    hall_server.STORE = HallStore(tmp_path_factory.mktemp("hall") / "hall.sqlite3")
    port = free_port()
    httpd = make_server("127.0.0.1", port, server, threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "127.0.0.1", port
    httpd.shutdown()
    hall_server.STORE = old


def request(served, method: str, path: str, body: bytes | None = None,
            headers: dict | None = None) -> tuple[int, dict, dict | None]:
    """One request; (status, headers, the JSON answer or None)."""
    conn = http.client.HTTPConnection(*served, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        raw = r.read()
        data = json.loads(raw) if raw and r.getheader("Content-Type", "").startswith(
            "application/json") else None
        return r.status, dict(r.getheaders()), data
    finally:
        conn.close()


def post(served, path: str, body, raw: bytes | None = None, headers: dict | None = None):
    data = raw if raw is not None else json.dumps(body).encode()
    return request(served, "POST", path, data,
                   {"Content-Type": "application/json"} | (headers or {}))


def phone_cookie(served, session: str = SESSION) -> str:
    """What a phone's browser keeps from the hall page: its client id cookie."""
    status, headers, _ = request(served, "GET", f"/hall/{hall_id(session)}")
    assert status == 200
    cookie = headers["Set-Cookie"].split(";")[0]
    assert cookie.startswith(CLIENT_COOKIE + "=")
    return cookie


def tap(served, cookie: str, x: float, y: float, session: str = SESSION, raw=None):
    return post(served, f"{API}/phone/{hall_id(session)}/taps", {"x": x, "y": y}, raw=raw,
                headers={"Cookie": cookie})


def open_question(served, session: str = SESSION, step: int = COR2) -> dict:
    status, _, data = post(served, f"{API}/{session}/question", {"step": step} | RANGES)
    assert status == 200, data
    return data["question"]


def p90(values: list[float]) -> float:
    return float(np.percentile(values, 90)) if values else float("nan")


def test_fifty_phones_tap_and_the_projector_counts_fifty_while_the_page_answers(served):
    session = "hallfiftyphones000001"
    question = open_question(served, session)
    assert question["step"] == COR2 and question["x"] == RANGES["x"]
    assert question["answer"] is None  # told only once revealed
    cookies = [phone_cookie(served, session) for _ in range(50)]
    assert len(set(cookies)) == 50
    rng = np.random.default_rng(0)
    spots = rng.uniform([-3, -2], [3, 4], size=(50, 2))
    page_times: list[float] = []
    page_statuses: list[int] = []
    done = threading.Event()

    def browse() -> None:
        while not done.is_set():
            start = time.perf_counter()
            page_statuses.append(request(served, "GET", "/")[0])
            page_times.append(time.perf_counter() - start)

    browser = threading.Thread(target=browse)
    browser.start()
    try:
        with ThreadPoolExecutor(50) as pool:
            answers = list(pool.map(lambda i: tap(served, cookies[i], *spots[i], session=session),
                                    range(50)))
    finally:
        done.set()
        browser.join()
    statuses = [a[0] for a in answers]
    assert statuses == [200] * 50, [a[2] for a in answers if a[0] != 200][:3]
    assert all(s < 500 for s in page_statuses) and page_statuses
    print(f"\n/ during 50 phones' taps: {len(page_times)} GETs, p90 "
          f"{1000 * p90(page_times):.0f} ms")
    status, _, density = request(served, "GET", f"{API}/{session}")
    assert status == 200 and density["count"] == 50
    assert np.allclose(sorted(zip(density["x"], density["y"], strict=True)),
                       sorted(map(tuple, spots.round(5))))
    # the phones' light poll: the question and the count, no taps
    assert request(served, "GET", f"{API}/phone/{hall_id(session)}")[2] == \
        {"question": question, "count": 50}
    revealed = post(served, f"{API}/{session}/reveal", {})[2]["question"]
    assert revealed["revealed"] and revealed["answer"] == list(answer_point("cor2"))


def test_one_tap_a_second_per_client_and_the_last_tap_wins(served, monkeypatch):
    session = "halllasttapwins000001"
    open_question(served, session)
    me, neighbour = phone_cookie(served, session), phone_cookie(served, session)
    assert tap(served, me, 1.0, 1.0, session)[0] == 200
    status, headers, data = tap(served, me, 2.0, 2.0, session)
    assert status == 429 and headers["Retry-After"] == "1" and "last tap counts" in data["error"]
    assert tap(served, neighbour, 0.5, 0.5, session)[0] == 200  # its own client
    time.sleep(1.05)
    assert tap(served, me, -1.5, 3.5, session)[2] == {"accepted": True, "count": 2}
    density = request(served, "GET", f"{API}/{session}")[2]
    assert density["count"] == 2
    assert sorted(zip(density["x"], density["y"], strict=True)) == [(-1.5, 3.5), (0.5, 0.5)]


def test_an_address_past_its_rate_gets_429(served, monkeypatch):
    monkeypatch.setattr(hall_server, "LIMIT", RateLimit(rate=0.01, burst=2))
    statuses = [request(served, "GET", f"{API}/{SESSION}")[0] for _ in range(3)]
    assert statuses == [200, 200, 429]


#: Hostile taps (body, headers) and the status each gets.
HOSTILE_TAPS = [
    (b"{x: 1}", {}, 400, "not valid JSON"),
    (b'{"x": NaN, "y": 0}', {}, 400, "not valid JSON"),
    (b'{"x": Infinity, "y": 0}', {}, 400, "not valid JSON"),
    (b'{"x": 1e999, "y": 0}', {}, 400, "finite number"),
    (json.dumps({"x": TOO_BIG, "y": 0}).encode(), {}, 400, "finite number"),
    (b'{"x": true, "y": 0}', {}, 400, "finite number"),
    (b'{"x": "1", "y": 0}', {}, 400, "finite number"),
    (b'{"x": 1}', {}, 400, "a tap is"),
    (b'{"x": 1, "y": 1, "z": 1}', {}, 400, "a tap is"),
    (b"[1, 1]", {}, 400, "a tap is"),
    (b'{"x": 9, "y": 0}', {}, 400, "outside the axes"),
    (b'{"x": 0, "y": -2.5}', {}, 400, "outside the axes"),
    (b"x" * (LECTURE_HALL_MAX_BODY + 1), {}, 413, "at most"),
    (b"[" * 5000, {}, 413, "at most"),
    (b'{"x": 1, "y": 1}', {"Content-Type": "text/plain"}, 415, "JSON"),
    (b"\xff\xfe", {}, 400, "not valid JSON"),
]


@pytest.mark.parametrize("body, headers, expected, words", HOSTILE_TAPS)
def test_hostile_taps_get_one_line_and_a_4xx_and_lose_nothing(served, body, headers,
                                                               expected, words):
    session = "hallhostile0000000001"
    if request(served, "GET", f"{API}/{session}")[2]["question"] is None:
        open_question(served, session)
        assert tap(served, phone_cookie(served, session), 0.25, 0.75, session)[0] == 200
    cookie = phone_cookie(served, session)
    status, _, data = post(served, f"{API}/phone/{hall_id(session)}/taps", None, raw=body,
                           headers={"Cookie": cookie} | headers)
    assert status == expected, data
    assert list(data) == ["error"] and words in data["error"]
    assert "\n" not in data["error"] and "Traceback" not in data["error"]
    density = request(served, "GET", f"{API}/{session}")[2]
    assert (density["count"], density["x"], density["y"]) == (1, [0.25], [0.75])


def test_unknown_sessions_closed_questions_and_missing_cookies_are_refused(served):
    session = "hallclosed00000000001"
    cookie = phone_cookie(served, session)
    # no question yet, then closed (its taps deleted)
    assert tap(served, cookie, 0, 0, session)[0] == 409
    open_question(served, session)
    assert tap(served, cookie, 0, 0, session)[0] == 200
    assert post(served, f"{API}/{session}/close", {})[2] == {"closed": True}
    status, _, data = tap(served, cookie, 0, 0, session)
    assert status == 409 and "no question is open" in data["error"]
    assert request(served, "GET", f"{API}/{session}")[2] == {"question": None, "count": 0}
    assert post(served, f"{API}/{session}/reveal", {})[0] == 409
    crafted = [
        ("POST", f"{API}/phone/short/taps", b'{"x": 0, "y": 0}', {"Cookie": cookie}, 400),
        ("POST", f"{API}/phone/{SESSION}/taps", b'{"x": 0, "y": 0}', {"Cookie": cookie}, 400),
        ("POST", f"{API}/phone/{hall_id(SESSION)}/taps", b'{"x": 0, "y": 0}', {}, 400),
        ("POST", f"{API}/phone/{hall_id(SESSION)}/taps", b'{"x": 0, "y": 0}',
         {"Cookie": f"{CLIENT_COOKIE}=BAD"}, 400),
        ("GET", f"{API}/phone/{hall_id(SESSION)}/taps", None, {}, 405),
        ("POST", f"{API}/phone/{hall_id(SESSION)}", b"{}", {}, 405),
        ("POST", f"{API}/{SESSION}/taps", b'{"x": 0, "y": 0}', {"Cookie": cookie}, 405),
        ("PUT", f"{API}/{SESSION}", b"{}", {}, 405),
        ("DELETE", f"{API}/{SESSION}/question", b"{}", {}, 405),
        ("GET", f"{API}/{SESSION}/other/x", None, {}, 404),
        ("GET", "/hall/UPPER", None, {}, 400),
        ("POST", f"/hall/{hall_id(SESSION)}", b"{}", {}, 405),
        ("POST", f"{API}/{session}/question", b'{"step": 99, "x": [0, 1], "y": [0, 1]}', {},
         400),
        ("POST", f"{API}/{session}/question", b'{"step": 2, "x": [1, 0], "y": [0, 1]}', {},
         400),
        ("POST", f"{API}/{session}/question", b'{"step": 2, "x": [0, 1]}', {}, 400),
    ]
    for method, path, body, headers, expected in crafted:
        status, _, data = request(served, method, path, body,
                                  {"Content-Type": "application/json"} | headers)
        assert status == expected, (path, data)
        assert list(data) == ["error"] and "\n" not in data["error"]


def test_a_flood_of_taps_from_one_phone_keeps_one(served):
    session = "hallflood000000000001"
    open_question(served, session)
    cookie = phone_cookie(served, session)
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda i: tap(served, cookie, 0.01 * i, 0.0, session)[0],
                                 range(40)))
    assert statuses.count(200) == 1 and statuses.count(429) == 39
    assert request(served, "GET", f"{API}/{session}")[2]["count"] == 1


def test_the_link_warns_on_loopback_and_uses_the_public_url(served, monkeypatch):
    monkeypatch.delenv(hall.PUBLIC_URL_ENV, raising=False)
    status, _, data = request(served, "GET", f"{API}/{SESSION}/link")
    assert status == 200 and \
        data["link"] == f"http://127.0.0.1:{served[1]}/hall/{hall_id(SESSION)}"
    assert data["qr"].startswith("data:image/png;base64,")
    assert "127.0.0.1" in data["warning"] and "phones cannot" in data["warning"]
    monkeypatch.setenv(hall.PUBLIC_URL_ENV, "http://10.4.2.7:8050/")
    data = request(served, "GET", f"{API}/{SESSION}/link")[2]
    assert data["link"] == f"http://10.4.2.7:8050/hall/{hall_id(SESSION)}"
    assert data["warning"] is None
    monkeypatch.setenv(hall.PUBLIC_URL_ENV, "http://localhost:8050")
    assert "localhost" in request(served, "GET", f"{API}/{SESSION}/link")[2]["warning"]


@pytest.mark.parametrize("link, warned", [
    ("http://127.0.0.1:8050/hall/x", True), ("http://127.3.0.1/hall/x", True),
    ("http://localhost/hall/x", True), ("http://[::1]:8050/hall/x", True),
    ("http://LOCALHOST:80/", True), ("http://10.0.0.5:8050/hall/x", False),
    ("https://bnviz.example.org/hall/x", False), ("http://[2001:db8::1]/", False),
])
def test_loopback_links_get_one_line(link, warned):
    warning = hall.loopback_warning(link)
    assert (warning is not None) == warned
    assert warning is None or "\n" not in warning


def test_a_question_left_open_is_forgotten_with_its_taps(tmp_path):
    store = HallStore(tmp_path / "hall.sqlite3", question_seconds=0.2, tap_gap=0.0)
    store.open(SESSION, COR2, (-1.0, 1.0, -1.0, 1.0))
    assert store.tap(SESSION, "client1", {"x": 0.0, "y": 0.0}) == 1
    time.sleep(0.3)
    assert store.state(SESSION) == {"question": None, "count": 0}
    store.open("hallothersession00001", COR2, (-1.0, 1.0, -1.0, 1.0))  # sweeps old ones
    import sqlite3

    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM taps").fetchone()[0] == 0
        assert db.execute("SELECT session FROM questions").fetchall() == \
            [("hallothersession00001",)]


def test_a_question_keeps_at_most_its_cap_of_clients(tmp_path):
    store = HallStore(tmp_path / "hall.sqlite3", tap_gap=0.0, max_taps=3)
    store.open(SESSION, COR2, (-1.0, 1.0, -1.0, 1.0))
    for i in range(3):
        store.tap(SESSION, f"client{i}", {"x": 0.1 * i, "y": 0.0})
    with pytest.raises(hall.HallRefused) as refused:
        store.tap(SESSION, "client9", {"x": 0.0, "y": 0.0})
    assert refused.value.status == 429
    assert store.tap(SESSION, "client0", {"x": 0.5, "y": 0.5}) == 3  # a change still counts


def test_the_phones_link_taps_but_cannot_close_reveal_or_reopen_the_question(served):
    """The phones' link carries the hall id, not the session's: used where the projector's
    session goes, it names another (empty) session."""
    session = "hallphoneslink0000001"
    open_question(served, session)
    cookie = phone_cookie(served, session)
    assert tap(served, cookie, 0.5, 0.5, session)[0] == 200
    public = hall_id(session)
    assert post(served, f"{API}/{public}/close", {})[2] == {"closed": False}
    assert post(served, f"{API}/{public}/reveal", {})[0] == 409
    assert request(served, "GET", f"{API}/{public}")[2] == {"question": None, "count": 0}
    state = request(served, "GET", f"{API}/{session}")[2]
    assert state["count"] == 1 and not state["question"]["revealed"]
    assert request(served, "GET", f"{API}/phone/{public}")[2]["count"] == 1
