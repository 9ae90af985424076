"""The /slice page's figures: each network's partition on the plane (facets of every layer
up to the chosen one, the decision boundary of each mini-batch, the three images), region
density against the distance to the images, and image thumbnails.

A stored slice (bnviz.slices.job.load_slices) in, figure dicts out."""

from __future__ import annotations

import base64
import io
from typing import Any

import numpy as np
from PIL import Image

from bnviz.slices.inspect import class_grid
from bnviz.web.callbacks.plotting import Figure, axis, line, panel_axes, typed_array

__all__ = ["density_figure", "slice_figure", "thumbnail"]

BOUNDARY = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
            "#17becf")
ARM_COLOURS = ("#d62728", "#1f77b4")


def _panel(stored: dict, arm: int, layer: int, k: int, gap: float) -> list[dict]:
    ax, ay, _, _ = panel_axes(k)
    last = min(layer, len(stored[f"a{arm}_names"]) - 1)
    facets = np.concatenate([stored[f"a{arm}_l{i}_facets"] for i in range(last + 1)])
    aa, bb, cls = class_grid(stored, arm)
    traces = [{"type": "heatmap", "x": typed_array(aa), "y": typed_array(bb),
               "z": typed_array(cls.astype(np.int16)), "opacity": 0, "showscale": False,
               "hovertemplate": "a %{x:.3f}, b %{y:.3f}<br>class %{z}<extra></extra>",
               "xaxis": ax, "yaxis": ay},
              line(facets, "rgba(90,90,90,0.55)", 0.6, "facets", axes=(ax, ay))]
    b = 0
    while f"a{arm}_boundary{b}" in stored:
        traces.append(line(stored[f"a{arm}_boundary{b}"], BOUNDARY[b % len(BOUNDARY)],
                           2.2 if b == 0 else 1.4, f"boundary {b + 1}", axes=(ax, ay)))
        b += 1
    anchors, labels = stored["anchors"], stored["labels"]
    traces.append({"type": "scatter", "mode": "markers+text", "x": anchors[:, 0].tolist(),
                   "y": anchors[:, 1].tolist(), "xaxis": ax, "yaxis": ay,
                   "marker": {"symbol": "star", "size": 14, "color": "black"},
                   "text": [f"{i + 1}" + (f" ({int(c)})" if c >= 0 else "")
                            for i, c in enumerate(labels)],
                   "textposition": "top center", "hoverinfo": "skip", "showlegend": False})
    return traces


def slice_figure(stored: dict, layer: int) -> Figure:
    """One panel a network, side by side, each square on the window."""
    arms = [str(a) for a in stored["arms"]]
    a0, a1, b0, b1 = (float(v) for v in stored["window"])
    traces: list[dict] = []
    layout: dict[str, Any] = {"margin": {"l": 40, "r": 10, "t": 40, "b": 30},
                              "showlegend": False, "plot_bgcolor": "white",
                              "annotations": [], "hovermode": "closest"}
    n = len(arms)
    for i, arm in enumerate(arms):
        k = i + 1
        traces += _panel(stored, i, layer, k, 0.0)
        ax, ay, xkey, ykey = panel_axes(k)
        lo, hi = i / n + (0.04 if i else 0), (i + 1) / n - (0.04 if i < n - 1 else 0)
        layout[xkey] = axis(a0, a1, domain=[lo, hi], title={"text": "a"}, constrain="domain")
        layout[ykey] = axis(b0, b1, scaleanchor=ax, constrain="domain",
                            title={"text": "b"} if i == 0 else None)
        names = stored[f"a{i}_names"]
        last = min(layer, len(names) - 1)
        regions = len(stored[f"a{i}_l{last}_ptr"]) - 1
        dis = float(stored[f"a{i}_disagreement"])
        extra = "" if np.isnan(dis) else f", boundaries disagree on {100 * dis:.1f}%"
        layout["annotations"].append({
            "text": f"<b>{arm}</b>: layer {last + 1} ({names[last]}), {regions:,} regions"
                    f"{extra}", "xref": "paper", "yref": "paper", "x": (lo + hi) / 2,
            "y": 1.0, "yanchor": "bottom", "showarrow": False, "font": {"size": 12}})
    return {"data": traces, "layout": layout}


def density_figure(stored: dict) -> Figure:
    """Regions per unit area against the distance to the nearest of the three images, each
    network (BN against no BN), over the default window (estimated from its boundary
    crossings on a grid)."""
    traces = []
    for i, arm in enumerate(str(a) for a in stored["arms"]):
        dens = stored[f"a{i}_density"]
        traces.append({"type": "scatter", "mode": "lines+markers",
                       "x": stored[f"a{i}_distance"].tolist(),
                       "y": [None if not np.isfinite(v) or v <= 0 else float(v) for v in dens],
                       "name": arm, "line": {"color": ARM_COLOURS[i % 2]}})
    return {"data": traces, "layout": {
        "margin": {"l": 50, "r": 5, "t": 22, "b": 30}, "plot_bgcolor": "white",
        "title": {"text": "regions / area vs distance to the images (whole window, est.)",
                  "font": {"size": 10}},
        "xaxis": {"title": {"text": "distance", "standoff": 2}},
        "yaxis": {"type": "log", "exponentformat": "power", "nticks": 4},
        "legend": {"x": 1, "xanchor": "right", "y": 1, "font": {"size": 10}}}}


def thumbnail(image: np.ndarray, size: int = 64) -> str:
    """An image (C, H, W) as a PNG data URI, its values spread over the grey or colour range."""
    x = np.asarray(image, np.float64)
    lo, hi = float(x.min()), float(x.max())
    x = (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)
    pixels = (255 * x).astype(np.uint8)
    pic = Image.fromarray(pixels[0] if len(pixels) == 1 else pixels.transpose(1, 2, 0))
    pic = pic.resize((size, size), Image.NEAREST)
    buf = io.BytesIO()
    pic.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
