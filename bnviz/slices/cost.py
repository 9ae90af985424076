"""What a slice will cost, before it is cut: its last layer's regions, estimated with a stated
error, and the bound the caps act on.

No sound upper bound is affordable before the cut.  A region can be as small as the network
makes it anywhere in the window, so only the cut itself (every region found) bounds the count
for certain, and bounds from the units alone (an arrangement's 1 + lines + crossings, layer
on layer) exceed any cap by orders of magnitude.  So the count is *estimated*, without bias
and with its own standard error, from exact cuts of a random sample of the window, and the
cap acts on ``bound = estimate + k * error``: k = :data:`Z` = 3 standard errors, widened to
Student's t at the error's degrees of freedom (3.1-3.6 at the 15-60 measured), the same
one-sided 99.87 %.  That bound is statistical, not a guarantee: bench/slice_estimate.py
measures how it holds against exact counts up to 10^6 regions (docs/slices.md gives the
figures).  The hard stop stays the engine's own cap (``max_regions`` regions a layer): a
bound that falls short costs the time of a cut the engine then stops, never its memory.

The estimate rests on Euler's formula for a rectangle cut into convex regions (every region
of a slice is convex: one code, linear inequalities):

    regions = 1 + B / 2 + W,

B the points where a facet meets the rectangle's boundary, W the interior vertices weighted by
(degree - 2) / 2 (1 where two facets cross, 1/2 where three max-pooling cells meet).  W adds
up over area and B over the boundary's length, so both are sampled:

* W: the window is cut into 16 x 16 tiles, each tile into two halves, and in each half a
  rectangle of the half's shape and a fraction f of its area is laid at random, wrapped round
  the half (so every point of it is in the sample with probability f: no edge effect).  All
  rectangles are cut exactly in one pass (the engine's own cut, the window's tolerance
  scale); a rectangle's W_i = R_i - 1 - B_i / 2 is read from its regions (R_i) and the
  regions that touch each of its sides (B_i: those less one, side by side).  W ~ sum W_i / f.
* B: each side of the window is cut into 32 segments, and along each a thin strip a fraction
  sqrt(f) of the segment long is laid at random (wrapped); the regions its outer side
  touches, less one, are the crossings there.  B ~ sum c_j / sqrt(f).

The fraction is set tile by tile, proportional to the square root of the tile's density on
a 48 x 48 grid (the grid's boundary crossings, :func:`tile_density`; a floor of 1 % of the
mean keeps every tile in the sample), so that the sample holds about :data:`TARGET`
vertices; the grid only lays the sample, what is counted is exact.  The error is the
collapsed-strata standard error (the two halves of a tile, two neighbouring segments of a
side, taken as one stratum: their difference counts as noise, so it errs large) times the
finite-population factor sqrt(1 - f); its degrees of freedom are Satterthwaite's (few where
a few pairs carry it: vertices cluster, a sample's spread is some 4-5 times a Poisson
count's, and an estimate that missed a dense spot has a small error too, so the lower tail
of (estimate - exact) / error is the heavier).  Rounds: a sample that finds fewer than TARGET / 2
vertices (the grid saw too many) is drawn again, larger; with a cap, a sample whose bound
straddles the cap (estimate - k error <= cap < estimate + k error) is drawn again as large as
deciding it needs, up to :data:`SHARE` of the estimated regions (the window's cut costs about
that much per region) and half the :data:`BUDGET`; a sample's cut stops at BUDGET regions
(a first sample that small outgrowing it is reported as a lower bound, ``exceeded``).  A
window whose grid count is under :data:`EXACT_BELOW` is cut whole instead and counted exactly
(error 0): a sample costs as much there.  So the estimate costs a cut of some 3 x TARGET
regions and a 48 x 48 grid's forward passes whatever the window's size.

The grid's own count (:func:`bnviz.slices.estimate.crofton_regions`, the estimate the caps
read before) has no error it can state and runs low where the grid is coarser than the
regions or the density varies across the window.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from bnviz.core.limits import PartitionTooLarge
from bnviz.device import pick_device
from bnviz.params.slice import BOUND_ERRORS
from bnviz.slices.estimate import grid_flips
from bnviz.slices.graph import SliceNet, Statistics
from bnviz.slices.plane import Plane

__all__ = ["BUDGET", "EXACT_BELOW", "SHARE", "TARGET", "Z", "RegionEstimate", "design",
           "estimate_regions", "sampled_estimate"]

#: Standard errors above the estimate that the caps act on.
Z = BOUND_ERRORS
#: Interior vertices a sample aims at (a round with half of them is accepted).
TARGET = 2000
#: Regions a sample's cut may make (any layer) before it stops.
BUDGET = 40_000
#: Windows whose grid count is under this are cut whole instead (counted exactly), if their
#: cut stays within twice as many regions: a sample cuts some 3 x TARGET regions (its
#: rectangles' sides cut regions too), each dearer than a whole window's (every rectangle
#: goes through every layer), so below this the whole cut is as cheap.
EXACT_BELOW = 10_000
#: Tiles along each side of the window (each split in two halves); strips along a side.
TILES = 16
SEGMENTS = 2 * TILES
#: Grid points along a side for the tiles' density (3 x 3 a tile).
PROXY_GRID = 3 * TILES
#: A tile's density floor, of the mean (no tile goes unsampled).
FLOOR = 0.01
#: A strip's width, of its length.
STRIP_WIDTH = 1 / 16
#: Rounds of sampling at most.
ROUNDS = 5
#: With a cap, a sample grows to decide it up to this share of the estimated regions (the
#: window's cut costs about as much a region).
SHARE = 0.05


@dataclass(frozen=True)
class RegionEstimate:
    """The last nonlinear layer's regions in a window: ``regions`` (the estimate), ``error``
    (its standard error; 0 when counted exactly), ``bound`` (regions + k x error, k >= Z: the
    module docstring; or the lower bound of a sample that outgrew its budget: ``exceeded``),
    ``fraction`` (of the window's area cut exactly), ``sampled`` (regions the estimate cut)
    and ``seconds``."""

    regions: int
    error: int
    bound: int
    fraction: float
    sampled: int
    seconds: float
    exceeded: bool = False


@dataclass(frozen=True)
class _Sample:
    regions: float
    variance: float
    vertices: float  # W sampled
    cut: int  # regions the cut made (last layer)
    fraction: float  # of the window's area
    df: float = math.inf  # the variance's degrees of freedom

    @property
    def error(self) -> float:
        return math.sqrt(self.variance)

    @property
    def multiplier(self) -> float:
        """Standard errors from the estimate to its bound: Student's t at the error's degrees
        of freedom, at the one-sided level of Z normal standard errors (Z = 3: 99.87 %)."""
        if not math.isfinite(self.df):
            return float(Z)
        from scipy import stats

        return float(stats.t.ppf(stats.norm.cdf(Z), max(self.df, 1.0)))


def tile_density(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                 stats: Statistics | None = None, device: torch.device | str = "cpu"
                 ) -> np.ndarray:
    """(TILES, TILES), rows along b: each tile's vertices by the grid's local count
    (pi/4 rho_a rho_b of the tile's own crossings, :mod:`bnviz.slices.estimate`, on a
    PROXY_GRID grid): where the sample looks hardest, never what it counts."""
    a0, a1, b0, b1 = window
    g, per = PROXY_GRID, PROXY_GRID // TILES
    _, _, fa, fb = grid_flips(net, plane, window, stats, device, g)
    mid = ((np.arange(g - 1) + 0.5) // per).astype(np.int64)  # the tile of a step's middle
    own = np.arange(g) // per
    crossings_a = np.zeros((TILES, TILES))
    crossings_b = np.zeros((TILES, TILES))
    np.add.at(crossings_a, (own[:, None], mid[None, :]), fa.sum(0))
    np.add.at(crossings_b, (mid[:, None], own[None, :]), fb.sum(0))
    steps_a = np.zeros((TILES, TILES))
    steps_b = np.zeros((TILES, TILES))
    np.add.at(steps_a, (own[:, None], mid[None, :]), 1.0)
    np.add.at(steps_b, (mid[:, None], own[None, :]), 1.0)
    rho_a = crossings_a / (steps_a * (a1 - a0) / g)
    rho_b = crossings_b / (steps_b * (b1 - b0) / g)
    return math.pi / 4 * rho_a * rho_b * (a1 - a0) * (b1 - b0) / TILES**2


def design(density: np.ndarray, vertices: float) -> np.ndarray:
    """Each tile's fraction of its area to sample, (TILES, TILES): proportional to the square
    root of its density (Neyman's allocation where a tile's spread grows as its count and
    the cost as the vertices sampled: a dense tile is sampled harder), a floor of
    :data:`FLOOR` of the mean density, and scaled so that the sample holds about
    ``vertices`` (fractions at most 1, the rest spread again)."""
    p = density + FLOOR * max(float(density.mean()), 1e-12)
    shape = np.sqrt(p)
    f = np.zeros_like(p)
    for _ in range(8):  # water-filling: tiles at 1 keep it, the others share the rest
        full = f >= 1
        rest = vertices - p[full].sum()
        if rest <= 0 or full.all():
            break
        f = np.where(full, 1.0, np.minimum(1.0, shape * rest / (shape * p)[~full].sum()))
    return f


def _wrapped(start: np.ndarray, size: np.ndarray, cell: float, offset: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of ``size`` (of a cell) from ``start`` (of a cell, in [0, 1)) wrapped round
    their cell (offset: the cell's start): (n, 2, 2), the piece at the start and the piece
    wrapped to the cell's start, and (n, 2) which are there.  Wrapped, every point of a cell
    lies in the interval with probability ``size``: the sample has no edge effect."""
    end = start + size
    first = np.stack([start, np.minimum(end, 1.0)], 1)
    second = np.stack([np.zeros_like(start), np.maximum(end - 1.0, 0.0)], 1)
    pieces = offset[:, None, None] + cell * np.stack([first, second], 1)
    # (a piece thinner than 1e-9 of its cell is left out: the cut's tolerance, no area)
    return pieces, np.stack([np.minimum(end, 1.0) - start > 1e-9, end - 1.0 > 1e-9], 1)


def _rectangles(window: tuple[float, float, float, float], f: np.ndarray, strip: float,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """The sample (module docstring) as rectangles a0, a1, b0, b1 and the sample unit each
    belongs to: units 0 .. 2 TILES^2 - 1 the squares, a fraction ``f[tile]`` of each
    half-tile (the two halves of a tile adjacent), then 4 SEGMENTS strips, a fraction
    ``strip`` of each segment long, side by side (bottom, top, left, right; neighbours
    adjacent); each placed at random, wrapped round its half-tile or segment.  Returns the
    rectangles, their units and the number of squares."""
    a0, a1, b0, b1 = window
    wa, wb = (a1 - a0) / SEGMENTS, (b1 - b0) / TILES  # a half-tile
    ib, ia = np.divmod(np.arange(SEGMENTS * TILES), SEGMENTS)  # halves of a tile adjacent
    s = np.sqrt(f[ib, ia // 2])
    pa, va = _wrapped(rng.random(len(ia)), s, wa, a0 + ia * wa)
    pb, vb = _wrapped(rng.random(len(ib)), s, wb, b0 + ib * wb)
    rects = np.concatenate([np.repeat(pa, 2, 1), np.tile(pb, (1, 2, 1))], 2)  # (n, 4, 4)
    keep = (np.repeat(va, 2, 1) & np.tile(vb, (1, 2)))
    units = np.broadcast_to(np.arange(len(ia))[:, None], keep.shape)
    parts, owners = [rects[keep]], [units[keep]]
    n = len(ia)
    for side, (lo, length, width) in enumerate(((a0, a1 - a0, b1 - b0), (a0, a1 - a0, b1 - b0),
                                                (b0, b1 - b0, a1 - a0), (b0, b1 - b0, a1 - a0))):
        seg = length / SEGMENTS
        along, ok = _wrapped(rng.random(SEGMENTS), np.full(SEGMENTS, strip), seg,
                             lo + np.arange(SEGMENTS) * seg)
        thick = min(strip * seg * STRIP_WIDTH, width / 2)
        outer = (b0, b1, a0, a1)[side]
        across = np.broadcast_to([outer, outer + thick] if side in (0, 2) else
                                 [outer - thick, outer], along.shape)
        parts.append(np.concatenate([along, across] if side < 2 else [across, along], 2)[ok])
        owners.append(np.broadcast_to(n + side * SEGMENTS + np.arange(SEGMENTS)[:, None],
                                      ok.shape)[ok])
    return np.concatenate(parts), np.concatenate(owners), n


def _cut_rectangles(net: SliceNet, plane: Plane, rects: np.ndarray,
                    window: tuple[float, float, float, float], stats: Statistics | None,
                    device: torch.device, budget: int) -> tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]:
    """The last nonlinear layer's regions of every rectangle (n, 4), cut exactly in one pass
    by the engine (the window's tolerance scale): (ptr, vertices, the rectangle of each)."""
    from bnviz.slices.engine import cut_polygons  # the engine's cut, started from n polygons

    a0, a1, b0, b1 = rects.T
    corners = np.stack([np.stack(c, 1) for c in ((a0, b0), (a1, b0), (a1, b1), (a0, b1))], 1)
    bx, by = max(abs(window[0]), abs(window[1])), max(abs(window[2]), abs(window[3]))
    layers, _ = cut_polygons(
        net, plane, np.arange(0, 4 * len(rects) + 1, 4, dtype=np.int64),
        np.ascontiguousarray(corners.reshape(-1, 2), dtype=np.float64), (bx, by), stats,
        device, budget)
    root = layers[-1].parents
    for layer in layers[-2::-1]:
        root = layer.parents[root]
    return layers[-1].regions.ptr, layers[-1].regions.vertices, root


def _touching(ptr: np.ndarray, verts: np.ndarray, root: np.ndarray, rects: np.ndarray
              ) -> np.ndarray:
    """(n, 4): how many regions of each rectangle meet each of its sides (a0, a1, b0, b1) in a
    segment (two vertices or more on it)."""
    owner = np.repeat(root, np.diff(ptr))
    r = rects[owner]
    tol = 1e-9 * np.maximum(r[:, [1, 1, 3, 3]] - r[:, [0, 0, 2, 2]], np.abs(r))
    on = np.abs(verts[:, [0, 0, 1, 1]] - r) <= tol  # (V, 4)
    per_region = np.add.reduceat(on.astype(np.int64), ptr[:-1], axis=0) if len(root) else \
        np.zeros((0, 4), np.int64)
    touching = np.zeros((len(rects), 4), np.int64)
    np.add.at(touching, root, per_region >= 2)
    return touching


def _pair_terms(values: np.ndarray, keep: np.ndarray | float = 1.0) -> np.ndarray:
    """The collapsed-strata variance of a sum of ``values`` (pairs adjacent), pair by pair:
    each pair's squared difference times ``keep`` (the finite-population factor 1 - f)."""
    pairs = values.reshape(-1, 2)
    return keep * (pairs[:, 0] - pairs[:, 1]) ** 2


def sampled_estimate(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                     f: np.ndarray | float, stats: Statistics | None = None,
                     device: torch.device | str = "cpu", budget: int = BUDGET,
                     seed: int = 0) -> _Sample:
    """One round (module docstring): the sample at the tiles' area fractions ``f`` ((TILES,
    TILES) or one for all, in (0, 1]) cut and read.  PartitionTooLarge when its cut outgrows
    ``budget`` regions."""
    f = np.broadcast_to(np.asarray(f, np.float64), (TILES, TILES))
    area = float(f.mean())
    strip = min(1.0, math.sqrt(area))
    rects, units, n = _rectangles(window, f, strip, np.random.default_rng(seed))
    ptr, verts, root = _cut_rectangles(net, plane, rects, window, stats, torch.device(device),
                                       budget)
    touching = _touching(ptr, verts, root, rects)  # (pieces, 4)
    counts = np.bincount(root, minlength=len(rects))
    # by Euler, each piece's interior vertices; a strip's crossings of the window's side
    piece_w = counts - 1 - (touching - 1).sum(1) / 2
    outer = np.repeat([2, 3, 0, 1], SEGMENTS)[np.maximum(units - n, 0)]  # b0, b1, a0, a1
    piece_c = touching[np.arange(len(rects)), outer] - 1
    per_unit = np.bincount(units, np.where(units < n, piece_w, piece_c), n + 4 * SEGMENTS)
    w, c = per_unit[:n], per_unit[n:]
    fw = f.ravel()[np.arange(n) // 2]  # (the tiles in the squares' order: b, then a)
    regions = 1 + c.sum() / strip / 2 + (w / fw).sum()
    terms = np.concatenate([_pair_terms(w / fw, 1 - fw[::2]),
                            _pair_terms(c / strip, 1 - strip) / 4])
    variance = float(terms.sum())
    # Satterthwaite: the variance's degrees of freedom, few where few pairs carry it
    df = variance**2 / float((terms**2).sum()) if variance > 0 else math.inf
    return _Sample(float(regions), variance, float(w.sum()), int(len(root)), area, df)


def _decisive(sample: _Sample, cap: int | None) -> float:
    """How many times the sample's size would make the cap's decision clear (the cap outside
    estimate +- multiplier x error; 1: it is already, or no cap)."""
    reach = sample.multiplier * sample.error
    if cap is None or abs(sample.regions - cap) > reach:
        return 1.0
    return math.inf if sample.regions == cap else \
        1.3 * (reach / abs(sample.regions - cap)) ** 2


def estimate_regions(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                     stats: Statistics | None = None, device: torch.device | str | None = None,
                     cap: int | None = None, seed: int = 0) -> RegionEstimate:
    """The last nonlinear layer's regions in ``window``: estimated from exact cuts of a sample
    laid by the tiles' grid density, in rounds, or counted by cutting the window whole when
    the grid finds it small; with a ``cap``, the sample grows until the cap's decision is
    clear at Z standard errors, within :data:`SHARE` of the estimated regions (module
    docstring).  ``seed`` draws the sample (one seed: one estimate for one window)."""
    t0 = time.perf_counter()
    dev = torch.device(device) if device is not None else pick_device()
    density = tile_density(net, plane, window, stats, dev)
    spent = 0
    if density.sum() < EXACT_BELOW:
        try:
            _, _, root = _cut_rectangles(net, plane, np.array([window], np.float64), window,
                                         stats, dev, 2 * EXACT_BELOW)
            n = len(root)
            return RegionEstimate(n, 0, n, 1.0, n, time.perf_counter() - t0)
        except PartitionTooLarge:  # the grid saw too few
            spent += 2 * EXACT_BELOW
            density = (density + 1e-9) * 4 * EXACT_BELOW / (density.sum() + 1e-9 * density.size)
    goal, sample = float(TARGET), None
    for _ in range(ROUNDS):
        f = design(density, goal)
        try:
            drawn = sampled_estimate(net, plane, window, f, stats, dev, BUDGET, seed)
        except PartitionTooLarge:
            spent += BUDGET
            if sample is not None:  # a grown sample: the last one stands
                break
            if goal < TARGET / 100:  # a sample this small outgrew the budget
                least = int(BUDGET / 2 / f.mean())
                return RegionEstimate(least, 0, least, float(f.mean()), spent,
                                      time.perf_counter() - t0, exceeded=True)
            goal /= 16
            continue
        sample, spent = drawn, spent + drawn.cut
        if drawn.vertices < TARGET / 2 and f.min() < 1:  # the grid saw more than there is
            goal *= min(TARGET / max(drawn.vertices, 1.0), 256)
            continue
        # as large as the cap's decision needs, within SHARE of the regions and the budget
        grow = min(_decisive(drawn, cap), SHARE * drawn.regions / max(drawn.cut, 1),
                   BUDGET / 2 / max(drawn.cut, 1))
        if grow < 1.5 or f.min() >= 1:
            break
        goal *= grow
    regions, error = max(1, round(sample.regions)), math.ceil(sample.error)
    return RegionEstimate(regions, error, regions + math.ceil(sample.multiplier * error),
                          sample.fraction, spent, time.perf_counter() - t0)
