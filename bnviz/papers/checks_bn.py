"""The BN paper's exact claims, checked numerically: Theorem 1 (the BN mean is the total
least-squares minimiser, eq. 7-9), Corollary 2 (a central arrangement in layer 1) and
Proposition 2 (var(mu) = <w^2, m rho> / |B|, eq. 13)."""

from __future__ import annotations

import math

import numpy as np
import torch

from bnviz.core.bn import batch_moments
from bnviz.papers.claim import F64, PAPERS, Claim, as_floats

__all__ = ["bn_cor2_central_arrangement", "bn_prop2_variance", "bn_thm1_tls_minimiser"]


def bn_thm1_tls_minimiser(device: torch.device) -> Claim:
    """Theorem 1 (eq. 7-9): the BN mean minimises the total-least-squares distance of the batch
    to the layer's hyperplanes, and the minimum is sum_k sigma_k^2 / ||w_k||^2 (biased sigma).
    Computed: the minimiser of eq. 9 built from the point-to-hyperplane distances of eq. 7, by
    a Newton step with the autograd Hessian (exact for a quadratic), and its value there."""
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(5, 3, generator=gen, dtype=F64).to(device)
    z = (torch.randn(32, 3, generator=gen, dtype=F64) * torch.tensor([1.0, 2.0, 0.5], dtype=F64)
         + torch.tensor([0.3, -1.0, 2.0], dtype=F64)).to(device)
    norms = w.norm(dim=1)

    def tls(mu: torch.Tensor) -> torch.Tensor:  # eq. 9: sum_k mean_B d(z, H_k)^2, d of eq. 7
        return (((z @ w.T - mu) / norms) ** 2).mean(0).sum()

    mu0 = torch.zeros(5, dtype=F64, device=device)
    grad = torch.func.grad(tls)(mu0)
    hess = torch.func.hessian(tls)(mu0)
    argmin = mu0 - torch.linalg.solve(hess, grad)
    u = z @ w.T
    mean, var = batch_moments(u)  # eq. 3, biased
    paper = {"argmin": as_floats(mean), "minimum": float((var / norms**2).sum())}
    computed = {"argmin": as_floats(argmin), "minimum": float(tls(argmin))}
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
    u = (torch.randn((k, b, 3), generator=gen, dtype=F64, device=device)
         * torch.tensor(s2, dtype=F64, device=device).sqrt()
         + torch.tensor(means, dtype=F64, device=device))
    var_mu = u.mean(1).var(0)
    paper = [analytical_moments(m, v, 3 * v * v, b)["mu_var"] for m, v in zip(means, s2,
                                                                             strict=True)]
    se = [p * math.sqrt(2 / (k - 1)) for p in paper]  # of a Gaussian sample variance
    computed = as_floats(var_mu)
    holds = all(abs(c - p) <= 4 * e for c, p, e in zip(computed, paper, se, strict=True))
    return Claim("bn-prop2-variance", PAPERS["bn"],
                 "Proposition 2 (eq. 13): var(mu_lk) = <w_lk^2, m rho> / |B| for iid inputs "
                 "(Figure 7: W z ~ N([1, 0, -1], diag([1, 3, 0.1])), |B| = 64)",
                 paper, computed, holds,
                 f"Monte Carlo over {k} iid batches (seed 7); within 4 standard errors "
                 f"({', '.join(f'{e:.1e}' for e in se)})", "/jitter")
