"""Layout of the jitter page: Figure 6 (decision boundaries across mini-batches) and
Figure 7 (distributions of the BN statistics)."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dcc, html

import bnviz.web.callbacks.jitter.callbacks  # noqa: F401  (registers the page's callbacks)
from bnviz.caps import PAGE_SEED_MAX
from bnviz.params import JitterParams, TrainingJobParams
from bnviz.views.jitter import JITTER_LIMITS
from bnviz.web.callbacks.jitter import ids
from bnviz.web.layouts.common import KEPT, PERSIST, graph, labelled_row, number_input

BINARY_SETS = ("moons", "circles", "blobs", "spiral", "gaussian", "star")

EXPLAIN_6 = [
    html.B("Figure 6. "),
    "Each gray line is the exact decision boundary of the same network with the BN statistics "
    "of one mini-batch of size |B| (eq. 3); black uses the statistics of all the data "
    "(test time). Their variances fall like 1/|B| (Proposition 2, eq. 13), so small batches "
    "jitter the boundary more: the paper argues this widens the margin, like dropout. "
    "A virtual batch B′ is noise-controlled BN (section 5): Gaussian noise on every unit's μ "
    "and χ² noise on its σ², layer 1's in closed form (eq. 13), each deeper layer's only what "
    "it still lacks against real batches of B′ once the noise of the layers before has "
    "reached it. Matching each unit's statistics does not make the boundary jitter as a real "
    "batch of B′ does (the noise moves the units independently, a real batch moves them "
    "together), so one strength factor c on all the noise is set, by a few steps of regula "
    "falsi, until K virtual batches disagree as much as K real batches of B′; the numbers "
    "on the right give c and both disagreements, and the curve the virtual batch (◇) at B′.",
]
EXPLAIN_7 = [
    html.B("Figure 7. "),
    "Distributions over many mini-batches of μ and σ² for three units with "
    "Wz ~ N([1, 0, −1], diag([1, 3, 0.1])): empirical (batches drawn from a training set), "
    "analytical (eq. 13, for the biased σ² BN uses), and noise-controlled (virtual batch). "
    "Luo et al.'s Gaussian model of the same statistics is listed beside them.",
]


def controls() -> dbc.Card:
    """The controls, each starting at its field's default in the models ``bnviz jitter``
    uses too (:class:`~bnviz.params.JitterParams`, the training job's
    :class:`~bnviz.params.TrainingJobParams`) and labelled by its name."""
    s, t = JitterParams(), TrainingJobParams()
    lo_k, hi_k = JITTER_LIMITS["realizations"]
    return dbc.Card(dbc.CardBody([
        html.H6("Task and network", className="text-muted"),
        labelled_row("data set", dbc.Select(id=ids.DATASET, **PERSIST, value=s.dataset, size="sm",
                                    options=[{"label": d, "value": d} for d in BINARY_SETS])),
        labelled_row("points", number_input(ids.N_POINTS, s.n_points,
                                            *JITTER_LIMITS["n_points"])),
        labelled_row("data seed", number_input(ids.DATA_SEED, s.data_seed, 0, PAGE_SEED_MAX)),
        labelled_row("depth", number_input(ids.DEPTH, s.depth, *JITTER_LIMITS["depth"])),
        labelled_row("width", number_input(ids.WIDTH, s.width, *JITTER_LIMITS["width"])),
        labelled_row("weight seed", number_input(ids.WEIGHT_SEED, s.weight_seed, 0,
                                                 PAGE_SEED_MAX)),
        html.H6("Mini-batches", className="text-muted mt-3"),
        html.Div([html.Span("batch size |B|", className="small"),
                  dcc.Slider(id=ids.BATCH, **PERSIST, min=1, max=9, step=1,
                             value=s.batch_size.bit_length() - 1,
                             marks={i: str(2**i) for i in range(1, 10)},
                             allow_direct_input=False)]),
        html.Div([html.Span("realisations K", className="small"),
                  dcc.Slider(id=ids.REALIZATIONS, **PERSIST, min=lo_k, max=hi_k, step=1,
                             value=s.realizations,
                             marks={1: "1", 16: "16", 32: "32", 64: "64", 128: "128"},
                             tooltip={"placement": "bottom"})]),
        labelled_row("batch seed", number_input(ids.BATCH_SEED, s.batch_seed, 0,
                                                PAGE_SEED_MAX)),
        labelled_row("virtual batch B′", dbc.Input(id=ids.VIRTUAL, type="number", min=2, step=1,
                                           placeholder="off", debounce=True, size="sm",
                                           value=s.virtual_batch_size, **PERSIST)),
        html.H6("Training", className="text-muted mt-3"),
        labelled_row("train steps", number_input(ids.TRAIN_STEPS, t.train_steps, 1,
                                                 JITTER_LIMITS["train_steps"][1])),
        labelled_row("optimizer", dbc.Select(id=ids.OPTIMIZER, **PERSIST, value=t.optimizer,
                                     size="sm", options=[{"label": o, "value": o}
                                                         for o in ("adam", "sgd")])),
        labelled_row("learning rate", number_input(ids.LR, t.lr, 0.0001, 10, 0.001)),
        dbc.ButtonGroup([
            dbc.Button("train", id=ids.TRAIN, size="sm", color="primary"),
            dbc.Button("back to init", id=ids.UNTRAIN, size="sm", color="secondary",
                       outline=True),
            dbc.Button("save", id=ids.SAVE, size="sm", color="secondary", outline=True),
        ], className="mb-2"),
        dbc.Progress(id=ids.PROGRESS, value=0, label="", className="mb-1",
                     style={"height": "18px"}),
        html.Div(id=ids.STATUS, className="small text-muted", children="at initialisation"),
        dcc.Upload(id=ids.LOAD, max_size=2_000_000, className="upload-box small",
                   children=html.Div(["load a trained network (.npz)"])),
        dcc.Interval(id=ids.POLL, interval=300, disabled=True),
        dcc.Store(id=ids.JOB, **KEPT),
        dcc.Store(id=ids.TRAINED, **KEPT),
        dcc.Download(id=ids.DOWNLOAD),
    ]), className="mt-2")


def figure7_controls() -> dbc.Row:
    sources = [{"label": "the paper's setup", "value": "paper"}] + [
        {"label": f"this network, layer {layer}", "value": str(layer)}
        for layer in range(1, JITTER_LIMITS["depth"][1] + 1)]
    return dbc.Row([
        dbc.Col(labelled_row("units of", dbc.Select(id=ids.F7_SOURCE, value="paper", size="sm",
                                            options=sources, **PERSIST)), md=3),
        dbc.Col([html.Span("batch size", className="small"),
                 dcc.Slider(id=ids.F7_BATCH, **PERSIST, min=1, max=9, step=1, value=6,
                            marks={i: str(2**i) for i in range(1, 10)},
                            allow_direct_input=False)], md=3),
        dbc.Col([html.Span("training set", className="small"),
                 dcc.Slider(id=ids.F7_TRAIN, **PERSIST, min=2, max=5, step=None, value=3,
                            marks={2: "100", 3: "1000", 4: "10⁴", 5: "10⁵"},
                            allow_direct_input=False)], md=3),
        dbc.Col(labelled_row("virtual batch", number_input(ids.F7_VIRTUAL, 32, 2, 1000)), md=3),
    ], className="mt-2")


def layout(**_query) -> dbc.Container:
    """The page (Dash Pages passes the URL's query; this page keeps no state there)."""
    return dbc.Container(fluid=True, children=[dbc.Row([
        dbc.Col(controls(), lg=3),
        dbc.Col([
            dbc.Alert(id=ids.MESSAGE, color="warning", is_open=False, dismissable=True,
                      className="py-2 mt-2 mb-1"),
            dbc.Tabs(active_tab="f6", children=[
                dbc.Tab(label="Decision-boundary jitter (Fig. 6)", tab_id="f6", children=[
                    graph(ids.GRAPH, "62vh"),
                    html.P(EXPLAIN_6, className="small explain")]),
                dbc.Tab(label="BN statistics (Fig. 7)", tab_id="f7", children=[
                    figure7_controls(),
                    graph(ids.F7_GRAPH, "56vh"),
                    html.Div(id=ids.F7_TABLE, className="small"),
                    html.P(EXPLAIN_7, className="small explain")]),
            ]),
        ], lg=6),
        dbc.Col([html.Div(id=ids.NUMBERS, className="small mt-2"),
                 graph(ids.CURVE, "28vh", displayModeBar=False),
                 graph(ids.MARGINS, "28vh", displayModeBar=False)], lg=3),
    ])])


#: The page (layouts.registry registers it).
PAGES = ({"path": "/jitter", "name": "Jitter (Fig. 6, 7)", "order": 1, "layout": layout,
          "lecture_step": "fig6"},)
