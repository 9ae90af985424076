"""Fixtures of the job tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from jobruns import stop_local_worker


@pytest.fixture
def home(jobs_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """jobs_home with one job at a time, and the local worker stopped and reaped afterwards.

    A job's heartbeat starts once its process has imported torch; on a loaded 2-core machine
    that took over 60 s (the default BNVIZ_JOB_STALE_SECONDS) and reap failed a job that was
    about to run. These tests detect dead processes by pid, so a late heartbeat is allowed."""
    monkeypatch.setenv("BNVIZ_LOCAL_WORKERS", "1")
    monkeypatch.setenv("BNVIZ_JOB_STALE_SECONDS", "600")
    yield jobs_home
    stop_local_worker(jobs_home)
