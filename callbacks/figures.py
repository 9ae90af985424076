"""Plotly figure builders: engine results in, figures out (no computation of their own).

Geometry goes to the browser compactly: all regions of one colour are one filled trace (paths
separated by None), all facets of one layer one line trace.
"""

from __future__ import annotations

import zlib

import numpy as np
import plotly.graph_objects as go

from bnviz.partition import Partition, Polygons

__all__ = ["partition_figure", "region_colour_index"]

REGION_PALETTE = (
    "#e8eef7", "#f6e8e8", "#e9f4e6", "#f7f1e1", "#efe7f5", "#e3f3f3",
    "#f4e4ee", "#eceee2", "#e2ebf3", "#f5ece4", "#e6f0ec", "#eee6e6",
)
HIGHLIGHT = "#1f5fd6"
EARLIER = "#9a9a9a"


def region_colour_index(polys: Polygons) -> np.ndarray:
    """A palette index per region from its activation code: stable when sliders move."""
    packed = np.packbits(polys.codes, axis=1)
    return np.array([zlib.crc32(row.tobytes()) % len(REGION_PALETTE) for row in packed],
                    dtype=np.int64)


def _paths(polys: Polygons, select: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed paths of the selected polygons, separated by NaN (null in JSON), vectorised."""
    idx = np.flatnonzero(select)
    counts = np.diff(polys.ptr)[idx]
    lens = counts + 2  # each path: its corners, the first corner again, a break
    group = np.repeat(np.arange(idx.size), lens)
    offset = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
    src = polys.ptr[idx][group] + np.where(offset < counts[group], offset, 0)
    xy = polys.vertices[src].copy()
    xy[offset == counts[group] + 1] = np.nan
    return xy[:, 0], xy[:, 1]


def _segments(seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = seg.shape[0]
    xs = np.full(3 * n, np.nan)
    ys = np.full(3 * n, np.nan)
    xs[0::3], xs[1::3] = seg[:, 0], seg[:, 2]
    ys[0::3], ys[1::3] = seg[:, 1], seg[:, 3]
    return xs, ys


def partition_figure(part: Partition, points: np.ndarray, highlight: int) -> go.Figure:
    """Figure 1 style: regions of Omega_{1|highlight}, its facets blue, earlier ones gray."""
    highlight = int(np.clip(highlight, 1, len(part.layers)))
    lp = part.layers[highlight - 1]
    fig = go.Figure()
    colours = region_colour_index(lp.regions)
    for c, colour in enumerate(REGION_PALETTE):
        xs, ys = _paths(lp.regions, colours == c)
        if xs.size:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", fill="toself", fillcolor=colour,
                                     line={"width": 0}, hoverinfo="skip", showlegend=False))
    for j in range(highlight):
        xs, ys = _segments(part.layers[j].facets)
        current = j == highlight - 1
        fig.add_trace(go.Scattergl(
            x=xs, y=ys, mode="lines", name=f"layer {j + 1}", hoverinfo="skip",
            line={"color": HIGHLIGHT if current else EARLIER, "width": 2 if current else 1},
            showlegend=current))
    fig.add_trace(go.Scattergl(x=points[:, 0], y=points[:, 1], mode="markers", name="data",
                               marker={"color": "black", "size": 5}))
    x0, x1, y0, y1 = part.box
    fig.update_layout(
        margin={"l": 10, "r": 10, "t": 30, "b": 10}, plot_bgcolor="white",
        title={"text": f"layer {highlight}: {len(lp.regions)} regions", "font": {"size": 14}},
        xaxis={"range": [x0, x1], "showgrid": False, "zeroline": False, "constrain": "domain"},
        yaxis={"range": [y0, y1], "showgrid": False, "zeroline": False, "scaleanchor": "x"},
        legend={"orientation": "h", "y": -0.02}, uirevision="explorer",
    )
    return fig
