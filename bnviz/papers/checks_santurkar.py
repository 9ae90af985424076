"""Santurkar et al.'s optimisation claims, checked numerically: Dannemann & Junike's
counterexample to Lemma 4.5 (Example 3.2: W* is not a BN optimum, and the lemma's bound fails)
and Theorem 4.1 (an equality with 1/m, not the printed bound with 1/sqrt(m))."""

from __future__ import annotations

import math

import numpy as np
import torch

from bnviz.core.bn import batch_statistics, bn_forward
from bnviz.papers.claim import F64, PAPERS, Claim, as_floats
from bnviz.papers.dannemann import bn_loss as dannemann_bn_loss

__all__ = ["dannemann_example", "dannemann_gradient", "dannemann_lemma45", "santurkar_thm41",
           "santurkar_thm41_printed"]


def dannemann_example() -> tuple[np.ndarray, np.ndarray]:
    """Example 3.2: inputs (1,1), (1,2), (2,3) with labels 2, 5, 13."""
    return np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 3.0]]), np.array([2.0, 5.0, 13.0])


def dannemann_gradient(device: torch.device, *, unbiased: bool = False,
                       w_star: tuple[float, float] = (1.0, 3.0)) -> Claim:
    """Example 3.2's gradient of the BN loss at W* = (1, 3), by autograd, against the printed
    (-0.34, 0.11). ``unbiased`` (torch's default sigma) or another ``w_star`` is a wrong
    input: the check then fails (tests)."""
    x, y = (torch.as_tensor(a, dtype=F64, device=device) for a in dannemann_example())
    w = torch.tensor(w_star, dtype=F64, device=device, requires_grad=True)
    (grad,) = torch.autograd.grad(dannemann_bn_loss(w, x, y, unbiased=unbiased), w)
    w2 = w.detach().clone().requires_grad_()
    (unbiased,) = torch.autograd.grad(dannemann_bn_loss(w2, x, y, unbiased=True), w2)
    computed = as_floats(grad)
    paper = [-0.34, 0.11]
    return Claim("dannemann-gradient", PAPERS["dannemann"],
                 "Example 3.2: at W* = (1, 3), the minimiser of C, the BN loss C^ has a non-zero "
                 "gradient, so W* is not a BN optimum (biased sigma, gamma = 1, beta = 0)",
                 paper, computed,
                 all(abs(c - p) <= 0.005 for c, p in zip(computed, paper, strict=True)),
                 "autograd of C^ = sum of squared errors at (1, 3); agrees with the printed two "
                 "decimals; with torch's default unbiased sigma it would be "
                 f"({unbiased[0]:.5f}, {unbiased[1]:.5f})", "/papers#dannemann",
                 statement_tex=r"Example 3.2: at $W^* = (1, 3)$, the minimiser of $C$, the BN "
                 r"loss $\hat C$ has a non-zero gradient, so $W^*$ is not a BN optimum (biased "
                 r"$\sigma$, $\gamma = 1$, $\beta = 0$)")


def dannemann_lemma45(device: torch.device, *, w0: tuple[float, float] = (1.0, 3.0)) -> Claim:
    """Santurkar's Lemma 4.5 at W0 = W* = (1, 3): its right side is 0, so the nearest BN
    optimum would be W0 itself; computed: the distance^2 from W0 to the ray of BN minima,
    found by minimising C^ over the direction of w (C^ is scale invariant). With ``w0`` on
    that ray the lemma's bound is met, and the check says so (tests: it can change its
    verdict)."""
    from scipy.optimize import minimize_scalar

    x, y = (torch.as_tensor(a, dtype=F64) for a in dannemann_example())
    w0 = np.array(w0, dtype=np.float64)

    def loss_t(theta: torch.Tensor) -> torch.Tensor:
        return dannemann_bn_loss(torch.stack([torch.cos(theta), torch.sin(theta)]), x, y)

    grid = torch.linspace(-math.pi, math.pi, 3601, dtype=F64)
    start = float(grid[torch.argmin(dannemann_bn_loss(
        torch.stack([torch.cos(grid), torch.sin(grid)], 1), x, y))])
    best = minimize_scalar(lambda t: float(loss_t(torch.tensor(t, dtype=F64))),
                           bracket=(start - 2e-3, start, start + 2e-3))
    theta = torch.tensor(best.x, dtype=F64)
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
                 "to the ray; the lemma fails (72/17)", "/papers#dannemann",
                 statement_tex=r"Lemma 4.5 (as quoted by Dannemann & Junike): "
                 r"$\lVert W_0 - \hat W^*\rVert^2 \le \lVert W_0 - W^*\rVert^2 - "
                 r"(\lVert W^*\rVert^2 - \langle W^*, W_0\rangle)^2/\lVert W^*\rVert^2$; at "
                 r"$W_0 = W^* = (1, 3)$ the right side is $0$")


# ---- Santurkar et al. -----------------------------------------------------------------------

def _theorem41_sides(device: torch.device, correction: int = 0,
                     printed_power: float = 0.5) -> tuple[float, float, float]:
    """Theorem 4.1's three quantities on a BN unit: ||grad_y L^||^2 by autograd, the right side
    with 1/m, and the right side as printed (1/sqrt(m)).  y = (0, 1, 2, 5), gamma = 1,
    beta = 0, downstream loss <c, z> with c = (1, 2, 3, 4) (exact: 6/49, 6/49, -58/49)."""
    y = torch.tensor([0.0, 1.0, 2.0, 5.0], dtype=F64, device=device, requires_grad=True)
    c = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, device=device)
    gamma, m = 1.0, y.numel()
    mu, sigma = batch_statistics(y, correction=correction)  # eq. 3, biased sigma
    y_hat = bn_forward(y, mu, sigma)
    z = gamma * y_hat
    zz = z.detach().requires_grad_()
    (g,) = torch.autograd.grad((c * zz).sum(), zz)  # grad of the loss at the BN output
    (grad_y,) = torch.autograd.grad((c * z).sum(), y)
    yh, s = y_hat.detach(), sigma.detach()
    lhs = float((grad_y**2).sum())
    base = gamma**2 / s**2
    rhs_m = float(base * (g @ g - g.sum() ** 2 / m - (g @ yh) ** 2 / m))
    rhs_printed = float(base * (g @ g - g.sum() ** 2 / m - (g @ yh) ** 2 / m**printed_power))
    return lhs, rhs_m, rhs_printed


def santurkar_thm41(device: torch.device, *, correction: int = 0) -> Claim:
    """Theorem 4.1 with 1/m, an equality; with the unbiased sigma (``correction=1``, a wrong
    input) it fails (tests)."""
    lhs, rhs_m, _ = _theorem41_sides(device, correction)
    return Claim("santurkar-thm41", PAPERS["santurkar"],
                 "Theorem 4.1 with 1/m: ||grad_y L^||^2 = (gamma^2/sigma^2)(||g||^2 - <1,g>^2/m "
                 "- <g, y^>^2/m), an equality (the paper prints <= with 1/sqrt(m) on the last "
                 "term)", rhs_m, lhs, math.isclose(lhs, rhs_m, rel_tol=1e-10),
                 "autograd through BN (biased sigma) for y = (0, 1, 2, 5), loss <(1, 2, 3, 4), z>:"
                 " both sides 6/49; rtol 1e-10", "/papers#santurkar",
                 statement_tex=r"Theorem 4.1 with $1/m$: $\lVert\nabla_y \hat L\rVert^2 = "
                 r"(\gamma^2/\sigma^2)\bigl(\lVert g\rVert^2 - \langle \mathbf{1}, g\rangle^2/m "
                 r"- \langle g, \hat y\rangle^2/m\bigr)$, an equality (the paper prints $\le$ "
                 r"with $1/\sqrt{m}$ on the last term)")


def santurkar_thm41_printed(device: torch.device, *, printed_power: float = 0.5) -> Claim:
    """Theorem 4.1 as printed (1/sqrt(m)): it does not hold; with the corrected power 1
    (``printed_power=1``) the same check holds (tests: it can change its verdict)."""
    lhs, _, rhs_printed = _theorem41_sides(device, printed_power=printed_power)
    return Claim("santurkar-thm41-as-printed", PAPERS["santurkar"],
                 "Theorem 4.1 as printed: ||grad_y L^||^2 <= (gamma^2/sigma^2)(||g||^2 - "
                 "<1,g>^2/m - <g, y^>^2/sqrt(m))", rhs_printed, lhs,
                 lhs <= rhs_printed + 1e-12 * abs(rhs_printed),  # float64 rounding only
                 "the same unit: the printed bound is -58/49, below the true 6/49 (it is even "
                 "negative); the error is the step from eq. 8 to eq. 9, ||y^||^2 = m not sqrt(m)",
                 "/papers#santurkar",
                 statement_tex=r"Theorem 4.1 as printed: $\lVert\nabla_y \hat L\rVert^2 \le "
                 r"(\gamma^2/\sigma^2)\bigl(\lVert g\rVert^2 - \langle \mathbf{1}, g\rangle^2/m "
                 r"- \langle g, \hat y\rangle^2/\sqrt{m}\bigr)$")
