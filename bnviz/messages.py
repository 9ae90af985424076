"""How messages quote what a user typed, and what of the server a page may show.

A value can be anything a request sends (a 2000-character string, a nested list), and a
message must stay one readable line (:func:`brief`). A job's error and log come from the
server: a page shows them without the server's internals (:func:`for_page`,
:func:`log_for_page`); the CLI and the server log keep everything.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["TRACEBACK_HINT", "InputError", "Refused", "brief", "for_page", "log_for_page",
           "one_line"]

#: An absolute file path (not the path part of a URL: no word character, dot, colon or slash
#: before its first slash).
_PATH = re.compile(r"(?<![\w.:/~])/[^\s'\"():,;]+")
TRACEBACK_HINT = "(a traceback: in the server log and `bnviz jobs show ID`)"


class InputError(ValueError):
    """A parameter a computation cannot use; the one-line message says which and why.

    Defined here, at the bottom of the dependency graph, so that the engine
    (:mod:`bnviz.core`) raises it without importing the parameter layer above it;
    :mod:`bnviz.params` re-exports it, the one place that raises it for user input.

    Raised inside a validator, ``field`` names the setting to blame when a check spans
    several (a cross-field check): the message then starts with that setting's label."""

    def __init__(self, text: str, field: str | None = None):
        super().__init__(text)
        self.field = field


class Refused(Exception):
    """A request the server does not take: an HTTP status, one line saying why, and the
    headers that go with it (``Retry-After``, ``Allow``). Raised by the stores that decide
    (bnviz.lecture.hall) as well as by the routes; bnviz.server.answers turns it into the
    JSON answer ``{"error": line}``."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.headers = status, dict(headers or {})


def one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis ends a cut one)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def brief(value: object, limit: int = 40) -> str:
    """``repr(value)`` on one line, cut to about ``limit`` characters with an ellipsis (an
    int of thousands of digits, which Python refuses to print, is said in words)."""
    try:
        text = repr(value).replace("\n", " ")
    except ValueError:  # int too large to convert to str
        return "a number of thousands of digits"
    return text if len(text) <= limit else text[:limit - 1] + "…"


def for_page(text: str) -> str:
    """A server message as a page shows it: every absolute path cut to its last part
    (``…/data_batch_1``), so the server's layout stays on the server."""
    return _PATH.sub(lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def log_for_page(lines: Iterable[str]) -> list[str]:
    """Log lines as a page shows them: a traceback (the runner logs one as a single entry)
    becomes a hint where to find it, and paths are cut as in :func:`for_page`."""
    return [TRACEBACK_HINT if line.lstrip().startswith("Traceback (most recent call last)")
            else for_page(line) for line in lines]
