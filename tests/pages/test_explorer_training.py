"""The explorer's "Watch it learn" tab (issue 19, items 1-2): its callbacks called as Dash
calls them, and the real page in headless Chromium at a projector's size.

A frame is exact: its region counts equal a fresh partition of the trainer's network, and a
run continued frame by frame from the states the browser keeps equals one run of the same
steps in one go (so any web process can serve the next frame).  Changing the network
restarts the run, reset restarts it, the side-by-side switch trains BN, zero and random bias
together, a bad control is one line and stops playing, the step cap pauses the run, and
replaying a recorded frame draws that frame again.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from dash import Patch, no_update
from dash.testing.wait import until
from fuzzing import in_callback
from selenium.webdriver.common.by import By

from app import app
from bnviz.core.network import layer_statistics
from bnviz.core.partition import box_from_extent, compute_partition
from bnviz.data.datasets import make_dataset
from bnviz.params import ExplorerParams
from bnviz.views.trainer import new_trainer
from callbacks.explorer import ids
from callbacks.explorer import training as ct
from callbacks.explorer.state import control_values

SETTINGS = ExplorerParams(depth=3, width=6, n_points=80, dataset="circles", data_seed=2,
                          weight_seed=5)
TRAINING = (0.05, 16, "adam", 4)  # learning rate, batch, optimiser, steps per frame


def _tick(state, controls=None, side=False, last=0, trigger=ids.TRAIN_GO + ".data",
          training=TRAINING):
    controls = control_values(SETTINGS) if controls is None else controls
    return in_callback(ct.tick, trigger, 1, None, None, controls, *training, side, state,
                       last, False)


def _run(frames: int, side=False):
    out = _tick(None, side=side)
    outs = [out]
    for i in range(frames - 1):
        out = _tick(json.loads(json.dumps(out[0])), side=side, last=i)  # through JSON
        outs.append(out)
    return outs


def test_frames_continue_where_the_browser_left_them():
    outs = _run(4)
    assert [o[5].split(" ·")[0] for o in outs] == ["step 0", "step 4", "step 8", "step 12"]
    assert [o[6] for o in outs] == [0, 1, 2, 3]  # the replay slider follows the last frame
    assert isinstance(outs[0][4], list) and isinstance(outs[1][4], Patch)  # history appended
    # the same 12 steps in one go, on a trainer of the same settings
    data = make_dataset("circles", 80, 2)
    trainer = new_trainer(3, 6, "leaky_relu", 0.1, "bn", 5, data.points, data.labels, 16,
                          0.05, "adam", box_from_extent(3.0))
    trainer.step(12)
    again = new_trainer(3, 6, "leaky_relu", 0.1, "bn", 5, data.points, data.labels, 16, 0.05,
                        "adam", box_from_extent(3.0))
    again.restore(outs[-1][0]["states"]["bn"])
    for w, v in zip(again.network().weights, trainer.network().weights, strict=True):
        np.testing.assert_array_equal(w, v)
    # the frame is exact: its counts are a fresh partition of that network
    net = trainer.network()
    part = compute_partition(net, data.points, box_from_extent(3.0),
                             stats=layer_statistics(net, data.points), device="cpu")
    counter = outs[-1][5]
    assert counter.startswith("step 12")
    regions = [len(lay.regions) for lay in part.layers]
    title = outs[-1][1]["layout"]["annotations"][0]["text"]
    assert f"{regions[-1]} regions" in title


def test_changing_the_network_or_reset_restarts():
    outs = _run(2)
    state = outs[-1][0]
    controls = control_values(SETTINGS) | {"width": 5}
    out = _tick(state, controls=controls, last=1)
    assert out[5].startswith("step 0") and isinstance(out[4], list)
    out = _tick(state, trigger=ids.TRAIN_RESET + ".n_clicks", last=1)
    assert out[5].startswith("step 0")


def test_side_by_side_trains_three_modes_on_the_same_batches():
    outs = _run(2, side=True)
    states = outs[-1][0]["states"]
    assert set(states) == {"bn", "zero_bias", "random_bias"}
    figure = outs[-1][1]
    assert len(figure["layout"]["annotations"]) == 3
    assert all(s["steps"] == 4 for s in states.values())
    # the same initial weights: W1 of the three differ only by their training
    assert outs[0][0]["states"]["bn"]["params"][0] == outs[0][0]["states"]["zero_bias"][
        "params"][0]


@pytest.mark.parametrize("training,words", [
    ((0.0, 16, "adam", 4), "learning rate"),
    ((0.05, 1, "adam", 4), "training batch"),
    ((0.05, 16, "rmsprop", 4), "optimiser"),
    ((0.05, 16, "adam", None), "steps per frame"),
])
def test_bad_controls_say_why_and_stop_playing(training, words):
    out = _tick(None, training=training)
    assert out[0] is no_update and out[1] is no_update
    assert words in out[8] and "\n" not in out[8]
    assert out[9] is True  # the timer stops


@pytest.mark.parametrize("broken", [
    lambda s: s["params"].__setitem__(0, "not base64!"),
    lambda s: s["params"].__setitem__(0, "AAAA"),
    lambda s: s["params"].__setitem__(0, None),
    lambda s: s.__setitem__("params", 5),
    lambda s: s.pop("opt"),
    lambda s: s.__setitem__("opt", [{"exp_avg": []}]),
])
def test_a_crafted_state_is_refused_not_raised(broken):
    """The state comes from the browser: a mangled one is a one-line message."""
    state = _run(2)[1][0]
    broken(state["states"]["bn"])
    out = _tick(state)
    assert out[0] is no_update and "training state" in out[8] and out[9] is True


def test_the_step_cap_pauses_the_run(monkeypatch):
    monkeypatch.setitem(ct.TRAIN_LIMITS, "steps", (0, 6))
    outs = _run(2)
    out = _tick(outs[-1][0], last=1)
    assert out[0] is no_update and "paused at 4 steps" in out[8] and out[9] is True


def test_curves_grow_a_few_frames_at_a_time_and_on_pause():
    """While playing, curve points wait in the state and are drawn CURVE_FRAMES frames at a
    time (extendData); a pause draws those still waiting and stops the timer."""
    outs = _run(ct.CURVE_FRAMES + 1)
    extended = [o[3] for o in outs[1:]]
    assert all(e is no_update for e in extended[:-1])
    data, traces = extended[-1]
    assert traces == [0, 1, 2] and [len(x) for x in data["x"]] == [ct.CURVE_FRAMES] * 3
    out = _tick(outs[-1][0], last=ct.CURVE_FRAMES)  # one point waits again
    assert len(out[0]["pending"]) == 3
    disabled, label, extend, cleared = ct.play(1, False, out[0])  # pause
    assert disabled is True and label.endswith("play")
    assert [len(x) for x in extend[0]["x"]] == [1, 1, 1] and isinstance(cleared, Patch)
    assert ct.play(2, True, out[0])[0] is False  # play again


def test_replay_draws_a_recorded_frame_again():
    outs = _run(3)
    history = [outs[0][4]] + [{"step": 4 * i, "modes": ["bn"]} for i in (1, 2)]
    figure, text = ct.replay(1, 2, history, control_values(SETTINGS), *TRAINING, False, False)
    live = outs[1][1]["layout"]["annotations"][0]["text"]
    assert figure["layout"]["annotations"][0]["text"] == live
    assert text.startswith("replaying step 4")


@pytest.mark.browser
def test_play_pause_at_projector_size(dash_duo):
    dash_duo.driver.set_window_size(1280, 720)
    dash_duo.start_server(app)
    dash_duo.driver.get(dash_duo.server_url + "/?view=training")
    dash_duo.wait_for_element(f"#{ids.TRAIN_PLAY}", timeout=20)
    dash_duo.find_element(f"#{ids.TRAIN_PLAY}").click()
    counter = f"#{ids.TRAIN_COUNTER}"

    def step() -> int:
        text = dash_duo.find_element(counter).text
        return int(text.split()[1]) if text.startswith("step ") else -1

    until(lambda: step() >= 20, timeout=30)
    dash_duo.find_element(f"#{ids.TRAIN_PLAY}").click()  # pause
    until(lambda: dash_duo.find_element(f"#{ids.TRAIN_PLAY}").text.endswith("play"), 5)
    paused = step()
    dash_duo.driver.implicitly_wait(0)
    import time

    time.sleep(1.0)
    assert step() <= paused + 5  # at most the frame in flight (5 steps a frame)
    graph = dash_duo.find_element(f"#{ids.GRAPH_TRAIN}")
    assert graph.is_displayed() and graph.rect["y"] + 100 < 720  # in the first screen
    frames = dash_duo.driver.execute_script(
        f"return document.querySelector('#{ids.GRAPH_TRAIN} .js-plotly-plot').data.length")
    assert frames >= 5
    assert dash_duo.find_element(f"#{ids.TRAIN_MESSAGE}").text == ""
    assert dash_duo.driver.find_elements(By.CSS_SELECTOR, f"#{ids.GRAPH_CURVES} .scatterlayer")
    assert dash_duo.get_logs() == []
