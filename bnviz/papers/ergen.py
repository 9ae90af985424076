"""Ergen et al.'s convex view of BN, on a small classification task.

Their BN normalises a unit's column h (over the n samples of the batch, the whole data set)
by its l2 norm, not its standard deviation:

    BN(h) = gamma P h / ||P h||_2 + alpha 1 / sqrt(n),      P = I - 1 1^T / n,

so ||P h||_2 = sqrt(n) std(h) and their gamma (and alpha) are sqrt(n) times a usual BN's.
The shift along the unit vector 1/sqrt(n) is the reading under which their closed form is
optimal (with a literal "+ alpha" it is not; /tmp notes, checked by training).

Whitening: with X = U Sigma V^T, {X w} = {U v}, so a BN layer after a linear layer sees only
U: the optimum is the same for X and for X M (M invertible).

Last layer, closed form (squared loss 0.5 ||F - Y||^2 + beta/2 (gamma^2 + alpha^2 +
||W_L||^2), Range(A) = R^n, one-hot Y): for class j,
    gamma_j* = ||y_j - mean(y_j)|| / ||y_j||,   alpha_j* = 1^T y_j / (sqrt(n) ||y_j||),
    ||w_j^(L)*|| = (||y_j|| - beta)_+,
    p* = sum_j (beta ||y_j|| - beta^2/2 if ||y_j|| > beta else ||y_j||^2 / 2),
and the last hidden features have rank #{j : ||y_j|| > beta} (neural collapse: one feature
vector per class).

Here the data are 2D points (a class per data-set label), lifted by a fixed random ReLU
layer of width >= n so that Range(A) = R^n, then BN (Ergen's), ReLU and a linear layer are
trained by full-batch Adam in float64.  Everything the view compares (the objective against
p*, each active unit's normalised (|gamma|, alpha) against (gamma_j*, alpha_j*), the rank of
the last hidden features) is invariant to the symmetries of the optimum (a class split over
units, the sign of gamma).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from bnviz.caps import ERGEN_MAX_POINTS
from bnviz.core.bn import batch_statistics, bn_forward

__all__ = ["ErgenResult", "closed_form", "ergen_experiment", "whiten"]

RANK_TOLERANCE = 0.05
ACTIVE_FRACTION = 0.1


def whiten(x: np.ndarray) -> np.ndarray:
    """U of the compact SVD X = U Sigma V^T (centred or not, as given): U^T U = I."""
    u, s, _ = np.linalg.svd(np.asarray(x, dtype=np.float64), full_matrices=False)
    return u[:, s > s[0] * 1e-12]


def closed_form(y: np.ndarray, beta: float) -> dict[str, np.ndarray | float]:
    """gamma*, alpha*, ||w^(L)*|| per class and the optimal value p*, for labels Y (n, C)."""
    y = np.asarray(y, dtype=np.float64)
    n = y.shape[0]
    norms = np.linalg.norm(y, axis=0)
    centred = np.linalg.norm(y - y.mean(0), axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.where(norms > 0, centred / norms, 0.0)
        alpha = np.where(norms > 0, y.sum(0) / (math.sqrt(n) * norms), 0.0)
    active = norms > beta
    p_star = float(np.sum(np.where(active, beta * norms - beta**2 / 2, norms**2 / 2)))
    return {"gamma": gamma, "alpha": alpha, "w_norm": np.maximum(norms - beta, 0.0),
            "p_star": p_star, "active_classes": int(active.sum())}


@dataclass(frozen=True)
class ErgenResult:
    points: np.ndarray  # (n, 2)
    labels: np.ndarray  # (n,)
    whitened: np.ndarray  # (n, r) U of the centred points
    objective: float  # the trained network's regularised loss
    p_star: float
    gamma_star: np.ndarray  # (C,)
    alpha_star: np.ndarray  # (C,)
    unit_class: np.ndarray  # (m,) the class each active unit serves, -1 if inactive
    unit_gamma: np.ndarray  # (m,) normalised |gamma| of each unit
    unit_alpha: np.ndarray  # (m,) normalised alpha
    unit_weight: np.ndarray  # (m,) ||w_k^(L)||, the unit's output weight
    singular_values: np.ndarray  # of the last hidden features (active units)
    feature_rank: int
    active_classes: int
    within_class_spread: float  # max over classes of the features' distance to their mean
    steps: int


def _ergen_bn(h: torch.Tensor, gamma: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """Ergen et al.'s BN, gamma (h - mu) / ||h - mu|| + alpha / sqrt(n): the one BN forward
    (eq. 3-4) with ||h - mu|| = sqrt(n) sigma (biased), so their gamma is sqrt(n) times a
    usual BN gamma (docs/conventions.md, Pitfalls)."""
    root_n = math.sqrt(h.shape[0])
    mu, sigma = batch_statistics(h)
    return bn_forward(h, mu, root_n * sigma, gamma, alpha / root_n)


def _threshold_features(x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """n ReLU features relu(w.x - t_k) along one random direction w, with a threshold below
    the lowest projection and one between each pair of consecutive ones: in the projections'
    order the matrix is lower triangular with a positive diagonal, so it spans R^n exactly
    whenever the points' projections differ (distinct points do, almost surely). Used where
    the random lift leaves four or more points in one of its cells (their features are then
    affine in x, so dependent): moons with 60 points did."""
    w = torch.randn(2, generator=gen, dtype=torch.float64)
    proj = x @ w
    ordered = torch.sort(proj).values
    gaps = torch.diff(ordered)
    step = gaps.min() if len(gaps) else torch.tensor(1.0, dtype=torch.float64)
    thresholds = torch.cat([ordered[:1] - step.clamp_min(1e-12),
                            (ordered[1:] + ordered[:-1]) / 2])
    return torch.relu(proj[:, None] - thresholds[None, :])


def ergen_experiment(points: np.ndarray, labels: np.ndarray, beta: float = 0.5,
                     hidden: int = 16, steps: int = 3000, seed: int = 0) -> ErgenResult:
    """Train the BN network on one-hot labels and compare it with the closed form."""
    x = np.asarray(points, dtype=np.float64)
    lab = np.asarray(labels).astype(np.int64)
    n = x.shape[0]
    if not 4 <= n <= ERGEN_MAX_POINTS:
        raise ValueError(f"give 4 to {ERGEN_MAX_POINTS} points")
    if not (0 < beta <= 10 and 2 <= hidden <= 64 and 100 <= steps <= 20_000):
        raise ValueError("beta in (0, 10], hidden units 2 to 64, steps 100 to 20000")
    classes = np.unique(lab)
    y = (lab[:, None] == classes[None]).astype(np.float64)  # one-hot (n, C)
    gen = torch.Generator().manual_seed(int(seed))
    lift = torch.randn(2, 4 * n, generator=gen, dtype=torch.float64)
    shift = torch.randn(4 * n, generator=gen, dtype=torch.float64)
    a = torch.relu(torch.as_tensor(x) @ lift + shift)  # fixed features: Range(A) = R^n
    if torch.linalg.matrix_rank(a) < n:  # 4+ points in one cell of the random arrangement
        a = torch.cat([a, _threshold_features(torch.as_tensor(x), gen)], 1)
    if torch.linalg.matrix_rank(a) < n:
        raise ValueError("the lifted features do not span R^n (repeated points?)")
    w1 = (torch.randn(a.shape[1], hidden, generator=gen, dtype=torch.float64)
          / math.sqrt(a.shape[1])).requires_grad_()
    gamma = torch.ones(hidden, dtype=torch.float64).requires_grad_()
    alpha = torch.zeros(hidden, dtype=torch.float64).requires_grad_()
    w2 = (torch.randn(hidden, y.shape[1], generator=gen, dtype=torch.float64) * 0.1
          ).requires_grad_()
    target = torch.as_tensor(y)
    opt = torch.optim.Adam([w1, gamma, alpha, w2], lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)

    def objective() -> torch.Tensor:
        feat = torch.relu(_ergen_bn(a @ w1, gamma, alpha))
        fit = 0.5 * ((feat @ w2 - target) ** 2).sum()
        return fit + beta / 2 * ((gamma**2).sum() + (alpha**2).sum() + (w2**2).sum())

    for _ in range(steps):  # full-batch training: each step needs the last
        opt.zero_grad()
        loss = objective()
        loss.backward()
        opt.step()
        sched.step()
    with torch.no_grad():
        final = float(objective())
        feat = torch.relu(_ergen_bn(a @ w1, gamma, alpha)).numpy()
        w2n = w2.numpy()
        g, al = gamma.numpy(), alpha.numpy()
    form = closed_form(y, beta)
    out_norm = np.linalg.norm(w2n, axis=1)
    # units still switching off (their output weight decaying to 0) have no settled
    # (gamma, alpha) direction: a unit counts as active from 10 % of the largest
    active = out_norm > ACTIVE_FRACTION * max(out_norm.max(), 1e-300)
    unit_class = np.where(active, np.argmax(np.abs(w2n), axis=1), -1)
    scale = np.hypot(g, al)
    with np.errstate(divide="ignore", invalid="ignore"):
        ug, ua = np.abs(g) / scale, al / scale
    sv = np.linalg.svd(feat[:, active], compute_uv=False) if active.any() else np.zeros(0)
    # numerical rank at 5 % of the largest: training stops short of the exact optimum, and
    # the features of the units that serve one class are parallel only to ~1e-2
    rank = int(np.sum(sv > sv.max() * RANK_TOLERANCE)) if sv.size else 0
    spread = max(float(np.max(np.linalg.norm(feat[lab == c][:, active]
                                             - feat[lab == c][:, active].mean(0), axis=1)))
                 for c in classes)
    return ErgenResult(x, lab, whiten(x - x.mean(0)), final, form["p_star"], form["gamma"],
                       form["alpha"], unit_class, ug, ua, out_norm, sv, rank,
                       form["active_classes"], spread, steps)
