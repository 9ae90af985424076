"""The presenter view's own callbacks (/lecture/presenter, issue 31): the step's notes, the
next step's picture and title, the step list, and the projector window's link; and, on both
lecture pages, what assets/presenter.js watches to keep the windows in one state.

Everything else on that page is the lecture view's (callbacks.lecture.callbacks: the same ids,
so its keys, sliders and buttons act as on the projector). The presenter and the projector
share one lecture state, both ways (issue 46): a change made in either window carries a
version, the newest wins, and a window that opens joins the state; between two tabs of one
browser over a BroadcastChannel, between two machines through the server
(bnviz.server.lecture_sync, at the session link the presenter shows). The timer runs in the
browser.
"""

from __future__ import annotations

from dash import (
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    html,
    no_update,
)

from bnviz.core.limits import PartitionTooLarge
from bnviz.lecture.notes import notes_for, planned_minutes
from bnviz.lecture.scenes import compute_scene
from bnviz.lecture.tour import TOUR
from bnviz.params import InputError
from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.figures import projected, scene_figure
from bnviz.web.callbacks.lecture.state import THEMES, step_for

__all__ = ["presenter_panel"]


def _notes(step: int, base: dict | None) -> list:
    key = step_for(step, base).key
    notes = notes_for(key)
    if notes is None:
        return [html.P("The explorer's own state: no notes. Press → for the tour.")]
    return [html.P([html.B("Say "), notes.say]), html.P([html.B("Point at "), notes.point]),
            html.P([html.B("Ask "), notes.ask]),
            html.P(f"planned: {notes.minutes:g} min for this step, "
                   f"{planned_minutes(step):g} of {planned_minutes(len(TOUR)):g} min by its "
                   "end", className="presenter-planned", id=ids.PLANNED,
                   **{"data-planned-seconds": str(int(60 * planned_minutes(step)))})]


def _next_figure(step: int, base: dict | None, theme: str) -> dict:
    """The next step's picture at its own settings, small (static: no hover, no toolbar)."""
    figure = projected(scene_figure(compute_scene(step_for(step + 1, base))), theme)
    layout = figure["layout"]
    layout.update(margin={"l": 4, "r": 4, "t": 4, "b": 4}, showlegend=False, title=None)
    layout["font"] = {**layout.get("font", {}), "size": 10}
    layout.pop("annotations", None)
    for key, axis in list(layout.items()):  # the picture, not its ticks: too small to read
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            layout[key] = {**axis, "showticklabels": False, "title": None}
    return figure


@callback(Output(ids.NOTES, "children"), Output(ids.NEXT_TITLE, "children"),
          Output(ids.NEXT_GRAPH, "figure"), Output(ids.STEP_LIST, "children"),
          Input(ids.STEP, "data"), Input(ids.THEME, "data"), State(ids.BASE, "data"))
def presenter_panel(step, theme, base):
    """The presenter's panel for the step shown: its notes, the next step (title and
    picture), and the tour's steps with this one marked."""
    base = base if isinstance(base, dict) else None
    theme = theme if theme in THEMES else "light"
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= len(TOUR):
        return no_update, no_update, no_update, no_update
    steps = [html.Li(s.title, className="current" if i == step else None, title=s.title,
                     **({"aria-current": "step"} if i == step else {}))
             for i, s in enumerate(TOUR, 1)]
    if step == len(TOUR):
        return _notes(step, base), "next: the end of the tour", {}, steps
    try:
        figure = _next_figure(step, base, theme)
    except (InputError, PartitionTooLarge, ValueError):
        figure = {}
    return (_notes(step, base), f"next: {step + 1}. {TOUR[step].title}", figure, steps)


# the projector window opens at the presenter's state and session; the session's link
# (presenter.js: the session is made in the browser)
clientside_callback(ClientsideFunction("presenter", "links"),
                    Output(ids.PROJECTOR_LINK, "href"), Output(ids.SESSION_LINK, "children"),
                    Input(ids.QUERY, "data"))
# what the window shows (its state once drawn, and the lecturer's slider moves), for the
# state the windows share (presenter.js); on both lecture pages
clientside_callback(ClientsideFunction("presenter", "watch"),
                    Output(ids.SYNC, "data"), Input(ids.QUERY, "data"),
                    Input(ids.STEP, "data"), Input(ids.THEME, "data"),
                    Input(ids.SPLIT, "data"),
                    *[Input(cid, "value") for cid in ids.SLIDERS.values()])
