"""The lecture view's figures: each tour scene drawn by the figure builder of the page that
owns its view (the explorer's, the jitter, density and debate pages'), then set for a
projector by :func:`callbacks.projector.projected`: type of at least 18 px, the legend beside
the plot (never on tick labels), a light or a dark theme.

Engine results in (:class:`bnviz.lecture.scenes.Scene`), figure dicts out; no computation.
"""

from __future__ import annotations

import copy

import numpy as np

from bnviz.lecture.panels import empty_density_note, same_partition, split_label
from bnviz.lecture.scenes import Scene
from bnviz.views.style import DENSITY, JITTER, PARTITION, TRAINING, mode_label
from bnviz.web.callbacks.density.figures import density_figure
from bnviz.web.callbacks.explorer.figures import (
    partition_figure,
    small_multiples_figure,
    tls_figure,
    unit_figure,
)
from bnviz.web.callbacks.explorer.training_figures import frame_figure, frame_panels
from bnviz.web.callbacks.jitter.figures import figure7_figure, jitter_figure
from bnviz.web.callbacks.papers.figures import (
    batch_statistics_figure,
    landscape_figure,
    weight_plane_figure,
    whitening_figure,
)
from bnviz.web.callbacks.plotting import Figure, panel_axes
from bnviz.web.callbacks.projector import FONT_PX, THEME_COLOURS, projected

__all__ = ["FONT_PX", "THEME_COLOURS", "filled", "is_wide", "projected", "readout",
           "scene_figure", "side_by_side"]


def _space(result, fig9=None) -> Figure:
    """The input space as the explorer draws it; Figure 9's two layers when ``fig9``."""
    if fig9 is not None:
        return tls_figure(fig9, result.raster, projector=True, clickable=True)
    s = result.settings
    target = (s.target_layer, s.target_unit) if s.scope == "unit" else None
    return partition_figure(result.partition, result.raster, result.data.points, s.layer,
                            batch_mask=result.batch_mask, target=target, projector=True,
                            clickable=True)


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


def _split(data: tuple, layer: int) -> Figure:
    """The split: each panel named by what it draws (:func:`bnviz.lecture.panels.split_label`,
    sliders included), and, where the two networks draw one partition (μ = 0 zeroes the
    random biases and BN's means alike), each title says it is the other's picture."""
    (_, left), (_, right) = data
    same = same_partition(left.partition, right.partition, layer)
    figs = []
    for (mode, r), other in zip(data, ("right", "left"), strict=True):
        fig = _space(r)
        regions = len(r.partition.layers[layer - 1].regions)
        detail = f"{regions} regions, layer {layer}" + (f", the same as on the {other}"
                                                       if same else "")
        fig["layout"]["title"]["text"] = f"{split_label(mode, r.settings)}<br>{detail}"
        figs.append(fig)
    return side_by_side(*figs)


def _noted_empty(fig: Figure, data: dict) -> Figure:
    """Figure 3's panels (rows: modes, columns: layers, as density_figure lays them out)
    with a note in each one that counts no facet, saying why it is blank."""
    n_cols = len(data["layers"])
    for r in range(len(data["modes"])):
        for c, layer in enumerate(data["layers"]):
            if data["counts"][r, layer - 1].max() > 0:
                continue
            ax, ay, _, _ = panel_axes(r * n_cols + c + 1)
            fig["layout"]["annotations"].append({
                "text": empty_density_note(layer).replace("\n", "<br>"), "showarrow": False,
                "xref": f"{ax} domain", "yref": f"{ay} domain", "x": 0.5, "y": 0.5,
                "xanchor": "center", "yanchor": "middle"})
    return fig


def _training(data: dict) -> Figure:
    """The recorded runs side by side, drawn as the explorer's live training draws a frame;
    every recorded frame is a plotly frame, which the lecture's play button plays in the
    browser (assets/lecture.js): no request a frame, nothing to wait for in a hall."""
    runs, points, labels = data["runs"], data["points"], data["labels"]
    modes = list(runs)
    box = runs[modes[0]][0].partition.box
    figures = []
    for i in range(len(runs[modes[0]])):
        frames = {mode: runs[mode][i] for mode in modes}
        fig = frame_figure(frame_panels(frames), points, labels, box, projector=True,
                           webgl=False)
        # the step under the legend (the panels' titles take the top)
        fig["layout"]["annotations"].append({
            "text": TRAINING.lecture_title.format(step=frames[modes[0]].step,
                                                  steps=runs[modes[0]][-1].step),
            "xref": "paper", "yref": "paper", "x": 1.02, "y": 0.0, "xanchor": "left",
            "yanchor": "bottom", "showarrow": False})
        figures.append(fig)
    out = figures[0]
    # how many frames there are, for the play button (assets/lecture.js: the last one shown
    # is the end, where play starts again)
    out["layout"]["meta"] = {**out["layout"].get("meta", {}), "frames": len(figures)}
    out["frames"] = [{"name": str(i), "data": fig["data"],
                      "layout": {"annotations": fig["layout"]["annotations"]}}
                     for i, fig in enumerate(figures)]
    return out


def scene_figure(scene: Scene) -> Figure:
    """The figure of one scene, as its page draws it (before :func:`projected`)."""
    data, s, kind = scene.data, scene.settings, scene.step.scene
    if kind == "space":
        return _space(data, scene.tls)
    if kind == "unit":
        return unit_figure(data.unit, projector=True)
    if kind == "layers":
        rows = [(PARTITION.row_label(mode), r.partition) for mode, r in data]
        return small_multiples_figure(rows, data[-1][1].data.points, projector=True)
    if kind == "split":
        return _split(data, s.layer)
    if kind == "training":
        return _training(data)
    if kind in ("density", "slice"):
        fig = _noted_empty(density_figure(data["counts"], data["modes"], data["layers"],
                                          data["points"], data["box"]), data)
        if kind == "slice":  # the measure the caption points to, computed, not quoted
            fig["layout"]["title"] = {"text": DENSITY.slice_title.format(
                digits=", ".join(map(str, data["labels"])),
                ratios=", ".join(DENSITY.slice_ratio.format(mode=mode_label(m),
                                                            ratio=data["ratios"][m])
                                 for m in data["modes"]))}
        return fig
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
    if kind == "ergen":  # the units all sit on one closed-form point: the whitening shows more
        return whitening_figure(data.points, data.whitened, data.labels)
    raise ValueError(f"unknown scene {kind!r}")




def _plain(text: str) -> str:
    """A plotly title as one line of text (its breaks and tags gone)."""
    import re

    text = re.sub(r"\s*(,?)\s*<br>\s*", lambda m: ", " if m.group(1) else " · ", text)
    return re.sub(r"<[^>]+>", "", text).strip(" ·")


def filled(fig: Figure) -> tuple[Figure, str]:
    """The lecture's figure set to fill its box (issue 31: at 1280x720 the axes covered a
    median of 33% of the screen): its title moves out of the plot (returned as text, for the
    readout under the caption), and the margins start from a few pixels, plotly's automargin
    growing them to what the tick labels, the legend and the panel titles need."""
    lay = fig["layout"]
    title = lay.get("title")
    text = _plain(str(title.get("text") or "")) if isinstance(title, dict) else ""
    lay["title"] = {"text": ""}
    notes = [a for a in lay.get("annotations", []) if isinstance(a, dict)]
    # panel titles over the top row: their lines of type
    above = max((1 + str(a.get("text", "")).count("<br>") for a in notes
                 if a.get("yanchor") == "bottom" and a.get("y", 0) >= 1), default=0)
    # labels left of the panels in paper coordinates (the layers view's rows) keep the
    # margin their figure made for them: automargin does not see annotations
    left = lay.get("margin", {}).get("l", 4) if any(
        a.get("xref") == "paper" and a.get("x", 0) < 0 for a in notes) else 4
    lay["margin"] = {"l": left, "r": 4, "t": 12 + 26 * above if above else 2, "b": 2, "pad": 0,
                     "autoexpand": True}
    # no hover labels on a projector (a resting mouse showed six-decimal coordinates); hover
    # events still fire, so a click is still inspected (assets/cursor.js). The invisible
    # markers that only carry a hover label (Figure 9's facet midpoints) go: drawing them cost
    # a busy laptop 60 ms of Figure 9's step, for nothing seen
    fig["data"] = [t if t.get("hoverinfo") == "skip" else
                   {k: v for k, v in t.items() if k != "hovertemplate"} | {"hoverinfo": "none"}
                   for t in fig["data"] if not _hover_only(t)]
    for key, axis in lay.items():  # x tick labels close under the axis: 6 px of height more
        if key.startswith("xaxis") and isinstance(axis, dict) and "ticklabelstandoff" in axis:
            lay[key] = {**axis, "ticklabelstandoff": 3}
    return fig, text


def _hover_only(trace: dict) -> bool:
    """An invisible marker trace whose only use is a hover label."""
    marker = trace.get("marker") or {}
    return trace.get("mode") == "markers" and marker.get("opacity") == 0 and \
        "hovertemplate" in trace and not trace.get("showlegend", False)


def _g(value: float) -> str:
    """A number as the readout shows it: 3 significant digits, tiny values 0."""
    return "0" if abs(value) < 5e-13 else f"{value:.3g}"


def readout(scene: Scene, title: str) -> str:
    """The line under the lecture's caption: what the figure's title said, and for the
    input-space steps the values the step is about at the sliders' positions: μ and σ as
    factors of BN's, the batch, the shown layer's regions and TLS error (eq. 9, summed over
    its units), and the data's mean distance to the nearest boundary."""
    s, kind = scene.settings, scene.step.scene
    parts = [title] if title else []
    if kind == "space":
        part = scene.data.partition
        lp = part.layers[min(s.layer, len(part.layers)) - 1]
        tls = np.asarray(lp.stats.tls_error, dtype=np.float64)
        parts = [f"layer {lp.layer}: {len(lp.regions)} regions",
                 f"TLS Σ mean d² {_g(float(tls[np.isfinite(tls)].sum()))}",
                 f"data to nearest boundary {_g(scene.data.mean_boundary_distance)}"]
    if kind == "training":  # the caption's distances, measured, at the first and last frame
        runs = scene.data["runs"]
        for at in (0, -1):
            parts.append(f"step {next(iter(runs.values()))[at].step}: distance to the data "
                         + ", ".join(f"{_g(frames[at].mean_distance)} "
                                     + ("with BN" if mode == "bn" else "without")
                                     for mode, frames in runs.items()))
    if kind == "ergen":  # what the caption says, on screen
        r = scene.data
        parts.append(f"trained objective {r.objective:.6g} against the closed-form optimum "
                     f"p* = {r.p_star:.6g} (relative gap {r.objective / r.p_star - 1:.1e})")
    if kind in ("space", "unit", "split", "layers"):
        batch = "all" if s.batch_size is None else str(s.batch_size)
        parts += [f"μ = {_g(s.mu_t)}·μ_BN", f"σ = {_g(s.sigma_s)}·σ_BN", f"|B| = {batch}"]
    return " · ".join(parts)


def is_wide(fig: Figure) -> bool:
    """Whether the figure's panels make a row at least twice as wide as its columns are high
    (two panels side by side, the layers view's rows): the lecture then docks its caption
    and sliders under the figure, not beside it, so the panels can take the screen's width."""
    lay = fig.get("layout", {})

    def spans(prefix: str) -> int:
        return len({tuple(v.get("domain", (0, 1))) for k, v in lay.items()
                    if k.startswith(prefix) and isinstance(v, dict)}) or 1

    return spans("xaxis") >= 2 * spans("yaxis")
