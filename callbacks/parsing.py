"""Parsing of control values shared by the pages' callbacks (messages name the control).

The checks themselves are those of the parameter layer (:mod:`bnviz.params.fields`), so a
control and the command-line option of the same setting accept the same values.
"""

from __future__ import annotations

from bnviz.params import InputError
from bnviz.params.fields import real_value, whole_value


def whole_number(value, name: str, lo: int, hi: int) -> int:
    """A whole number in [lo, hi] from a control's value, else InputError (a ValueError)
    naming it: "depth: enter a whole number from 1 to 12, got 'x'"."""
    try:
        return whole_value(value, lo, hi)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


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
    try:
        return real_value(value)
    except InputError:
        return None
