"""Debate page callbacks: the claims table and Dannemann & Junike's weight plane."""

from __future__ import annotations

import json

import dash_bootstrap_components as dbc
import numpy as np
from dash import Input, Output, State, callback, ctx, dcc, html, no_update

from bnviz.caps import DANNEMANN_MAX_POINTS
from bnviz.papers import luo
from bnviz.papers.claims import shared_claims
from bnviz.papers.dannemann import weight_plane
from bnviz.papers.ergen import ergen_experiment
from bnviz.papers.landscape import load_landscape
from bnviz.params.cost import always_heavy, luo_seconds
from bnviz.params.landscape import landscape_from_page
from bnviz.records.store import check_job_id
from bnviz.service.admission import ServerBusy, admitted
from bnviz.service.cache import shared_memoize
from bnviz.web.callbacks.background import BackgroundIds, BackgroundRun, register_background
from bnviz.web.callbacks.papers import ids
from bnviz.web.callbacks.papers.content import DJ_EXAMPLE, ERGEN_DATASETS, math_text
from bnviz.web.callbacks.papers.figures import (
    batch_statistics_figure,
    closed_form_figure,
    data_points_figure,
    decision_maps_figure,
    dynamics_figure,
    gap_figure,
    ics_figure,
    landscape_figure,
    normalisation_figure,
    weight_plane_figure,
    whitening_figure,
)
from bnviz.web.callbacks.parsing import finite_number, whole_number


def _value(v) -> str:
    text = json.dumps(v, default=float)
    if isinstance(v, list):
        text = "[" + ", ".join(f"{x:.5g}" if isinstance(x, float) else str(x) for x in v) + "]"
    elif isinstance(v, float):
        text = f"{v:.6g}"
    elif isinstance(v, dict):
        text = "; ".join(f"{k}: {_value(x)}" for k, x in v.items())
    return text


def claims_table(claims: tuple[dict, ...]) -> dbc.Table:
    head = html.Thead(html.Tr([html.Th(h) for h in (
        "claim", "paper", "statement", "paper value", "computed", "holds")]))
    rows = [html.Tr([
        html.Td(html.Code(c["id"]), id=f"claim-{c['id']}"),
        html.Td(c["paper"].split(",")[0]),
        html.Td([math_text(c["statement_tex"], className="claim-statement"),
                 html.Div(c["how"], className="text-muted")]),
        html.Td(_value(c["paper_value"])),
        html.Td(_value(c["computed"])),
        html.Td("holds" if c["holds"] else "does not hold",
                className="text-success fw-bold" if c["holds"] else "text-danger fw-bold"),
    ]) for c in claims]
    return dbc.Table([head, html.Tbody(rows)], size="sm", bordered=True,
                     className="small claims-table")


@callback(Output(ids.CLAIMS, "children"), Input(ids.CLAIMS_REQUEST, "data"))
def show_claims(_request):
    """Fill the claims panel from the disk cache (a web process computes the table when it
    starts); a request that finds it missing computes it under the heavy-work admission. A
    busy server (no turn, or another request computing it) answers one line with the retry
    time, and the panel asks again by itself then (:func:`retry_claims`), never a 5xx."""
    try:
        return claims_table(shared_claims())
    except ServerBusy as exc:
        return busy_panel(exc, ids.CLAIMS_RETRY)


def busy_panel(exc: ServerBusy, retry_id: str) -> list:
    """A busy answer in a panel: its one line, and an interval that fires once after the
    retry time (its callback asks for the panel again)."""
    return [html.P(str(exc), className="text-muted busy-line", role="status"),
            dcc.Interval(id=retry_id, interval=1000 * max(int(exc.retry_after), 1),
                         max_intervals=1)]


@callback(Output(ids.CLAIMS_REQUEST, "data"), Input(ids.CLAIMS_RETRY, "n_intervals"),
          State(ids.CLAIMS_REQUEST, "data"), prevent_initial_call=True)
def retry_claims(_n_intervals, request):
    """The busy answer's retry time has passed: ask for the claims table again (a new value
    of the store that :func:`show_claims` listens to; a count, whatever a crafted request
    sent)."""
    fresh = type(request) is int and 0 <= request < 10**6
    return request + 1 if fresh else 1


def parse_points(rows) -> tuple[np.ndarray, np.ndarray]:
    """The table's rows as inputs (M, 2) and labels (M,); ValueError says which row is bad."""
    if not isinstance(rows, list) or not rows:
        raise ValueError("give at least 3 points")
    if len(rows) > DANNEMANN_MAX_POINTS:
        raise ValueError(f"at most {DANNEMANN_MAX_POINTS} points")
    out = []
    for i, row in enumerate(rows, 1):
        values = [finite_number(row.get(k)) if isinstance(row, dict) else None
                  for k in ("x1", "x2", "y")]
        if any(v is None for v in values):
            raise ValueError(f"point {i}: x1, x2 and y must be numbers")
        out.append(values)
    a = np.array(out)
    return a[:, :2], a[:, 2]


@callback(Output(ids.DJ_GRAPH, "figure"), Output(ids.DJ_NUMBERS, "children"),
          Output(ids.DJ_MESSAGE, "children"), Output(ids.DJ_MESSAGE, "is_open"),
          Input(ids.DJ_POINTS, "data"), Input(ids.DJ_W01, "value"), Input(ids.DJ_W02, "value"),
          Input(ids.DJ_SIGMA, "value"), Input(ids.DJ_AFFINE, "value"))
def update_weight_plane(rows, w01, w02, sigma, affine):
    """Redraw the weight plane; a bad value shows a message and keeps the picture."""
    try:
        x, y = parse_points(rows)
        w0 = [finite_number(w01), finite_number(w02)]
        if None in w0 or max(abs(v) for v in w0) > 100:
            raise ValueError("W0: two numbers between -100 and 100")
        if sigma not in ("biased", "unbiased"):
            raise ValueError("σ: biased or unbiased")
        plane = weight_plane(x, y, np.array(w0), sigma == "unbiased", bool(affine))
    except ValueError as exc:
        return no_update, no_update, str(exc), True
    g = plane.grad_at_w_star
    verdict = ("holds" if plane.lemma_holds else "fails") if plane.lemma_applies else \
        "does not apply (<W0, W*> ≤ 0)"
    numbers = html.Ul([
        html.Li(["W* = ", html.B(f"({plane.w_star[0]:.4g}, {plane.w_star[1]:.4g})"),
                 f", C(W*) = {plane.loss_at_w_star:.5g}, C^(W*) = "
                 f"{plane.bn_loss_at_w_star:.5g}; min C^ = {plane.min_bn_loss:.5g}"]),
        html.Li(["∇C^(W*) = ", html.B(f"({g[0]:.5f}, {g[1]:.5f})", id="dj-gradient"),
                 " (non-zero: W* is not a BN optimum)" if np.hypot(*g) > 1e-9 else ""]),
        html.Li([f"BN minima: the {'line' if plane.both_signs else 'ray'} along "
                 f"({plane.bn_direction[0]:.4f}, {plane.bn_direction[1]:.4f}); nearest to W0: "
                 f"({plane.nearest_bn[0]:.4g}, {plane.nearest_bn[1]:.4g})"]),
        html.Li(["Santurkar et al.'s Lemma 4.5: ‖W0 − W^*‖² = ",
                 html.B(f"{plane.lemma_lhs:.5g}", id="dj-lemma-lhs"), " ≤ ‖W0 − W*‖² − "
                 "(‖W*‖² − ⟨W*, W0⟩)²/‖W*‖² = ", html.B(f"{plane.lemma_rhs:.5g}"),
                 " — ", html.B(verdict, id="dj-lemma-verdict",
                               className="text-success" if plane.lemma_holds and
                               plane.lemma_applies else "text-danger")]),
    ])
    return weight_plane_figure(plane), numbers, "", False


def dragged_shape(relayout) -> tuple[int, float, float] | None:
    """(shape index, centre x, centre y) of a shape moved on a graph, from its relayoutData
    ({"shapes[k].x0": ..., "shapes[k].x1": ..., ...}); None for anything else (a zoom)."""
    if not isinstance(relayout, dict):
        return None
    for key in relayout:
        if isinstance(key, str) and key.startswith("shapes[") and key.endswith("].x0"):
            k = key[len("shapes["):-len("].x0")]
            if not k.isdigit():
                return None
            ends = [finite_number(relayout.get(f"shapes[{k}].{e}"))
                    for e in ("x0", "x1", "y0", "y1")]
            if None in ends:
                return None
            return int(k), (ends[0] + ends[1]) / 2, (ends[2] + ends[3]) / 2
    return None


@callback(Output(ids.DJ_W01, "value", allow_duplicate=True),
          Output(ids.DJ_W02, "value", allow_duplicate=True),
          Input(ids.DJ_GRAPH, "relayoutData"), prevent_initial_call=True)
def drag_w0(relayout):
    """Dragging W0's circle moves W0."""
    moved = dragged_shape(relayout)
    if moved is None or moved[0] != 0 or max(abs(moved[1]), abs(moved[2])) > 100:
        return no_update, no_update
    return round(moved[1], 4), round(moved[2], 4)


@callback(Output(ids.DJ_DATA, "figure"), Input(ids.DJ_POINTS, "data"))
def draw_points(rows):
    try:
        x, y = parse_points(rows)
    except ValueError:
        return no_update
    return data_points_figure(x, y)


@callback(Output(ids.DJ_POINTS, "data", allow_duplicate=True),
          Input(ids.DJ_DATA, "relayoutData"), State(ids.DJ_POINTS, "data"),
          prevent_initial_call=True)
def drag_point(relayout, rows):
    """Dragging a point's circle moves that input (its label stays)."""
    moved = dragged_shape(relayout)
    if moved is None or not isinstance(rows, list) or not 0 <= moved[0] < len(rows) or \
            max(abs(moved[1]), abs(moved[2])) > 1e6 or not isinstance(rows[moved[0]], dict):
        return no_update
    out = [dict(r) if isinstance(r, dict) else r for r in rows]
    out[moved[0]].update(x1=round(moved[1], 4), x2=round(moved[2], 4))
    return out


@callback(Output(ids.DJ_W01, "value"), Output(ids.DJ_W02, "value"),
          Input(ids.DJ_GRAPH, "clickData"), prevent_initial_call=True)
def move_w0(click):
    """A click on the plane moves W0 there."""
    try:
        point = click["points"][0]
        w = [finite_number(point["x"]), finite_number(point["y"])]
    except (TypeError, KeyError, IndexError):
        return no_update, no_update
    if None in w or max(abs(v) for v in w) > 100:  # W0's inputs hold -100 to 100
        return no_update, no_update
    return round(w[0], 4), round(w[1], 4)


@callback(Output(ids.DJ_POINTS, "data"), Input(ids.DJ_ADD, "n_clicks"),
          Input(ids.DJ_RESET, "n_clicks"), State(ids.DJ_POINTS, "data"),
          prevent_initial_call=True)
def edit_points(_add, _reset, rows):
    if ctx.triggered_id == ids.DJ_RESET or not isinstance(rows, list):
        return [dict(r) for r in DJ_EXAMPLE]
    if len(rows) >= DANNEMANN_MAX_POINTS:
        return no_update
    return [*rows, {"x1": 0.0, "x2": 0.0, "y": 0.0}]


# ---- Santurkar et al.: landscape and ICS --------------------------------------------------

def _landscape_params(depth, width, steps, lr, noisy) -> dict:
    return landscape_from_page(depth, width, steps, lr, noisy).as_params()


def _training_step(job) -> str:
    steps = 2 * int(job.params["steps"])
    return f"training: step {round(job.progress * steps)} of {steps} (both networks)"


start_landscape_run, poll_landscape, _ = register_background(BackgroundRun(
    BackgroundIds(start=ids.SL_TRAIN, job=ids.SL_JOB, poll=ids.SL_POLL,
                  progress=ids.SL_PROGRESS, status=ids.SL_STATUS, message=ids.SL_MESSAGE,
                  result=(ids.SL_RESULT, "data")),
    job_type="landscape-2d",
    controls=[State(ids.SL_DEPTH, "value"), State(ids.SL_WIDTH, "value"),
              State(ids.SL_STEPS, "value"), State(ids.SL_LR, "value"),
              State(ids.SL_NOISY, "value")],
    params=_landscape_params, running=_training_step, done=lambda job: "done"))


@callback(Output(ids.SL_LANDSCAPE, "figure"), Output(ids.SL_ICS, "figure"),
          Output(ids.SL_BOUNDARY, "figure"),
          Output(ids.SL_MESSAGE, "children", allow_duplicate=True),
          Output(ids.SL_MESSAGE, "is_open", allow_duplicate=True),
          Input(ids.SL_RESULT, "data"),
          prevent_initial_call="initial_duplicate")  # a result kept from an earlier visit
def show_landscape(result):
    try:
        stored = load_landscape(check_job_id(result))
    except ValueError:  # none, or a tampered store
        return no_update, no_update, no_update, no_update, no_update
    except OSError:
        return (no_update, no_update, no_update,
                "the stored result is gone: press train again", True)
    return (landscape_figure(stored["arms"]), ics_figure(stored["arms"]),
            decision_maps_figure(stored["decision"], stored["box"], stored["points"],
                                 stored["labels"]), "", False)


# ---- Luo et al.: regularisation ----------------------------------------------------------

LUO_GAMMAS = np.array([0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0])
LUO_STATISTICS = 20_000  # mini-batch statistics drawn for the histograms


@callback(Output(ids.LUO_STATS, "figure"), Output(ids.LUO_GAP, "figure"),
          Output(ids.LUO_DYNAMICS, "figure"), Output(ids.LUO_NUMBERS, "children"),
          Output(ids.LUO_MESSAGE, "children"), Output(ids.LUO_MESSAGE, "is_open"),
          Input(ids.LUO_DIST, "value"), Input(ids.LUO_BATCH, "value"),
          Input(ids.LUO_ETA, "value"), Input(ids.LUO_ZETA, "value"),
          Input(ids.LUO_I2, "value"))
def update_luo(distribution, batch, eta, zeta, printed_i2):
    """The three Luo et al. views; a bad value shows a message and keeps the pictures."""
    try:
        if not isinstance(distribution, str) or distribution not in luo.DISTRIBUTIONS:
            raise ValueError(f"pre-activation: one of {', '.join(luo.DISTRIBUTIONS)}")
        m = whole_number(batch, "batch size", 4, 256)
        eta_v, zeta_v = finite_number(eta), finite_number(zeta)
        if eta_v is None or not 0.1 <= eta_v <= 6:
            raise ValueError("η: a number from 0.1 to 6")
        if zeta_v is None or not 0 <= zeta_v <= 1:
            raise ValueError("ζ: a number from 0 to 1")
        gap_batches = min(1 << 16, (1 << 22) // m)
        # up to 0.9 s at a batch of 256: admitted as the explorer's views are (a busy server
        # answers the message with its retry time)
        with admitted(luo_seconds(m, LUO_STATISTICS, gap_batches, len(LUO_GAMMAS))):
            stats = luo.statistics_samples(distribution, m, LUO_STATISTICS, seed=0)
            gap = luo.gamma_decay_gap(m, LUO_GAMMAS, batches=gap_batches, seed=0)
            dyn = luo.learning_dynamics(eta_v, zeta_v, printed_i2=printed_i2 is True)
    except ValueError as exc:
        return no_update, no_update, no_update, no_update, str(exc), True
    numbers = html.Ul([
        html.Li(f"var(μ_B) = {stats.mu.var():.4g} (model σ_P²/M = {stats.mu_var_model:.4g}); "
                f"var(σ_B) = {stats.sigma.var():.4g} (corrected model "
                f"{stats.sigma_var_model:.4g}, as printed {stats.sigma_var_printed:.4g})"),
        html.Li(f"gap at γ = 1: {gap[2]:.5f}, against 3/(4M) = {3 / (4 * m):.5f}"),
        html.Li(f"after t = {dyn.t[-1]:.0f}: γ = {dyn.gamma[-1]:.4f} (γ0 = {dyn.gamma0:.4f}), "
                f"R = {dyn.r[-1]:.4f}, L = {dyn.length[-1]:.4f}; η_eff = η γ0 / L² = "
                f"{eta_v * dyn.gamma0 / dyn.length[-1] ** 2:.3g}"),
    ])
    return (batch_statistics_figure(stats), gap_figure(LUO_GAMMAS, gap, 3 / (4 * m), m),
            dynamics_figure(dyn), numbers, "", False)


# ---- Ergen et al.: whitening and the closed form ------------------------------------------

@shared_memoize("papers-ergen-v1", cost=always_heavy)
def _ergen(dataset: str, n: int, beta: float):
    """Ergen et al.'s training on one data set (seconds): computed once per ``BNVIZ_HOME``."""
    from bnviz.data.datasets import make_dataset

    data = make_dataset(dataset, n, 0)
    return ergen_experiment(data.points, data.labels, beta=beta)


@callback(Output(ids.EG_WHITEN, "figure"), Output(ids.EG_UNITS, "figure"),
          Output(ids.EG_NUMBERS, "children"), Output(ids.EG_MESSAGE, "children"),
          Output(ids.EG_MESSAGE, "is_open"),
          Input(ids.EG_DATASET, "value"), Input(ids.EG_N, "value"), Input(ids.EG_BETA, "value"))
def update_ergen(dataset, n, beta):
    """Train (cached by the settings) and compare with the closed form."""
    try:
        if not isinstance(dataset, str) or dataset not in ERGEN_DATASETS:
            raise ValueError(f"data set: one of {', '.join(ERGEN_DATASETS)}")
        n = whole_number(n, "points", 4, 60)
        b = finite_number(beta)
        if b is None or not 0.01 <= b <= 10:
            raise ValueError("β: a number from 0.01 to 10")
        result = _ergen(dataset, n, round(b, 6))
    except ValueError as exc:
        return no_update, no_update, no_update, str(exc), True
    sv = ", ".join(f"{v:.3g}" for v in result.singular_values[:6])
    numbers = html.Ul([
        html.Li(["trained objective ", html.B(f"{result.objective:.6g}", id="eg-objective"),
                 " against the closed-form optimum p* = ", html.B(f"{result.p_star:.6g}"),
                 f" (relative gap {result.objective / result.p_star - 1:.1e}, after "
                 f"{result.steps} full-batch Adam steps)"]),
        html.Li(["rank of the last hidden features: ", html.B(str(result.feature_rank),
                                                            id="eg-rank"),
                 f" (at 5 % of the largest singular value: {sv}, ...); classes with "
                 f"‖y_j‖ > β: {result.active_classes}"]),
        html.Li(f"largest distance of a point's features to its class mean: "
                f"{result.within_class_spread:.2g} (neural collapse: 0 at the optimum)"),
    ])
    return (whitening_figure(result.points, result.whitened, result.labels),
            closed_form_figure(result), numbers, "", False)


@shared_memoize("papers-luo-normalisations-v1", cost=always_heavy)
def _normalisations(batch_size: int):
    """Luo et al.'s three trained networks for one batch size (seconds): computed once per
    ``BNVIZ_HOME``."""
    return luo.compare_normalisations(batch_size=batch_size)


@callback(Output(ids.LUO_COMPARE, "figure"), Output(ids.LUO_COMPARE_NUMBERS, "children"),
          Output(ids.LUO_MESSAGE, "children", allow_duplicate=True),
          Output(ids.LUO_MESSAGE, "is_open", allow_duplicate=True),
          Input(ids.LUO_TRAIN, "n_clicks"), State(ids.LUO_BATCH, "value"),
          prevent_initial_call=True)
def show_normalisations(_, batch):
    """Train the three networks (once per batch size, then cached) and draw them."""
    try:
        m = whole_number(batch, "batch size", 4, 256)
        result = _normalisations(m)
    except ValueError as exc:
        return no_update, no_update, str(exc), True
    rows = [html.Tr([html.Td(name), html.Td(f"{100 * result.train_accuracy[a]:.1f} %"),
                     html.Td(f"{100 * result.test_accuracy[a]:.1f} %"),
                     html.Td(f"{result.gamma_sq[a]:.3g}", id=f"luo-gamma-{a}")])
            for a, name in (("bn", "BN"), ("pn", "PN"), ("pn_decay", "PN + γ decay"))]
    table = dbc.Table([html.Thead(html.Tr([html.Th(h) for h in (
        "", "train accuracy", "test accuracy", "mean γ²")])), html.Tbody(rows)],
        size="sm", className="small")
    return normalisation_figure(result), table, "", False
