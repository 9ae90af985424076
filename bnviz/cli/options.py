"""What the commands share: the one-line error, the parser that raises it, the syntax of
option values, and the check of their ranges by the parameter models (:mod:`bnviz.params`).

argparse reads the syntax (an integer, a number, 'all'); the models check the ranges and the
cost caps, so the command line and the pages accept the same values.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CLIError", "Parser", "batch_size", "check_output_path", "integer", "number",
           "validated"]

T = TypeVar("T")


class CLIError(Exception):
    """A problem with the user's options or files: one line, exit code 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line instead of usage + message
        raise CLIError(message)


def integer(text: str) -> int:
    """argparse type: an integer (its range is the model's to check)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None


def number(text: str) -> float:
    """argparse type: a number (finiteness and range are the model's to check)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None


def batch_size(text: str) -> int | str:
    """argparse type: an integer, or 'all' (also 'none', 'full': the whole data set)."""
    if text.strip().lower() in ("all", "none", "full"):
        return "all"
    return integer(text)


def validated(model: type[T], values: Mapping[str, Any],
              labels: Mapping[str, str] | None = None) -> T:
    """``model`` from option values; a bad one raises InputError naming the option:
    ``--depth: enter a whole number from 1 to 16, got 1000``."""
    from bnviz.params import parse  # pydantic: only once a command runs, not for --help

    names = {name: "--" + name.replace("_", "-") for name in values}
    return parse(model, values, names | dict(labels or {}))


def check_output_path(flag: str, path: Path | None, suffixes: tuple[str, ...]) -> None:
    """An output file named by ``flag``: refused at once (before any work) unless it ends in
    one of ``suffixes`` and its directory exists."""
    if path is None:
        return
    if path.suffix.lower() not in suffixes:
        raise CLIError(f"{flag}: the file must end in {', '.join(suffixes)}, got "
                       f"{str(path)[-60:]!r}")
    if not path.parent.is_dir():
        raise CLIError(f"{flag}: no directory {str(path.parent)[-80:]!r}")
