"""The density page's figures: the concentration of the facets near the data (BN paper
Figure 3) and the near-data ratio per layer.

Engine results in, figure dicts out; colours and titles come from the views' descriptions
(:mod:`bnviz.views.style`), which ``bnviz density --format png`` uses too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bnviz.views.style import DENSITY, mode_label
from bnviz.web.callbacks.plotting import Figure, axis, colourscale, panel_axes, typed_array

__all__ = ["density_figure", "near_ratio_figure"]


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
    scale = colourscale(DENSITY.counts)
    marker = 3 if len(data) > 12 else 11  # a data set, or a few images (a slice's plane)
    for r, mode in enumerate(modes):
        for c, layer in enumerate(layers):
            k = r * n_cols + c + 1
            ax, ay, xkey, ykey = panel_axes(k)
            panel = counts[r, layer - 1]
            top = int(panel.max())
            z = np.round(255 * panel / max(top, 1)).astype(np.uint8)
            traces.append({"type": "heatmap", "z": typed_array(z),
                           "x0": x0 + (x1 - x0) / (2 * g), "dx": (x1 - x0) / g,
                           "y0": y0 + (y1 - y0) / (2 * g), "dy": (y1 - y0) / g,
                           "colorscale": scale, "zmin": 0, "zmax": 255,
                           "showscale": False, "hoverinfo": "skip", "xaxis": ax, "yaxis": ay})
            traces.append({"type": "scatter", "mode": "markers",
                           "x": typed_array(data[:, 0].astype(np.float32)),
                           "y": typed_array(data[:, 1].astype(np.float32)),
                           "marker": {"color": DENSITY.data, "size": marker},
                           "hoverinfo": "skip",
                           "xaxis": ax, "yaxis": ay})
            dx = [c / n_cols + 0.01, (c + 1) / n_cols - 0.01]
            dy = [1 - (r + 1) / n_rows + 0.03, 1 - r / n_rows - 0.03]
            layout[xkey] = axis(x0, x1, domain=dx, anchor=ay, showticklabels=False)
            layout[ykey] = axis(y0, y1, domain=dy, anchor=ax, showticklabels=False,
                                scaleanchor=ax)
            layout["annotations"].append({
                "text": DENSITY.panel.format(layer=layer, top=top), "showarrow": False,
                "xref": "paper", "yref": "paper", "x": sum(dx) / 2, "y": dy[1],
                "yanchor": "bottom", "font": {"size": 11}})
        layout["annotations"].append({
            # two lines, rotated: a row's name never runs into the next row's
            "text": mode_label(mode).replace(" ", "<br>"), "showarrow": False,
            "xref": "paper",
            "yref": "paper", "x": -0.01, "xanchor": "right",
            "y": 1 - (r + 0.5) / n_rows, "textangle": -90})
    return {"data": traces, "layout": layout}


def near_ratio_figure(ratios: np.ndarray, modes: list[str]) -> Figure:
    """Near-data ratio per layer for each mode (1 = no concentration near the data)."""
    layers = list(range(1, ratios.shape[1] + 1))
    return {"data": [{"type": "scatter", "mode": "lines+markers", "x": layers,
                      "y": [None if not np.isfinite(v) else float(v) for v in row],
                      "name": mode_label(mode),
                      "line": {"color": DENSITY.mode_colour(mode)}}
                     for mode, row in zip(modes, ratios, strict=True)],
            "layout": {"margin": {"l": 50, "r": 10, "t": 30, "b": 35},
                       "title": {"text": DENSITY.ratio_title, "font": {"size": 12}},
                       "xaxis": {"title": {"text": DENSITY.ratio_x}, "dtick": 1},
                       "yaxis": {"title": {"text": DENSITY.ratio_y}, "rangemode": "tozero"}}}
