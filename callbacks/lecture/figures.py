"""The lecture view's figures: each tour scene drawn by the figure builder of the page that
owns its view (the explorer's, the jitter, density and debate pages'), then set for a
projector by :func:`projected`: type of at least 18 px, the legend beside the plot (never on
tick labels), a light or a dark theme.

Engine results in (:class:`bnviz.lecture.scenes.Scene`), figure dicts out; no computation.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from bnviz.lecture.scenes import Scene
from bnviz.views.style import DARK_GRAY, JITTER, LIGHT_GRAY, PARTITION, mode_label
from callbacks.density.figures import density_figure
from callbacks.explorer.figures import partition_figure, small_multiples_figure, unit_figure
from callbacks.jitter.figures import figure7_figure, jitter_figure
from callbacks.papers.figures import (
    batch_statistics_figure,
    closed_form_figure,
    landscape_figure,
    weight_plane_figure,
)
from callbacks.plotting import Figure

__all__ = ["FONT_PX", "THEME_COLOURS", "projected", "scene_figure"]

#: The smallest type on a projector at 1280x720 (issue 16).
FONT_PX = 18
#: Per theme: page background, plot background, text, axis lines; and the colours that
#: would vanish on the background, swapped for ones that show.
THEME_COLOURS: dict[str, dict[str, Any]] = {
    "light": {"paper": "#ffffff", "plot": "#ffffff", "text": "#000000", "line": "#444444",
              "swap": {}},
    "dark": {"paper": "#111111", "plot": "#1b1b1b", "text": "#f2f2f2", "line": "#bbbbbb",
             "swap": {"#000000": "#f2f2f2", "black": "#f2f2f2", "#000": "#f2f2f2",
                      "white": "#111111", "#ffffff": "#111111",
                      DARK_GRAY.lower(): LIGHT_GRAY}},
}


def _batch_mask(result) -> np.ndarray | None:
    if result.settings.batch_size is None:
        return None
    return (result.data.points[:, None, :] == result.batch[None]).all(2).any(1)


def _space(result, tls: bool) -> Figure:
    s = result.settings
    target = (s.target_layer, s.target_unit) if s.scope == "unit" else None
    return partition_figure(result.partition, result.raster, result.data.points, s.layer,
                            batch_mask=_batch_mask(result), target=target, tls=tls,
                            projector=True, clickable=True)


def _row_label(mode: str) -> str:
    return PARTITION.with_bn if mode == "bn" else \
        PARTITION.without_bn.format(mode=mode_label(mode))


def side_by_side(left: Figure, right: Figure, gap: float = 0.06) -> Figure:
    """Two one-panel figures (axes x, y) as one figure of two panels (x, y | x2, y2), each
    with its own title above it; the left figure's layout is kept for the rest."""
    out = copy.deepcopy(left)
    half = (1 - gap) / 2
    out["layout"]["xaxis"] = {**left["layout"]["xaxis"], "domain": [0, half]}
    out["layout"]["xaxis2"] = {**right["layout"]["xaxis"], "domain": [1 - half, 1],
                               "anchor": "y2"}
    out["layout"]["yaxis2"] = {**right["layout"]["yaxis"], "anchor": "x2", "scaleanchor": "x2"}
    names = {t.get("name") for t in left["data"] if t.get("showlegend", True)}
    for trace in right["data"]:
        t = dict(trace, xaxis="x2", yaxis="y2")
        if t.get("name") in names:
            t["showlegend"] = False
        out["data"].append(t)
    # each title on its panel's drawn top (the square panels shrink inside their domains)
    out["layout"]["annotations"] = [
        {"text": fig["layout"]["title"]["text"], "showarrow": False, "xref": f"{ax} domain",
         "yref": f"{ay} domain", "x": 0.5, "y": 1.0, "yanchor": "bottom",
         "xanchor": "center"} for fig, ax, ay in ((left, "x", "y"), (right, "x2", "y2"))]
    out["layout"]["title"] = {"text": ""}
    return out


def scene_figure(scene: Scene) -> Figure:
    """The figure of one scene, as its page draws it (before :func:`projected`)."""
    data, s, kind = scene.data, scene.settings, scene.step.scene
    if kind == "space":
        return _space(data, scene.step.tls)
    if kind == "unit":
        return unit_figure(data.unit, projector=True)
    if kind == "layers":
        rows = [(_row_label(mode), r.partition) for mode, r in data]
        return small_multiples_figure(rows, data[-1][1].data.points, projector=True)
    if kind == "split":
        figs = []
        for mode, r in data:
            fig = _space(r, False)
            regions = len(r.partition.layers[s.layer - 1].regions)
            fig["layout"]["title"]["text"] = (f"{_row_label(mode)}<br>{regions} regions, "
                                              f"layer {s.layer}")
            figs.append(fig)
        return side_by_side(*figs)
    if kind == "density":
        return density_figure(data["counts"], data["modes"], data["layers"], data["points"],
                              data["box"])
    if kind == "jitter":
        e = data.settings.extent
        title = (JITTER.batches.format(batch=data.settings.batch_size,
                                       k=data.settings.realizations)
                 + f": disagreement {data.disagreement_area:.3f}")
        return jitter_figure(data.boundaries, data.test_boundary, data.data.points,
                             data.data.labels, (-e, e, -e, e), title)
    if kind == "bnstats":
        report, samples = data
        return figure7_figure(samples, report)
    if kind == "dannemann":
        return weight_plane_figure(data)
    if kind == "santurkar":
        return landscape_figure(data.arms)
    if kind == "luo":
        return batch_statistics_figure(data)
    if kind == "ergen":
        return closed_form_figure(data)
    raise ValueError(f"unknown scene {kind!r}")


_WHITE = ("white", "#ffffff", "#fff")


def _swap(value: Any, swap: dict) -> Any:
    return swap.get(value.lower(), value) if isinstance(value, str) else value


def projected(fig: Figure, theme: str) -> Figure:
    """``fig`` set for a projector: every font at least FONT_PX, the legend to the right of
    the plot (outside it: never over tick labels or data), the theme's colours (in the dark
    theme black lines and markers turn light). Returns a new dict."""
    colours = THEME_COLOURS.get(theme, THEME_COLOURS["light"])
    swap = colours["swap"]
    out = {"data": [], "layout": copy.deepcopy(fig.get("layout", {}))}
    for trace in fig.get("data", []):
        t = dict(trace)
        for part in ("marker", "line"):
            if isinstance(t.get(part), dict):
                # white lines are drawn over colour fills (contours): they stay white
                keep = part == "line" and str(t[part].get("color")).lower() in _WHITE
                t[part] = {**t[part], "color": t[part].get("color") if keep
                           else _swap(t[part].get("color"), swap)}
                if isinstance(t[part].get("line"), dict):
                    t[part]["line"] = {**t[part]["line"],
                                       "color": _swap(t[part]["line"].get("color"), swap)}
        # colour bars in the lower part of the right margin: the legend takes the upper
        for holder in (t, t.get("marker")):
            if isinstance(holder, dict) and isinstance(holder.get("colorbar"), dict):
                holder["colorbar"] = {**holder["colorbar"], "tickfont": {"size": FONT_PX},
                                      "x": 1.02, "xanchor": "left", "y": 0,
                                      "yanchor": "bottom", "len": 0.55}
        out["data"].append(t)
    lay = out["layout"]
    lay["font"] = {**lay.get("font", {}), "size": FONT_PX, "color": colours["text"]}
    lay["paper_bgcolor"] = colours["paper"]
    lay["plot_bgcolor"] = colours["plot"]
    margin = lay.get("margin", {})
    lay["margin"] = {**margin, "t": max(margin.get("t", 0), 70), "r": max(margin.get("r", 0),
                                                                         20),
                     "l": max(margin.get("l", 0), 40), "b": max(margin.get("b", 0), 40)}
    title = lay.get("title")
    if isinstance(title, dict):
        lay["title"] = {**title, "font": {"size": FONT_PX + 2}, "y": 0.98, "yanchor": "top"}
    lay["legend"] = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1,
                     "yanchor": "top", "font": {"size": FONT_PX}, "bgcolor": "rgba(0,0,0,0)"}
    for key, value in list(lay.items()):
        if key.startswith(("xaxis", "yaxis")) and isinstance(value, dict):
            lay[key] = {**value, "linecolor": colours["line"], "gridcolor": "rgba(128,128,128,"
                        "0.3)", "tickfont": {"size": FONT_PX}, "automargin": True}
            if key.startswith("xaxis"):  # x and y labels at a corner must not touch
                lay[key]["ticklabelstandoff"] = 10
            if value.get("type") == "log":  # decades only: no small minor-digit labels
                lay[key]["dtick"] = 1
            if isinstance(value.get("title"), dict):
                lay[key]["title"] = {**value["title"], "font": {"size": FONT_PX}}
    lay["annotations"] = [{**a, "font": {**a.get("font", {}), "size": max(
        FONT_PX, a.get("font", {}).get("size", 0)), "color": colours["text"]}}
        for a in lay.get("annotations", [])]
    lay["shapes"] = [{**sh, "line": {**sh.get("line", {}),
                                     "color": _swap(sh.get("line", {}).get("color"), swap)}}
                     if isinstance(sh, dict) else sh for sh in lay.get("shapes", [])]
    return out
