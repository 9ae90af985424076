"""Helpers of the job store tests: a store of either kind for one test, and a dead pid."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from bnviz.records.redis_store import RedisStore
from bnviz.records.sqlite_store import SQLiteStore
from bnviz.records.store import JobStore, pid_alive


def dead_pid() -> int:
    """The pid of a process of this host that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)
    return proc.pid


def open_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> JobStore:
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "store" / "jobs.sqlite")
    store = RedisStore(request.getfixturevalue("redis_server"))
    store.PREFIX = f"bnviz-test-{uuid.uuid4().hex}"  # type: ignore[misc]  # keys of this test only
    assert store.ping()
    return store
