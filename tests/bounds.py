"""Boundary checks shared by the tests of the parameter models (tests/params/test_*.py).

Each test lists the bounds a model must have, as numbers (a changed cap fails a test), and
these helpers check both sides of each one through the page's way in (``parse``, raw text)
and the code's way in (construction).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from bnviz.params import InputError, parse


def below(lo: float, whole: bool) -> float:
    return lo - 1 if whole else lo - max(abs(lo), 1.0) * 1e-9


def above(hi: float, whole: bool) -> float:
    return hi + 1 if whole else hi + max(abs(hi), 1.0) * 1e-9


def check_bounds(model: type, name: str, lo: float, hi: float, whole: bool,
                 room: dict[str, Any] | None = None, lo_open: bool = False) -> None:
    """``lo`` and ``hi`` accepted (as numbers and as text), just outside refused with a
    message naming ``name``; ``room``: other fields set so that only this one is at stake."""
    room = room or {}
    inside = ([] if lo_open else [lo]) + [hi]
    for value in inside:
        for raw in (value, f"{value!r}" if not whole else str(int(value))):
            got = getattr(parse(model, room | {name: raw}), name)
            assert got == value and type(got) is (int if whole else float), (name, raw)
        assert getattr(model(**room, **{name: int(value) if whole else value}), name) == value
    outside = [lo if lo_open else below(lo, whole), above(hi, whole)]
    if whole:
        outside.append(lo + 0.5)
    for raw in outside + [math.nan, math.inf, "x", None, True, [lo]]:
        if raw is None and name in NONE_MEANS_DEFAULT.get(model.__name__, ()):
            continue
        with pytest.raises(InputError) as info:
            parse(model, room | {name: raw})
        assert str(info.value).startswith(name.replace("_", " ") + ": "), (raw, info.value)
        with pytest.raises(InputError):
            model(**room, **{name: raw})


#: Optional fields where None is a value ("not set"), not junk.
NONE_MEANS_DEFAULT: dict[str, tuple[str, ...]] = {
    "PartitionParams": ("batch_size", "widths"),
    "JitterParams": ("virtual_batch_size",),
    "BNStatsParams": ("virtual_batch_size",),
    "DensityParams": ("layers",),
}
