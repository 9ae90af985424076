"""The hall's answers over HTTP (issue 46, item 6; the store and its rules: bnviz.lecture.hall).

    The projector (a lecture session's id, which only its windows know):
    GET    /api/lecture/hall/<session>              {"question", "count", "x", "y"}
    POST   /api/lecture/hall/<session>/question     {"step", "x": [lo, hi], "y": [lo, hi]}
    POST   /api/lecture/hall/<session>/close        close it, its taps deleted
    POST   /api/lecture/hall/<session>/reveal       the answer is told from then on
    GET    /api/lecture/hall/<session>/link         {"link", "qr", "warning"}: the phones' link
    The phones (the session's hall id, bnviz.lecture.hall.hall_id: the link's; it taps, and
    cannot open, reveal or close a question):
    GET    /hall/<hall id>                          the phone page (sets the client cookie)
    GET    /api/lecture/hall/phone/<hall id>        {"question", "count"}
    POST   /api/lecture/hall/phone/<hall id>/taps   {"x", "y"}: a phone's tap

Kept light for a hall of 200 phones on one server: a tap is a body of a few bytes, checked,
and one short SQLite write; the projector polls the taps (one read) and draws their density in
the browser (assets/hall.js). A client is its cookie and its address together (students behind
one NAT share an address, not a cookie); each tap is refused within a second of the client's
last (the store keeps the time, so every web process agrees), and each address has a token
bucket per process against floods. What a client sends gets a 4xx with one line, never a 5xx;
503 is kept for the server's own disk.
"""

from __future__ import annotations

import html
import re
import secrets
import sqlite3

from flask import Blueprint, Flask, Response, request

from bnviz.caps import LECTURE_HALL_BURST, LECTURE_HALL_MAX_BODY, LECTURE_HALL_RATE
from bnviz.lecture import hall
from bnviz.lecture.hall import HallRefused, HallStore
from bnviz.lecture.qr import qr_data_url
from bnviz.messages import brief
from bnviz.server.answers import json_answer, refusal
from bnviz.server.lecture_sync import SESSION_PATTERN, RateLimit
from bnviz.service.clients import client_id
from bnviz.service.guard import strict_json

__all__ = ["API", "CLIENT_COOKIE", "LIMIT", "PAGE", "STORE", "add_lecture_hall"]

#: The routes' prefixes (a session's id follows).
API, PAGE = "/api/lecture/hall", "/hall"
#: The phone's id, set by the phone page: 24 of a-z0-9.
CLIENT_COOKIE = "bnviz_hall"
CLIENT_PATTERN = "[a-z0-9]{16,40}"
RETRY_DISK = 30

api = Blueprint("lecture_hall", __name__, url_prefix=API)
page = Blueprint("lecture_hall_page", __name__, url_prefix=PAGE)
STORE = HallStore()
LIMIT = RateLimit(rate=LECTURE_HALL_RATE, burst=LECTURE_HALL_BURST)


@api.errorhandler(HallRefused)
@page.errorhandler(HallRefused)
def _refused(exc: HallRefused) -> Response:
    return refusal(exc, no_store=True)


def _ok(body: dict) -> Response:
    """A success: the hall changes by the second, so no cache keeps it."""
    return json_answer(200, body, no_store=True)


def _limit() -> None:
    if not LIMIT.allow(client_id(request.remote_addr)):
        raise HallRefused(429, "too many requests from this address: at most "
                               f"{LECTURE_HALL_RATE} a second", {"Retry-After": "1"})


def _session(session: str) -> str:
    """The hall id of a projector's session (checked)."""
    _limit()
    if not re.fullmatch(SESSION_PATTERN, session):
        raise HallRefused(400, f"a session's id is {SESSION_PATTERN}, got {brief(session)}")
    return hall.hall_id(session)


def _hall(hall_id: str) -> str:
    """A phone's hall id (checked)."""
    _limit()
    if not re.fullmatch(hall.HALL_ID_PATTERN, hall_id):
        raise HallRefused(400, f"a hall's id is {hall.HALL_ID_PATTERN}, got {brief(hall_id)}")
    return hall_id


def _body() -> object:
    if not request.is_json:
        raise HallRefused(415, "send JSON (Content-Type: application/json)")
    if (request.content_length or 0) > LECTURE_HALL_MAX_BODY:
        raise HallRefused(413, f"a body is at most {LECTURE_HALL_MAX_BODY} bytes")
    raw = request.get_data(cache=False)
    if len(raw) > LECTURE_HALL_MAX_BODY:
        raise HallRefused(413, f"a body is at most {LECTURE_HALL_MAX_BODY} bytes")
    try:
        return strict_json(raw)
    except ValueError:
        raise HallRefused(400, "the body is not valid JSON (NaN and Infinity are not "
                               "numbers here)") from None


def _client() -> str:
    cookie = request.cookies.get(CLIENT_COOKIE, "")
    if not re.fullmatch(CLIENT_PATTERN, cookie):
        raise HallRefused(400, "no client id: open the hall's page (its link or QR code) "
                               "first")
    return client_id(f"{request.remote_addr}|{cookie}")


def _stored(work):
    try:
        return work()
    except (sqlite3.Error, OSError):
        raise HallRefused(503, "the server cannot keep the hall's answers now",
                          {"Retry-After": str(RETRY_DISK)}) from None


@api.route("/<session>", methods=["GET"])
def state(session: str) -> Response:
    session = _session(session)
    taps = request.args.get("taps", "1") != "0"
    return _ok(_stored(lambda: STORE.state(session, taps=taps)))


@api.route("/<session>/question", methods=["POST"])
def question(session: str) -> Response:
    session = _session(session)
    body = _body()
    if not isinstance(body, dict) or sorted(body) != ["step", "x", "y"]:
        raise HallRefused(400, f"a question is {{\"step\", \"x\": [lo, hi], \"y\": [lo, hi]}},"
                               f" got {brief(body)}")
    ranges = hall.check_ranges(body["x"], body["y"])
    return _ok({"question": _stored(lambda: STORE.open(session, body["step"],
                                                                ranges))})


@api.route("/<session>/close", methods=["POST"])
def close(session: str) -> Response:
    """A POST, not a DELETE: a body-less DELETE has no length, and the request guard in front
    of the app (bnviz.service.guard) reads such a body to its end."""
    session = _session(session)
    return _ok({"closed": _stored(lambda: STORE.close(session))})


@api.route("/<session>/reveal", methods=["POST"])
def reveal(session: str) -> Response:
    session = _session(session)
    return _ok({"question": _stored(lambda: STORE.reveal(session))})


@api.route("/phone/<hall_id>", methods=["GET"])
def phone_state(hall_id: str) -> Response:
    hall_id = _hall(hall_id)
    return _ok(_stored(lambda: STORE.state(hall_id, taps=False)))


@api.route("/phone/<hall_id>/taps", methods=["POST"])
def tap(hall_id: str) -> Response:
    hall_id = _hall(hall_id)
    client = _client()
    body = _body()
    return _ok({"accepted": True,
                         "count": _stored(lambda: STORE.tap(hall_id, client, body))})


@api.route("/<session>/link", methods=["GET"])
def link(session: str) -> Response:
    _session(session)
    url = hall.hall_link(hall.public_base(request.host_url), session)
    try:
        qr = qr_data_url(url)
    except ValueError as exc:
        raise HallRefused(400, str(exc)) from None
    return _ok({"link": url, "qr": qr, "warning": hall.loopback_warning(url)})


@api.route("/<path:rest>", methods=["GET", "POST", "DELETE", "PUT", "PATCH"])
def unknown(rest: str) -> Response:
    """A route of the hall with a method it does not take (405), or no route (404): one line
    as JSON, as every other answer here (Flask's own would be an HTML page)."""
    allowed = {"question": "POST", "close": "POST", "reveal": "POST", "link": "GET",
               "taps": "POST"}
    parts = rest.split("/")
    if len(parts) in (2, 3) and parts[-1] in allowed:
        raise HallRefused(405, f"{request.method} is not allowed here",
                          {"Allow": allowed[parts[-1]]})
    if len(parts) == 1 or (len(parts) == 2 and parts[0] == "phone"):
        raise HallRefused(405, f"{request.method} is not allowed here", {"Allow": "GET"})
    raise HallRefused(404, f"no such hall route: {brief(rest)}")


#: The phone page: its axes and taps are drawn by assets/hall-phone.js.
PHONE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, maximum-scale=1">
<title>bnviz: the hall's question</title>
<link rel="stylesheet" href="/assets/hall.css">
</head><body class="hall-phone-body">
<main id="hall-phone" data-hall="{hall}">
<h1 id="hall-phone-title">Waiting for the lecturer's question…</h1>
<p id="hall-phone-prompt"></p>
<svg id="hall-phone-axes" viewBox="0 0 320 320" role="img"
 aria-label="the step's axes: tap your answer"></svg>
<p id="hall-phone-status" role="status"></p>
</main>
<script src="/assets/hall-phone.js"></script>
</body></html>
"""


@page.route("/<hall_id>", methods=["GET", "POST"])
def phone(hall_id: str) -> Response:
    if request.method != "GET":  # one JSON line, not Flask's HTML 405
        raise HallRefused(405, f"{request.method} is not allowed here", {"Allow": "GET"})
    hall_id = _hall(hall_id)
    response = Response(PHONE_PAGE.replace("{hall}", html.escape(hall_id)),
                        mimetype="text/html")
    response.headers["Cache-Control"] = "no-store"
    if not re.fullmatch(CLIENT_PATTERN, request.cookies.get(CLIENT_COOKIE, "")):
        response.set_cookie(CLIENT_COOKIE, secrets.token_hex(12), max_age=6 * 3600,
                            samesite="Strict", httponly=True, path="/")
    return response


def add_lecture_hall(server: Flask) -> None:
    """Register the hall's routes on the Flask server (before its first request)."""
    server.register_blueprint(api)
    server.register_blueprint(page)
