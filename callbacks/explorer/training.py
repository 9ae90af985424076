"""The explorer's live training ("Watch it learn" tab): play, pause, step, reset, replay.

Each frame is one short request to ``POST /api/training/frame`` (about 20 ms of work at 4x8
on 100 points), made by the tab's player in the browser (assets/training.js), which draws the
answer with Plotly.react straight away and asks for the next frame as soon as an answer
arrives (one in flight at a time): no Dash round per frame, so a frame costs the request and
one redraw (issue 19: at least 10 frames a second).  The request carries the explorer's
controls, the tab's and the trainers' states (:meth:`bnviz.views.trainer.Trainer.state`, a
few kB each, kept by the player); the server restores them, trains ``steps per frame``
steps, cuts the exact partition and answers with the frame's figure
(:func:`~callbacks.explorer.training_figures.frame_figure`, the one description of the view),
its numbers and the new states.  Nothing is kept on the server: any web process serves the
next frame and a restart loses nothing.  On pause the player hands the last figures and the
replay slider's range to the page's graphs (``dash_clientside.set_props``); the replay
slider redraws a recorded frame from the figures the player keeps (the last MAX_HISTORY),
exactly as it was shown and without a request.  Changing the network or the data starts the
run again from step 0.

Requests are checked as the jobs API checks its own (:func:`frame_answer`; its JSON reader,
the parameter layer's :class:`~bnviz.params.live.LiveFrameParams`): a body that is
not the player's, a bad control or a crafted state is ``400 {"error": one line}``; a run
that cannot go on (the step cap, a frame over the region cap) is ``422`` with the reason.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
from dash import Input, Output, clientside_callback

from bnviz.caps import EXPLORER_MAX_REGIONS, MODES, TRAIN_LIMITS
from bnviz.core.limits import PartitionTooLarge
from bnviz.params import InputError, LiveFrameParams, parse
from bnviz.params.cost import partition_seconds
from bnviz.service.admission import ServerBusy, admitted
from bnviz.views.trainer import live_step, training_data
from bnviz.web.callbacks.background import one_line
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer.state import CONTROLS, settings_from_controls
from bnviz.web.callbacks.explorer.training_figures import (
    curve_point,
    curves_figure,
    frame_figure,
    frame_panels,
)

__all__ = ["ROUTE", "add_training_route", "frame_answer"]

#: The player's route (the request guard gives it the callbacks' body cap: states of wide
#: networks with Adam's moments reach a few hundred kB).
ROUTE = "/api/training/frame"
LABELS = {"lr": "learning rate", "batch": "training batch", "steps": "steps per frame",
          "optimizer": "optimiser", "n_points": "points", "depth": "depth L",
          "width": "width", "weight_seed": "weight seed", "data_seed": "data seed",
          "batch_size": "training batch"}
#: The least time between two frames while playing (ms): 20 frames a second at most.
FRAME_MS = 50
#: While playing, the curves are extended every CURVE_FRAMES frames (each redraws them).
CURVE_FRAMES = 4
#: Frames the player keeps for the replay slider (each its figure, 36 kB at 4x8 and 85 kB
#: side by side, and its numbers): 11-26 MB in the browser at most.
MAX_HISTORY = TRAIN_LIMITS["frames"][1]
#: The fields of a frame request (besides "controls" and "state").
REQUEST_FIELDS = ("lr", "batch", "optimizer", "steps", "side", "projector", "reset")


def _params(controls: dict, lr, batch, optimizer, steps) -> tuple:
    """(LiveFrameParams, data seed, shift) from the explorer's controls and the tab's."""
    s = settings_from_controls(controls)
    p = parse(LiveFrameParams, {
        "dataset": s.dataset, "n_points": s.n_points, "weight_seed": s.weight_seed,
        "data_seed": s.data_seed, "depth": s.depth,
        "width": s.width, "activation": s.activation, "alpha": s.alpha,
        "mode": s.mode, "steps": steps, "frames": 1, "batch_size": batch, "lr": lr,
        "optimizer": optimizer, "extent": s.extent}, LABELS)
    return p, s.data_seed, (s.shift_x, s.shift_y)


def _key(p: LiveFrameParams, data_seed: int, shift, modes) -> str:
    """What a run is of: a change restarts it from step 0 (steps per frame do not)."""
    settings = {k: v for k, v in asdict(p).items() if k != "steps"}
    return json.dumps([settings, data_seed, list(shift), list(modes)], sort_keys=True,
                      default=str)


def _data(p: LiveFrameParams, data_seed: int, shift):
    data = training_data(p, data_seed, shift)
    return data.points, np.asarray(data.labels) % 2


def _request(body: object) -> dict:
    """The frame request's fields, checked for shape (the values are the parameter layer's):
    InputError names what is wrong."""
    if not isinstance(body, dict):
        raise InputError("a frame request is a JSON object")
    unknown = set(body) - {"controls", "state", *REQUEST_FIELDS}
    if unknown:
        raise InputError(f"unknown field {sorted(unknown)[0][:40]!r}")
    controls = body.get("controls")
    if not isinstance(controls, dict) or set(controls) - set(CONTROLS):
        raise InputError("controls: an object of the explorer's controls")
    for flag in ("side", "projector", "reset"):
        if not isinstance(body.get(flag, False), bool):
            raise InputError(f"{flag}: true or false")
    state = body.get("state")
    if state is not None and not isinstance(state, dict):
        raise InputError("state: the last frame's state, or null")
    return body


def _steps_done(states: object, modes: tuple[str, ...]) -> int | None:
    """The steps the browser's trainers have trained: one state per mode of the run, all
    at the same whole number of steps; None for anything else (the state comes from the
    browser)."""
    if not isinstance(states, dict) or set(states) != set(modes):
        return None
    done = {s.get("steps") if isinstance(s, dict) else None for s in states.values()}
    if len(done) != 1:
        return None
    steps = done.pop()
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        return None
    return steps


def _frame_seconds(p: LiveFrameParams, modes: tuple[str, ...]) -> float:
    """The estimated seconds of one frame: ~1 ms an optimiser step of these small networks,
    and the frame's partition, per mode trained (bnviz.service.admission)."""
    widths = (p.width,) * p.depth
    return len(modes) * (1e-3 * p.steps + partition_seconds(
        widths, p.activation, p.mode_of_partition, p.extent, EXPLORER_MAX_REGIONS))


def frame_answer(body: object) -> tuple[int, dict]:
    """One frame of the player's run: (HTTP status, JSON answer) for a request body.

    200: ``{"state", "figure", "counter", "entry", "points", "fresh", "curves"?}``: the
    trainers' new states (the next request sends them back), the frame's figure, the
    counter's text, its numbers for the replay slider (step, loss, accuracy, distance,
    regions per mode) and for the curves ((trace, step, value) to extend them with),
    whether the run started again from step 0 (a first frame, reset, or other settings:
    then "curves" is the curves' new figure).  400 or 422: ``{"error": one line}``
    (module docstring)."""
    try:
        body = _request(body)
        p, data_seed, shift = _params(body["controls"], body.get("lr"), body.get("batch"),
                                      body.get("optimizer"), body.get("steps"))
    except InputError as exc:
        return 400, {"error": one_line(exc)}
    side, projector, state = body.get("side", False), body.get("projector", False), \
        body.get("state")
    modes = MODES if side else (p.mode,)
    key = _key(p, data_seed, shift, modes)
    fresh = body.get("reset", False) or state is None or state.get("key") != key
    states = None if fresh else state.get("states")
    done = 0 if fresh else _steps_done(states, modes)
    if done is None:
        return 400, {"error": "state: not a training state of these settings; reset to "
                              "start again"}
    if done + p.steps > TRAIN_LIMITS["steps"][1]:
        return 422, {"error": f"paused at {done} steps, the most one run may train: reset to "
                              "start again"}
    try:
        with admitted(_frame_seconds(p, modes)):
            frames, states = live_step(p, data_seed, shift, modes, states,
                                       EXPLORER_MAX_REGIONS)
    except ServerBusy as exc:
        return 429, {"error": one_line(exc), "retry_after": exc.retry_after}
    except InputError as exc:
        return 400, {"error": one_line(exc)}
    except ValueError as exc:  # a crafted or mangled state
        return 400, {"error": f"state: {one_line(exc)}"}
    except PartitionTooLarge as exc:
        return 422, {"error": f"stopped: {one_line(exc)}"}
    points, labels = _data(p, data_seed, shift)
    ghosts = None if fresh else state.get("ghosts")
    figure = frame_figure(frame_panels(frames, ghosts if isinstance(ghosts, dict) else None),
                          points, labels, frames[modes[0]].partition.box, projector)
    entry = {"step": frames[modes[0]].step,
             "loss": {m: f.loss for m, f in frames.items()},
             "accuracy": {m: f.accuracy for m, f in frames.items()},
             "distance": {m: f.mean_distance for m, f in frames.items()},
             "regions": {m: f.regions for m, f in frames.items()},
             "modes": list(modes)}
    new_state = {"key": key, "states": states, "ghosts": {
        m: (f.partition.decision_boundary.round(6).tolist()
            if f.partition.decision_boundary is not None else []) for m, f in frames.items()}}
    counter = f"step {entry['step']}" + "".join(
        f" · {m.replace('_', ' ')}: loss {f.loss:.3f}, accuracy {f.accuracy:.0%}"
        for m, f in frames.items())
    answer = {"state": new_state, "figure": figure, "counter": counter, "entry": entry,
              "fresh": fresh, "points": curve_point(modes, entry)}
    if fresh:
        answer["curves"] = curves_figure(modes, [entry], projector)
    return 200, answer


def add_training_route(server) -> None:
    """Register ``POST /api/training/frame`` (:func:`frame_answer`) on the Flask server; the
    jobs API's catch-all answers its other methods (405, OPTIONS)."""
    from flask import Response, request

    from bnviz.server.api import finite
    from bnviz.service.guard import strict_json

    def frame() -> Response:
        try:
            body = strict_json(request.get_data())
        except ValueError:
            status, answer = 400, {"error": "a frame request is JSON"}
        else:
            status, answer = frame_answer(body)
        response = Response(json.dumps(finite(answer), separators=(",", ":")),
                            status=status, mimetype="application/json")
        if status == 429:  # the server is busy (bnviz.service.admission)
            response.headers["Retry-After"] = str(answer.get("retry_after", 5))
        return response

    server.add_url_rule(ROUTE, "training_frame", frame, methods=["POST"],
                        provide_automatic_options=False)


# The player (assets/training.js) follows the tab's buttons and every control it sends: play,
# pause, step and reset start or stop it; any other input only updates what the next frame
# request carries.  The run (the trainers' state, its frames) lives in the player while the
# page does; a page shown again starts a new run.
_PLAYER = {
    "route": ROUTE, "frameMs": FRAME_MS, "curveFrames": CURVE_FRAMES,
    "maxHistory": MAX_HISTORY, "controls": list(CONTROLS),
    "ids": {"play": ids.TRAIN_PLAY, "step": ids.TRAIN_STEP, "reset": ids.TRAIN_RESET,
            "graph": ids.GRAPH_TRAIN, "curves": ids.GRAPH_CURVES, "counter": ids.TRAIN_COUNTER,
            "message": ids.TRAIN_MESSAGE, "scrub": ids.TRAIN_SCRUB}}
clientside_callback(
    f"""function() {{
        return window.bnvizTraining.control({json.dumps(_PLAYER)}, Array.from(arguments));
    }}""",
    Output(ids.TRAIN_PLAY, "children"),
    Input(ids.TRAIN_PLAY, "n_clicks"), Input(ids.TRAIN_STEP, "n_clicks"),
    Input(ids.TRAIN_RESET, "n_clicks"),
    *[Input(cid, "value") for cid in CONTROLS.values()],
    Input(ids.TRAIN_LR, "value"), Input(ids.TRAIN_BATCH, "value"),
    Input(ids.TRAIN_OPTIMIZER, "value"), Input(ids.TRAIN_STEPS, "value"),
    Input(ids.TRAIN_SIDE, "value"), Input(ids.PROJECTOR, "value"))

# BN vs no BN, or projector type: the frame takes the column's width, the curves go below.
clientside_callback(
    f"""function(side, projector) {{
        const boxes = {json.dumps({str(k).lower(): v for k, v in ids.TRAIN_BOXES.items()})};
        return boxes[side === true || projector === true ? "true" : "false"];
    }}""",
    Output(ids.TRAIN_FRAME_BOX, "className"), Output(ids.TRAIN_CURVES_BOX, "className"),
    Input(ids.TRAIN_SIDE, "value"), Input(ids.PROJECTOR, "value"))

# The replay slider: the player redraws a recorded frame from the figures it kept (exactly
# what was shown, no request); the latest frame is on screen already.
clientside_callback(
    """function(index) { return window.bnvizTraining.replay(index); }""",
    Output(ids.TRAIN_COUNTER, "children"), Input(ids.TRAIN_SCRUB, "value"),
    prevent_initial_call=True)
