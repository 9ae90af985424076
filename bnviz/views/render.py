"""Static pictures of the views for slides and papers (``bnviz partition|jitter|density
--format png|svg``), with matplotlib.

Each view is drawn by a ``*_picture`` function that returns the matplotlib Figure (tests read
its artists) and written by the matching ``render_*`` function as PNG or SVG bytes. Colours,
names and titles come from the views' descriptions (:mod:`bnviz.views.style`), which the
dashboard's plotly figures use too; line widths and marker sizes are matplotlib points.
Figures are made without pyplot: no global figure state is kept, so drawing is safe in
threads.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

from bnviz.core.partition import Partition
from bnviz.views.style import DENSITY, JITTER, PARTITION, TRAINING, mode_label
from bnviz.views.video import encode_mp4

__all__ = ["density_picture", "draw_density_panel", "draw_jitter", "jitter_picture",
           "line_segments", "partition_picture", "render_density", "render_jitter",
           "render_partition", "training_frame_picture", "write_training_movie"]

FORMATS = ("png", "svg")
#: The style's marker shapes (plotly's names) as matplotlib draws them.
MARKERS = {"circle": "o", "square": "s", "diamond": "D", "triangle-up": "^", "cross": "P",
           "x": "X", "star": "*", "pentagon": "p"}


def encoded_picture(fig: Figure, fmt: str, dpi: int) -> bytes:
    """The figure as PNG or SVG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    return buf.getvalue()


def check_picture_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"format must be png or svg, got {fmt!r}")


def line_segments(seg: np.ndarray) -> np.ndarray:
    """Segments (x0, y0, x1, y1) as LineCollection's (n, 2, 2)."""
    return np.asarray(seg).reshape(-1, 2, 2)


def _same(colour: str) -> str:
    return colour


def partition_picture(part: Partition, points: np.ndarray, title: str | None = None) -> Figure:
    """BN paper Figure 1: one panel per layer l, with the facets of layer l (blue) and of the
    earlier layers (gray), the decision boundary (red, last panel), the data (black) and the
    box of the computation as the axes' limits."""
    n = len(part.layers)
    fig = Figure(figsize=(2.6 * n, 2.8))
    axes = fig.subplots(1, n, squeeze=False)[0]
    for j, ax in enumerate(axes):
        lp = part.layers[j]
        draw_layer_panel(ax, part, j + 1, points, boundary=j == n - 1,
                         title=PARTITION.title.format(layer=lp.layer, regions=len(lp.regions)),
                         title_size=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def draw_layer_panel(ax, part: Partition, layer: int, points: np.ndarray,
                     scale: float = 1.0, marker_size: float = 4,
                     ink: Callable[[str], str] = _same, boundary: bool = False,
                     title: str | None = None, title_size: float | None = None) -> None:
    """One column of BN paper Figure 1 into ``ax`` (the CLI's picture and the lecture's
    slide): the facets of ``layer`` (1-based, the current colour) over those of the earlier
    layers (gray), the decision boundary when ``boundary`` and the network has one, the data
    in ``ink``'s data colour, and the computation's box as the limits (line widths times
    ``scale``)."""
    for i in range(layer):
        current = i == layer - 1
        ax.add_collection(LineCollection(
            line_segments(part.layers[i].facets),
            colors=PARTITION.current if current else PARTITION.earlier,
            linewidths=(1.1 if current else 0.6) * scale, zorder=3 if current else 2,
            label=PARTITION.current_name.format(layer=i + 1) if current
            else PARTITION.earlier_name))
    if boundary and part.decision_boundary is not None:
        ax.add_collection(LineCollection(line_segments(part.decision_boundary),
                                         colors=PARTITION.boundary, linewidths=1.6 * scale,
                                         zorder=4, label=PARTITION.boundary_name))
    ax.scatter(points[:, 0], points[:, 1], s=marker_size, c=ink(PARTITION.data), zorder=5,
               label=PARTITION.data_name)
    x0, x1, y0, y1 = part.box
    ax.set(xlim=(x0, x1), ylim=(y0, y1), aspect="equal", xticks=[], yticks=[])
    if title is not None:
        ax.set_title(title, fontsize=title_size)


def render_partition(part: Partition, points: np.ndarray, fmt: str = "png", dpi: int = 150,
                     title: str | None = None) -> bytes:
    """:func:`partition_picture` as PNG or SVG bytes."""
    check_picture_format(fmt)
    return encoded_picture(partition_picture(part, points, title), fmt, dpi)


def jitter_picture(result) -> Figure:
    """BN paper Figure 6 (a :class:`bnviz.views.jitter.JitterResult`): the data coloured by
    class, every realisation's decision boundary in blue and the test-time (full-data
    statistics) boundary in black."""
    fig = Figure(figsize=(4.2, 4.2))
    draw_jitter(fig.subplots(), result, title_size=8)
    fig.tight_layout()
    return fig


def draw_jitter(ax, result, scale: float = 1.0, ink: Callable[[str], str] = _same,
                title_size: float | None = None) -> None:
    """Figure 6 into ``ax`` (the CLI's picture and the lecture's slide): every realisation's
    decision boundary, the test-time boundary, the data by class (line widths times
    ``scale``, marker areas times its square; ``ink`` maps a style colour to the theme's),
    and the title with the disagreement area."""
    k = len(result.boundaries)
    if k:
        ax.add_collection(LineCollection(
            line_segments(np.concatenate(result.boundaries)), colors=JITTER.realisation,
            linewidths=0.7 * scale, alpha=JITTER.realisation_opacity,
            label=JITTER.realisations_name.format(k=k)))
    ax.add_collection(LineCollection(line_segments(result.test_boundary),
                                     colors=ink(JITTER.test_boundary), linewidths=1.8 * scale,
                                     label=JITTER.test_name))
    pts, lab = result.data.points, np.asarray(result.data.labels)
    for c, (colour, symbol) in enumerate(zip(JITTER.class_colours, JITTER.class_symbols,
                                             strict=True)):
        sel = lab == c
        ax.scatter(pts[sel, 0], pts[sel, 1], s=6 * scale ** 2, c=colour,
                   marker=MARKERS[symbol], zorder=3, label=JITTER.class_name.format(label=c))
    e = result.settings.extent
    ax.set(xlim=(-e, e), ylim=(-e, e), aspect="equal")
    ax.set_title(JITTER.batches.format(batch=result.settings.batch_size, k=k)
                 + f": disagreement {result.disagreement_area:.3f}", fontsize=title_size)


def render_jitter(result, fmt: str = "png", dpi: int = 150) -> bytes:
    """:func:`jitter_picture` as PNG or SVG bytes."""
    check_picture_format(fmt)
    return encoded_picture(jitter_picture(result), fmt, dpi)


def density_picture(result, points: np.ndarray, mode: str) -> Figure:
    """BN paper Figure 3 (a :class:`bnviz.views.density.DensityResult`): one heatmap per
    layer, each normalised by its maximum (printed), darker where more facets pass; the data
    on top."""
    n = len(result.layers)
    fig = Figure(figsize=(2.6 * n, 2.8))
    axes = fig.subplots(1, n, squeeze=False)[0]
    for ax, layer, counts in zip(axes, result.layers, result.counts, strict=True):
        draw_density_panel(ax, counts, layer, result.box, points, title_size=8,
                           title_prefix=f"{mode_label(mode)}, ")
    fig.tight_layout()
    return fig


def draw_density_panel(ax, counts: np.ndarray, layer: int, box, points: np.ndarray,
                       marker_size: float = 3, ink: Callable[[str], str] = _same,
                       title_prefix: str = "", title_size: float | None = None) -> None:
    """One panel of Figure 3 into ``ax`` (the CLI's picture and the lecture's slide): the
    facet counts of ``layer`` normalised by their maximum (printed in the title), darker
    where more facets pass, and the data on top."""
    top = max(int(counts.max()), 1)
    cmap = LinearSegmentedColormap.from_list("facet counts", list(DENSITY.counts))
    ax.imshow(counts / top, origin="lower", extent=tuple(box), cmap=cmap, vmin=0, vmax=1)
    ax.scatter(points[:, 0], points[:, 1], s=marker_size, c=ink(DENSITY.data))
    ax.set(xticks=[], yticks=[])
    ax.set_title(title_prefix + DENSITY.panel.format(layer=layer, top=top),
                 fontsize=title_size)


def render_density(result, points: np.ndarray, mode: str, fmt: str = "png",
                   dpi: int = 150) -> bytes:
    """:func:`density_picture` as PNG or SVG bytes."""
    check_picture_format(fmt)
    return encoded_picture(density_picture(result, points, mode), fmt, dpi)


def training_frame_picture(frame, points: np.ndarray, labels: np.ndarray, mode: str,
                           previous=None) -> Figure:
    """One frame of a live training (a :class:`bnviz.views.trainer.Frame`), as a movie's
    picture (:func:`draw_training_frame`)."""
    fig = Figure(figsize=(4.2, 4.4))
    draw_training_frame(fig.subplots(), frame, points, labels, previous)
    fig.axes[0].set_title(TRAINING.frame_title.format(
        mode=PARTITION.row_label(mode), step=frame.step, loss=frame.loss,
        accuracy=frame.accuracy, regions=frame.regions[-1]), fontsize=8)
    fig.tight_layout()
    return fig


def draw_training_frame(ax, frame, points: np.ndarray, labels: np.ndarray,
                        previous=None, scale: float = 1.0) -> None:
    """A frame into ``ax``: the facets of every layer (the last in blue), the decision
    boundary, the previous frame's boundary as a ghost, and the data by class (line widths
    and markers times ``scale``); no title."""
    part = frame.partition
    earlier = [lay.facets for lay in part.layers[:-1]]
    if earlier:
        ax.add_collection(LineCollection(line_segments(np.concatenate(earlier)),
                                         colors=PARTITION.earlier, linewidths=0.5 * scale))
    ax.add_collection(LineCollection(line_segments(part.layers[-1].facets),
                                     colors=PARTITION.current, linewidths=0.8 * scale))
    if previous is not None and previous.partition.decision_boundary is not None:
        ax.add_collection(LineCollection(line_segments(previous.partition.decision_boundary),
                                         colors=TRAINING.ghost, linewidths=1.6 * scale,
                                         label=TRAINING.ghost_name))
    if part.decision_boundary is not None:
        ax.add_collection(LineCollection(line_segments(part.decision_boundary),
                                         colors=PARTITION.boundary, linewidths=1.8 * scale,
                                         label=PARTITION.boundary_name))
    for c, (colour, symbol) in enumerate(zip(JITTER.class_colours, JITTER.class_symbols,
                                             strict=True)):
        sel = np.asarray(labels) == c
        ax.scatter(points[sel, 0], points[sel, 1], s=9 * scale ** 2, c=colour,
                   marker=MARKERS.get(symbol, "o"), edgecolors="black",
                   linewidths=0.3 * scale, zorder=5)
    x0, x1, y0, y1 = part.box
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])


def write_training_movie(frames: list, points: np.ndarray, labels: np.ndarray, path,
                         mode: str, fps: int = 5) -> None:
    """The frames as an animation: a GIF (Pillow), or an MP4 (H.264:
    :mod:`bnviz.views.video`); each frame drawn by :func:`training_frame_picture`, with its
    predecessor's boundary as a ghost."""
    from PIL import Image

    path = Path(path)
    pngs = [encoded_picture(training_frame_picture(f, points, labels, mode,
                                            frames[i - 1] if i else None), "png", 100)
            for i, f in enumerate(frames)]
    if path.suffix.lower() == ".gif":
        images = [Image.open(io.BytesIO(b)).convert("P", palette=Image.Palette.ADAPTIVE)
                  for b in pngs]
        images[0].save(path, save_all=True, append_images=images[1:],
                       duration=int(1000 / fps), loop=0)
        return
    encode_mp4(pngs, fps, path)
