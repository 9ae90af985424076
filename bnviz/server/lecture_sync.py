"""The lecture's one state, shared by its windows through the server (issue 46): the presenter
on a laptop, the projector on the hall's computer, both opened at the same session link
(``/lecture/presenter?session=<id>``, ``/lecture?session=<id>``).

    GET  /api/lecture/sessions/<id>   -> {"state": the newest state, or null}
    POST /api/lecture/sessions/<id>   {"state": {...}}  -> {"state": the newest, "accepted"}

A state is what a window shows and does (assets/presenter.js): the step, the sliders'
positions (null: the step's own), the theme, the split, the blank screen, and how many times
play and reset were pressed, with its version ``v``: ``[counter, window id]``. The counter is
a Lamport clock (a window's change counts one past the newest it has seen) and the window id
breaks a tie; the server keeps a state only when it is newer than the one it holds, and
answers the newest either way, so no window ever gets an older state back. Windows of one
browser also tell each other over a BroadcastChannel; the versions make the two ways agree.

The sessions live in a small SQLite file under ``BNVIZ_HOME`` (every web process of a server
shares it): at most ``LECTURE_SYNC_MAX_SESSIONS``, each kept ``LECTURE_SYNC_SESSION_HOURS``
after its last change. A state is checked field by field (unknown fields, wrong types, values
off the sliders: 400 with one line), a body is at most ``LECTURE_SYNC_MAX_BODY`` bytes (413),
a client makes at most ``LECTURE_SYNC_RATE`` requests a second (429 with ``Retry-After``,
counted per process). What a client sends never gets a 5xx; 503 is kept for the server's
own disk (with ``Retry-After``).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from contextlib import closing
from pathlib import Path
from typing import Any

from flask import Blueprint, Flask, Response, request

from bnviz.caps import (
    LECTURE_MAX_SNAPSHOT_QUERY,
    LECTURE_SYNC_BURST,
    LECTURE_SYNC_MAX_BODY,
    LECTURE_SYNC_MAX_CLIENTS,
    LECTURE_SYNC_MAX_SESSIONS,
    LECTURE_SYNC_RATE,
    LECTURE_SYNC_SESSION_HOURS,
)
from bnviz.config import bnviz_home
from bnviz.lecture.scenes import BATCH_SLIDER, DEPTH_SLIDER
from bnviz.lecture.tour import TOUR
from bnviz.messages import Refused, brief
from bnviz.records import small_sqlite
from bnviz.server.answers import json_answer, refusal
from bnviz.service.clients import client_id
from bnviz.service.guard import strict_json

__all__ = ["ROUTE", "SESSION_PATTERN", "SLIDER_BOUNDS", "RateLimit", "SessionStore",
           "SyncRefused", "add_lecture_sync", "check_state", "newer"]

#: The route's prefix (a session's id follows).
ROUTE = "/api/lecture/sessions"
#: A session's id: what assets/presenter.js makes (20 of a-z0-9), 16 to 40 such characters.
SESSION_PATTERN = "[a-z0-9]{16,40}"
#: A window's id in a version.
WINDOW_PATTERN = "[a-z0-9]{8,40}"
#: Each slider's position: lowest, highest, whole numbers only (layouts/lecture.py builds
#: the sliders from these).
SLIDER_BOUNDS = {"mu": (0.0, 1.5, False), "sigma": (-2.0, 2.0, False),
                 "batch": (BATCH_SLIDER[0], BATCH_SLIDER[1], True),
                 "depth": (DEPTH_SLIDER[0], DEPTH_SLIDER[1], True)}
#: The largest counter (a play or reset count, a version's): the largest integer JavaScript
#: holds exactly (the windows count in JavaScript; not a setting).
JS_EXACT_INTEGER = 2**53 - 1
#: A state's fields, and which may be left out.
FIELDS = ("v", "step", "sliders", "theme", "split", "blank", "ask", "play", "reset", "query")
OPTIONAL = ("ask", "query")
#: The query of step 0 (the explorer's settings), as the lecture writes it.
_QUERY = re.compile(r"[A-Za-z0-9_.%+=&~-]*")
#: Retry-After (seconds) for a client past its rate, and for a disk the server cannot write.
RETRY_RATE, RETRY_DISK = 1, 30
ALLOW = "GET, HEAD, OPTIONS, POST"

blueprint = Blueprint("lecture_sync", __name__, url_prefix=ROUTE)


class SyncRefused(Refused):
    """A lecture state or request the sync does not take: status, one line, extra headers."""


def _count(name: str, value: Any, lo: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or \
            not lo <= value <= JS_EXACT_INTEGER:
        raise SyncRefused(400, f"{name}: a whole number from {lo}, got {brief(value)}")
    return value


def _sliders(value: Any) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or sorted(value) != sorted(SLIDER_BOUNDS):
        raise SyncRefused(400, f"sliders: null or {{{', '.join(SLIDER_BOUNDS)}}}, got "
                               f"{brief(value)}")
    out = {}
    for name, (lo, hi, whole) in SLIDER_BOUNDS.items():
        v = value[name]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or \
                not lo <= v <= hi or (whole and v != int(v)):
            raise SyncRefused(400, f"sliders.{name}: {'a whole number' if whole else 'a number'}"
                                   f" from {lo:g} to {hi:g}, got {brief(v)}")
        out[name] = int(v) if whole else v
    return out


def check_state(state: Any) -> dict[str, Any]:
    """The state a window sent, checked field by field (:class:`SyncRefused`, 400, naming the
    field, for anything else); the same fields in a fixed order."""
    if not isinstance(state, dict):
        raise SyncRefused(400, f"\"state\" must be a JSON object, got {brief(state)}")
    unknown = sorted(k for k in state if k not in FIELDS)
    if unknown:
        raise SyncRefused(400, f"unknown field {brief(unknown[0])}: a state has "
                               f"{', '.join(FIELDS)}")
    missing = [k for k in FIELDS if k not in state and k not in OPTIONAL]
    if missing:
        raise SyncRefused(400, f"missing field {missing[0]!r}")
    v = state["v"]
    if not (isinstance(v, list) and len(v) == 2 and isinstance(v[1], str)
            and re.fullmatch(WINDOW_PATTERN, v[1])):
        raise SyncRefused(400, f"v: [counter, window id of {WINDOW_PATTERN}], got {brief(v)}")
    out: dict[str, Any] = {"v": [_count("v's counter", v[0], 1), v[1]]}
    step = state["step"]
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= len(TOUR):
        raise SyncRefused(400, f"step: a whole number from 0 to {len(TOUR)}, got {brief(step)}")
    out["step"] = step
    out["sliders"] = _sliders(state["sliders"])
    if state["theme"] not in ("light", "dark"):
        raise SyncRefused(400, f"theme: \"light\" or \"dark\", got {brief(state['theme'])}")
    out["theme"] = state["theme"]
    for name in ("split", "blank", "ask"):
        value = state.get(name, False)  # ask: the hall's question is open (hall.js)
        if not isinstance(value, bool):
            raise SyncRefused(400, f"{name}: true or false, got {brief(value)}")
        out[name] = value
    out["play"] = _count("play", state["play"])
    out["reset"] = _count("reset", state["reset"])
    if "query" in state:
        query = state["query"]
        if not (isinstance(query, str) and len(query) <= LECTURE_MAX_SNAPSHOT_QUERY
                and _QUERY.fullmatch(query)):
            raise SyncRefused(400, f"query: a lecture URL's query of at most "
                                   f"{LECTURE_MAX_SNAPSHOT_QUERY} characters, got "
                                   f"{brief(query)}")
        out["query"] = query
    return out


def newer(a: list, b: list) -> bool:
    """Whether version ``a`` is newer than ``b``: the larger counter, then the larger id."""
    return (a[0], a[1]) > (b[0], b[1])


#: The sessions' table: each session's newest state and its version (counter, window).
_SCHEMA = ("CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, counter INTEGER NOT NULL, "
           "window TEXT NOT NULL, state TEXT NOT NULL, updated REAL NOT NULL)")


class SessionStore:
    """The sessions' newest states, in one SQLite file every process of a server shares."""

    def __init__(self, path: Path | None = None, max_sessions: int = LECTURE_SYNC_MAX_SESSIONS,
                 keep_seconds: float = 3600.0 * LECTURE_SYNC_SESSION_HOURS):
        self._path, self.max_sessions, self.keep_seconds = path, max_sessions, keep_seconds

    @property
    def path(self) -> Path:
        return self._path or bnviz_home() / "lecture" / "sessions.sqlite3"

    def get(self, session: str) -> dict | None:
        """The session's newest state, None for none (or one unchanged for too long)."""
        with closing(small_sqlite.connect(self.path, _SCHEMA)) as db:
            row = db.execute("SELECT state FROM sessions WHERE id = ? AND updated >= ?",
                             (session, time.time() - self.keep_seconds)).fetchone()
        return None if row is None else strict_json(row[0])

    def offer(self, session: str, state: dict) -> tuple[dict, bool]:
        """Keep ``state`` (checked) when it is newer than the session's; the newest state, and
        whether it was this one."""
        now = time.time()
        with small_sqlite.immediate(self.path, _SCHEMA) as db:
            row = db.execute("SELECT counter, window, state FROM sessions WHERE id = ? AND "
                             "updated >= ?", (session, now - self.keep_seconds)).fetchone()
            if row is not None and not newer(state["v"], [row[0], row[1]]):
                return strict_json(row[2]), False
            if row is None:  # a new session: room for it
                db.execute("DELETE FROM sessions WHERE updated < ?", (now - self.keep_seconds,))
                db.execute("DELETE FROM sessions WHERE id IN (SELECT id FROM sessions "
                           "WHERE id != ? ORDER BY updated DESC LIMIT -1 OFFSET ?)",
                           (session, self.max_sessions - 1))
            db.execute("INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?)",
                       (session, state["v"][0], state["v"][1],
                        json.dumps(state, separators=(",", ":")), now))
            return state, True


class RateLimit:
    """Requests per client, a token bucket each (``rate`` a second, ``burst`` at once), for
    at most ``max_clients`` clients (the longest idle are forgotten first)."""

    def __init__(self, rate: float = LECTURE_SYNC_RATE, burst: float = LECTURE_SYNC_BURST,
                 max_clients: int = LECTURE_SYNC_MAX_CLIENTS):
        self.rate, self.burst, self.max_clients = rate, burst, max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, client: str) -> bool:
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.pop(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            allowed = tokens >= 1
            self._buckets[client] = (tokens - 1 if allowed else tokens, now)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
        return allowed


STORE = SessionStore()
LIMIT = RateLimit()


@blueprint.errorhandler(SyncRefused)
def _refused(exc: SyncRefused) -> Response:
    return refusal(exc, no_store=True)


def _state_of_body() -> dict:
    if not request.is_json:
        raise SyncRefused(415, "send the state as JSON (Content-Type: application/json)")
    if (request.content_length or 0) > LECTURE_SYNC_MAX_BODY:
        raise SyncRefused(413, f"a state is at most {LECTURE_SYNC_MAX_BODY} bytes")
    raw = request.get_data(cache=False)
    if len(raw) > LECTURE_SYNC_MAX_BODY:
        raise SyncRefused(413, f"a state is at most {LECTURE_SYNC_MAX_BODY} bytes")
    try:
        body = strict_json(raw)
    except ValueError:
        raise SyncRefused(400, "the body is not valid JSON") from None
    if not isinstance(body, dict) or sorted(body) != ["state"]:
        raise SyncRefused(400, f"the body is {{\"state\": {{...}}}}, got {brief(body)}")
    return check_state(body["state"])


@blueprint.route("/<path:session>", methods=["GET", "POST", "PUT", "PATCH", "DELETE",
                                               "OPTIONS"], provide_automatic_options=False)
def session_state(session: str) -> Response:
    if request.method == "OPTIONS":
        response = Response(status=204)
        response.headers.remove("Content-Type")
        response.headers["Allow"] = ALLOW
        return response
    if request.method not in ("GET", "HEAD", "POST"):
        raise SyncRefused(405, f"{request.method} is not allowed here", {"Allow": ALLOW})
    if not LIMIT.allow(client_id(request.remote_addr)):
        raise SyncRefused(429, "too many requests: at most "
                               f"{LECTURE_SYNC_RATE} a second", {"Retry-After": str(RETRY_RATE)})
    if not re.fullmatch(SESSION_PATTERN, session):
        raise SyncRefused(400, f"a session's id is {SESSION_PATTERN}, got {brief(session)}")
    try:
        if request.method == "POST":
            state, accepted = STORE.offer(session, _state_of_body())
            return json_answer(200, {"state": state, "accepted": accepted}, no_store=True)
        return json_answer(200, {"state": STORE.get(session)}, no_store=True)
    except (sqlite3.Error, OSError, ValueError):
        raise SyncRefused(503, "the server cannot keep the lecture's state now",
                          {"Retry-After": str(RETRY_DISK)}) from None


def add_lecture_sync(server: Flask) -> None:
    """Register the sessions' route on the Flask server (before its first request)."""
    server.register_blueprint(blueprint)
