"""Layout of the density page: Figure 3 (where each layer's facets concentrate)."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dcc, html

import bnviz.web.callbacks.density.callbacks  # noqa: F401  (registers the page's callbacks)
from bnviz.caps import DENSITY_PAGE_LIMITS
from bnviz.data.datasets import DATASETS
from bnviz.params import DensityPageParams, DensityParams, default_layers
from bnviz.web.callbacks.density import ids
from bnviz.web.callbacks.plotting import placeholder
from bnviz.web.layouts.common import PERSIST, labelled_row, loading, number_input, run_controls

EXPLAIN = [
    html.B("Figure 3. "),
    "Darker means more facets of that layer pass within ε of the point (each panel "
    "normalised by its maximum, printed). Zero bias gives a central arrangement around the "
    "origin, random bias spreads the partition everywhere, and BN pulls every layer's facets "
    "onto the data (section 3.3). The plot below gives the near-data ratio per layer: the "
    "mean concentration within r of a data point over the mean in the box.",
]


def layout(**_query) -> dbc.Container:
    """The page (Dash Pages passes the URL's query; this page keeps no state there). Each
    control starts at its field's default in :class:`~bnviz.params.DensityPageParams` (the
    names and defaults of ``bnviz density``'s flags)."""
    s, lim = DensityPageParams(), DENSITY_PAGE_LIMITS
    controls = dbc.Card(dbc.CardBody([
        html.H6("Network and data (the paper: 11 x 1024, 50 star points)",
                className="text-muted"),
        labelled_row("depth", number_input(ids.DEPTH, s.depth, *lim["depth"])),
        labelled_row("width", dbc.Select(id=ids.WIDTH, **PERSIST, value=str(s.width), size="sm",
                                         options=[{"label": str(w), "value": str(w)}
                                                  for w in (16, 64, 128, 256, 512, 1024)])),
        labelled_row("weight seed", number_input(ids.WEIGHT_SEED, s.weight_seed,
                                                 *lim["weight_seed"])),
        labelled_row("data set", dbc.Select(id=ids.DATASET, **PERSIST, value=s.dataset,
                                            size="sm", options=[{"label": d, "value": d}
                                                                for d in DATASETS])),
        labelled_row("points", number_input(ids.N_POINTS, s.n_points, *lim["n_points"])),
        labelled_row("data seed", number_input(ids.DATA_SEED, s.data_seed, *lim["data_seed"])),
        html.H6("Concentration", className="text-muted mt-3"),
        labelled_row("layers shown", dbc.Input(id=ids.LAYERS, value=",".join(
            map(str, default_layers(s.depth))), debounce=True, size="sm", **PERSIST)),
        labelled_row("grid", dbc.Select(id=ids.GRID, **PERSIST, value=str(s.grid), size="sm",
                                        options=[{"label": str(g), "value": str(g)}
                                                 for g in (64, 128, 256, 512)])),
        labelled_row("ε (grid cells)", number_input(ids.EPS, s.eps, *lim["eps"], 0.5)),
        labelled_row("near: r", number_input(ids.RADIUS, DensityParams().radius, 0.01, 3,
                                             0.01)),
        *run_controls("compute", start=ids.COMPUTE, cancel=ids.CANCEL, progress=ids.PROGRESS,
                      status=ids.STATUS, poll=ids.POLL, job=ids.JOB, result=ids.RESULT,
                      interval_ms=500, bar_height="18px"),
    ]), className="mt-2")
    return dbc.Container(fluid=True, children=[dbc.Row([
        dbc.Col(controls, lg=3),
        dbc.Col([
            dbc.Alert(id=ids.MESSAGE, color="warning", is_open=False, dismissable=True,
                      className="py-2 mt-2 mb-1"),
            loading(dcc.Graph(id=ids.HEATMAPS, style={"height": "70vh"},
                              config={"displaylogo": False},
                              figure=placeholder("press compute (left) to count the facets "
                                                 "near the data"))),
            loading(dcc.Graph(id=ids.RATIOS, style={"height": "28vh"},
                              config={"displaylogo": False},
                              figure=placeholder("the near-data ratio per layer appears "
                                                 "here"))),
            html.P(EXPLAIN, className="small explain"),
        ], lg=9),
    ])])


#: The page (layouts.registry registers it).
PAGES = ({"path": "/density", "name": "Density (Fig. 3)", "order": 2, "layout": layout,
          "lecture_step": "fig3"},)
