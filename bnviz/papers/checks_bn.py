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


def bn_thm1_tls_minimiser(device: torch.device, *, correction: int = 0,
                          mean_shift: float = 0.0) -> Claim:
    """Theorem 1 (eq. 7-9): the BN mean minimises the total-least-squares distance of the batch
    to the layer's hyperplanes, and the minimum is sum_k sigma_k^2 / ||w_k||^2 (biased sigma).
    Computed: the minimiser of eq. 9 built from the point-to-hyperplane distances of eq. 7, by
    a Newton step with the autograd Hessian (exact for a quadratic), and its value there.

    ``correction`` (1: the unbiased sigma) and ``mean_shift`` (a shifted mu) give the paper's
    side a wrong input, to see the check fail (tests/papers)."""
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
    mean, var = batch_moments(u, correction=correction)  # eq. 3, biased (correction 0)
    paper = {"argmin": as_floats(mean + mean_shift),
             "minimum": float((var / norms**2).sum())}
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
                 "autograd Hessian (positive definite); rtol 1e-9", "/",
                 statement_tex=r"Theorem 1: the BN mean $\mu_l$ (eq. 3) is the unique minimiser "
                 r"of the total least-squares distance $\sum_k \operatorname{mean}_B\, "
                 r"d(z, H_{lk})^2$ (eq. 7-9); the minimum is "
                 r"$\sum_k \sigma_{lk}^2/\lVert w_{lk}\rVert^2$ with the biased $\sigma$")


def bn_cor2_central_arrangement(device: torch.device, *, statistics=None) -> Claim:
    """Corollary 2: with BN, every layer-1 hyperplane passes through the batch centroid, so the
    layer-1 partition of a box around it has exactly 2 D_1 regions.  Computed by the exact
    partition engine, for several widths and data sets (off the origin, so that a zero bias
    would not pass), on the statistics the engine's layers use: the distance from the
    centroid to each hyperplane <w_k, x> = mu_k, and the region count.

    ``statistics(net, data)`` replaces the engine's (bnviz.core.network.layer_statistics):
    a shifted mu, a perturbed weight or the unbiased sigma makes the check fail (tests)."""
    from bnviz.core.network import layer_statistics, random_network
    from bnviz.core.partition import compute_partition
    from bnviz.data.datasets import make_dataset, shifted

    statistics = statistics or layer_statistics
    widths, counts, offsets = (3, 6, 11, 24), [], []
    for i, (d, name) in enumerate(zip(widths, ("moons", "circles", "blobs", "spiral"),
                                      strict=True)):
        data = shifted(make_dataset(name, 200, i), 0.6, -0.4).points
        net = random_network(1, d, mode="bn", seed=i)
        stats = statistics(net, data)
        part = compute_partition(net, data, (-3.0, 3.0, -3.0, 3.0), stats=stats,
                                 device=device)
        counts.append(len(part.layers[0].regions))
        w, mu = net.weights[0], np.asarray(stats[0].mu)
        centre = data.mean(0)  # each H_k: <w_k, x> = mu_k; the centroid's distance to it
        offsets.append(float(np.max(np.abs(centre @ w.T - mu) / np.linalg.norm(w, axis=1))))
    paper = [2 * d for d in widths]
    return Claim("bn-cor2-central-arrangement", PAPERS["bn"],
                 "Corollary 2: with BN every layer-1 hyperplane passes through the centroid of "
                 "the batch, a central arrangement: a box around it has exactly 2 D_1 regions",
                 paper, counts, counts == paper and max(offsets) < 1e-12,
                 f"exact partition of [-3, 3]^2 for D_1 = {', '.join(map(str, widths))} "
                 f"(moons, circles, blobs, spiral); largest centroid-to-hyperplane distance "
                 f"{max(offsets):.1e}", "/?preset=fig2c",
                 statement_tex="Corollary 2: with BN every layer-1 hyperplane passes through "
                 "the centroid of the batch, a central arrangement: a box around it has "
                 "exactly $2 D_1$ regions")


def _estimate(samples: torch.Tensor) -> tuple[list[float], list[float], list[float],
                                              list[float]]:
    """Per unit (columns): the sample mean and variance of ``samples`` (k, units), with the
    standard errors of both (the variance's from the samples' own fourth moment)."""
    k = samples.shape[0]
    mean, var = samples.mean(0), samples.var(0)
    d = samples - mean
    m4 = (d**4).mean(0)
    return (as_floats(mean), as_floats((var / k).sqrt()), as_floats(var),
            as_floats(((m4 - var**2) / k).clamp_min(0).sqrt()))


def bn_prop2_variance(device: torch.device, *, correction: int = 0,
                      batch_size: int = 64) -> Claim:
    """Proposition 2 (eq. 13) for iid inputs, against a Monte Carlo of 40,000 batches in the
    Figure 7 setup: var(mu) = <w^2, m rho> / |B|, and BN's biased sigma^2 with mean
    (|B|-1)/|B| s^2 and variance ((|B|-1)/|B|)^2 (phi^4 - s^4 (|B|-3)/(|B|-1)) / |B| (eq. 13
    as printed is the variance of the unbiased sample variance; docs/conventions.md).

    ``correction`` (1: the unbiased sigma^2 in the Monte Carlo) or a ``batch_size`` that the
    formulas do not assume give the check a wrong input: it then fails (tests)."""
    from bnviz.views.bnmoments import analytical_moments

    means, s2, b, k = [1.0, 0.0, -1.0], [1.0, 3.0, 0.1], 64, 40_000
    gen = torch.Generator(device=device).manual_seed(7)
    u = (torch.randn((k, batch_size, 3), generator=gen, dtype=F64, device=device)
         * torch.tensor(s2, dtype=F64, device=device).sqrt()
         + torch.tensor(means, dtype=F64, device=device))
    mu_b, sigma2_b = u.mean(1), u.var(1, correction=correction)
    law = [analytical_moments(m, v, 3 * v * v, b) for m, v in zip(means, s2, strict=True)]
    paper = {"mu_var": [a["mu_var"] for a in law],
             "sigma2_mean": [a["sigma2_mean"] for a in law],
             "sigma2_var": [a["sigma2_var"] for a in law]}
    _, _, mu_var, mu_var_se = _estimate(mu_b)
    s2_mean, s2_mean_se, s2_var, s2_var_se = _estimate(sigma2_b)
    computed = {"mu_var": mu_var, "sigma2_mean": s2_mean, "sigma2_var": s2_var}
    errors = {"mu_var": mu_var_se, "sigma2_mean": s2_mean_se, "sigma2_var": s2_var_se}
    holds = all(abs(c - p) <= 4 * e for key in paper for c, p, e in
                zip(computed[key], paper[key], errors[key], strict=True))
    return Claim("bn-prop2-variance", PAPERS["bn"],
                 "Proposition 2 (eq. 13): var(mu_lk) = <w_lk^2, m rho> / |B| for iid inputs, "
                 "and var(sigma_lk^2) from the fourth moment phi^4 (BN's biased sigma^2: mean "
                 "(|B|-1)/|B| s^2) (Figure 7: W z ~ N([1, 0, -1], diag([1, 3, 0.1])), "
                 "|B| = 64)",
                 paper, computed, holds,
                 f"Monte Carlo over {k} iid batches (seed 7); every value within 4 standard "
                 "errors of the Monte Carlo (those of a variance from the samples' fourth "
                 "moment)", "/jitter",
                 statement_tex=r"Proposition 2 (eq. 13): $\operatorname{var}(\mu_{lk}) = "
                 r"\langle w_{lk}^2, m\rho\rangle/|B|$ for iid inputs, and "
                 r"$\operatorname{var}(\sigma_{lk}^2)$ from the fourth moment $\phi^4$ (BN's "
                 r"biased $\sigma^2$: mean $\frac{|B|-1}{|B|}\,s^2$) (Figure 7: "
                 r"$Wz \sim \mathcal{N}([1, 0, -1], \operatorname{diag}([1, 3, 0.1]))$, "
                 r"$|B| = 64$)")
