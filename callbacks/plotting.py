"""Figure pieces shared by the pages' figure builders (``callbacks/<page>/figures.py``).

Figures are plain dicts, not ``plotly.graph_objects``: building a graph object validates
every property (the explorer's partition figure: ~3.5 ms instead of ~0.6 ms, plotly 7.1) and
replaces a named colour scale by plotly.py's own stops, which differ from plotly.js's (its
"Greys" runs the other way). Arrays go to the browser compactly, as plotly.js typed arrays
(:func:`typed_array`): 4 bytes a float32 value in base64 instead of ~10 characters of JSON.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

__all__ = ["Figure", "axis", "colourscale", "line", "panel_axes", "placeholder", "rgba",
           "segments", "sizes", "typed_array"]

Figure = dict[str, Any]


def placeholder(text: str) -> Figure:
    """A graph with nothing to show yet: no axes (an empty plot's -1..6 ticks say nothing),
    one line in the middle saying what to press."""
    return {"data": [], "layout": {
        "xaxis": {"visible": False}, "yaxis": {"visible": False},
        "margin": {"l": 10, "r": 10, "t": 10, "b": 10}, "plot_bgcolor": "white",
        "annotations": [{"text": text, "showarrow": False, "xref": "paper", "yref": "paper",
                         "x": 0.5, "y": 0.5, "font": {"size": 15, "color": "#495057"}}]}}

#: numpy dtypes plotly.js reads as typed arrays, and its names for them.
_TYPED = {np.dtype(k): v for k, v in (("int8", "i1"), ("uint8", "u1"), ("int16", "i2"),
                                        ("uint16", "u2"), ("int32", "i4"), ("uint32", "u4"),
                                        ("float32", "f4"), ("float64", "f8"))}


def typed_array(values: np.ndarray) -> dict | list:
    """An array as a plotly.js typed-array spec ``{"dtype", "bdata"[, "shape"]}``: its
    little-endian bytes in base64 (the form plotly 7 writes for numpy arrays in a figure's
    ``to_dict``). 64-bit and boolean integers are narrowed to the smallest integer type that
    holds them (plotly.js has no 64-bit integers); an empty array is an empty list."""
    a = np.asarray(values)
    if a.size == 0:
        return []
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if a.dtype == bool:
        a = a.astype(np.uint8)
    elif a.dtype.kind in "iu" and a.dtype not in _TYPED:
        lo, hi = int(a.min()), int(a.max())
        a = a.astype(next((t for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                       np.uint32)
                           if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max), np.float64))
    elif a.dtype not in _TYPED:
        a = a.astype(np.float64)
    spec = {"dtype": _TYPED[a.dtype],
            "bdata": base64.b64encode(a.astype(a.dtype.newbyteorder("<"), copy=False)
                                      .tobytes()).decode("ascii")}
    if a.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in a.shape)
    return spec


def rgba(colour: str, opacity: float) -> str:
    """A "#rrggbb" colour with an opacity, as CSS: ("#1f5fd6", 0.45) -> "rgba(31, 95, 214,
    0.45)"."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {opacity:g})"


def colourscale(stops: tuple[tuple[float, str], ...]) -> list[list]:
    """A description's colour scale (bnviz.views.style) as plotly's ``colorscale``."""
    return [[float(position), colour] for position, colour in stops]


def sizes(projector: bool) -> dict[str, float]:
    """Line widths and font sizes; projector mode: large fonts, thick lines, high contrast."""
    if projector:
        return {"font": 20, "current": 4.5, "earlier": 2.0, "marker": 10, "fill_opacity": 0.55}
    return {"font": 12, "current": 2.0, "earlier": 1.0, "marker": 5, "fill_opacity": 1.0}


def segments(seg: np.ndarray) -> tuple[dict | list, dict | list]:
    """Segments (x0, y0, x1, y1) as one polyline with NaN breaks (float32 typed arrays)."""
    n = seg.shape[0]
    xs = np.full(3 * n, np.nan)
    ys = np.full(3 * n, np.nan)
    xs[0::3], xs[1::3] = seg[:, 0], seg[:, 2]
    ys[0::3], ys[1::3] = seg[:, 1], seg[:, 3]
    return typed_array(xs.astype(np.float32)), typed_array(ys.astype(np.float32))


def line(seg: np.ndarray, colour: str, width: float, name: str, legend: bool = False,
         axes: tuple[str, str] = ("x", "y")) -> dict:
    """Segments as one line trace (one trace a colour: thousands of facets stay cheap)."""
    xs, ys = segments(seg)
    return {"type": "scatter", "mode": "lines", "x": xs, "y": ys, "name": name,
            "line": {"color": colour, "width": width}, "hoverinfo": "skip",
            "showlegend": legend, "xaxis": axes[0], "yaxis": axes[1]}


def panel_axes(k: int) -> tuple[str, str, str, str]:
    """Trace axis ids and layout keys of panel k (1-based): plotly.js calls the first pair
    x/y (an "x1" reference is not linked to layout.xaxis1's scaleanchor)."""
    if k == 1:
        return "x", "y", "xaxis", "yaxis"
    return f"x{k}", f"y{k}", f"xaxis{k}", f"yaxis{k}"


def axis(lo: float, hi: float, **extra) -> dict:
    """A framed axis over [lo, hi] without grid, zero line or ticks (the 2D input views)."""
    return {"range": [lo, hi], "showgrid": False, "zeroline": False, "mirror": True,
            "showline": True, "linecolor": "#444", "ticks": "", **extra}


def segments_image(seg: np.ndarray, box: tuple[float, float, float, float], colour: str,
                   pixels: int = 360) -> dict:
    """Segments (x0, y0, x1, y1) drawn into a ``pixels``-square PNG over ``box`` (x0, x1, y0,
    y1), as a plotly layout image spec without its axes (the caller adds xref and yref).

    For context lines repeated in many small panels (the layers view's earlier layers): as
    vectors each panel sent them again, 7 MB for Figure 1 at depth 12 (issue 30); as a picture
    a panel costs a few kB, whatever the facets. Each segment is sampled every half pixel
    (vectorised: one sample array for all segments) and its pixels set."""
    from io import BytesIO

    from PIL import Image, ImageColor

    x0, x1, y0, y1 = box
    scale = np.array([(pixels - 1) / (x1 - x0), (pixels - 1) / (y1 - y0)])
    a = (seg[:, :2] - (x0, y0)) * scale
    b = (seg[:, 2:] - (x0, y0)) * scale
    steps = np.ceil(2 * np.hypot(*(b - a).T)).astype(np.int64) + 1
    owner = np.repeat(np.arange(len(seg)), steps)
    start = np.cumsum(steps) - steps
    t = (np.arange(owner.size) - start[owner]) / np.maximum(steps[owner] - 1, 1)
    pts = np.rint(a[owner] + t[:, None] * (b - a)[owner]).astype(np.int64)
    keep = ((pts >= 0) & (pts < pixels)).all(axis=1)
    mask = np.zeros((pixels, pixels), np.uint8)
    mask[pixels - 1 - pts[keep, 1], pts[keep, 0]] = 1  # image rows run down
    picture = Image.fromarray(mask, "P")  # two colours: transparent, and the line's
    picture.putpalette([0, 0, 0, *ImageColor.getrgb(colour)[:3]])
    out = BytesIO()
    picture.save(out, format="PNG", transparency=0, bits=1)
    return {"source": "data:image/png;base64," + base64.b64encode(out.getvalue()).decode(),
            "x": x0, "y": y1, "sizex": x1 - x0, "sizey": y1 - y0, "sizing": "stretch",
            "xanchor": "left", "yanchor": "top", "layer": "below"}
