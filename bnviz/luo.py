"""Luo et al.'s view of BN as a regulariser: the statistics' Gaussian model, the gamma-decay
gap, and the (gamma, R, L) learning dynamics of a teacher-student ReLU unit.

* Section 2: mu_B ~ N(mu_P, sigma_P^2 / M) and sigma_B ~ N(sigma_P, sigma_P^2 (rho + 2) / (4M))
  with rho the EXCESS kurtosis.  The paper prints var(sigma_B) = (rho + 2)/(4M), missing the
  factor sigma_P^2 (SPEC.md pitfalls); both are returned so the view shows the difference.
* Eq. 3: BN = population normalisation + gamma decay zeta gamma^2.  For a linear unit and
  h ~ N(0, 1), E_B[(h - BN_B(h))^2 / 2] = 3/(4M) to leading order in 1/M (h a member of its
  batch, biased sigma); with gamma, the gap scales as gamma^2.
* Eq. 6 with eq. 13-15: dgamma/dt = eta I1/gamma - eta zeta gamma,
  dR/dt = eta gamma I3/L^2 - eta R I1/L^2 - eta^2 gamma^2 R I2/(2 L^4),
  dL/dt = eta^2 gamma^2 I2/(2 L^3), with I1 = gamma J(R) - gamma^2/2, I3 = K(R) - gamma R/2
  and the corrected I2 = gamma^2/2 + K(R) - 2 gamma J(R) (the paper prints pi R where K has
  pi), J(R) = (pi R + 2 sqrt(1-R^2) + 2 R arcsin R)/(4 pi),
  K(R) = (pi + 2 R sqrt(1-R^2) + 2 arcsin R)/(4 pi).  The fixed point is gamma0 = 1/(1+2 zeta),
  R0 = 1, and BN trains stably up to eta_max = 2 (1 + 2 zeta).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from bnviz.device import pick_device

__all__ = ["DISTRIBUTIONS", "Dynamics", "StatisticsSamples", "eta_max", "gamma_decay_gap",
           "integrals", "learning_dynamics", "statistics_samples"]

#: Pre-activation distributions of the histogram view: (mean, std, excess kurtosis).
DISTRIBUTIONS: dict[str, tuple[float, float, float]] = {
    "gaussian": (1.0, 2.0, 0.0),
    "exponential": (2.0, 2.0, 6.0),
    "uniform": (0.0, 1.0, -1.2),
}


def _draw(name: str, shape: tuple[int, ...], gen: torch.Generator,
          dev: torch.device) -> torch.Tensor:
    u = torch.rand(shape, generator=gen, dtype=torch.float64, device=dev)
    if name == "gaussian":
        return 1.0 + 2.0 * torch.randn(shape, generator=gen, dtype=torch.float64, device=dev)
    if name == "exponential":
        return -2.0 * torch.log1p(-u)  # scale 2: mean 2, std 2
    if name == "uniform":
        return (u * 2 - 1) * math.sqrt(3.0)  # std 1
    raise ValueError(f"distribution: one of {', '.join(DISTRIBUTIONS)}, got {name!r}")


@dataclass(frozen=True)
class StatisticsSamples:
    mu: np.ndarray  # (K,) batch means
    sigma: np.ndarray  # (K,) batch standard deviations (biased)
    mu_p: float
    sigma_p: float
    rho: float  # excess kurtosis
    batch_size: int
    mu_var_model: float  # sigma_P^2 / M
    sigma_var_model: float  # sigma_P^2 (rho + 2) / (4M), corrected
    sigma_var_printed: float  # (rho + 2) / (4M), as printed


def statistics_samples(distribution: str, batch_size: int, samples: int = 20_000,
                       seed: int = 0, device: torch.device | str | None = None
                       ) -> StatisticsSamples:
    """mu_B and sigma_B of ``samples`` batches of ``batch_size`` iid draws, and the model."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution: one of {', '.join(DISTRIBUTIONS)}, "
                         f"got {distribution!r}")
    if not (isinstance(batch_size, int) and 2 <= batch_size <= 4096):
        raise ValueError("batch size: a whole number from 2 to 4096")
    if not (isinstance(samples, int) and 100 <= samples <= 200_000) or \
            samples * batch_size > 2**24:
        raise ValueError("samples: 100 to 200000, and samples x batch size <= 2^24")
    dev = torch.device(device) if device is not None else pick_device()
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    h = _draw(distribution, (samples, batch_size), gen, dev)
    var, mu = torch.var_mean(h, dim=1, correction=0)
    mu_p, sigma_p, rho = DISTRIBUTIONS[distribution]
    m = batch_size
    return StatisticsSamples(mu.cpu().numpy(), var.sqrt().cpu().numpy(), mu_p, sigma_p, rho, m,
                             sigma_p**2 / m, sigma_p**2 * (rho + 2) / (4 * m),
                             (rho + 2) / (4 * m))


def gamma_decay_gap(batch_size: int, gammas: np.ndarray, batches: int = 1 << 16,
                    seed: int = 0, device: torch.device | str | None = None) -> np.ndarray:
    """E_B[(gamma h - gamma BN_B(h))^2 / 2] for h ~ N(0, 1) a member of its batch (biased
    sigma), for each gamma (the same draws): the excess of BN's loss over population
    normalisation for a linear unit, against zeta gamma^2 with zeta = 3/(4M)."""
    if not (isinstance(batch_size, int) and 4 <= batch_size <= 1024):
        raise ValueError("batch size: a whole number from 4 to 1024")
    dev = torch.device(device) if device is not None else pick_device()
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    h = torch.randn((batches, batch_size), generator=gen, dtype=torch.float64, device=dev)
    var, mu = torch.var_mean(h, dim=1, correction=0, keepdim=True)
    base = float(((h - (h - mu) / var.sqrt()) ** 2 / 2).mean())
    return base * np.asarray(gammas, dtype=np.float64) ** 2


def _j(r: np.ndarray) -> np.ndarray:
    return (np.pi * r + 2 * np.sqrt(1 - r**2) + 2 * r * np.arcsin(r)) / (4 * np.pi)


def _k(r: np.ndarray) -> np.ndarray:
    return (np.pi + 2 * r * np.sqrt(1 - r**2) + 2 * np.arcsin(r)) / (4 * np.pi)


def integrals(gamma, r, printed_i2: bool = False) -> tuple:
    """(I1, I2, I3) of eq. 13-15 for a ReLU teacher and student; ``printed_i2`` uses the
    paper's typo (pi R in place of pi in K)."""
    gamma, r = np.asarray(gamma, dtype=np.float64), np.clip(np.asarray(r, np.float64), -1, 1)
    k = _k(r)
    if printed_i2:
        k_i2 = (np.pi * r + 2 * r * np.sqrt(1 - r**2) + 2 * np.arcsin(r)) / (4 * np.pi)
    else:
        k_i2 = k
    i1 = gamma * _j(r) - gamma**2 / 2
    i2 = gamma**2 / 2 + k_i2 - 2 * gamma * _j(r)
    i3 = k - gamma * r / 2
    return i1, i2, i3


def eta_max(zeta: float) -> float:
    """The largest stable learning rate of BN (WN + gamma decay): 2 (1 + 2 zeta)."""
    return 2 * (1 + 2 * zeta)


@dataclass(frozen=True)
class Dynamics:
    t: np.ndarray
    gamma: np.ndarray
    r: np.ndarray
    length: np.ndarray
    gamma0: float  # the fixed point 1/(1 + 2 zeta)
    eta_max: float


def learning_dynamics(eta: float, zeta: float, gamma_init: float = 0.5, r_init: float = 0.1,
                      length_init: float = 1.0, t_max: float = 40.0, dt: float = 0.01,
                      printed_i2: bool = False) -> Dynamics:
    """Integrate eq. 6 by RK4 (a time loop: each step needs the last)."""
    for name, v, lo, hi in (("eta", eta, 1e-4, 20), ("zeta", zeta, 0, 10),
                            ("gamma", gamma_init, 1e-3, 10), ("R", r_init, -1, 1),
                            ("L", length_init, 1e-2, 100), ("time", t_max, dt, 1000)):
        if not (isinstance(v, int | float) and math.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"{name}: a number from {lo:g} to {hi:g}, got {v!r}")
    if not (1e-4 <= dt <= 0.1) or t_max / dt > 200_000:
        raise ValueError("time step: 1e-4 to 0.1, at most 200000 steps")

    def rate(y: np.ndarray) -> np.ndarray:
        g, r, ell = y
        i1, i2, i3 = integrals(g, r, printed_i2)
        return np.array([eta * i1 / g - eta * zeta * g,
                         eta * g * i3 / ell**2 - eta * r * i1 / ell**2
                         - eta**2 * g**2 * r * i2 / (2 * ell**4),
                         eta**2 * g**2 * i2 / (2 * ell**3)])

    n = int(round(t_max / dt))
    out = np.empty((n + 1, 3))
    y = np.array([gamma_init, r_init, length_init], dtype=np.float64)
    out[0] = y
    for i in range(n):
        a = rate(y)
        b = rate(y + dt / 2 * a)
        c = rate(y + dt / 2 * b)
        d = rate(y + dt * c)
        y = y + dt / 6 * (a + 2 * b + 2 * c + d)
        y[1] = min(max(y[1], -1.0), 1.0)
        y[0] = max(y[0], 1e-9)
        out[i + 1] = y
        if not np.all(np.isfinite(y)):
            out[i + 1:] = np.nan
            break
    return Dynamics(np.arange(n + 1) * dt, out[:, 0], out[:, 1], out[:, 2],
                    1 / (1 + 2 * zeta), eta_max(zeta))
