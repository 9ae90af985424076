"""The hall answers (issue 46, item 6): the lecturer opens a step's question, students tap on
their phones where they expect the answer, the projector shows the taps as a density, and the
answer is revealed over them.

A question belongs to a lecture session (the id the projector and the presenter share, or the
projector's own), kept under the session's hall id (:func:`hall_id`: what the phones' link
shows; the store knows only that id): the step, its axes' ranges in the figure's data
coordinates (what the projector's graph shows when the question opens) and, where the step
has one, the answer's point. The taps are one per client (the last tap wins, so a student
may change their mind), at most one a ``LECTURE_HALL_TAP_SECONDS``, at most
``LECTURE_HALL_MAX_TAPS`` a question (bnviz.caps).

Everything lives in one small SQLite file under ``BNVIZ_HOME`` (as the lecture's sessions do,
bnviz.server.lecture_sync): the server's several web processes see the same question and the
same taps, and a tap is one short write. Nothing outlives the question: closing it deletes
its taps, and a question left open is forgotten after ``LECTURE_HALL_QUESTION_HOURS``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bnviz.caps import (
    LECTURE_HALL_MAX_TAPS,
    LECTURE_HALL_QUESTION_HOURS,
    LECTURE_HALL_TAP_SECONDS,
    MAX_COORDINATE,
)
from bnviz.config import bnviz_home
from bnviz.lecture.notes import notes_for
from bnviz.lecture.tour import TOUR, step_by_key
from bnviz.messages import Refused, brief
from bnviz.records import small_sqlite
from bnviz.service.cache import memoize

__all__ = ["TAP_PROMPTS", "HallRefused",
           "HALL_ID_PATTERN", "HallStore", "answer_point", "check_ranges", "check_tap", "hall_id",
           "hall_link",
           "loopback_warning", "public_base"]

#: A hall id's length (hex digits of sha256), and its pattern.
HALL_ID_LENGTH = 24
HALL_ID_PATTERN = f"[0-9a-f]{{{HALL_ID_LENGTH}}}"
#: The public base URL of the server, for the phones' link (the QR code).
PUBLIC_URL_ENV = "BNVIZ_PUBLIC_URL"
#: The steps whose answer is a point of their axes: what the phones are asked to tap.
TAP_PROMPTS = {
    "cor2": "Tap where layer 1's lines will meet once play reaches t = 1 (BN).",
    "batch": "Tap where layer 1's lines meet for this mini-batch of 8.",
}
#: What a step without a point answer asks the phones.
DEFAULT_PROMPT = "Tap where you expect the answer on these axes."
#: The store's tables: the open questions, and each client's last tap on one.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS questions (session TEXT PRIMARY KEY, step INTEGER NOT NULL,
    x0 REAL, x1 REAL, y0 REAL, y1 REAL, revealed INTEGER NOT NULL, opened REAL NOT NULL);
CREATE TABLE IF NOT EXISTS taps (session TEXT NOT NULL, client TEXT NOT NULL, x REAL NOT NULL,
    y REAL NOT NULL, at REAL NOT NULL, PRIMARY KEY (session, client));
"""


class HallRefused(Refused):
    """A request the hall does not take: an HTTP status and one line saying why."""


def _number(name: str, value: Any) -> float:
    # abs first: a JSON integer of 400 digits is exact in Python and overflows isfinite
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not abs(value) <= MAX_COORDINATE:
        raise HallRefused(400, f"{name}: a finite number, got {brief(value)}")
    return float(value)


def check_ranges(x: Any, y: Any) -> tuple[float, float, float, float]:
    """An axes' ranges ``[lo, hi]`` each, lo < hi, finite: (x0, x1, y0, y1); 400 else."""
    out = []
    for name, pair in (("x", x), ("y", y)):
        if not isinstance(pair, list) or len(pair) != 2:
            raise HallRefused(400, f"{name}: the axis' range [low, high], got {brief(pair)}")
        lo, hi = _number(f"{name}[0]", pair[0]), _number(f"{name}[1]", pair[1])
        if not lo < hi:
            raise HallRefused(400, f"{name}: a range's low end below its high end, got "
                                   f"{brief(pair)}")
        out += [lo, hi]
    return out[0], out[1], out[2], out[3]


def check_tap(body: Any, ranges: tuple[float, float, float, float]) -> tuple[float, float]:
    """A tap ``{"x": .., "y": ..}`` inside the question's axes; 400 naming what is wrong."""
    if not isinstance(body, dict) or sorted(body) != ["x", "y"]:
        raise HallRefused(400, f"a tap is {{\"x\": number, \"y\": number}}, got {brief(body)}")
    x, y = _number("x", body["x"]), _number("y", body["y"])
    x0, x1, y0, y1 = ranges
    if not (x0 <= x <= x1 and y0 <= y <= y1):
        raise HallRefused(400, f"the tap ({x:g}, {y:g}) lies outside the axes "
                               f"[{x0:g}, {x1:g}] x [{y0:g}, {y1:g}]")
    return x, y


@memoize()
def answer_point(key: str) -> tuple[float, float] | None:
    """Where the step's answer lies, for the steps of :data:`TAP_PROMPTS`: the centroid the
    layer-1 lines meet at with BN (Corollary 2), of all the data or of the step's mini-batch;
    None for the other steps (their reveal is their animation alone)."""
    if key not in TAP_PROMPTS:
        return None
    from bnviz.core.network import select_batch  # numpy: only when a question opens
    from bnviz.views.explorer import explorer_data

    settings = step_by_key(key).settings
    points = explorer_data(settings).points
    if settings.batch_size is not None:
        points = select_batch(points, settings.batch_size, settings.batch_seed)
    centre = points.mean(axis=0)
    return round(float(centre[0]), 4), round(float(centre[1]), 4)


def public_base(request_base: str) -> str:
    """The base URL phones open: ``BNVIZ_PUBLIC_URL`` when set (the server behind a proxy,
    or its address on the hall's network), else the URL the projector reached."""
    return (os.environ.get(PUBLIC_URL_ENV, "").strip() or request_base).rstrip("/")


def hall_id(session: str) -> str:
    """The id the phones know a session's questions by (the QR code's link): derived from the
    session's id, from which it cannot be reversed, so that a student who reads the link can
    tap but cannot open, reveal or close the lecturer's question (the session's id does)."""
    return hashlib.sha256(f"bnviz-hall:{session}".encode()).hexdigest()[:HALL_ID_LENGTH]


def hall_link(base: str, session: str) -> str:
    """The phone page of a session's questions."""
    return f"{base.rstrip('/')}/hall/{hall_id(session)}"


def loopback_warning(link: str) -> str | None:
    """One line when the link's host is a loopback address (phones cannot reach it), else
    None."""
    host = (urlsplit(link).hostname or "").lower()
    try:
        loop = host == "localhost" or host.endswith(".localhost") or \
            ipaddress.ip_address(host).is_loopback
    except ValueError:
        loop = False
    if not loop:
        return None
    return (f"{host} is this computer only: phones cannot open it. Set {PUBLIC_URL_ENV} to "
            "the server's address on the hall's network.")


class HallStore:
    """The open questions and their taps, in one SQLite file every process of a server
    shares (WAL: the projector's reads never wait on the phones' writes)."""

    def __init__(self, path: Path | None = None,
                 question_seconds: float = 3600.0 * LECTURE_HALL_QUESTION_HOURS,
                 tap_gap: float = LECTURE_HALL_TAP_SECONDS, max_taps: int = LECTURE_HALL_MAX_TAPS):
        self._path, self.question_seconds = path, question_seconds
        self.tap_gap, self.max_taps = tap_gap, max_taps

    @property
    def path(self) -> Path:
        return self._path or bnviz_home() / "lecture" / "hall.sqlite3"

    def _connect(self) -> sqlite3.Connection:
        return small_sqlite.connect(self.path, _SCHEMA)

    def _question(self, db: sqlite3.Connection, session: str) -> tuple | None:
        return db.execute("SELECT step, x0, x1, y0, y1, revealed FROM questions WHERE "
                          "session = ? AND opened >= ?",
                          (session, time.time() - self.question_seconds)).fetchone()

    def _write(self, work):
        with small_sqlite.immediate(self.path, _SCHEMA) as db:
            return work(db)

    def open(self, session: str, step: int, ranges: tuple[float, float, float, float]) -> dict:
        """Open the step's question in the session (a question open before is closed and its
        taps deleted; so are questions forgotten past their time); the question."""
        if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= len(TOUR):
            raise HallRefused(400, f"step: a whole number from 1 to {len(TOUR)}, got "
                                   f"{brief(step)}")

        def work(db: sqlite3.Connection) -> None:
            old = time.time() - self.question_seconds
            db.execute("DELETE FROM taps WHERE session = ? OR session IN (SELECT session FROM "
                       "questions WHERE opened < ?)", (session, old))
            db.execute("DELETE FROM questions WHERE opened < ?", (old,))
            db.execute("INSERT OR REPLACE INTO questions VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
                       (session, step, *ranges, time.time()))

        self._write(work)
        return self.state(session, taps=False)["question"]

    def close(self, session: str) -> bool:
        """Close the session's question and delete its taps; whether one was open."""
        def work(db: sqlite3.Connection) -> bool:
            db.execute("DELETE FROM taps WHERE session = ?", (session,))
            return db.execute("DELETE FROM questions WHERE session = ?",
                              (session,)).rowcount > 0

        return self._write(work)

    def reveal(self, session: str) -> dict:
        """Mark the session's question revealed (its answer is then told); the question."""
        def work(db: sqlite3.Connection) -> None:
            if self._question(db, session) is None:
                raise HallRefused(409, "no question is open in this session")
            db.execute("UPDATE questions SET revealed = 1 WHERE session = ?", (session,))

        self._write(work)
        return self.state(session, taps=False)["question"]

    def tap(self, session: str, client: str, body: Any) -> int:
        """Keep a client's tap (its last one replaced); the taps the question has. 409 with no
        open question, 400 for a tap off its axes, 429 within a second of the client's last
        tap or past its ``max_taps`` clients."""
        def work(db: sqlite3.Connection) -> int:
            question = self._question(db, session)
            if question is None:
                raise HallRefused(409, "no question is open in this session: wait for the "
                                       "lecturer to ask one")
            x, y = check_tap(body, tuple(question[1:5]))
            now = time.time()
            last = db.execute("SELECT at FROM taps WHERE session = ? AND client = ?",
                              (session, client)).fetchone()
            if last is not None and 0 <= now - last[0] < self.tap_gap:
                raise HallRefused(429, f"one tap a client per {self.tap_gap:g} s: your last "
                                       "tap counts; tap again in a moment",
                                  {"Retry-After": str(math.ceil(self.tap_gap))})
            count = db.execute("SELECT COUNT(*) FROM taps WHERE session = ?",
                               (session,)).fetchone()[0]
            if last is None and count >= self.max_taps:
                raise HallRefused(429, f"this question has its {self.max_taps} answers",
                                  {"Retry-After": "60"})
            db.execute("INSERT OR REPLACE INTO taps VALUES (?, ?, ?, ?, ?)",
                       (session, client, x, y, now))
            return count + (last is None)

        return self._write(work)

    def state(self, session: str, taps: bool = True) -> dict:
        """The session's open question (None: none) and its taps: their count and, with
        ``taps``, their coordinates (what the projector's density draws)."""
        db = self._connect()
        try:
            question = self._question(db, session)
            rows = [] if question is None else db.execute(
                "SELECT x, y FROM taps WHERE session = ?" if taps else
                "SELECT COUNT(*), 0 FROM taps WHERE session = ?", (session,)).fetchall()
        finally:
            db.close()
        if question is None:
            return {"question": None, "count": 0}
        step, x0, x1, y0, y1, revealed = question
        key = TOUR[step - 1].key
        notes = notes_for(key)
        out: dict[str, Any] = {"question": {
            "step": step, "key": key, "title": TOUR[step - 1].title,
            "ask": notes.ask if notes else "", "prompt": TAP_PROMPTS.get(key, DEFAULT_PROMPT),
            "x": [x0, x1], "y": [y0, y1], "revealed": bool(revealed),
            "answer": answer_point(key) if revealed else None}}
        if taps:
            out |= {"count": len(rows), "x": [round(r[0], 5) for r in rows],
                    "y": [round(r[1], 5) for r in rows]}
        else:
            out["count"] = rows[0][0] if rows else 0
        return out
