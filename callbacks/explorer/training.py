"""The explorer's live training ("Watch it learn" tab): play, pause, step, reset, replay.

Each frame is one short request (about 25 ms of work at 4x8 on 100 points; one in flight
at a time): the request sends the trainers' states
(:meth:`bnviz.views.trainer.Trainer.state`, a few kB each, kept in the browser tab), the
server restores them, trains ``steps per frame`` steps, cuts the exact partition and answers
with the frame; nothing is kept on the server, so any web process serves the next frame and a
restart loses nothing.  The frame's numbers are appended to the history (a Patch: the
history is never sent back); the replay slider redraws a recorded frame by training again up
to its step (deterministic: the same frame).
Changing the network or the data starts the run again from step 0.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import numpy as np
from dash import Input, Output, Patch, State, callback, clientside_callback, ctx, no_update

from bnviz.core.limits import PartitionTooLarge
from bnviz.params import InputError, LiveTrainingParams, parse
from bnviz.params.caps import EXPLORER_MAX_REGIONS, MODES, TRAIN_LIMITS
from bnviz.views.trainer import live_step
from callbacks.background import one_line
from callbacks.explorer import ids
from callbacks.explorer.state import CONTROLS, settings_from_controls
from callbacks.explorer.training_figures import curve_point, curves_figure, frame_figure

__all__ = ["extension", "play", "replay", "tick"]

LABELS = {"lr": "learning rate", "batch_size": "training batch", "steps": "steps per frame",
          "optimizer": "optimiser", "n": "points", "depth": "depth L", "width": "width",
          "seed": "weight seed"}
#: The least time between two frames while playing (ms): 12 frames a second at most.
FRAME_MS = 80
#: While playing, the curves are extended every CURVE_FRAMES frames.
CURVE_FRAMES = 4
#: A frame asked for and not back after this long (ms) is asked for again.
STALLED_MS = 5000
#: Frames kept for the replay slider (each: its numbers, a few hundred bytes).
MAX_HISTORY = TRAIN_LIMITS["frames"][1]

_TRAINING = [State(ids.TRAIN_LR, "value"), State(ids.TRAIN_BATCH, "value"),
             State(ids.TRAIN_OPTIMIZER, "value"), State(ids.TRAIN_STEPS, "value"),
             State(ids.TRAIN_SIDE, "value")]
_SETTINGS = {name: State(cid, "value") for name, cid in CONTROLS.items()}


def _params(controls: dict, lr, batch, optimizer, steps) -> tuple:
    """(LiveTrainingParams, data seed, shift) from the explorer's controls and the tab's."""
    s = settings_from_controls(controls)
    p = parse(LiveTrainingParams, {
        "dataset": s.dataset, "n": s.n_points, "seed": s.weight_seed, "depth": s.depth,
        "width": s.width, "activation": s.activation, "alpha": s.alpha,
        "mode": s.mode, "steps": steps, "frames": 1, "batch_size": batch, "lr": lr,
        "optimizer": optimizer, "extent": s.extent}, LABELS)
    return p, s.data_seed, (s.shift_x, s.shift_y)


def _key(p: LiveTrainingParams, data_seed: int, shift, modes) -> str:
    """What a run is of: a change restarts it from step 0 (steps per frame do not)."""
    return json.dumps([asdict(replace(p, steps=0)), data_seed, list(shift), list(modes)],
                      sort_keys=True, default=str)


def _panels(frames: dict, ghosts: dict | None) -> list[dict]:
    out = []
    for mode, f in frames.items():
        part = f.partition
        earlier = [lay.facets for lay in part.layers[:-1]]
        out.append({"mode": mode, "step": f.step, "loss": f.loss, "accuracy": f.accuracy,
                    "regions": f.regions[-1], "layers": len(part.layers),
                    "facets": (np.concatenate(earlier) if earlier else np.zeros((0, 4)),
                               part.layers[-1].facets),
                    "boundary": part.decision_boundary,
                    "ghost": None if not ghosts or mode not in ghosts
                    else np.asarray(ghosts[mode], dtype=float).reshape(-1, 4)})
    return out


def _data(p: LiveTrainingParams, data_seed: int, shift):
    from bnviz.data.datasets import make_dataset, shifted

    data = shifted(make_dataset(p.dataset, p.n, data_seed), *shift)
    return data.points, np.asarray(data.labels) % 2


@callback(Output(ids.TRAIN_TIMER, "disabled"), Output(ids.TRAIN_PLAY, "children"),
          Output(ids.GRAPH_CURVES, "extendData", allow_duplicate=True),
          Output(ids.TRAIN_STATE, "data", allow_duplicate=True),
          Input(ids.TRAIN_PLAY, "n_clicks"), State(ids.TRAIN_TIMER, "disabled"),
          State(ids.TRAIN_STATE, "data"), prevent_initial_call=True)
def play(_n, disabled, state):
    """Play / pause: the timer runs while playing; a pause draws the curve points still
    waiting (:func:`tick` extends the curves a few frames at a time)."""
    playing = bool(disabled)  # it was paused: play now
    pending = state.get("pending") if isinstance(state, dict) else None
    if playing or not isinstance(pending, list) or not pending:
        return not playing, "⏸ pause" if playing else "▶ play", no_update, no_update
    cleared = Patch()
    cleared["pending"] = []
    return True, "▶ play", extension(pending), cleared


# One frame in flight at a time: the timer's ticks ask the server for a frame only when the
# last one has arrived (or failed) and FRAME_MS have passed since it was asked for.  A plain
# timer would send requests that overtake each other (the page keeps only the last answer),
# and a chain "frame arrived -> ask again" is a circular dependency, which Dash refuses.
clientside_callback(
    f"""function(n) {{
        const t = window.bnvizTraining || (window.bnvizTraining = {{busy: false, at: 0}});
        const now = Date.now();
        if ((t.busy && now - t.at < {STALLED_MS}) || now - t.at < {FRAME_MS}) {{
            return window.dash_clientside.no_update;
        }}
        t.busy = true;
        t.at = now;
        return n;
    }}""",
    Output(ids.TRAIN_GO, "data"), Input(ids.TRAIN_TIMER, "n_intervals"),
    prevent_initial_call=True)
clientside_callback(
    """function() {
        if (window.bnvizTraining) { window.bnvizTraining.busy = false; }
        return window.dash_clientside.no_update;
    }""",
    Output(ids.TRAIN_SINK, "children"), Input(ids.TRAIN_STATE, "data"),
    Input(ids.TRAIN_MESSAGE, "children"), prevent_initial_call=True)


@callback(Output(ids.TRAIN_STATE, "data"), Output(ids.GRAPH_TRAIN, "figure"),
          Output(ids.GRAPH_CURVES, "figure"), Output(ids.GRAPH_CURVES, "extendData"),
          Output(ids.TRAIN_HISTORY, "data"),
          Output(ids.TRAIN_COUNTER, "children"), Output(ids.TRAIN_SCRUB, "max"),
          Output(ids.TRAIN_SCRUB, "value"), Output(ids.TRAIN_MESSAGE, "children"),
          Output(ids.TRAIN_TIMER, "disabled", allow_duplicate=True),
          Output(ids.TRAIN_PLAY, "children", allow_duplicate=True),
          Input(ids.TRAIN_GO, "data"), Input(ids.TRAIN_STEP, "n_clicks"),
          Input(ids.TRAIN_RESET, "n_clicks"), _SETTINGS, *_TRAINING,
          State(ids.TRAIN_STATE, "data"), State(ids.TRAIN_SCRUB, "max"),
          State(ids.PROJECTOR, "value"), prevent_initial_call=True)
def tick(_n, _step, _reset, controls, lr, batch, optimizer, steps, side, state, last, projector):
    """One frame: restore, train ``steps per frame`` steps, cut, draw (module docstring)."""
    try:
        p, data_seed, shift = _params(controls, lr, batch, optimizer, steps)
    except InputError as exc:
        return (*(no_update,) * 8, one_line(exc), True, "▶ play")
    modes = MODES if side else (p.mode,)
    key = _key(p, data_seed, shift, modes)
    reset = ctx.triggered_id == ids.TRAIN_RESET
    fresh = reset or not isinstance(state, dict) or state.get("key") != key
    done = 0 if fresh else next(iter(state.get("states", {}).values()), {}).get("steps", 0)
    if isinstance(done, int) and done + p.steps > TRAIN_LIMITS["steps"][1]:
        return (*(no_update,) * 8, f"paused at {done} steps, the most one run may train: "
                "reset to start again", True, "▶ play")
    try:
        frames, states = live_step(p, data_seed, shift, modes,
                                   None if fresh else state.get("states"), EXPLORER_MAX_REGIONS)
    except (PartitionTooLarge, InputError, ValueError) as exc:
        return (*(no_update,) * 8, f"stopped: {one_line(exc)}", True, "▶ play")
    points, labels = _data(p, data_seed, shift)
    ghosts = None if fresh else state.get("ghosts")
    figure = frame_figure(_panels(frames, ghosts), points, labels,
                          frames[modes[0]].partition.box, bool(projector))
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
    if fresh:
        history, curves, index = [entry], curves_figure(modes, [entry], bool(projector)), 0
    else:
        index = min((last or 0) + 1, MAX_HISTORY - 1)
        history = Patch()
        if index == MAX_HISTORY - 1:
            del history[0]
        history.append(entry)
        # the curves grow by Plotly.extendTraces (no new figure), CURVE_FRAMES frames at a
        # time while playing: each extension redraws the curves (~30 ms in a browser)
        pending = [*state.get("pending", []), *curve_point(modes, entry)]
        if ctx.triggered_id == ids.TRAIN_GO and len(pending) < CURVE_FRAMES * 3 * len(modes):
            new_state["pending"] = pending
            return (new_state, figure, no_update, no_update, history, counter, index, index,
                    no_update, no_update, no_update)
        return (new_state, figure, no_update, extension(pending), history, counter, index,
                index, no_update, no_update, no_update)
    return (new_state, figure, curves, no_update, history, counter, index, index, "",
            no_update, no_update)


def extension(pending: list) -> tuple[dict, list[int]] | object:
    """Curve points waiting to be drawn, as dcc.Graph's ``extendData``."""
    if not pending:
        return no_update
    traces = sorted({int(t) for t, _, _ in pending})
    xs = {t: [x for u, x, _ in pending if u == t] for t in traces}
    ys = {t: [y for u, _, y in pending if u == t] for t in traces}
    return {"x": [xs[t] for t in traces], "y": [ys[t] for t in traces]}, traces


# The slider follows the latest frame while playing; only a frame the user scrubs back to
# reaches the server (in the browser: no request a frame for the slider's own moves).
clientside_callback(
    """function(index, last) {
        if (typeof index !== "number" || index === last) {
            return window.dash_clientside.no_update;
        }
        return index;
    }""",
    Output(ids.TRAIN_REPLAY, "data"), Input(ids.TRAIN_SCRUB, "value"),
    State(ids.TRAIN_SCRUB, "max"), prevent_initial_call=True)


@callback(Output(ids.GRAPH_TRAIN, "figure", allow_duplicate=True),
          Output(ids.TRAIN_COUNTER, "children", allow_duplicate=True),
          Input(ids.TRAIN_REPLAY, "data"), State(ids.TRAIN_SCRUB, "max"),
          State(ids.TRAIN_HISTORY, "data"), _SETTINGS, *_TRAINING,
          State(ids.PROJECTOR, "value"), prevent_initial_call=True)
def replay(index, last, history, controls, lr, batch, optimizer, steps, side, projector):
    """The replay slider: redraw recorded frame ``index`` by training again from step 0 to
    its step (the runs are deterministic: the same weights and mini-batches, so the same
    frame; a few hundred steps take a fraction of a second).  The latest frame is on screen
    already."""
    if not isinstance(history, list) or not isinstance(index, int) or index == last \
            or not 0 <= index < len(history):
        return no_update, no_update
    entry = history[index]
    try:
        p, data_seed, shift = _params(controls, lr, batch, optimizer, int(entry["step"]))
        modes = tuple(entry["modes"])
        if not set(modes) <= set(MODES):
            raise ValueError("unknown mode")
        _, start = live_step(replace(p, steps=0), data_seed, shift, modes, None,
                             EXPLORER_MAX_REGIONS)  # step 0, then every step to the frame's
        frames, _ = live_step(p, data_seed, shift, modes, start, EXPLORER_MAX_REGIONS)
    except (PartitionTooLarge, InputError, ValueError, KeyError, TypeError) as exc:
        return no_update, f"cannot replay this frame: {one_line(exc)}"
    points, labels = _data(p, data_seed, shift)
    figure = frame_figure(_panels(frames, None), points, labels,
                          frames[modes[0]].partition.box, bool(projector))
    return figure, f"replaying step {entry['step']} (frame {index + 1} of {len(history)})"
