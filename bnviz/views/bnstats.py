"""Figure 7 of the BN paper as numbers and samples: the distributions of BN's mu and sigma^2 over
mini-batches, empirical (:mod:`bnviz.views.bnsampling`) against analytical, finite-population
and Luo et al.'s model (:mod:`bnviz.views.bnmoments`), with noise-controlled BN targeting a
virtual batch size.  The setup is the paper's: W z ~ N([1, 0, -1], diag([1, 3, 0.1])),
mini-batches of 64 from a training set of 1000, a virtual batch size of 32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from bnviz.caps import MAX_SAMPLES, MAX_TRAIN_SIZE, MAX_UNITS, MIN_SAMPLES
from bnviz.core.bn import batch_moments
from bnviz.device import pick_device
from bnviz.params import BNStatsParams, parse
from bnviz.views.bnmoments import (
    analytical_moments,
    finite_population_moments,
    luo_moments,
    unit_moments,
)
from bnviz.views.bnsampling import noise_controlled, sample_batch_statistics

__all__ = [
    "analytical_density",
    "MAX_SAMPLES",
    "MAX_TRAIN_SIZE",
    "MAX_UNITS",
    "MIN_SAMPLES",
    "MomentReport",
    "REPORT_KEYS",
    "figure7",
    "figure7_report",
    "figure7_samples",
    "unit_report",
]

# the bounds and the cap on samples * batch_size: bnviz.caps (one place for every cap)
_DTYPE = torch.float64

# Keys of one statistic's block in figure7_report (the CLI prints them in this order).
REPORT_KEYS = (
    "empirical_mean",
    "empirical_var",
    "analytical_mean",
    "analytical_var",
    "noise_controlled_var",
    "finite_population_var",
)


@dataclass(frozen=True)
class MomentReport:
    """Mean and variance of one BN statistic (mu or sigma^2) of one unit, four ways.

    - ``empirical_*``: over the Monte Carlo mini-batches (variance with ddof = 1, i.e. the
      unbiased estimate of the spread over mini-batches; BN's own sigma^2 inside each
      mini-batch is the biased one).
    - ``analytical_*``: Proposition 2 (eq. 13) for iid draws from the data distribution,
      with the biased-variance correction for sigma^2 (:func:`analytical_moments`).
    - ``noise_controlled_*``: empirical, after :func:`noise_controlled` (virtual batch).
    - ``finite_population_*``: exact for mini-batches drawn without replacement from the
      finite training set (:func:`finite_population_moments`); ``None`` if not computed.
    """

    empirical_mean: float
    empirical_var: float
    analytical_mean: float
    analytical_var: float
    noise_controlled_mean: float
    noise_controlled_var: float
    finite_population_mean: float | None = None
    finite_population_var: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        """The JSON block of :func:`figure7_report`: exactly the keys in ``REPORT_KEYS``."""
        full = asdict(self)
        return {key: full[key] for key in REPORT_KEYS}


# --------------------------------------------------------------------------- Figure 7


#: The messages name figure7's arguments as the caller wrote them.
_ARGUMENTS = {name: name for name in ("batch_size", "train_size", "samples",
                                      "virtual_batch_size", "data_seed", "batch_seed", "means",
                                      "variances")}


def _check_figure7(
    batch_size, train_size, samples, virtual_batch_size, seeds, means, variances
) -> BNStatsParams:
    """The arguments through the parameter layer (:class:`~bnviz.params.BNStatsParams`: its
    bounds and the samples x batch size cap), typed values only: InputError, a ValueError of
    one line naming the argument."""
    data_seed, batch_seed = seeds
    values = {"batch_size": batch_size, "train_size": train_size, "samples": samples,
              "virtual_batch_size": virtual_batch_size, "data_seed": data_seed,
              "batch_seed": batch_seed, "means": means, "variances": variances}
    return parse(BNStatsParams, values, _ARGUMENTS, lax=False)


def _generator(seed: int, dev: torch.device) -> torch.Generator:
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    return gen


def _figure7_run(
    batch_size, train_size, samples, virtual_batch_size, seeds, means, variances, device
) -> dict:
    p = _check_figure7(batch_size, train_size, samples, virtual_batch_size, seeds, means,
                       variances)
    b, n, s, vb, sd, ms, vs = (p.batch_size, p.train_size, p.samples, p.virtual_batch_size,
                               (p.data_seed, p.batch_seed), list(p.means), list(p.variances))
    dev = pick_device(device) if device is None or isinstance(device, str) else device
    m = torch.tensor(ms, dtype=_DTYPE, device=dev)
    s2 = torch.tensor(vs, dtype=_DTYPE, device=dev)
    shape = (n, len(ms))
    train = m + s2.sqrt() * torch.randn(shape, generator=_generator(p.data_seed, dev),
                                        device=dev, dtype=_DTYPE)
    # The mini-batches' generator first makes the training set's draws, unused: with equal
    # seeds it goes on where the data's left off, the one stream of the former single seed.
    gen = _generator(p.batch_seed, dev)
    torch.randn(shape, generator=gen, device=dev, dtype=_DTYPE)
    mu, sigma2 = sample_batch_statistics(train, b, s, gen)
    # Full-data (test-time) moments of the training set drive the noise, as in a network.
    t_mean, t_var = batch_moments(train)
    t_m4 = (train - t_mean).pow(4).mean(dim=0)
    mu_noise, sigma2_noise = noise_controlled(
        mu, sigma2, b, vb, t_var, t_m4, gen, population_size=n
    )
    return {
        "params": (b, n, s, vb, sd, ms, vs),
        "train": train.cpu().numpy(),
        "mu": mu.cpu().numpy(),
        "sigma2": sigma2.cpu().numpy(),
        "mu_noise": mu_noise.cpu().numpy(),
        "sigma2_noise": sigma2_noise.cpu().numpy(),
    }


def figure7_samples(
    batch_size: int = 64,
    train_size: int = 1000,
    samples: int = 2000,
    virtual_batch_size: int = 32,
    data_seed: int = 0,
    batch_seed: int = 0,
    means: Sequence[float] = (1.0, 0.0, -1.0),
    variances: Sequence[float] = (1.0, 3.0, 0.1),
    *,
    device: str | torch.device | None = None,
) -> dict[str, np.ndarray]:
    """The Monte Carlo samples behind :func:`figure7_report` (for histograms).

    BN paper Figure 7 setup: the D = len(means) units' pre-activations are iid
    N(means, diag(variances)); a training set of ``train_size`` rows is drawn once (from
    ``data_seed``); ``samples`` mini-batches of ``batch_size`` rows are drawn from it without
    replacement (from ``batch_seed``, as the noise);
    noise-controlled BN (:func:`noise_controlled`, finite-population mode, with the training
    set's moments) targets ``virtual_batch_size``. Returns float64 arrays:
    ``mu``, ``sigma2``, ``mu_noise``, ``sigma2_noise`` (samples, D) and ``train`` (N, D).
    Same arguments (and device type), same arrays; ``device`` defaults to
    :func:`bnviz.device.pick_device`.
    """
    run = _figure7_run(
        batch_size, train_size, samples, virtual_batch_size, (data_seed, batch_seed), means,
        variances, device
    )
    return {key: run[key] for key in ("mu", "sigma2", "mu_noise", "sigma2_noise", "train")}


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1))


def unit_report(samples: dict, j: int, batch_size: int, train_size: int, m: float, s2: float,
                m4: float) -> dict:
    """One unit's Figure 7 numbers from the sampled statistics (``samples`` holds mu, sigma2,
    mu_noise, sigma2_noise (S, D) and train (N, D)): empirical against analytical (eq. 13 with
    the moments m, s2, m4), finite-population (the training set's moments) and
    noise-controlled, plus Luo et al.'s model."""
    ana = analytical_moments(m, s2, m4, batch_size)
    t_mean, t_var, t_m4 = unit_moments(samples["train"][:, j])
    fin = finite_population_moments(t_mean, t_var, t_m4, train_size, batch_size)
    blocks = {}
    for stat in ("mu", "sigma2"):
        emp, noisy = samples[stat][:, j], samples[f"{stat}_noise"][:, j]
        blocks[stat] = MomentReport(
            empirical_mean=float(emp.mean()),
            empirical_var=_var(emp),
            analytical_mean=ana[f"{stat}_mean"],
            analytical_var=ana[f"{stat}_var"],
            noise_controlled_mean=float(noisy.mean()),
            noise_controlled_var=_var(noisy),
            finite_population_mean=fin[f"{stat}_mean"],
            finite_population_var=fin[f"{stat}_var"],
        ).to_dict()
    return {"mean": m, "var": s2, **blocks, "luo": luo_moments(m, s2, m4, batch_size)}


def figure7_report(
    batch_size: int = 64,
    train_size: int = 1000,
    samples: int = 2000,
    virtual_batch_size: int = 32,
    data_seed: int = 0,
    batch_seed: int = 0,
    means: Sequence[float] = (1.0, 0.0, -1.0),
    variances: Sequence[float] = (1.0, 3.0, 0.1),
    *,
    device: str | torch.device | None = None,
) -> dict:
    """Figure 7 of the BN paper as numbers: empirical vs analytical vs noise-controlled.

    Same run as :func:`figure7_samples` (same arguments, same samples). Returns a JSON-able
    dict ``{"batch_size", "train_size", "samples", "virtual_batch_size", "data_seed",
    "batch_seed", "units"}``,
    one entry of ``units`` per unit::

        {"mean": m, "var": s2,
         "mu":     {empirical_mean, empirical_var, analytical_mean, analytical_var,
                    noise_controlled_var, finite_population_var},
         "sigma2": {same keys},
         "luo":    {mu_mean, mu_var, sigma_mean, sigma_var}}

    - empirical: over the mini-batches (variance ddof = 1);
    - analytical: Proposition 2 / eq. 13 for iid N(m, s2) draws, biased sigma^2
      (:func:`analytical_moments`, phi^4 = 3 s2^2);
    - noise_controlled_var: empirical variance after noise-controlled BN targeting the
      virtual batch size (its expected value is the finite_population_var at B');
    - finite_population_var: exact for B drawn without replacement from this training set
      (:func:`finite_population_moments`), for both mu and sigma^2;
    - luo: Luo et al.'s Gaussian model with the docs/conventions.md corrections
      (:func:`luo_moments`),
      for the std sigma_B, from the population m, s2.
    """
    return _report_from_run(_figure7_run(
        batch_size, train_size, samples, virtual_batch_size, (data_seed, batch_seed), means,
        variances, device
    ))


def _report_from_run(run: dict) -> dict:
    b, n, s, vb, sd, ms, vs = run["params"]
    units = [unit_report(run, j, b, n, m, s2, 3.0 * s2 * s2) for j, (m, s2) in
             enumerate(zip(ms, vs, strict=True))]
    return {
        "batch_size": b,
        "train_size": n,
        "samples": s,
        "virtual_batch_size": vb,
        "data_seed": sd[0],
        "batch_seed": sd[1],
        "units": units,
    }


def figure7(batch_size: int = 64, train_size: int = 1000, samples: int = 2000,
            virtual_batch_size: int = 32, data_seed: int = 0, batch_seed: int = 0,
            device: str | torch.device | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """(figure7_report, figure7_samples) from one Monte Carlo run (the page needs both)."""
    run = _figure7_run(batch_size, train_size, samples, virtual_batch_size,
                       (data_seed, batch_seed), (1.0, 0.0, -1.0), (1.0, 3.0, 0.1), device)
    keys = ("mu", "sigma2", "mu_noise", "sigma2_noise", "train")
    return _report_from_run(run), {key: run[key] for key in keys}


def analytical_density(grid: np.ndarray, mean: float, var: float, normal: bool) -> np.ndarray:
    """Eq. 13's density on ``grid`` (Figure 7's analytical curve, every renderer's): normal
    for mu; for sigma^2 a gamma with the analytical mean and variance (for Gaussian
    pre-activations exactly the scaled chi^2_{B-1} of the biased sigma^2). Normal is also
    Luo et al.'s Gaussian model of mu_B and sigma_B. Zero where the variance is not
    positive."""
    from scipy import stats

    if var <= 0:
        return np.zeros_like(grid, dtype=float)
    if normal:
        return stats.norm.pdf(grid, loc=mean, scale=np.sqrt(var))
    return stats.gamma.pdf(grid, a=mean * mean / var, scale=var / mean)
