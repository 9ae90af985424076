"""A slice as a picture (``bnviz slice --format png|svg``): the last layer's regions, each
in its own shade of grey, every layer's facets, the decision boundary of each mini-batch
(one colour a batch) and the images the plane goes through."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure

from bnviz.views.render import check_picture_format, encoded_picture, line_segments

__all__ = ["render_slice", "slice_picture"]


def slice_picture(result) -> Figure:
    first = result.slices[0]
    fig = Figure(figsize=(6.4, 6.0))
    ax = fig.add_subplot()
    last = first.layers[-1].regions if first.layers else first.predicted
    polys = [last.polygon(i) for i in range(len(last))]
    shade = np.random.default_rng(0).uniform(0.82, 0.97, len(polys))
    ax.add_collection(PolyCollection(polys, facecolors=np.repeat(shade[:, None], 3, 1),
                                     edgecolors="none"))
    facets = [lay.facets for lay in first.layers if len(lay.facets)]
    if facets:
        ax.add_collection(LineCollection(line_segments(np.concatenate(facets)), colors="#555555",
                                         linewidths=0.2))
    colours = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    for k, s in enumerate(result.slices):
        if len(s.decision_boundary):
            ax.add_collection(LineCollection(line_segments(s.decision_boundary),
                                             colors=colours[k % len(colours)], linewidths=1.6,
                                             alpha=1.0 if len(result.slices) == 1 else 0.7))
    anchors = first.plane.anchors
    ax.scatter(anchors[:, 0], anchors[:, 1], s=60, c="k", marker="*", zorder=5)
    a0, a1, b0, b1 = first.window
    ax.set_xlim(a0, a1)
    ax.set_ylim(b0, b1)
    ax.set_aspect("equal")
    ax.set_xlabel("a")
    ax.set_ylabel("b")
    counts = ", ".join(str(c) for c in first.counts)
    ax.set_title(f"BN {result.params.bn}: regions per layer {counts}", fontsize=8)
    fig.tight_layout()
    return fig


def render_slice(result, fmt: str = "png", dpi: int = 150) -> bytes:
    check_picture_format(fmt)
    return encoded_picture(slice_picture(result), fmt, dpi)
