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
