"""The explorer's figures: the partition of the input space (BN paper Figures 1, 2b, 2c),
each unit's TLS error on two layers (Figure 9), the layers side by side (Figure 1) and one
unit (Figure 2a).

Engine results in, figure dicts out (no computation of their own); colours, names and titles
come from the views' descriptions (:mod:`bnviz.views.style`), which the command line's
pictures use too. Region fills go to the browser as one byte-per-pixel heatmap of palette
indices, the exact facets of one layer as one float32 line trace with breaks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from plotly.colors import sample_colorscale

from bnviz.core.partition import Partition
from bnviz.views.explorer import UnitView
from bnviz.views.figure9 import Figure9, TLSLayer
from bnviz.views.style import (
    FIGURE9,
    PARTITION,
    UNIT,
    colour_bar_title,
    hover_quantity,
    region_colour_index,
    subscript,
)
from bnviz.web.callbacks.plotting import (
    Figure,
    axis,
    colourscale,
    line,
    panel_axes,
    segments_image,
    sizes,
    typed_array,
)

#: Line segments one figure sends as vectors, at most (~6 MB as float32 base64): past it
#: the layers drawn for context go as pictures (issue 30: an answer's size is capped).
MAX_VECTOR_SEGMENTS = 200_000

__all__ = ["MAX_VECTOR_SEGMENTS", "partition_figure", "region_fill", "small_multiples_figure",
           "tls_figure", "unit_figure"]


def region_fill(raster: np.ndarray, box: tuple[float, ...], opacity: float,
                clickable: bool) -> dict:
    """Regions filled by activation pattern: a heatmap of palette indices (one byte a pixel,
    row 0 at the bottom); clicking it reports the pixel's centre (to add a data point). The
    pattern hash goes through a multiplicative (Knuth) hash first, so that neighbouring
    hashes get unrelated colours; a region keeps its colour while sliders move."""
    n_rows, n_cols = raster.shape
    x0, x1, y0, y1 = box
    palette = PARTITION.region_palette
    k = len(palette)
    idx = region_colour_index(raster, k)
    scale = [[pos, colour] for i, colour in enumerate(palette) for pos in (i / k, (i + 1) / k)]
    return {"type": "heatmap", "z": typed_array(idx), "x0": x0 + (x1 - x0) / (2 * n_cols),
            "dx": (x1 - x0) / n_cols, "y0": y0 + (y1 - y0) / (2 * n_rows),
            "dy": (y1 - y0) / n_rows, "colorscale": scale, "zmin": -0.5, "zmax": k - 0.5,
            "showscale": False, "opacity": opacity, "name": "regions",
            "hoverinfo": "none" if clickable else "skip"}


def _data(points: np.ndarray, batch_mask: np.ndarray | None, size: float,
          axes: tuple[str, str] = ("x", "y")) -> list[dict]:
    """The data as black dots; with a mini-batch, the points outside it white."""
    pts = points.astype(np.float32)
    if batch_mask is None or batch_mask.all():
        return [{"type": "scatter", "mode": "markers", "x": typed_array(pts[:, 0]),
                 "y": typed_array(pts[:, 1]), "name": PARTITION.data_name,
                 "marker": {"color": PARTITION.data, "size": size},
                 "xaxis": axes[0], "yaxis": axes[1], "showlegend": axes[0] == "x"}]
    return [
        {"type": "scatter", "mode": "markers", "x": typed_array(pts[batch_mask, 0]),
         "y": typed_array(pts[batch_mask, 1]), "name": PARTITION.batch_name,
         "marker": {"color": PARTITION.data, "size": size}, "xaxis": axes[0],
         "yaxis": axes[1]},
        {"type": "scatter", "mode": "markers", "x": typed_array(pts[~batch_mask, 0]),
         "y": typed_array(pts[~batch_mask, 1]), "name": PARTITION.other_name,
         "marker": {"color": PARTITION.other_data, "size": size,
                    "line": {"color": PARTITION.data, "width": 1}},
         "xaxis": axes[0], "yaxis": axes[1]},
    ]


def _panel_domains(n: int, projector: bool) -> list[tuple[float, float]]:
    """Figure 9's panels' x domains, each followed by the room its colour bar takes (the
    projector's larger type needs more)."""
    if n == 1:
        return [(0.0, 0.8)]
    return [(0.0, 0.33), (0.52, 0.85)] if projector else [(0.0, 0.36), (0.52, 0.88)]


def _tls_panel(t: TLSLayer, axes: tuple[str, str], domain: tuple[float, float],
               st: dict[str, float], projector: bool) -> list[dict]:
    """One layer of Figure 9: its facets, each unit's in the colour of its own value on the
    layer's own scale, the colour bar beside the panel naming the quantity, and a hover
    point at each facet's middle (layer, unit, value, mean input-space distance)."""
    lo, hi = t.colour_range
    if not math.isfinite(lo):
        return []
    span = hi - lo if hi > lo else 1.0
    scale = colourscale(FIGURE9.colourscale)
    traces = []
    for k in np.flatnonzero(t.drawn):  # one trace a unit (at most 64): its exact colour
        value = t.values[k]
        colour = sample_colorscale(scale, [float(np.clip((value - lo) / span, 0, 1))])[0] \
            if math.isfinite(value) else PARTITION.earlier
        traces.append(line(t.facets[t.facet_units == k], colour, st["current"],
                           f"layer {t.layer}, unit {k + 1}", axes=axes))
    mid = 0.5 * (t.facets[:, :2] + t.facets[:, 2:])
    custom = np.stack([t.facet_units + 1.0, t.facet_values,
                       t.mean_distance[t.facet_units]], 1)
    traces.append({
        "type": "scatter", "mode": "markers", "x": typed_array(mid[:, 0].astype(np.float32)),
        "y": typed_array(mid[:, 1].astype(np.float32)), "xaxis": axes[0], "yaxis": axes[1],
        "customdata": np.where(np.isfinite(custom), custom, -1).round(5).tolist(),
        "hovertemplate": FIGURE9.hover.format(layer=t.layer, quantity=hover_quantity(t.exact)),
        "marker": {"size": st["marker"] * 2.4, "opacity": 0, "color": PARTITION.data},
        "showlegend": False, "name": f"layer {t.layer} facets"})
    traces.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                   "xaxis": axes[0], "yaxis": axes[1], "hoverinfo": "skip",
                   "showlegend": False, "name": f"layer {t.layer} colour bar",
                   "marker": {"colorscale": scale, "cmin": lo, "cmax": lo + span,
                              "color": [lo], "showscale": True,
                              "colorbar": {**_bar_place(domain, projector),
                                           "title": {"text": colour_bar_title(t.layer,
                                                                              t.exact),
                                                     "side": "right"}}}})
    return traces


def _bar_place(domain: tuple[float, float], projector: bool) -> dict:
    """A colour bar right beside its panel, as tall as most panels are drawn (the panels
    are square: their drawn height is not known here)."""
    return {"x": domain[1] + 0.01, "xanchor": "left", "y": 0.5, "yanchor": "middle",
            "len": 0.8, "thickness": 16 if projector else 12, "outlinewidth": 0}


def tls_figure(fig9: Figure9, raster: np.ndarray | None = None, *, projector: bool = False,
               clickable: bool = False) -> Figure:
    """BN paper Figure 9: one panel a layer (the paper: layer 1's lines H_{1,k} left, layer
    4's folded hyperplanes F_{4,k} right), each facet coloured by its unit's value on the
    layer's OWN scale (blue: small, green: large), a colour bar each titled with exactly
    what it shows (sigma^2/||w||^2 at BN's statistics, else the mean squared distance at the
    current mu, eq. 8), the data as black dots, and each facet's numbers on hover. The
    regions of Omega_{1|l} are filled faintly (``raster``: the explorer's; a click there adds
    a point)."""
    st = sizes(projector)
    domains = _panel_domains(len(fig9.layers), projector)
    x0, x1, y0, y1 = fig9.box
    traces: list[dict] = []
    layout: dict[str, Any] = {
        "margin": {"l": 30, "r": 10, "t": 60, "b": 30}, "plot_bgcolor": "white",
        "font": {"size": st["font"]}, "title": {"text": FIGURE9.title, "x": 0.02},
        "legend": {"orientation": "h", "y": -0.2}, "uirevision": "figure9",
        "clickmode": "event", "hovermode": "closest", "dragmode": "pan"}
    for i, (t, domain) in enumerate(zip(fig9.layers, domains, strict=True)):
        ax, ay, xkey, ykey = panel_axes(i + 1)
        if raster is not None:
            fill = region_fill(raster[t.layer - 1], fig9.box, 0.3 * st["fill_opacity"],
                               clickable)
            traces.append({**fill, "xaxis": ax, "yaxis": ay})
        traces += _tls_panel(t, (ax, ay), domain, st, projector)
        traces += _data(fig9.points, fig9.batch_mask, st["marker"], axes=(ax, ay))
        what = (FIGURE9.lines if t.layer == 1 else FIGURE9.folded).format(
            l=subscript(t.layer))
        # each square hugs its colour bar: the room a panel does not fill is on its left;
        # the panel's name is its x axis's title (an annotation on a square's drawn top
        # landed inside it when the square's width limited it: plotly placed it before the
        # constraint shrank the height)
        layout[xkey] = axis(x0, x1, domain=list(domain), anchor=ay, constrain="domain",
                            constraintoward="right",
                            title={"text": FIGURE9.panel.format(layer=t.layer, what=what)})
        layout[ykey] = axis(y0, y1, anchor=ax, scaleanchor=ax, constrain="domain",
                            showticklabels=i == 0)
    return {"data": traces, "layout": layout}


def partition_figure(part: Partition, raster: np.ndarray, points: np.ndarray, highlight: int, *,
                     batch_mask: np.ndarray | None = None, target: tuple[int, int] | None = None,
                     projector: bool = False, clickable: bool = False,
                     title: str | None = None) -> Figure:
    """Figure 1 style: regions of Omega_{1|highlight} filled by activation pattern, the
    highlighted layer's folded hyperplanes blue, earlier layers gray; ``target`` (layer, unit)
    draws F_{l,k} in orange (Figure 2b, c). Figure 9's colours: :func:`tls_figure`."""
    st = sizes(projector)
    highlight = int(np.clip(highlight, 1, len(part.layers)))
    lp = part.layers[highlight - 1]
    traces: list[dict] = [region_fill(raster[highlight - 1], part.box, st["fill_opacity"],
                                      clickable)]
    pictures: list[dict] = []
    earlier = [part.layers[j].facets for j in range(highlight - 1)]
    if sum(map(len, earlier)) + len(lp.facets) > MAX_VECTOR_SEGMENTS and earlier:
        # over the answer's budget: the earlier layers as one picture (a zoom blurs them)
        pictures.append(segments_image(np.concatenate(earlier), part.box, PARTITION.earlier,
                                       pixels=1200) | {"xref": "x", "yref": "y"})
        earlier = [np.empty((0, 4))]
    for j, facets in enumerate(earlier):
        traces.append(line(facets, PARTITION.earlier, st["earlier"], PARTITION.earlier_name,
                           legend=j == 0))
    traces.append(line(lp.facets, PARTITION.current, st["current"],
                       PARTITION.current_name.format(layer=highlight), legend=True))
    if target is not None and target[0] <= len(part.layers):
        tl = part.layers[target[0] - 1]
        traces.append(line(tl.facets[tl.facet_units == target[1]], PARTITION.target,
                           st["current"] * 1.6,
                           PARTITION.target_name.format(layer=target[0], unit=target[1] + 1),
                           legend=True))
    if part.decision_boundary is not None:
        traces.append(line(part.decision_boundary, PARTITION.boundary, st["current"] * 1.4,
                           PARTITION.boundary_name, legend=True))
    traces += _data(points, batch_mask, st["marker"])
    x0, x1, y0, y1 = part.box
    text = title or PARTITION.title.format(layer=highlight, regions=len(lp.regions))
    return {"data": traces, "layout": {
        "images": pictures,
        "margin": {"l": 30, "r": 10, "t": 40, "b": 30}, "plot_bgcolor": "white",
        "font": {"size": st["font"]}, "title": {"text": text, "x": 0.02},
        "xaxis": axis(x0, x1, constrain="domain"),
        "yaxis": axis(y0, y1, scaleanchor="x", constrain="domain"),
        "legend": {"orientation": "h", "y": -0.06}, "uirevision": "partition",
        "clickmode": "event", "hovermode": "closest", "dragmode": "pan"}}


def small_multiples_figure(rows: list[tuple[str, Partition]], points: np.ndarray,
                           projector: bool = False) -> Figure:
    """Figure 1 as in the paper: one row per setting (without / with BN), one column per layer;
    in each panel that layer's facets are blue and the earlier layers' gray. The earlier
    layers are one picture a panel (:func:`~callbacks.plotting.segments_image`): as lines,
    each panel sent them again, 7 MB at depth 12 (issue 30); past MAX_VECTOR_SEGMENTS the
    panel's own layer is a picture too."""
    st = sizes(projector)
    n_rows, n_cols = len(rows), max(len(p.layers) for _, p in rows)
    traces: list[dict] = []
    layout: dict[str, Any] = {"margin": {"l": 70, "r": 10, "t": 55, "b": 10},
                              "plot_bgcolor": "white", "font": {"size": st["font"]},
                              "showlegend": False, "annotations": []}
    # over the answer's budget, each panel's own layer is a picture too
    as_pictures = sum(len(lp.facets) for _, p in rows for lp in p.layers) > MAX_VECTOR_SEGMENTS
    gap = 0.02
    w = (1 - gap * (n_cols - 1)) / n_cols
    h = (1 - 0.06 * (n_rows - 1)) / n_rows
    for r, (label, part) in enumerate(rows):
        x0, x1, y0, y1 = part.box
        for c, lp in enumerate(part.layers):
            k = r * n_cols + c + 1
            ax, ay, xkey, ykey = panel_axes(k)
            if c:  # the earlier layers as one picture: as lines, every panel sent them again
                earlier = np.concatenate([part.layers[j].facets for j in range(c)])
                if len(earlier):
                    layout.setdefault("images", []).append(
                        segments_image(earlier, part.box, PARTITION.earlier) |
                        {"xref": ax, "yref": ay})
            if as_pictures:
                layout.setdefault("images", []).append(
                    segments_image(lp.facets, part.box, PARTITION.current) |
                    {"xref": ax, "yref": ay})
            else:
                traces.append(line(lp.facets, PARTITION.current, st["current"],
                                   PARTITION.current_name.format(layer=c + 1), axes=(ax, ay)))
            traces += _data(points, None, st["marker"] * 0.6, axes=(ax, ay))
            dom_x = [c * (w + gap), c * (w + gap) + w]
            top = 1 - r * (h + 0.06)
            # constrain="domain": a panel's frame is the box (the square shrinks inside its
            # cell) rather than a wider range around it, where the facets stopped short
            layout[xkey] = axis(x0, x1, domain=dom_x, showticklabels=False, anchor=ay,
                                constrain="domain")
            layout[ykey] = axis(y0, y1, domain=[top - h, top], showticklabels=False,
                                anchor=ax, scaleanchor=ax, constrain="domain")
            if r == 0:
                # on the panel's drawn top (the square shrinks inside its cell)
                layout["annotations"].append({"text": PARTITION.column.format(layer=lp.layer),
                                              "showarrow": False, "xref": f"{ax} domain",
                                              "yref": f"{ay} domain", "x": 0.5, "y": 1.0,
                                              "yanchor": "bottom"})
        # the row's label, level, on two lines left of the row: rotated, it overprinted the
        # next row's once the rows were shorter than it (1280x720, projector type)
        layout["annotations"].append({"text": label.replace(" (", "<br>("),
                                      "showarrow": False, "xref": "paper",
                                      "yref": "paper", "x": -0.01, "xanchor": "right",
                                      "align": "right", "y": 1 - r * (h + 0.06) - h / 2})
    longest = max(len(part) for label, _ in rows for part in label.split(" ("))
    layout["margin"]["l"] = int(0.62 * st["font"] * longest) + 16
    return {"data": traces, "layout": layout}


def unit_figure(view: UnitView, projector: bool = False) -> Figure:
    """Figure 2a: the unit's batch projections <w, z_{l-1}> with the hyperplane at mu (left),
    and the TLS loss as a function of mu, a parabola whose minimum is the BN mean (right)."""
    st = sizes(projector)
    traces = [
        {"type": "histogram", "x": typed_array(view.projections), "nbinsx": 30,
         "marker": {"color": UNIT.projections}, "name": UNIT.projections_name,
         "xaxis": "x", "yaxis": "y"},
        {"type": "scatter", "mode": "lines", "x": typed_array(view.mu_grid),
         "y": typed_array(view.tls_loss), "name": UNIT.loss_name,
         "line": {"color": UNIT.loss, "width": st["current"]}, "xaxis": "x2", "yaxis": "y2"},
        {"type": "scatter", "mode": "markers", "x": [view.mu],
         "y": [(view.batch_std**2 + (view.batch_mean - view.mu) ** 2)
               / max(view.weight_norm, 1e-300) ** 2],
         "name": UNIT.mu_name, "marker": {"color": UNIT.mu, "size": st["marker"] * 2.2},
         "xaxis": "x2", "yaxis": "y2"},
    ]
    mean_line = {"color": UNIT.bn_mean, "width": st["earlier"] * 1.5, "dash": "dash"}
    shapes = [
        {"type": "line", "xref": "x", "yref": "paper", "x0": view.mu, "x1": view.mu,
         "y0": 0, "y1": 1, "line": {"color": UNIT.mu, "width": st["current"] * 1.5}},
        {"type": "line", "xref": "x", "yref": "paper", "x0": view.batch_mean,
         "x1": view.batch_mean, "y0": 0, "y1": 1, "line": dict(mean_line)},
        {"type": "line", "xref": "x2", "yref": "paper", "x0": view.batch_mean,
         "x1": view.batch_mean, "y0": 0, "y1": 1, "line": dict(mean_line)},
    ]
    title = UNIT.title.format(unit=view.unit + 1, layer=view.layer, mu=view.mu,
                              mean=view.batch_mean)
    return {"data": traces, "layout": {
        "margin": {"l": 50, "r": 10, "t": 50, "b": 40}, "plot_bgcolor": "white",
        "font": {"size": st["font"]}, "shapes": shapes, "bargap": 0.05,
        "title": {"text": title, "x": 0.02},
        "xaxis": {"domain": [0, 0.47], "title": {"text": UNIT.projections_axis}},
        "yaxis": {"title": {"text": UNIT.count_axis}},
        "xaxis2": {"domain": [0.55, 1], "title": {"text": UNIT.mu_axis}},
        "yaxis2": {"anchor": "x2", "title": {"text": UNIT.loss_axis}},
        # the legend right of the plots: below them it covered the axis titles
        "legend": {"x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top"},
        "uirevision": "unit"}}
