"""What the lecture's panels say of themselves (issue 46, item 4), in words both media use:
the page's plotly figures (callbacks/lecture/figures.py) and the slides' matplotlib pictures
(:mod:`bnviz.lecture.pictures`).

A split panel is named by what it draws, sliders included: the μ slider scales every
layer's shift in both networks (BN's mean, and the negated bias without BN), so at μ = 0 the
"random bias" panel has no bias at all, and the two panels can draw one partition. They
then say so. A density panel with no facet says why it is empty.
"""

from __future__ import annotations

import numpy as np

from bnviz.params import PartitionParams
from bnviz.views.style import PARTITION, mode_label

__all__ = ["empty_density_note", "same_partition", "split_label"]


def _number(value: float) -> str:
    return f"{value:.3g}"


def _where(settings: PartitionParams) -> str:
    """Which shifts the sliders act on: every layer's, one layer's, or one unit's."""
    if settings.scope == "layer":
        return f" of layer {settings.target_layer}"
    if settings.scope == "unit":
        return " of " + PARTITION.target_name.format(layer=settings.target_layer,
                                                     unit=settings.target_unit + 1)
    return ""


def split_label(mode: str, settings: PartitionParams) -> str:
    """A split panel's name: its network (:meth:`PartitionStyle.row_label`) and what the μ
    and σ sliders made of it, when they are off BN's own statistics. Without BN the μ slider
    scales the random biases, and at 0 (on every layer) leaves none: the panel says "zero
    bias", not "random bias"."""
    s, where = settings, _where(settings)
    if mode == "bn":
        parts = [PARTITION.row_label(mode)]
        if s.mu_t != 1.0:
            parts.append(f"μ{where} = {_number(s.mu_t)}·μ_BN")
        if s.sigma_s != 1.0:
            parts.append(f"σ{where} = {_number(s.sigma_s)}·σ_BN")
        return ", ".join(parts)
    parts = [PARTITION.row_label(mode)]
    if mode == "random_bias" and s.mu_t != 1.0:
        scaled = f"{mode_label(mode)}{where} × {_number(s.mu_t)}"
        if s.mu_t == 0.0 and s.scope == "all":
            scaled += f" = {mode_label('zero_bias')}"
        parts = [PARTITION.without_bn.format(mode=scaled)]
    if s.sigma_s != 1.0:
        parts.append(f"σ{where} = {_number(s.sigma_s)}")
    return ", ".join(parts)


def _segments(facets: np.ndarray) -> np.ndarray:
    """Facets (x0, y0, x1, y1) in one order: each from its lower end, sorted, rounded."""
    f = np.round(np.asarray(facets, dtype=np.float64).reshape(-1, 4), 9)
    swap = (f[:, 0] > f[:, 2]) | ((f[:, 0] == f[:, 2]) & (f[:, 1] > f[:, 3]))
    f[swap] = f[swap][:, [2, 3, 0, 1]]
    return f[np.lexsort(f.T[::-1])] if len(f) else f


def same_partition(left, right, layer: int) -> bool:
    """Whether two partitions (:class:`bnviz.core.partition.Partition`) draw the same facets
    on layers 1..``layer``: the split's two panels are then one picture."""
    for a, b in zip(left.layers[:layer], right.layers[:layer], strict=True):
        fa, fb = _segments(a.facets), _segments(b.facets)
        if fa.shape != fb.shape or not np.allclose(fa, fb, atol=1e-7):
            return False
    return True


def empty_density_note(layer: int) -> str:
    """The words in a facet-density panel that counts no facet (lines joined by ``\\n``):
    no unit of the layer changes sign between the grid's points, so there is nothing to
    count, which is not a failure to draw."""
    return f"empty: no unit of\nlayer {layer} changes\nsign in this window"
