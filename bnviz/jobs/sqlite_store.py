"""The embedded job store: one SQLite file (WAL), safe across threads and processes."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bnviz.jobs import store as base
from bnviz.jobs.store import ACTIVE, FIELDS, JSON_FIELDS, REUSABLE, Job, JobStore, StoreError

__all__ = ["SQLiteStore"]

_SCHEMA = """
    CREATE TABLE IF NOT EXISTS jobs (
        id TEXT PRIMARY KEY, type TEXT NOT NULL, params TEXT NOT NULL,
        status TEXT NOT NULL, progress REAL NOT NULL DEFAULT 0, device TEXT,
        error TEXT, created REAL NOT NULL, started REAL, finished REAL,
        heartbeat REAL, host TEXT, pid INTEGER,
        cancel_requested INTEGER NOT NULL DEFAULT 0, backend TEXT NOT NULL,
        rerun_of TEXT, summary TEXT, key TEXT);
    CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created);
    CREATE TABLE IF NOT EXISTS metrics (
        job_id TEXT NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT,
        row TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS metrics_job ON metrics (job_id, seq);
    CREATE TABLE IF NOT EXISTS logs (
        job_id TEXT NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT,
        time REAL NOT NULL, line TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS logs_job ON logs (job_id, seq);
"""


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class SQLiteStore(JobStore):
    """Jobs in one SQLite file (WAL), safe across threads and processes: a connection per
    operation, writes in IMMEDIATE transactions."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
                db.execute("BEGIN IMMEDIATE")  # a store made before jobs had keys
                if "key" not in {r["name"] for r in db.execute("PRAGMA table_info(jobs)")}:
                    db.execute("ALTER TABLE jobs ADD COLUMN key TEXT")
                db.execute("CREATE INDEX IF NOT EXISTS jobs_key ON jobs (key)")
                db.execute("COMMIT")
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the job store {self.path}: {exc}") from None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    def _exec(self, sql: str, args: tuple = (), write: bool = False) -> list[sqlite3.Row]:
        try:
            db = self._connect()
            try:
                if write:
                    db.execute("BEGIN IMMEDIATE")
                    cur = db.execute(sql, args)
                    db.execute("COMMIT")
                    return [cur.rowcount]  # type: ignore[list-item]
                return db.execute(sql, args).fetchall()
            finally:
                db.close()
        except sqlite3.Error as exc:
            raise StoreError(f"job store {self.path}: {exc}") from None

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

    def _insert_unless(self, job: Job, skip: tuple[str, ...], limit: int | None
                       ) -> tuple[str, int]:
        try:
            db = self._connect()
            try:
                db.execute("BEGIN IMMEDIATE")  # the look, the count and the insert as one
                found = db.execute(
                    f"SELECT id FROM jobs WHERE key = ? AND status IN ({_marks(len(REUSABLE))})"
                    f" AND cancel_requested = 0 AND id NOT IN ({_marks(len(skip))}) "
                    "ORDER BY created DESC LIMIT 1", (job.key, *REUSABLE, *skip)).fetchone()
                if found is not None:
                    db.execute("COMMIT")
                    return found["id"], -1
                (active,) = db.execute(f"SELECT COUNT(*) FROM jobs WHERE status IN "
                                       f"({_marks(len(ACTIVE))})", ACTIVE).fetchone()
                if limit is not None and active >= limit:
                    db.execute("COMMIT")
                    return "", active
                db.execute(*self._insert_sql(job))
                db.execute("COMMIT")
                return job.id, active
            finally:
                db.close()  # an open transaction (after an error) is rolled back
        except sqlite3.Error as exc:
            raise StoreError(f"job store {self.path}: {exc}") from None

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

    def add_log(self, job_id: str, line: str) -> None:
        self._exec("INSERT INTO logs (job_id, time, line) VALUES (?, ?, ?)",
                   (job_id, time.time(), line), write=True)
        self._exec("DELETE FROM logs WHERE job_id = ? AND seq <= (SELECT seq FROM logs WHERE "
                   "job_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                   (job_id, job_id, base.MAX_LOG_LINES), write=True)

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
