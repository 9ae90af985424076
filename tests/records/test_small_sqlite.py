"""Opening one fresh SQLite file from many connections at once (bnviz.records.small_sqlite):
switching a file to write-ahead logging needs its exclusive lock, and SQLite answers
"database is locked" at once, without its busy handler, while another connection reads the
file. Two threads offering a lecture session's state on a fresh store lost one thread's
offers that way in CI; each test here opened 30 fresh files from 8 threads at once, and
failed on most runs before the switch was retried."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from bnviz.records import small_sqlite
from bnviz.records.sqlite_store import SQLiteStore

SCHEMA = "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, who TEXT NOT NULL)"
THREADS, FILES = 8, 30


def _all_at_once(work, path: Path) -> list[str]:
    """``work(path, i)`` on THREADS threads released together; the errors they raised."""
    start, errors = threading.Barrier(THREADS), []

    def run(i: int) -> None:
        start.wait()
        try:
            work(path, i)
        except Exception as exc:  # noqa: BLE001 - the test counts them
            errors.append(repr(exc))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _mode(path: Path) -> str:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("PRAGMA journal_mode").fetchone()[0]


def test_many_connections_open_a_fresh_file_together(tmp_path):
    def write(path: Path, i: int) -> None:
        with small_sqlite.immediate(path, SCHEMA) as db:
            db.execute("INSERT INTO rows (who) VALUES (?)", (f"thread{i}",))

    for n in range(FILES):
        path = tmp_path / f"s{n}.sqlite3"
        assert _all_at_once(write, path) == []
        assert _mode(path) == "wal"
        with closing(small_sqlite.connect(path, SCHEMA)) as db:
            assert db.execute("SELECT COUNT(*) FROM rows").fetchone()[0] == THREADS


def test_many_job_stores_open_a_fresh_file_together(tmp_path):
    for n in range(FILES // 3):
        path = tmp_path / f"jobs{n}.sqlite3"
        assert _all_at_once(lambda p, i: SQLiteStore(p), path) == []
        assert _mode(path) == "wal"


def test_a_file_held_past_the_wait_is_refused_not_waited_on_forever(tmp_path):
    path = tmp_path / "held.sqlite3"
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        holder.execute("CREATE TABLE t (x)")
        holder.execute("BEGIN EXCLUSIVE")  # a rollback-journal file, locked
        with closing(sqlite3.connect(path, timeout=0.05, isolation_level=None)) as db:
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                small_sqlite.use_wal(db, seconds=0.2)
        holder.execute("ROLLBACK")
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        small_sqlite.use_wal(db, seconds=0.2)  # free again: switched
    assert _mode(path) == "wal"
