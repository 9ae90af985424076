"""Every callback, posted with ``outputs`` that are not its own (issue 42): a one-item list
for a multi-output callback reached Dash's grouping code and raised IndexError, a 500. The
request guard checks the count, the ids, the properties and the shape against the callback
map first: a 400 with a JSON error, and never a 5xx.

Each request goes through the whole WSGI stack (guard, Flask, Dash) with the callback's own
inputs and states, so only the outputs are wrong. No job is started: jobs go to a temporary
store and no worker runs.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pagefuzz import end_open_jobs

from bnviz.web import app as dashboard

CALLBACK = "/_dash-update-component"
DEPENDENCIES = dashboard.server.test_client().get("/_dash-dependencies").get_json()
SERVER_SIDE = [d for d in DEPENDENCIES if not d.get("clientside_function")]


def _declared(dep: dict) -> list[dict]:
    """The callback's outputs as Dash's client sends them: a wildcard of a pattern id made
    concrete (an ALL output as a list of one)."""
    outs = dep["output"].strip(".").split("...") if dep["output"].startswith("..") \
        else [dep["output"]]
    items = []
    for out in outs:
        component, prop = out.rsplit(".", 1)
        if component.startswith("{"):
            pattern = json.loads(component)
            one = {"id": {k: ("x" if isinstance(v, list) else v) for k, v in pattern.items()},
                   "property": prop}
            items.append([one] if '["ALL"]' in component else one)
        else:
            items.append({"id": component, "property": prop})
    return items


def _body(dep: dict, outputs) -> bytes:
    def item(d: dict) -> dict | list:
        one = {"id": d["id"], "property": d["property"], "value": None}
        if d["id"].startswith("{"):
            spec = json.loads(d["id"])
            one["id"] = {k: ("x" if isinstance(v, list) else v) for k, v in spec.items()}
            if "ALL" in d["id"]:
                return [one]
        return one

    return json.dumps({"output": dep["output"], "outputs": outputs,
                       "inputs": [item(d) for d in dep["inputs"]],
                       "state": [item(d) for d in dep["state"]],
                       "changedPropIds": []}).encode()


def _mismatches(dep: dict) -> list:
    """Outputs of every wrong kind for this callback."""
    declared = _declared(dep)
    multi = dep["output"].startswith("..")
    first = declared[0][0] if isinstance(declared[0], list) else declared[0]
    renamed = {**first, "id": "no-such-component"} if isinstance(first["id"], str) else \
        {**first, "id": {**first["id"], "type": "no-such-type"}}
    wrong = [
        [],                                   # nothing
        {},                                   # an empty item
        [first] * (len(declared) + 1),        # one too many
        [renamed, *declared[1:]],             # another component
        [{**first, "property": "no-such-property"}, *declared[1:]],
        [7, *declared[1:]],                   # not an item
        [{"id": first["id"]}, *declared[1:]],  # no property
        [{"id": [1], "property": first["property"]}, *declared[1:]],
    ]
    if multi:
        wrong += [declared[0], declared[:-1], [declared]]  # one item; one short; nested
    else:
        wrong += [declared, [declared[0], declared[0]]]    # a list for a single output
    return [w for w in wrong if w != (declared if multi else declared[0])]


@pytest.fixture
def quiet_jobs(jobs_home, monkeypatch):
    """Jobs are stored in a temporary home and never run."""
    from bnviz import jobs

    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    yield
    end_open_jobs()


@pytest.mark.parametrize("dep", SERVER_SIDE, ids=lambda d: d["output"][:60])
def test_outputs_not_the_callbacks_are_a_400_for_every_callback(dep, quiet_jobs):
    client = dashboard.server.test_client()
    for outputs in _mismatches(dep):
        r = client.post(CALLBACK, data=_body(dep, outputs), content_type="application/json")
        assert r.status_code == 400, (outputs, r.status_code, r.data[:200])
        assert "outputs" in r.get_json()["error"] or "callback" in r.get_json()["error"]


@pytest.mark.parametrize("dep", SERVER_SIDE, ids=lambda d: d["output"][:60])
def test_the_callbacks_own_outputs_pass_the_check(dep, quiet_jobs):
    """The declared outputs are not refused for their shape (a check that refused everything
    would pass the test above): whatever Dash then answers, the guard's outputs line is not
    it, and nothing is a 5xx."""
    declared = _declared(dep)
    outputs = declared if dep["output"].startswith("..") else declared[0]
    r = dashboard.server.test_client().post(CALLBACK, data=_body(dep, outputs),
                                            content_type="application/json")
    assert r.status_code < 500, r.data[:200]
    if r.status_code == 400:
        assert not r.get_json()["error"].startswith("outputs:"), r.get_json()


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.sampled_from(["id", "property", "type", "x"]),
                                         inner, max_size=3), max_leaves=12)


@pytest.mark.slow
@pytest.mark.parametrize("dep", [d for d in SERVER_SIDE if d["output"].startswith("..")][:8],
                         ids=lambda d: d["output"][:60])
def test_any_outputs_value_gets_no_5xx(dep, quiet_jobs):
    client = dashboard.server.test_client()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(outputs=JSONISH)
    def check(outputs):
        r = client.post(CALLBACK, data=_body(dep, outputs), content_type="application/json")
        assert r.status_code < 500, (outputs, r.data[:200])

    check()
