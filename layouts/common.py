"""Small component helpers shared by the pages' layouts."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dcc, html

#: A control keeps what the user set while they visit other pages (Dash's persistence, kept
#: per browser tab): pages keep their state across navigation (issue 16).
PERSIST = {"persistence": True, "persistence_type": "session"}
#: A store of a page's result or running job, kept the same way (its callbacks draw it again,
#: or poll the job again, when the page is opened again).
KEPT = {"storage_type": "session"}

#: A spinner shows over anything that takes longer than this to answer (issue 16: nothing
#: over 300 ms may look frozen); quicker answers show none, so nothing flickers.
SPINNER_DELAY_MS = 300


def graph(id_: str, height: str, **config) -> dcc.Loading:
    """A page's graph (no plotly logo), under a spinner that shows after SPINNER_DELAY_MS."""
    return loading(dcc.Graph(id=id_, style={"height": height},
                             config={"displaylogo": False, **config}))


def loading(child) -> dcc.Loading:
    """``child`` under the pages' one spinner (shown after SPINNER_DELAY_MS)."""
    return dcc.Loading(child, delay_show=SPINNER_DELAY_MS, type="dot")


def labelled_row(label: str, control) -> dbc.Row:
    """A control with its label on the left."""
    return dbc.Row([dbc.Col(html.Span(label, className="small"), width=5),
                    dbc.Col(control, width=7)], className="mb-2 align-items-center")


def number_input(id_: str, value, lo, hi, step=1) -> dbc.Input:
    """A small debounced number box (updates on Enter or blur, not on every key)."""
    return dbc.Input(id=id_, type="number", min=lo, max=hi, step=step, value=value,
                     debounce=True, size="sm", **PERSIST)


def run_controls(label: str, *, start: str, cancel: str, progress: str, status: str,
                 poll: str, job: str, result: str, interval_ms: int,
                 bar_height: str) -> list:
    """A page's background run as it shows: start and cancel buttons, the progress bar, the
    status line, the poll interval and the kept job and result stores (the ids that
    :class:`callbacks.background.BackgroundIds` names)."""
    return [
        dbc.ButtonGroup([dbc.Button(label, id=start, size="sm", color="primary"),
                         dbc.Button("cancel", id=cancel, size="sm", color="secondary",
                                    outline=True)], className="mb-2"),
        dbc.Progress(id=progress, value=0, className="mb-1", style={"height": bar_height}),
        html.Div(id=status, className="small text-muted"),
        dcc.Interval(id=poll, interval=interval_ms, disabled=True),
        dcc.Store(id=job, **KEPT),
        dcc.Store(id=result, **KEPT),
    ]
