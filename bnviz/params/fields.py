"""The field types of the parameter models, the one error they raise, and how it reads.

Two ways in, one description:

* code builds a model with typed values (``JitterParams(n=200, ...)``): strict, an int field
  takes an int (a float 100.0 there is a bug in the caller);
* :func:`parse` reads raw values from a page, a URL or a request: lax, numbers may come as
  text ("3", "2.5", "1e3") or as integral floats (3.0), and anything else (None, NaN, inf,
  booleans, lists, integers beyond float range such as 10**400) is refused.

Either way a bad value raises :class:`InputError` (a ValueError) with ONE line naming the
control or option and the allowed range, e.g. ``depth: enter a whole number from 1 to 12, got
'x'``; values are quoted briefly (:func:`bnviz.messages.brief`).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

from bnviz.caps import BATCH_ALL
from bnviz.messages import InputError, brief

__all__ = ["MODELS", "InputError", "choice", "count_or_all", "described", "int_list",
           "one_line", "params_dataclass", "parse", "quote", "real", "real_value", "reals",
           "validator", "whole", "whole_or_none", "whole_value"]

T = TypeVar("T")
#: Validation context key: values are raw (text from a page or a URL), convert them laxly.
RAW = "raw"
#: Unknown keys are ignored (a URL may carry others); defaults are validated too (so the
#: dependent settings of a model are clamped whatever was given).
CONFIG = ConfigDict(extra="ignore", validate_default=True)


def quote(raw: object) -> str:
    """A value as messages show it: briefly (an int of 5000 digits cannot even be printed)."""
    try:
        return brief(raw)
    except ValueError:  # int too large to convert to str
        return "a number of thousands of digits"


def _is_raw(info: pydantic.ValidationInfo) -> bool:
    return bool(info.context) and bool(info.context.get(RAW))


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
        raise InputError(f"enter a whole number from {lo} to {hi}, got {quote(raw)}")
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
                         f"{quote(raw)}")
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


def _bounds(lo: float, hi: float, lo_open: bool = False) -> list[Any]:
    """pydantic's own bounds, for the JSON schema (our validator has checked them)."""
    low = ([Field(gt=lo)] if lo_open else [Field(ge=lo)]) if math.isfinite(lo) else []
    return low + ([Field(le=hi)] if math.isfinite(hi) else [])


def whole(lo: int, hi: int) -> Any:
    """An int field in [lo, hi]."""

    def check(raw: object, info: pydantic.ValidationInfo) -> int:
        return whole_value(raw, lo, hi, lax=_is_raw(info))

    return Annotated[int, *_bounds(lo, hi), BeforeValidator(check)]


def whole_or_none(lo: int, hi: int) -> Any:
    """An optional int field in [lo, hi]: None (or an empty text) means "not set"."""

    def check(raw: object, info: pydantic.ValidationInfo) -> int | None:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        try:
            return whole_value(raw, lo, hi, lax=_is_raw(info))
        except InputError:
            raise InputError(f"enter a whole number from {lo} to {hi} (or nothing), got "
                             f"{quote(raw)}") from None

    return Annotated[int | None, *_bounds(lo, hi), BeforeValidator(check)]


def count_or_all(lo: int, hi: int, what: str = "the number of points") -> Any:
    """A batch size: a whole number from ``lo``, or None for the whole data set (written
    'all', 'none', 'full' or left empty)."""

    def check(raw: object, info: pydantic.ValidationInfo) -> int | None:
        if raw is None or (isinstance(raw, str) and raw.strip().lower() in BATCH_ALL):
            return None
        try:
            return whole_value(raw, lo, hi, lax=_is_raw(info))
        except InputError:
            raise InputError(f"enter 'all' or a whole number from {lo} to {what}, got "
                             f"{quote(raw)}") from None

    return Annotated[int | None, *_bounds(lo, hi), BeforeValidator(check)]


def real(lo: float = -math.inf, hi: float = math.inf, *, lo_open: bool = False) -> Any:
    """A finite float field in [lo, hi] (or (lo, hi] with ``lo_open``; no bounds: any finite
    number)."""

    def check(raw: object, info: pydantic.ValidationInfo) -> float:
        return real_value(raw, lo, hi, lo_open=lo_open, lax=_is_raw(info))

    return Annotated[float, *_bounds(lo, hi, lo_open), BeforeValidator(check)]


def reals(lo: float = -math.inf, hi: float = math.inf, *, lo_open: bool = False,
          count: tuple[int, int] = (1, 16), distinct: bool = False) -> Any:
    """A tuple of ``count[0]`` to ``count[1]`` finite floats, each in [lo, hi] (or (lo, hi]):
    a list of numbers, or (raw values) a comma-separated text such as "0.01, 0.1" or a lone
    number.  ``distinct``: a set of values (sorted, repeats dropped), e.g. ball radii; else
    the order is kept (one value per unit)."""
    fewest, most = count
    span = _span(lo, hi, lo_open)

    def check(raw: object, info: pydantic.ValidationInfo) -> tuple[float, ...]:
        lax = _is_raw(info)
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
                             f"{f' (each {span})' if span else ''}, got {quote(raw)}")
        return tuple(sorted(set(values))) if distinct else tuple(values)

    item = {"type": "number"} | {key: value for key, value in (
        ("exclusiveMinimum" if lo_open else "minimum", lo), ("maximum", hi))
        if math.isfinite(value)}
    schema = {"items": item, "minItems": fewest, "maxItems": most, "uniqueItems": distinct}
    return Annotated[tuple[float, ...], Field(json_schema_extra=schema),
                     BeforeValidator(check)]


def described(field: Any, text: str) -> Any:
    """``field`` (one of the helpers above) with a help text: what the command line's
    ``--help`` and a form's tooltip say about it (its JSON schema's description)."""
    return Annotated[field, Field(description=text)]


def text(most: int) -> Any:
    """A short str field of letters, digits and ``,_-`` (an id or a list of names), at most
    ``most`` characters."""

    def check(raw: object) -> str:
        if not (isinstance(raw, str) and len(raw) <= most
                and all(c.isalnum() or c in ",_-" for c in raw)):
            raise InputError(f"letters, digits and ,_- only, at most {most}, got {quote(raw)}")
        return raw

    return Annotated[str, Field(json_schema_extra={"maxLength": most}), BeforeValidator(check)]


def choice(options: tuple[str, ...]) -> Any:
    """A str field, one of ``options`` exactly."""

    def check(raw: object) -> str:
        if not (isinstance(raw, str) and raw in options):
            raise InputError(f"choose one of {', '.join(options)}, got {quote(raw)}")
        return raw

    return Annotated[str, Field(json_schema_extra={"enum": list(options)}),
                     BeforeValidator(check)]


def label_of(field: str, labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get(field, field.replace("_", " "))


def one_line(error: ValidationError, labels: Mapping[str, str] | None = None) -> str:
    """The first problem of a ValidationError as one line: "<label>: <what is allowed>".

    ``labels`` maps field names to what the user sees (a control's name, a CLI option);
    the default is the field name with spaces.
    """
    first = error.errors(include_url=False)[0]
    path = [str(part) for part in first.get("loc") or ()]  # a nested model's field: 2 parts
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, ValueError):
        text = str(cause)
        named = getattr(cause, "field", None)  # a cross-field check names the one to blame
        if named and named not in path[-1:]:
            path.append(named)
    else:  # pydantic's own check (a value of the wrong kind where no validator of ours ran)
        text = f"{first.get('msg', 'not valid')}, got {quote(first.get('input'))}"
    field = path[0] if path else None
    inner = "".join(f" {label_of(part, None)}" for part in path[1:])
    return f"{label_of(field, labels)}{inner}: {text}" if field else text


#: Every parameter model, in the order their modules defined them (:func:`params_dataclass`
#: adds each): what :func:`bnviz.params.warm_validators` builds before a server's first
#: request.
MODELS: list[type] = []


@functools.cache
def validator(model: type) -> TypeAdapter:
    """The model's validator, built once per process (pydantic builds it on first use: 10-50
    ms, which concurrent first requests would otherwise race to do)."""
    return TypeAdapter(model)


def parse(model: type[T], raw: object, labels: Mapping[str, str] | None = None, *,
          lax: bool = True) -> T:
    """Validate raw values (a mapping of field name -> value from a page, a URL, a request)
    into ``model``: missing -> the default, unknown keys ignored.  Raises only
    :class:`InputError`, whose message names the first bad field by its label.

    ``lax=False`` takes typed values only, as construction does (a Python function's
    arguments), with the messages naming the fields by ``labels`` (e.g. the argument names).
    """
    if not isinstance(raw, Mapping):
        raise InputError(f"expected named settings, got {quote(raw)}")
    values = {k: v for k, v in raw.items() if isinstance(k, str)}
    try:
        return validator(model).validate_python(values, context={RAW: lax})
    except ValidationError as exc:
        raise InputError(one_line(exc, labels)) from None


def params_dataclass(cls: type[T]) -> type[T]:
    """A frozen pydantic dataclass whose construction raises :class:`InputError` (one line)
    instead of pydantic's multi-line ValidationError.  Dataclass tools (``replace``,
    ``fields``, ``asdict``) work on it, and it is hashable (a cache key)."""
    cls = pydantic_dataclass(frozen=True, config=CONFIG)(cls)
    validate: Callable[..., None] = cls.__init__

    @functools.wraps(validate)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            validate(self, *args, **kwargs)
        except ValidationError as exc:
            raise InputError(one_line(exc)) from None

    cls.__init__ = __init__
    MODELS.append(cls)
    return cls


def int_list(raw: Any) -> tuple[int, ...]:
    """Whole numbers from "1,4" or a sequence of them, in order; () when they are not (the
    caller's validator says what it wanted)."""
    try:
        text = raw if isinstance(raw, str) else ",".join(str(int(v)) for v in raw)
        return tuple(int(v) for v in text.split(","))
    except (TypeError, ValueError):
        return ()
