"""One SQLite file that every process of a server shares, for small stores written a row at a
time (the lecture's sessions, the hall's questions and taps): write-ahead logging so that
readers never wait for a writer, and ``BEGIN IMMEDIATE`` transactions so that two processes'
read-then-write never interleave. The job store (sqlite_store) adds retries on top of its own."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

__all__ = ["BUSY_SECONDS", "connect", "immediate", "use_wal"]

#: How long a connection waits for another process's write before it gives up.
BUSY_SECONDS = 5.0


def connect(path: Path, schema: str) -> sqlite3.Connection:
    """A connection to ``path`` (its folder made), in autocommit mode, with ``schema`` (its
    ``CREATE ... IF NOT EXISTS`` statements) applied."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None)
    try:
        db.execute("PRAGMA synchronous=NORMAL")
        use_wal(db)
        db.executescript(schema)
    except BaseException:
        db.close()
        raise
    return db


def use_wal(db: sqlite3.Connection, seconds: float = BUSY_SECONDS) -> None:
    """Put ``db``'s file in write-ahead logging, retried for up to ``seconds`` while another
    connection holds it. Switching needs the file's exclusive lock, and SQLite answers
    "database is locked" at once, without its busy handler, while another connection reads
    it: two workers opening a fresh file together lost one request that way (a session's
    offer raised, CI at 4c470cf). Each retry reads the mode again: the other connection has
    most often switched it already."""
    deadline, pause = time.monotonic() + seconds, 0.005
    while db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        try:
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or \
                    time.monotonic() + pause > deadline:
                raise
            time.sleep(pause * random.uniform(0.5, 1.0))
            pause = min(2 * pause, 0.25)


@contextmanager
def immediate(path: Path, schema: str) -> Iterator[sqlite3.Connection]:
    """A connection inside one ``BEGIN IMMEDIATE`` transaction: committed when the block
    ends, rolled back when it raises; closed either way."""
    with closing(connect(path, schema)) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
