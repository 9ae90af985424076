"""Fixtures of the data tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def data_root(jobs_home: Path) -> Path:
    """The (empty) data directory BNVIZ_DATA points at."""
    root = Path(os.environ["BNVIZ_DATA"])
    assert root == jobs_home / "data" and root.is_dir()
    return root
