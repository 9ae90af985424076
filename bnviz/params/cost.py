"""What a request will cost, estimated from its parameters before any work starts.

The exact partition's cost is its number of regions.  Measured with
:func:`bnviz.core.partition.compute_partition` (CALIBRATION below), the regions of
Omega_{1|l} of a random 2D network follow Hanin & Rolnick's law for d = 2 -- they grow like
the square of the number of neurons N_l = D_1 + ... + D_l -- times a factor per layer that
depends on how much each layer folds the plane (BN paper section 3; abs folds most).  A
request whose estimate is over the engine's region cap is refused at once instead of after
minutes of work; the engine's runtime caps stay the final guard.

No torch here: the command line checks its options without loading it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bnviz.params.caps import MAX_DENSITY_WORK, MAX_DEPTH, MAX_WIDTH
from bnviz.params.fields import InputError

__all__ = ["check_alpha", "check_bn_batch", "check_bn_batch_size", "check_density_work",
           "check_network_size", "check_partition_size", "density_work", "expected_regions"]

#: Relative spread under which a BN batch counts as having none (SPEC.md: an eps for a zero
#: sigma is <= 1e-12 relative).
_NO_SPREAD_REL = 1e-12

#: R_l <= A * G**l * N_l**2 for bn and random_bias, and R_l <= A * G**l * N_l for zero_bias
#: (no bias: the network is positively homogeneous, every region is a cone at the origin and
#: their number grows like the neurons, not their square).  (A, G) per (mode, activation):
#: the envelope of the CALIBRATION measurements (every measured count is at or below it).
_LAW: dict[tuple[str, str], tuple[float, float]] = {
    ("bn", "relu"): (1.1, 1.23),
    ("bn", "leaky_relu"): (0.8, 1.23),
    ("bn", "abs"): (0.3, 2.11),
    ("random_bias", "relu"): (3.0, 0.91),
    ("random_bias", "leaky_relu"): (3.0, 0.92),
    ("random_bias", "abs"): (2.5, 1.02),
    ("zero_bias", "relu"): (2.5, 1.0),
    ("zero_bias", "leaky_relu"): (2.5, 1.0),
    ("zero_bias", "abs"): (2.5, 1.0),
}

CALIBRATION = """to be measured"""


def expected_regions(widths: Sequence[int], activation: str, mode: str) -> list[float]:
    """An upper estimate of the regions of Omega_{1|l} for l = 1..L (see CALIBRATION for how
    far above the measured counts it lies).

    Layer 1 is exact where it can be: a central arrangement of 2 D_1 regions with BN
    (Corollary 2), at most 1 + D + D(D-1)/2 regions for D lines in general position.  No
    layer can cut a region into more than 1 + D_l + D_l(D_l - 1)/2 pieces, which bounds the
    law for narrow layers.  The box enters through saturation only: beyond the data the
    regions are unbounded cones whose number stops growing, and the constants are the
    envelope over boxes of half-width 0.5 to 1000 around the data.
    """
    a, g = _LAW[(mode, activation)]
    out: list[float] = []
    neurons, previous = 0, 1.0
    for layer, width in enumerate(widths, start=1):
        neurons += int(width)
        pieces = 1.0 + width + width * (width - 1) / 2.0
        if layer == 1 and mode == "bn":
            law = 2.0 * width
        elif mode == "zero_bias":
            law = a * g**layer * neurons
        else:
            law = a * g**layer * float(neurons) ** 2
        previous = min(law, previous * pieces)
        out.append(previous)
    return out


def check_partition_size(widths: Sequence[int], activation: str, mode: str,
                         max_regions: int) -> None:
    """Refuse (InputError) a partition whose estimated regions exceed ``max_regions``."""
    for layer, regions in enumerate(expected_regions(widths, activation, mode), start=1):
        if regions > max_regions:
            raise InputError(
                f"layer {layer} would have about {regions:.2g} regions (estimated before any "
                f"work), over the cap of {max_regions}: lower the width or the depth")


def check_network_size(widths: Sequence[int], field: str | None = None) -> None:
    """A network (random, or read from a file) within MAX_DEPTH layers of MAX_WIDTH units."""
    if not (1 <= len(widths) <= MAX_DEPTH and all(1 <= w <= MAX_WIDTH for w in widths)):
        raise InputError(f"a network of widths {list(widths)} is over the limits (depth <= "
                         f"{MAX_DEPTH}, width <= {MAX_WIDTH})", field)


def check_alpha(activation: str, alpha: float) -> None:
    """Leaky ReLU needs a slope 0 < alpha < 1 (ReLU and abs ignore alpha)."""
    if activation == "leaky_relu" and not 0.0 < alpha < 1.0:
        raise InputError(f"leaky_relu needs 0 < alpha < 1, got {alpha:g}", "alpha")


def check_bn_batch_size(mode: str, batch_size: int | None, n: int) -> None:
    """BN normalises by the batch's biased sigma (eq. 3): a batch of one point has sigma 0
    for every unit, and the partition would be an artefact of the sigma floor."""
    batch = n if batch_size is None else min(batch_size, n)
    if mode == "bn" and batch < 2:
        raise InputError(f"a BN batch needs at least 2 points (sigma of {batch} point is 0 "
                         "for every unit)", "batch_size" if batch_size is not None else "n")


def check_bn_batch(batch: np.ndarray, first_weights: np.ndarray, mode: str) -> None:
    """Refuse a BN batch with no spread along any unit of layer 1: sigma_1 would be 0 for
    every unit (e.g. all points equal), and everything after divides by it."""
    if mode != "bn":
        return
    u = np.asarray(batch, dtype=np.float64) @ np.asarray(first_weights, dtype=np.float64).T
    if u.shape[0] < 2:
        check_bn_batch_size(mode, u.shape[0], u.shape[0])
    spread = u.std(axis=0)
    scale = np.abs(u).max(axis=0)
    if np.all(spread <= _NO_SPREAD_REL * scale):
        raise InputError("the BN batch has no spread along any unit of layer 1 (e.g. all its "
                         "points are equal), so sigma would be 0 for every unit: use a batch "
                         "of distinct points")


def density_work(grid: int, depth: int, width: int) -> float:
    """Multiply-adds of one Figure 3 computation: grid^2 x depth x width^2."""
    return float(grid) * grid * depth * width * width


def check_density_work(grid: int, depth: int, width: int) -> None:
    if density_work(grid, depth, width) > MAX_DENSITY_WORK:
        raise InputError(f"grid^2 x depth x width^2 is over the cap of {MAX_DENSITY_WORK:g}: "
                         "lower the grid, the width or the depth")
