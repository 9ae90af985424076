"""Luo et al.'s view of BN as a regulariser: the statistics' Gaussian model, the gamma-decay
gap, and the (gamma, R, L) learning dynamics of a teacher-student ReLU unit.

* Section 2: mu_B ~ N(mu_P, sigma_P^2 / M) and sigma_B ~ N(sigma_P, sigma_P^2 (rho + 2) / (4M))
  with rho the EXCESS kurtosis.  The paper prints var(sigma_B) = (rho + 2)/(4M), missing the
  factor sigma_P^2 (docs/conventions.md, Pitfalls); both are returned so the view shows the
  difference.
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
from scipy.integrate import solve_ivp

from bnviz.core.bn import batch_statistics, bn_forward
from bnviz.device import pick_device

__all__ = ["DISTRIBUTIONS", "NORMALISATIONS", "Dynamics", "NormalisationComparison",
           "StatisticsSamples", "compare_normalisations", "eta_max", "gamma_decay_gap",
           "gap_per_batch", "integrals", "learning_dynamics", "statistics_samples"]

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
    mu, sigma = batch_statistics(h, dim=1)
    mu_p, sigma_p, rho = DISTRIBUTIONS[distribution]
    m = batch_size
    return StatisticsSamples(mu.cpu().numpy(), sigma.cpu().numpy(), mu_p, sigma_p, rho, m,
                             sigma_p**2 / m, sigma_p**2 * (rho + 2) / (4 * m),
                             (rho + 2) / (4 * m))


def gap_per_batch(batch_size: int, batches: int, seed: int = 0,
                  device: torch.device | str | None = None) -> torch.Tensor:
    """(batches,) Monte Carlo draws of mean_B[(h - BN_B(h))^2 / 2] for h ~ N(0, 1), each over
    one batch of ``batch_size`` iid draws (h a member of its batch, biased sigma, eq. 3): their
    mean estimates the gamma-decay strength zeta = 3/(4M) of a linear unit (Luo et al. eq. 3)."""
    if not (isinstance(batch_size, int) and 4 <= batch_size <= 1024):
        raise ValueError("batch size: a whole number from 4 to 1024")
    dev = torch.device(device) if device is not None else pick_device()
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    h = torch.randn((batches, batch_size), generator=gen, dtype=torch.float64, device=dev)
    mu, sigma = batch_statistics(h, dim=1, keepdim=True)
    return ((h - bn_forward(h, mu, sigma)) ** 2 / 2).mean(1)


def gamma_decay_gap(batch_size: int, gammas: np.ndarray, batches: int = 1 << 16,
                    seed: int = 0, device: torch.device | str | None = None) -> np.ndarray:
    """E_B[(gamma h - gamma BN_B(h))^2 / 2] for h ~ N(0, 1) a member of its batch (biased
    sigma), for each gamma (the same draws): the excess of BN's loss over population
    normalisation for a linear unit, against zeta gamma^2 with zeta = 3/(4M)."""
    base = float(gap_per_batch(batch_size, batches, seed, device).mean())
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


#: Relative and absolute tolerances of the ODE solver (the state is O(1): gamma, R, L).
DYNAMICS_RTOL, DYNAMICS_ATOL = 1e-8, 1e-10


def learning_dynamics(eta: float, zeta: float, gamma_init: float = 0.5, r_init: float = 0.1,
                      length_init: float = 1.0, t_max: float = 40.0, dt: float = 0.01,
                      printed_i2: bool = False) -> Dynamics:
    """Integrate eq. 6 with scipy's ``solve_ivp`` and return the state every ``dt``.

    LSODA (adaptive, switching to a stiff method where R nears 1, where K(R) has a
    square-root edge and large eta makes the system stiff), rtol 1e-8 and atol 1e-10: within
    ~1e-8 of a fixed-step RK4 at dt = 0.01 for eta <= 10, and 10-20x faster (an eta move of
    the view: ~190 ms by RK4, 6-15 ms).  R is kept in [-1, 1] and gamma > 0 where the rates
    are evaluated; if the solver stops (a blow-up), the rest of the samples are NaN."""
    for name, v, lo, hi in (("eta", eta, 1e-4, 20), ("zeta", zeta, 0, 10),
                            ("gamma", gamma_init, 1e-3, 10), ("R", r_init, -1, 1),
                            ("L", length_init, 1e-2, 100), ("time", t_max, dt, 1000)):
        if not (isinstance(v, int | float) and math.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"{name}: a number from {lo:g} to {hi:g}, got {v!r}")
    if not (1e-4 <= dt <= 0.1) or t_max / dt > 200_000:
        raise ValueError("time step: 1e-4 to 0.1, at most 200000 steps")

    def rate(_t: float, y: np.ndarray) -> list[float]:
        g, r, ell = max(y[0], 1e-9), min(max(y[1], -1.0), 1.0), y[2]
        i1, i2, i3 = integrals(g, r, printed_i2)
        return [eta * i1 / g - eta * zeta * g,
                eta * g * i3 / ell**2 - eta * r * i1 / ell**2
                - eta**2 * g**2 * r * i2 / (2 * ell**4),
                eta**2 * g**2 * i2 / (2 * ell**3)]

    n = int(round(t_max / dt))
    times = np.arange(n + 1) * dt
    sol = solve_ivp(rate, (0.0, times[-1]), [gamma_init, r_init, length_init], method="LSODA",
                    t_eval=times, rtol=DYNAMICS_RTOL, atol=DYNAMICS_ATOL)
    out = np.full((n + 1, 3), np.nan)
    out[: sol.y.shape[1]] = sol.y.T
    out[:, 0] = np.maximum(out[:, 0], 1e-9)
    out[:, 1] = np.clip(out[:, 1], -1.0, 1.0)
    return Dynamics(times, out[:, 0], out[:, 1], out[:, 2], 1 / (1 + 2 * zeta), eta_max(zeta))


NORMALISATIONS: tuple[str, ...] = ("bn", "pn", "pn_decay")


@dataclass(frozen=True)
class NormalisationComparison:
    """Three networks from the same weights on a 2D task: BN (batch statistics, with the
    gradient through them), population normalisation (PN: statistics of all the training
    data, as constants) and PN + gamma decay (zeta = 3/(4M), Luo et al.'s eq. 3 for a linear
    unit with squared loss; for a ReLU network with cross-entropy their zeta(h) is smaller,
    so this decay is strong: the view says which zeta it used)."""

    arms: tuple[str, ...]
    decision: dict[str, np.ndarray]  # arm -> (R, R) predicted class (population statistics)
    patterns: dict[str, np.ndarray]  # arm -> (R, R) activation-pattern hash (the partition)
    train_accuracy: dict[str, float]
    test_accuracy: dict[str, float]
    gamma_sq: dict[str, float]  # mean gamma^2 over units and layers
    zeta: float
    box: tuple[float, float, float, float]
    points: np.ndarray
    labels: np.ndarray


def compare_normalisations(batch_size: int = 16, steps: int = 400, lr: float = 0.1,
                           depth: int = 3, width: int = 16, n: int = 300, seed: int = 0,
                           device: torch.device | str | None = None) -> NormalisationComparison:
    """Train the three arms by SGD on moons (labels 0/1) and draw their partitions."""
    from bnviz.papers.landscape import init_params, square_grid
    from bnviz.views.jitter import binary_task

    if not (isinstance(batch_size, int) and 4 <= batch_size <= 256 and batch_size <= n):
        raise ValueError("batch size: a whole number from 4 to 256 (and at most the points)")
    if not (1 <= depth <= 6 and 2 <= width <= 64 and 10 <= steps <= 3000 and 0 < lr <= 2):
        raise ValueError("depth 1-6, width 2-64, steps 10-3000, learning rate in (0, 2]")
    dev = torch.device(device) if device is not None else pick_device()
    train = binary_task("moons", n, seed)
    test = binary_task("moons", 1000, seed + 1)
    x = torch.as_tensor(train.points, dtype=torch.float64, device=dev)
    y = torch.as_tensor(train.labels, dtype=torch.int64, device=dev)
    zeta = 3 / (4 * batch_size)
    res = 96
    box, grid = square_grid(train.points, res, dev)
    init = init_params(depth, width, seed, True, dev)  # the landscape view's networks

    def forward(p: dict, xb: torch.Tensor, batch_stats: bool, population: torch.Tensor
                ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits and each layer's pre-activation signs; normalised by the batch's own
        statistics (BN) or by those of ``population`` (PN; constants, no gradient)."""
        z, zp, signs = xb, population, []
        for i in range(depth):
            u = z @ p["W"][i].T
            up = zp @ p["W"][i].T
            mu_p, sigma_p = (s.detach() for s in batch_statistics(up))  # constants
            mu, sigma = batch_statistics(u) if batch_stats else (mu_p, sigma_p)
            h = bn_forward(u, mu, sigma, p["g"][i], p["b"][i])
            hp = bn_forward(up, mu_p, sigma_p, p["g"][i], p["b"][i])
            signs.append(h > 0)
            z, zp = torch.relu(h), torch.relu(hp)
        return z @ p["head"].T + p["head_b"], signs

    out: dict[str, dict] = {k: {} for k in ("decision", "patterns", "train", "test", "gamma")}
    for arm in NORMALISATIONS:
        fresh = {k: v.clone().requires_grad_() for k, v in init.items()}
        p = {"W": [fresh[f"W{i}"] for i in range(1, depth + 1)],
             "g": [fresh[f"gamma{i}"] for i in range(1, depth + 1)],
             "b": [fresh[f"beta{i}"] for i in range(1, depth + 1)],
             "head": fresh["head_W"], "head_b": fresh["head_b"]}
        leaves = [*p["W"], *p["g"], *p["b"], p["head"], p["head_b"]]
        opt = torch.optim.SGD(leaves, lr=lr)
        batches = torch.Generator().manual_seed(int(seed) + 5)
        for _ in range(steps):  # SGD: each step needs the last
            idx = torch.randperm(n, generator=batches)[:batch_size].to(dev)
            logits, _ = forward(p, x[idx], arm == "bn", x)
            loss = torch.nn.functional.cross_entropy(logits, y[idx])
            if arm == "pn_decay":
                loss = loss + zeta * sum((g**2).sum() for g in p["g"])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():  # test time: every arm uses the population statistics
            def predict(pts: torch.Tensor, p=p) -> tuple[torch.Tensor, list[torch.Tensor]]:
                return forward(p, pts, False, x)

            logits, signs = predict(grid)
            keys = torch.as_tensor(np.random.default_rng(7).integers(1, 2**20, size=(
                depth, width)).astype(np.float64), device=dev)
            code = sum(keys[i] @ s.T.to(torch.float64) for i, s in enumerate(signs))
            out["decision"][arm] = logits.argmax(1).view(res, res).cpu().numpy().astype(np.int8)
            out["patterns"][arm] = code.view(res, res).cpu().numpy()
            out["train"][arm] = float((predict(x)[0].argmax(1) == y).double().mean())
            xt = torch.as_tensor(test.points, dtype=torch.float64, device=dev)
            yt = torch.as_tensor(test.labels, dtype=torch.int64, device=dev)
            out["test"][arm] = float((predict(xt)[0].argmax(1) == yt).double().mean())
            out["gamma"][arm] = float(torch.cat([g.detach() for g in p["g"]]).pow(2).mean())
    return NormalisationComparison(NORMALISATIONS, out["decision"], out["patterns"],
                                   out["train"], out["test"], out["gamma"], zeta, box,
                                   train.points, train.labels)
