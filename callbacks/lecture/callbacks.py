"""Lecture callbacks: the step and the four sliders -> :func:`bnviz.lecture.scenes.
compute_scene` -> the scene's figure (:mod:`callbacks.lecture.figures`); the clicker's keys,
the play button, the theme and the panels are client-side (assets/lecture.js, and beside it
lecture-figure.js, lecture-playback.js, lecture-url.js). The "export all" button's callbacks
are :mod:`callbacks.lecture.export` (imported here: registered with the page's)."""

from __future__ import annotations

from urllib.parse import urlsplit

import numpy as np
from dash import (
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    ctx,
    html,
    no_update,
)

from bnviz.core.limits import PartitionTooLarge
from bnviz.lecture.scenes import compute_scene
from bnviz.lecture.tour import SLIDERS, TOUR
from bnviz.params import InputError
from bnviz.views.style import PARTITION
from bnviz.web.callbacks.lecture import export as _export  # noqa: F401 - registers the export's callbacks
from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.figures import filled, is_wide, projected, readout, scene_figure
from bnviz.web.callbacks.lecture.state import (
    THEMES,
    lecture_query,
    slider_values,
    splittable,
    step_for,
)

#: What each animation sweeps: the slider, from, to, by (one tick of the timer); or the
#: figure's frames, played by plotly.js in the browser.
ANIMATIONS = {"mu": {"slider": ids.MU, "from": 0.0, "to": 1.0, "by": 0.04},
              "sigma": {"slider": ids.SIGMA, "from": -2.0, "to": 2.0, "by": 0.1},
              # the figure's own recorded frames (the training step), 120 ms each
              "frames": {"frames": True, "ms": 120}}
#: The figure and its dock: beside it, or under a wide figure (callbacks.lecture.figures).
MAIN, MAIN_WIDE = "lecture-main", "lecture-main lecture-wide"
#: The plot's box after a refused value: the old picture is marked, not taken for the answer.
STALE = "lecture-plot stale"


def drawn(scene, step: int, theme: str, query: str, ghost: bool = False) -> tuple[dict, str]:
    """The step's figure for the graph, and its title. Its ``meta`` names the state drawn
    (``state``: the lecture query), so that the browser draws a state it already drew from
    the next-step prefetch only once; and the ``key`` within which assets/lecture-figure.js keeps
    the partition from before a run of mu or sigma moves as a ghost under the new one."""
    figure, title = filled(projected(scene_figure(scene), theme))
    figure["layout"]["meta"] = {
        **figure["layout"].get("meta", {}),  # (a training step's frame count)
        "key": f"{step}|{scene.settings.depth}|{scene.settings.batch_size}|{theme}",
        "state": query, "ghost": ghost}
    return figure, title


def step_note(scene, step_def) -> str:
    """The line under the caption: what the scene notes, and that gray sliders are idle."""
    idle = any(name not in step_def.live for name in SLIDERS)
    return "; ".join(filter(None, (scene.note, "gray sliders do not act on this step"
                                   if idle else "")))


def counter(step: int) -> str:
    return "explorer" if step == 0 else f"{step} / {len(TOUR)}"


#: The scenes whose picture keeps a ghost of the partition from before mu or sigma moved.
GHOSTED = ("space", "split")


@callback(
    Output(ids.FIGURE, "data"), Output(ids.TITLE, "children"),
    Output(ids.COUNTER, "children"), Output(ids.CAPTION, "children"),
    Output(ids.MESSAGE, "children"), Output(ids.QUERY, "data"), Output(ids.PLOT, "className"),
    Output(ids.ANIMATION, "data"), Output(ids.PLAY, "disabled"),
    Output(ids.SPLIT_BUTTON, "disabled"),
    Output(ids.TIMER, "disabled", allow_duplicate=True),
    Output(ids.INFO, "children", allow_duplicate=True),
    Output(ids.READOUT, "children"), Output(ids.MAIN, "className"),
    {name: Output(cid, "value") for name, cid in ids.SLIDERS.items()},
    {name: Output(cid, "disabled") for name, cid in ids.SLIDERS.items()},
    Output(ids.DRAWN, "data"),
    Input(ids.STEP, "data"), Input(ids.RESET, "data"),
    {name: Input(cid, "value") for name, cid in ids.SLIDERS.items()},
    Input(ids.THEME, "data"), Input(ids.SPLIT, "data"), State(ids.BASE, "data"),
    State(ids.LINK_NOTE, "data"), State(ids.DRAWN, "data"),
    prevent_initial_call="initial_duplicate",
)
def show(step, _reset, sliders, theme, split, base, link_note=None, drawn_state=None):
    """Draw the step: at its own settings when it was chosen (or reset), the sliders set to
    them; else at the sliders. The page's first answer draws the explorer's state as it
    came (its batch size need not be a power of 2) and says what its link had that was not
    used. A bad value (only a crafted request sends one) keeps the picture, marked stale,
    with a message. A step the browser already drew from the prefetch (``drawn_state``, set
    with the step: callbacks/lecture/prefetch.py) is not drawn again: its figure, readout and
    the dock's place are not sent; the store is emptied by every answer."""
    theme = theme if theme in THEMES else "light"
    base = base if isinstance(base, dict) else None
    keep_sliders = {name: no_update for name in SLIDERS}
    # every input that fired: a step chosen while a slider also moved (the play button's
    # timer) is a step chosen, whatever fired first
    fired = {v for v in (ctx.triggered_prop_ids or {}).values() if isinstance(v, str)}
    first = not fired
    try:
        split = split is True
        step_def = step_for(step, base, split)
        chosen = bool(fired & {ids.STEP, ids.RESET})
        if chosen or (first and step == 0):
            scene = compute_scene(step_def)
        else:
            values = {k: v for k, v in sliders.items()}
            scene = compute_scene(step_def, values["mu"], values["sigma"], values["batch"],
                                  values["depth"])
        query = lecture_query(step, step_def, scene.settings, theme, base,
                              split and step_def.scene == "split")
        shown = chosen and isinstance(drawn_state, str) and drawn_state == query
        if not shown:
            figure, title = drawn(scene, step, theme, query,
                                  ghost=step_def.scene in GHOSTED and not chosen
                                  and ctx.triggered_id in (ids.MU, ids.SIGMA))
    except (InputError, PartitionTooLarge, ValueError) as exc:
        return (no_update, no_update, no_update, no_update, str(exc), no_update, STALE,
                no_update, no_update, no_update, no_update, no_update, no_update,
                no_update, keep_sliders, keep_sliders, None)
    new_sliders = slider_values(scene.settings) if chosen else keep_sliders
    disabled = {name: name not in step_def.live for name in SLIDERS}
    note = step_note(scene, step_def)
    if first and isinstance(link_note, str) and link_note:
        note = f"{link_note} {note}".strip()
    animation = ANIMATIONS.get(step_def.animate)
    return (no_update if shown else figure, step_def.title, counter(step), step_def.caption,
            note, query, "lecture-plot", animation, animation is None,
            not splittable(step_for(step, base)), True if chosen else no_update, "",
            no_update if shown else readout(scene, title),
            no_update if shown else MAIN_WIDE if is_wide(figure) else MAIN, new_sliders,
            disabled, None)


def _number(v: float) -> str:
    """3 significant digits; what float64 rounding leaves of a zero (|v| < 1e-9) reads 0."""
    return "0" if abs(v) < 1e-9 else f"{v:.3g}"


def _minus(v: float) -> str:
    """" − 0.251" or " + 0.251": a subtraction of ``v`` written once, not "− -0.251"."""
    return (" + " if v < 0 and _number(v) != "0" else " − ") + _number(abs(v))


def point_info(info, on_facet: bool, panel: str | None = None) -> list:
    """A click's findings for the dock: the panel clicked (the split), the region's code per
    layer, the nearest folded hyperplane, and eq. 11 with the numbers at the point."""
    j, k = info.unit_layer, info.unit + 1
    z = "x" if j == 1 else f"z{j - 1}(x)"
    where = ("on it" if on_facet else f"{_number(info.distance)} away")
    return ([html.P(html.B(panel))] if panel else []) + [
        html.P(["(", _number(info.point[0]), ", ", _number(info.point[1]), "): region code ",
                *[html.Span([html.Code(code, title=f"layer {i}: one bit per unit, 1 where "
                                                   "h > 0"), " "], className="text-nowrap")
                  for i, code in enumerate(info.codes, 1)]]),
        html.P(f"nearest folded hyperplane: layer {j}, unit {k}, {where}"),
        html.P([f"eq. 11: h{j},{k} = (⟨w, {z}⟩ − μ)/σ = (", _number(info.projection),
                _minus(info.mu), ")/", _number(info.sigma), " = ",
                html.B(_number(info.pre_activation))]),
    ]


def click_mark(result, info, axes: tuple[str, str]) -> dict:
    """What the graph marks for a click (assets/lecture-figure.js, ``mark``): the point, and the
    nearest folded hyperplane F_{j,k} (its facets as one polyline with breaks), on the
    panel's axes."""
    lp = result.partition.layers[info.unit_layer - 1]
    facets = lp.facets[lp.facet_units == info.unit]
    xs: list = []
    ys: list = []
    for x0, y0, x1, y1 in np.round(facets, 5).tolist():
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return {"point": [round(info.point[0], 5), round(info.point[1], 5)], "x": xs, "y": ys,
            "name": f"F{info.unit_layer},{info.unit + 1} (nearest)", "xaxis": axes[0],
            "yaxis": axes[1]}


@callback(Output(ids.INFO, "children"), Output(ids.MARK, "data"),
          Input(ids.CURSOR, "data"), State(ids.STEP, "data"),
          {name: State(cid, "value") for name, cid in ids.SLIDERS.items()},
          State(ids.BASE, "data"), State(ids.SPLIT, "data"), prevent_initial_call=True)
def inspect(click, step, sliders, base, split=False):
    """A click on a partition: its region and nearest folded hyperplane (bnviz.views.inspect);
    on the split view, in the panel clicked (left: without BN, right: with BN)."""
    from bnviz.views.inspect import inspect_point

    base = base if isinstance(base, dict) else None
    try:
        point = click["points"][0]
        x, y = float(point["x"]), float(point["y"])
        step_def = step_for(step, base, split is True)
        if step_def.scene not in ("space", "split"):
            return no_update
        scene = compute_scene(step_def, sliders["mu"], sliders["sigma"], sliders["batch"],
                              sliders["depth"])
        right = step_def.scene == "split" and click.get("panel") == "x2"
        result = scene.data if step_def.scene == "space" else scene.data[int(right)][1]
        info = inspect_point(result, x, y)
    except (TypeError, KeyError, IndexError, ValueError, OverflowError, PartitionTooLarge):
        return no_update, no_update  # not a click on a partition (a crafted request)
    x0, x1, _, _ = result.partition.box
    panel = None
    if step_def.scene == "split":
        mode = scene.data[int(right)][0]
        panel = f"{'right' if right else 'left'} panel: {PARTITION.row_label(mode)}"
    axes = ("x2", "y2") if right else ("x", "y")
    return (point_info(info, info.on_facet(0.01 * (x1 - x0)), panel),
            click_mark(result, info, axes))


@callback(Output(ids.QR, "src"), Output(ids.QR_URL, "children"),
          Input(ids.QR_PANEL, "is_open"), Input(ids.LINK, "data"))
def show_qr(is_open, link):
    """The QR code of the page's link, made on the server (offline) while its panel is open."""
    from bnviz.lecture.qr import qr_data_url

    if not is_open:
        return no_update, no_update
    if not isinstance(link, str) or not link.startswith(("http://", "https://")):
        return no_update, "no link yet"
    try:
        image = qr_data_url(link)
    except ValueError as exc:
        return no_update, str(exc)
    host = (urlsplit(link).hostname or "").lower()
    if host in ("localhost", "::1") or host.startswith("127."):
        return image, [link, html.Div(
            "This is the laptop's own address: students' laptops cannot open it. Open this "
            "page by the machine's network address (the server listens on it with make run "
            "or make serve), then show the code.", className="lecture-message")]
    return image, link


clientside_callback(ClientsideFunction("lecture", "withGhost"),
                    Output(ids.GRAPH, "figure"), Input(ids.FIGURE, "data"),
                    Input(ids.TYPE_SCALE, "data"), State(ids.GRAPH, "figure"))
clientside_callback(ClientsideFunction("lecture", "move"),
                    Output(ids.STEP, "data"),
                    Input(ids.PREV, "n_clicks"), Input(ids.NEXT, "n_clicks"),
                    State(ids.STEP, "data"), prevent_initial_call=True)
clientside_callback(ClientsideFunction("lecture", "toggleSplit"),
                    Output(ids.SPLIT, "data"), Input(ids.SPLIT_BUTTON, "n_clicks"),
                    State(ids.SPLIT, "data"), prevent_initial_call=True)
clientside_callback(ClientsideFunction("lecture", "toggleTheme"),
                    Output(ids.THEME, "data"), Input(ids.THEME_BUTTON, "n_clicks"),
                    State(ids.THEME, "data"), prevent_initial_call=True)
clientside_callback(ClientsideFunction("lecture", "themeClass"),
                    Output(ids.ROOT, "className"), Input(ids.THEME, "data"))
clientside_callback(ClientsideFunction("lecture", "toggle"),
                    Output(ids.HELP, "is_open"), Input(ids.HELP_BUTTON, "n_clicks"),
                    State(ids.HELP, "is_open"), prevent_initial_call=True)
clientside_callback(ClientsideFunction("lecture", "toggle"),
                    Output(ids.QR_PANEL, "is_open"), Input(ids.QR_BUTTON, "n_clicks"),
                    State(ids.QR_PANEL, "is_open"), prevent_initial_call=True)
clientside_callback(ClientsideFunction("lecture", "link"),
                    Output(ids.LINK, "data"), Input(ids.QUERY, "data"))
# the URL is written by callbacks/lecture/snapshots.py (the state shown and the snapshots)
clientside_callback(ClientsideFunction("lecture", "play"),
                    Output(ids.MU, "value", allow_duplicate=True),
                    Output(ids.SIGMA, "value", allow_duplicate=True),
                    Output(ids.TIMER, "disabled"),
                    Input(ids.PLAY, "n_clicks"), Input(ids.TIMER, "n_intervals"),
                    State(ids.ANIMATION, "data"), State(ids.MU, "value"),
                    State(ids.SIGMA, "value"), prevent_initial_call=True)

clientside_callback(ClientsideFunction("lecture", "mark"),
                    Output(ids.GRAPH, "figure", allow_duplicate=True),
                    Input(ids.MARK, "data"), State(ids.GRAPH, "figure"),
                    prevent_initial_call=True)
