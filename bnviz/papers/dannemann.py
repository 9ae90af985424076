"""Dannemann & Junike's counterexample to Santurkar et al.'s Lemma 4.5, in the weight plane.

One neuron, identity activation, no bias, the batch is the whole data set (their Example
3.2: inputs (1,1), (1,2), (2,3), labels 2, 5, 13).  Without BN the loss is
C(w) = sum_i (<w, x_i> - y_i)^2, minimised at W* (least squares through the origin).  With BN,
C^(w) = sum_i (gamma (<w, x_i> - mu) / sigma + beta - y_i)^2 (mu, sigma over the batch;
sigma biased unless asked), which is scale invariant in w: its minima form a ray from the
origin (a line when gamma is learnable, since gamma can change sign).  Lemma 4.5 claims the
nearest BN optimum is at least as close to W0 as the right side
||W0 - W*||^2 - (||W*||^2 - <W*, W0>)^2 / ||W*||^2, the distance to the line through W*; it
fails whenever the BN ray is not that line.

Closed forms (derived in the module's tests against autograd and a numerical minimiser):
with Xc the centred inputs, yc the centred labels and Sigma = Xc^T Xc / (M - ddof),
C^(w) = M' + ||y||^2 - 2 <Xc^T y, w> / s(w) with s(w) = sqrt(w^T Sigma w) and M' = M - ddof
(gamma = 1, beta = 0), so the minimiser direction is Sigma^{-1} Xc^T y (the least-squares
slope with an intercept).  With learnable gamma and beta, the best (gamma, beta) for a given
w leave C^ = ||yc||^2 (1 - corr(<w, x>, y)^2): the same direction, both signs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bnviz.caps import DANNEMANN_MAX_POINTS
from bnviz.core.bn import batch_statistics, bn_forward

__all__ = ["WeightPlane", "bn_loss", "weight_plane"]

#: Grid of the contour plots (a small 2D picture: n^2 loss evaluations, one batched call).
GRID = 121


@dataclass(frozen=True)
class WeightPlane:
    xs: np.ndarray  # (G,) w1 grid
    ys: np.ndarray  # (G,) w2 grid
    loss: np.ndarray  # (G, G) C(w), rows along w2
    bn_loss: np.ndarray  # (G, G) C^(w) (with the optimal gamma, beta when learnable)
    w_star: np.ndarray  # (2,) minimiser of C
    grad_at_w_star: np.ndarray  # (2,) gradient of C^ at W*
    bn_direction: np.ndarray  # (2,) unit direction of the BN minima
    both_signs: bool  # the BN minima are a line (learnable gamma), not a ray
    w0: np.ndarray
    nearest_bn: np.ndarray  # (2,) the BN optimum nearest to W0 (the origin if none is)
    lemma_lhs: float  # ||W0 - W^*||^2
    lemma_rhs: float  # the lemma's right side
    lemma_applies: bool  # <W0, W*> > 0
    lemma_holds: bool
    min_bn_loss: float
    loss_at_w_star: float
    bn_loss_at_w_star: float


def bn_loss(w: torch.Tensor, x: torch.Tensor, y: torch.Tensor, unbiased: bool = False,
            learnable: bool = False) -> torch.Tensor:
    """C^(w) = sum_i (gamma (<w, x_i> - mu) / sigma + beta - y_i)^2 over the batch of all
    points, at each row of ``w`` (..., 2): one neuron, identity activation, no bias, the sum of
    squared errors with no 1/2 (the convention that gives the paper's numbers); gamma = 1,
    beta = 0, or their optimum when ``learnable``.

    sigma is BN's biased one (eq. 3) or, with ``unbiased``, torch's default (divide by M - 1):
    the view shows both on purpose.  No floor: at w = 0 sigma is 0 and C^ is undefined (NaN),
    which the contour plot shows as a hole."""
    z = w @ x.T
    mu, sigma = batch_statistics(z, -1, keepdim=True, correction=int(unbiased), floor=False)
    u = bn_forward(z, mu, sigma)
    if not learnable:
        return ((u - y) ** 2).sum(-1)
    yc = y - y.mean()
    gamma = (u * yc).sum(-1, keepdim=True) / (u * u).sum(-1, keepdim=True)
    return ((gamma * u + y.mean() - y) ** 2).sum(-1)


def weight_plane(points: np.ndarray, labels: np.ndarray, w0: np.ndarray,
                 unbiased: bool = False, learnable: bool = False,
                 extent: float | None = None) -> WeightPlane:
    """Everything the view draws, for data ``points`` (M, 2) with ``labels`` (M,).

    Raises ValueError, with a message for the page, when W* or the BN optimum is not unique
    (fewer than 3 points, collinear inputs, labels uncorrelated with the inputs)."""
    x = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    w0 = np.asarray(w0, dtype=np.float64).reshape(2)
    if not 3 <= len(x) <= DANNEMANN_MAX_POINTS or len(y) != len(x):
        raise ValueError(f"give 3 to {DANNEMANN_MAX_POINTS} points, each with a label")
    if not (np.isfinite(x).all() and np.isfinite(y).all() and np.isfinite(w0).all()):
        raise ValueError("points, labels and W0 must be finite numbers")
    ddof = 1 if unbiased else 0
    xc = x - x.mean(0)
    sigma = xc.T @ xc / (len(x) - ddof)
    scale = max(1.0, float(np.abs(x).max()))
    if np.linalg.matrix_rank(x, tol=1e-12 * scale) < 2 or \
            np.linalg.matrix_rank(xc, tol=1e-12 * scale) < 2:
        raise ValueError("the inputs lie on a line: W* or the BN optimum is not unique")
    w_star = np.linalg.solve(x.T @ x, x.T @ y)
    cov = xc.T @ (y - y.mean())
    if np.linalg.norm(cov) <= 1e-12 * np.linalg.norm(xc) * max(np.linalg.norm(y), 1e-300):
        raise ValueError("the labels are uncorrelated with the inputs: every w is a BN "
                         "optimum")
    direction = np.linalg.solve(sigma, cov)
    direction /= np.linalg.norm(direction)
    along = float(w0 @ direction)
    nearest = (along if learnable else max(0.0, along)) * direction
    lhs = float(np.sum((w0 - nearest) ** 2))
    norm2 = float(w_star @ w_star)
    rhs = float(np.sum((w0 - w_star) ** 2) - (norm2 - w_star @ w0) ** 2 / norm2)
    applies = bool(w_star @ w0 > 0)
    tx, ty = torch.as_tensor(x), torch.as_tensor(y)
    ws = torch.tensor(w_star, requires_grad=True)
    (grad,) = torch.autograd.grad(bn_loss(ws, tx, ty, unbiased, learnable), ws)
    e = extent or 1.6 * max(float(np.abs(np.concatenate([w_star, w0, nearest])).max()), 1.0)
    xs = np.linspace(-e, e, GRID)
    grid = torch.as_tensor(np.stack(np.meshgrid(xs, xs), -1))  # (G, G, 2), rows along w2
    with np.errstate(all="ignore"):
        bn = bn_loss(grid, tx, ty, unbiased, learnable).numpy()
    bn[~np.isfinite(bn)] = np.nan  # w = 0: C^ undefined
    loss = (((grid @ tx.T) - ty) ** 2).sum(-1).numpy()
    best = bn_loss(torch.as_tensor(direction), tx, ty, unbiased, learnable)
    return WeightPlane(xs, xs.copy(), loss, bn, w_star, grad.numpy(), direction, learnable,
                       w0, nearest, lhs, rhs, applies, lhs <= rhs + 1e-12 * max(1.0, lhs),
                       float(best), float(np.sum((x @ w_star - y) ** 2)),
                       float(bn_loss(torch.as_tensor(w_star), tx, ty, unbiased, learnable)))
