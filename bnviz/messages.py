"""How messages quote what a user typed: briefly. A value can be anything a request sends
(a 2000-character string, a nested list), and a message must stay one readable line."""

from __future__ import annotations

__all__ = ["brief"]


def brief(value: object, limit: int = 40) -> str:
    """``repr(value)`` on one line, cut to about ``limit`` characters with an ellipsis."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 1] + "…"
