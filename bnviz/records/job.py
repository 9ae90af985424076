"""A job as the store keeps it (:class:`Job`), its statuses, and the small rules every store
and reader shares: job ids, dedupe keys, when a process counts as alive, the store's errors.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from bnviz.config import setting
from bnviz.messages import brief

__all__ = ["ACTIVE", "ENDED", "FIELDS", "HOST", "JOB_ID", "JSON_FIELDS", "MAX_LOG_LINES",
           "REUSABLE", "STATUSES", "ClientBusy", "Job", "QueueFull", "StoreError",
           "check_job_id", "job_key", "pid_alive", "stale_seconds"]

STATUSES: tuple[str, ...] = ("queued", "running", "succeeded", "failed", "cancelled")
ENDED = frozenset({"succeeded", "failed", "cancelled"})
#: Jobs that occupy a worker or wait for one (what the run cap counts).
ACTIVE: tuple[str, ...] = ("queued", "running")
#: Jobs a page may reuse instead of starting the same computation again.
REUSABLE: tuple[str, ...] = ("queued", "running", "succeeded")
HOST = socket.gethostname()
#: Keep at most this many log lines per job (the tail).
MAX_LOG_LINES = 5000
JOB_ID = re.compile(r"^[0-9a-f]{12}$")


class StoreError(RuntimeError):
    """The job store cannot be reached or read: a message for the user."""


class QueueFull(ValueError):
    """As many jobs as the server allows are queued or running; the message says so."""

    def __init__(self, active: int):
        super().__init__(f"the server is busy: {active} background computations are going on, "
                         "the most it runs at once; try again when one ends")
        self.active = active


class ClientBusy(QueueFull):
    """This client has as many jobs queued or running as one client may."""

    def __init__(self, active: int):
        ValueError.__init__(self, f"you have {active} jobs queued or running, the most one "
                            "client may have; wait for one to end or cancel one")
        self.active = active


def check_job_id(job_id: object) -> str:
    """A job id as given by a user (URL, CLI, a page's store): 12 hex digits, or ValueError."""
    if not isinstance(job_id, str) or not JOB_ID.match(job_id.strip().lower()):
        raise ValueError(f"{brief(job_id)} is not a job id (12 hex digits, as `jobs list` shows)")
    return job_id.strip().lower()


def job_key(job_type: str, params: dict[str, Any]) -> str:
    """The dedupe key of a job: its type and checked parameters, hashed (24 hex digits)."""
    text = json.dumps({"type": job_type, "params": params}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def stale_seconds() -> float:
    """A running job whose heartbeat is older than this is taken to be dead
    (``BNVIZ_JOB_STALE_SECONDS``, default 60; job processes beat every 2 s)."""
    return setting("BNVIZ_JOB_STALE_SECONDS")


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
    key: str | None = None
    #: who submitted it (an opaque hash of the client's address; None from the CLI)
    client: str | None = None
    #: how many times a worker has started it (a lost worker's job is queued again)
    attempts: int = 0

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

    def public(self) -> dict[str, Any]:
        """What anyone may read (the HTTP API, the jobs page): no host, pid or client."""
        out = self.to_json()
        for name in ("host", "pid", "client", "key"):
            out.pop(name)
        return out


FIELDS = [f.name for f in fields(Job)]
JSON_FIELDS = frozenset({"params", "summary"})
