"""Realisations of a BN network's batch statistics: K mini-batches at once (BN paper section
5, Figures 6 and 7), with or without the noise of noise-controlled BN, and what the K decision
boundaries they give disagree on.

Every mini-batch's statistics come from one batched train-mode forward pass (each layer
normalised by that batch's own mean and biased std, eq. 3).  These are the building blocks
both of the jitter page's computation (:mod:`bnviz.views.jitter`) and of the virtual batch's
calibration (:mod:`bnviz.views.virtual_batch`), which the page's computation uses: kept in a
module of their own, the two build on them without importing each other.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from bnviz.core.bn import batch_moments, bn_forward, floored_sigma
from bnviz.core.network import Network
from bnviz.data.datasets import Dataset, as_dataset, make_dataset
from bnviz.device import pick_device
from bnviz.views.bnsampling import noise_controlled, noise_from_variances

__all__ = [
    "CALIBRATION_BATCHES",
    "CURVE_REALIZATIONS",
    "MIN_NETWORK_SAMPLES",
    "NETWORK_STATS_MAX_POINTS",
    "binary_task",
    "calibration_batches",
    "disagreement_area",
    "draw_batches",
    "grid_centres",
    "predict_classes",
    "realisation_statistics",
    "virtual_references",
    "virtual_statistics",
]

#: Realisations per batch size in the disagreement-vs-B curve (a small plot: a grid of 64^2).
CURVE_REALIZATIONS = 32
#: Real batches of B and of B' whose measured statistics calibrate noise-controlled BN
#: beyond layer 1.
CALIBRATION_BATCHES = 512
#: Points in all the mini-batches of one Figure 7 request on a network (samples x batch size),
#: and the fewest samples drawn however large the batch (variances from 256 samples are within
#: ~9 % of the truth).
NETWORK_STATS_MAX_POINTS = 2**17
MIN_NETWORK_SAMPLES = 256


def binary_task(dataset: str, n: int, seed: int) -> Dataset:
    """A 2D binary task from the data sets (labels mod 2: blobs' 3 classes become 2)."""
    data = make_dataset(dataset, n, seed)
    return as_dataset(data.points, data.labels % 2, name=data.name)


def draw_batches(n: int, batch_size: int, k: int, seed: int, device) -> torch.Tensor:
    """(K, B) indices: K mini-batches drawn without replacement, all at once."""
    gen = torch.Generator().manual_seed(int(seed))
    keys = torch.rand((k, n), generator=gen, dtype=torch.float64)
    return keys.argsort(1)[:, :batch_size].to(device)


def calibration_batches(batch_size: int) -> int:
    """Real batches of B measured to calibrate noise-controlled BN: ``CALIBRATION_BATCHES``,
    fewer (not under ``MIN_NETWORK_SAMPLES``) when B is so large that they would exceed
    ``NETWORK_STATS_MAX_POINTS`` points."""
    return min(CALIBRATION_BATCHES, max(MIN_NETWORK_SAMPLES,
                                        NETWORK_STATS_MAX_POINTS // batch_size))


def realisation_statistics(net: Network, points: np.ndarray, batches: torch.Tensor,
                           virtual_batch_size: int | None = None, seed: int = 0,
                           device: torch.device | str | None = None, *, strength: float = 1.0,
                           noise_seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Train-mode BN statistics of K mini-batches at once: (mu, sigma), each (K, L, D) with
    D the widest layer (narrower layers padded with mu = 0, sigma = 1).

    Every layer is normalised by the batch's own mean and biased std (eq. 3).  With a
    ``virtual_batch_size`` B' < B, noise-controlled BN (section 5) at ``strength`` c
    (:func:`virtual_statistics`: the model, and why c = 1 is not the jitter of B')."""
    b = batches.shape[1]
    if virtual_batch_size is not None and virtual_batch_size < b:
        mu, sigma, _ = virtual_statistics(net, points, batches, virtual_batch_size, seed, device,
                                          strength=strength, noise_seed=noise_seed)
        return mu, sigma
    dev = torch.device(device) if device is not None else pick_device()
    x = torch.as_tensor(np.asarray(points, dtype=np.float64), device=dev)
    return _forward(net, x[batches])


def _forward(net: Network, z: torch.Tensor, noise=None) -> tuple[torch.Tensor, torch.Tensor]:
    """The batched train-mode forward of batches ``z`` (R, B, 2): per layer the batch moments
    (eq. 3), then ``noise(layer, mu, var)`` if given, then BN and the activation.  Returns
    (mu, sigma), each (R, L, D), padded to the widest layer (mu 0, sigma 1)."""
    mus, sigmas = [], []
    for i, w in enumerate(net.weights):
        u = z @ torch.as_tensor(w, device=z.device).T  # (R, B, D)
        mu, var = batch_moments(u, dim=1)  # one pass (biased, eq. 3)
        if noise is not None:
            mu, var = noise(i, mu, var)
        sigma = floored_sigma(mu, var)
        mus.append(mu)
        sigmas.append(sigma)
        h = bn_forward(u, mu[:, None], sigma[:, None], inplace=True)
        z = F.leaky_relu(h, net.negative_slope, inplace=True)
    d = max(net.widths)  # layers of different widths: users slice by width
    mus = [F.pad(m, (0, d - m.shape[1])) for m in mus]
    sigmas = [F.pad(s, (0, d - s.shape[1]), value=1.0) for s in sigmas]
    return torch.stack(mus, 1), torch.stack(sigmas, 1)


def virtual_statistics(net: Network, points: np.ndarray, batches: torch.Tensor,
                       virtual_batch_size: int, seed: int = 0,
                       device: torch.device | str | None = None, *, strength: float = 1.0,
                       noise_seed: int | None = None, references: tuple | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor, list[tuple[float, float]]]:
    """Noise-controlled BN (section 5) in a network: (mu, sigma) as
    :func:`realisation_statistics`, and per layer beyond the first the fractions of units
    whose mu and sigma^2 already vary more than in real batches of B' (no noise added there).

    Gaussian noise on each unit's mu and chi^2_k / k noise on its sigma^2
    (:func:`bnviz.views.bnsampling.noise_from_variances`), independent across units, layer by
    layer; each layer's noise reaches the next layer's batch, as in a network trained with
    it.  The variance added is a fraction ``strength`` c of the gap to a batch of B':

    * layer 1 in closed form (:func:`bnviz.views.bnsampling.noise_controlled`, the data's
      finite-population moments, eq. 13): at c = 1 its mu and sigma^2 vary exactly as in B';
    * layer l > 1 in sequence, by measurement: :func:`calibration_batches` batches of B run
      through the same noisy layers 1..l-1 (stacked with ``batches``: one pass) give the
      variances of layer l's mu and sigma^2 with the upstream noise, and only what they lack
      against var_B + c (var_B' - var_B) (real batches of B and B', measured) is added.

    ``seed`` fixes the model (the calibration batches and their noise, hence each layer's
    noise level), ``noise_seed`` (default seed + 2) the noise of ``batches``; ``references``:
    :func:`virtual_references` of these settings, when already computed.

    Why c = 1 is not "a batch of B'" for the boundary (measured; ``virtual_batch_check``
    gives the disagreement at c = 1): the noise on mu_1 moves the batch off its own centre,
    layer 2's mu follows and varies tens to hundreds of times more than in a real batch,
    which BN centres and scales itself (so deeper layers get almost no mu noise: the
    fractions returned); and independent noise moves each unit's hyperplane on its own,
    where a real batch's mean and covariance move all of layer 1's together, so even with
    one layer the boundary jitters up to half more or less than with real batches of B'
    (-34 % to +52 %, five data sets, four (B, B') pairs).
    The old model (each deeper layer given the whole measured gap, as if the layers before
    were noise-free) counted the propagated noise twice: 0.917 for B' = 4 in |B| = 16 at the
    page's defaults, real batches of 4 0.686.  The page's c:
    :func:`bnviz.views.virtual_batch.calibrate_strength`.
    """
    dev = torch.device(device) if device is not None else pick_device()
    x = torch.as_tensor(np.asarray(points, dtype=np.float64), device=dev)
    n, b, vb = x.shape[0], batches.shape[1], virtual_batch_size
    cal, real_b, real_v = references or virtual_references(net, points, b, vb, seed, dev)
    n_cal = cal.shape[0]
    gens = [torch.Generator(device=dev).manual_seed(int(s)) for s in  # calibration rows, batches
            (seed + 1, seed + 2 if noise_seed is None else noise_seed)]
    saturated: list[tuple[float, float]] = []

    def each(draw, mu: torch.Tensor, var: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [draw(m, v, g) for m, v, g in zip(mu.split([n_cal, len(mu) - n_cal]),
                                                   var.split([n_cal, len(var) - n_cal]), gens,
                                                   strict=True)]
        return torch.cat([parts[0][0], parts[1][0]]), torch.cat([parts[0][1], parts[1][1]])

    def noise(i: int, mu: torch.Tensor, var: torch.Tensor):
        w = torch.as_tensor(net.weights[i], device=dev)
        if i == 0:
            pop_u = x @ w.T
            pop_mean, pop_var = batch_moments(pop_u)
            pop_m4 = (pop_u - pop_mean).pow(4).mean(0)
            return each(lambda m, v, g: noise_controlled(
                m, v, b, vb, pop_var, pop_m4, g, population_size=n, strength=strength), mu, var)
        d = w.shape[0]  # the calibration statistics are padded to the widest layer

        def target(stat_b: torch.Tensor, stat_v: torch.Tensor) -> torch.Tensor:
            v_b = stat_b.var(0)
            return v_b + strength * (stat_v.var(0) - v_b)

        mu_target = target(real_b[0][:, i, :d], real_v[0][:, i, :d])
        s2_target = target(real_b[1][:, i, :d].pow(2), real_v[1][:, i, :d].pow(2))
        cal_mu, cal_var = mu[:n_cal], var[:n_cal]  # the noisy pipeline's calibration rows
        mu_gap, s2_var = mu_target - cal_mu.var(0), cal_var.var(0)
        saturated.append((float((mu_gap < 0).to(torch.float64).mean()),
                          float((s2_target < s2_var).to(torch.float64).mean())))
        e_s2, v_target = cal_var.mean(0), torch.maximum(s2_target, s2_var)
        return each(lambda m, v, g: noise_from_variances(
            m, v, mu_gap.clamp_min(0.0), e_s2, s2_var, v_target, g), mu, var)

    mu, sigma = _forward(net, x[torch.cat([cal, batches])], noise)
    return mu[n_cal:], sigma[n_cal:], saturated


def virtual_references(net: Network, points: np.ndarray, batch_size: int,
                       virtual_batch_size: int, seed: int = 0,
                       device: torch.device | str | None = None) -> tuple:
    """What :func:`virtual_statistics` measures its noise against, which does not depend on
    the strength: (the :func:`calibration_batches` batches of B, the plain statistics of
    those batches, the plain statistics of as many real batches of B')."""
    dev = torch.device(device) if device is not None else pick_device()
    n, n_cal = len(points), calibration_batches(batch_size)
    cal = draw_batches(n, batch_size, n_cal, seed + 101, dev)
    small = draw_batches(n, virtual_batch_size, n_cal, seed + 202, dev)
    return (cal, realisation_statistics(net, points, cal, device=dev),
            realisation_statistics(net, points, small, device=dev))


def predict_classes(net: Network, mu: torch.Tensor, sigma: torch.Tensor, x: torch.Tensor
             ) -> torch.Tensor:
    """(K, P) class of P points under each of the K statistics (the head's sign / argmax).

    Layer 1's W x is shared by all K; realisations go in chunks to bound memory."""
    ws = [torch.as_tensor(w, device=x.device) for w in net.weights]
    wd, bd = net.head.decision_function()
    wd = torch.as_tensor(wd, device=x.device)
    u1 = x @ ws[0].T  # (P, D_1), the same for every realisation
    chunk = max(1, 2_000_000 // max(1, x.shape[0] * max(net.widths)))
    out = []
    for lo in range(0, mu.shape[0], chunk):  # chunks of realisations, each fully batched
        m, s = mu[lo : lo + chunk], sigma[lo : lo + chunk]
        z = None
        for i, w in enumerate(ws):
            u = u1[None] if i == 0 else z @ w.T
            d = w.shape[0]
            h = bn_forward(u, m[:, i, None, :d], s[:, i, None, :d], inplace=i > 0)  # u1: shared
            z = F.leaky_relu(h, net.negative_slope, inplace=True)
        out.append(z @ wd + bd > 0)
    return torch.cat(out)


def disagreement_area(net: Network, mu: torch.Tensor, sigma: torch.Tensor,
                      box: tuple[float, ...], resolution: int = 128) -> float:
    """Fraction of the box where the K realisations do not all predict the same class,
    estimated at the centres of a resolution x resolution grid."""
    pred = predict_classes(net, mu, sigma, grid_centres(box, resolution, mu.device))
    return float((pred.any(0) & ~pred.all(0)).to(torch.float64).mean())


def grid_centres(box: tuple[float, ...], resolution: int, device: torch.device) -> torch.Tensor:
    """(resolution^2, 2): the centres of a resolution x resolution grid on the box."""
    x0, x1, y0, y1 = box
    steps = (torch.arange(resolution, dtype=torch.float64, device=device) + 0.5) / resolution
    xs, ys = x0 + steps * (x1 - x0), y0 + steps * (y1 - y0)
    return torch.stack([xs.repeat(resolution), ys.repeat_interleave(resolution)], 1)
