"""The embedded job store: one SQLite file (WAL), safe across threads and processes."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from bnviz.config import setting
from bnviz.records import job as records
from bnviz.records.job import (
    ACTIVE,
    FIELDS,
    JSON_FIELDS,
    REUSABLE,
    STATUSES,
    Job,
    StoreError,
)
from bnviz.records.jobstore import JobStore
from bnviz.records.small_sqlite import use_wal

T = TypeVar("T")

__all__ = ["SQLiteStore"]

_SCHEMA = """
    CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY, type TEXT NOT NULL, params TEXT NOT NULL,
        status TEXT NOT NULL, progress REAL NOT NULL DEFAULT 0, device TEXT,
        error TEXT, created REAL NOT NULL, started REAL, finished REAL,
        heartbeat REAL, host TEXT, pid INTEGER,
        cancel_requested INTEGER NOT NULL DEFAULT 0, backend TEXT NOT NULL,
        rerun_of TEXT, summary TEXT, key TEXT, client TEXT,
        attempts INTEGER NOT NULL DEFAULT 0);
    CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created);
    CREATE TABLE IF NOT EXISTS metrics (
        job_id TEXT NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT,
        row TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS metrics_job ON metrics (job_id, seq);
    CREATE TABLE IF NOT EXISTS logs (
        job_id TEXT NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT,
        time REAL NOT NULL, line TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS logs_job ON logs (job_id, seq);
    CREATE TABLE IF NOT EXISTS workers (
        name TEXT PRIMARY KEY, time REAL NOT NULL, info TEXT NOT NULL);
"""


#: Columns added since the first stores were made (migrated when a store is opened).
_ADDED_COLUMNS = {"key": "TEXT", "client": "TEXT", "attempts": "INTEGER NOT NULL DEFAULT 0"}
#: How long one attempt waits on SQLite's own busy handler (at most): a busy database
#: (another process holds the write lock) is then retried with growing pauses for
#: ``BNVIZ_STORE_BUSY_SECONDS`` in all before the operation gives up with StoreError.
BUSY_TIMEOUT = 5.0


def _busy(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and \
        ("locked" in str(exc) or "busy" in str(exc))


def _make_private(path: Path) -> None:
    """The store's file 0600 (created so before SQLite opens it, whatever the umask of the
    process that makes it first: it was 0644, every local user could read the jobs), and an
    existing one of this user's made 0600 with its -wal and -shm. SQLite creates the -wal and
    -shm with the database file's mode, so they follow it."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))  # an empty file is an empty store
    for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if part.stat().st_uid == os.geteuid() and part.stat().st_mode & 0o077:
                part.chmod(0o600)
        except OSError:  # not there, or not ours to change
            pass


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class SQLiteStore(JobStore):
    """Jobs in one SQLite file (WAL), safe across threads and processes: a connection per
    operation, writes in IMMEDIATE transactions."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            _make_private(self.path)
            with closing(self._connect()) as db:
                use_wal(db, setting("BNVIZ_STORE_BUSY_SECONDS"))
                db.executescript(_SCHEMA)
                db.execute("BEGIN IMMEDIATE")  # a store made by an older bnviz
                have = {r["name"] for r in db.execute("PRAGMA table_info(jobs)")}
                for column, kind in _ADDED_COLUMNS.items():
                    if column not in have:
                        db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
                db.execute("CREATE INDEX IF NOT EXISTS jobs_key ON jobs (key)")
                db.execute("CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, created)")
                db.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the job store {self.path}: {exc}") from None

    def _connect(self, timeout: float = BUSY_TIMEOUT) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    def _retrying(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)``, retried with exponential backoff (0.05 s doubling to 2 s,
        with jitter) while the database is locked by another process, for up to
        ``BNVIZ_STORE_BUSY_SECONDS``; any other error, or a lock held longer, is a
        StoreError (a locked store must not kill a worker or answer a page with a 500)."""
        budget = setting("BNVIZ_STORE_BUSY_SECONDS")
        deadline, pause = time.monotonic() + budget, 0.05
        while True:
            try:
                db = self._connect(min(BUSY_TIMEOUT, budget))
                try:
                    return work(db)
                finally:
                    db.close()  # an open transaction (after an error) is rolled back
            except sqlite3.Error as exc:
                if not _busy(exc) or time.monotonic() + pause > deadline:
                    raise StoreError(f"job store {self.path}: {exc}") from None
                time.sleep(pause * random.uniform(0.5, 1.0))
                pause = min(pause * 2, 2.0)

    def _exec(self, sql: str, args: tuple = (), write: bool = False) -> list[sqlite3.Row]:
        def work(db: sqlite3.Connection) -> list[sqlite3.Row]:
            if write:
                db.execute("BEGIN IMMEDIATE")
                cur = db.execute(sql, args)
                db.execute("COMMIT")
                return [cur.rowcount]  # type: ignore[list-item]
            return db.execute(sql, args).fetchall()

        return self._retrying(work)

    @staticmethod
    def _encode(key: str, value: Any) -> Any:
        if key in JSON_FIELDS:
            return None if value is None else json.dumps(value)
        if key == "cancel_requested":
            return int(bool(value))
        return value

    def _decode(self, row: sqlite3.Row) -> Job:
        values = dict(row)
        for key in JSON_FIELDS:
            values[key] = None if values[key] is None else json.loads(values[key])
        values["cancel_requested"] = bool(values["cancel_requested"])
        return Job(**values)

    def _insert_sql(self, job: Job) -> tuple[str, tuple]:
        values = {k: self._encode(k, v) for k, v in asdict(job).items()}
        return (f"INSERT INTO jobs ({', '.join(values)}) VALUES ({_marks(len(values))})",
                tuple(values.values()))

    def _insert(self, job: Job) -> None:
        self._exec(*self._insert_sql(job), write=True)

    def _insert_unless(self, job: Job, skip: tuple[str, ...], limit: int | None,
                       reuse: bool = True, client_limit: int | None = None
                       ) -> tuple[str, int, int]:
        active_in = f"status IN ({_marks(len(ACTIVE))})"

        def work(db: sqlite3.Connection) -> tuple[str, int, int]:
            db.execute("BEGIN IMMEDIATE")  # the look, the counts and the insert as one
            found = db.execute(
                f"SELECT id FROM jobs WHERE key = ? AND status IN ({_marks(len(REUSABLE))})"
                f" AND cancel_requested = 0 AND id NOT IN ({_marks(len(skip))}) "
                "ORDER BY created DESC LIMIT 1", (job.key, *REUSABLE, *skip)).fetchone() \
                if reuse else None
            if found is not None:
                db.execute("COMMIT")
                return found["id"], -1, -1
            (active,) = db.execute(f"SELECT COUNT(*) FROM jobs WHERE {active_in}",
                                   ACTIVE).fetchone()
            (mine,) = db.execute(f"SELECT COUNT(*) FROM jobs WHERE {active_in} AND client = ?",
                                 (*ACTIVE, job.client)).fetchone()
            if (limit is not None and active >= limit) or \
                    (client_limit is not None and job.client and mine >= client_limit):
                db.execute("COMMIT")
                return "", active, mine
            db.execute(*self._insert_sql(job))
            db.execute("COMMIT")
            return job.id, active, mine

        return self._retrying(work)

    def get(self, job_id: str) -> Job | None:
        rows = self._exec("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return self._decode(rows[0]) if rows else None

    def list(self, limit: int = 200) -> list[Job]:
        rows = self._exec("SELECT * FROM jobs ORDER BY created DESC LIMIT ?", (int(limit),))
        return [self._decode(r) for r in rows]

    def find(self, key: str, limit: int = 20) -> list[Job]:
        rows = self._exec("SELECT * FROM jobs WHERE key = ? ORDER BY created DESC LIMIT ?",
                          (key, int(limit)))
        return [self._decode(r) for r in rows]

    def with_status(self, status: str, limit: int | None = None) -> list[Job]:
        rows = self._exec("SELECT * FROM jobs WHERE status = ? ORDER BY created LIMIT ?",
                          (status, -1 if limit is None else int(limit)))
        return [self._decode(r) for r in rows]

    def counts(self) -> dict[str, int]:
        rows = self._exec("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status")
        return {**dict.fromkeys(STATUSES, 0), **{r["status"]: r["n"] for r in rows}}

    def _cas(self, job_id: str, allowed: tuple[str, ...], status: str,
             values: dict[str, Any]) -> bool:
        sets = ", ".join(f"{k} = ?" for k in values)
        args = (status, *(self._encode(k, v) for k, v in values.items()), job_id, *allowed)
        (count,) = self._exec(
            f"UPDATE jobs SET status = ?{', ' + sets if sets else ''} WHERE id = ? AND status "
            f"IN ({_marks(len(allowed))})", args, write=True)
        return bool(count)

    def update(self, job_id: str, **values: Any) -> None:
        bad = set(values) - set(FIELDS) | ({"id", "status"} & set(values))
        if bad:
            raise ValueError(f"cannot update {sorted(bad)}")
        sets = ", ".join(f"{k} = ?" for k in values)
        self._exec(f"UPDATE jobs SET {sets} WHERE id = ?",
                   (*(self._encode(k, v) for k, v in values.items()), job_id), write=True)

    def add_metric(self, job_id: str, row: dict[str, Any]) -> None:
        self._exec("INSERT INTO metrics (job_id, row) VALUES (?, ?)",
                   (job_id, json.dumps(row)), write=True)

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        rows = self._exec("SELECT row FROM metrics WHERE job_id = ? ORDER BY seq", (job_id,))
        return [json.loads(r["row"]) for r in rows]

    def truncate_metrics(self, job_id: str, keep: int) -> None:
        self._exec("DELETE FROM metrics WHERE job_id = ? AND seq NOT IN (SELECT seq FROM "
                   "metrics WHERE job_id = ? ORDER BY seq LIMIT ?)",
                   (job_id, job_id, max(int(keep), 0)), write=True)

    def add_log(self, job_id: str, line: str) -> None:
        self._exec("INSERT INTO logs (job_id, time, line) VALUES (?, ?, ?)",
                   (job_id, time.time(), line), write=True)
        self._exec("DELETE FROM logs WHERE job_id = ? AND seq <= (SELECT seq FROM logs WHERE "
                   "job_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                   (job_id, job_id, records.MAX_LOG_LINES), write=True)

    def logs(self, job_id: str, tail: int = 200) -> list[str]:
        if tail <= 0:
            return []
        rows = self._exec("SELECT line FROM logs WHERE job_id = ? ORDER BY seq DESC LIMIT ?",
                          (job_id, int(tail)))
        return [r["line"] for r in reversed(rows)]

    def ping(self) -> bool:
        try:
            self._exec("SELECT 1")
            return True
        except StoreError:
            return False

    def beat_worker(self, name: str, info: dict[str, Any]) -> None:
        now = time.time()
        self._exec("INSERT INTO workers (name, time, info) VALUES (?, ?, ?) ON CONFLICT(name) "
                   "DO UPDATE SET time = excluded.time, info = excluded.info",
                   (name, now, json.dumps({**info, "time": now})), write=True)
        self._exec("DELETE FROM workers WHERE time < ?", (now - 86_400,), write=True)

    def workers(self) -> dict[str, dict[str, Any]]:
        return {r["name"]: json.loads(r["info"]) for r in
                self._exec("SELECT name, info FROM workers")}
