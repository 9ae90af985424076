"""Named snapshots of the lecture (issue 31): the ``n`` key keeps the state shown under a name
(assets/lecture.js asks for it), the step lists show them (the keys panel, the presenter's
list), a click opens one, and the URL keeps them (``snaps``: :func:`callbacks.lecture.state.
snapshots_query`), so that a reload, a bookmark or the next lecture has them."""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from dash import ClientsideFunction, Input, Output, callback, clientside_callback, html

from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.state import initial_state, snapshots_query

__all__ = ["snapshot_list", "snapshot_state"]


def snapshot_state(query: str) -> str:
    """What a snapshot's link opens, as the windows' shared state has it (assets/
    presenter.js): its step, sliders, theme and split; step 0 (the explorer's settings,
    which no slider holds) its query too. JSON, for the link's ``data-state``."""
    state = initial_state(parse_qs(query, keep_blank_values=True))
    out = {"step": state.step, "sliders": state.sliders, "theme": state.theme,
           "split": state.split}
    return json.dumps(out | ({"query": query} if state.step == 0 else {}),
                      separators=(",", ":"))


def snapshot_list(snapshots: object) -> list:
    """The snapshots as links (each opens its state and keeps every snapshot in the URL),
    or how to make one."""
    items = snapshots.get("items") if isinstance(snapshots, dict) else None
    items = [s for s in items or () if isinstance(s, dict)
             and isinstance(s.get("name"), str) and isinstance(s.get("query"), str)]
    if not items:
        return [html.Div("Snapshots: none yet. Press n to keep the state shown under a name.",
                         className="lecture-snapshots-empty")]
    keep = snapshots_query(items)
    return [html.Div(f"Snapshots ({len(items)})", className="lecture-snapshots-title"),
            html.Ol([html.Li(html.A(s["name"], href=f"?{s['query']}&{keep}",
                                    className=ids.SNAPSHOT_LINK, title=s["query"],
                                    **{"data-query": s["query"],
                                       "data-state": snapshot_state(s["query"])}))
                     for s in items], className="lecture-snapshots")]


@callback(Output(ids.SNAPSHOT_LIST, "children"), Input(ids.SNAPSHOTS, "data"))
def show_snapshots(snapshots):
    """The keys panel's list."""
    return snapshot_list(snapshots)


@callback(Output(ids.PRESENTER_SNAPSHOTS, "children"), Input(ids.SNAPSHOTS, "data"))
def show_presenter_snapshots(snapshots):
    """The presenter's list, under its steps."""
    return snapshot_list(snapshots)


# the URL: the state shown and the snapshots (replacing the lecture's own URL writer)
clientside_callback(ClientsideFunction("lecture", "writeUrl"),
                    Output(ids.SINK, "children"), Input(ids.QUERY, "data"),
                    Input(ids.SNAPSHOTS, "data"), prevent_initial_call=True)
