"""What a request will cost, estimated from its parameters before any work starts.

The exact partition's cost is its number of regions.  A request whose estimate is over the
engine's region cap is refused at once instead of after minutes of cutting (``bnviz partition
--depth 16 --width 128`` used to run 110 s before the engine refused it); the engine's runtime
caps stay the final guard.  No torch here: the command line checks its options without it.

The estimate (:func:`expected_regions`) is an upper envelope of region counts measured with
:func:`bnviz.core.partition.compute_partition`; see :data:`CALIBRATION`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bnviz.caps import (
    EXPLORER_MAX_REGIONS,
    MAX_CONCENTRATION_PASSES,
    MAX_DENSITY_WORK,
    MAX_DEPTH,
    MAX_LANDSCAPE_WORK,
    MAX_TRAINING_IMAGES,
    MAX_WIDTH,
)
from bnviz.params.fields import InputError

__all__ = ["CALIBRATION", "SCENE_SECONDS", "SECONDS_PER_FLOP", "SECONDS_PER_REGION",
           "always_heavy", "scene_seconds",
           "check_alpha", "check_bn_batch", "check_bn_batch_size",
           "check_concentration_passes", "check_density_work", "check_landscape_work",
           "check_network_size", "check_partition_size", "check_training_images",
           "claims_seconds", "concentration_passes", "density_work", "expected_regions",
           "forward_seconds", "landscape_work", "luo_seconds", "partition_seconds",
           "slides_seconds", "training_images"]

#: Relative spread under which a BN batch counts as having none (docs/conventions.md: an eps
#: for a zero sigma is <= 1e-12 relative).
_NO_SPREAD_REL = 1e-12

#: bn: sqrt(R_l) <= a * S_l with S_l = sum_{j <= l} D_j h^(j-1), per activation (a, h).
_BN_LAW: dict[str, tuple[float, float]] = {
    "relu": (0.92, 1.23), "leaky_relu": (0.83, 1.23), "abs": (1.22, 1.6)}
#: random_bias: R_l <= A * E / (E + E0) * N_l^2, per activation (A, E0).
_RANDOM_BIAS_LAW: dict[str, tuple[float, float]] = {
    "relu": (1.16, 5.0), "leaky_relu": (1.02, 5.0), "abs": (2.87, 0.8)}
#: zero_bias: R_l <= A * N_l, per activation A.
_ZERO_BIAS_LAW: dict[str, float] = {"relu": 3.17, "leaky_relu": 3.48, "abs": 5.13}
#: The envelopes above are of the calibration's nets; other seeds came within 1.24 of them.
_MARGIN = 1.5

CALIBRATION = """How expected_regions was calibrated (2025, bnviz.core.partition on a CPU).

Nets: random_network(depth, width, activation, 0.1, mode, seed) on 100 moons points, batch
all; widths 4, 8, 16, 32, 64 (and 128, 256 for zero/random bias), depth up to 16 (up to the
engine's cap), seeds 0 and 1, boxes of half-width E = 0.5, 3, 20, 1000; for bn also
leaky slopes 0.01, 0.5, 0.9, the star, blobs, gaussian, spiral and circles data, and batches
of 2, 3 and 8 points.  N_l = D_1 + ... + D_l neurons up to layer l, R_l the regions of
Omega_{1|l}.

* bn.  R_l / N_l^2 depends on l only (not on the width, for widths >= 8): the facets of each
  layer are longer than the last's (BN folds them through the data, BN paper Figure 1), and
  the regions grow like the square of the total facet length S_l = sum_j D_j h^(j-1)
  (Hanin & Rolnick: like the square of the neurons, h = 1).  Measured R_l / N_l^2, the
  largest over widths >= 8, boxes and seeds, at layers 2, 4, 8, 12, 16:
      leaky_relu  0.57  1.12  3.25   8.65  23.9
      relu        0.64  1.36  4.48  12.63  21.6
      abs         0.94  5.86   113      -     -    (abs 9 x 8: 1,206,454 regions)
  Envelope (a, h): relu (0.92, 1.23), leaky_relu (0.83, 1.23), abs (1.22, 1.6).
  estimate / measured for widths >= 8 and E >= 3: median 1.26 / 1.42 / 1.55, 90th
  percentile 1.7 / 1.8 / 2.8 (relu / leaky / abs).  Larger for boxes smaller than the
  data (E = 0.5: about 3x; the bound does not shrink with the box, whose size relative to
  the data is known only once the data are read) and for narrow nets (width 4: up to 4x).
* random_bias.  R_l / N_l^2 falls slowly with depth (0.35 at layer 1 to 0.26 at layer 7 for
  width 256, E = 3) and grows with the box until it holds every intersection of the random
  hyperplanes (within a few units of the origin): largest R_l / N_l^2 at E = 0.5, 3, 20,
  1000: 0.065, 0.40, 0.69, 1.15 (relu).  Envelope A * E / (E + E0): relu (1.16, 5),
  leaky_relu (1.02, 5), abs (2.87, 0.8); estimate / measured median 2.2 / 1.9 / 4.4.
* zero_bias.  No bias: the network is positively homogeneous, every region is a cone at the
  origin and their number grows like the neurons: 16 x 256 has 8,160 (relu) regions.
  Envelope A * N_l: relu 3.17, leaky_relu 3.48, abs 5.13; estimate / measured median 1.6-2.2.

The estimate is these envelopes times a margin of 1.5 (from layer 2 on): on nets of seeds
2 to 11 (not calibrated on: bn relu 6 x 16, leaky 8 x 8, abs 6 x 8; random_bias 6 x 16,
6 x 8) the counts came within 1.24 of the envelopes, i.e. within the margin.

Known answers of the engine at its cap of 2,000,000 regions (tests/params/test_cost.py):
bn leaky_relu 16 x 128 refused after ~110 s (estimate: over the cap at layer 7); bn abs
9 x 8 made 1,206,454 regions in 12 s (estimate 1.8e6: accepted) and 10 x 8 was refused after
cutting 9 layers (estimate 4.7e6); random_bias relu 16 x 256 made 845,041 regions at layer 7
in 200 s (estimate 2.1e6 there: refused).
"""


def expected_regions(widths: Sequence[int], activation: str, mode: str,
                     extent: float = 3.0) -> list[float]:
    """An upper estimate of the regions of Omega_{1|l} for l = 1..L of a random network with
    these layer widths in the box [-extent, extent]^2 (:data:`CALIBRATION`: how far above the
    measured counts it lies).

    Layer 1 is exact where it can be: a central arrangement of 2 D_1 regions with BN
    (Corollary 2) or without bias, at most 1 + D + D(D-1)/2 regions for D lines in general
    position; and no layer cuts a region into more than 1 + D_l + D_l(D_l - 1)/2 pieces.
    """
    out: list[float] = []
    neurons, length, previous = 0, 0.0, 1.0
    for layer, width in enumerate(widths, start=1):
        neurons += int(width)
        pieces = 1.0 + width + width * (width - 1) / 2.0
        if mode == "bn":
            a, h = _BN_LAW[activation]
            length += width * h ** (layer - 1)
            law = _MARGIN * (a * length) ** 2
        elif mode == "random_bias":
            a, e0 = _RANDOM_BIAS_LAW[activation]
            law = _MARGIN * a * extent / (extent + e0) * float(neurons) ** 2
        else:
            law = _MARGIN * _ZERO_BIAS_LAW[activation] * neurons
        if layer == 1:  # lines through one point (BN's centroid, or the origin), or in general
            law = 2.0 * width if mode in ("bn", "zero_bias") else pieces
        previous = min(law, previous * pieces)
        out.append(previous)
    return out


def check_partition_size(widths: Sequence[int], activation: str, mode: str, extent: float,
                         max_regions: int) -> None:
    """Refuse (InputError) a partition whose estimated regions exceed ``max_regions``."""
    for layer, regions in enumerate(expected_regions(widths, activation, mode, extent), 1):
        if regions > max_regions:
            raise InputError(
                f"layer {layer} would have about {regions:.2g} regions (estimated before any "
                f"work), over the cap of {max_regions}: lower the width or the depth"
                + (" or the box" if mode == "random_bias" else ""))


def check_network_size(widths: Sequence[int], field: str | None = None) -> None:
    """A network (random, or read from a file) within MAX_DEPTH layers of MAX_WIDTH units."""
    if not (1 <= len(widths) <= MAX_DEPTH and all(1 <= w <= MAX_WIDTH for w in widths)):
        raise InputError(f"a network of widths {list(widths)} is over the limits (depth <= "
                         f"{MAX_DEPTH}, width <= {MAX_WIDTH})", field)


def check_alpha(activation: str, alpha: float) -> None:
    """Leaky ReLU needs a slope 0 < alpha < 1 (ReLU and abs ignore alpha)."""
    if activation == "leaky_relu" and not 0.0 < alpha < 1.0:
        raise InputError(f"leaky_relu needs 0 < alpha < 1, got {alpha:g}", "alpha")


def check_bn_batch_size(mode: str, batch_size: int | None, n: int, n_field: str = "n") -> None:
    """BN normalises by the batch's biased sigma (eq. 3): a batch of one point has sigma 0
    for every unit, and the partition would be an artefact of the sigma floor."""
    batch = n if batch_size is None else min(batch_size, n)
    if mode == "bn" and batch < 2:
        raise InputError(f"a BN batch needs at least 2 points (sigma of {batch} point is 0 "
                         "for every unit)", "batch_size" if batch_size is not None else n_field)


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


def landscape_work(steps: int, etas: int, depth: int, batch_size: int, width: int) -> float:
    """Forward-backward work of one 2D landscape run (Santurkar et al.), both arms: at every
    step one pass per step size, one per Definition 2.1 hybrid (depth) and two more, each
    about batch x width^2 x depth multiply-adds."""
    return 2.0 * steps * (etas + depth + 2) * batch_size * width**2 * depth


def check_landscape_work(steps: int, etas: int, depth: int, batch_size: int,
                         width: int) -> None:
    if landscape_work(steps, etas, depth, batch_size, width) > MAX_LANDSCAPE_WORK:
        raise InputError("steps x step sizes x batch x width^2 x depth is over the cap: lower "
                         "the steps, the step sizes, the batch or the width")


def training_images(epochs: int, runs: int, arms: int, train_size: int,
                    measured: tuple[int, int] | None = None) -> float:
    """Training images an image experiment passes through: epochs x runs x arms x training
    images; ``measured`` = (step sizes, every how many steps) for the landscape job, whose
    every measurement costs the step sizes plus about 12 layer hybrids of passes."""
    work = float(epochs) * runs * arms * train_size
    if measured is not None:
        etas, every = measured
        work *= 1 + (etas + 12) / every
    return work


def check_training_images(epochs: int, runs: int, arms: int, train_size: int,
                          measured: tuple[int, int] | None = None) -> None:
    work = training_images(epochs, runs, arms, train_size, measured)
    if work > MAX_TRAINING_IMAGES:
        raise InputError(f"epochs x runs x {arms} arms x training images = {work:.3g} is over "
                         f"the cap of {MAX_TRAINING_IMAGES:.0e}: lower epochs, runs or "
                         "max_train")


def concentration_passes(images: int, samples: int, radii: int, runs: int, arms: int) -> float:
    """Forward passes of the concentration experiment (BN paper Figure 4): for each run and
    arm, ``samples`` points in each of ``radii`` balls around ``images`` data images and as
    many Gaussian images."""
    return float(images) * samples * radii * runs * arms * 2


def check_concentration_passes(images: int, samples: int, radii: int, runs: int,
                               arms: int) -> None:
    work = concentration_passes(images, samples, radii, runs, arms)
    if work > MAX_CONCENTRATION_PASSES:
        raise InputError(f"images x samples x eps values x runs x {arms * 2} = {work:.3g} "
                         f"forward passes is over the cap of {MAX_CONCENTRATION_PASSES:.0e}")


# ---- seconds, for the web's admission control (bnviz.service.admission) ------------------

#: Seconds a page spends per estimated region of a partition (cutting it, its statistics and
#: its figure), on one core of the 2-core machine: 28 ms for the explorer's depth 6 x 16
#: (60,171 estimated regions), 1.4 s for the jitter page's 128 realisations of 3 x 16.
SECONDS_PER_REGION = 2e-6
#: Seconds per floating-point operation of a batched forward pass in torch on one core.
SECONDS_PER_FLOP = 1e-10


def partition_seconds(widths: Sequence[int], activation: str, mode: str, extent: float,
                      region_cap: float) -> float:
    """Estimated seconds of one partition (:func:`expected_regions` per layer, each capped
    where the engine stops: ``region_cap``)."""
    regions = expected_regions(widths, activation, mode, extent)
    return SECONDS_PER_REGION * sum(min(r, region_cap) for r in regions)


def forward_seconds(passes: float, widths: Sequence[int]) -> float:
    """Estimated seconds of ``passes`` points (or batch rows) through layers of ``widths``
    (2 inputs): 2 * sum of D_(l-1) D_l multiply-adds each."""
    fan = [2, *widths]
    flops = 2.0 * sum(a * b for a, b in zip(fan[:-1], fan[1:], strict=False))
    return SECONDS_PER_FLOP * passes * flops


def always_heavy(*_args: object, **_kwargs: object) -> float:
    """The cost of a computation too varied to estimate (a training, the claims table):
    always heavy, so it waits for its turn under load (and is cached once computed)."""
    return float("inf")


# ---- the pages' fixed computations, measured on the 2-core machine under load (issue 42) --

#: The debate page's claims table (bnviz.papers.claims.shared_claims, one torch thread):
#: 11.4 s warm and 17.9 s with torch's first calls, with another process busy on both cores.
CLAIMS_SECONDS = 15.0
#: One lecture slide (bnviz.lecture.slides): its scene at the step's own settings and its PNG
#: and SVG. 17 slides: 77.7 s with the papers' networks trained first (a fresh BNVIZ_HOME),
#: 20.0 s once they are on disk (``bnviz lecture --export DIR``); about half is drawing.
SLIDE_SECONDS = 2.0
#: Luo et al.'s statistics on the debate page: per sample drawn, and the fixed part (0.28 s
#: for a batch of 4, 0.84 s for 256: the 7 gammas' batches and the 20,000 statistics).
LUO_SECONDS_PER_SAMPLE, LUO_SECONDS = 1.7e-8, 0.25


def claims_seconds(*_args: object, **_kwargs: object) -> float:
    """Estimated seconds of the claims table (:data:`CLAIMS_SECONDS`)."""
    return CLAIMS_SECONDS


def slides_seconds(steps: int) -> float:
    """Estimated seconds of the lecture's slides for ``steps`` tour steps, drawn in a job's
    process where no scene is in memory yet (:data:`SLIDE_SECONDS`)."""
    return SLIDE_SECONDS * max(int(steps), 0)


def luo_seconds(batch: int, statistics: int, gap_batches: int, gammas: int) -> float:
    """Estimated seconds of Luo et al.'s statistics view: ``statistics`` mini-batch
    statistics of ``batch`` samples, and ``gap_batches`` batches for each of ``gammas``
    decay values."""
    samples = float(batch) * (statistics + gammas * gap_batches)
    return LUO_SECONDS + LUO_SECONDS_PER_SAMPLE * samples


#: The lecture's scenes beyond a partition (bnviz.lecture.scenes), measured on the 2-core
#: machine under load (issue 42): Figure 3's densities 5.1-6.8 s, the training step's recorded
#: runs 6.5 s, Figure 9's numbers 2.5-3.5 s. The slice step's scene is kept on disk once
#: computed; a miss is a cut of a CNN's slice: always heavy.
SCENE_SECONDS = {"density": 6.0, "training": 6.5, "figure9": 3.0, "slice": float("inf")}


def scene_seconds(scene: str, settings: Any) -> float:
    """Estimated seconds of a lecture scene at explorer ``settings`` (an PartitionParams): a
    partition (two for the side-by-side scenes, sixteen realisations for the jitter), or a
    measured figure (:data:`SCENE_SECONDS`); the papers' small scenes are light."""
    one = partition_seconds((settings.width,) * settings.depth, settings.activation,
                            settings.mode, settings.extent, EXPLORER_MAX_REGIONS)
    if scene in ("space", "unit"):
        return one
    if scene in ("layers", "split"):
        return 2 * one
    if scene == "jitter":
        return 0.3 + 16 * one
    return SCENE_SECONDS.get(scene, 0.0)
