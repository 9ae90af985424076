"""The explorer's "Watch it learn" tab (issue 19, items 1-2): its frame route answering
requests over HTTP (Flask's test client, the player's requests and crafted ones), the replay
callback, and the real page in headless Chromium at a projector's size.

A frame is exact: its region counts equal a fresh partition of the trainer's network, and a
run continued frame by frame from the states the browser keeps equals one run of the same
steps in one go (so any web process can serve the next frame).  Changing the network
restarts the run, reset restarts it, the side-by-side switch trains BN, zero and random bias
together, the curve points of each answer extend the curves into the figure the whole
history draws, a bad request is a one-line 400 (never a 5xx), the step cap stops the run,
and replaying a recorded frame draws that frame again.
"""

from __future__ import annotations

import base64
import json
import time

import numpy as np
import pytest
from dash.testing.wait import until
from selenium.webdriver.common.by import By

from bnviz.core.network import layer_statistics
from bnviz.core.partition import box_from_extent, compute_partition
from bnviz.data.datasets import make_dataset
from bnviz.params import PartitionParams
from bnviz.views.trainer import new_trainer
from bnviz.web.app import app
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer import training as ct
from bnviz.web.callbacks.explorer.state import control_values
from bnviz.web.callbacks.explorer.training_figures import curves_figure

SETTINGS = PartitionParams(depth=3, width=6, n_points=80, dataset="circles", data_seed=2,
                          weight_seed=5)
TRAINING = {"lr": 0.05, "batch": 16, "optimizer": "adam", "steps": 4}


def _post(body, raw: bytes | None = None):
    client = app.server.test_client()
    response = client.post(ct.ROUTE, data=json.dumps(body) if raw is None else raw,
                           content_type="application/json")
    return response.status_code, response.get_json()


def _frame(state, controls=None, side=False, reset=False, **training):
    body = {"controls": control_values(SETTINGS) if controls is None else controls,
            **TRAINING, **training, "side": side, "reset": reset, "state": state}
    return _post(body)


def _run(frames: int, side=False):
    answers, state = [], None
    for _ in range(frames):
        status, answer = _frame(state, side=side)
        assert status == 200, answer
        answers.append(answer)
        state = answer["state"]
    return answers


def test_frames_continue_where_the_browser_left_them():
    answers = _run(4)
    assert [a["counter"].split(" ·")[0] for a in answers] == [
        "step 0", "step 4", "step 8", "step 12"]
    assert [a["fresh"] for a in answers] == [True, False, False, False]
    assert [a["entry"]["step"] for a in answers] == [0, 4, 8, 12]
    # the same 12 steps in one go, on a trainer of the same settings
    data = make_dataset("circles", 80, 2)
    trainer = new_trainer(3, 6, "leaky_relu", 0.1, "bn", 5, data.points, data.labels, 16,
                          0.05, "adam", box_from_extent(3.0))
    trainer.step(12)
    again = new_trainer(3, 6, "leaky_relu", 0.1, "bn", 5, data.points, data.labels, 16, 0.05,
                        "adam", box_from_extent(3.0))
    again.restore(answers[-1]["state"]["states"]["bn"])
    for w, v in zip(again.network().weights, trainer.network().weights, strict=True):
        np.testing.assert_array_equal(w, v)
    # the frame is exact: its counts are a fresh partition of that network
    net = trainer.network()
    part = compute_partition(net, data.points, box_from_extent(3.0),
                             stats=layer_statistics(net, data.points), device="cpu")
    regions = [len(lay.regions) for lay in part.layers]
    assert answers[-1]["entry"]["regions"]["bn"] == regions
    title = answers[-1]["figure"]["layout"]["annotations"][0]["text"]
    assert f"{regions[-1]} regions" in title
    # every trace is WebGL, the previous frame's boundary is drawn from the second frame on
    traces = answers[-1]["figure"]["data"]
    assert {t["type"] for t in traces} == {"scattergl"}
    assert len(traces) == len(answers[0]["figure"]["data"]) + 1


def test_changing_the_network_or_reset_restarts():
    state = _run(2)[-1]["state"]
    status, answer = _frame(state, controls=control_values(SETTINGS) | {"width": 5})
    assert status == 200 and answer["fresh"] and answer["counter"].startswith("step 0")
    status, answer = _frame(state, reset=True)
    assert status == 200 and answer["fresh"] and answer["counter"].startswith("step 0")
    status, answer = _frame(state, steps=7)  # steps per frame do not restart it
    assert status == 200 and not answer["fresh"] and answer["entry"]["step"] == 11


def test_side_by_side_trains_three_modes_on_the_same_batches():
    answers = _run(2, side=True)
    states = answers[-1]["state"]["states"]
    assert set(states) == {"bn", "zero_bias", "random_bias"}
    assert len(answers[-1]["figure"]["layout"]["annotations"]) == 3
    assert all(s["steps"] == 4 for s in states.values())
    # the same initial weights: W1 of the three differ only by their training
    first = answers[0]["state"]["states"]
    assert first["bn"]["params"][0] == first["zero_bias"]["params"][0]


@pytest.mark.parametrize("side", [False, True])
def test_the_points_extend_the_curves_into_the_whole_historys_figure(side):
    """The player extends the first answer's curves with each answer's points; that must be
    the figure the whole history draws (traces ordered panel by panel, mode by mode)."""
    answers = _run(4, side=side)
    curves = answers[0]["curves"]
    for answer in answers[1:]:
        assert "curves" not in answer
        for trace, x, y in answer["points"]:
            curves["data"][trace]["x"].append(x)
            curves["data"][trace]["y"].append(y)
    modes = tuple(answers[0]["entry"]["modes"])
    whole = curves_figure(modes, [a["entry"] for a in answers])
    assert [t["x"] for t in curves["data"]] == [t["x"] for t in whole["data"]]
    assert [t["y"] for t in curves["data"]] == [t["y"] for t in whole["data"]]
    assert len(whole["data"]) == 3 * len(modes)


@pytest.mark.parametrize("training,words", [
    ({"lr": 0.0}, "learning rate"),
    ({"batch": 1}, "training batch"),
    ({"optimizer": "rmsprop"}, "optimiser"),
    ({"steps": None}, "steps per frame"),
    ({"steps": 10 ** 9}, "steps per frame"),
    ({"steps": 201}, "steps per frame"),  # the cap of one request, not of a run
    ({"steps": True}, "steps per frame"),
])
def test_bad_controls_are_a_one_line_400(training, words):
    status, answer = _frame(None, **training)
    assert status == 400 and words in answer["error"] and "\n" not in answer["error"]


@pytest.mark.parametrize("body,words", [
    ([1, 2], "JSON object"),
    ({"controls": [], "state": None}, "controls"),
    ({"controls": {"depth": 3, "bogus": 1}}, "controls"),
    ({"controls": {}, "side": "yes"}, "side"),
    ({"controls": {}, "reset": 1}, "reset"),
    ({"controls": {}, "state": "abc"}, "state"),
    ({"controls": {}, "evil": 1}, "unknown field"),
    ({"controls": {"sigma_s": "x"}, "steps": 5}, "σ"),
])
def test_a_request_not_the_players_is_a_400(body, words):
    status, answer = _post(body)
    assert status == 400 and words in answer["error"], answer


def test_steps_that_differ_between_modes_are_refused():
    state = _run(2, side=True)[-1]["state"]
    state["states"]["random_bias"]["steps"] = 10 ** 6  # past the cap, in one mode only
    status, answer = _frame(state, side=True)
    assert status == 400 and "state" in answer["error"]


@pytest.mark.parametrize("broken", [
    lambda s: s["states"]["bn"]["params"].__setitem__(0, "not base64!"),
    lambda s: s["states"]["bn"]["params"].__setitem__(0, "AAAA"),
    lambda s: s["states"]["bn"]["params"].__setitem__(0, None),
    lambda s: s["states"]["bn"].__setitem__("params", 5),
    lambda s: s["states"]["bn"].pop("opt"),
    lambda s: s["states"]["bn"].__setitem__("opt", [{"exp_avg": []}]),
    lambda s: s["states"]["bn"].__setitem__("steps", "many"),
    lambda s: s["states"]["bn"].__setitem__("steps", -8),
    lambda s: s["states"]["bn"].__setitem__("steps", True),
    lambda s: s.__setitem__("states", []),
    lambda s: s["states"].__setitem__("zero_bias", s["states"]["bn"]),  # a mode of no run
    lambda s: s["states"].pop("bn"),  # a mode missing

    lambda s: s.__setitem__("states", {"bn": 3}),
    # issue 30: Adam's step count (its bias correction divides by 1 - beta^step) and its
    # second moment (under a square root) from a browser
    lambda s: [o.__setitem__("step", -1) for o in s["states"]["bn"]["opt"]],
    lambda s: [o.__setitem__("step", 0) for o in s["states"]["bn"]["opt"]],
    lambda s: [o.__setitem__("step", 1e308) for o in s["states"]["bn"]["opt"]],
    lambda s: [o.__setitem__("step", "2") for o in s["states"]["bn"]["opt"]],
    lambda s: s["states"]["bn"]["opt"][0].__setitem__("exp_avg_sq", base64.b64encode(
        np.full(len(base64.b64decode(s["states"]["bn"]["opt"][0]["exp_avg_sq"])) // 8, -1.0,
                "<f8").tobytes()).decode()),
])
def test_a_crafted_state_is_refused_not_raised(broken):
    """The state comes from the browser: a mangled one is a one-line 400 (one state a mode
    of the run, all at the same whole number of steps)."""
    state = _run(2)[1]["state"]
    broken(state)
    status, answer = _frame(state)
    assert status == 400 and "state" in answer["error"] and "\n" not in answer["error"]


@pytest.mark.parametrize("ghost", [[[1, 2, 3]], "x", [["a", "b", "c", "d"]], {"a": 1},
                                   [[10 ** 400, 0, 0, 0]]])
def test_a_mangled_ghost_is_not_drawn(ghost):
    first = _run(1)[0]
    state = first["state"]
    state["ghosts"]["bn"] = ghost
    status, answer = _frame(state)
    assert status == 200
    assert len(answer["figure"]["data"]) == len(first["figure"]["data"])  # no ghost trace


def test_the_step_cap_stops_the_run(monkeypatch):
    monkeypatch.setitem(ct.TRAIN_LIMITS, "steps", (0, 6))
    state = _run(2)[-1]["state"]
    status, answer = _frame(state)
    assert status == 422 and "paused at 4 steps" in answer["error"]


def test_the_route_answers_json_to_any_method_and_body():
    client = app.server.test_client()
    got = client.get(ct.ROUTE)
    assert got.status_code == 405 and got.headers["Allow"] == "OPTIONS, POST"
    assert "error" in got.get_json()
    options = client.options(ct.ROUTE)
    assert options.status_code == 204 and "POST" in options.headers["Allow"]
    status, answer = _post(None, raw=b"{not json")
    assert status == 400 and answer["error"] == "a frame request is JSON"
    status, answer = _post(None, raw=b"\xff\xfe")
    assert status == 400
    for raw in (b"[" * 100_000 + b"]" * 100_000, b'{"controls": {}, "steps": Infinity}',
                b'{"controls": {}, "lr": NaN}'):
        status, answer = _post(None, raw=raw)  # too deep to parse; numbers JSON has not
        assert status == 400 and answer["error"] == "a frame request is JSON"
    # the trainers' state of a wide network is larger than the 64 kB of other routes: the
    # route has the callbacks' cap (a 200 kB state is read, and refused as a state)
    big = {"controls": control_values(SETTINGS), **TRAINING,
           "state": {"key": "x", "states": {"bn": {"params": ["A" * 200_000]}}}}
    status, answer = _post(big)
    assert status == 200 and answer["fresh"]  # another run's key: a fresh start
    response = client.post(ct.ROUTE, data=b"{" + b" " * (3 * 2 ** 20) + b"}",
                           content_type="application/json")
    assert response.status_code == 413


def _step_of(dash_duo) -> int:
    text = dash_duo.find_element(f"#{ids.TRAIN_COUNTER}").text
    return int(text.split()[1]) if text.startswith("step ") else -1


@pytest.mark.browser
def test_play_pause_at_projector_size(dash_duo):
    """Play draws frames; pause stops within the frame in flight and hands the run to the
    page: the replay slider's last position is the last frame, the curves hold every frame,
    and the frame, the curves and the slider are on the first screen at 1280x720."""
    dash_duo.driver.set_window_size(1280, 720)
    dash_duo.start_server(app)
    dash_duo.driver.get(dash_duo.server_url + "/?view=training")
    dash_duo.wait_for_element(f"#{ids.TRAIN_PLAY}", timeout=20)
    dash_duo.find_element(f"#{ids.TRAIN_PLAY}").click()
    until(lambda: _step_of(dash_duo) >= 40, timeout=30)
    dash_duo.find_element(f"#{ids.TRAIN_PLAY}").click()  # pause
    until(lambda: dash_duo.find_element(f"#{ids.TRAIN_PLAY}").text.endswith("play"), 5)
    time.sleep(1.0)
    paused = _step_of(dash_duo)
    time.sleep(1.0)
    assert _step_of(dash_duo) == paused  # stopped
    frames = paused // 5 + 1
    driver = dash_duo.driver
    curves = driver.execute_script(
        f"return document.querySelector('#{ids.GRAPH_CURVES} .js-plotly-plot').data"
        ".map(t => t.x.length)")
    assert curves == [frames] * 3
    handle = dash_duo.find_element(f"#{ids.TRAIN_SCRUB} .rc-slider-handle, "
                                   f"#{ids.TRAIN_SCRUB} [role=slider]")
    assert handle.get_attribute("aria-valuenow") == str(frames - 1)
    assert driver.execute_script(
        f"return document.querySelector('#{ids.GRAPH_TRAIN} .js-plotly-plot').data[0].type"
    ) == "scattergl"
    height = driver.execute_script("return window.innerHeight")
    for box in (ids.GRAPH_TRAIN, ids.GRAPH_CURVES, ids.TRAIN_SCRUB):
        rect = dash_duo.find_element(f"#{box}").rect
        assert rect["y"] + rect["height"] <= height, box  # in the first screen
    assert dash_duo.find_element(f"#{ids.TRAIN_MESSAGE}").text == ""
    # replay: the slider redraws a recorded frame as it was drawn, with no request
    shown = f"document.querySelector('#{ids.GRAPH_TRAIN} .js-plotly-plot')"
    kept = driver.execute_script("return window.bnvizTraining.run.figures[2].layout"
                                 ".annotations[0].text")
    requests = driver.execute_script("return performance.getEntriesByType('resource').length")
    dash_duo.driver.execute_script(
        "window.dash_clientside.set_props(arguments[0], {value: 2})", ids.TRAIN_SCRUB)
    until(lambda: dash_duo.find_element(f"#{ids.TRAIN_COUNTER}").text.startswith(
        "replaying step 10 (frame 3 of"), 10)
    assert driver.execute_script(f"return {shown}.layout.annotations[0].text") == kept
    assert driver.execute_script(
        "return performance.getEntriesByType('resource').slice(arguments[0])"
        f".filter(e => e.name.includes('{ct.ROUTE}') || e.name.includes('_dash-update'))"
        ".length", requests) == 0
    # one step more, then side by side: three panels across the column, curves below
    dash_duo.find_element(f"#{ids.TRAIN_STEP}").click()
    until(lambda: _step_of(dash_duo) == paused + 5, 10)  # on from the last frame
    dash_duo.find_element(f"#{ids.TRAIN_SIDE}").click()
    dash_duo.find_element(f"#{ids.TRAIN_STEP}").click()
    until(lambda: "random bias" in dash_duo.find_element(f"#{ids.TRAIN_COUNTER}").text, 20)
    assert _step_of(dash_duo) == 0  # another run: from step 0
    frame = dash_duo.find_element(f"#{ids.TRAIN_FRAME_BOX}").rect
    below = dash_duo.find_element(f"#{ids.TRAIN_CURVES_BOX}").rect
    assert below["y"] >= frame["y"] + frame["height"] - 1
    assert dash_duo.driver.find_elements(By.CSS_SELECTOR, f"#{ids.GRAPH_TRAIN} .gl-canvas")
    assert dash_duo.get_logs() == []


@pytest.mark.browser
def test_a_refused_frame_says_why_and_the_next_frame_clears_it(dash_duo):
    dash_duo.driver.set_window_size(1920, 1080)
    dash_duo.start_server(app)
    dash_duo.driver.get(dash_duo.server_url + "/?view=training")
    dash_duo.wait_for_element(f"#{ids.TRAIN_STEP}", timeout=20)
    rate = dash_duo.find_element(f"#{ids.TRAIN_LR}")
    rate.clear()
    rate.send_keys("0\t")
    dash_duo.find_element(f"#{ids.TRAIN_STEP}").click()
    dash_duo.wait_for_contains_text(f"#{ids.TRAIN_MESSAGE}", "learning rate", timeout=10)
    assert dash_duo.find_element(f"#{ids.TRAIN_PLAY}").text.endswith("play")
    rate.clear()
    rate.send_keys("0.05\t")
    dash_duo.find_element(f"#{ids.TRAIN_STEP}").click()
    until(lambda: _step_of(dash_duo) == 0, 10)
    until(lambda: dash_duo.find_element(f"#{ids.TRAIN_MESSAGE}").text == "", 10)
    # the refusal is the route's 400 (the browser notes it); nothing else went wrong
    logs = dash_duo.get_logs()
    assert [log["source"] for log in logs] == ["network"] and ct.ROUTE in logs[0]["message"]
    assert "400" in logs[0]["message"]
