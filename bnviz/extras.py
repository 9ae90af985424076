"""The optional extras, and the one line a missing one gives.

``pip install bnviz`` is the engine, the command line and the job system. A feature that
needs a heavy package of its own names the extra that installs it (pyproject.toml's
optional-dependencies): ``geo`` (pyarrow, GeoParquet files), ``video`` (imageio-ffmpeg, an
ffmpeg for MP4 movies where none is on the PATH), ``onnx`` (networks brought in as ONNX
files), ``map`` (datashader: the zoomable map of a slice job's millions of regions),
``web`` (the dashboard and its server). The locks, ``make test`` and the Docker image
install them all.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

__all__ = ["MissingExtra", "pip_command", "require"]


class MissingExtra(ImportError, ValueError):
    """A feature's optional package is not installed: one line naming the pip command that
    installs it. An ImportError (a module is missing) and a ValueError, the family of errors
    a user can fix, which the command line prints as one line with exit code 2."""


def pip_command(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'bnviz[{extra}]'"


def require(module: str, feature: str, extra: str) -> ModuleType:
    """``module`` imported, or :class:`MissingExtra` when its package is not installed,
    e.g. "GeoParquet needs pyarrow: pip install 'bnviz[geo]'". A package that is installed
    but fails to import (one of its own dependencies missing) raises its own error."""
    package = module.partition(".")[0]
    try:
        return import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != package:
            raise
        raise MissingExtra(f"{feature} needs {package}: {pip_command(extra)}",
                           name=module) from None
