"""bnviz.service.guard: oversized bodies get 413 before they are read, callback requests that
are not Dash's get 400 with one line, and what Dash's client sends passes untouched."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnviz.service.guard import CallbackShape, RequestGuard

CALLBACK = "/_dash-update-component"
#: Two server-side outputs taking an input "mu.value" and a pattern-matching ALL input, and a
#: clientside one.
_TAKES = ((("mu", "value"), (None, "value")), ())
OUTPUTS = {"graph.figure": CallbackShape(*_TAKES),
           "..a.children...b.value..": CallbackShape(*_TAKES),
           "sink.children": CallbackShape(*_TAKES, clientside=True),
           "router.children": CallbackShape((("_pages_location", "pathname"),), ())}
_INPUTS = ('[{"id": "mu", "property": "value", "value": 0.5}, '
           '[{"id": {"type": "p", "index": 1}, "property": "value"}]]')


class _NoRead(io.RawIOBase):
    """A request body that must not be read."""

    def read(self, *args):  # noqa: D102
        raise AssertionError("the body was read")


def _app(seen: list):
    def app(environ, start_response):
        seen.append(environ["wsgi.input"].read())
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]
    return app


def _call(guard, path="/x", method="POST", body: bytes | None = b"", length: str | None = None,
          stream=None):
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path,
               "wsgi.input": stream if stream is not None else io.BytesIO(body or b"")}
    if length is not None:
        environ["CONTENT_LENGTH"] = length
    elif body is not None and stream is None:
        environ["CONTENT_LENGTH"] = str(len(body))
    status = []
    out = b"".join(guard(environ, lambda s, h: status.append(s)))
    return int(status[0].split()[0]), out


def _guard(seen=None, **caps):
    return RequestGuard(_app([] if seen is None else seen), CALLBACK, lambda: OUTPUTS, **caps)


def _valid(output="graph.figure") -> bytes:
    return json.dumps({"output": output, "outputs": {"id": "graph", "property": "figure"},
                       "inputs": [{"id": "mu", "property": "value", "value": 0.5},
                                  [{"id": {"type": "p", "index": 1}, "property": "value"}]],
                       "state": [], "changedPropIds": ["mu.value"]}).encode()


@pytest.mark.parametrize("path, cap", [("/x", 1000), (CALLBACK, 5000)])
def test_a_body_over_its_cap_is_refused_before_it_is_read(path, cap):
    guard = _guard(max_body=1000, max_callback_body=5000)
    status, out = _call(guard, path, length=str(cap + 1), stream=_NoRead())
    assert status == 413 and json.loads(out)["error"].startswith("the body is over")
    status, _ = _call(guard, path, length=str(10**12), stream=_NoRead())
    assert status == 413


def test_a_chunked_body_is_read_only_up_to_the_cap():
    guard = _guard(max_body=1000)
    stream = io.BytesIO(b"x" * 10_000)
    status, _ = _call(guard, "/x", stream=stream, length=None)
    assert status == 413 and stream.tell() == 1001  # never more than cap + 1
    seen: list = []
    status, _ = _call(_guard(seen, max_body=1000), "/x", stream=io.BytesIO(b"y" * 999))
    assert status == 200 and seen == [b"y" * 999]  # what was read is what the app reads


@pytest.mark.parametrize("length", ["abc", "-5", "1e3"])
def test_a_bad_content_length_is_a_400(length):
    status, out = _call(_guard(), "/x", length=length, stream=_NoRead())
    assert status == 400 and "Content-Length" in json.loads(out)["error"]


def test_a_valid_callback_request_passes_with_its_body():
    seen: list = []
    status, out = _call(_guard(seen), CALLBACK, body=_valid())
    assert (status, out) == (200, b"ok") and seen == [_valid()]
    status, _ = _call(_guard(), CALLBACK, body=_valid("..a.children...b.value.."))
    assert status == 200
    assert _call(_guard(), CALLBACK, method="GET", body=b"")[0] == 200  # not checked


@pytest.mark.parametrize("body, says", [
    (b"", "JSON"), (b"\xff\xfe", "JSON"), (b"{", "JSON"), (b"[1, 2]", "object"),
    (b"{}", "output"), (b'{"output": 3}', "output"),
    (b'{"output": "nope", "outputs": {}}', "no callback"),
    (b'{"output": "graph.figure"}', "outputs"),
    (b'{"output": "graph.figure", "outputs": {}, "inputs": {}}', "inputs"),
    (b'{"output": "graph.figure", "outputs": {}, "inputs": [1]}', "inputs"),
    (b'{"output": "graph.figure", "outputs": {}, "inputs": [{"id": "a"}]}', "inputs"),
    (f'{{"output": "graph.figure", "outputs": {{}}, "inputs": {_INPUTS}, '
     '"state": [{"property": "v"}]}'.encode(), "state"),
    (f'{{"output": "graph.figure", "outputs": {{}}, "inputs": {_INPUTS}, '
     '"changedPropIds": [1]}'.encode(), "changedPropIds"),
    # issue 30: deep JSON, a clientside output, too few or too many, or other dependencies
    (b"[" * 50_000 + b"]" * 50_000, "JSON"),
    (b'{"output": "x", "outputs": {}, "inputs": [], "deep": ' + b"[" * 50_000 + b"]" * 50_000
     + b"}", "JSON"),
    (b'{"output": "sink.children", "outputs": {}, "inputs": []}', "runs in the browser"),
    (b'{"output": "graph.figure", "outputs": {}, "inputs": []}', "takes 2, got 0"),
    (f'{{"output": "graph.figure", "outputs": {{}}, "inputs": {_INPUTS}, "state": '
     f'[{{"id": "mu", "property": "value"}}]}}'.encode(), "state: that callback takes 0"),
    (b'{"output": "graph.figure", "outputs": {}, "inputs": [{"id": "sigma", "property": '
     b'"value"}, []]}', "not the ids"),
    (b'{"output": "graph.figure", "outputs": {}, "inputs": [[{"id": "mu", "property": '
     b'"value"}], []]}', "not the ids"),  # a list where the callback takes one
    (b'{"output": "graph.figure", "outputs": {}, "inputs": [{"id": "mu", "property": '
     b'"value"}, [{"id": "p", "property": "value"}]]}', "not the ids"),  # not a pattern id
])
def test_malformed_callback_requests_get_one_line_400(body, says):
    seen: list = []
    status, out = _call(_guard(seen), CALLBACK, body=body)
    error = json.loads(out)["error"]
    assert status == 400 and says in error and "\n" not in error and not seen


JSONS = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                          max_size=4),
                     max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(body=st.one_of(JSONS.map(lambda v: json.dumps(v).encode()), st.binary(max_size=64)))
def test_any_body_is_passed_or_refused_never_raised(body):
    status, _ = _call(_guard(), CALLBACK, body=body)
    assert status in (200, 400)


def test_the_dashboard_answers_crafted_callback_requests_with_400_not_500():
    """The real app: Flask's test client posts what the guard refuses; a request of Dash's
    shape for a real output reaches Dash."""
    from bnviz.web import app as dashboard

    client = dashboard.server.test_client()
    outputs = [d["output"] for d in client.get("/_dash-dependencies").get_json()]
    for body in (b"x" * (3 << 20), b"nope", json.dumps({"inputs": []}).encode(),
                 json.dumps({"output": outputs[0], "outputs": {}, "inputs": [7]}).encode()):
        r = client.post(CALLBACK, data=body, content_type="application/json")
        assert r.status_code in (400, 413), (r.status_code, body[:40])
    assert client.post("/healthz", data=b"x" * 100_000).status_code == 413


def test_a_url_part_that_is_not_text_is_a_400():
    body = {"output": "router.children", "outputs": {}, "inputs": [
        {"id": "_pages_location", "property": "pathname", "value": False}]}
    for bad in (False, ["/jitter"], {"a": 1}):
        body["inputs"][-1]["value"] = bad
        status, out = _call(_guard(), CALLBACK, body=json.dumps(body).encode())
        assert status == 400 and "pathname" in json.loads(out)["error"]
    body["inputs"][-1]["value"] = "/jitter"
    assert _call(_guard(), CALLBACK, body=json.dumps(body).encode())[0] == 200


def test_outputs_that_do_not_match_the_callback_are_a_400():
    """A request's output spec that is not its callback's answers 400, not 500 (the guard
    checks it before Dash's dispatch indexes it; tests/service/test_callback_outputs.py for
    every callback); the first request to a fresh app already knows every callback
    (warm_up)."""
    from bnviz.web import app as dashboard

    client = dashboard.server.test_client()
    outputs = [d["output"] for d in client.get("/_dash-dependencies").get_json()]
    # the jobs form's callback: a pattern-matching ALL output (and the explanation)
    pattern = next(o for o in outputs if "jobs-param-row" in o)
    body = {"output": pattern, "outputs": [{"id": "not-it", "property": "style"},
                                           {"id": "jobs-explain", "property": "children"}],
            "inputs": [{"id": "jobs-type", "property": "value", "value": None}],
            "changedPropIds": []}
    r = client.post(CALLBACK, data=json.dumps(body), content_type="application/json")
    assert r.status_code == 400 and r.get_json()["error"].startswith("outputs:")
    assert set(outputs) <= set(dashboard.app.callback_map)


@pytest.mark.parametrize("method", ["TRACE", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT",
                                    "PROPFIND", "BREW\x01"])
def test_other_methods_get_a_json_405_with_the_security_headers(method):
    """Every method but GET, HEAD and POST, on the dashboard's own paths (issue 42: TRACE got
    an HTML 405 without the security headers)."""
    from bnviz.web import app as dashboard

    client = dashboard.server.test_client()
    for path in ("/", "/lecture", "/_dash-update-component", "/healthz", "/assets/x.js"):
        r = client.open(path, method=method)
        assert r.status_code == 405, (path, method, r.status_code)
        assert r.headers["Allow"] == "GET, HEAD, POST"
        assert r.headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        error = r.get_json()["error"]
        assert "GET, HEAD or POST" in error and error.isprintable()


def test_the_jobs_api_keeps_its_own_methods():
    """The jobs API answers DELETE (cancel) and OPTIONS itself, in JSON: not the guard's 405."""
    from bnviz.web import app as dashboard

    client = dashboard.server.test_client()
    assert client.open("/api/jobs", method="OPTIONS").status_code == 204
    r = client.open("/api/jobs", method="PUT")
    assert r.status_code == 405 and "OPTIONS" in r.headers["Allow"]
