"""Parsing of control values shared by the pages' callbacks (messages name the control)."""

from __future__ import annotations

import math


def whole_number(value, name: str, lo: int, hi: int) -> int:
    """A whole number in [lo, hi] from a control's value, else ValueError naming it."""
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        v = math.nan
    if not (math.isfinite(v) and v == int(v) and lo <= v <= hi):
        raise ValueError(f"{name}: enter a whole number from {lo} to {hi}")
    return int(v)


def shown_name(filename: object, limit: int = 60) -> str:
    """An uploaded file's name as messages show it: one line, at most ``limit`` characters
    (the name comes from the browser, so it can be anything)."""
    if not isinstance(filename, str) or not filename.strip():
        return "upload"
    name = "".join(c if c.isprintable() else " " for c in filename).strip() or "upload"
    return name if len(name) <= limit else name[:limit - 1] + "…"


def finite_number(value) -> float | None:
    """A control's value as a finite float, or None: for text, None, booleans, NaN, inf and
    integers beyond float range (JSON integers arrive exact, so a request can send 10**400)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
