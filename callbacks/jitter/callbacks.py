"""Jitter page callbacks: controls -> bnviz.views.jitter / bnviz.views.bnstats -> figure dicts
(:mod:`callbacks.jitter.figures`)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import asdict, fields

import numpy as np
from dash import Input, Output, State, callback, dcc, html, no_update

from bnviz.caps import JITTER_MAX_NETWORK_BYTES, JITTER_MAX_REGIONS, PAGE_SEED_MAX
from bnviz.core.limits import PartitionTooLarge
from bnviz.core.network import random_network
from bnviz.params import JitterParams, TrainingJobParams, parse
from bnviz.params.cost import forward_seconds, partition_seconds
from bnviz.params.jitter import JitterNetwork
from bnviz.params.renames import current_params
from bnviz.records.store import Job, open_store
from bnviz.service.cache import memoize
from bnviz.views.jitter import (
    JITTER_LIMITS,
    binary_task,
    disagreement_by_batch_size,
    network_unit_statistics,
    run_jitter,
)
from bnviz.views.style import JITTER
from bnviz.views.training_cache import (
    load_trained,
    save_uploaded,
    trained_path,
    training_reference,
)
from bnviz.views.virtual_batch import virtual_curve_point
from bnviz.web.callbacks.background import BackgroundIds, BackgroundRun, register_background
from bnviz.web.callbacks.jitter import ids
from bnviz.web.callbacks.jitter.figures import (
    disagreement_curve,
    figure7_figure,
    jitter_figure,
    margins_figure,
)
from bnviz.web.callbacks.parsing import shown_name, whole_number

#: The network's controls, in the order the callbacks take them: the fields of
#: :class:`~bnviz.params.jitter.JitterNetwork` the page sets (``bnviz jitter``'s flags of the
#: same names).
NETWORK = (ids.DATASET, ids.N_POINTS, ids.DEPTH, ids.WIDTH, ids.WEIGHT_SEED, ids.DATA_SEED)


def _seed(value, name: str) -> int:
    return whole_number(value, name, 0, PAGE_SEED_MAX)


def parse_settings(dataset, n_points, depth, width, weight_seed, data_seed, batch_seed,
                   batch_log2, k, virtual) -> JitterParams:
    """Validate the controls (ValueError with a message for the page)."""
    n_points = whole_number(n_points, "points", *JITTER_LIMITS["n_points"])
    batch = 2 ** whole_number(batch_log2, "batch size", 1, 9)
    if batch > n_points:
        raise ValueError(f"batch size {batch} is larger than the data ({n_points} points)")
    vb = None if virtual in (None, "") else whole_number(virtual, "virtual batch", 2, batch)
    return JitterParams(
        dataset=dataset if dataset in ("moons", "circles", "blobs", "spiral", "gaussian",
                                        "star") else "moons",
        n_points=n_points, data_seed=_seed(data_seed, "data seed"),
        depth=whole_number(depth, "depth", *JITTER_LIMITS["depth"]),
        width=whole_number(width, "width", *JITTER_LIMITS["width"]),
        weight_seed=_seed(weight_seed, "weight seed"), batch_size=batch,
        realizations=whole_number(k, "realisations", *JITTER_LIMITS["realizations"]),
        virtual_batch_size=vb, batch_seed=_seed(batch_seed, "batch seed"))


def _jitter_seconds(settings: JitterParams, trained: str | None) -> float:
    """The estimated seconds of :func:`_computed`: K realisations of the partition and the
    curve's batches (bnviz.service.admission); a trained network as a random one of its
    size would be (its widths are in its settings). Measured: 0.5 s at the defaults (0.3 s
    of it the curve's fixed batch sizes), 1.55 s at 128 realisations of 3 x 16."""
    widths = (settings.width,) * settings.depth
    return (0.3 + settings.realizations * partition_seconds(
        widths, settings.activation, "bn", settings.extent, JITTER_MAX_REGIONS)
        + forward_seconds(settings.n_points * 9 * settings.realizations, widths))


def _figure7_seconds(batch: int, train: int, virtual: int) -> float:
    """The estimated seconds of :func:`_figure7`: 3000 mini-batches of one unit's numbers."""
    return forward_seconds(3000 * batch, (1,))


def _network_figure7_seconds(settings: JitterParams, trained: str | None, layer: int,
                             batch: int, virtual: int) -> float:
    """The estimated seconds of :func:`_network_figure7`: 2000 mini-batches through the
    network's first ``layer`` layers, and ~0.45 s of moments whatever the size (measured:
    0.47 s at layer 1, |B| = 64; 1.3 s at layer 6 of 6 x 32, |B| = 512)."""
    return 0.45 + forward_seconds(2000 * batch, (settings.width,) * min(layer, settings.depth))


@memoize(cost=_jitter_seconds)  # bounded by bytes (BNVIZ_CACHE_MB)
def _computed(settings: JitterParams, trained: str | None):
    data = binary_task(settings.dataset, settings.n_points, settings.data_seed)
    net = (load_trained(trained) if trained else
           random_network(settings.depth, settings.width, settings.activation, settings.alpha,
                          "bn", settings.weight_seed, head_outputs=2))
    result = run_jitter(settings, net=net, data=data)
    curve = disagreement_by_batch_size(settings, net, data)  # real batches: the reference
    virtual = virtual_curve_point(settings, net, data)  # the calibrated virtual batch, or None
    return result, curve, virtual


def virtual_numbers(calibration: dict, batch: int, virtual: int) -> html.P:
    """What the virtual batch's noise was calibrated to, with the numbers the calibration
    measured (:func:`bnviz.views.virtual_batch.calibrate_strength`)."""
    c, k, m = calibration["strength"], calibration["k"], calibration["realisations"]
    found = (f"set to c = {c:.2f} so that the boundary jitters as with real batches of {virtual}"
             if calibration["reachable"] else
             f"at its largest, c = {c:.2f}, still jitters less than real batches of {virtual}")
    return html.P([
        f"Virtual batch B′ = {virtual} in |B| = {batch}: the noise strength c (c = 1: each "
        f"unit's μ and σ² as variable as in a batch of {virtual}) is {found}. Expected "
        f"disagreement of {k} realisations ({m} drawn): real batches of {virtual} ",
        html.B(f"{calibration['target']:.3f}", id="jitter-virtual-target"),
        ", virtual at c = 1 ", html.B(f"{calibration['statistics_matched']:.3f}"),
        f", virtual at c = {c:.2f} ", html.B(f"{calibration['matched']:.3f}",
                                               id="jitter-virtual-matched"),
        f", real batches of {batch} ", html.B(f"{calibration['plain']:.3f}"), "."])


@callback(
    Output(ids.GRAPH, "figure"), Output(ids.CURVE, "figure"), Output(ids.MARGINS, "figure"),
    Output(ids.NUMBERS, "children"), Output(ids.MESSAGE, "children"),
    Output(ids.MESSAGE, "is_open"),
    *(Input(c, "value") for c in NETWORK), Input(ids.BATCH_SEED, "value"),
    Input(ids.BATCH, "value"), Input(ids.REALIZATIONS, "value"), Input(ids.VIRTUAL, "value"),
    Input(ids.TRAINED, "data"),
)
def update_jitter(dataset, n_points, depth, width, weight_seed, data_seed, batch_seed, batch,
                  k, virtual, trained):
    trained = trained if isinstance(trained, str) else None  # a store holds a key
    try:
        s = parse_settings(dataset, n_points, depth, width, weight_seed, data_seed, batch_seed,
                           batch, k, virtual)
        result, curve, virtual_area = _computed(s, trained)
    except (ValueError, PartitionTooLarge) as exc:
        return no_update, no_update, no_update, no_update, str(exc), True
    when = "after training" if trained else "at initialisation"
    title = (JITTER.batches.format(batch=s.batch_size, k=s.realizations) + f", {when}"
             + (f", B′ = {s.virtual_batch_size}" if s.virtual_batch_size else ""))
    box = (-s.extent, s.extent, -s.extent, s.extent)
    fig = jitter_figure(result.boundaries, result.test_boundary, result.data.points,
                        result.data.labels, box, title)
    sizes, areas = [c[0] for c in curve], [c[1] for c in curve]
    finite = result.margins[np.isfinite(result.margins)]
    numbers = html.Div([
        html.P(["disagreement area: ", html.B(f"{result.disagreement_area:.4f}",
                                              id="jitter-area"),
                " of the box (the K realisations do not all agree)"]),
        html.P(["margins (distance from each point to each boundary): mean ",
                html.B(f"{finite.mean():.4f}" if finite.size else "–"), ", min ",
                html.B(f"{finite.min():.4f}" if finite.size else "–")]),
        *([virtual_numbers(result.extra["virtual_calibration"], s.batch_size,
                           s.virtual_batch_size)] if "virtual_calibration" in result.extra
          else []),
        html.P(f"computed in {1000 * result.seconds:.0f} ms on {result.device}",
               className="text-muted"),
    ])
    virtual = None if virtual_area is None else (s.virtual_batch_size, virtual_area)
    return (fig, disagreement_curve(sizes, areas, s.batch_size, virtual),
            margins_figure(result.margins), numbers, "", False)


# ---- training, saving, loading -----------------------------------------------------------

def training_params(dataset, n_points, depth, width, weight_seed, data_seed, batch,
                    train_steps, optimizer, lr) -> dict:
    """The training controls as a ``jitter-training`` job's parameters (ValueError with a
    message for the page)."""
    s = parse_settings(dataset, n_points, depth, width, weight_seed, data_seed, 0, batch, 1,
                       None)
    network = {f.name: getattr(s, f.name) for f in fields(JitterNetwork)}
    job = parse(TrainingJobParams, {**network, "batch_size": s.batch_size,
                                    "train_steps": train_steps, "optimizer": optimizer,
                                    "lr": lr}, {"lr": "learning rate"})
    return asdict(job)


def _training_status(job: Job) -> str:
    """The step and the latest loss of a running training (its metric rows)."""
    steps = int(current_params(TrainingJobParams, job.params)["train_steps"])
    rows = open_store().metrics(job.id)
    loss = rows[-1].get("loss") if rows else None
    shown = f", loss {loss:.3f}" if isinstance(loss, int | float) else ""
    return f"training: step {round(job.progress * steps)} of {steps}{shown}"


def _trained_status(job: Job) -> str:
    accuracy = (job.summary or {}).get("accuracy")
    return "trained" + (f", training accuracy {accuracy:.1%}" if accuracy is not None else "")


start, poll, _ = register_background(BackgroundRun(
    BackgroundIds(start=ids.TRAIN, job=ids.JOB, poll=ids.POLL, progress=ids.PROGRESS,
                  status=ids.STATUS, message=ids.MESSAGE, result=(ids.TRAINED, "data"),
                  progress_label=True),
    job_type="jitter-training",
    controls=[*(State(c, "value") for c in NETWORK), State(ids.BATCH, "value"),
              State(ids.TRAIN_STEPS, "value"), State(ids.OPTIMIZER, "value"),
              State(ids.LR, "value")],
    params=training_params, running=_training_status, done=_trained_status,
    result=lambda job: training_reference(job.id), failed="training failed: ",
    missing="training not found (its files were removed?)", keep_message=True))


@callback(Output(ids.TRAINED, "data", allow_duplicate=True),
          Output(ids.STATUS, "children", allow_duplicate=True),
          Output(ids.PROGRESS, "value", allow_duplicate=True),
          Input(ids.UNTRAIN, "n_clicks"), *(Input(c, "value") for c in NETWORK),
          prevent_initial_call=True)
def back_to_initialisation(*_):
    """Another task or network (or the button) brings the page back to initialisation."""
    return None, "at initialisation", 0


@callback(Output(ids.DOWNLOAD, "data"),
          Output(ids.MESSAGE, "children", allow_duplicate=True),
          Output(ids.MESSAGE, "is_open", allow_duplicate=True),
          Input(ids.SAVE, "n_clicks"), State(ids.TRAINED, "data"), prevent_initial_call=True)
def save(_, trained):
    """Download the trained network's .npz; say why when there is none to download."""
    if not trained:
        return no_update, "nothing to save: train a network (or load one) first", True
    try:
        path = trained_path(trained)
    except ValueError:  # not a key: a tampered store
        return no_update, "nothing to save: train a network (or load one) first", True
    if not path.is_file():  # the cache was cleared, or another server without this disk
        return no_update, ("the trained network is no longer on this server (its cache was "
                           "cleared): train it again"), True
    return dcc.send_file(str(path), filename="bnviz-trained.npz"), no_update, no_update


@callback(Output(ids.TRAINED, "data", allow_duplicate=True),
          Output(ids.STATUS, "children", allow_duplicate=True),
          Input(ids.LOAD, "contents"), State(ids.LOAD, "filename"),
          prevent_initial_call=True)
def load(contents, filename):
    """Load a trained network (.npz with W1..WL, head_W, head_b); never unpickled."""
    name = shown_name(filename)
    try:
        if not isinstance(contents, str) or "," not in contents or not isinstance(
                filename, str) or not filename.lower().endswith(".npz"):
            raise ValueError("expected an .npz file")
        if len(contents) > JITTER_MAX_NETWORK_BYTES * 4 // 3 + 100:
            raise ValueError(f"larger than {JITTER_MAX_NETWORK_BYTES // 1_000_000} MB")
        raw = base64.b64decode(contents.split(",", 1)[1], validate=True)
        key = save_uploaded(raw)
    except (ValueError, binascii.Error) as exc:
        return no_update, html.Span(f"{name}: {exc}", className="text-danger")
    return key, f"loaded {name}"


# ---- Figure 7 -----------------------------------------------------------------------------

@memoize(cost=_figure7_seconds)
def _figure7(batch: int, train: int, virtual: int):
    from bnviz.views.bnstats import figure7

    return figure7(batch_size=batch, train_size=train, samples=3000,
                   virtual_batch_size=virtual, data_seed=0, batch_seed=0)


def _table(report: dict) -> html.Table:
    head = html.Thead(html.Tr([html.Th(h) for h in (
        "unit", "", "empirical var", "analytical var (eq. 13)", "noise-controlled var",
        "Luo et al. var (of μ; of σ, not σ²)")]))
    rows = []
    for i, u in enumerate(report["units"]):
        for key, label, luo in (("mu", "μ", u["luo"]["mu_var"]),
                                ("sigma2", "σ²", u["luo"]["sigma_var"])):
            q = u[key]
            rows.append(html.Tr([html.Td(str(i + 1)), html.Td(label)] + [
                html.Td(f"{v:.4g}" if v is not None else "–") for v in (
                    q["empirical_var"], q["analytical_var"], q["noise_controlled_var"], luo)]))
    caption = html.Caption(f"{report['samples']} mini-batches of {report['batch_size']} "
                           f"from {report['train_size']} points", className="caption-top")
    return html.Table([caption, head, html.Tbody(rows)], className="table table-sm")


@memoize(cost=_network_figure7_seconds)
def _network_figure7(settings: JitterParams, trained: str | None, layer: int, batch: int,
                     virtual: int):
    data = binary_task(settings.dataset, settings.n_points, settings.data_seed)
    net = (load_trained(trained) if trained else
           random_network(settings.depth, settings.width, settings.activation, settings.alpha,
                          "bn", settings.weight_seed, head_outputs=2))
    if layer > net.depth:
        raise ValueError(f"the network has {net.depth} layers")
    return network_unit_statistics(net, data.points, layer, batch, 2000, virtual,
                                   batch_seed=0)


@callback(Output(ids.F7_GRAPH, "figure"), Output(ids.F7_TABLE, "children"),
          Input(ids.F7_SOURCE, "value"), Input(ids.F7_BATCH, "value"),
          Input(ids.F7_TRAIN, "value"), Input(ids.F7_VIRTUAL, "value"),
          *(Input(c, "value") for c in NETWORK), Input(ids.TRAINED, "data"))
def update_figure7(source, batch, train, virtual, dataset, n_points, depth, width, weight_seed,
                   data_seed, trained=None):
    """The paper's Figure 7 setup, or the first units of a layer of this page's network.
    The sliders hold log2 of the batch size and log10 of the training set size."""
    trained = trained if isinstance(trained, str) else None  # a store holds a key
    try:
        batch = 2 ** whole_number(batch, "batch size", 1, 9)
        train = 10 ** whole_number(train, "training set", 2, 5)
        if source in (None, "paper"):
            train = whole_number(train, "training set", 2, 100_000)
            batch = whole_number(batch, "batch size", 2, train)
            virtual = whole_number(virtual, "virtual batch", 2, batch)
            report, samples = _figure7(batch, train, virtual)
        else:
            layer = whole_number(source, "layer", 1, JITTER_LIMITS["depth"][1])
            s = parse_settings(dataset, n_points, depth, width, weight_seed, data_seed, 0, 1, 1,
                               None)
            batch = whole_number(batch, "batch size", 2, s.n_points)
            virtual = whole_number(virtual, "virtual batch", 2, batch)
            report, samples = _network_figure7(s, trained, layer, batch, virtual)
    except ValueError as exc:
        return no_update, html.Div(str(exc), className="text-danger")
    return figure7_figure(samples, report), _table(report)
