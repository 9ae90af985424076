"""The jitter page's figures: decision boundaries across mini-batches (BN paper Figure 6),
the disagreement area against |B|, the margins, and the statistics of Figure 7 (eq. 13).

Engine results in, figure dicts out; colours, names and titles come from the views'
descriptions (:mod:`bnviz.views.style`), which ``bnviz jitter --format png`` uses too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bnviz.views.bnstats import analytical_density
from bnviz.views.style import FIGURE7, JITTER
from bnviz.web.callbacks.plotting import Figure, axis, line, panel_axes, rgba, typed_array

__all__ = ["disagreement_curve", "figure7_figure", "jitter_figure", "margins_figure"]


def jitter_figure(boundaries: list[np.ndarray], test_boundary: np.ndarray, points: np.ndarray,
                  labels: np.ndarray, box: tuple[float, ...], title: str) -> Figure:
    """Figure 6: every realisation's boundary in gray (one trace), test-time boundary black,
    the classes by colour and marker shape."""
    segs = np.concatenate(boundaries) if boundaries else np.zeros((0, 4))
    traces = [
        line(segs, rgba(JITTER.realisation, JITTER.realisation_opacity), 1.2,
             JITTER.realisations_name.format(k=len(boundaries)), legend=True),
        line(test_boundary, JITTER.test_boundary, 2.5, JITTER.test_name, legend=True),
    ]
    for c, (colour, symbol) in enumerate(zip(JITTER.class_colours, JITTER.class_symbols,
                                             strict=True)):
        sel = labels == c
        traces.append({"type": "scatter", "mode": "markers",
                       "name": JITTER.class_name.format(label=c),
                       "x": typed_array(points[sel, 0].astype(np.float32)),
                       "y": typed_array(points[sel, 1].astype(np.float32)),
                       "marker": {"color": colour, "symbol": symbol, "size": 5}})
    x0, x1, y0, y1 = box
    return {"data": traces, "layout": {
        "margin": {"l": 30, "r": 10, "t": 40, "b": 30}, "plot_bgcolor": "white",
        "title": {"text": title, "x": 0.02},
        "xaxis": axis(x0, x1, constrain="domain"),
        "yaxis": axis(y0, y1, scaleanchor="x", constrain="domain"),
        "legend": {"orientation": "h", "y": -0.06}, "uirevision": "jitter"}}


def disagreement_curve(sizes: list[int], areas: list[float], current: int,
                       virtual: tuple[int, float] | None = None) -> Figure:
    """Disagreement area of the K realisations of real batches as the batch size grows; with
    ``virtual`` = (B', area), the calibrated virtual batch of B' in the current |B| drawn at
    x = B', where it should lie on the curve."""
    data = [
        {"type": "scatter", "mode": "lines+markers", "x": sizes, "y": areas,
         "name": "disagreement", "line": {"color": JITTER.curve}},
        {"type": "scatter", "mode": "markers", "x": [current],
         "y": [areas[sizes.index(current)]] if current in sizes else [None],
         "marker": {"color": JITTER.current, "size": 11}, "name": "current |B|"}]
    if virtual is not None:
        data.append({"type": "scatter", "mode": "markers", "x": [virtual[0]], "y": [virtual[1]],
                     "marker": {"color": JITTER.current, "size": 12, "symbol": "diamond-open",
                                "line": {"width": 2}},
                     "name": f"virtual B′ = {virtual[0]} in |B| = {current}"})
    return {"data": data,
            "layout": {"margin": {"l": 45, "r": 10, "t": 40, "b": 35}, "showlegend": False,
                       "title": {"text": JITTER.curve_title, "font": {"size": 12}},
                       # the batch sizes are powers of 2: ticks at every other one, labelled
                       # in full (plotly's log ticks read "2 5 10 2 5 100", issue 31)
                       "xaxis": {"type": "log", "title": {"text": JITTER.curve_x},
                                 "tickvals": _power_ticks(sizes),
                                 "ticktext": [str(v) for v in _power_ticks(sizes)]},
                       "yaxis": {"title": {"text": JITTER.curve_y}, "rangemode": "tozero"}}}


def _power_ticks(sizes: list[int]) -> list[int]:
    """Every other power of 2 from the smallest batch size to the largest (at most 6)."""
    if not sizes:
        return []
    lo, hi = max(1, min(sizes)), max(sizes)
    ticks = [2 ** k for k in range(int(np.log2(lo)), int(np.log2(hi)) + 1)]
    return ticks[::2] if len(ticks) > 6 else ticks


def margins_figure(margins: np.ndarray) -> Figure:
    """Distribution of the distances from the training points to each realisation's boundary."""
    finite = margins[np.isfinite(margins)].astype(np.float32)
    return {"data": [{"type": "histogram", "x": typed_array(finite), "nbinsx": 40,
                      "marker": {"color": JITTER.margins}}],
            "layout": {"margin": {"l": 45, "r": 10, "t": 40, "b": 35},
                       "title": {"text": JITTER.margins_title, "font": {"size": 12}},
                       "xaxis": {"title": {"text": JITTER.margins_x}}, "bargap": 0.05}}


def figure7_figure(samples: dict, report: dict) -> Figure:
    """Figure 7: histograms of mu (top) and sigma^2 (bottom) per unit: empirical (black),
    noise-controlled (vermillion), and the analytical density (blue) with eq. 13's mean and
    variance: normal for mu, a moment-matched gamma for sigma^2."""
    units = report["units"]
    traces: list[dict] = []
    layout: dict[str, Any] = {"margin": {"l": 40, "r": 10, "t": 40, "b": 40},
                              "barmode": "overlay", "showlegend": True,
                              "legend": {"orientation": "h", "y": 1.1, "x": 0}}
    n_units = len(units)
    for row, (key, noisy) in enumerate((("mu", "mu_noise"), ("sigma2", "sigma2_noise"))):
        for col, unit in enumerate(units):
            k = row * n_units + col + 1
            ax, ay, xkey, ykey = panel_axes(k)
            for data, colour, name in (
                    (samples[key][:, col], FIGURE7.empirical, FIGURE7.empirical_name),
                    (samples[noisy][:, col], FIGURE7.noise_controlled, FIGURE7.noise_name)):
                traces.append({"type": "histogram", "x": typed_array(data.astype(np.float32)),
                               "histnorm": "probability density", "nbinsx": 40,
                               "opacity": 0.45, "marker": {"color": colour}, "name": name,
                               "legendgroup": name, "showlegend": k == 1,
                               "xaxis": ax, "yaxis": ay})
            lo, hi = np.percentile(samples[noisy][:, col], [0.1, 99.9])
            grid = np.linspace(lo, hi, 200)
            dens = analytical_density(grid, unit[key]["analytical_mean"],
                                       unit[key]["analytical_var"], key == "mu")
            traces.append({"type": "scatter", "mode": "lines", "x": typed_array(grid),
                           "y": typed_array(dens),
                           "line": {"color": FIGURE7.analytical, "width": 2},
                           "name": FIGURE7.analytical_name, "legendgroup": "analytical",
                           "showlegend": k == 1, "xaxis": ax, "yaxis": ay})
            statistic = "μ" if row == 0 else "σ²"
            layout[xkey] = {"domain": [col / n_units + 0.02, (col + 1) / n_units - 0.02],
                            "anchor": ay,
                            "title": {"text": FIGURE7.axis.format(statistic=statistic,
                                                                  unit=col + 1)}}
            layout[ykey] = {"domain": [0.55, 1.0] if row == 0 else [0.0, 0.42],
                            "anchor": ax, "showticklabels": False}
    return {"data": traces, "layout": layout}
