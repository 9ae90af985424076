"""Explorer callbacks: control values -> validated settings (:mod:`callbacks.explorer.state`)
-> bnviz -> figure dicts (:mod:`callbacks.explorer.figures`)."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
from dash import (
    ALL,
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    ctx,
    html,
    no_update,
)

from bnviz.caps import EXPLORER_MAX_REGIONS
from bnviz.core.limits import PartitionTooLarge
from bnviz.params import PartitionParams
from bnviz.params.cost import partition_seconds
from bnviz.service.cache import memoize
from bnviz.views.explorer import (
    EXPLORER_LIMITS,
    MAX_EXTRA_POINTS,
    PRESETS,
    ExplorerResult,
    InputError,
    comparison_modes,
    explore,
)
from bnviz.views.figure9 import Figure9, figure9_layers, tls_layers
from bnviz.views.style import PARTITION
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer.figures import (
    partition_figure,
    small_multiples_figure,
    tls_figure,
    unit_figure,
)
from bnviz.web.callbacks.explorer.state import (
    CONTROLS,
    checked_points,
    control_values,
    preset_caption,
    query_string,
    settings_from_controls,
    upload_points,
)
from bnviz.web.callbacks.parsing import finite_number, shown_name
from bnviz.web.callbacks.projector import projected

# ---- computation (cached: view-only changes do not recompute) ----------------------------

def _explore_seconds(settings: PartitionParams, extra: tuple) -> float:
    """The estimated seconds of :func:`_explore_cached` (bnviz.service.admission)."""
    return partition_seconds((settings.width,) * settings.depth, settings.activation,
                             settings.mode, settings.extent, EXPLORER_MAX_REGIONS)


# bounded by bytes (BNVIZ_CACHE_MB): one result at the caps is ~60 MB
@memoize(cost=_explore_seconds)
def _explore_cached(settings: PartitionParams, extra: tuple) -> tuple[ExplorerResult, float]:
    t0 = time.perf_counter()
    result = explore(settings, np.array(extra, dtype=np.float64).reshape(-1, 2) if extra
                     else None)
    return result, time.perf_counter() - t0


def run_explorer(settings: PartitionParams, extra: list) -> tuple[ExplorerResult, float]:
    key = replace(settings, layer=1)  # the highlighted layer does not change the computation
    return _explore_cached(key, tuple(tuple(p) for p in extra or ()))


@memoize(cost=_explore_seconds)
def _figure9_cached(settings: PartitionParams, extra: tuple) -> Figure9:
    """Figure 9's numbers for the shown layers (the explorer's result is cached itself)."""
    result, _ = run_explorer(settings, [list(p) for p in extra])
    # the cached result's settings have layer 1 (the highlight does not change it): the
    # layers shown are the settings' own
    return replace(tls_layers(result, figure9_layers(settings)), settings=settings)


def run_figure9(settings: PartitionParams, extra: list) -> Figure9:
    return _figure9_cached(settings, tuple(tuple(p) for p in extra or ()))


def _number(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else "–"


def _summary(result: ExplorerResult, seconds: float, fig9: Figure9 | None = None) -> html.Div:
    part = result.partition
    rows = [html.Tr([html.Td(f"{lp.layer}"), html.Td(f"{len(lp.regions)}"),
                     html.Td(f"{np.sum(lp.stats.tls_error):.3g}")]) for lp in part.layers]
    dist = result.mean_boundary_distance
    extra = []
    if result.training is not None:
        t = result.training
        extra.append(html.P(f"trained weights: {t.steps} Adam steps from the weight seed, "
                            f"training accuracy {100 * t.accuracy:.0f} %, loss {t.loss:.3g}"))
    if fig9 is not None:  # Figure 9: does the colour rank the input-space closeness?
        extra.append(html.P([
            "Spearman rank correlation of each unit's colour with the mean input-space "
            "distance of the batch to its facets: ",
            *[html.Span([f"layer {t.layer} ", html.B(_number(t.spearman)),
                         "; " if i + 1 < len(fig9.layers) else ""])
              for i, t in enumerate(fig9.layers)]], id="explorer-figure9-ranks"))
    return html.Div([
        html.Table([html.Thead(html.Tr([html.Th("layer"), html.Th("regions"),
                                        html.Th("TLS error Σₖ mean d² (eq. 9)",
                                                title="the mean squared distance of the "
                                                "layer's input batch to its hyperplanes "
                                                "at the μ in use, summed over units; = "
                                                "Σσ²/‖w‖² at μ = batch mean")])),
                    html.Tbody(rows)], className="table table-sm"),
        *extra,
        html.P(["mean distance from the data to the nearest boundary: ",
                html.B(f"{dist:.4g}" if math.isfinite(dist) else "no boundary in the box")]),
        html.P(["layer-1 arrangement is central: ",
                html.B("yes" if result.central_layer1 else "no", id="explorer-central")]),
        html.P(f"{len(result.data.points)} points, batch of {len(result.batch)}; computed in "
               f"{1000 * seconds:.0f} ms on {part.device}", className="text-muted"),
    ])


#: The views' class while they show the last answer to an earlier setting (assets/explorer.css).
STALE = "stale"


@callback(
    Output(ids.GRAPH_SPACE, "figure"),
    Output(ids.GRAPH_LAYERS, "figure"),
    Output(ids.GRAPH_UNIT, "figure"),
    Output(ids.SUMMARY, "children"),
    Output(ids.MESSAGE, "children"),
    Output(ids.MESSAGE, "is_open"),
    Output(ids.QUERY, "data"),
    Output(ids.VIEWS_BOX, "className"),
    Output(ids.CAPTION, "children", allow_duplicate=True),
    inputs={
        "controls": {name: Input(cid, "value") for name, cid in CONTROLS.items()},
        "extra": Input(ids.EXTRA_POINTS, "data"),
        "view": Input(ids.VIEW, "active_tab"),
        "tls": Input(ids.TLS, "value"),
        "projector": Input(ids.PROJECTOR, "value"),
        "preset": State(ids.PRESET_KEY, "data"),
    },
    prevent_initial_call="initial_duplicate",
)
def update_views(controls, extra, view, tls, projector, preset=None):
    """Recompute and redraw the visible view, and the preset's caption with it (one request
    a slider step); a bad value shows a message and keeps the pictures and the caption as
    they were (nothing is lost), marked stale (dimmed, "not this setting"), so that the old
    picture is never taken for the answer."""
    preset = preset if isinstance(preset, str) and preset in PRESETS else None
    try:
        extra = checked_points(extra)
        s = settings_from_controls(controls)
        result, seconds = run_explorer(s, extra)
        rows, fig9 = [], None
        if view == "layers":  # Figure 1's two rows: the same weights without and with BN
            for mode in comparison_modes(s.mode):
                r, _ = run_explorer(replace(s, mode=mode), extra)
                rows.append((PARTITION.row_label(mode), r.partition))
        elif view == "space" and tls:  # Figure 9: layer 1 and the highlighted layer
            fig9 = run_figure9(s, extra)
    except (InputError, PartitionTooLarge, ValueError) as exc:
        return (no_update,) * 4 + (str(exc), True, no_update, STALE, no_update)
    space = layers = unit = no_update
    if view == "layers":
        layers = small_multiples_figure(rows, result.data.points, projector=bool(projector))
    elif view == "unit":
        unit = unit_figure(result.unit, projector=bool(projector))
    elif fig9 is not None:  # each layer on its own colour scale
        space = tls_figure(fig9, result.raster, projector=bool(projector), clickable=True)
    else:
        target = (s.target_layer, s.target_unit) if s.scope == "unit" else None
        space = partition_figure(result.partition, result.raster, result.data.points, s.layer,
                                 batch_mask=result.batch_mask, target=target,
                                 projector=bool(projector), clickable=True)
    if projector:  # set for the projector as the lecture view is (type, legend, titles)
        space, layers, unit = (fig if fig is no_update else
                               projected(fig, title_chars=44)
                               for fig in (space, layers, unit))
    return (space, layers, unit, _summary(result, seconds, fig9), "", False,
            query_string(s, view, bool(tls), bool(projector), extra or [], preset), "",
            caption_follows(controls, view, preset))


@callback(Output(ids.LAYER, "max", allow_duplicate=True),
          Output(ids.LAYER, "marks"),
          Output(ids.LAYER, "value", allow_duplicate=True),
          Output(ids.TARGET_LAYER, "max"),
          Output(ids.TARGET_LAYER, "value", allow_duplicate=True),
          Output(ids.TARGET_UNIT, "max"),
          Output(ids.TARGET_UNIT, "value", allow_duplicate=True),
          Input(ids.DEPTH, "value"), Input(ids.WIDTH, "value"),
          State(ids.LAYER, "value"), State(ids.TARGET_LAYER, "value"),
          State(ids.TARGET_UNIT, "value"),
          prevent_initial_call=True)
def sync_ranges(depth, width, layer, target_layer, target_unit):
    """Keep the layer and unit choices inside the network when depth or width change (a
    bad depth or width is reported by update_views; the ranges then stay as they were)."""
    lo_d, hi_d = EXPLORER_LIMITS["depth"]
    lo_w, hi_w = EXPLORER_LIMITS["width"]
    d, w = (finite_number(v) if not isinstance(v, str) else None for v in (depth, width))
    ok = d is not None and w is not None and d == int(d) and w == int(w) and \
        lo_d <= d <= hi_d and lo_w <= w <= hi_w
    if not ok:
        return (no_update,) * 7
    depth, width = int(d), int(w)

    def clamp(value, hi):
        v = finite_number(value) if not isinstance(value, str) else None
        return min(int(v), hi) if v is not None and v >= 1 else no_update

    marks = {i: str(i) for i in range(1, depth + 1)}
    return (depth, marks, clamp(layer, depth), depth, clamp(target_layer, depth), width,
            clamp(target_unit, width))


# ---- buttons, presets, animation ---------------------------------------------------------

@callback(Output(ids.WEIGHT_SEED, "value", allow_duplicate=True),
          Input(ids.RESAMPLE, "n_clicks"), State(ids.WEIGHT_SEED, "value"),
          prevent_initial_call=True)
def resample_weights(_, seed):
    return _next_seed(seed)


def _next_seed(seed) -> int:
    """The next seed, wrapping within the valid range; a bad value restarts at 0."""
    hi = int(EXPLORER_LIMITS["weight_seed"][1])
    v = finite_number(seed) if not isinstance(seed, str) else None
    return (int(v) + 1) % (hi + 1) if v is not None and 0 <= v <= hi else 0


@callback(Output(ids.BATCH_SEED, "value", allow_duplicate=True),
          Input(ids.NEW_BATCH, "n_clicks"), State(ids.BATCH_SEED, "value"),
          prevent_initial_call=True)
def draw_another_batch(_, seed):
    return _next_seed(seed)


@callback(
    {name: Output(cid, "value", allow_duplicate=True) for name, cid in CONTROLS.items()}
    | {"view": Output(ids.VIEW, "active_tab", allow_duplicate=True),
       "tls": Output(ids.TLS, "value", allow_duplicate=True),
       "caption": Output(ids.CAPTION, "children"),
       "preset": Output(ids.PRESET_KEY, "data"),
       "extra": Output(ids.EXTRA_POINTS, "data", allow_duplicate=True),
       "layer_max": Output(ids.LAYER, "max", allow_duplicate=True)},
    Input({"type": ids.PRESET, "key": ALL}, "n_clicks"),
    prevent_initial_call=True,
)
def apply_preset(clicks):
    """A preset sets every control to the paper's settings for its figure."""
    # the trigger and the clicks come from the client: a crafted request can send anything
    key = ctx.triggered_id.get("key") if isinstance(ctx.triggered_id, dict) else None
    clicked = isinstance(clicks, list) and any(isinstance(c, int) and c > 0 for c in clicks)
    if not clicked or not isinstance(key, str) or key not in PRESETS:
        return {k: no_update for k in (*CONTROLS, "view", "tls", "caption", "preset", "extra",
                                       "layer_max")}
    preset = PRESETS[key]
    out = control_values(preset.settings)
    out.update(view=preset.view, tls=preset.tls, caption=preset.caption, preset=preset.key,
               extra=[], layer_max=preset.settings.depth)
    return out


def caption_follows(controls, view, key):
    """The preset's caption while the figure is its own; what was changed since otherwise
    (update_views answers it with the picture; a preset button sets it itself)."""
    caption = preset_caption(key, controls, view)
    return no_update if caption is None else caption


@callback(Output(ids.MU, "value", allow_duplicate=True),
          Output(ids.ANIMATE_TIMER, "disabled"),
          Input(ids.ANIMATE, "n_clicks"), Input(ids.ANIMATE_TIMER, "n_intervals"),
          State(ids.MU, "value"), State(ids.ANIMATE_TIMER, "disabled"),
          prevent_initial_call=True)
def animate_mu(_, __, mu, disabled):
    """The animate button sweeps the mu slider from 0 (no centering) to 1 (BN)."""
    if ctx.triggered_id == ids.ANIMATE:
        return 0.0, False
    if disabled:
        return no_update, True
    nxt = round(min(1.0, max(0.0, finite_number(mu) or 0.0) + 0.05), 2)
    return nxt, nxt >= 1.0


# ---- added points: clicks and uploads ----------------------------------------------------

@callback(Output(ids.EXTRA_POINTS, "data", allow_duplicate=True),
          Output(ids.UPLOAD_STATUS, "children"),
          Input(ids.CURSOR, "data"), Input(ids.UPLOAD, "contents"),
          Input(ids.CLEAR_POINTS, "n_clicks"),
          State(ids.UPLOAD, "filename"), State(ids.EXTRA_POINTS, "data"),
          prevent_initial_call=True)
def add_points(click, contents, _, filename, extra):
    """Clicking the plot adds a point where the mouse is (assets/cursor.js reports the click
    as {"points": [{"x", "y"}]}); a CSV upload adds its points; 'clear' removes them."""
    if ctx.triggered_id == ids.CLEAR_POINTS:
        return [], ""
    try:
        extra = checked_points(extra)
    except InputError:  # a malformed store (a crafted request): start from no points
        extra = []
    if ctx.triggered_id == ids.UPLOAD:
        try:
            pts = upload_points(contents, filename)
        except ValueError as exc:
            return no_update, html.Span(str(exc), className="text-danger")
        new = extra + np.round(pts, 6).tolist()
        if len(new) > MAX_EXTRA_POINTS:
            return no_update, html.Span(f"too many points: at most {MAX_EXTRA_POINTS} can be "
                                        "added", className="text-danger")
        return new, f"added {len(pts)} points from {shown_name(filename)}"
    try:
        p = click["points"][0]
        x, y = float(p["x"]), float(p["y"])
    except (TypeError, KeyError, IndexError, ValueError, OverflowError):
        return no_update, no_update
    if not (math.isfinite(x) and math.isfinite(y)):  # only a crafted request sends these
        return no_update, no_update
    if len(extra) >= MAX_EXTRA_POINTS:
        return no_update, f"at most {MAX_EXTRA_POINTS} added points"
    return extra + [[round(x, 4), round(y, 4)]], f"{len(extra) + 1} added points"


# ---- view -------------------------------------------------------------------------------

@callback(Output(ids.ROOT, "className"), Input(ids.PROJECTOR, "value"))
def projector_mode(on):
    return "projector" if on else ""


clientside_callback(ClientsideFunction("bnviz", "replaceUrl"),
                    Output(ids.SINK, "children"), Input(ids.QUERY, "data"),
                    prevent_initial_call=True)
clientside_callback(ClientsideFunction("bnviz", "exportFigure"),
                    Output(ids.SINK, "title"),
                    Input({"type": ids.EXPORT, "graph": ALL, "format": ALL}, "n_clicks"),
                    prevent_initial_call=True)
