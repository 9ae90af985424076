"""Layout of the partition explorer (home page): controls on the left, the input space right."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dcc, html

from bnviz.datasets import DATASETS
from bnviz.network import ACTIVATIONS, MODES
from layouts.ids import Explorer as ids

MODE_LABELS = {"bn": "batch norm", "zero_bias": "zero bias", "random_bias": "random bias"}


def _field(label: str, control) -> dbc.Row:
    return dbc.Row([dbc.Label(label, width=5, className="small"), dbc.Col(control, width=7)],
                   className="mb-2 align-items-center")


def controls() -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        html.H6("Network", className="text-muted"),
        _field("depth L", dbc.Input(id=ids.DEPTH, type="number", min=1, max=12, step=1,
                                    value=4, debounce=True)),
        _field("width", dbc.Input(id=ids.WIDTH, type="number", min=2, max=64, step=1, value=6,
                                  debounce=True)),
        _field("activation", dbc.Select(id=ids.ACTIVATION, value="leaky_relu",
                                        options=[{"label": a, "value": a} for a in ACTIVATIONS])),
        _field("mode", dbc.Select(id=ids.MODE, value="bn",
                                  options=[{"label": MODE_LABELS[m], "value": m} for m in MODES])),
        _field("weight seed", dbc.Input(id=ids.SEED, type="number", min=0, step=1, value=0,
                                        debounce=True)),
        html.H6("Data", className="text-muted mt-3"),
        _field("data set", dbc.Select(id=ids.DATASET, value="moons",
                                      options=[{"label": d, "value": d} for d in DATASETS])),
        _field("points", dbc.Input(id=ids.N_POINTS, type="number", min=2, max=2000, step=1,
                                   value=100, debounce=True)),
        _field("BN batch size", dbc.Input(id=ids.BATCH_SIZE, type="text", value="all",
                                          debounce=True)),
        html.H6("View", className="text-muted mt-3"),
        html.Div([dbc.Label("highlighted layer", className="small"),
                  dcc.Slider(id=ids.LAYER, min=1, max=4, step=1, value=4,
                             marks={i: str(i) for i in range(1, 5)})]),
    ]))


def layout() -> dbc.Container:
    return dbc.Container([
        html.H4("Linear regions of a batch-normalized network", className="mt-3"),
        html.P("Folded hyperplanes of the highlighted layer in blue, earlier layers in gray, "
               "data in black, each region filled by its activation pattern (BN paper, "
               "Figure 1).", className="text-muted small"),
        dbc.Row([
            dbc.Col(controls(), md=3),
            dbc.Col([
                dbc.Alert(id=ids.MESSAGE, color="warning", is_open=False, className="py-2"),
                dcc.Loading(dcc.Graph(id=ids.GRAPH, style={"height": "640px"},
                                      config={"displaylogo": False,
                                              "toImageButtonOptions": {"format": "svg"}})),
            ], md=6),
            dbc.Col(html.Div(id=ids.SUMMARY, className="small"), md=3),
        ]),
    ], fluid=True)
