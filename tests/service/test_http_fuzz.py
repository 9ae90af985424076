"""HTTP-level fuzzing of every callback (issue 15): requests of Dash's shape for each callback
that ``/_dash-dependencies`` lists, with hypothesis values (junk, boundaries, containers, and
text that JSON carries as NaN or huge integers) in every input and state, posted through the
whole WSGI stack (request guard, Flask, Dash, the callback). Nothing a client sends may give
a 5xx: a bad value is the page's one-line message (200), or 204/400 where Dash refuses it.

No background work starts: jobs go to a temporary store and no worker is started.
"""

from __future__ import annotations

import json

import pytest
from fuzzing import EXAMPLES, JUNK
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pagefuzz import end_open_jobs

from bnviz.web import app as dashboard

CALLBACK = "/_dash-update-component"
DEPENDENCIES = dashboard.server.test_client().get("/_dash-dependencies").get_json()
#: Server-side callbacks only (clientside ones never reach the server).
SERVER_SIDE = [d for d in DEPENDENCIES if not d.get("clientside_function")]

VALUES = st.one_of(JUNK, st.text(max_size=30), st.integers(-10**20, 10**20),
                   st.just(10**400), st.floats(allow_nan=True, allow_infinity=True))
#: What a pattern-matching wildcard stands for in a request: one concrete key.
WILDCARD_KEYS = st.sampled_from(["smart-init", "dataset", "x", "0" * 12])


def _concrete_id(raw: str, draw) -> str | dict:
    """A dependency's id as the client sends it: a string, or a dict id with each wildcard
    replaced by a drawn key."""
    if not raw.startswith("{"):
        return raw
    spec = json.loads(raw)
    return {k: (draw(WILDCARD_KEYS) if isinstance(v, list) else v) for k, v in spec.items()}


@st.composite
def requests(draw, dep: dict) -> dict:
    def item(d: dict) -> dict | list:
        one = {"id": _concrete_id(d["id"], draw), "property": d["property"],
               "value": draw(VALUES)}
        if d["id"].startswith("{") and "ALL" in d["id"]:
            return draw(st.lists(st.just(one), max_size=3))
        return one

    inputs = [item(d) for d in dep["inputs"]]
    state = [item(d) for d in dep["state"]]
    outs = dep["output"].strip(".").split("...") if dep["output"].startswith("..") \
        else [dep["output"]]
    outputs = [{"id": o.split("@")[0].rsplit(".", 1)[0],
                "property": o.split("@")[0].rsplit(".", 1)[1]} for o in outs]
    names = [f"{d['id']}.{d['property']}" for d in dep["inputs"]]
    changed = draw(st.lists(st.sampled_from(names), max_size=len(names), unique=True)) \
        if names else []
    return {"output": dep["output"], "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": inputs, "state": state, "changedPropIds": changed}


@pytest.fixture
def quiet_jobs(jobs_home, monkeypatch):
    """Jobs are stored in a temporary home and never run."""
    from bnviz import jobs

    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    yield
    end_open_jobs()


@pytest.mark.slow
@pytest.mark.parametrize("dep", SERVER_SIDE, ids=lambda d: d["output"][:60])
def test_no_crafted_callback_request_gets_a_5xx(dep, quiet_jobs):
    client = dashboard.server.test_client()

    @settings(max_examples=EXAMPLES, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(body=requests(dep))
    def check(body):
        r = client.post(CALLBACK, data=json.dumps(body, default=str),
                        content_type="application/json")
        assert r.status_code < 500, (r.status_code, json.dumps(body, default=str)[:600])

    check()


def _frame_bodies():
    """Bodies of the live training's frame route: the player's fields with drawn values,
    controls with junk among good ones, and states of any shape (some from a real frame with
    one leaf replaced)."""
    from bnviz.params import PartitionParams
    from bnviz.web.callbacks.explorer.state import control_values
    from bnviz.web.callbacks.explorer.training import frame_answer

    controls = control_values(PartitionParams(depth=2, width=4, n_points=40))
    good = {"controls": controls, "lr": 0.05, "batch": 8, "optimizer": "adam", "steps": 2,
            "state": None}
    real = {side: frame_answer(dict(good, side=side))[1]["state"] for side in (False, True)}
    leaves = [(*where, mode, leaf) for where in [("states",)] for mode in
              ("bn", "zero_bias", "random_bias") for leaf in ("params", "opt", "steps")]
    leaves += [("ghosts", "bn"), ("ghosts", "random_bias"), ("key",), ("states",)]

    @st.composite
    def state(draw):
        if draw(st.booleans()):
            return draw(st.one_of(st.none(), VALUES, st.dictionaries(st.text(max_size=8),
                                                                      VALUES, max_size=3)))
        side = draw(st.booleans())
        out = json.loads(json.dumps(real[side]))
        path = draw(st.sampled_from([p for p in leaves if side or "bn" in p or
                                     p[0] not in ("states", "ghosts")]))
        holder = out
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = draw(VALUES)
        return out

    @st.composite
    def body(draw):
        out = dict(good, state=draw(state()))
        states = out["state"].get("states") if isinstance(out["state"], dict) else None
        out["side"] = isinstance(states, dict) and "zero_bias" in states  # a side-by-side run
        for key in draw(st.lists(st.sampled_from([*good, "side", "reset", "projector",
                                                  "extra"]), max_size=3, unique=True)):
            out[key] = draw(VALUES)
        names = draw(st.lists(st.sampled_from(sorted(controls)), max_size=2, unique=True))
        if names and isinstance(out["controls"], dict):
            out["controls"] = dict(out["controls"], **{name: draw(VALUES) for name in names})
        return out

    return body()


@pytest.mark.slow
def test_no_crafted_training_frame_gets_a_5xx():
    """POST /api/training/frame through the whole WSGI stack: 200 with a frame, or a 400/422
    with one line; never a 5xx (issue 19)."""
    from bnviz.web.callbacks.explorer.training import ROUTE

    client = dashboard.server.test_client()

    @settings(max_examples=EXAMPLES, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(body=_frame_bodies())
    def check(body):
        r = client.post(ROUTE, data=json.dumps(body, default=str),
                        content_type="application/json")
        assert r.status_code in (200, 400, 422), (r.status_code, json.dumps(
            body, default=str)[:600])
        answer = r.get_json()
        if r.status_code == 200:
            assert "figure" in answer and "state" in answer
        else:
            assert answer["error"] and "\n" not in answer["error"]

    check()
