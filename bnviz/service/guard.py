"""Refuse what a request would cost before its body is read: a WSGI middleware in front of
the dashboard.

* A body over its cap gets ``413`` before one byte of it is read: the cap is
  ``max_callback_body`` for the Dash callback route (uploads travel inside callback requests
  as base64, so it is the upload limit plus room for the JSON around it) and for the routes
  named in ``state_paths`` (the live training's frames, which carry the trainers' state the
  browser keeps), and ``max_body`` for every other route. A body without
  ``Content-Length`` (chunked) is read up to the cap and refused past it; it is never
  buffered whole.
* A callback request that is not what Dash's client sends (not JSON, JSON nested too deep to
  parse, not an object, an ``output`` that is no registered callback or whose callback runs
  in the browser, ``outputs`` that are not its callback's (their count, ids and properties,
  and their shape: a list for a multi-output callback, one item for a single output, a list
  only where a pattern's ``ALL`` allows it), ``inputs``/``state`` not lists of
  ``{"id", "property"}`` items or not as many as the callback declares, a URL part of
  dcc.Location that is not text) gets ``400`` with a one-line reason, instead of an exception
  (a 500) deep inside Dash's dispatch: a one-item list for a two-output callback reached
  Dash's grouping code and raised IndexError (issue 42).
* A method other than GET, HEAD and POST gets a JSON ``405`` (``Allow: GET, HEAD, POST``),
  before any route sees it, except under the ``api_prefix`` (the jobs API answers DELETE and
  OPTIONS itself, and its own 405s, in JSON).

Answers are JSON ``{"error": "..."}``. Nothing here imports Dash or Flask: the app passes the
route and a function that describes the registered outputs (:class:`CallbackShape`).
:func:`strict_json` is bnviz's one reader of JSON from outside (the jobs API, the live
training's frames and the slice page's uploaded networks use it too).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from bnviz.service.headers import NGINX_ERROR_HEADERS

__all__ = ["ALLOWED_METHODS", "CallbackShape", "OutputSpec", "RequestGuard",
           "check_callback_request", "strict_json"]

#: The body of anything but a callback: the pages send none larger than a few kB.
DEFAULT_MAX_BODY = 64 * 1024
#: A callback's body: a 1 MB upload as base64 (4/3) plus the JSON around it.
DEFAULT_MAX_CALLBACK_BODY = 2 * 1024 * 1024


class BadRequest(ValueError):
    """A request the server refuses: status and a one-line reason."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


#: The methods the dashboard answers; any other is a 405 before it reaches a route.
ALLOWED_METHODS = ("GET", "HEAD", "POST")
#: The pattern-matching wildcards, as a declared output's id names them.
WILDCARDS = frozenset({"MATCH", "ALL", "ALLSMALLER"})


class OutputSpec(NamedTuple):
    """One declared output: its component id (a string, or a pattern-matching id as a dict
    whose wildcard values are "MATCH" or "ALL") and its property."""

    component: str | Mapping[str, Any]
    prop: str


class CallbackShape(NamedTuple):
    """What a registered output's callback takes: its inputs and states, each as (the
    component id, or None for a pattern-matching id; the property), whether it runs in
    the browser (a clientside callback, which the server cannot answer), its declared
    outputs (None: not checked) and whether they are a list (a multi-output callback: Dash's
    client then sends ``outputs`` as a list, else as one item)."""

    inputs: tuple[tuple[str | None, str], ...]
    state: tuple[tuple[str | None, str], ...]
    clientside: bool = False
    outputs: tuple[OutputSpec, ...] | None = None
    multi: bool = False


def _refuse_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(raw: bytes | str) -> Any:
    """JSON from outside (a request's body, an uploaded file's metadata): ValueError for
    anything else, NaN and Infinity included (a client's numbers are finite), and for nesting
    too deep to parse (a RecursionError, which no caller's ``except ValueError`` would catch:
    the 500 of issue 30).  bnviz's one reader of JSON it did not write itself
    (tests/test_architecture.py checks that nothing else calls ``json.loads``)."""
    try:
        return json.loads(raw, parse_constant=_refuse_json_constant)
    except (ValueError, RecursionError) as exc:  # also UnicodeDecodeError, too many digits
        raise ValueError("not valid JSON") from exc


#: dcc.Location's properties: text or nothing (Dash's page router reads them as strings).
LOCATION_PROPERTIES = frozenset({"pathname", "search", "hash", "href"})


def _flat(items: list) -> list[dict]:
    return [x for item in items for x in (_flat(item) if isinstance(item, list) else [item])]


def _is_dependency(item: Any) -> bool:
    """One input/state entry as Dash's client sends it: {"id", "property", "value"?}, or a
    list of them (a pattern-matching ALL/ALLSMALLER)."""
    if isinstance(item, list):
        return all(_is_dependency(x) for x in item)
    return (isinstance(item, dict) and isinstance(item.get("property"), str)
            and isinstance(item.get("id"), str | dict))


def _output_matches(item: Any, spec: OutputSpec) -> bool:
    """One ``outputs`` entry as Dash's client sends it for ``spec``: {"id", "property"}, the
    property perhaps with Dash's ``@hash`` of a duplicate output."""
    if not (isinstance(item, dict) and isinstance(item.get("property"), str)):
        return False
    if item["property"].split("@", 1)[0] != spec.prop:
        return False
    given, declared = item.get("id"), spec.component
    if isinstance(declared, str):
        return given == declared
    return (isinstance(given, dict) and set(given) == set(declared)
            and all(isinstance(given[k], str | int | float | bool)
                    and (declared[k] in WILDCARDS or given[k] == declared[k])
                    for k in declared))


def _check_outputs(given: Any, shape: CallbackShape) -> None:
    """``outputs`` against the callback's declaration: what Dash's dispatch indexes by the
    declared outputs before its own check (``validate_output_spec``) runs."""
    if shape.outputs is None or not shape.outputs:  # unchecked, or a no-output callback
        return
    declared = shape.outputs
    if shape.multi:
        if not isinstance(given, list) or len(given) != len(declared):
            raise BadRequest(400, f"outputs: that callback has {len(declared)}, as a list")
        items = given
    else:
        items = [given]
    for item, spec in zip(items, declared, strict=True):
        many = isinstance(item, list)  # a pattern's ALL: any number of matching items
        listed = isinstance(spec.component, str) or "ALL" not in spec.component.values()
        if (many and listed) or not all(_output_matches(x, spec)
                                        for x in (item if many else [item])):
            raise BadRequest(400, "outputs: not the ids and properties of that callback")


def check_callback_request(body: Any, outputs: Mapping[str, CallbackShape]) -> None:
    """Raise BadRequest (400) unless ``body`` has the shape of a Dash callback request for a
    registered server-side output, with as many inputs and states as its callback takes."""
    if not isinstance(body, dict):
        raise BadRequest(400, "a callback request is a JSON object")
    output = body.get("output")
    if not isinstance(output, str):
        raise BadRequest(400, "a callback request names its output (a string)")
    shape = outputs.get(output)
    if shape is None:
        raise BadRequest(400, "no callback has that output")
    if shape.clientside:
        raise BadRequest(400, "that output's callback runs in the browser, not here")
    if not isinstance(body.get("outputs"), dict | list):
        raise BadRequest(400, "a callback request lists its outputs")
    _check_outputs(body["outputs"], shape)
    for key in ("inputs", "state"):
        value = body.get(key, [])
        if not isinstance(value, list) or not all(_is_dependency(v) for v in value):
            raise BadRequest(400, f"{key}: a list of {{id, property, value}} items")
        expected = shape.inputs if key == "inputs" else shape.state
        if len(value) != len(expected):
            raise BadRequest(400, f"{key}: that callback takes {len(expected)}, got "
                                  f"{len(value)}")
        for item, (component, prop) in zip(value, expected, strict=True):
            # Dash's callbacks (its page router too) read their arguments by position
            given = item if isinstance(item, list) else [item]
            listed = isinstance(item, list) and component is not None  # only ALL may list
            if listed or any(x["property"] != prop or (
                    x["id"] != component if component is not None
                    else not isinstance(x["id"], dict)) for x in given):
                raise BadRequest(400, f"{key}: not the ids and properties of that callback")
        for item in _flat(value):
            if item["property"] in LOCATION_PROPERTIES and \
                    not isinstance(item.get("value"), str | None):
                raise BadRequest(400, f"{item['property']}: a URL part is text")
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        raise BadRequest(400, "changedPropIds: a list of strings")


class RequestGuard:
    """WSGI middleware (see the module docstring)."""

    def __init__(self, app: Callable, callback_path: str,
                 known_outputs: Callable[[], Mapping[str, CallbackShape]],
                 max_body: int = DEFAULT_MAX_BODY,
                 max_callback_body: int = DEFAULT_MAX_CALLBACK_BODY,
                 state_paths: Iterable[str] = (), api_prefix: str | None = None):
        self.app, self.callback_path, self.known_outputs = app, callback_path, known_outputs
        self.api_prefix = api_prefix
        self.max_body, self.max_callback_body = max_body, max_callback_body
        self.state_paths = frozenset(state_paths)

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        try:
            self._check(environ)
        except BadRequest as exc:
            payload = json.dumps({"error": str(exc)}).encode()
            reason = {400: "Bad Request", 405: "Method Not Allowed", 411: "Length Required",
                      413: "Content Too Large"}.get(exc.status, "Error")
            allow = [("Allow", ", ".join(ALLOWED_METHODS))] if exc.status == 405 else []
            start_response(f"{exc.status} {reason}", [
                ("Content-Type", "application/json"), ("Content-Length", str(len(payload))),
                ("Connection", "close"), *allow, *NGINX_ERROR_HEADERS.items()])
            return [payload]
        return self.app(environ, start_response)

    def _check(self, environ: dict) -> None:
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "")
        api = self.api_prefix is not None and (path == self.api_prefix or
                                               path.startswith(self.api_prefix + "/"))
        if method not in ALLOWED_METHODS and not api:
            raise BadRequest(405, f"{_printable(method)} is not answered here: GET, HEAD or "
                                  "POST")
        if method in ("GET", "HEAD", "OPTIONS"):
            return
        callback = path == self.callback_path
        cap = self.max_callback_body if callback or path in self.state_paths else self.max_body
        raw_length = environ.get("CONTENT_LENGTH") or ""
        if raw_length:
            try:
                length = int(raw_length)
            except ValueError:
                raise BadRequest(400, "Content-Length is not a number") from None
            if length < 0:
                raise BadRequest(400, "Content-Length is negative")
            if length > cap:
                raise BadRequest(413, f"the body is over {cap // 1024} kB")
            body = environ["wsgi.input"].read(length) if callback else None
        else:  # chunked or unknown length: read at most the cap (+1 to see it is over)
            stream = environ["wsgi.input"]
            body = stream.read(cap + 1) if hasattr(stream, "read") else b""
            if len(body) > cap:
                raise BadRequest(413, f"the body is over {cap // 1024} kB")
            environ["CONTENT_LENGTH"] = str(len(body))
        if body is not None:
            environ["wsgi.input"] = io.BytesIO(body)  # what we read, for the app to read
        if callback:
            try:
                parsed = strict_json(body or b"")
            except ValueError:
                raise BadRequest(400, "a callback request is JSON") from None
            check_callback_request(parsed, self.known_outputs())


def _printable(text: str) -> str:
    """A client's token for a one-line message: short, and nothing but printable ASCII."""
    return "".join(c if c.isascii() and c.isprintable() else "?" for c in text[:20])
