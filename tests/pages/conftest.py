"""Fixtures of the page tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fresh_explorer_cache():
    """Monkeypatched caps must not leak through the explorer's result cache."""
    yield
    from callbacks.explorer import callbacks as ce

    ce._explore_cached.cache_clear()
