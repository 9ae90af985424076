"""What the commands share: the one-line error, the parser that raises it, the syntax of
option values, and the check of their ranges by the parameter models (:mod:`bnviz.params`).

argparse reads the syntax (an integer, a number, 'all'); the models check the ranges and the
cost caps, so the command line and the pages accept the same values.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CLIError", "HelpFormatter", "Parser", "batch_size", "check_output_path",
           "examples_epilog", "integer", "number", "validated"]

T = TypeVar("T")


class CLIError(Exception):
    """A problem with the user's options or files: one line, exit code 2."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows each option's default (where it has one worth saying) and keeps the
    examples' lines as written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or "default" in text.lower() or default is None
                or default is False or default is argparse.SUPPRESS
                or not action.option_strings or isinstance(default, list)):
            return text
        return f"{text} (default: %(default)s)".lstrip()


def examples_epilog(examples: Sequence[str]) -> str | None:
    """A help's closing lines: its examples, one a line."""
    if not examples:
        return None
    return "examples:\n" + "\n".join(f"  {line}" for line in examples)


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        # an option without help still shows its default
        if kwargs.get("help") is None and kwargs.get("default") not in (None, False) and \
                kwargs.get("action") in (None, "store"):
            kwargs["help"] = "default: %(default)s"
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> None:  # one clear line instead of usage + message
        match = _INVALID_CHOICE.search(message)
        if match:  # a typo: say what was probably meant
            choices = [c.strip().strip("'") for c in match.group(2).split(",")]
            close = difflib.get_close_matches(match.group(1), choices, n=1, cutoff=0.6)
            if close:
                message = f"{message.split(':')[0]}: no {match.group(1)!r}; did you mean " \
                          f"{close[0]!r}? (choose from {match.group(2)})"
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
