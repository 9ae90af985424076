"""Where bnviz keeps its state: ``BNVIZ_HOME`` (default ``~/.bnviz``): the job store, results,
uploads and the shared cache all live under it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["bnviz_home"]


def bnviz_home() -> Path:
    """``BNVIZ_HOME`` or ``~/.bnviz``."""
    return Path(os.environ.get("BNVIZ_HOME", Path.home() / ".bnviz"))
