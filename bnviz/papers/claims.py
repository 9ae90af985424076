"""Every closed-form statement of the five papers, checked numerically: paper value beside
computed value.

Each claim is computed independently of the formula it checks (autograd against a closed
form, Monte Carlo against an expectation, a numerical minimiser against an argmin, the exact
partition engine against a region count), in float64, with a fixed seed and a stated
tolerance.  Where a paper's printed formula is wrong, the printed version is reported as not
holding, next to the corrected one (SPEC.md, "Pitfalls").

    python -m bnviz claims --json
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.stats
import torch

from bnviz.core.bn import batch_moments, batch_statistics, bn_forward
from bnviz.device import pick_device
from bnviz.papers.dannemann import bn_loss as dannemann_bn_loss

__all__ = ["PAPERS", "Claim", "all_claims", "claim_ids", "dannemann_example", "run_claims"]

PAPERS: dict[str, str] = {
    "bn": "Batch normalization explained (the BN paper; anonymous review copy)",
    "santurkar": "Santurkar et al., How does batch normalization help optimization?",
    "dannemann": "Dannemann & Junike, Batch normalization does not improve initialization",
    "luo": "Luo et al., Towards understanding regularization in batch normalization",
    "ergen": "Ergen et al., Demystifying batch normalization in ReLU networks",
}

_F64 = torch.float64


@dataclass(frozen=True)
class Claim:
    """One statement, the value the paper states (or its formula gives) and the value computed
    independently; ``how`` says how and with which tolerance, ``view`` where the page shows it."""

    id: str
    paper: str
    statement: str
    paper_value: Any
    computed: Any
    holds: bool
    how: str
    view: str = "/papers"

    def as_json(self) -> dict:
        return {"id": self.id, "paper": self.paper, "statement": self.statement,
                "paper_value": self.paper_value, "computed": self.computed,
                "holds": bool(self.holds), "how": self.how, "view": self.view}


def _floats(t: torch.Tensor | np.ndarray) -> list[float]:
    return [float(v) for v in np.asarray(torch.as_tensor(t).detach().cpu()).ravel()]


# ---- the BN paper ---------------------------------------------------------------------------

def bn_thm1_tls_minimiser(device: torch.device) -> Claim:
    """Theorem 1 (eq. 7-9): the BN mean minimises the total-least-squares distance of the batch
    to the layer's hyperplanes, and the minimum is sum_k sigma_k^2 / ||w_k||^2 (biased sigma).
    Computed: the minimiser of eq. 9 built from the point-to-hyperplane distances of eq. 7, by
    a Newton step with the autograd Hessian (exact for a quadratic), and its value there."""
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(5, 3, generator=gen, dtype=_F64).to(device)
    z = (torch.randn(32, 3, generator=gen, dtype=_F64) * torch.tensor([1.0, 2.0, 0.5], dtype=_F64)
         + torch.tensor([0.3, -1.0, 2.0], dtype=_F64)).to(device)
    norms = w.norm(dim=1)

    def tls(mu: torch.Tensor) -> torch.Tensor:  # eq. 9: sum_k mean_B d(z, H_k)^2, d of eq. 7
        return (((z @ w.T - mu) / norms) ** 2).mean(0).sum()

    mu0 = torch.zeros(5, dtype=_F64, device=device)
    grad = torch.func.grad(tls)(mu0)
    hess = torch.func.hessian(tls)(mu0)
    argmin = mu0 - torch.linalg.solve(hess, grad)
    u = z @ w.T
    mean, var = batch_moments(u)  # eq. 3, biased
    paper = {"argmin": _floats(mean), "minimum": float((var / norms**2).sum())}
    computed = {"argmin": _floats(argmin), "minimum": float(tls(argmin))}
    holds = (np.allclose(paper["argmin"], computed["argmin"], rtol=1e-9, atol=1e-12)
             and math.isclose(paper["minimum"], computed["minimum"], rel_tol=1e-9)
             and bool(torch.linalg.eigvalsh(hess).min() > 0))
    return Claim("bn-thm1-tls-minimiser", PAPERS["bn"],
                 "Theorem 1: the BN mean mu_l (eq. 3) is the unique minimiser of the total "
                 "least-squares distance sum_k mean_B d(z, H_lk)^2 (eq. 7-9); the minimum is "
                 "sum_k sigma_lk^2 / ||w_lk||^2 with the biased sigma",
                 paper, computed, holds,
                 "5 units on a batch of 32 in R^3 (seed 0): Newton step of eq. 9 with the "
                 "autograd Hessian (positive definite); rtol 1e-9", "/")


def bn_cor2_central_arrangement(device: torch.device) -> Claim:
    """Corollary 2: with BN, every layer-1 hyperplane passes through the batch centroid, so the
    layer-1 partition of a box around it has exactly 2 D_1 regions.  Computed by the exact
    partition engine, for several widths and data sets."""
    from bnviz.core.network import random_network
    from bnviz.core.partition import compute_partition
    from bnviz.data.datasets import make_dataset

    widths, counts, offsets = (3, 6, 11, 24), [], []
    for i, (d, name) in enumerate(zip(widths, ("moons", "circles", "blobs", "spiral"),
                                      strict=True)):
        data = make_dataset(name, 200, i).points
        net = random_network(1, d, mode="bn", seed=i)
        part = compute_partition(net, data, (-3.0, 3.0, -3.0, 3.0), device=device)
        counts.append(len(part.layers[0].regions))
        w = net.weights[0]
        u = data @ w.T
        centre = data.mean(0)  # H_k: <w_k, x> = mu_k; distance of the centroid to each
        offsets.append(float(np.max(np.abs(centre @ w.T - u.mean(0)) / np.linalg.norm(w, axis=1))))
    paper = [2 * d for d in widths]
    return Claim("bn-cor2-central-arrangement", PAPERS["bn"],
                 "Corollary 2: with BN every layer-1 hyperplane passes through the centroid of "
                 "the batch, a central arrangement: a box around it has exactly 2 D_1 regions",
                 paper, counts, counts == paper and max(offsets) < 1e-12,
                 f"exact partition of [-3, 3]^2 for D_1 = {', '.join(map(str, widths))} "
                 f"(moons, circles, blobs, spiral); largest centroid-to-hyperplane distance "
                 f"{max(offsets):.1e}", "/?preset=fig2c")


def bn_prop2_variance(device: torch.device) -> Claim:
    """Proposition 2 (eq. 13): var(mu) = <w^2, m rho> / |B| for iid inputs, against a Monte
    Carlo of 40,000 batches of 64 in the Figure 7 setup."""
    from bnviz.views.bnmoments import analytical_moments

    means, s2, b, k = [1.0, 0.0, -1.0], [1.0, 3.0, 0.1], 64, 40_000
    gen = torch.Generator(device=device).manual_seed(7)
    u = (torch.randn((k, b, 3), generator=gen, dtype=_F64, device=device)
         * torch.tensor(s2, dtype=_F64, device=device).sqrt()
         + torch.tensor(means, dtype=_F64, device=device))
    var_mu = u.mean(1).var(0)
    paper = [analytical_moments(m, v, 3 * v * v, b)["mu_var"] for m, v in zip(means, s2,
                                                                             strict=True)]
    se = [p * math.sqrt(2 / (k - 1)) for p in paper]  # of a Gaussian sample variance
    computed = _floats(var_mu)
    holds = all(abs(c - p) <= 4 * e for c, p, e in zip(computed, paper, se, strict=True))
    return Claim("bn-prop2-variance", PAPERS["bn"],
                 "Proposition 2 (eq. 13): var(mu_lk) = <w_lk^2, m rho> / |B| for iid inputs "
                 "(Figure 7: W z ~ N([1, 0, -1], diag([1, 3, 0.1])), |B| = 64)",
                 paper, computed, holds,
                 f"Monte Carlo over {k} iid batches (seed 7); within 4 standard errors "
                 f"({', '.join(f'{e:.1e}' for e in se)})", "/jitter")


# ---- Dannemann & Junike ---------------------------------------------------------------------

def dannemann_example() -> tuple[np.ndarray, np.ndarray]:
    """Example 3.2: inputs (1,1), (1,2), (2,3) with labels 2, 5, 13."""
    return np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 3.0]]), np.array([2.0, 5.0, 13.0])


def dannemann_gradient(device: torch.device) -> Claim:
    x, y = (torch.as_tensor(a, dtype=_F64, device=device) for a in dannemann_example())
    w = torch.tensor([1.0, 3.0], dtype=_F64, device=device, requires_grad=True)
    (grad,) = torch.autograd.grad(dannemann_bn_loss(w, x, y), w)
    w2 = w.detach().clone().requires_grad_()
    (unbiased,) = torch.autograd.grad(dannemann_bn_loss(w2, x, y, unbiased=True), w2)
    computed = _floats(grad)
    paper = [-0.34, 0.11]
    return Claim("dannemann-gradient", PAPERS["dannemann"],
                 "Example 3.2: at W* = (1, 3), the minimiser of C, the BN loss C^ has a non-zero "
                 "gradient, so W* is not a BN optimum (biased sigma, gamma = 1, beta = 0)",
                 paper, computed,
                 all(abs(c - p) <= 0.005 for c, p in zip(computed, paper, strict=True)),
                 "autograd of C^ = sum of squared errors at (1, 3); agrees with the printed two "
                 "decimals; with torch's default unbiased sigma it would be "
                 f"({unbiased[0]:.5f}, {unbiased[1]:.5f})", "/papers#dannemann")


def dannemann_lemma45(device: torch.device) -> Claim:
    """Santurkar's Lemma 4.5 at W0 = W* = (1, 3): its right side is 0, so the nearest BN
    optimum would be W0 itself; computed: the distance^2 from W0 to the ray of BN minima,
    found by minimising C^ over the direction of w (C^ is scale invariant)."""
    from scipy.optimize import minimize_scalar

    x, y = (torch.as_tensor(a, dtype=_F64) for a in dannemann_example())
    w0 = np.array([1.0, 3.0])

    def loss_t(theta: torch.Tensor) -> torch.Tensor:
        return dannemann_bn_loss(torch.stack([torch.cos(theta), torch.sin(theta)]), x, y)

    grid = torch.linspace(-math.pi, math.pi, 3601, dtype=_F64)
    start = float(grid[torch.argmin(dannemann_bn_loss(
        torch.stack([torch.cos(grid), torch.sin(grid)], 1), x, y))])
    best = minimize_scalar(lambda t: float(loss_t(torch.tensor(t, dtype=_F64))),
                           bracket=(start - 2e-3, start, start + 2e-3))
    theta = torch.tensor(best.x, dtype=_F64)
    d1, d2 = torch.func.grad(loss_t), torch.func.grad(torch.func.grad(loss_t))
    for _ in range(4):  # Newton on the angle: the bracket search alone stops at ~1e-8 rad
        theta = theta - d1(theta) / d2(theta)
    d = np.array([math.cos(float(theta)), math.sin(float(theta))])
    along = max(0.0, float(w0 @ d))
    lhs = float(w0 @ w0 - along**2)
    return Claim("dannemann-lemma45", PAPERS["santurkar"],
                 "Lemma 4.5 (as quoted by Dannemann & Junike): ||W0 - W^*||^2 <= ||W0 - W*||^2 - "
                 "(||W*||^2 - <W*, W0>)^2 / ||W*||^2; at W0 = W* = (1, 3) the right side is 0",
                 0.0, lhs, lhs <= 1e-9,
                 "the BN minima are a ray (C^ is scale invariant): its direction by minimising "
                 f"C^ over the angle ({d[0]:.6f}, {d[1]:.6f}), then the squared distance of W0 "
                 "to the ray; the lemma fails (72/17)", "/papers#dannemann")


# ---- Santurkar et al. -----------------------------------------------------------------------

def _theorem41_sides(device: torch.device) -> tuple[float, float, float]:
    """Theorem 4.1's three quantities on a BN unit: ||grad_y L^||^2 by autograd, the right side
    with 1/m, and the right side as printed (1/sqrt(m)).  y = (0, 1, 2, 5), gamma = 1,
    beta = 0, downstream loss <c, z> with c = (1, 2, 3, 4) (exact: 6/49, 6/49, -58/49)."""
    y = torch.tensor([0.0, 1.0, 2.0, 5.0], dtype=_F64, device=device, requires_grad=True)
    c = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=_F64, device=device)
    gamma, m = 1.0, y.numel()
    mu, sigma = batch_statistics(y)  # eq. 3, biased sigma
    y_hat = bn_forward(y, mu, sigma)
    z = gamma * y_hat
    zz = z.detach().requires_grad_()
    (g,) = torch.autograd.grad((c * zz).sum(), zz)  # grad of the loss at the BN output
    (grad_y,) = torch.autograd.grad((c * z).sum(), y)
    yh, s = y_hat.detach(), sigma.detach()
    lhs = float((grad_y**2).sum())
    base = gamma**2 / s**2
    rhs_m = float(base * (g @ g - g.sum() ** 2 / m - (g @ yh) ** 2 / m))
    rhs_printed = float(base * (g @ g - g.sum() ** 2 / m - (g @ yh) ** 2 / math.sqrt(m)))
    return lhs, rhs_m, rhs_printed


def santurkar_thm41(device: torch.device) -> Claim:
    lhs, rhs_m, _ = _theorem41_sides(device)
    return Claim("santurkar-thm41", PAPERS["santurkar"],
                 "Theorem 4.1 with 1/m: ||grad_y L^||^2 = (gamma^2/sigma^2)(||g||^2 - <1,g>^2/m "
                 "- <g, y^>^2/m), an equality (the paper prints <= with 1/sqrt(m) on the last "
                 "term)", rhs_m, lhs, math.isclose(lhs, rhs_m, rel_tol=1e-10),
                 "autograd through BN (biased sigma) for y = (0, 1, 2, 5), loss <(1, 2, 3, 4), z>:"
                 " both sides 6/49; rtol 1e-10", "/papers#santurkar")


def santurkar_thm41_printed(device: torch.device) -> Claim:
    lhs, _, rhs_printed = _theorem41_sides(device)
    return Claim("santurkar-thm41-as-printed", PAPERS["santurkar"],
                 "Theorem 4.1 as printed: ||grad_y L^||^2 <= (gamma^2/sigma^2)(||g||^2 - "
                 "<1,g>^2/m - <g, y^>^2/sqrt(m))", rhs_printed, lhs, lhs <= rhs_printed,
                 "the same unit: the printed bound is -58/49, below the true 6/49 (it is even "
                 "negative); the error is the step from eq. 8 to eq. 9, ||y^||^2 = m not sqrt(m)",
                 "/papers#santurkar")


# ---- Luo et al. -----------------------------------------------------------------------------

def luo_gamma_decay_gap(device: torch.device) -> Claim:
    """The gamma-decay strength of a linear unit, zeta = 3/(4M): E_B[(h - BN_B(h))^2 / 2] for
    h ~ N(0, 1) a member of the batch (biased sigma), by Monte Carlo at M = 16."""
    from bnviz.papers.luo import gap_per_batch

    m, k = 16, 1 << 19
    gap = gap_per_batch(m, k, seed=3, device=device)
    computed, se = float(gap.mean()), float(gap.std() / math.sqrt(k))
    # |B| sigma_B^2 ~ chi2_{M-1} for h ~ N(0, 1): E[sigma_B] = E[chi_{M-1}] / sqrt(M)
    exact = 1 - float(scipy.stats.chi(m - 1).mean()) / math.sqrt(m)
    paper = 3 / (4 * m)
    holds = abs(computed - paper) <= 0.03 * paper and abs(computed - exact) <= 4 * se
    return Claim("luo-gamma-decay-gap", PAPERS["luo"],
                 "BN = population normalisation + gamma decay: for h ~ N(0, 1), "
                 "E_B[(h - BN_B(h))^2 / 2] = 3/(4M) (to leading order in 1/M), at M = 16",
                 paper, computed, holds,
                 f"Monte Carlo over {k} batches of 16 (seed 3), h a member of its batch, biased "
                 f"sigma: within 3 % of 3/(4M) and within 4 standard errors ({se:.1e}) of the "
                 f"exact 1 - E[sigma_B] = {exact:.6f} (+{100 * (exact / paper - 1):.1f} %: "
                 "3/(4M) drops O(1/M^2))", "/papers#luo")


def luo_sgd_generalisation(device: torch.device) -> Claim:
    """eps_id^sgd of a linear student (min-norm least squares, the limit of SGD from 0):
    1 - alpha + alpha S / (1 - alpha) for alpha < 1, S / (alpha - 1) for alpha > 1."""
    s_noise, n, reps, alphas = 0.25, 200, 32, (0.5, 1.5, 2.0, 3.0)
    gen = torch.Generator(device=device).manual_seed(11)
    paper = [1 - a + a * s_noise / (1 - a) if a < 1 else s_noise / (a - 1) for a in alphas]
    computed, ses = [], []
    for a in alphas:  # four sizes; each batched over the repetitions
        p = int(a * n)
        x = torch.randn((reps, p, n), generator=gen, dtype=_F64, device=device) / math.sqrt(n)
        w_star = torch.randn((reps, n, 1), generator=gen, dtype=_F64, device=device)
        w_star = w_star * math.sqrt(n) / w_star.norm(dim=1, keepdim=True)  # |w*|^2 / N = 1
        noise = torch.randn((reps, p, 1), generator=gen, dtype=_F64, device=device)
        w = torch.linalg.pinv(x) @ (x @ w_star + math.sqrt(s_noise) * noise)
        err = ((w - w_star) ** 2).sum((1, 2)) / n
        computed.append(float(err.mean()))
        ses.append(float(err.std() / math.sqrt(reps)))
    holds = all(abs(c - p) <= max(4 * e, 0.03 * p) for c, p, e in zip(computed, paper, ses,
                                                                      strict=True))
    return Claim("luo-sgd-generalisation", PAPERS["luo"],
                 "Generalisation error of a linear student trained by SGD, teacher noise "
                 "S = 0.25: eps = 1 - alpha + alpha S/(1 - alpha) (alpha < 1), S/(alpha - 1) "
                 "(alpha > 1), for alpha = 0.5, 1.5, 2, 3",
                 paper, computed, holds,
                 f"simulation: N = {n} inputs, P = alpha N samples, min-norm least squares, "
                 f"{reps} repetitions (seed 11); within 4 standard errors or 3 % (finite N)",
                 "/papers#luo")


def luo_sigma_variance_printed(device: torch.device) -> Claim:
    """Section 2's model of sigma_B: var(sigma_B) = (rho + 2) / (4M) as printed, against a Monte
    Carlo with sigma_P = 2 (the corrected model has sigma_P^2 (rho + 2) / (4M))."""
    from bnviz.papers.luo import statistics_samples

    s = statistics_samples("gaussian", 256, 40_000, seed=5, device=device)  # sigma_P = 2
    computed = float(s.sigma.var())
    se = computed * math.sqrt(2 / (40_000 - 1))
    return Claim("luo-sigma-b-variance-as-printed", PAPERS["luo"],
                 "sigma_B ~ N(sigma_P, (rho + 2)/(4M)) as printed (section 2); the variance "
                 "misses a factor sigma_P^2", s.sigma_var_printed, computed,
                 abs(computed - s.sigma_var_printed) <= 4 * se,
                 f"Monte Carlo of 40,000 Gaussian batches of 256 with sigma_P = 2 (seed 5): "
                 f"{computed:.5f}, the corrected sigma_P^2 (rho+2)/(4M) = "
                 f"{s.sigma_var_model:.5f}", "/papers#luo")


def luo_i2_printed(device: torch.device) -> Claim:
    """Eq. 15's I2 as printed, against a Monte Carlo of its definition <delta^2> at R = 0."""
    from bnviz.papers.luo import integrals

    gamma, r, n = 0.7, 0.0, 1 << 21
    gen = torch.Generator(device=device).manual_seed(9)
    t = torch.randn(n, generator=gen, dtype=_F64, device=device)
    s = gamma * (r * t + math.sqrt(1 - r * r) * torch.randn(n, generator=gen, dtype=_F64,
                                                            device=device))
    delta2 = ((s > 0) * (torch.relu(t) - s)) ** 2
    computed, se = float(delta2.mean()), float(delta2.std() / math.sqrt(n))
    printed = float(integrals(gamma, r, printed_i2=True)[1])
    corrected = float(integrals(gamma, r)[1])
    return Claim("luo-i2-as-printed", PAPERS["luo"],
                 "Eq. 15 as printed: I2 = gamma^2/2 + (pi R + 2R sqrt(1-R^2) + 2 arcsin R)/(4 pi) "
                 "- 2 gamma J(R); the leading pi R should be pi", printed, computed,
                 abs(computed - printed) <= 4 * se,
                 f"Monte Carlo of <delta^2>, delta = 1{{s>0}}(relu(t) - s), at gamma = 0.7, "
                 f"R = 0 ({n} draws, seed 9); the corrected I2 = {corrected:.5f}",
                 "/papers#luo")


def ergen_closed_form(device: torch.device) -> Claim:
    """The closed-form optimum p* of the BN network's last layer, against training."""
    from bnviz.data.datasets import make_dataset
    from bnviz.papers.ergen import ergen_experiment

    data = make_dataset("blobs", 24, 0)
    r = ergen_experiment(data.points, data.labels, beta=0.7, steps=3000)
    holds = r.p_star * (1 - 1e-9) <= r.objective <= r.p_star * (1 + 1e-3) and \
        r.feature_rank == r.active_classes
    return Claim("ergen-closed-form", PAPERS["ergen"],
                 "With BN (l2 normalisation) and Range(A) = R^n, the regularised squared loss "
                 "has the optimum p* = sum_j (beta ||y_j|| - beta^2/2)_(||y_j|| > beta), at "
                 "gamma* = ||y_j - mean|| / ||y_j||, alpha* = 1^T y_j / (sqrt(n) ||y_j||); the "
                 "last hidden features have rank #{j: ||y_j|| > beta}",
                 {"p_star": r.p_star, "rank": r.active_classes},
                 {"objective": r.objective, "rank": r.feature_rank}, holds,
                 "full-batch Adam (3000 steps, float64) on 24 blobs in 3 classes, beta = 0.7; "
                 "within 0.1 % of p* (never below it), rank at 5 % of the largest singular "
                 "value", "/papers#ergen")


#: Every claim by its id, in the order the table shows them.
_CLAIMS: dict[str, Callable[[torch.device], Claim]] = {
    "bn-thm1-tls-minimiser": bn_thm1_tls_minimiser,
    "bn-cor2-central-arrangement": bn_cor2_central_arrangement,
    "bn-prop2-variance": bn_prop2_variance,
    "dannemann-gradient": dannemann_gradient,
    "dannemann-lemma45": dannemann_lemma45,
    "santurkar-thm41": santurkar_thm41,
    "santurkar-thm41-as-printed": santurkar_thm41_printed,
    "luo-gamma-decay-gap": luo_gamma_decay_gap,
    "luo-sgd-generalisation": luo_sgd_generalisation,
    "luo-sigma-b-variance-as-printed": luo_sigma_variance_printed,
    "luo-i2-as-printed": luo_i2_printed,
    "ergen-closed-form": ergen_closed_form,
}


def claim_ids() -> list[str]:
    return list(_CLAIMS)


def run_claims(ids: list[str] | None = None,
               device: torch.device | str | None = None) -> list[Claim]:
    """The claims (all, or those of ``ids``), each computed now."""
    dev = torch.device(device) if device is not None else pick_device()
    if ids:
        unknown = [i for i in ids if i not in _CLAIMS]
        if unknown:
            raise ValueError(f"unknown claim {unknown[0]!r}; known: {', '.join(_CLAIMS)}")
    return [_CLAIMS[i](dev) for i in (ids or _CLAIMS)]


def all_claims(device: torch.device | str | None = None) -> dict:
    """``{"claims": [...]}``, the JSON of ``python -m bnviz claims --json``."""
    return {"claims": [c.as_json() for c in run_claims(device=device)]}
