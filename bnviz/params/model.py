"""The one dataclass layer of the parameter models: a frozen dataclass whose fields check
themselves, in their order, then the checks that span several fields.

Why not pydantic: this layer was pydantic dataclasses, and every check in them was already
ours (:mod:`bnviz.params.fields`); pydantic carried them.  Its import and the building of a
model's schema cost about 90 ms of every process that validates one (measured with
``python -X importtime`` and cProfile on ``bnviz partition``: 35-48 ms importing, 14 ms per
model built), which was the whole gap between ``bnviz partition`` and the fastest peer's
whole process (issue 28).  The layer keeps what the models used: typed strict construction,
lax parsing of raw values, defaults validated, unknown keys ignored, a nested model's errors
named by their path, and a JSON schema of the fields (the jobs' flags and form are made
from it).

A field is ``Annotated[type, Rule]`` (the helpers of :mod:`bnviz.params.fields` make them);
a field without a Rule is checked by its type (bool, int, float, str, a tuple of them, a
nested model, or ``X | None``; a plain float is finite).  Checks of our own, with plain
names (no library's): :func:`field_check` (``mode="before"``: the raw value; ``"after"``: the
checked one, with the fields before it that passed in ``info.data``) and :func:`model_check`
(the whole model, once every field passed; it returns nothing).  Every field is checked,
whatever the others gave, so one answer names every bad value: an
:class:`~bnviz.messages.InputError` with one line, "<label>: <what is allowed>; <label>: ...".
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import math
import numbers
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from bnviz.messages import InputError, brief, one_line

__all__ = ["MODELS", "CheckInfo", "Rule", "field_check", "json_schema", "model_check",
           "params_dataclass", "parse", "validator"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Rule:
    """How one field reads a value: ``check(raw, lax)`` returns the value or raises
    InputError (``lax``: raw values from a page, a URL or a request); ``schema`` is the
    field's JSON schema (its type and bounds), ``description`` its help text."""

    check: Callable[[object, bool], Any]
    schema: Mapping[str, Any]
    description: str | None = None


@dataclasses.dataclass(frozen=True)
class CheckInfo:
    """What an "after" or "before" field check sees besides the value: the fields checked
    before it (by name), as a model's definition orders them; a field that was refused is
    absent (its own message says why)."""

    data: Mapping[str, Any]


class _Invalid(Exception):
    """A field's failure on its way out: the path of field names (a nested model's field:
    two names) and the message; ``more``: the other fields' failures of the same check."""

    def __init__(self, path: tuple[str, ...], error: ValueError,
                 more: tuple[_Invalid, ...] = ()):
        super().__init__(str(error))
        self.path, self.error, self.more = path, error, more

    def each(self) -> tuple[_Invalid, ...]:
        return (self, *self.more)


@dataclasses.dataclass(frozen=True)
class _Hook:
    function: Any  # a classmethod (field hooks) or a function (model hooks)
    names: tuple[str, ...]
    mode: str


def field_check(*names: str, mode: str = "after") -> Callable[[Any], _Hook]:
    """A function ``(cls, value[, info])`` (a classmethod or not, decorated or not) that
    reads the named fields' value and returns it, perhaps changed: before their Rule
    (``mode="before"``, the raw value) or after it (``"after"``). It raises InputError to
    refuse the value."""
    if mode not in ("before", "after"):
        raise ValueError(f"a field check runs 'before' or 'after' the field's rule, not "
                         f"{mode!r}")
    return lambda function: _Hook(function, names, mode)


def model_check(function: Callable[[Any], None]) -> _Hook:
    """A method ``(self) -> None`` run once every field passed its own checks: a check
    across fields, which raises ``InputError(text, field)`` (naming the field to blame) or
    returns nothing; the model is frozen, so it cannot change a field."""
    return _Hook(function, (), "model")


#: Every parameter model, in the order their modules defined them (:func:`params_dataclass`
#: adds each): what :func:`bnviz.params.warm_validators` builds before a server's first
#: request.
MODELS: list[type] = []


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    rule: Rule
    default: Any  # dataclasses.MISSING: required
    factory: Any  # the default's factory (a mutable default), or dataclasses.MISSING
    before: tuple[Callable[..., Any], ...]
    after: tuple[Callable[..., Any], ...]


@dataclasses.dataclass(frozen=True)
class _Validator:
    fields: tuple[_Field, ...]
    model_hooks: tuple[Callable[[Any], Any], ...]


def _bound(hook: _Hook, cls: type) -> Callable[..., Any]:
    """The field check as a callable ``(value, info)``: bound to the class whether or not it
    is a classmethod, given ``info`` where its signature takes a second argument (a
    decorator that keeps the signature, with functools.wraps, is read through)."""
    function = hook.function
    if isinstance(function, staticmethod):
        bound = function.__func__
    else:
        bound = (function if isinstance(function, classmethod) else classmethod(function)
                 ).__get__(None, cls)
    try:
        parameters = list(inspect.signature(bound).parameters.values())
    except (TypeError, ValueError):  # no signature to read: give it both
        return bound
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return bound
    return lambda value, info: bound(value)


def _model_hook(hook: _Hook) -> Callable[[Any], Any]:
    function = hook.function
    return function.__func__ if isinstance(function, staticmethod | classmethod) else function


@functools.cache
def validator(model: type) -> _Validator:
    """The model's checks, read once per process from its annotations (a server builds
    every model's before its first request: :func:`bnviz.params.warm_validators`)."""
    hints = typing.get_type_hints(model, include_extras=True)
    hooks: dict[str, _Hook] = {}
    for klass in reversed(model.__mro__):  # a subclass's attribute of one name replaces it
        own = vars(klass).get("__bnviz_hooks__", {})
        for name in vars(klass).keys() - own.keys():
            hooks.pop(name, None)
        hooks.update(own)
    fields = []
    for f in dataclasses.fields(model):
        mine = [h for h in hooks.values() if f.name in h.names]
        fields.append(_Field(f.name, rule_of(hints[f.name]), f.default, f.default_factory,
                             tuple(_bound(h, model) for h in mine if h.mode == "before"),
                             tuple(_bound(h, model) for h in mine if h.mode == "after")))
    return _Validator(tuple(fields), tuple(_model_hook(h) for h in hooks.values()
                                           if h.mode == "model"))


def _check(model: type[T], values: Mapping[str, Any], lax: bool, into: T | None = None) -> T:
    """The model from ``values`` (missing: the default), or _Invalid for every bad field in
    definition order (then, when every field passed, the model checks, in the order they
    were defined)."""
    spec = validator(model)
    done: dict[str, Any] = {}
    info = CheckInfo(done)  # the fields checked so far, as each hook runs
    refused: list[_Invalid] = []
    for field in spec.fields:
        raw = values.get(field.name, field.default)
        if raw is dataclasses.MISSING and field.factory is not dataclasses.MISSING:
            raw = field.factory()
        try:
            if raw is dataclasses.MISSING:
                raise InputError("a value is required")
            for hook in field.before:
                raw = hook(raw, info)
            value = field.rule.check(raw, lax)
            for hook in field.after:
                value = hook(value, info)
        except _Invalid as inner:  # a nested model's fields
            refused += [_Invalid((field.name, *one.path), one.error) for one in inner.each()]
            continue
        except ValueError as exc:
            refused.append(_Invalid((field.name,), exc))
            continue
        except KeyError:  # a check reading a field refused before it: that one says why
            if not refused:
                raise
            continue
        done[field.name] = value
    if refused:
        raise _Invalid(refused[0].path, refused[0].error, tuple(refused[1:]))
    out = object.__new__(model) if into is None else into
    for name, value in done.items():
        object.__setattr__(out, name, value)
    for hook in spec.model_hooks:
        try:
            returned = hook(out)
        except ValueError as exc:
            raise _Invalid((), exc) from None
        if returned is not None and returned is not out:
            raise TypeError(f"{model.__name__}.{hook.__name__}: a model check returns "
                            "nothing (the model is frozen)")
    return out


def _label(field: str, labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get(field, field.replace("_", " "))


#: The longest refusal line: a form of many bad fields names the first that fit, then how
#: many more (the jobs form's fuzz test found 8 bad fields' 501 characters in a page alert).
MAX_REFUSAL_CHARS = 400


def _one_line(problem: _Invalid, labels: Mapping[str, str] | None = None) -> str:
    """Every refused field as "<label>: <text>", joined with "; " on one line: the label of
    the field to blame (a cross-field check names it: ``InputError.field``; a nested
    model's field adds its own name); past :data:`MAX_REFUSAL_CHARS`, the first ones and
    "and N more"."""
    parts = [_one(each, labels) for each in problem.each()]
    line = "; ".join(parts)
    if len(line) <= MAX_REFUSAL_CHARS:
        return line
    kept: list[str] = []
    for part in parts:
        more = f"; and {len(parts) - len(kept) - 1} more"
        if len("; ".join([*kept, part]) + more) > MAX_REFUSAL_CHARS:
            break
        kept.append(part)
    if not kept:  # one refusal longer than the line
        return one_line(parts[0], MAX_REFUSAL_CHARS)
    return "; ".join(kept) + f"; and {len(parts) - len(kept)} more"


def _one(problem: _Invalid, labels: Mapping[str, str] | None) -> str:
    path = list(problem.path)
    named = getattr(problem.error, "field", None)
    if named and named not in path[-1:]:
        path.append(named)
    if not path:
        return str(problem.error)
    inner = "".join(f" {_label(part, None)}" for part in path[1:])
    return f"{_label(path[0], labels)}{inner}: {problem.error}"


def parse(model: type[T], raw: object, labels: Mapping[str, str] | None = None, *,
          lax: bool = True) -> T:
    """Validate raw values (a mapping of field name -> value from a page, a URL, a request)
    into ``model``: missing -> the default, unknown keys ignored.  Raises only
    :class:`InputError`, whose one line names every bad field by its label.

    ``lax=False`` takes typed values only, as construction does (a Python function's
    arguments), with the messages naming the fields by ``labels`` (e.g. the argument names).
    """
    if not isinstance(raw, Mapping):
        raise InputError(f"expected named settings, got {brief(raw)}")
    try:
        return _check(model, raw, lax)
    except _Invalid as problem:
        raise InputError(_one_line(problem, labels)) from None


def params_dataclass(cls: type[T]) -> type[T]:
    """A frozen dataclass whose construction checks every field (strictly: code passes
    typed values) and raises :class:`InputError` (one line).  Dataclass tools
    (``replace``, ``fields``, ``asdict``) work on it, and it is hashable (a cache key)."""
    own = {name: hook for name, hook in vars(cls).items() if isinstance(hook, _Hook)}
    for name, hook in own.items():
        setattr(cls, name, hook.function)
    cls.__bnviz_hooks__ = own  # type: ignore[attr-defined]
    cls = dataclasses.dataclass(frozen=True)(cls)
    assign: Callable[..., None] = cls.__init__  # the dataclass's: binds the arguments

    @functools.wraps(assign)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        assign(self, *args, **kwargs)
        given = {f.name: getattr(self, f.name) for f in validator(type(self)).fields}
        try:
            _check(type(self), given, False, into=self)
        except _Invalid as problem:
            raise InputError(_one_line(problem)) from None

    cls.__init__ = __init__  # type: ignore[method-assign]
    MODELS.append(cls)
    return cls


# --------------------------------------------------------------------------- plain types

_SCHEMAS: dict[type, dict[str, str]] = {bool: {"type": "boolean"}, int: {"type": "integer"},
                                        float: {"type": "number"}, str: {"type": "string"}}


def _plain(kind: type, raw: object, lax: bool) -> Any:
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        if lax and isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
    elif isinstance(raw, bool):
        pass
    elif kind is int and isinstance(raw, numbers.Integral):  # numpy's ints too
        return int(raw)
    elif kind is float and isinstance(raw, numbers.Real):
        try:
            value = float(raw)  # an int too large for a float: OverflowError
        except OverflowError:
            value = math.inf
        if math.isfinite(value):
            return value
        raise InputError(f"expected a finite number, got {brief(raw)}")
    elif isinstance(raw, kind):
        return raw
    raise InputError(f"expected {_SCHEMAS[kind]['type']}, got {brief(raw)}")


def rule_of(annotation: Any) -> Rule:
    """The Rule of a field's annotation: its own (``Annotated[type, Rule]``), else one made
    from the type."""
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, Rule):
            return meta
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if type(None) in args and len(args) == 2:  # X | None
        inner = rule_of(next(a for a in args if a is not type(None)))
        return Rule(lambda raw, lax: None if raw is None else inner.check(raw, lax),
                    {"anyOf": [dict(inner.schema), {"type": "null"}]})
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = rule_of(args[0])

        def items(raw: object, lax: bool) -> tuple[Any, ...]:
            if not isinstance(raw, list | tuple):
                raise InputError(f"expected a list, got {brief(raw)}")
            return tuple(item.check(v, lax) for v in raw)
        return Rule(items, {"type": "array", "items": dict(item.schema)})
    if dataclasses.is_dataclass(annotation) and hasattr(annotation, "__bnviz_hooks__"):
        def nested(raw: object, lax: bool) -> Any:
            if isinstance(raw, annotation):
                return raw
            if not isinstance(raw, Mapping):
                raise InputError(f"expected named settings, got {brief(raw)}")
            return _check(annotation, raw, lax)
        return Rule(nested, json_schema(annotation))
    if annotation in _SCHEMAS:
        return Rule(functools.partial(_plain, annotation), _SCHEMAS[annotation])
    raise TypeError(f"no rule for a field of type {annotation!r}")


def json_schema(model: type) -> dict[str, Any]:
    """The model's JSON schema: each field's type and bounds, its default and help text (the
    jobs' command-line flags and form are made from it: :func:`bnviz.params.jobs.
    job_options`)."""
    properties, required = {}, []
    for field in validator(model).fields:
        prop = {**copy.deepcopy(field.rule.schema),  # the caller may change its copy
                "title": field.name.replace("_", " ").title()}
        if field.rule.description:
            prop["description"] = field.rule.description
        if field.default is dataclasses.MISSING and field.factory is dataclasses.MISSING:
            required.append(field.name)
        elif field.default is not dataclasses.MISSING:
            default = field.default
            prop["default"] = (list(default) if isinstance(default, tuple) else
                               dataclasses.asdict(default) if dataclasses.is_dataclass(default)
                               else default)
        properties[field.name] = prop
    return {"title": model.__name__, "type": "object", "properties": properties,
            **({"required": required} if required else {})}
