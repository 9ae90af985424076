"""Fixtures of the image experiment tests."""

from __future__ import annotations

from pathlib import Path

import imagefiles
import pytest


@pytest.fixture
def data_home(jobs_home: Path) -> Path:
    """jobs_home with every small real-format file set written into BNVIZ_DATA."""
    root = jobs_home / "data"
    imagefiles.write_all(root)
    return root
