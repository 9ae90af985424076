"""Explorer callbacks: control values -> validated settings -> bnviz -> figure dicts.

The page's full state lives in its URL query (``ExplorerSettings.to_query`` plus the view),
written with ``history.replaceState`` so that sliders never trigger a page reload, and read
back by :func:`page_layout` when a shared link is opened.
"""

from __future__ import annotations

import base64
import binascii
import math
import time
from dataclasses import replace
from urllib.parse import urlencode

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

from bnviz.core.limits import PartitionTooLarge
from bnviz.data.pointfiles import points_from_csv_bytes
from bnviz.service.cache import memoize
from bnviz.views.explorer import (
    EXPLORER_LIMITS,
    MAX_EXTRA_POINTS,
    PRESETS,
    ExplorerResult,
    ExplorerSettings,
    InputError,
    explore,
)
from callbacks.figures import partition_figure, small_multiples_figure, unit_figure
from callbacks.parsing import finite_number, shown_name
from layouts import explorer as explorer_layout
from layouts.ids import Explorer as ids

#: Points kept in a shareable URL (more are kept in the page, not in the link).
MAX_URL_POINTS = 300
MAX_UPLOAD_BYTES = 1_000_000

CONTROLS = {
    "depth": ids.DEPTH, "width": ids.WIDTH, "activation": ids.ACTIVATION, "alpha": ids.ALPHA,
    "mode": ids.MODE, "weight_seed": ids.WEIGHT_SEED, "dataset": ids.DATASET,
    "n_points": ids.N_POINTS, "data_seed": ids.DATA_SEED, "batch_size": ids.BATCH_SIZE,
    "batch_seed": ids.BATCH_SEED, "mu_t": ids.MU, "sigma_s": ids.SIGMA, "scope": ids.SCOPE,
    "target_layer": ids.TARGET_LAYER, "target_unit": ids.TARGET_UNIT, "layer": ids.LAYER,
}


# ---- state <-> URL and controls ----------------------------------------------------------

def settings_from_controls(values: dict) -> ExplorerSettings:
    """Control values as the page holds them (sigma as log2, unit 1-based) -> settings."""
    raw = dict(values)
    sigma = raw.get("sigma_s")
    try:
        raw["sigma_s"] = 2.0 ** float(sigma)
    except (TypeError, ValueError, OverflowError):
        raise InputError("σ slider: move it to a value from ¼ to 4") from None
    unit = raw.get("target_unit")
    lo, hi = EXPLORER_LIMITS["target_unit"]
    try:
        k = float(unit)
    except (TypeError, ValueError, OverflowError):
        k = math.nan
    if not (math.isfinite(k) and k == int(k) and lo + 1 <= k <= hi + 1):
        raise InputError(f"unit k: enter a whole number from 1 to the width "
                         f"(at most {int(hi) + 1}), got {str(unit)[:40]!r}")
    raw["target_unit"] = k - 1
    return ExplorerSettings.parse(raw)


def control_values(s: ExplorerSettings) -> dict:
    """The inverse of :func:`settings_from_controls`."""
    out = {name: getattr(s, name) for name in CONTROLS}
    out["sigma_s"] = math.log2(s.sigma_s)
    out["target_unit"] = s.target_unit + 1
    out["batch_size"] = "all" if s.batch_size is None else str(s.batch_size)
    return out


def _parse_points(text: str) -> list[list[float]]:
    pts = []
    for pair in filter(None, text.split(";")[:MAX_EXTRA_POINTS]):
        x, y = (float(v) for v in pair.split(","))
        if not (math.isfinite(x) and math.isfinite(y) and abs(x) <= 1e6 and abs(y) <= 1e6):
            raise ValueError(pair)
        pts.append([x, y])
    return pts


def initial_state(query: dict) -> tuple:
    """Page state from a URL query; a tampered or stale link falls back to defaults, with a
    message saying what was ignored."""
    message = []
    # a key repeated in the link arrives as a list: the last one wins, as in a form
    query = {k: (v[-1] if isinstance(v, list) and v else v) for k, v in query.items()}
    try:
        settings = ExplorerSettings.parse(query)
    except InputError as exc:
        settings = ExplorerSettings()
        message.append(f"The link's settings were not used ({exc}).")
    view = query.get("view", "space")
    if view not in explorer_layout.VIEWS:
        message.append(f"The link's view {str(view)[:20]!r} is unknown; showing the input "
                       "space.")
        view = "space"
    tls = query.get("tls") == "1"
    projector = query.get("projector") == "1"
    try:
        extra = _parse_points(str(query.get("pts", "")))
    except ValueError:
        extra = []
        message.append("The link's added points were not readable and were left out.")
    preset = PRESETS.get(str(query.get("preset", "")))
    caption = preset.caption if preset else "Pick a preset, or move any control."
    return (settings, view, tls, projector, extra, " ".join(message), caption,
            preset.key if preset else None)


def page_layout(**query):
    """The explorer page for a URL query (Dash Pages passes the query as keyword arguments)."""
    return explorer_layout.layout(*initial_state(query))


def query_string(settings: ExplorerSettings, view: str, tls: bool, projector: bool,
                 extra: list, preset: str | None = None) -> str:
    q = settings.to_query()
    if preset in PRESETS:
        q["preset"] = preset  # restores the preset's caption
    if view != "space":
        q["view"] = view
    if tls:
        q["tls"] = "1"
    if projector:
        q["projector"] = "1"
    if extra and len(extra) <= MAX_URL_POINTS:
        q["pts"] = ";".join(f"{x:.4g},{y:.4g}" for x, y in extra)
    return urlencode(q)


# ---- computation (cached: view-only changes do not recompute) ----------------------------

@memoize()  # bounded by bytes (BNVIZ_CACHE_MB): one result at the caps is ~60 MB
def _explore_cached(settings: ExplorerSettings, extra: tuple) -> tuple[ExplorerResult, float]:
    t0 = time.perf_counter()
    result = explore(settings, np.array(extra, dtype=np.float64).reshape(-1, 2) if extra
                     else None)
    return result, time.perf_counter() - t0


def run_explorer(settings: ExplorerSettings, extra: list) -> tuple[ExplorerResult, float]:
    key = replace(settings, layer=1)  # the highlighted layer does not change the computation
    return _explore_cached(key, tuple(tuple(p) for p in extra or ()))


def _summary(result: ExplorerResult, seconds: float) -> html.Div:
    part = result.partition
    rows = [html.Tr([html.Td(f"{lp.layer}"), html.Td(f"{len(lp.regions)}"),
                     html.Td(f"{np.sum(lp.stats.tls_error):.3g}")]) for lp in part.layers]
    dist = result.mean_boundary_distance
    return html.Div([
        html.Table([html.Thead(html.Tr([html.Th("layer"), html.Th("regions"),
                                        html.Th("TLS error Σσ²/‖w‖²")])),
                    html.Tbody(rows)], className="table table-sm"),
        html.P(["mean distance from the data to the nearest boundary: ",
                html.B(f"{dist:.4g}" if math.isfinite(dist) else "no boundary in the box")]),
        html.P(["layer-1 arrangement is central: ",
                html.B("yes" if result.central_layer1 else "no", id="explorer-central")]),
        html.P(f"{len(result.data.points)} points, batch of {len(result.batch)}; computed in "
               f"{1000 * seconds:.0f} ms on {part.device}", className="text-muted"),
    ])


@callback(
    Output(ids.GRAPH_SPACE, "figure"),
    Output(ids.GRAPH_LAYERS, "figure"),
    Output(ids.GRAPH_UNIT, "figure"),
    Output(ids.SUMMARY, "children"),
    Output(ids.MESSAGE, "children"),
    Output(ids.MESSAGE, "is_open"),
    Output(ids.QUERY, "data"),
    inputs={
        "controls": {name: Input(cid, "value") for name, cid in CONTROLS.items()},
        "extra": Input(ids.EXTRA_POINTS, "data"),
        "view": Input(ids.VIEW, "active_tab"),
        "tls": Input(ids.TLS, "value"),
        "projector": Input(ids.PROJECTOR, "value"),
        "preset": State(ids.PRESET_KEY, "data"),
    },
)
def update_views(controls, extra, view, tls, projector, preset=None):
    """Recompute and redraw the visible view; a bad value shows a message and keeps the
    pictures as they were (nothing is lost)."""
    preset = preset if isinstance(preset, str) and preset in PRESETS else None
    try:
        extra = checked_points(extra)
        s = settings_from_controls(controls)
        result, seconds = run_explorer(s, extra)
        rows = []
        if view == "layers":  # Figure 1's two rows: the same weights without and with BN
            other = s.mode if s.mode != "bn" else "random_bias"
            for mode in (other, "bn"):
                r, _ = run_explorer(replace(s, mode=mode), extra)
                label = "with BN" if mode == "bn" else f"without BN ({mode.replace('_', ' ')})"
                rows.append((label, r.partition))
    except (InputError, PartitionTooLarge, ValueError) as exc:
        return (no_update,) * 4 + (str(exc), True, no_update)
    space = layers = unit = no_update
    batch_mask = None
    if s.batch_size is not None:
        batch_mask = (result.data.points[:, None, :] == result.batch[None]).all(2).any(1)
    if view == "layers":
        layers = small_multiples_figure(rows, result.data.points, projector=bool(projector))
    elif view == "unit":
        unit = unit_figure(result.unit, projector=bool(projector))
    else:
        target = (s.target_layer, s.target_unit) if s.scope == "unit" else None
        space = partition_figure(result.partition, result.raster, result.data.points, s.layer,
                                 batch_mask=batch_mask, target=target, tls=bool(tls),
                                 projector=bool(projector), clickable=True)
    return (space, layers, unit, _summary(result, seconds), "", False,
            query_string(s, view, bool(tls), bool(projector), extra or [], preset))


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
    if not ctx.triggered_id or not any(clicks):
        return {k: no_update for k in (*CONTROLS, "view", "tls", "caption", "preset", "extra",
                                       "layer_max")}
    preset = PRESETS[ctx.triggered_id["key"]]
    out = control_values(preset.settings)
    out.update(view=preset.view, tls=preset.tls, caption=preset.caption, preset=preset.key,
               extra=[], layer_max=preset.settings.depth)
    return out


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
          Input(ids.GRAPH_SPACE, "clickData"), Input(ids.UPLOAD, "contents"),
          Input(ids.CLEAR_POINTS, "n_clicks"),
          State(ids.UPLOAD, "filename"), State(ids.EXTRA_POINTS, "data"),
          prevent_initial_call=True)
def add_points(click, contents, _, filename, extra):
    """Clicking the plot adds a point; a CSV upload adds its points; 'clear' removes them."""
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


def checked_points(extra) -> list[list[float]]:
    """The added points as the page stores them ([[x, y], ...]); anything else (only a
    crafted request sends it) is refused with a message."""
    if extra is None:
        return []
    if isinstance(extra, list) and len(extra) > MAX_EXTRA_POINTS:
        raise InputError(f"at most {MAX_EXTRA_POINTS} added points; press 'clear'")
    ok = isinstance(extra, list) and all(
        isinstance(p, list | tuple) and len(p) == 2 and not any(isinstance(v, str) for v in p)
        and all(finite_number(v) is not None for v in p) for p in extra)
    if not ok:
        raise InputError("added points: not a list of finite (x, y) pairs; press 'clear'")
    return [[float(x), float(y)] for x, y in extra]


def upload_points(contents: str | None, filename: str | None) -> np.ndarray:
    """Decode a dcc.Upload data URL and parse it as CSV; ValueError with a clear message."""
    name = shown_name(filename)
    if not isinstance(contents, str) or "," not in contents:
        raise ValueError(f"{name}: empty upload")
    payload = contents.split(",", 1)[1]
    if len(payload) > MAX_UPLOAD_BYTES * 4 // 3 + 4:
        raise ValueError(f"{name}: larger than {MAX_UPLOAD_BYTES // 1000} kB")
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{name}: the upload is not readable") from None
    if not (isinstance(filename, str) and filename.lower().endswith(".csv")):
        raise ValueError(f"{name}: expected a .csv file with columns x, y[, label]")
    return points_from_csv_bytes(raw, name).points


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
