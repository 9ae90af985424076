"""Lecture callbacks: the step and the four sliders -> :func:`bnviz.lecture.scenes.
compute_scene` -> the scene's figure (:mod:`callbacks.lecture.figures`); the clicker's keys,
the play button, the theme and the panels are client-side (assets/lecture.js)."""

from __future__ import annotations

from dash import (
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    ctx,
    dcc,
    no_update,
)

from bnviz.core.limits import PartitionTooLarge
from bnviz.lecture.scenes import compute_scene
from bnviz.lecture.tour import SLIDERS, TOUR
from bnviz.params import InputError
from callbacks.lecture import ids
from callbacks.lecture.figures import projected, scene_figure
from callbacks.lecture.state import THEMES, lecture_query, slider_values, step_for

#: What each animation sweeps: the slider, from, to, by (one tick of the timer).
ANIMATIONS = {"mu": {"slider": ids.MU, "from": 0.0, "to": 1.0, "by": 0.04},
              "sigma": {"slider": ids.SIGMA, "from": -2.0, "to": 2.0, "by": 0.1}}
#: The plot's box after a refused value: the old picture is marked, not taken for the answer.
STALE = "lecture-plot stale"


def _counter(step: int) -> str:
    return "explorer" if step == 0 else f"{step} / {len(TOUR)}"


@callback(
    Output(ids.GRAPH, "figure"), Output(ids.TITLE, "children"),
    Output(ids.COUNTER, "children"), Output(ids.CAPTION, "children"),
    Output(ids.MESSAGE, "children"), Output(ids.QUERY, "data"), Output(ids.PLOT, "className"),
    Output(ids.ANIMATION, "data"), Output(ids.PLAY, "disabled"),
    Output(ids.TIMER, "disabled", allow_duplicate=True),
    {name: Output(cid, "value") for name, cid in ids.SLIDERS.items()},
    {name: Output(cid, "disabled") for name, cid in ids.SLIDERS.items()},
    Input(ids.STEP, "data"), Input(ids.RESET, "data"),
    {name: Input(cid, "value") for name, cid in ids.SLIDERS.items()},
    Input(ids.THEME, "data"), State(ids.BASE, "data"),
    prevent_initial_call="initial_duplicate",
)
def show(step, _reset, sliders, theme, base):
    """Draw the step: at its own settings when it was chosen (or reset), the sliders set to
    them; else at the sliders. A bad value (only a crafted request sends one) keeps the
    picture, marked stale, with a message."""
    theme = theme if theme in THEMES else "light"
    keep_sliders = {name: no_update for name in SLIDERS}
    try:
        step_def = step_for(step, base)
        chosen = ctx.triggered_id in (ids.STEP, ids.RESET)
        if chosen:
            scene = compute_scene(step_def)
        else:
            values = {k: v for k, v in sliders.items()}
            scene = compute_scene(step_def, values["mu"], values["sigma"], values["batch"],
                                  values["depth"])
        figure = projected(scene_figure(scene), theme)
    except (InputError, PartitionTooLarge, ValueError) as exc:
        return (no_update, no_update, no_update, no_update, str(exc), no_update, STALE,
                no_update, no_update, no_update, keep_sliders, keep_sliders)
    new_sliders = slider_values(scene.settings) if chosen else keep_sliders
    disabled = {name: name not in step_def.live for name in SLIDERS}
    note = scene.note + ("" if not any(disabled.values()) else
                         ("; " if scene.note else "") + "gray sliders do not act on this step")
    animation = ANIMATIONS.get(step_def.animate)
    return (figure, step_def.title, _counter(step), step_def.caption, note,
            lecture_query(step, step_def, scene.settings, theme, base), "lecture-plot",
            animation, animation is None, True if chosen else no_update, new_sliders, disabled)


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
        return qr_data_url(link), link
    except ValueError as exc:
        return no_update, str(exc)


@callback(Output(ids.DOWNLOAD, "data"), Output(ids.EXPORT_STATUS, "children"),
          Input(ids.EXPORT, "n_clicks"), State(ids.THEME, "data"), prevent_initial_call=True)
def export_slides(clicks, theme):
    """Every step as PNG and SVG with its caption, in one zip (bnviz.lecture.slides)."""
    from bnviz.lecture.slides import slides_zip

    if not isinstance(clicks, int) or clicks < 1:
        return no_update, no_update
    data = slides_zip(theme if theme in THEMES else "light")
    return (dcc.send_bytes(data, "bnviz-lecture-slides.zip"),
            f"slides: {len(TOUR)} steps, {len(data) // 1024} kB")


clientside_callback(ClientsideFunction("lecture", "move"),
                    Output(ids.STEP, "data"),
                    Input(ids.PREV, "n_clicks"), Input(ids.NEXT, "n_clicks"),
                    State(ids.STEP, "data"), prevent_initial_call=True)
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
clientside_callback(ClientsideFunction("bnviz", "replaceUrl"),
                    Output(ids.SINK, "children"), Input(ids.QUERY, "data"),
                    prevent_initial_call=True)
clientside_callback(ClientsideFunction("lecture", "play"),
                    Output(ids.MU, "value", allow_duplicate=True),
                    Output(ids.SIGMA, "value", allow_duplicate=True),
                    Output(ids.TIMER, "disabled"),
                    Input(ids.PLAY, "n_clicks"), Input(ids.TIMER, "n_intervals"),
                    State(ids.ANIMATION, "data"), State(ids.MU, "value"),
                    State(ids.SIGMA, "value"), prevent_initial_call=True)

