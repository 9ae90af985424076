"""Where jobs live: their parameters, status, progress, metrics and logs, persisted.

Two stores behind one interface (:class:`JobStore`):

* :class:`SQLiteStore`, the embedded default: ``$BNVIZ_HOME/jobs/jobs.sqlite`` (WAL mode; every
  web worker, job process and CLI call opens it), so jobs and results survive a restart.
* :class:`RedisStore`, shared by web servers and Celery workers on other machines.

``BNVIZ_STORE_URL`` picks one (``sqlite:///path`` or ``redis://host:port/db``); without it, the
Redis broker's URL when ``BNVIZ_BROKER_URL`` is a Redis URL, else SQLite under BNVIZ_HOME.

Status changes are compare-and-set (queued -> running -> succeeded | failed | cancelled), so a
job is claimed by one worker only and an ended job never changes again. A running job whose
process died, or whose heartbeat stopped, is marked failed by :meth:`JobStore.reap`, which
every reader calls: no job is left "running" forever.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from bnviz.messages import brief
from bnviz.runs import bnviz_home

__all__ = ["ENDED", "HOST", "JOB_ID", "STATUSES", "Job", "JobStore", "RedisStore", "SQLiteStore",
           "StoreError", "check_job_id", "open_store", "pid_alive", "stale_seconds", "store_url"]

STATUSES: tuple[str, ...] = ("queued", "running", "succeeded", "failed", "cancelled")
ENDED = frozenset({"succeeded", "failed", "cancelled"})
HOST = socket.gethostname()
#: Keep at most this many log lines per job (the tail).
MAX_LOG_LINES = 5000
JOB_ID = re.compile(r"^[0-9a-f]{12}$")


class StoreError(RuntimeError):
    """The job store cannot be reached or read: a message for the user."""


def check_job_id(job_id: object) -> str:
    """A job id as given by a user (URL, CLI): 12 hex digits, or ValueError."""
    if not isinstance(job_id, str) or not JOB_ID.match(job_id.strip().lower()):
        raise ValueError(f"{brief(job_id)} is not a job id (12 hex digits, as `jobs list` shows)")
    return job_id.strip().lower()


def stale_seconds() -> float:
    """A running job whose heartbeat is older than this is taken to be dead
    (``BNVIZ_JOB_STALE_SECONDS``, default 60; job processes beat every 2 s)."""
    try:
        return max(1.0, float(os.environ.get("BNVIZ_JOB_STALE_SECONDS", "60")))
    except ValueError:
        return 60.0


def pid_alive(pid: int) -> bool:
    """Whether a process of this host is alive (a zombie is dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


@dataclass
class Job:
    """One job, as stored. Times are Unix seconds (None until they happen)."""

    id: str
    type: str
    params: dict[str, Any]
    status: str = "queued"
    progress: float = 0.0
    device: str | None = None
    error: str | None = None
    created: float = 0.0
    started: float | None = None
    finished: float | None = None
    heartbeat: float | None = None
    host: str | None = None
    pid: int | None = None
    cancel_requested: bool = False
    backend: str = "local"
    rerun_of: str | None = None
    summary: dict[str, Any] | None = None

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def seconds(self) -> float | None:
        if self.started is None:
            return None
        return (self.finished or time.time()) - self.started

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = self.seconds()
        return out


_FIELDS = [f.name for f in fields(Job)]
_JSON_FIELDS = {"params", "summary"}


class JobStore(ABC):
    """The operations every store has; the status logic lives here once."""

    url: str

    # -- primitives a store implements
    @abstractmethod
    def _insert(self, job: Job) -> None: ...

    @abstractmethod
    def get(self, job_id: str) -> Job | None: ...

    @abstractmethod
    def list(self, limit: int = 200) -> list[Job]: ...

    @abstractmethod
    def _cas(self, job_id: str, allowed: tuple[str, ...], status: str,
             values: dict[str, Any]) -> bool:
        """Set status and values if the job's status is in ``allowed``; atomically."""

    @abstractmethod
    def update(self, job_id: str, **values: Any) -> None:
        """Set fields of an existing job (progress, heartbeat, device, pid, ...)."""

    @abstractmethod
    def add_metric(self, job_id: str, row: dict[str, Any]) -> None: ...

    @abstractmethod
    def metrics(self, job_id: str) -> list[dict[str, Any]]: ...

    @abstractmethod
    def add_log(self, job_id: str, line: str) -> None: ...

    @abstractmethod
    def logs(self, job_id: str, tail: int = 200) -> list[str]: ...

    @abstractmethod
    def ping(self) -> bool: ...

    # -- the status logic
    def create(self, job_type: str, params: dict[str, Any], backend: str = "local",
               rerun_of: str | None = None) -> Job:
        job = Job(uuid.uuid4().hex[:12], job_type, params, created=time.time(),
                  backend=backend, rerun_of=rerun_of)
        self._insert(job)
        return job

    def claim(self, job_id: str, pid: int) -> bool:
        """queued -> running, for the process ``pid`` of this host."""
        now = time.time()
        return self._cas(job_id, ("queued",), "running",
                         {"started": now, "heartbeat": now, "host": HOST, "pid": pid})

    def claim_next(self, pid: int) -> str | None:
        """Claim the oldest queued job, if any."""
        for job in sorted(self.list(1000), key=lambda j: j.created):
            if job.status == "queued" and not job.cancel_requested and self.claim(job.id, pid):
                return job.id
        return None

    def finish(self, job_id: str, status: str, error: str | None = None,
               summary: dict[str, Any] | None = None) -> bool:
        """running (or queued) -> an ended status; an ended job is never changed."""
        if status not in ENDED:
            raise ValueError(f"not an end status: {status}")
        values: dict[str, Any] = {"finished": time.time(), "error": error}
        if status == "succeeded":
            values["progress"] = 1.0
        if summary is not None:
            values["summary"] = summary
        return self._cas(job_id, ("queued", "running"), status, values)

    def request_cancel(self, job_id: str) -> str:
        """Cancel: a queued job ends at once; a running job is asked to stop (its process
        checks between mini-batches) and is marked cancelled when it does. Returns the job's
        status after the request."""
        if self._cas(job_id, ("queued",), "cancelled",
                     {"finished": time.time(), "cancel_requested": True}):
            return "cancelled"
        job = self.get(job_id)
        if job is None:
            raise KeyError(job_id)
        if job.status == "running":
            self.update(job_id, cancel_requested=True)
        return job.status

    def reap(self, stale: float | None = None) -> list[str]:
        """Mark running jobs whose process is gone (same host) or whose heartbeat is older
        than ``stale`` seconds as failed (cancelled if a cancel was asked); returns their ids."""
        stale = stale_seconds() if stale is None else stale
        now, reaped = time.time(), []
        for job in self.list(1000):
            if job.status != "running":
                continue
            dead = job.host == HOST and job.pid is not None and not pid_alive(job.pid)
            silent = now - (job.heartbeat or job.started or job.created) > stale
            if not (dead or silent):
                continue
            if job.cancel_requested:
                ok = self.finish(job.id, "cancelled", "cancelled")
            else:
                why = (f"process {job.pid} on {job.host} died" if dead else
                       f"no heartbeat from {job.host} for {now - (job.heartbeat or now):.0f} s")
                ok = self.finish(job.id, "failed",
                                 f"the worker running this job stopped ({why}); re-run it")
            if ok:
                reaped.append(job.id)
        return reaped


# --------------------------------------------------------------------------- SQLite


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
                db.executescript("""
                    CREATE TABLE IF NOT EXISTS jobs (
                        id TEXT PRIMARY KEY, type TEXT NOT NULL, params TEXT NOT NULL,
                        status TEXT NOT NULL, progress REAL NOT NULL DEFAULT 0, device TEXT,
                        error TEXT, created REAL NOT NULL, started REAL, finished REAL,
                        heartbeat REAL, host TEXT, pid INTEGER,
                        cancel_requested INTEGER NOT NULL DEFAULT 0, backend TEXT NOT NULL,
                        rerun_of TEXT, summary TEXT);
                    CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created);
                    CREATE TABLE IF NOT EXISTS metrics (
                        job_id TEXT NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        row TEXT NOT NULL);
                    CREATE INDEX IF NOT EXISTS metrics_job ON metrics (job_id, seq);
                    CREATE TABLE IF NOT EXISTS logs (
                        job_id TEXT NOT NULL, seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        time REAL NOT NULL, line TEXT NOT NULL);
                    CREATE INDEX IF NOT EXISTS logs_job ON logs (job_id, seq);
                """)
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
        if key in _JSON_FIELDS:
            return None if value is None else json.dumps(value)
        if key == "cancel_requested":
            return int(bool(value))
        return value

    def _decode(self, row: sqlite3.Row) -> Job:
        values = dict(row)
        for key in _JSON_FIELDS:
            values[key] = None if values[key] is None else json.loads(values[key])
        values["cancel_requested"] = bool(values["cancel_requested"])
        return Job(**values)

    def _insert(self, job: Job) -> None:
        values = {k: self._encode(k, v) for k, v in asdict(job).items()}
        cols = ", ".join(values)
        self._exec(f"INSERT INTO jobs ({cols}) VALUES ({', '.join('?' * len(values))})",
                   tuple(values.values()), write=True)

    def get(self, job_id: str) -> Job | None:
        rows = self._exec("SELECT * FROM jobs WHERE id = ?", (job_id,))
        return self._decode(rows[0]) if rows else None

    def list(self, limit: int = 200) -> list[Job]:
        rows = self._exec("SELECT * FROM jobs ORDER BY created DESC LIMIT ?", (int(limit),))
        return [self._decode(r) for r in rows]

    def _cas(self, job_id: str, allowed: tuple[str, ...], status: str,
             values: dict[str, Any]) -> bool:
        sets = ", ".join(f"{k} = ?" for k in values)
        args = (status, *(self._encode(k, v) for k, v in values.items()), job_id, *allowed)
        (count,) = self._exec(
            f"UPDATE jobs SET status = ?{', ' + sets if sets else ''} WHERE id = ? AND status "
            f"IN ({', '.join('?' * len(allowed))})", args, write=True)
        return bool(count)

    def update(self, job_id: str, **values: Any) -> None:
        bad = set(values) - set(_FIELDS) | ({"id", "status"} & set(values))
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
                   (job_id, job_id, MAX_LOG_LINES), write=True)

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


# --------------------------------------------------------------------------- Redis

_CAS_LUA = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
local n = tonumber(ARGV[1])
local ok = false
for i = 2, n + 1 do if status == ARGV[i] then ok = true end end
if not ok then return 0 end
for i = n + 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""
_UPDATE_LUA = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""


class RedisStore(JobStore):
    """Jobs in Redis, shared by every web server and Celery worker: a hash per job (fields as
    JSON), a sorted set of ids by creation time, and a list each of metrics and log lines."""

    PREFIX = "bnviz"

    def __init__(self, url: str):
        import redis

        self.url = url
        self._redis = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
        self._cas_script = self._redis.register_script(_CAS_LUA)
        self._update_script = self._redis.register_script(_UPDATE_LUA)

    def _key(self, job_id: str, part: str = "") -> str:
        return f"{self.PREFIX}:job:{job_id}{':' + part if part else ''}"

    def _call(self, fn, *args, **kwargs):
        import redis

        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise StoreError(f"job store {self.url}: {exc}") from None

    @staticmethod
    def _flat(values: dict[str, Any]) -> list[str]:
        return [x for k, v in values.items() for x in (k, json.dumps(v))]

    def _insert(self, job: Job) -> None:
        pipe = self._redis.pipeline()
        pipe.hset(self._key(job.id), mapping={k: json.dumps(v) for k, v in asdict(job).items()})
        pipe.zadd(f"{self.PREFIX}:jobs", {job.id: job.created})
        self._call(pipe.execute)

    def _decode(self, raw: dict[bytes, bytes]) -> Job:
        values = {k.decode(): json.loads(v) for k, v in raw.items()}
        return Job(**{k: v for k, v in values.items() if k in _FIELDS})

    def get(self, job_id: str) -> Job | None:
        raw = self._call(self._redis.hgetall, self._key(job_id))
        return self._decode(raw) if raw else None

    def list(self, limit: int = 200) -> list[Job]:
        ids = self._call(self._redis.zrevrange, f"{self.PREFIX}:jobs", 0, int(limit) - 1)
        pipe = self._redis.pipeline()
        for job_id in ids:
            pipe.hgetall(self._key(job_id.decode()))
        return [self._decode(raw) for raw in self._call(pipe.execute) if raw]

    def _cas(self, job_id: str, allowed: tuple[str, ...], status: str,
             values: dict[str, Any]) -> bool:
        args = [len(allowed), *(json.dumps(a) for a in allowed),
                *self._flat({"status": status, **values})]
        return bool(self._call(self._cas_script, keys=[self._key(job_id)], args=args))

    def update(self, job_id: str, **values: Any) -> None:
        if set(values) - set(_FIELDS) or {"id", "status"} & set(values):
            raise ValueError(f"cannot update {sorted(values)}")
        self._call(self._update_script, keys=[self._key(job_id)], args=self._flat(values))

    def add_metric(self, job_id: str, row: dict[str, Any]) -> None:
        self._call(self._redis.rpush, self._key(job_id, "metrics"), json.dumps(row))

    def metrics(self, job_id: str) -> list[dict[str, Any]]:
        return [json.loads(r) for r in
                self._call(self._redis.lrange, self._key(job_id, "metrics"), 0, -1)]

    def add_log(self, job_id: str, line: str) -> None:
        pipe = self._redis.pipeline()
        pipe.rpush(self._key(job_id, "log"), line)
        pipe.ltrim(self._key(job_id, "log"), -MAX_LOG_LINES, -1)
        self._call(pipe.execute)

    def logs(self, job_id: str, tail: int = 200) -> list[str]:
        if tail <= 0:
            return []
        return [r.decode() for r in
                self._call(self._redis.lrange, self._key(job_id, "log"), -int(tail), -1)]

    def ping(self) -> bool:
        try:
            return bool(self._call(self._redis.ping))
        except StoreError:
            return False


# --------------------------------------------------------------------------- choosing one


def store_url() -> str:
    """The configured store (see the module docstring)."""
    url = os.environ.get("BNVIZ_STORE_URL", "").strip()
    if url:
        return url
    broker = os.environ.get("BNVIZ_BROKER_URL", "").strip()
    if broker.startswith(("redis://", "rediss://")):
        return broker
    return f"sqlite:///{bnviz_home() / 'jobs' / 'jobs.sqlite'}"


_STORES: dict[str, JobStore] = {}
_LOCK = threading.Lock()


def open_store(url: str | None = None) -> JobStore:
    """The store for ``url`` (default :func:`store_url`), one object per URL and process."""
    url = url or store_url()
    with _LOCK:
        if url not in _STORES:
            if url.startswith(("redis://", "rediss://", "unix://")):
                _STORES[url] = RedisStore(url)
            elif url.startswith("sqlite:///"):
                _STORES[url] = SQLiteStore(url[len("sqlite:///"):])
            else:
                raise StoreError(f"BNVIZ_STORE_URL {brief(url)}: use sqlite:///PATH or redis://...")
        return _STORES[url]
