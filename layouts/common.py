"""Small component helpers shared by the pages' layouts."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import html


def labelled_row(label: str, control) -> dbc.Row:
    """A control with its label on the left."""
    return dbc.Row([dbc.Col(html.Span(label, className="small"), width=5),
                    dbc.Col(control, width=7)], className="mb-2 align-items-center")


def number_input(id_: str, value, lo, hi, step=1) -> dbc.Input:
    """A small debounced number box (updates on Enter or blur, not on every key)."""
    return dbc.Input(id=id_, type="number", min=lo, max=hi, step=step, value=value,
                     debounce=True, size="sm")
