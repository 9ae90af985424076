"""Layout of the partition explorer (home page): controls left, views centre, numbers right.

A component tree only: ``layout`` receives parsed state (from the URL) and places it in the
controls; callbacks/explorer/ (its URL state, figures and callbacks) does the rest.
"""

from __future__ import annotations

import math

import dash_bootstrap_components as dbc
from dash import dcc, html

import bnviz.web.callbacks.explorer.callbacks  # noqa: F401  (registers the page's callbacks)
import bnviz.web.callbacks.explorer.training  # noqa: F401  (registers the page's callbacks)
from bnviz.caps import OPTIMIZERS, TRAIN_LIMITS, TRAIN_STEPS_PER_FRAME
from bnviz.core.network import ACTIVATIONS, MODES
from bnviz.data.datasets import DATASETS
from bnviz.params import PartitionParams
from bnviz.params.partition import WEIGHTS
from bnviz.views.explorer import EXPLORER_LIMITS, PRESETS
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer.state import initial_state
from bnviz.web.layouts.common import graph

MODE_LABELS = {"bn": "batch norm", "zero_bias": "zero bias", "random_bias": "random bias"}
SCOPE_LABELS = {"all": "all layers", "layer": "one layer", "unit": "one unit"}
WEIGHT_LABELS = {"random": "random", "trained": "trained (Figure 9)"}

EXPLANATIONS = {
    "space": [
        html.B("Figure 1, one layer at a time. "),
        "Regions are filled by activation pattern; the highlighted layer's folded hyperplanes "
        "are blue, earlier layers gray (BN paper eq. 10-11). With BN, every layer's "
        "hyperplanes pass through the centroid of that layer's input batch (Corollary 2), so "
        "layer 1 is a central arrangement with exactly 2·D₁ regions. The mu slider blends "
        "μ = t·μ_BN: at t = 1 each hyperplane sits at the total-least-squares optimum "
        "(Theorem 1). Click the plot to add a data point where you click. With “TLS "
        "colours” (Figure 9), layer 1 and the highlighted layer are shown side by side, each "
        "facet coloured by its unit's mean squared distance from the layer's input batch to "
        "its hyperplane, on each layer's own scale (eq. 8): σ²/‖w‖² at μ = batch mean, the "
        "distance at the moved μ once the sliders move (the colour bars say which). Hover a "
        "facet for its numbers.",
    ],
    "layers": [
        html.B("Figure 1, all layers. "),
        "One column per layer: that layer's folded hyperplanes in blue, earlier ones in gray. "
        "The rows use the same random weights without and with BN: without BN the partition "
        "ignores the data; with BN it concentrates on the data (Section 3.3).",
    ],
    "unit": [
        html.B("Figure 2a. "),
        "The chosen unit in its own input space: the histogram of ⟨w, z⟩ over the batch and "
        "the hyperplane at μ (orange). Right: the mean squared distance from the batch to the "
        "hyperplane, a parabola in μ with its minimum σ²/‖w‖² at the BN mean (dashed) — "
        "Theorem 1, eq. 7-9. Move the mu slider to slide the hyperplane along it.",
    ],
    "training": [
        html.B("Watch it learn. "),
        "Play trains the network above on the data (classes mod 2, a two-logit head) and "
        "draws the exact partition after every few steps: earlier layers' facets gray, the "
        "last layer's blue, the decision boundary red over its previous position (light "
        "gray). With BN each mini-batch is normalised by its own statistics (eq. 3-4); a "
        "frame uses the whole data set's. “BN vs no BN” trains the same initial weights with "
        "BN, with zero bias and with random bias (biases learned), on the same mini-batches: "
        "with BN the partition starts on the data and follows it; without BN it has to "
        "migrate there (the lowest curve: the mean distance from the data to the boundary). "
        "Replay redraws any recorded frame. Changing the network or the data starts again.",
    ],
}


def _row(label: str, control, hint: str | None = None) -> dbc.Row:
    return dbc.Row([
        dbc.Col(html.Span(label, title=hint, className="small"), width=5),
        dbc.Col(control, width=7),
    ], className="mb-2 align-items-center")


def _int_input(id_: str, value, lo, hi) -> dbc.Input:
    return dbc.Input(id=id_, type="number", min=lo, max=hi, step=1, value=value, debounce=True,
                     size="sm")


def _select(id_: str, value: str, options, labels=None) -> dbc.Select:
    labels = labels or {}
    return dbc.Select(id=id_, value=value, size="sm",
                      options=[{"label": labels.get(o, o), "value": o} for o in options])


def _slider(id_: str, lo: float, hi: float, step: float, value: float, marks: dict,
            transform: str | None = None) -> dcc.Slider:
    """A slider that updates while dragging; ``transform`` names a JS function in
    assets/explorer.js that formats its tooltip (the sigma slider is log2 of the factor)."""
    tooltip = {"placement": "bottom"} | ({"transform": transform} if transform else {})
    return dcc.Slider(id=id_, min=lo, max=hi, step=step, value=value, marks=marks,
                      updatemode="drag", tooltip=tooltip, allow_direct_input=transform is None)


def presets(caption: str) -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        html.H6("Presets: the paper's figures", className="text-muted"),
        html.Div([dbc.Button(p.label, id={"type": ids.PRESET, "key": p.key}, size="sm",
                             color="primary", outline=True, className="me-1 mb-1")
                  for p in PRESETS.values()]),
        html.P(caption, id=ids.CAPTION, className="small mb-0 mt-1"),
    ]), className="mb-2")


def network_controls(s: PartitionParams) -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        html.H6("Network", className="text-muted"),
        html.Div([dbc.Label("depth L", className="small"),
                  _slider(ids.DEPTH, 1, EXPLORER_LIMITS["depth"][1], 1, s.depth,
                          {i: str(i) for i in (1, 2, 4, 6, 8, 10, 12)})]),
        _row("width", _int_input(ids.WIDTH, s.width, *EXPLORER_LIMITS["width"])),
        _row("activation", _select(ids.ACTIVATION, s.activation, ACTIVATIONS)),
        _row("leaky slope α", dbc.Input(id=ids.ALPHA, type="number", min=0.01, max=0.99,
                                        step=0.01, value=s.alpha, debounce=True, size="sm")),
        _row("mode", _select(ids.MODE, s.mode, MODES, MODE_LABELS)),
        _row("weight seed", dbc.InputGroup([
            dbc.Input(id=ids.WEIGHT_SEED, type="number", min=0, step=1, value=s.weight_seed,
                      debounce=True, size="sm"),
            dbc.Button("resample", id=ids.RESAMPLE, size="sm", color="secondary",
                       outline=True)], size="sm")),
        _row("weights", _select(ids.WEIGHTS, s.weights, WEIGHTS, WEIGHT_LABELS),
             "random: He-normal from the weight seed; trained: those weights trained with BN "
             "on the data (500 Adam steps, about a second the first time)"),
    ]), className="mb-2")


def data_controls(s: PartitionParams) -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        html.H6("Data", className="text-muted"),
        _row("data set", _select(ids.DATASET, s.dataset, DATASETS)),
        _row("points", _int_input(ids.N_POINTS, s.n_points, *EXPLORER_LIMITS["n_points"])),
        _row("data seed", _int_input(ids.DATA_SEED, s.data_seed, 0, None)),
        _row("shift x, y", dbc.InputGroup([
            dbc.Input(id=cid, type="number", min=lo, max=hi, step=0.1, value=value,
                      debounce=True, size="sm")
            for cid, value in ((ids.SHIFT_X, s.shift_x), (ids.SHIFT_Y, s.shift_y))
            for lo, hi in (EXPLORER_LIMITS["shift"],)], size="sm"),
             "move the data off the origin: BN's layer-1 lines meet at the data's centroid, "
             "zero bias's at the origin"),
        dcc.Upload(id=ids.UPLOAD, max_size=1_000_000, multiple=False,
                   children=html.Div(["Drop or ", html.A("choose a CSV"), " (x, y[, label])"]),
                   className="upload-box small"),
        html.Div(id=ids.UPLOAD_STATUS, className="small text-muted"),
        dbc.Button("clear added points", id=ids.CLEAR_POINTS, size="sm", color="link",
                   className="p-0"),
    ]), className="mb-2")


def bn_sliders(s: PartitionParams) -> dbc.Card:
    """The mu and sigma sliders, right under the presets: on a 1280x720 screen they were
    below the first screen (issue 31), and they are what the page is about."""
    log2_sigma = math.log2(s.sigma_s)
    return dbc.Card(dbc.CardBody([
        html.Div([dbc.Label("μ slider: μ = t · μ_BN", className="small"),
                  _slider(ids.MU, 0.0, 1.5, 0.01, s.mu_t,
                          {0: "0", 0.5: "0.5", 1: "BN", 1.5: "1.5"})]),
        html.Div([dbc.Label("σ slider: σ = s · σ_BN", className="small"),
                  _slider(ids.SIGMA, -2.0, 2.0, 0.05, log2_sigma,
                          {-2: "¼", -1: "½", 0: "1", 1: "2", 2: "4"}, "sigmaFactor")]),
        dbc.Button("animate μ from 0 to 1", id=ids.ANIMATE, size="sm", color="primary",
                   outline=True),
        dcc.Interval(id=ids.ANIMATE_TIMER, interval=120, disabled=True),
    ]), className="mb-2")


def bn_controls(s: PartitionParams) -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        html.H6("Batch normalization", className="text-muted"),
        _row("batch size", dbc.Input(id=ids.BATCH_SIZE, type="text", debounce=True, size="sm",
                                     value="all" if s.batch_size is None else str(s.batch_size)),
             "2 to the number of points, or 'all' (test-time statistics)"),
        _row("batch seed", dbc.InputGroup([
            dbc.Input(id=ids.BATCH_SEED, type="number", min=0, step=1, value=s.batch_seed,
                      debounce=True, size="sm"),
            dbc.Button("new batch", id=ids.NEW_BATCH, size="sm", color="secondary",
                       outline=True)], size="sm")),
        _row("the μ and σ sliders act on", dbc.RadioItems(
            id=ids.SCOPE, value=s.scope, inline=True, className="small",
            options=[{"label": SCOPE_LABELS[k], "value": k} for k in SCOPE_LABELS])),
        _row("layer l", _int_input(ids.TARGET_LAYER, s.target_layer, 1, s.depth)),
        _row("unit k", _int_input(ids.TARGET_UNIT, s.target_unit + 1, 1, s.width)),
    ]), className="mb-2")


def view_controls(s: PartitionParams, tls: bool, projector: bool) -> dbc.Card:
    return dbc.Card(dbc.CardBody([
        html.H6("View", className="text-muted"),
        html.Div([dbc.Label("highlighted layer", className="small"),
                  _slider(ids.LAYER, 1, s.depth, 1, s.layer,
                          {i: str(i) for i in range(1, s.depth + 1)})]),
        dbc.Switch(id=ids.TLS, label="TLS colours (Figure 9)", value=tls, className="small"),
        dbc.Switch(id=ids.PROJECTOR, label="projector mode", value=projector,
                   className="small"),
    ]), className="mb-2")


def _export_buttons(graph_id: str) -> html.Div:
    return html.Div([
        dbc.Button(f"export {fmt.upper()}", size="sm", color="link", className="p-0 me-2",
                   id={"type": ids.EXPORT, "graph": graph_id, "format": fmt})
        for fmt in ("png", "svg")], className="text-end")


def _graph(graph_id: str, height: str) -> html.Div:
    return html.Div([
        _export_buttons(graph_id),
        graph(graph_id, height, scrollZoom=True),
    ])


def views(view: str) -> dbc.Tabs:
    return dbc.Tabs(id=ids.VIEW, active_tab=view, children=[
        dbc.Tab(label="Input space (Fig. 1, 2b, 2c, 9)", tab_id="space", children=[
            _graph(ids.GRAPH_SPACE, "68vh"),
            html.P(EXPLANATIONS["space"], className="small explain")]),
        dbc.Tab(label="Layers side by side (Fig. 1)", tab_id="layers", children=[
            _graph(ids.GRAPH_LAYERS, "52vh"),
            html.P(EXPLANATIONS["layers"], className="small explain")]),
        dbc.Tab(label="One unit (Fig. 2a)", tab_id="unit", children=[
            _graph(ids.GRAPH_UNIT, "52vh"),
            html.P(EXPLANATIONS["unit"], className="small explain")]),
        dbc.Tab(label="Watch it learn", tab_id="training", children=[training_tab()]),
    ])


def _inline(label: str, control, width: str) -> html.Div:
    """A small labelled control of the training row, label and box on one line."""
    return html.Div([html.Span(label, className="small me-1 text-nowrap"),
                     html.Div(control, style={"width": width})],
                    className="d-flex align-items-center me-2")


def training_tab() -> html.Div:
    """The "Watch it learn" tab: the current network trained on the current data, frame by
    frame (callbacks/explorer/training.py, assets/training.js).  At 1280x720 the buttons, the
    settings, the frame, the curves beside it and the replay slider fit the first screen; BN
    vs no BN and projector type give the frame the column's width and put the curves
    below."""
    lim = TRAIN_LIMITS
    return html.Div([
        html.Div([
            dbc.Button("▶ play", id=ids.TRAIN_PLAY, size="sm", color="primary",
                       className="me-1"),
            dbc.Button("step", id=ids.TRAIN_STEP, size="sm", color="secondary", outline=True,
                       className="me-1"),
            dbc.Button("reset", id=ids.TRAIN_RESET, size="sm", color="secondary",
                       outline=True, className="me-2"),
            html.Span("step 0", id=ids.TRAIN_COUNTER, className="small"),
        ], className="d-flex align-items-center flex-wrap mt-2"),
        html.Div([
            _inline("learning rate", dbc.Input(
                id=ids.TRAIN_LR, type="number", min=0, max=10, step="any", value=0.05,
                debounce=True, size="sm"), "5em"),
            _inline("batch", _int_input(ids.TRAIN_BATCH, 32, *lim["batch_size"]), "4.5em"),
            _inline("optimiser", _select(ids.TRAIN_OPTIMIZER, "adam", OPTIMIZERS,
                                         {"sgd": "SGD + momentum", "adam": "Adam"}), "6.5em"),
            _inline("steps/frame", _int_input(ids.TRAIN_STEPS, 5, *TRAIN_STEPS_PER_FRAME),
                    "4em"),
            dbc.Switch(id=ids.TRAIN_SIDE, label="BN vs no BN", value=False,
                       className="small mb-0"),
        ], className="d-flex align-items-center flex-wrap mt-1 row-gap-1"),
        html.Div(id=ids.TRAIN_MESSAGE, className="small text-danger"),
        html.Div([
            html.Div(graph(ids.GRAPH_TRAIN, "max(250px, calc(100vh - 340px))"),
                     id=ids.TRAIN_FRAME_BOX, className=ids.TRAIN_BOXES[False][0]),
            html.Div(graph(ids.GRAPH_CURVES, "max(250px, calc(100vh - 340px))"),
                     id=ids.TRAIN_CURVES_BOX, className=ids.TRAIN_BOXES[False][1]),
        ], className="row g-0 training-graphs"),
        html.Div([html.Span("replay", className="small me-2"),
                  html.Div(dcc.Slider(id=ids.TRAIN_SCRUB, min=0, max=0, step=1, value=0,
                                      marks=None, tooltip={"placement": "bottom"}),
                           className="flex-grow-1")],
                 className="d-flex align-items-center"),
        html.P(EXPLANATIONS["training"], className="small explain"),
    ])


def layout(settings: PartitionParams, view: str, tls: bool, projector: bool,
           extra_points: list, message: str, caption: str, preset: str | None) -> html.Div:
    return html.Div(id=ids.ROOT, className="projector" if projector else "", children=[
        dcc.Store(id=ids.QUERY),
        dcc.Store(id=ids.PRESET_KEY, data=preset),
        html.Div(id=ids.SINK, hidden=True),
        dcc.Store(id=ids.EXTRA_POINTS, data=extra_points),
        dcc.Store(id=ids.CURSOR),
        dbc.Container(fluid=True, children=[
            dbc.Row([
                dbc.Col([presets(caption), bn_sliders(settings), network_controls(settings),
                         data_controls(settings), bn_controls(settings),
                         view_controls(settings, tls, projector)],
                        lg=3, className="controls mt-2"),
                dbc.Col([
                    dbc.Alert(message, id=ids.MESSAGE, color="warning", is_open=bool(message),
                              dismissable=True, className="py-2 mt-2 mb-1"),
                    html.Div(views(view), id=ids.VIEWS_BOX),
                ], lg=6),
                dbc.Col(html.Div(id=ids.SUMMARY, className="small mt-2"), lg=3),
            ]),
        ]),
    ])


def page_layout(**query) -> html.Div:
    """The explorer page for a URL query (Dash Pages passes the query as keyword arguments;
    callbacks.explorer.state reads it)."""
    return layout(*initial_state(query))


#: The page (layouts.registry registers it).
PAGES = ({"path": "/", "name": "Partition explorer", "order": 0, "layout": page_layout},)
