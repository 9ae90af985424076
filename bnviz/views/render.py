"""Static pictures of a partition (Figure 1 style) for slides and papers, with matplotlib.

One panel per layer l: the data (black dots), the facets of layer l (blue) and of the earlier
layers (gray), the box of the computation as the axes' limits.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from bnviz.core.partition import Partition  # noqa: E402

__all__ = ["render_density", "render_jitter", "render_partition"]


def render_partition(part: Partition, points: np.ndarray, fmt: str = "png", dpi: int = 150,
                     title: str | None = None) -> bytes:
    """The per-layer folded hyperplanes as PNG or SVG bytes."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"format must be png or svg, got {fmt!r}")
    n = len(part.layers)
    fig, axes = plt.subplots(1, n, figsize=(2.6 * n, 2.8), squeeze=False)
    x0, x1, y0, y1 = part.box
    for j, ax in enumerate(axes[0]):
        for i in range(j + 1):
            seg = part.layers[i].facets.reshape(-1, 2, 2)
            current = i == j
            ax.add_collection(LineCollection(
                seg, colors="#1f5fd6" if current else "#9a9a9a",
                linewidths=1.1 if current else 0.6, zorder=3 if current else 2))
        if part.decision_boundary is not None and j == n - 1:
            ax.add_collection(LineCollection(part.decision_boundary.reshape(-1, 2, 2),
                                             colors="#d62728", linewidths=1.6, zorder=4))
        ax.scatter(points[:, 0], points[:, 1], s=4, c="black", zorder=5)
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"layer {part.layers[j].layer}: {len(part.layers[j].regions)} regions",
                     fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def render_jitter(result, fmt: str = "png", dpi: int = 150) -> bytes:
    """Figure 6: the data (red / green by class), every realisation's decision boundary in
    blue and the test-time (full-data statistics) boundary in black."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"format must be png or svg, got {fmt!r}")
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    for seg in result.boundaries:
        ax.add_collection(LineCollection(seg.reshape(-1, 2, 2), colors="#1f5fd6",
                                         linewidths=0.7, alpha=0.5))
    ax.add_collection(LineCollection(result.test_boundary.reshape(-1, 2, 2), colors="black",
                                     linewidths=1.8))
    pts, lab = result.data.points, result.data.labels
    ax.scatter(pts[:, 0], pts[:, 1], s=6, c=np.where(lab == 1, "#2b8a3e", "#c92a2a"), zorder=3)
    e = result.settings.extent
    ax.set_xlim(-e, e)
    ax.set_ylim(-e, e)
    ax.set_aspect("equal")
    ax.set_title(f"|B| = {result.settings.batch_size}, {len(result.boundaries)} mini-batches: "
                 f"disagreement {result.disagreement_area:.3f}", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def render_density(result, points: np.ndarray, mode: str, fmt: str = "png",
                   dpi: int = 150) -> bytes:
    """Figure 3: one heatmap per layer, each normalised by its maximum (printed), darker where
    more facets pass; the data on top."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"format must be png or svg, got {fmt!r}")
    n = len(result.layers)
    fig, axes = plt.subplots(1, n, figsize=(2.6 * n, 2.8), squeeze=False)
    x0, x1, y0, y1 = result.box
    for ax, layer, counts in zip(axes[0], result.layers, result.counts, strict=True):
        top = max(int(counts.max()), 1)
        ax.imshow(counts / top, origin="lower", extent=(x0, x1, y0, y1), cmap="Greys",
                  vmin=0, vmax=1)
        ax.scatter(points[:, 0], points[:, 1], s=3, c="#e8590c")
        ax.set_title(f"{mode}, layer {layer} (max {top})", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    plt.close(fig)
    return buf.getvalue()
