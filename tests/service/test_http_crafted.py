"""Crafted callback requests for EVERY output that ``/_dash-dependencies`` lists, the
clientside ones and the pages router included (issue 30): missing, short and long
``inputs``/``state``, JSON nested thousands deep, the router's URL parts wrapped in lists.
Posted through the whole WSGI stack (request guard, Flask, Dash); none may get a 5xx, and a
refusal is JSON with one line."""

from __future__ import annotations

import json

import pytest

from bnviz.web import app as dashboard

CALLBACK = "/_dash-update-component"
DEPENDENCIES = dashboard.server.test_client().get("/_dash-dependencies").get_json()


def _id(raw: str) -> str | dict:
    if not raw.startswith("{"):
        return raw
    return {k: ("x" if isinstance(v, list) else v) for k, v in json.loads(raw).items()}


def _item(d: dict, value=None) -> dict:
    return {"id": _id(d["id"]), "property": d["property"], "value": value}


def _body(dep: dict, inputs=None, state=None) -> dict:
    outs = dep["output"].strip(".").split("...") if dep["output"].startswith("..") \
        else [dep["output"]]
    outputs = [{"id": o.split("@")[0].rsplit(".", 1)[0],
                "property": o.split("@")[0].rsplit(".", 1)[1]} for o in outs]
    return {"output": dep["output"], "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": [_item(d) for d in dep["inputs"]] if inputs is None else inputs,
            "state": [_item(d) for d in dep["state"]] if state is None else state,
            "changedPropIds": []}


def _variants(dep: dict) -> dict[str, str]:
    full = [_item(d) for d in dep["inputs"]]
    state = [_item(d) for d in dep["state"]]
    deep = "[" * 100_000 + "]" * 100_000
    out = {
        "no inputs": _body(dep, inputs=[]),
        "short inputs": _body(dep, inputs=full[:-1]),
        "long inputs": _body(dep, inputs=[*full, full[0]] if full else [{"id": "x",
                                                                           "property": "y"}]),
        "short state": _body(dep, state=state[:-1]) if state else _body(dep, state=[
            {"id": "x", "property": "y"}]),
        "wrong ids": _body(dep, inputs=[{"id": "nope", "property": "nope", "value": 1}
                                        for _ in full]),
        "url parts in lists": _body(dep, inputs=[
            dict(i, value=[i["value"] or "/"]) if i["property"] in ("pathname", "search",
                                                                      "hash", "href")
            else i for i in full]),
        "items wrapped in lists": _body(dep, inputs=[[i] for i in full]),
    }
    bodies = {k: json.dumps(v) for k, v in out.items()}
    bodies["deep value"] = json.dumps(_body(dep))[:-1] + f', "extra": {deep}}}'
    bodies["deep body"] = deep
    return bodies


@pytest.mark.parametrize("dep", DEPENDENCIES, ids=lambda d: d["output"][:60])
def test_no_crafted_request_to_any_output_gets_a_5xx(dep):
    client = dashboard.server.test_client()
    for name, body in _variants(dep).items():
        r = client.post(CALLBACK, data=body, content_type="application/json")
        assert r.status_code < 500, (name, r.status_code, body[:300])
        if r.status_code >= 400:
            error = r.get_json()["error"]
            assert error and "\n" not in error and "Traceback" not in error, (name, error)


def test_clientside_outputs_are_refused_as_such():
    clientside = [d for d in DEPENDENCIES if d.get("clientside_function")]
    assert clientside, "the app has clientside callbacks"
    r = dashboard.server.test_client().post(CALLBACK, data=json.dumps(_body(clientside[0])),
                                            content_type="application/json")
    assert r.status_code == 400 and "runs in the browser" in r.get_json()["error"]
