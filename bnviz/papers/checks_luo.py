"""Luo et al.'s claims on BN as a regulariser, checked numerically: the gamma-decay strength
3/(4M), the generalisation error of a linear student, and two printed formulas that do not hold
(var(sigma_B) without sigma_P^2, and I2 with pi R) (docs/conventions.md, "Pitfalls")."""

from __future__ import annotations

import math

import scipy.stats
import torch

from bnviz.papers.claim import F64, PAPERS, Claim

__all__ = ["luo_gamma_decay_gap", "luo_i2_printed", "luo_sgd_generalisation",
           "luo_sigma_variance_printed"]


def luo_gamma_decay_gap(device: torch.device, *, simulated_batch: int = 16) -> Claim:
    """The gamma-decay strength of a linear unit, zeta = 3/(4M): E_B[(h - BN_B(h))^2 / 2] for
    h ~ N(0, 1) a member of the batch (biased sigma), by Monte Carlo at M = 16. A Monte Carlo
    of another batch size (``simulated_batch``, a wrong input) makes it fail (tests)."""
    from bnviz.papers.luo import gap_per_batch

    m, k = 16, 1 << 19
    gap = gap_per_batch(simulated_batch, k, seed=3, device=device)
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
                 "3/(4M) drops O(1/M^2))", "/papers#luo",
                 statement_tex=r"BN = population normalisation + $\gamma$ decay: for "
                 r"$h \sim \mathcal{N}(0, 1)$, $\mathbb{E}_B[(h - \mathrm{BN}_B(h))^2/2] = "
                 r"3/(4M)$ (to leading order in $1/M$), at $M = 16$")


def luo_sgd_generalisation(device: torch.device, *, simulated_noise: float = 0.25) -> Claim:
    """eps_id^sgd of a linear student (min-norm least squares, the limit of SGD from 0):
    1 - alpha + alpha S / (1 - alpha) for alpha < 1, S / (alpha - 1) for alpha > 1. A
    teacher noise in the simulation other than the formula's S (``simulated_noise``, a wrong
    input) makes it fail (tests)."""
    s_noise, n, reps, alphas = 0.25, 200, 32, (0.5, 1.5, 2.0, 3.0)
    gen = torch.Generator(device=device).manual_seed(11)
    paper = [1 - a + a * s_noise / (1 - a) if a < 1 else s_noise / (a - 1) for a in alphas]
    computed, ses = [], []
    for a in alphas:  # four sizes; each batched over the repetitions
        p = int(a * n)
        x = torch.randn((reps, p, n), generator=gen, dtype=F64, device=device) / math.sqrt(n)
        w_star = torch.randn((reps, n, 1), generator=gen, dtype=F64, device=device)
        w_star = w_star * math.sqrt(n) / w_star.norm(dim=1, keepdim=True)  # |w*|^2 / N = 1
        noise = torch.randn((reps, p, 1), generator=gen, dtype=F64, device=device)
        w = torch.linalg.pinv(x) @ (x @ w_star + math.sqrt(simulated_noise) * noise)
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
                 "/papers#luo",
                 statement_tex=r"Generalisation error of a linear student trained by SGD, "
                 r"teacher noise $S = 0.25$: $\epsilon = 1 - \alpha + \alpha S/(1 - \alpha)$ "
                 r"($\alpha < 1$), $S/(\alpha - 1)$ ($\alpha > 1$), for "
                 r"$\alpha = 0.5, 1.5, 2, 3$")


def luo_sigma_variance_printed(device: torch.device, *, distribution: str = "gaussian"
                               ) -> Claim:
    """Section 2's model of sigma_B: var(sigma_B) = (rho + 2) / (4M) as printed, against a Monte
    Carlo with sigma_P = 2 (the corrected model has sigma_P^2 (rho + 2) / (4M)). With
    sigma_P = 1 (``distribution="uniform"``) the printed model is right, and the same check
    holds (tests: it can change its verdict)."""
    from bnviz.papers.luo import statistics_samples

    s = statistics_samples(distribution, 256, 40_000, seed=5, device=device)  # sigma_P = 2
    computed = float(s.sigma.var())
    se = computed * math.sqrt(2 / (40_000 - 1))
    return Claim("luo-sigma-b-variance-as-printed", PAPERS["luo"],
                 "sigma_B ~ N(sigma_P, (rho + 2)/(4M)) as printed (section 2); the variance "
                 "misses a factor sigma_P^2", s.sigma_var_printed, computed,
                 abs(computed - s.sigma_var_printed) <= 4 * se,
                 f"Monte Carlo of 40,000 Gaussian batches of 256 with sigma_P = 2 (seed 5): "
                 f"{computed:.5f}, the corrected sigma_P^2 (rho+2)/(4M) = "
                 f"{s.sigma_var_model:.5f}", "/papers#luo",
                 statement_tex=r"$\sigma_B \sim \mathcal{N}(\sigma_P, (\rho + 2)/(4M))$ as "
                 r"printed (section 2); the variance misses a factor $\sigma_P^2$")


def luo_i2_printed(device: torch.device, *, printed: bool = True) -> Claim:
    """Eq. 15's I2 as printed, against a Monte Carlo of its definition <delta^2> at R = 0.
    With the leading pi R corrected to pi (``printed=False``) the same check holds (tests:
    it can change its verdict)."""
    from bnviz.papers.luo import integrals

    gamma, r, n = 0.7, 0.0, 1 << 21
    gen = torch.Generator(device=device).manual_seed(9)
    t = torch.randn(n, generator=gen, dtype=F64, device=device)
    s = gamma * (r * t + math.sqrt(1 - r * r) * torch.randn(n, generator=gen, dtype=F64,
                                                            device=device))
    delta2 = ((s > 0) * (torch.relu(t) - s)) ** 2
    computed, se = float(delta2.mean()), float(delta2.std() / math.sqrt(n))
    as_printed = float(integrals(gamma, r, printed_i2=printed)[1])
    corrected = float(integrals(gamma, r)[1])
    return Claim("luo-i2-as-printed", PAPERS["luo"],
                 "Eq. 15 as printed: I2 = gamma^2/2 + (pi R + 2R sqrt(1-R^2) + 2 arcsin R)/(4 pi) "
                 "- 2 gamma J(R); the leading pi R should be pi", as_printed, computed,
                 abs(computed - as_printed) <= 4 * se,
                 f"Monte Carlo of <delta^2>, delta = 1{{s>0}}(relu(t) - s), at gamma = 0.7, "
                 f"R = 0 ({n} draws, seed 9); the corrected I2 = {corrected:.5f}",
                 "/papers#luo",
                 statement_tex=r"Eq. 15 as printed: $I_2 = \gamma^2/2 + (\pi R + 2R\sqrt{1-R^2} "
                 r"+ 2\arcsin R)/(4\pi) - 2\gamma J(R)$; the leading $\pi R$ should be $\pi$")
