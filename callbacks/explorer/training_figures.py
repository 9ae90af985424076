"""Figures of the explorer's live training (the "Watch it learn" tab): a frame's partition
(one panel a mode: BN beside zero and random bias when side by side) and the curves of the
run (loss, accuracy, mean distance from the data to the boundary, against the step)."""

from __future__ import annotations

import numpy as np

from bnviz.views.style import DENSITY, JITTER, PARTITION, TRAINING
from bnviz.web.callbacks.plotting import Figure, axis, panel_axes, sizes, typed_array
from bnviz.web.callbacks.plotting import line as segment_line

__all__ = ["CURVES", "curve_point", "curves_figure", "frame_figure", "frame_panels"]

#: The curves' panels, top to bottom: (history key, axis title).
CURVES = (("loss", TRAINING.loss_title), ("accuracy", TRAINING.accuracy_title),
          ("distance", TRAINING.distance_title))
_GAP = 0.06


def _domains(n: int) -> list[tuple[float, float]]:
    width = (1.0 - _GAP * (n - 1)) / n
    return [(i * (width + _GAP), i * (width + _GAP) + width) for i in range(n)]


def frame_panels(frames: dict, ghosts: dict | None = None) -> list[dict]:
    """The panels of :func:`frame_figure` for frames ({mode: bnviz.views.trainer.Frame}) and
    the previous frame's boundaries as the browser sent them back ({mode: segments}; a
    mangled one is not drawn).  A frame without a boundary in the box has an empty one (the
    same traces in every frame: the lecture animates them)."""
    out = []
    for mode, f in frames.items():
        part = f.partition
        earlier = [lay.facets for lay in part.layers[:-1]]
        boundary = part.decision_boundary
        out.append({"mode": mode, "step": f.step, "loss": f.loss, "accuracy": f.accuracy,
                    "regions": f.regions[-1], "layers": len(part.layers),
                    "facets": (np.concatenate(earlier) if earlier else np.zeros((0, 4)),
                               part.layers[-1].facets),
                    "boundary": np.zeros((0, 4)) if boundary is None else boundary,
                    "ghost": _ghost((ghosts or {}).get(mode))})
    return out


def _ghost(segments: object) -> np.ndarray | None:
    """The previous frame's boundary as the browser sent it back: (S, 4) finite numbers, or
    nothing (a mangled one is not drawn)."""
    try:
        g = np.asarray(segments, dtype=float)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past float's
        return None
    if g.size == 0 or g.size % 4 or g.size > 4 * 100_000 or not np.isfinite(g).all():
        return None
    return g.reshape(-1, 4)


def frame_figure(panels: list[dict], points: np.ndarray, labels: np.ndarray, box,
                 projector: bool = False, webgl: bool = True) -> Figure:
    """One panel per mode: ``panels`` are dicts with "mode", "step", "loss", "accuracy",
    "regions" (the last layer's), "facets" (the earlier layers' and the last layer's, as
    (S, 4) arrays), "boundary" and "ghost" (the previous frame's boundary, or None).

    With ``webgl`` every trace is WebGL (scattergl): the live tab redraws a frame ten times a
    second or more, and plotly.js redraws these lines and points about 3x faster in WebGL
    than in SVG (measured in headless Chromium: 19 ms against 64 ms at 4x8; 28 against 115
    side by side).  Without it, SVG (the lecture's step: a WebGL context costs its first
    picture more than its frames gain)."""
    kind = "scattergl" if webgl else "scatter"
    st = sizes(projector)
    traces, layout = [], {}
    pts = points.astype(np.float32)
    x0, x1, y0, y1 = box

    def line(*args) -> dict:
        return segment_line(*args) | {"type": kind}

    for k, (panel, domain) in enumerate(zip(panels, _domains(len(panels)), strict=True), 1):
        xa, ya, xkey, ykey = panel_axes(k)
        earlier, last = panel["facets"]
        first = k == 1
        traces.append(line(earlier, PARTITION.earlier, st["earlier"], PARTITION.earlier_name,
                           first, (xa, ya)))
        traces.append(line(last, PARTITION.current, st["earlier"] * 1.2,
                           PARTITION.current_name.format(layer=panel["layers"]), first,
                           (xa, ya)))
        if panel["ghost"] is not None:
            traces.append(line(panel["ghost"], TRAINING.ghost, st["current"] * 1.6,
                               TRAINING.ghost_name, first, (xa, ya)))
        if panel["boundary"] is not None:
            traces.append(line(panel["boundary"], TRAINING.boundary, st["current"] * 1.3,
                               PARTITION.boundary_name, first, (xa, ya)))
        for c, colour in enumerate(JITTER.class_colours):
            sel = labels == c
            traces.append({"type": kind, "mode": "markers",
                           "x": typed_array(pts[sel, 0]),
                           "y": typed_array(pts[sel, 1]),
                           "name": JITTER.class_name.format(label=c), "showlegend": first,
                           "marker": {"color": colour, "size": st["marker"] + 1,
                                      "line": {"color": "black", "width": 0.5}},
                           "hoverinfo": "skip", "xaxis": xa, "yaxis": ya})
        # the panels share the box: the y tick labels once, left of the first panel
        layout[xkey] = axis(x0, x1, domain=list(domain), constrain="domain", anchor=ya)
        layout[ykey] = axis(y0, y1, scaleanchor=xa, constrain="domain", anchor=xa,
                            showticklabels=first)
        # the step, loss and accuracy are in the tab's counter, above the graph
        title = TRAINING.panel_title.format(
            mode=PARTITION.row_label(panel["mode"]), step=panel["step"], loss=panel["loss"],
            accuracy=panel["accuracy"], regions=panel["regions"])
        layout.setdefault("annotations", []).append(
            # on the panel's drawn top (a square panel shrinks inside its domain)
            {"text": title, "xref": f"{xa} domain", "yref": f"{ya} domain", "x": 0.5, "y": 1.0,
             "xanchor": "center", "yanchor": "bottom", "showarrow": False,
             "font": {"size": st["font"] - 1}})
    return {"data": traces, "layout": layout | {
        "margin": {"l": 30, "r": 10, "t": 30, "b": 25}, "plot_bgcolor": "white",
        "font": {"size": st["font"]}, "legend": _legend(len(panels), st["font"]),
        "uirevision": "training", "hovermode": False, "dragmode": "pan",
        "modebar": {"orientation": "v"}}}


def _legend(panels: int, font: float) -> dict:
    """One panel: the legend to its right (the square panel leaves the graph's width free);
    side by side: one line below the panels."""
    if panels == 1:
        return {"orientation": "v", "x": 1.0, "xanchor": "left", "y": 0.5, "yanchor": "middle",
                "font": {"size": font - 1}}
    return {"orientation": "h", "y": -0.02, "font": {"size": font - 1}}


def curves_figure(modes: tuple[str, ...], history: list[dict],
                  projector: bool = False) -> Figure:
    """Loss, accuracy and mean distance against the step, one line a mode, in three panels
    one above the other (the traces are ordered panel by panel, then mode by mode, so that a
    new frame extends them: :func:`curve_point`)."""
    st = sizes(projector)
    traces, layout = [], {}
    rows = len(CURVES)
    height = (1.0 - 0.08 * (rows - 1)) / rows
    for r, (key, title) in enumerate(CURVES, 1):
        xa, ya, xkey, ykey = panel_axes(r)
        top = 1.0 - (r - 1) * (height + 0.08)
        for mode in modes:
            traces.append({"type": "scatter", "mode": "lines", "name":
                           PARTITION.row_label(mode), "showlegend": r == 1,
                           "x": [h["step"] for h in history],
                           "y": [h[key][mode] for h in history],
                           "line": {"color": DENSITY.mode_colour(mode), "width": 2},
                           "xaxis": xa, "yaxis": ya})
        layout[xkey] = {"anchor": ya, "matches": "x" if r > 1 else None,
                        "showticklabels": r == rows}
        layout[ykey] = {"domain": [top - height, top], "title": {"text": title,
                                                                  "font": {"size": 10}},
                        "rangemode": "tozero"}
    layout["xaxis"] = {k: v for k, v in layout["xaxis"].items() if v is not None}
    return {"data": traces, "layout": layout | {
        "margin": {"l": 50, "r": 10, "t": 10, "b": 30}, "font": {"size": st["font"] - 2},
        "legend": {"orientation": "h", "y": 1.08}, "uirevision": "curves"}}


def curve_point(modes: tuple[str, ...], frame: dict) -> list[tuple[int, float, float]]:
    """(trace index, step, value) of a new frame, for a Patch that extends the curves."""
    out = []
    for r, (key, _) in enumerate(CURVES):
        for m, mode in enumerate(modes):
            out.append((r * len(modes) + m, frame["step"], frame[key][mode]))
    return out
