"""Layout of the /slice page: the exact partition of a trained image network on a plane
through three test images, BN in eval or train mode, beside the same network trained
without BN (issue 27)."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dcc, html

import bnviz.web.callbacks.slice.callbacks  # noqa: F401  (registers the page's callbacks)
import bnviz.web.callbacks.slice.map  # noqa: F401  (the map tab's callbacks)
from bnviz.caps import (
    ARCHS,
    SLICE_JOB_MAX_REGIONS,
    SLICE_LIMITS,
    SLICE_MAX_UPLOAD_BYTES,
    SLICE_PAGE_MAX_REGIONS,
)
from bnviz.data.imagedata import STANDARD_DATASETS
from bnviz.replication.store import OutcomesError, read_outcomes
from bnviz.web.callbacks.slice import ids
from bnviz.web.layouts.common import (
    KEPT,
    PERSIST,
    graph,
    labelled_row,
    loading,
    number_input,
    run_controls,
)
from bnviz.web.layouts.replication import slice_concentration_section

#: The window's half-width the page starts with: 0, the default window, which holds the three
#: images with a margin whatever the network (a job's, an upload of any input shape: it is
#: laid from the images' coordinates on the plane, bnviz.slices.plane.Plane.default_window).
#: A fixed half-width held none of them: the images lie some 5 apart on a digits plane and
#: some 50 on a 3x32x32 one.  A trained network's default window can hold millions of
#: regions: refused before any cut, with the estimate, and a smaller +-E is then chosen.
DEFAULT_EXTENT = 0.0

EXPLAIN = [
    html.B("Slices of image networks. "),
    "The plane x(a, b) = origin + a u + b v goes through three test images (★; origin at "
    "their centroid, u, v by Gram-Schmidt). Inside each region every unit is affine in (a, b), "
    "so the partition is exact: gray lines are the facets of every layer up to the one chosen, "
    "the coloured line the decision boundary. In train mode BN uses a mini-batch's mean and "
    "biased variance (eq. 3); the slice's own points are not in the batch, so the network "
    "stays piecewise affine on the plane, and K mini-batches give K boundaries (Figure 6 on "
    "real images). Hover: the image at that point; click: its region.",
]


def controls() -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        labelled_row("job", dbc.Select(id=ids.SOURCE, size="sm", **PERSIST)),
        html.Details([
            html.Summary("or upload a network", className="small"),
            dcc.Upload(id=ids.UPLOAD, max_size=SLICE_MAX_UPLOAD_BYTES, className="upload-box small",
                       children=html.Div(".onnx, or .safetensors of a bnviz architecture")),
            html.Div(dbc.Row([dbc.Col(dbc.Select(id=ids.UPLOAD_ARCH, size="sm", value=ARCHS[0],
                                        options=[{"label": a, "value": a} for a in ARCHS]),
                             width=6),
                     dbc.Col(dbc.Select(id=ids.DATA, size="sm", value="digits", **PERSIST,
                                        options=[{"label": d, "value": d}
                                                 for d in STANDARD_DATASETS]), width=6)],
                             className="g-1 mt-1"),
                     title="the architecture of a .safetensors file; the images an upload is "
                           "sliced through"),
        ], className="mb-2"),
        dcc.Store(id=ids.UPLOADS, **KEPT),
        labelled_row("network", dbc.Select(id=ids.ARM, size="sm", **PERSIST)),
        labelled_row("beside it", dbc.Select(id=ids.OTHER, size="sm", **PERSIST)),
        labelled_row("images", dbc.InputGroup([
            dbc.Input(id=ids.IMAGES, value="0,1,2", size="sm", debounce=True, **PERSIST),
            dbc.Button("random", id=ids.RANDOM, size="sm", color="secondary", outline=True)],
            size="sm")),
        html.Div(id=ids.THUMBS, className="d-flex gap-2 mb-1"),
        labelled_row("BN", dbc.RadioItems(id=ids.BN, inline=True, value="eval", **PERSIST,
                                          options=[{"label": "eval", "value": "eval"},
                                                   {"label": "train", "value": "train"}])),
        dbc.Row([dbc.Col(html.Span("K", className="small", title="mini-batches (train mode)"),
                         width=1),
                 dbc.Col(number_input(ids.BATCHES, 1, *SLICE_LIMITS["batches"]), width=4),
                 dbc.Col(html.Span("window ±E", className="small",
                                   title="0 (the default): the three images with a margin; "
                                         "a trained network's is often millions of regions, "
                                         "refused with the estimate: then a smaller ±E about "
                                         "their centroid"), width=3),
                 dbc.Col(number_input(ids.EXTENT, DEFAULT_EXTENT, 0, 1e6, "any"), width=4)],
                className="mb-2 g-1 align-items-center"),
        *run_controls("cut", start=ids.COMPUTE, cancel=ids.CANCEL, progress=ids.PROGRESS,
                      status=ids.STATUS, poll=ids.POLL, job=ids.JOB, result=ids.RESULT,
                      interval_ms=400, bar_height="14px"),
        tiled_controls(),
    ]), className="mt-2")


def tiled_controls() -> html.Div:
    """A window over the page's cap, cut as a slice job: offered (shown) once the page's cut
    was refused over its cap, or while this tab has such a job."""
    return html.Div([
        html.Hr(className="my-2"),
        *run_controls("run as a job", start=ids.TILED_COMPUTE, cancel=ids.TILED_CANCEL,
                      progress=ids.TILED_PROGRESS, status=ids.TILED_STATUS,
                      poll=ids.TILED_POLL, job=ids.TILED_JOB, result=ids.TILED_RESULT,
                      interval_ms=1000, bar_height="10px"),
        html.P(f"Over the page's {SLICE_PAGE_MAX_REGIONS:,} regions: a slice job cuts up to "
               f"{SLICE_JOB_MAX_REGIONS:,} as tiles on the job workers, each stored when done "
               "(a rerun cuts only the missing ones); its counts per layer show here.",
               className="small text-muted mb-0 mt-1"),
    ], id=ids.TILED_BOX, hidden=True)


def experiment() -> html.Details:
    """What the stored slice experiment found (bn-slice-concentration): every network's
    value, a dot each, as the replication page shows it; folded until asked for."""
    try:
        outcome = read_outcomes().get("bn-slice-concentration")
    except OutcomesError:
        outcome = None
    return html.Details([
        html.Summary("Our experiment: more regions on the data with BN?", className="small"),
        slice_concentration_section(outcome, ids.EXPERIMENT, ids.EXPERIMENT_GRAPH, "420px"),
    ], id=ids.EXPERIMENT_BOX, className="mt-2")


def cut_tab() -> html.Div:
    """The page's own slice: its layer, the networks side by side, hover, click, density."""
    return html.Div([
        html.Div([html.Span("layer", className="small me-2"),
                  html.Div(dcc.Slider(id=ids.LAYER, min=1, max=2, step=1, value=1,
                                      marks=None, allow_direct_input=False, **PERSIST),
                           className="flex-grow-1")],
                 className="d-flex align-items-center mt-1"),
        graph(ids.GRAPH, "50vh", scrollZoom=True),
        dbc.Row([
            dbc.Col(html.Div(id=ids.HOVER, className="small d-flex gap-2"), width=3),
            dbc.Col([html.Div(id=ids.REGION, className="small text-break"),
                     html.Details([html.Summary("what is shown", className="small"),
                                   html.P(EXPLAIN, className="small explain mb-0")],
                                  id=ids.NOTE)], width=4),
            dbc.Col(loading(dcc.Graph(id=ids.DENSITY, style={"height": "19vh"},
                                      config={"displayModeBar": False})), width=5),
        ], className="g-1"),
        experiment(),
    ])


def map_tab() -> html.Div:
    """A finished slice job's partition as a map: raster when the view holds millions of
    regions, cut again exactly (vectors, hover, click) once it holds few enough."""
    return html.Div([
        dbc.Row([
            dbc.Col(dbc.Select(id=ids.MAP_SOURCE, size="sm", **PERSIST), width=6),
            dbc.Col(dbc.Select(id=ids.MAP_PART, size="sm"), width=3),
            dbc.Col(html.Div([html.Span("layer", className="small me-2"),
                              html.Div(dcc.Slider(id=ids.MAP_LAYER, min=1, max=2, step=1,
                                                  value=2, marks=None,
                                                  allow_direct_input=False),
                                       className="flex-grow-1")],
                             className="d-flex align-items-center"), width=3),
        ], className="g-1 mt-1 align-items-center"),
        graph(ids.MAP_GRAPH, "64vh", scrollZoom=True),
        dcc.Store(id=ids.MAP_VIEW), dcc.Store(id=ids.MAP_READY), dcc.Store(id=ids.MAP_ZOOM),
        dbc.Row([
            dbc.Col(html.Div(id=ids.MAP_HOVER, className="small d-flex gap-2"), width=3),
            dbc.Col([html.Div(id=ids.MAP_NOTE, className="small"),
                     html.Div(id=ids.MAP_REGION, className="small text-break")], width=9),
        ], className="g-1"),
    ])


def layout(**_query) -> dbc.Container:
    """The page (it keeps no state in the URL)."""
    return dbc.Container(fluid=True, children=[dbc.Row([
        dbc.Col(controls(), lg=3),
        dbc.Col([
            dbc.Alert(id=ids.MESSAGE, color="warning", is_open=False, dismissable=True,
                      className="py-1 mt-2 mb-1 small"),
            dbc.Tabs(id=ids.TABS, active_tab="cut", className="small mt-1", children=[
                dbc.Tab(cut_tab(), tab_id="cut", label="cut"),
                dbc.Tab(map_tab(), tab_id="map", label="map of a slice job")]),
        ], lg=9),
    ])])


#: The page (layouts.registry registers it).
PAGES = ({"path": "/slice", "name": "Slices", "order": 4, "layout": layout},)
