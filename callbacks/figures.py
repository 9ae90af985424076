"""Plotly figure builders: engine results in, figure dicts out (no computation of their own).

Figures are plain dicts (plotly's object validation costs ~100 ms a figure), and geometry goes
to the browser compactly: region fills as one byte-per-pixel heatmap of palette indices, the
exact facets of one layer as one float32 line trace with breaks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _plotly_utils.utils import to_typed_array_spec
from plotly.colors import sample_colorscale

from bnviz.core.partition import Partition
from bnviz.views.explorer import UnitView

__all__ = [
    "REGION_PALETTE",
    "partition_figure",
    "region_fill",
    "small_multiples_figure",
    "unit_figure",
]

REGION_PALETTE = (
    "#e8eef7", "#f6e8e8", "#e9f4e6", "#f7f1e1", "#efe7f5", "#e3f3f3",
    "#f4e4ee", "#eceee2", "#e2ebf3", "#f5ece4", "#e6f0ec", "#eee6e6",
)
HIGHLIGHT = "#1f5fd6"
EARLIER = "#9a9a9a"
TARGET = "#e8590c"
BOUNDARY = "#c92a2a"
TLS_COLOURSCALE = "Viridis"

Figure = dict[str, Any]


def _style(projector: bool) -> dict[str, float]:
    """Line widths and font sizes; projector mode: large fonts, thick lines, high contrast."""
    if projector:
        return {"font": 20, "current": 4.5, "earlier": 2.0, "marker": 10, "fill_opacity": 0.55}
    return {"font": 12, "current": 2.0, "earlier": 1.0, "marker": 5, "fill_opacity": 1.0}


def region_fill(raster: np.ndarray, box: tuple[float, ...], opacity: float,
                clickable: bool) -> dict:
    """Regions filled by activation pattern: a heatmap of palette indices (one byte a pixel,
    row 0 at the bottom); clicking it reports the pixel's centre (to add a data point)."""
    n_rows, n_cols = raster.shape
    x0, x1, y0, y1 = box
    idx = ((raster * 2654435761) % (2**32) % len(REGION_PALETTE)).astype(np.uint8)
    k = len(REGION_PALETTE)
    scale = [[pos, colour] for i, colour in enumerate(REGION_PALETTE)
             for pos in (i / k, (i + 1) / k)]
    return {"type": "heatmap", "z": _typed(idx), "x0": x0 + (x1 - x0) / (2 * n_cols),
            "dx": (x1 - x0) / n_cols, "y0": y0 + (y1 - y0) / (2 * n_rows),
            "dy": (y1 - y0) / n_rows, "colorscale": scale, "zmin": -0.5, "zmax": k - 0.5,
            "showscale": False, "opacity": opacity, "name": "regions",
            "hoverinfo": "none" if clickable else "skip"}


def _typed(values: np.ndarray) -> dict:
    """plotly.js typed-array spec (base64): 4 bytes a float32 value instead of ~10 characters
    (Dash serialises plain numpy arrays as JSON lists)."""
    return to_typed_array_spec(np.ascontiguousarray(values))


def _segments(seg: np.ndarray) -> tuple[dict, dict]:
    """Segments (x0, y0, x1, y1) as one polyline with NaN breaks."""
    n = seg.shape[0]
    xs = np.full(3 * n, np.nan)
    ys = np.full(3 * n, np.nan)
    xs[0::3], xs[1::3] = seg[:, 0], seg[:, 2]
    ys[0::3], ys[1::3] = seg[:, 1], seg[:, 3]
    return _typed(xs.astype(np.float32)), _typed(ys.astype(np.float32))


def _line(seg: np.ndarray, colour: str, width: float, name: str, legend: bool = False,
          axes: tuple[str, str] = ("x", "y")) -> dict:
    xs, ys = _segments(seg)
    return {"type": "scatter", "mode": "lines", "x": xs, "y": ys, "name": name,
            "line": {"color": colour, "width": width}, "hoverinfo": "skip",
            "showlegend": legend, "xaxis": axes[0], "yaxis": axes[1]}


def _data(points: np.ndarray, batch_mask: np.ndarray | None, size: float,
          axes: tuple[str, str] = ("x", "y")) -> list[dict]:
    pts = points.astype(np.float32)
    if batch_mask is None or batch_mask.all():
        return [{"type": "scatter", "mode": "markers", "x": _typed(pts[:, 0]),
                 "y": _typed(pts[:, 1]),
                 "name": "data", "marker": {"color": "black", "size": size},
                 "xaxis": axes[0], "yaxis": axes[1], "showlegend": axes[0] == "x"}]
    return [
        {"type": "scatter", "mode": "markers", "x": _typed(pts[batch_mask, 0]),
         "y": _typed(pts[batch_mask, 1]), "name": "mini-batch", "marker": {"color": "black",
                                                                   "size": size},
         "xaxis": axes[0], "yaxis": axes[1]},
        {"type": "scatter", "mode": "markers", "x": _typed(pts[~batch_mask, 0]),
         "y": _typed(pts[~batch_mask, 1]), "name": "other data",
         "marker": {"color": "white", "size": size, "line": {"color": "black", "width": 1}},
         "xaxis": axes[0], "yaxis": axes[1]},
    ]


def _panel_axes(k: int) -> tuple[str, str, str, str]:
    """Trace axis ids and layout keys of panel k (1-based): plotly.js calls the first pair
    x/y (an "x1" reference is not linked to layout.xaxis1's scaleanchor)."""
    if k == 1:
        return "x", "y", "xaxis", "yaxis"
    return f"x{k}", f"y{k}", f"xaxis{k}", f"yaxis{k}"


def _axis(lo: float, hi: float, **extra) -> dict:
    return {"range": [lo, hi], "showgrid": False, "zeroline": False, "mirror": True,
            "showline": True, "linecolor": "#444", "ticks": "", **extra}


def _tls_lines(part: Partition, upto: int, width: float) -> list[dict]:
    """Figure 9: every facet coloured by its unit's TLS error sigma^2/||w||^2 (eq. 8)."""
    values = np.concatenate([part.layers[j].stats.tls_error[part.layers[j].facet_units]
                             for j in range(upto)])
    segs = np.concatenate([part.layers[j].facets for j in range(upto)])
    finite = np.isfinite(values)
    if not finite.any():
        return []
    lo, hi = float(values[finite].min()), float(values[finite].max())
    n_bins = 8
    edges = np.linspace(lo, hi, n_bins + 1)
    bins = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, n_bins - 1)
    colours = sample_colorscale(TLS_COLOURSCALE, list((np.arange(n_bins) + 0.5) / n_bins))
    traces = [_line(segs[finite & (bins == b)], colours[b], width, f"TLS bin {b + 1}")
              for b in range(n_bins) if (finite & (bins == b)).any()]
    traces.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                   "hoverinfo": "skip", "showlegend": False,
                   "marker": {"colorscale": TLS_COLOURSCALE, "cmin": lo, "cmax": hi,
                              "color": [lo], "showscale": True,
                              "colorbar": {"title": {"text": "σ²/‖w‖²"}, "thickness": 14}}})
    return traces


def partition_figure(part: Partition, raster: np.ndarray, points: np.ndarray, highlight: int, *,
                     batch_mask: np.ndarray | None = None, target: tuple[int, int] | None = None,
                     tls: bool = False, projector: bool = False, clickable: bool = False,
                     title: str | None = None) -> Figure:
    """Figure 1 style: regions of Omega_{1|highlight} filled by activation pattern, the
    highlighted layer's folded hyperplanes blue, earlier layers gray; ``target`` (layer, unit)
    draws F_{l,k} in orange (Figure 2b, c); ``tls`` colours facets by TLS error (Figure 9)."""
    st = _style(projector)
    highlight = int(np.clip(highlight, 1, len(part.layers)))
    lp = part.layers[highlight - 1]
    traces: list[dict] = [region_fill(raster[highlight - 1], part.box, st["fill_opacity"],
                                      clickable)]
    if tls:
        traces += _tls_lines(part, highlight, st["current"])
    else:
        for j in range(highlight):
            current = j == highlight - 1
            traces.append(_line(part.layers[j].facets, HIGHLIGHT if current else EARLIER,
                                st["current"] if current else st["earlier"],
                                f"layer {j + 1}" if current else "earlier layers",
                                legend=current or j == 0))
    if target is not None and target[0] <= len(part.layers):
        tl = part.layers[target[0] - 1]
        traces.append(_line(tl.facets[tl.facet_units == target[1]], TARGET, st["current"] * 1.6,
                            f"F({target[0]},{target[1] + 1})", legend=True))
    if part.decision_boundary is not None:
        traces.append(_line(part.decision_boundary, BOUNDARY, st["current"] * 1.4,
                            "decision boundary", legend=True))
    traces += _data(points, batch_mask, st["marker"])
    x0, x1, y0, y1 = part.box
    text = title or f"layer {highlight}: {len(lp.regions)} regions"
    return {"data": traces, "layout": {
        "margin": {"l": 30, "r": 10, "t": 40, "b": 30}, "plot_bgcolor": "white",
        "font": {"size": st["font"]}, "title": {"text": text, "x": 0.02},
        "xaxis": _axis(x0, x1, constrain="domain"),
        "yaxis": _axis(y0, y1, scaleanchor="x", constrain="domain"),
        "legend": {"orientation": "h", "y": -0.06}, "uirevision": "partition",
        "clickmode": "event", "hovermode": "closest", "dragmode": "pan"}}


def small_multiples_figure(rows: list[tuple[str, Partition]], points: np.ndarray,
                           projector: bool = False) -> Figure:
    """Figure 1 as in the paper: one row per setting (without / with BN), one column per layer;
    in each panel that layer's facets are blue and the earlier layers' gray."""
    st = _style(projector)
    n_rows, n_cols = len(rows), max(len(p.layers) for _, p in rows)
    traces: list[dict] = []
    layout: dict[str, Any] = {"margin": {"l": 70, "r": 10, "t": 55, "b": 10},
                              "plot_bgcolor": "white", "font": {"size": st["font"]},
                              "showlegend": False, "annotations": []}
    gap = 0.02
    w = (1 - gap * (n_cols - 1)) / n_cols
    h = (1 - 0.06 * (n_rows - 1)) / n_rows
    for r, (label, part) in enumerate(rows):
        x0, x1, y0, y1 = part.box
        for c, lp in enumerate(part.layers):
            k = r * n_cols + c + 1
            ax, ay, xkey, ykey = _panel_axes(k)
            for j in range(c + 1):
                current = j == c
                traces.append(_line(part.layers[j].facets, HIGHLIGHT if current else EARLIER,
                                    st["current"] if current else st["earlier"],
                                    f"layer {j + 1}", axes=(ax, ay)))
            traces += _data(points, None, st["marker"] * 0.6, axes=(ax, ay))
            dom_x = [c * (w + gap), c * (w + gap) + w]
            top = 1 - r * (h + 0.06)
            layout[xkey] = _axis(x0, x1, domain=dom_x, showticklabels=False,
                                        anchor=ay)
            layout[ykey] = _axis(y0, y1, domain=[top - h, top], showticklabels=False,
                                        anchor=ax, scaleanchor=ax)
            if r == 0:
                layout["annotations"].append({"text": f"layer {lp.layer}", "showarrow": False,
                                              "xref": "paper", "yref": "paper",
                                              "x": dom_x[0] + w / 2, "y": 1.0,
                                              "yanchor": "bottom"})
        layout["annotations"].append({"text": label, "showarrow": False, "xref": "paper",
                                      "yref": "paper", "x": -0.01, "xanchor": "right",
                                      "y": 1 - r * (h + 0.06) - h / 2, "textangle": -90})
    return {"data": traces, "layout": layout}


def unit_figure(view: UnitView, projector: bool = False) -> Figure:
    """Figure 2a: the unit's batch projections <w, z_{l-1}> with the hyperplane at mu (left),
    and the TLS loss as a function of mu, a parabola whose minimum is the BN mean (right)."""
    st = _style(projector)
    name = f"unit {view.unit + 1} of layer {view.layer}"
    traces = [
        {"type": "histogram", "x": _typed(view.projections), "nbinsx": 30,
         "marker": {"color": "#adb5bd"}, "name": "<w, z> over the batch",
         "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "mode": "lines", "x": _typed(view.mu_grid),
         "y": _typed(view.tls_loss), "name": "TLS loss L(μ)",
         "line": {"color": "#495057", "width": st["current"]}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "mode": "markers", "x": [view.mu],
         "y": [(view.batch_std**2 + (view.batch_mean - view.mu) ** 2)
               / max(view.weight_norm, 1e-300) ** 2],
         "name": "current μ", "marker": {"color": TARGET, "size": st["marker"] * 2.2},
         "xaxis": "x2", "yaxis": "y2"},
    ]
    shapes = [
        {"type": "line", "xref": "x", "yref": "paper", "x0": view.mu, "x1": view.mu,
         "y0": 0, "y1": 1, "line": {"color": TARGET, "width": st["current"] * 1.5}},
        {"type": "line", "xref": "x", "yref": "paper", "x0": view.batch_mean,
         "x1": view.batch_mean, "y0": 0, "y1": 1,
         "line": {"color": HIGHLIGHT, "width": st["earlier"] * 1.5, "dash": "dash"}},
        {"type": "line", "xref": "x2", "yref": "paper", "x0": view.batch_mean,
         "x1": view.batch_mean, "y0": 0, "y1": 1,
         "line": {"color": HIGHLIGHT, "width": st["earlier"] * 1.5, "dash": "dash"}},
    ]
    return {"data": traces, "layout": {
        "margin": {"l": 50, "r": 10, "t": 50, "b": 40}, "plot_bgcolor": "white",
        "font": {"size": st["font"]}, "shapes": shapes, "bargap": 0.05,
        "title": {"text": f"{name}: hyperplane at μ = {view.mu:.3g} (orange), BN mean "
                          f"{view.batch_mean:.3g} (dashed)", "x": 0.02},
        "xaxis": {"domain": [0, 0.47], "title": {"text": "⟨w, z⟩ in the layer's input space"}},
        "yaxis": {"title": {"text": "batch points"}},
        "xaxis2": {"domain": [0.55, 1], "title": {"text": "μ"}},
        "yaxis2": {"anchor": "x2", "title": {"text": "mean squared distance"}},
        "legend": {"orientation": "h", "y": -0.25}, "uirevision": "unit"}}


# ---- Figure 6 and 7 (jitter page) --------------------------------------------------------

CLASS_COLOURS = ("#c92a2a", "#2b8a3e")  # red vs green, as in the paper's Figure 6


def jitter_figure(boundaries: list[np.ndarray], test_boundary: np.ndarray, points: np.ndarray,
                  labels: np.ndarray, box: tuple[float, ...], title: str) -> Figure:
    """Figure 6: every realisation's boundary in blue (one trace), test-time boundary black."""
    segs = np.concatenate(boundaries) if boundaries else np.zeros((0, 4))
    traces = [
        _line(segs, "rgba(31, 95, 214, 0.45)", 1.2, f"{len(boundaries)} mini-batches",
              legend=True),
        _line(test_boundary, "black", 2.5, "all data (test time)", legend=True),
    ]
    for c, colour in enumerate(CLASS_COLOURS):
        sel = labels == c
        traces.append({"type": "scatter", "mode": "markers", "name": f"class {c}",
                       "x": _typed(points[sel, 0].astype(np.float32)),
                       "y": _typed(points[sel, 1].astype(np.float32)),
                       "marker": {"color": colour, "size": 5}})
    x0, x1, y0, y1 = box
    return {"data": traces, "layout": {
        "margin": {"l": 30, "r": 10, "t": 40, "b": 30}, "plot_bgcolor": "white",
        "title": {"text": title, "x": 0.02},
        "xaxis": _axis(x0, x1, constrain="domain"),
        "yaxis": _axis(y0, y1, scaleanchor="x", constrain="domain"),
        "legend": {"orientation": "h", "y": -0.06}, "uirevision": "jitter"}}


def disagreement_curve(sizes: list[int], areas: list[float], current: int) -> Figure:
    """Disagreement area of the K realisations as the batch size grows."""
    return {"data": [
        {"type": "scatter", "mode": "lines+markers", "x": sizes, "y": areas,
         "name": "disagreement", "line": {"color": HIGHLIGHT}},
        {"type": "scatter", "mode": "markers", "x": [current],
         "y": [areas[sizes.index(current)]] if current in sizes else [None],
         "marker": {"color": TARGET, "size": 11}, "name": "current |B|"}],
        "layout": {"margin": {"l": 45, "r": 10, "t": 40, "b": 35}, "showlegend": False,
                   "title": {"text": "disagreement area vs |B|", "font": {"size": 12}},
                   "xaxis": {"type": "log", "title": {"text": "|B|"}},
                   "yaxis": {"title": {"text": "fraction of the box"}, "rangemode": "tozero"}}}


def margins_figure(margins: np.ndarray) -> Figure:
    """Distribution of the distances from the training points to each realisation's boundary."""
    finite = margins[np.isfinite(margins)].astype(np.float32)
    return {"data": [{"type": "histogram", "x": _typed(finite), "nbinsx": 40,
                      "marker": {"color": "#adb5bd"}}],
            "layout": {"margin": {"l": 45, "r": 10, "t": 40, "b": 35},
                       "title": {"text": "margins: point-to-boundary distances",
                                 "font": {"size": 12}},
                       "xaxis": {"title": {"text": "distance"}}, "bargap": 0.05}}


def figure7_figure(samples: dict, report: dict) -> Figure:
    """Figure 7: histograms of mu (top) and sigma^2 (bottom) per unit: empirical (black),
    noise-controlled (red), and the analytical density (green) with eq. 13's mean and
    variance: normal for mu, a moment-matched gamma for sigma^2 (for Gaussian pre-activations
    that gamma is exactly the scaled chi^2_{B-1} of the biased sigma^2)."""
    from math import lgamma

    units = report["units"]
    traces: list[dict] = []
    layout: dict[str, Any] = {"margin": {"l": 40, "r": 10, "t": 40, "b": 40},
                              "barmode": "overlay", "showlegend": True,
                              "legend": {"orientation": "h", "y": 1.1, "x": 0}}
    n_units = len(units)
    for row, (key, noisy) in enumerate((("mu", "mu_noise"), ("sigma2", "sigma2_noise"))):
        for col, unit in enumerate(units):
            k = row * n_units + col + 1
            ax, ay, xkey, ykey = _panel_axes(k)
            for data, colour, name in ((samples[key][:, col], "black", "empirical"),
                                       (samples[noisy][:, col], "#e03131", "noise-controlled")):
                traces.append({"type": "histogram", "x": _typed(data.astype(np.float32)),
                               "histnorm": "probability density", "nbinsx": 40,
                               "opacity": 0.45, "marker": {"color": colour}, "name": name,
                               "legendgroup": name, "showlegend": k == 1,
                               "xaxis": ax, "yaxis": ay})
            mean, var = unit[key]["analytical_mean"], unit[key]["analytical_var"]
            lo, hi = np.percentile(samples[noisy][:, col], [0.1, 99.9])
            grid = np.linspace(lo, hi, 200)
            if var <= 0:
                dens = np.zeros_like(grid)
            elif key == "mu":
                dens = np.exp(-(grid - mean) ** 2 / (2 * var)) / np.sqrt(2 * np.pi * var)
            else:  # gamma with the analytical mean and variance
                shape, scale = mean * mean / var, var / mean
                q = np.clip(grid, 1e-300, None)
                log_pdf = ((shape - 1) * np.log(q) - q / scale - shape * np.log(scale)
                           - lgamma(shape))
                dens = np.exp(log_pdf)
            traces.append({"type": "scatter", "mode": "lines", "x": _typed(grid),
                           "y": _typed(dens), "line": {"color": "#2b8a3e", "width": 2},
                           "name": "analytical (eq. 13)", "legendgroup": "analytical",
                           "showlegend": k == 1, "xaxis": ax, "yaxis": ay})
            layout[xkey] = {"domain": [col / n_units + 0.02, (col + 1) / n_units - 0.02],
                                   "anchor": ay, "title": {"text": f"{'μ' if row == 0 else 'σ²'}"
                                                                   f", unit {col + 1}"}}
            layout[ykey] = {"domain": [0.55, 1.0] if row == 0 else [0.0, 0.42],
                                   "anchor": ax, "showticklabels": False}
    return {"data": traces, "layout": layout}


# ---- Figure 3 (density page) -------------------------------------------------------------

def density_figure(counts: np.ndarray, modes: list[str], layers: list[int],
                   data: np.ndarray, box: tuple[float, ...]) -> Figure:
    """Figure 3: rows = modes, columns = layers; each heatmap normalised by its maximum
    (printed in its title), darker = more facets; the data on top."""
    n_rows, n_cols = len(modes), len(layers)
    x0, x1, y0, y1 = box
    g = counts.shape[-1]
    traces: list[dict] = []
    layout: dict[str, Any] = {"margin": {"l": 80, "r": 10, "t": 30, "b": 10},
                              "showlegend": False, "annotations": [],
                              "plot_bgcolor": "white"}
    for r, mode in enumerate(modes):
        for c, layer in enumerate(layers):
            k = r * n_cols + c + 1
            ax, ay, xkey, ykey = _panel_axes(k)
            panel = counts[r, layer - 1]
            top = int(panel.max())
            z = np.round(255 * panel / max(top, 1)).astype(np.uint8)
            traces.append({"type": "heatmap", "z": _typed(z), "x0": x0 + (x1 - x0) / (2 * g),
                           "dx": (x1 - x0) / g, "y0": y0 + (y1 - y0) / (2 * g),
                           "dy": (y1 - y0) / g, "colorscale": "Greys", "reversescale": True,
                           "zmin": 0, "zmax": 255,
                           "showscale": False, "hoverinfo": "skip", "xaxis": ax, "yaxis": ay})
            traces.append({"type": "scatter", "mode": "markers",
                           "x": _typed(data[:, 0].astype(np.float32)),
                           "y": _typed(data[:, 1].astype(np.float32)),
                           "marker": {"color": TARGET, "size": 3}, "hoverinfo": "skip",
                           "xaxis": ax, "yaxis": ay})
            dx = [c / n_cols + 0.01, (c + 1) / n_cols - 0.01]
            dy = [1 - (r + 1) / n_rows + 0.03, 1 - r / n_rows - 0.03]
            layout[xkey] = _axis(x0, x1, domain=dx, anchor=ay, showticklabels=False)
            layout[ykey] = _axis(y0, y1, domain=dy, anchor=ax, showticklabels=False,
                                        scaleanchor=ax)
            layout["annotations"].append({
                "text": f"layer {layer} (max {top})", "showarrow": False, "xref": "paper",
                "yref": "paper", "x": sum(dx) / 2, "y": dy[1], "yanchor": "bottom",
                "font": {"size": 11}})
        layout["annotations"].append({
            "text": mode.replace("_", " "), "showarrow": False, "xref": "paper",
            "yref": "paper", "x": -0.01, "xanchor": "right",
            "y": 1 - (r + 0.5) / n_rows, "textangle": -90})
    return {"data": traces, "layout": layout}


def near_ratio_figure(ratios: np.ndarray, modes: list[str]) -> Figure:
    """Near-data ratio per layer for each mode (1 = no concentration near the data)."""
    colours = {"zero_bias": "#868e96", "random_bias": "#e8590c", "bn": HIGHLIGHT}
    layers = list(range(1, ratios.shape[1] + 1))
    return {"data": [{"type": "scatter", "mode": "lines+markers", "x": layers,
                      "y": [None if not np.isfinite(v) else float(v) for v in row],
                      "name": mode.replace("_", " "),
                      "line": {"color": colours.get(mode, "black")}}
                     for mode, row in zip(modes, ratios, strict=True)],
            "layout": {"margin": {"l": 50, "r": 10, "t": 30, "b": 35},
                       "title": {"text": "near-data ratio per layer", "font": {"size": 12}},
                       "xaxis": {"title": {"text": "layer"}, "dtick": 1},
                       "yaxis": {"title": {"text": "ratio"}, "rangemode": "tozero"}}}


JOB_COLOURS = ("#6c757d", "#fd7e14", "#0d6efd", "#198754", "#d63384", "#6f42c1", "#20c997",
               "#dc3545")


def _band(x: list, mean: list, std: list, colour: str, name: str, dash: str = "solid") -> list:
    """A mean curve with a +-1 std band (the spread over runs)."""
    upper = [m + s for m, s in zip(mean, std, strict=True)]
    lower = [m - s for m, s in zip(mean, std, strict=True)]
    return [
        {"type": "scatter", "x": list(x) + list(x)[::-1], "y": upper + lower[::-1],
         "fill": "toself", "fillcolor": colour, "opacity": 0.15, "line": {"width": 0},
         "hoverinfo": "skip", "showlegend": False, "legendgroup": name},
        {"type": "scatter", "mode": "lines+markers", "x": list(x), "y": mean, "name": name,
         "legendgroup": name, "line": {"color": colour, "dash": dash}}]


def job_figure(curves: list[tuple[str, str, dict]], title: str = "") -> Figure:
    """Curves of one or several jobs: ``(label, job type, summary)`` each (summary from
    :func:`bnviz.images.experiments.summarise`). Training jobs: test accuracy per epoch, mean +- std
    over runs, per arm. Concentration: units crossing the eps-ball vs eps, training images
    solid and Gaussian images dashed."""
    data: list[dict] = []
    concentration = bool(curves) and all(t == "concentration" for _, t, _ in curves)
    landscape = bool(curves) and all(t == "landscape" for _, t, _ in curves)
    if landscape:
        return _landscape_job_figure(curves, title)
    k = 0
    for label, job_type, summary in curves:
        for arm, values in (summary or {}).get("arms", {}).items():
            colour = JOB_COLOURS[k % len(JOB_COLOURS)]
            k += 1
            name = f"{label} {arm}".strip()
            if job_type == "concentration":
                for kind, dash in (("data", "solid"), ("gaussian", "dash")):
                    v = values.get(kind)
                    if v and v["eps"]:
                        data += _band(v["eps"], v["mean"], v["std"], colour,
                                      f"{name}, {kind} images", dash)
            elif values.get("epoch"):
                data += _band(values["epoch"], [100 * m for m in values["mean"]],
                              [100 * s for s in values["std"]], colour, name)
    if concentration:
        axes = {"xaxis": {"type": "log", "title": {"text": "ε (RMS change per pixel, in std)"}},
                "yaxis": {"title": {"text": "units whose sign changes in the ball"},
                          "rangemode": "tozero"}}
    else:
        axes = {"xaxis": {"title": {"text": "epoch"}, "dtick": 1},
                "yaxis": {"title": {"text": "test accuracy (%)"}}}
    return {"data": data, "layout": {
        "margin": {"l": 55, "r": 10, "t": 35, "b": 40}, "title": {"text": title,
                                                                  "font": {"size": 12}},
        "legend": {"font": {"size": 10}}, "uirevision": title, **axes}}


def weight_plane_figure(plane) -> Figure:
    """Dannemann & Junike's weight plane (bnviz.papers.dannemann.WeightPlane): C^ filled (log of its
    excess over the BN minimum), C as contour lines, W*, W0, the BN minima (ray or line), the
    nearest BN optimum, and the gradient of C^ at W* (its length is scaled to be seen)."""
    xs, ys = plane.xs, plane.ys
    excess = np.log10(np.maximum(plane.bn_loss - plane.min_bn_loss, 0) + 1e-3)
    e = float(xs[-1])
    d = plane.bn_direction
    ray = [[0.0, 0.0], (2 * e * d).tolist()] if not plane.both_signs else \
        [(-2 * e * d).tolist(), (2 * e * d).tolist()]
    g = plane.grad_at_w_star
    gn = float(np.hypot(*g))
    tip = plane.w_star - (0.25 * e * g / gn if gn > 0 else 0)  # descent direction
    marker = {"size": 11, "line": {"width": 1, "color": "white"}}
    data = [
        {"type": "contour", "x": xs.tolist(), "y": ys.tolist(), "z": excess.tolist(),
         "colorscale": "Viridis", "reversescale": True, "ncontours": 24,
         "contours": {"coloring": "fill", "showlines": False},
         "colorbar": {"title": {"text": "log10(C^ − min C^)", "side": "right"},
                      "thickness": 12}, "name": "BN loss C^",  # hoverable: a click moves W0
         "hovertemplate": "w = (%{x:.3f}, %{y:.3f})<extra></extra>"},
        {"type": "contour", "x": xs.tolist(), "y": ys.tolist(),
         "z": np.log10(plane.loss + 1e-9).tolist(), "showscale": False, "ncontours": 14,
         "contours": {"coloring": "none"}, "line": {"color": "white", "width": 1},
         "name": "loss C (log)", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": [p[0] for p in ray],
         "y": [p[1] for p in ray], "line": {"color": "#e8590c", "width": 3},
         "name": "BN minima (line: γ learnable)" if plane.both_signs else "BN minima (a ray)"},
        {"type": "scatter", "mode": "markers", "x": [float(plane.w_star[0])],
         "y": [float(plane.w_star[1])], "marker": {**marker, "color": "black"},
         "name": "W* (minimum of C)"},
        {"type": "scatter", "mode": "markers", "x": [float(plane.w0[0])],
         "y": [float(plane.w0[1])], "marker": {**marker, "color": HIGHLIGHT,
                                               "symbol": "diamond"}, "name": "W0"},
        {"type": "scatter", "mode": "lines+markers",
         "x": [float(plane.w0[0]), float(plane.nearest_bn[0])],
         "y": [float(plane.w0[1]), float(plane.nearest_bn[1])],
         "line": {"color": HIGHLIGHT, "dash": "dot"},
         "marker": {"size": [0, 10], "color": "#e8590c"}, "name": "nearest BN optimum"},
    ]
    annotations = [{"x": float(tip[0]), "y": float(tip[1]), "ax": float(plane.w_star[0]),
                    "ay": float(plane.w_star[1]), "xref": "x", "yref": "y", "axref": "x",
                    "ayref": "y", "showarrow": True, "arrowhead": 3, "arrowwidth": 2,
                    "arrowcolor": BOUNDARY, "text": ""}] if gn > 0 else []
    r = 0.03 * e  # W0 as a draggable circle (the graph allows moving shapes)
    w0_shape = {"type": "circle", "xref": "x", "yref": "y", "x0": float(plane.w0[0]) - r,
                "x1": float(plane.w0[0]) + r, "y0": float(plane.w0[1]) - r,
                "y1": float(plane.w0[1]) + r, "line": {"color": "white", "width": 2},
                "fillcolor": HIGHLIGHT, "opacity": 0.8}
    return {"data": data, "layout": {
        "shapes": [w0_shape],
        "margin": {"l": 50, "r": 10, "t": 30, "b": 40},
        "title": {"text": "weight plane: C^ (fill), C (white lines), −∇C^ at W* (red arrow)",
                  "font": {"size": 12}},
        "xaxis": {"title": {"text": "w1"}, "range": [float(xs[0]), float(xs[-1])]},
        "yaxis": {"title": {"text": "w2"}, "range": [float(ys[0]), float(ys[-1])],
                  "scaleanchor": "x"},
        "legend": {"orientation": "h", "y": -0.15}, "annotations": annotations,
        "clickmode": "event"}}


ARM_COLOURS = {"bn": HIGHLIGHT, "no_bn": "#e8590c"}
ARM_NAMES = {"bn": "with BN", "no_bn": "without BN"}


def landscape_figure(arms: dict[str, dict[str, np.ndarray]]) -> Figure:
    """Santurkar et al.'s Figure 4 on the 2D task: loss range, gradient-change range and the
    effective beta-smoothness per step, with and without BN (bands: min to max over eta)."""
    data: list[dict] = []
    panels = (("loss", "loss_min", "loss_max", "x", "y"),
              ("gradient change", "grad_change_min", "grad_change_max", "x2", "y2"))
    for arm, rows in arms.items():
        steps = list(range(1, len(rows["loss"]) + 1))
        colour = ARM_COLOURS.get(arm, "black")
        for title, lo, hi, xa, ya in panels:
            data += [{"type": "scatter", "x": steps, "y": _typed(rows[hi]), "xaxis": xa,
                      "yaxis": ya, "mode": "lines", "line": {"width": 0, "color": colour},
                      "showlegend": False, "hoverinfo": "skip"},
                     {"type": "scatter", "x": steps, "y": _typed(rows[lo]), "xaxis": xa,
                      "yaxis": ya, "mode": "lines", "fill": "tonexty",
                      "line": {"width": 0.5, "color": colour}, "opacity": 0.4,
                      "name": f"{ARM_NAMES.get(arm, arm)}: {title} range",
                      "showlegend": False}]
        data += [{"type": "scatter", "x": steps, "y": _typed(rows["beta_eff"]), "xaxis": "x3",
                  "yaxis": "y3", "mode": "lines", "line": {"color": colour},
                  "name": ARM_NAMES.get(arm, arm)},
                 {"type": "scatter", "x": steps, "y": _typed(rows["loss"]), "xaxis": "x4",
                  "yaxis": "y4", "mode": "lines", "line": {"color": colour},
                  "showlegend": False, "name": f"{ARM_NAMES.get(arm, arm)}: training loss"}]
    titles = ("loss along −g (range over η)", "‖g − ∇L(θ − ηg)‖ (range over η)",
              "effective β-smoothness", "training loss")
    layout: dict[str, Any] = {"margin": {"l": 45, "r": 10, "t": 30, "b": 35},
                              "legend": {"orientation": "h", "y": 1.12, "x": 0},
                              "annotations": []}
    for k, title in enumerate(titles):
        row, col = divmod(k, 2)
        suffix = "" if k == 0 else str(k + 1)
        layout[f"xaxis{suffix}"] = {"domain": [col * 0.53, col * 0.53 + 0.47],
                                    "anchor": f"y{suffix}",
                                    "title": {"text": "step"} if row else {}}
        layout[f"yaxis{suffix}"] = {"domain": [0.56 - row * 0.56, 1.0 - row * 0.56],
                                    "anchor": f"x{suffix}",
                                    "type": "log" if k in (1, 2) else "linear"}
        layout["annotations"].append({"text": title, "showarrow": False, "xref": "paper",
                                      "yref": "paper", "x": col * 0.53, "xanchor": "left",
                                      "y": 1.0 - row * 0.56, "yanchor": "bottom",
                                      "font": {"size": 11}})
    return {"data": data, "layout": layout}


def ics_figure(arms: dict[str, dict[str, np.ndarray]]) -> Figure:
    """Definition 2.1 per layer: mean over steps of the l2 difference and of the cosine."""
    data = []
    for arm, rows in arms.items():
        layers = list(range(1, rows["ics_l2"].shape[1] + 1))
        colour = ARM_COLOURS.get(arm, "black")
        data += [{"type": "bar", "x": layers, "y": _typed(rows["ics_l2"].mean(0)),
                  "name": f"{ARM_NAMES.get(arm, arm)}: ‖G − G′‖", "marker": {"color": colour}},
                 {"type": "scatter", "x": layers, "y": _typed(rows["ics_cos"].mean(0)),
                  "yaxis": "y2", "mode": "lines+markers", "line": {"color": colour,
                                                                   "dash": "dot"},
                  "name": f"{ARM_NAMES.get(arm, arm)}: cos(G, G′)"}]
    return {"data": data, "layout": {
        "margin": {"l": 45, "r": 45, "t": 30, "b": 35}, "barmode": "group",
        "title": {"text": "internal covariate shift per layer (mean over steps)",
                  "font": {"size": 12}},
        "xaxis": {"title": {"text": "layer"}, "dtick": 1},
        "yaxis": {"title": {"text": "ℓ2 difference"}},
        "yaxis2": {"title": {"text": "cosine"}, "overlaying": "y", "side": "right",
                   "range": [-1.05, 1.05]},
        "legend": {"orientation": "h", "y": -0.25}}}


def decision_maps_figure(decision: dict[str, np.ndarray], box, points: np.ndarray,
                         labels: np.ndarray) -> Figure:
    """The trained networks' predicted class on a grid of the box, with the data."""
    x0, x1, y0, y1 = (float(v) for v in box)
    data, layout = [], {"margin": {"l": 30, "r": 10, "t": 30, "b": 25}, "showlegend": False,
                        "annotations": []}
    for k, (arm, grid) in enumerate(decision.items()):
        suffix = "" if k == 0 else str(k + 1)
        res = grid.shape[0]
        axis = np.linspace(x0, x1, res).tolist()
        data.append({"type": "heatmap", "z": grid.astype(float).tolist(), "x": axis,
                     "y": np.linspace(y0, y1, res).tolist(), "xaxis": f"x{suffix}",
                     "yaxis": f"y{suffix}", "showscale": False, "hoverinfo": "skip",
                     "colorscale": [[0, "#dbe4ff"], [1, "#ffe8cc"]]})
        data.append({"type": "scatter", "mode": "markers", "x": _typed(points[:, 0]),
                     "y": _typed(points[:, 1]), "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "marker": {"size": 4, "color": _typed(labels.astype(float)),
                                "colorscale": [[0, HIGHLIGHT], [1, "#e8590c"]]}})
        layout[f"xaxis{suffix}"] = {"domain": [k * 0.52, k * 0.52 + 0.48],
                                    "range": [x0, x1], "anchor": f"y{suffix}"}
        layout[f"yaxis{suffix}"] = {"range": [y0, y1], "anchor": f"x{suffix}",
                                    "scaleanchor": f"x{suffix}"}
        layout["annotations"].append({"text": f"decision regions {ARM_NAMES.get(arm, arm)}",
                                      "showarrow": False, "xref": "paper", "yref": "paper",
                                      "x": k * 0.52, "xanchor": "left", "y": 1.0,
                                      "yanchor": "bottom", "font": {"size": 11}})
    return {"data": data, "layout": layout}


def _normal_pdf(x: np.ndarray, mean: float, var: float) -> np.ndarray:
    return np.exp(-((x - mean) ** 2) / (2 * var)) / np.sqrt(2 * np.pi * var)


def batch_statistics_figure(stats) -> Figure:
    """Histograms of mu_B and sigma_B (bnviz.papers.luo.StatisticsSamples) with Luo et al.'s
    Gaussian model: corrected (solid) and as printed (dashed, var(sigma_B) without
    sigma_P^2)."""
    data: list[dict] = []
    panels = ((stats.mu, stats.mu_p, stats.mu_var_model, None, "μ_B", ""),
              (stats.sigma, stats.sigma_p, stats.sigma_var_model, stats.sigma_var_printed,
               "σ_B", "2"))
    layout: dict[str, Any] = {"margin": {"l": 40, "r": 10, "t": 30, "b": 35},
                              "barmode": "overlay", "legend": {"orientation": "h", "y": 1.2}}
    for k, (values, mean, var, printed, name, suffix) in enumerate(panels):
        lo, hi = np.percentile(values, [0.1, 99.9])
        xs = np.linspace(lo, hi, 200)
        data.append({"type": "histogram", "x": _typed(values), "histnorm": "probability density",
                     "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "nbinsx": 60,
                     "marker": {"color": "#adb5bd"}, "name": "over mini-batches",
                     "showlegend": k == 0})
        data.append({"type": "scatter", "x": _typed(xs), "y": _typed(_normal_pdf(xs, mean, var)),
                     "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "mode": "lines",
                     "line": {"color": "#2f9e44"}, "name": "Gaussian model (corrected)",
                     "showlegend": k == 0})
        if printed is not None:
            data.append({"type": "scatter", "x": _typed(xs),
                         "y": _typed(_normal_pdf(xs, mean, printed)), "xaxis": f"x{suffix}",
                         "yaxis": f"y{suffix}", "mode": "lines",
                         "line": {"color": BOUNDARY, "dash": "dash"},
                         "name": "σ_B model as printed"})
        layout[f"xaxis{suffix}"] = {"domain": [k * 0.52, k * 0.52 + 0.48],
                                    "anchor": f"y{suffix}", "title": {"text": name}}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}"}
    return {"data": data, "layout": layout}


def gap_figure(gammas: np.ndarray, gap: np.ndarray, zeta: float, batch_size: int) -> Figure:
    return {"data": [
        {"type": "scatter", "mode": "markers", "x": _typed(zeta * gammas**2), "y": _typed(gap),
         "name": "Monte Carlo", "marker": {"color": HIGHLIGHT}},
        {"type": "scatter", "mode": "lines", "x": [0, float(zeta * gammas[-1] ** 2)],
         "y": [0, float(zeta * gammas[-1] ** 2)], "name": "= ζγ²",
         "line": {"color": "#868e96", "dash": "dot"}}],
        "layout": {"margin": {"l": 45, "r": 10, "t": 30, "b": 40},
                   "title": {"text": f"E_B[loss] − PN loss vs ζγ², M = {batch_size}",
                             "font": {"size": 12}},
                   "xaxis": {"title": {"text": "ζγ² (ζ = 3/(4M))"}},
                   "yaxis": {"title": {"text": "gap"}},
                   "legend": {"orientation": "h", "y": -0.3}}}


def dynamics_figure(dyn) -> Figure:
    """gamma, R and L over time (bnviz.papers.luo.Dynamics), with the fixed point gamma0."""
    t = dyn.t[::10]
    traces = [(dyn.gamma[::10], "γ", HIGHLIGHT), (dyn.r[::10], "R (overlap)", "#2f9e44"),
              (dyn.length[::10], "L = |w|/√N", "#e8590c")]
    data = [{"type": "scatter", "mode": "lines", "x": _typed(t), "y": _typed(y), "name": name,
             "line": {"color": colour}} for y, name, colour in traces]
    data.append({"type": "scatter", "mode": "lines", "x": [float(t[0]), float(t[-1])],
                 "y": [dyn.gamma0, dyn.gamma0], "name": "γ0 = 1/(1+2ζ)",
                 "line": {"color": HIGHLIGHT, "dash": "dot", "width": 1}})
    return {"data": data, "layout": {
        "margin": {"l": 40, "r": 10, "t": 30, "b": 40},
        "title": {"text": f"learning dynamics (eq. 6); BN stable for η_eff < "
                          f"{dyn.eta_max:.3g}", "font": {"size": 12}},
        "xaxis": {"title": {"text": "t = steps / N"}}, "legend": {"orientation": "h",
                                                                  "y": -0.3}}}


MULTICLASS_COLOURS = (HIGHLIGHT, "#e8590c", "#2f9e44", "#ae3ec9", "#f08c00", "#1098ad")


def whitening_figure(points: np.ndarray, whitened: np.ndarray, labels: np.ndarray) -> Figure:
    """The centred data X beside U of X = U Sigma V^T (Ergen et al.'s whitening)."""
    colours = [MULTICLASS_COLOURS[int(c) % len(MULTICLASS_COLOURS)] for c in labels]
    centred = points - points.mean(0)
    u = whitened if whitened.shape[1] >= 2 else np.column_stack([whitened[:, 0],
                                                                 np.zeros(len(whitened))])
    data = [{"type": "scatter", "mode": "markers", "x": _typed(a[:, 0]), "y": _typed(a[:, 1]),
             "xaxis": f"x{s}", "yaxis": f"y{s}", "marker": {"color": colours, "size": 6},
             "showlegend": False} for a, s in ((centred, ""), (u, "2"))]
    layout: dict[str, Any] = {"margin": {"l": 35, "r": 10, "t": 30, "b": 30},
                              "annotations": []}
    for k, (s, title) in enumerate((("", "centred data X"), ("2", "whitened U (UᵀU = I)"))):
        layout[f"xaxis{s}"] = {"domain": [k * 0.54, k * 0.54 + 0.46], "anchor": f"y{s}"}
        layout[f"yaxis{s}"] = {"anchor": f"x{s}", "scaleanchor": f"x{s}"}
        layout["annotations"].append({"text": title, "showarrow": False, "xref": "paper",
                                      "yref": "paper", "x": k * 0.54, "xanchor": "left",
                                      "y": 1.0, "yanchor": "bottom", "font": {"size": 11}})
    return {"data": data, "layout": layout}


def closed_form_figure(result) -> Figure:
    """Each active unit's normalised (|gamma|, alpha) against the closed form, per class."""
    data = []
    for c in range(len(result.gamma_star)):
        colour = MULTICLASS_COLOURS[c % len(MULTICLASS_COLOURS)]
        mine = result.unit_class == c
        data.append({"type": "scatter", "mode": "markers", "x": _typed(result.unit_gamma[mine]),
                     "y": _typed(result.unit_alpha[mine]), "name": f"class {c}: units",
                     "marker": {"color": colour, "size": 8, "opacity": 0.7}})
        data.append({"type": "scatter", "mode": "markers", "x": [float(result.gamma_star[c])],
                     "y": [float(result.alpha_star[c])], "name": f"class {c}: γ*, α*",
                     "marker": {"color": colour, "size": 16, "symbol": "x-thin",
                                "line": {"width": 3, "color": colour}}})
    theta = np.linspace(0, np.pi / 2, 60)
    data.append({"type": "scatter", "mode": "lines", "x": _typed(np.cos(theta)),
                 "y": _typed(np.sin(theta)), "line": {"color": "#ced4da", "width": 1},
                 "showlegend": False, "hoverinfo": "skip"})
    return {"data": data, "layout": {
        "margin": {"l": 40, "r": 10, "t": 30, "b": 40},
        "title": {"text": "trained units vs the closed form", "font": {"size": 12}},
        "xaxis": {"title": {"text": "|γ| / ‖(γ, α)‖"}, "range": [0, 1.05]},
        "yaxis": {"title": {"text": "α / ‖(γ, α)‖"}, "range": [-0.05, 1.05],
                  "scaleanchor": "x"},
        "legend": {"font": {"size": 9}}}}


def _landscape_job_figure(curves: list[tuple[str, str, dict]], title: str) -> Figure:
    """Landscape jobs: the effective beta-smoothness per measured step (mean +- std over
    runs) per arm, and the test accuracy per epoch on a second axis pair."""
    data: list[dict] = []
    k = 0
    for label, _type, summary in curves:
        for arm, values in (summary or {}).get("arms", {}).items():
            colour = JOB_COLOURS[k % len(JOB_COLOURS)]
            k += 1
            land = values.get("landscape") or {}
            if land.get("step"):
                data += _band(land["step"], land["beta_eff"], land["beta_eff_std"], colour,
                              f"{label} {arm}: effective β".strip())
            if values.get("epoch"):
                data.append({"type": "scatter", "mode": "lines+markers",
                             "x": values["epoch"], "y": [100 * m for m in values["mean"]],
                             "xaxis": "x2", "yaxis": "y2", "line": {"color": colour},
                             "name": f"{label} {arm}: test accuracy".strip()})
    return {"data": data, "layout": {
        "margin": {"l": 55, "r": 10, "t": 35, "b": 40},
        "title": {"text": title, "font": {"size": 12}}, "legend": {"font": {"size": 10}},
        "uirevision": title,
        "xaxis": {"domain": [0, 0.62], "title": {"text": "step"}},
        "yaxis": {"type": "log", "title": {"text": "effective β-smoothness"}},
        "xaxis2": {"domain": [0.72, 1], "anchor": "y2", "title": {"text": "epoch"},
                   "dtick": 1},
        "yaxis2": {"anchor": "x2", "title": {"text": "test accuracy (%)"}}}}


def normalisation_figure(result) -> Figure:
    """BN, PN and PN + gamma decay (bnviz.papers.luo.NormalisationComparison): each network's
    regions (activation patterns on a grid, coloured by hash) under its decision boundary."""
    x0, x1, y0, y1 = (float(v) for v in result.box)
    names = {"bn": "BN (batch statistics)", "pn": "population normalisation",
             "pn_decay": f"PN + γ decay (ζ = {result.zeta:.3g})"}
    data, layout = [], {"margin": {"l": 30, "r": 10, "t": 30, "b": 25}, "showlegend": False,
                        "annotations": []}
    for k, arm in enumerate(result.arms):
        s = "" if k == 0 else str(k + 1)
        res = result.patterns[arm].shape[0]
        axis = np.linspace(x0, x1, res).tolist()
        codes = np.unique(result.patterns[arm], return_inverse=True)[1].reshape(res, res)
        fill = np.asarray([int(c) % len(REGION_PALETTE) for c in codes.ravel()]).reshape(res,
                                                                                         res)
        scale = [[i / (len(REGION_PALETTE) - 1), c] for i, c in enumerate(REGION_PALETTE)]
        data += [{"type": "heatmap", "z": fill.tolist(), "x": axis, "y": axis,
                  "xaxis": f"x{s}", "yaxis": f"y{s}", "colorscale": scale, "zmin": 0,
                  "zmax": len(REGION_PALETTE) - 1, "showscale": False, "hoverinfo": "skip"},
                 {"type": "contour", "z": result.decision[arm].astype(float).tolist(),
                  "x": axis, "y": axis, "xaxis": f"x{s}", "yaxis": f"y{s}",
                  "contours": {"coloring": "none", "start": 0.5, "end": 0.5, "size": 1},
                  "line": {"color": BOUNDARY, "width": 2}, "showscale": False,
                  "hoverinfo": "skip"},
                 {"type": "scatter", "mode": "markers", "x": _typed(result.points[:, 0]),
                  "y": _typed(result.points[:, 1]), "xaxis": f"x{s}", "yaxis": f"y{s}",
                  "marker": {"size": 3, "color": _typed(result.labels.astype(float)),
                             "colorscale": [[0, HIGHLIGHT], [1, "#e8590c"]]}}]
        layout[f"xaxis{s}"] = {"domain": [k * 0.34, k * 0.34 + 0.32], "range": [x0, x1],
                               "anchor": f"y{s}", "showticklabels": False}
        layout[f"yaxis{s}"] = {"range": [y0, y1], "anchor": f"x{s}", "scaleanchor": f"x{s}",
                               "showticklabels": False}
        layout["annotations"].append({"text": names.get(arm, arm), "showarrow": False,
                                      "xref": "paper", "yref": "paper", "x": k * 0.34,
                                      "xanchor": "left", "y": 1.0, "yanchor": "bottom",
                                      "font": {"size": 11}})
    return {"data": data, "layout": layout}


def data_points_figure(points: np.ndarray, labels: np.ndarray) -> Figure:
    """The inputs of the weight-plane view as draggable circles, labelled with their y."""
    lo = float(min(points.min(), 0.0)) - 1.0
    hi = float(max(points.max(), 1.0)) + 1.0
    r = 0.04 * (hi - lo)
    shapes = [{"type": "circle", "xref": "x", "yref": "y", "x0": float(p[0]) - r,
               "x1": float(p[0]) + r, "y0": float(p[1]) - r, "y1": float(p[1]) + r,
               "line": {"color": HIGHLIGHT}, "fillcolor": HIGHLIGHT, "opacity": 0.5}
              for p in points]
    return {"data": [{"type": "scatter", "mode": "text", "x": _typed(points[:, 0]),
                      "y": _typed(points[:, 1]), "text": [f"y={v:g}" for v in labels],
                      "textposition": "top right", "hoverinfo": "skip"}],
            "layout": {"shapes": shapes, "margin": {"l": 30, "r": 5, "t": 5, "b": 25},
                       "xaxis": {"range": [lo, hi], "title": {"text": "x1"}},
                       "yaxis": {"range": [lo, hi], "scaleanchor": "x"},
                       "showlegend": False}}
