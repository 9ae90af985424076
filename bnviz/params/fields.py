"""The field types of the parameter models, the one error they raise, and how it reads.

Two ways in, one description:

* code builds a model with typed values (``JitterParams(n_points=200, ...)``): strict, an int field
  takes an int (a float 100.0 there is a bug in the caller);
* :func:`parse` reads raw values from a page, a URL or a request: lax, numbers may come as
  text ("3", "2.5", "1e3") or as integral floats (3.0), and anything else (None, NaN, inf,
  booleans, lists, integers beyond float range such as 10**400) is refused.

Either way a bad value raises :class:`InputError` (a ValueError) with ONE line naming the
control or option and the allowed range, e.g. ``depth: enter a whole number from 1 to 12, got
'x'``; values are quoted briefly (:func:`bnviz.messages.brief`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Annotated, Any

from bnviz.caps import BATCH_ALL
from bnviz.messages import InputError, brief
from bnviz.params.model import Rule

__all__ = ["InputError", "checked", "choice", "count_or_all", "described", "int_list",
           "real", "real_value", "reals", "whole", "whole_or_none", "whole_value"]


def checked(kind: type, check: Callable[[object, bool], Any], schema: Mapping[str, Any]) -> Any:
    """A field of ``kind`` read by ``check(raw, lax)`` (the value, or InputError), described
    by the JSON ``schema``: what every helper below returns."""
    return Annotated[kind, Rule(check, dict(schema))]


def _number(raw: object, lax: bool) -> int | float | None:
    """An int kept exact, a float, a numeric text (lax only), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, numbers.Integral):
        return int(raw)
    if isinstance(raw, numbers.Real):
        return float(raw)
    if lax and isinstance(raw, str):
        try:
            return int(raw)  # exact, also beyond 2**53
        except ValueError:
            pass
        try:
            return float(raw)
        except ValueError:
            return None
    return None


def whole_value(raw: object, lo: int, hi: int, *, lax: bool = True) -> int:
    """``raw`` as an int in [lo, hi], else InputError (``lax``: numeric text and integral
    floats too, as controls send them)."""
    v = _number(raw, lax)
    if isinstance(v, float):
        v = int(v) if lax and math.isfinite(v) and v.is_integer() else None
    if v is None or not lo <= v <= hi:
        raise InputError(f"enter a whole number from {lo} to {hi}, got {brief(raw)}")
    return v


def real_value(raw: object, lo: float = -math.inf, hi: float = math.inf, *,
               lo_open: bool = False, lax: bool = True) -> float:
    """``raw`` as a finite float in [lo, hi] (or (lo, hi]), else InputError."""
    v = _number(raw, lax)
    try:
        value = math.nan if v is None else float(v)
    except OverflowError:  # an int such as 10**400 has no float
        value = math.nan
    above = lo < value if lo_open else lo <= value
    if not (math.isfinite(value) and above and value <= hi):
        span = _span(lo, hi, lo_open)
        raise InputError(f"enter {'a number ' + span if span else 'a finite number'}, got "
                         f"{brief(raw)}")
    return value


def _span(lo: float, hi: float, lo_open: bool) -> str:
    """The allowed range as messages say it ("from 1 to 16", "in (0, 10]", "> 0"; "" for any
    finite number)."""
    if math.isinf(lo) and math.isinf(hi):
        return ""
    if math.isinf(hi):
        return f"> {lo:g}" if lo_open else f">= {lo:g}"
    if math.isinf(lo):
        return f"<= {hi:g}"
    return f"in ({lo:g}, {hi:g}]" if lo_open else f"from {lo:g} to {hi:g}"


def _bounds(kind: str, lo: float, hi: float, lo_open: bool = False) -> dict[str, Any]:
    """A number's JSON schema: its type and the finite bounds."""
    out: dict[str, Any] = {"type": kind}
    if math.isfinite(lo):
        out["exclusiveMinimum" if lo_open else "minimum"] = lo
    if math.isfinite(hi):
        out["maximum"] = hi
    return out


def _or_none(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def whole(lo: int, hi: int) -> Any:
    """An int field in [lo, hi]."""
    return checked(int, lambda raw, lax: whole_value(raw, lo, hi, lax=lax),
                   _bounds("integer", lo, hi))


def whole_or_none(lo: int, hi: int) -> Any:
    """An optional int field in [lo, hi]: None (or an empty text) means "not set"."""

    def check(raw: object, lax: bool) -> int | None:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        try:
            return whole_value(raw, lo, hi, lax=lax)
        except InputError:
            raise InputError(f"enter a whole number from {lo} to {hi} (or nothing), got "
                             f"{brief(raw)}") from None

    return checked(int | None, check, _or_none(_bounds("integer", lo, hi)))


def count_or_all(lo: int, hi: int, what: str = "the number of points") -> Any:
    """A batch size: a whole number from ``lo``, or None for the whole data set (written
    'all', 'none', 'full' or left empty)."""

    def check(raw: object, lax: bool) -> int | None:
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in BATCH_ALL):
            return None
        try:
            return whole_value(raw, lo, hi, lax=lax)
        except InputError:
            raise InputError(f"enter 'all' or a whole number from {lo} to {what}, got "
                             f"{brief(raw)}") from None

    return checked(int | None, check, _or_none(_bounds("integer", lo, hi)))


def real(lo: float = -math.inf, hi: float = math.inf, *, lo_open: bool = False) -> Any:
    """A finite float field in [lo, hi] (or (lo, hi] with ``lo_open``; no bounds: any finite
    number)."""
    return checked(float, lambda raw, lax: real_value(raw, lo, hi, lo_open=lo_open, lax=lax),
                   _bounds("number", lo, hi, lo_open))


def reals(lo: float = -math.inf, hi: float = math.inf, *, lo_open: bool = False,
          count: tuple[int, int] = (1, 16), distinct: bool = False) -> Any:
    """A tuple of ``count[0]`` to ``count[1]`` finite floats, each in [lo, hi] (or (lo, hi]):
    a list of numbers, or (raw values) a comma-separated text such as "0.01, 0.1" or a lone
    number.  ``distinct``: a set of values (sorted, repeats dropped), e.g. ball radii; else
    the order is kept (one value per unit)."""
    fewest, most = count
    span = _span(lo, hi, lo_open)

    def check(raw: object, lax: bool) -> tuple[float, ...]:
        items: Any = None
        if isinstance(raw, list | tuple):
            items = raw
        elif lax and isinstance(raw, str):
            items = raw.split(",")
        elif lax and _number(raw, lax=False) is not None:
            items = [raw]
        values: list[float] | None = None
        if items is not None and fewest <= len(items) <= most:
            try:
                values = [real_value(v, lo, hi, lo_open=lo_open, lax=lax) for v in items]
            except InputError:
                values = None
        if values is None:
            many = f"{fewest} to {most}" if fewest < most else str(most)
            raise InputError(f"enter {many} {'comma-separated ' if lax else ''}numbers"
                             f"{f' (each {span})' if span else ''}, got {brief(raw)}")
        return tuple(sorted(set(values))) if distinct else tuple(values)

    item = _bounds("number", lo, hi, lo_open)
    return checked(tuple[float, ...], check, {"type": "array", "items": item,
                                              "minItems": fewest, "maxItems": most,
                                              "uniqueItems": distinct})


def described(field: Any, text: str) -> Any:
    """``field`` (one of the helpers above) with a help text: what the command line's
    ``--help`` and a form's tooltip say about it (its JSON schema's description)."""
    kind, rule = field.__origin__, field.__metadata__[0]
    return Annotated[kind, replace(rule, description=text)]


def text(most: int) -> Any:
    """A short str field of letters, digits and ``,_-`` (an id or a list of names), at most
    ``most`` characters."""

    def check(raw: object, lax: bool) -> str:
        if not (isinstance(raw, str) and len(raw) <= most
                and all(c.isalnum() or c in ",_-" for c in raw)):
            raise InputError(f"letters, digits and ,_- only, at most {most}, got {brief(raw)}")
        return raw

    return checked(str, check, {"type": "string", "maxLength": most})


def choice(options: tuple[str, ...]) -> Any:
    """A str field, one of ``options`` exactly."""

    def check(raw: object, lax: bool) -> str:
        if not (isinstance(raw, str) and raw in options):
            raise InputError(f"choose one of {', '.join(options)}, got {brief(raw)}")
        return raw

    return checked(str, check, {"type": "string", "enum": list(options)})


def int_list(raw: Any) -> tuple[int, ...]:
    """Whole numbers from "1,4" or a sequence of them, in order; () when they are not (the
    caller's validator says what it wanted)."""
    try:
        text = raw if isinstance(raw, str) else ",".join(str(int(v)) for v in raw)
        return tuple(int(v) for v in text.split(","))
    except (TypeError, ValueError):
        return ()
