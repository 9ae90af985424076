"""Fixtures of the page tests: the explorer's result cache emptied after each test, and the
stubs of the fuzz tests (tests/pagefuzz.py) that keep background work from starting."""

from __future__ import annotations

import pytest
from pagefuzz import end_open_jobs, recording_starts


@pytest.fixture(autouse=True)
def _fresh_explorer_cache():
    """Monkeypatched caps must not leak through the explorer's result cache."""
    yield
    from bnviz.web.callbacks.explorer import callbacks as ce

    ce._explore_cached.cache_clear()


@pytest.fixture
def training_stub(tmp_home, monkeypatch):
    """Training requests are recorded instead of started."""
    return recording_starts(monkeypatch, "jitter-training")


@pytest.fixture
def density_stub(tmp_home, monkeypatch):
    """Density runs are recorded instead of started (the real cap check still runs)."""
    return recording_starts(monkeypatch, "density")


@pytest.fixture
def job_id(jobs_home, monkeypatch) -> str:
    """No worker process is started; one real (cancelled) job exists; returns its id."""
    from bnviz import jobs

    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    job = jobs.submit_job("smart-init", {"dataset": "digits", "epochs": 1, "runs": 1})
    jobs.cancel_job(job.id)
    yield job.id
    end_open_jobs()
