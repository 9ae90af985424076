"""Virtual batches calibrated (BN paper section 5, Figure 6; issue 17).

Noise-controlled BN makes the statistics of a batch of B vary as for a smaller virtual batch
B' (section 5, Figure 7).  The jitter page shows what that does to the decision boundary, and
says it jitters "like a batch of B'".  Matching each unit's variances (eq. 13 in layer 1,
measured beyond: :func:`bnviz.views.realisations.virtual_statistics` at strength c = 1) does not
make that true: the boundary depends on the joint law of all the statistics, which
independent noise per unit does not reproduce (that function's docstring says why, with the
measurements).  So the noise's strength c (the fraction of each variance gap to B' that is
added) is set by :func:`calibrate_strength`, a few steps of regula falsi on the decision
boundary's disagreement itself, until virtual batches of B' in B disagree as much as real
batches of B'; :func:`virtual_batch_check` measures the result on fresh draws.

The disagreement of K realisations (:func:`bnviz.views.realisations.disagreement_area`: the
fraction of the box where they do not all predict one class) is estimated from M >= 2K
realisations by the U-statistic over all their K-subsets (:func:`expected_disagreement`):
with c of the M predicting class 1 at a point, K of them all agree with probability
(C(c, K) + C(M - c, K)) / C(M, K).  Its spread is that of one measurement of K realisations
(what the page shows), from M // K disjoint groups; the mean's standard error by the
jackknife.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from bnviz.core.network import Network, random_network
from bnviz.data.datasets import Dataset
from bnviz.device import pick_device
from bnviz.params import JitterParams
from bnviz.service.cache import memoize
from bnviz.views.realisations import (
    CURVE_REALIZATIONS,
    binary_task,
    disagreement_area,
    draw_batches,
    grid_centres,
    predict_classes,
    realisation_statistics,
    virtual_references,
    virtual_statistics,
)

__all__ = [
    "Calibration",
    "Disagreement",
    "VirtualBatchCheck",
    "calibrate_strength",
    "calibrated_statistics",
    "expected_disagreement",
    "virtual_batch_check",
    "virtual_curve_point",
]

#: Realisations per evaluation of the calibration, at least 2K (the U-statistic's spread
#: needs two groups), fewer when the network is wide (``CALIBRATION_WORK``).  512 rather
#: than 256: the check's tolerance ~20 % tighter and the virtual batch closer to real B'
#: (the test cases: at most 0.3 of the tolerance instead of 0.64, but for spiral's 0.67
#: either way); the page's first request at its defaults with B' = 4 then takes ~0.4 s
#: (~0.25 s with the uncalibrated noise, measured on one CPU thread).
CALIBRATION_REALISATIONS = 512
MIN_CALIBRATION_REALISATIONS = 128
#: Grid of the calibration's disagreement (real and virtual are measured on the same points,
#: so the grid's own error mostly cancels: 24^2, 32^2 and 48^2 gave the same strengths
#: within 0.01 on the test cases, 24^2 in 60 % of 32^2's time).
CALIBRATION_RESOLUTION = 24
MIN_CALIBRATION_RESOLUTION = 16
#: Multiply-adds of one evaluation's prediction (realisations x grid points x sum of
#: D_l D_{l-1}) above which the realisations, then the grid, are reduced.
CALIBRATION_WORK = 2**28
#: Strength bounds and the number of disagreement evaluations (c = 0 and c = 1 included).
MAX_STRENGTH = 16.0
MAX_EVALUATIONS = 8
#: The check's realisations per measurement and its grid (as the page's curve).
CHECK_REALISATIONS = 512
CHECK_RESOLUTION = 64
#: Offsets of the random streams, so that the check's draws are independent of the
#: calibration's and of the page's (which use the batch seed itself).
_CAL_SEEDS = (303, 404, 505)
_CHECK_SEED = 1000



@dataclass(frozen=True)
class Disagreement:
    """Disagreement of K realisations of the decision boundary, estimated from M."""

    mean: float  # expected fraction of the box where K realisations do not all agree
    spread: float  # standard deviation of one measurement of K realisations
    stderr: float  # of ``mean`` (jackknife)
    k: int
    realisations: int  # M


def _all_agree(m: int, k: int, device: torch.device) -> torch.Tensor:
    """(M + 1,): the probability C(c, K) / C(M, K) that K of M realisations, c of which
    predict class 1 at a point, all predict class 1 (by symmetry, with M - c: class 0)."""
    c = torch.arange(m + 1, dtype=torch.float64, device=device)
    log_ratio = (torch.lgamma(c + 1) - torch.lgamma((c - k + 1).clamp_min(1.0))
                 + math.lgamma(m - k + 1) - math.lgamma(m + 1))
    return torch.where(c >= k, log_ratio.exp(), 0.0)


def expected_disagreement(net: Network, mu: torch.Tensor, sigma: torch.Tensor,
                          box: tuple[float, ...], k: int,
                          resolution: int = CHECK_RESOLUTION) -> Disagreement:
    """The disagreement area of K realisations (:func:`bnviz.views.realisations.disagreement_area`)
    in expectation, from the M >= 2K realisations ``mu``, ``sigma`` (module docstring); its
    standard error by the jackknife (leaving out each realisation in turn, all at once)."""
    m = mu.shape[0]
    if not 2 <= k <= m // 2:
        raise ValueError(f"need 2 <= K <= M / 2 realisations, got K = {k}, M = {m}")
    pred = predict_classes(net, mu, sigma, grid_centres(box, resolution, mu.device))  # (M, P)
    ones = pred.sum(0)
    agree = _all_agree(m, k, mu.device)
    mean = float(1.0 - (agree[ones] + agree[m - ones]).mean())
    agree_1 = _all_agree(m - 1, k, mu.device)  # without realisation j: (M, P) counts
    ones_j = ones - pred.long()
    left_out = 1.0 - (agree_1[ones_j] + agree_1[m - 1 - ones_j]).mean(1)  # (M,)
    stderr = float(((m - 1) / m * (left_out - left_out.mean()).pow(2).sum()).sqrt())
    groups = pred[: m - m % k].reshape(m // k, k, -1)
    spread = float((groups.any(1) & ~groups.all(1)).to(torch.float64).mean(1).std())
    return Disagreement(mean, spread, stderr, k, m)


@dataclass(frozen=True)
class Calibration:
    """The strength c of noise-controlled BN that makes virtual batches of B' in B jitter as
    real batches of B' (expected disagreement of K realisations), and what it was found from.
    """

    strength: float
    reachable: bool  # False: at MAX_STRENGTH the virtual batch still jitters less
    target: float  # real batches of B'
    target_stderr: float
    plain: float  # real batches of B (c = 0)
    statistics_matched: float  # c = 1: every unit's statistics as variable as in B'
    matched: float  # at ``strength``
    evaluations: tuple[tuple[float, float], ...]  # (c, disagreement) in the order computed
    k: int
    realisations: int
    resolution: int

    def as_json(self) -> dict:
        return asdict(self) | {"evaluations": [list(e) for e in self.evaluations]}


def _digest(net: Network, points: np.ndarray) -> str:
    """A key for a network and its data (the calibration cache)."""
    h = hashlib.blake2b(digest_size=16)
    head = () if net.head is None else (net.head.weight, net.head.bias)
    for a in (*net.weights, *head, np.asarray(points, dtype=np.float64)):
        h.update(str(a.shape).encode())
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    h.update(f"{net.activation} {net.alpha} {net.mode}".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class _Keyed:
    """A network and its data, hashed and compared by their digest (:func:`_digest`) only:
    what the memoised functions below take, so that the process's one byte-bounded cache
    (:func:`bnviz.service.cache.memoize`) can key them."""

    digest: str
    net: Network = field(compare=False, repr=False)
    points: np.ndarray = field(compare=False, repr=False)


def _keyed(net: Network, points: np.ndarray) -> _Keyed:
    return _Keyed(_digest(net, points), net, points)


@memoize()  # a few MB each, for the page's next requests (BNVIZ_CACHE_MB bounds them all)
def _references(keyed: _Keyed, b: int, vb: int, seed: int, dev: torch.device) -> tuple:
    """:func:`bnviz.views.realisations.virtual_references` of a network and its data."""
    return virtual_references(keyed.net, keyed.points, b, vb, seed, dev)


def _calibration_size(net: Network, k: int) -> tuple[int, int]:
    """(realisations, resolution) of one calibration evaluation: as many realisations as
    CALIBRATION_WORK allows on the CALIBRATION_RESOLUTION grid (from MIN_CALIBRATION_ to
    CALIBRATION_REALISATIONS), then a coarser grid; never fewer than 2K realisations."""
    widths = (2, *net.widths)
    macs = sum(a * b for a, b in zip(widths[:-1], widths[1:], strict=True)) + widths[-1]
    res = CALIBRATION_RESOLUTION
    m = min(CALIBRATION_REALISATIONS,
            max(MIN_CALIBRATION_REALISATIONS, CALIBRATION_WORK // (res * res * macs)))
    m = max(m, 2 * k)
    while res > MIN_CALIBRATION_RESOLUTION and m * res * res * macs > CALIBRATION_WORK:
        res -= 4
    return m, res


def calibrate_strength(net: Network, points: np.ndarray, batch_size: int,
                       virtual_batch_size: int, k: int = 16, seed: int = 0,
                       box: tuple[float, ...] = (-3.0, 3.0, -3.0, 3.0),
                       device: torch.device | str | None = None) -> Calibration:
    """The strength c at which K virtual batches of B' in B disagree as much as K real
    batches of B' (expected disagreement, module docstring), by regula falsi (Illinois) on c.

    The virtual batches use the noise model of ``seed``, as the page's realisations do
    (:func:`bnviz.views.realisations.virtual_statistics`), on batches and noise draws of their own.
    Common random numbers: every evaluation uses the same batches and noise seed, so the
    disagreement is a (nearly) smooth, increasing function of c.  c = 0 (real batches of B)
    and c = 1 (each unit's statistics as variable as in B') bracket or start the search,
    c doubles up to MAX_STRENGTH until the virtual batch jitters enough, then at most
    MAX_EVALUATIONS evaluations in all, stopping within half the target's standard error;
    the best c evaluated is returned.  Deterministic for a seed (on one device type), and
    cached per network, data and settings (the page asks again for each K, the curve, ...).
    """
    dev = torch.device(device) if device is not None else pick_device()
    k = max(2, int(k))
    b, vb = int(batch_size), int(virtual_batch_size)
    if not 2 <= vb < b <= len(points):
        raise ValueError(f"need 2 <= B' < B <= the data size, got B' = {vb}, B = {b}")
    return _calibration(_keyed(net, points), b, vb, k, int(seed), tuple(map(float, box)), dev)


@memoize()  # a few floats each (the process's one byte-bounded cache)
def _calibration(keyed: _Keyed, b: int, vb: int, k: int, seed: int, box: tuple[float, ...],
                 dev: torch.device) -> Calibration:
    """:func:`calibrate_strength`'s search, once per network, data and settings."""
    net, points = keyed.net, keyed.points
    refs = _references(keyed, b, vb, seed, dev)
    m, res = _calibration_size(net, k)
    n = len(points)
    s_v, s_b, s_noise = (seed + off for off in _CAL_SEEDS)
    real_v = realisation_statistics(net, points, draw_batches(n, vb, m, s_v, dev), device=dev)
    target = expected_disagreement(net, *real_v, box, k, res)
    batches = draw_batches(n, b, m, s_b, dev)

    def measure(c: float) -> float:
        stats = (realisation_statistics(net, points, batches, device=dev) if c == 0.0 else
                 virtual_statistics(net, points, batches, vb, seed, dev, strength=c,
                                    noise_seed=s_noise, references=refs)[:2])
        value = expected_disagreement(net, *stats, box, k, res).mean
        evaluations.append((c, value))
        return value - target.mean

    evaluations: list[tuple[float, float]] = []
    lo, f_lo = 0.0, measure(0.0)
    hi, f_hi = 1.0, measure(1.0)
    while f_lo < 0 and f_hi < 0 and hi < MAX_STRENGTH:  # not yet bracketed: more noise
        lo, f_lo = hi, f_hi
        hi = min(2 * hi, MAX_STRENGTH)
        f_hi = measure(hi)
    tol, side = 0.5 * target.stderr, 0
    while (f_lo < 0 <= f_hi and len(evaluations) < MAX_EVALUATIONS
           and min(abs(v - target.mean) for _, v in evaluations) > tol):
        c = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        c = min(max(c, lo + 0.02 * (hi - lo)), hi - 0.02 * (hi - lo))
        f_c = measure(c)
        if f_c < 0:
            lo, f_lo = c, f_c
            f_hi, side = (f_hi / 2 if side == -1 else f_hi), -1  # Illinois: no stalling
        else:
            hi, f_hi = c, f_c
            f_lo, side = (f_lo / 2 if side == 1 else f_lo), 1
    best_c, best = min(evaluations, key=lambda e: abs(e[1] - target.mean))
    reachable = any(v >= target.mean for _, v in evaluations) or best_c == 0.0
    return Calibration(best_c, reachable, target.mean, target.stderr, evaluations[0][1],
                       evaluations[1][1], best, tuple(evaluations), k, m, res)


def calibrated_statistics(net: Network, points: np.ndarray, batches: torch.Tensor,
                          virtual_batch_size: int, k: int, seed: int, box: tuple[float, ...],
                          device: torch.device | str | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor, Calibration]:
    """(mu, sigma) of the ``batches`` with the virtual batch's noise at the strength that
    :func:`calibrate_strength` finds for K realisations, and that calibration (the jitter
    page's realisations: :func:`bnviz.views.jitter.run_jitter`)."""
    dev = torch.device(device) if device is not None else pick_device()
    b = batches.shape[1]
    cal = calibrate_strength(net, points, b, virtual_batch_size, k, seed, box, dev)
    refs = _references(_keyed(net, points), b, int(virtual_batch_size), int(seed), dev)
    mu, sigma, _ = virtual_statistics(net, points, batches, virtual_batch_size, seed, dev,
                                      strength=cal.strength, references=refs)
    return mu, sigma, cal


def virtual_curve_point(settings: JitterParams, net: Network, data: Dataset,
                        device: torch.device | str | None = None) -> float | None:
    """The disagreement area of the calibrated virtual batch B' in |B|, measured as the
    page's curve measures each real batch size (:func:`bnviz.views.jitter.
    disagreement_by_batch_size`: min(K, CURVE_REALIZATIONS) realisations, 64^2 grid), so that
    it can be drawn at B' on that curve; None without a virtual batch."""
    vb, b = settings.virtual_batch_size, settings.batch_size
    if vb is None or vb >= b:
        return None
    dev = torch.device(device) if device is not None else pick_device()
    box = (-settings.extent, settings.extent, -settings.extent, settings.extent)
    k = min(settings.realizations, CURVE_REALIZATIONS)
    batches = draw_batches(data.points.shape[0], b, k, settings.batch_seed, dev)
    mu, sigma, _ = calibrated_statistics(net, data.points, batches, vb, settings.realizations,
                                         settings.batch_seed, box, dev)
    return disagreement_area(net, mu, sigma, box, resolution=64)


@dataclass(frozen=True)
class VirtualBatchCheck:
    """Virtual batches of B' in B against real batches, on draws independent of the
    calibration: the expected disagreement of K realisations of each, with its spreads."""

    settings: JitterParams
    calibration: Calibration
    real_batch: Disagreement  # real batches of B
    real_virtual: Disagreement  # real batches of B'
    virtual: Disagreement  # virtual B' in B at the calibrated strength
    statistics_matched: Disagreement  # virtual B' in B at c = 1 (each unit's variances)
    saturated: tuple[tuple[float, float], ...]  # per layer > 1 at c = 1: (mu, sigma^2)
    seconds: float
    device: str

    @property
    def tolerance(self) -> float:
        """Three standard errors of virtual - real B': both measurements', and twice the
        target's of the calibration (its c is fitted to a noisy target)."""
        return 3.0 * math.sqrt(self.virtual.stderr**2 + self.real_virtual.stderr**2
                               + 2.0 * self.calibration.target_stderr**2)

    @property
    def agrees(self) -> bool:
        """The virtual batch jitters as real batches of B', within sampling error."""
        return abs(self.virtual.mean - self.real_virtual.mean) <= self.tolerance

    def as_json(self) -> dict:
        return {"settings": asdict(self.settings), "strength": self.calibration.strength,
                "calibration": self.calibration.as_json(),
                "real_batch": asdict(self.real_batch),
                "real_virtual_batch": asdict(self.real_virtual),
                "virtual_batch": asdict(self.virtual),
                "statistics_matched": asdict(self.statistics_matched),
                "saturated_units": [{"layer": i + 2, "mu": mu, "sigma2": s2}
                                    for i, (mu, s2) in enumerate(self.saturated)],
                "tolerance": self.tolerance, "agrees": self.agrees,
                "seconds": self.seconds, "device": self.device}


def virtual_batch_check(settings: JitterParams | None = None, net: Network | None = None,
                        data: Dataset | None = None, *,
                        realisations: int = CHECK_REALISATIONS,
                        resolution: int = CHECK_RESOLUTION,
                        device: torch.device | str | None = None) -> VirtualBatchCheck:
    """Does a calibrated virtual batch of B' in B jitter the decision boundary as real
    batches of B' do?  Calibrates (:func:`calibrate_strength`) for the K of ``settings``,
    then measures on fresh draws the expected disagreement of K realisations (eq. 3's
    statistics per mini-batch, Figure 6) of real batches of B, of B', of the calibrated
    virtual batch and of the statistics-matched one (c = 1), each from ``realisations``
    realisations.  Default: the jitter page's defaults with B' = 4 in |B| = 16 (issue 17).
    Deterministic for the settings' seeds (on one device type)."""
    t0 = time.perf_counter()
    s = settings if settings is not None else JitterParams(virtual_batch_size=4)
    b, vb = s.batch_size, s.virtual_batch_size
    if vb is None or vb >= b:
        raise ValueError(f"a virtual batch smaller than the batch ({b}) is needed, got {vb}")
    dev = torch.device(device) if device is not None else pick_device()
    data = data if data is not None else binary_task(s.dataset, s.n_points, s.data_seed)
    net = net if net is not None else random_network(s.depth, s.width, s.activation, s.alpha,
                                                     "bn", s.weight_seed, head_outputs=2)
    box = (-s.extent, s.extent, -s.extent, s.extent)
    k = max(2, s.realizations)
    m = max(int(realisations), 2 * k)
    cal = calibrate_strength(net, data.points, b, vb, k, s.batch_seed, box, dev)
    n, seed = data.points.shape[0], s.batch_seed + _CHECK_SEED

    def measure(stats: tuple[torch.Tensor, ...]) -> Disagreement:
        return expected_disagreement(net, stats[0], stats[1], box, k, resolution)

    plain = realisation_statistics(net, data.points, draw_batches(n, b, m, seed, dev),
                                   device=dev)
    small = realisation_statistics(net, data.points, draw_batches(n, vb, m, seed + 1, dev),
                                   device=dev)
    batches = draw_batches(n, b, m, seed + 2, dev)  # the page's noise model, fresh draws
    refs = _references(_keyed(net, data.points), b, vb, s.batch_seed, dev)
    *virtual, _ = virtual_statistics(net, data.points, batches, vb, s.batch_seed, dev,
                                     strength=cal.strength, noise_seed=seed + 3,
                                     references=refs)
    *matched, saturated = virtual_statistics(net, data.points, batches, vb, s.batch_seed, dev,
                                             noise_seed=seed + 3, references=refs)
    return VirtualBatchCheck(s, cal, measure(plain), measure(small), measure(virtual),
                             measure(matched), tuple(saturated), time.perf_counter() - t0,
                             str(dev))
