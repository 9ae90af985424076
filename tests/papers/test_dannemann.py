"""Dannemann & Junike's weight plane (bnviz.papers.dannemann) against independent computations:
scipy minimisers of the losses, finite differences, and the paper's Example 3.2 numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from bnviz.papers.dannemann import weight_plane

X = np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 3.0]])
Y = np.array([2.0, 5.0, 13.0])


def bn_loss(w, x, y, ddof=0, learnable=False):
    """C^ written out in numpy, one w at a time (gamma, beta by least squares if learnable)."""
    z = x @ w
    u = (z - z.mean()) / z.std(ddof=ddof)
    if not learnable:
        return float(np.sum((u - y) ** 2))
    a = np.stack([u, np.ones_like(u)], 1)
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    return float(np.sum((a @ coef - y) ** 2))


def test_example_32_numbers():
    p = weight_plane(X, Y, [1.0, 3.0])
    np.testing.assert_allclose(p.w_star, [1.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(p.grad_at_w_star, np.array([-108, 36]) / (37 * math.sqrt(74)),
                               rtol=1e-12)
    np.testing.assert_allclose(p.bn_direction, np.array([5.0, 3.0]) / math.sqrt(34), rtol=1e-12)
    np.testing.assert_allclose(p.nearest_bn, [35 / 17, 21 / 17], rtol=1e-12)
    assert p.lemma_lhs == pytest.approx(72 / 17, rel=1e-12)
    assert abs(p.lemma_rhs) < 1e-12 and p.lemma_applies and not p.lemma_holds
    assert p.loss_at_w_star == pytest.approx(12.0)
    assert p.bn_loss_at_w_star == pytest.approx(201 - 236 / math.sqrt(74), rel=1e-12)
    assert p.min_bn_loss == pytest.approx(201 - 2 * math.sqrt(194), rel=1e-12)
    unbiased = weight_plane(X, Y, [1.0, 3.0], unbiased=True)
    np.testing.assert_allclose(unbiased.grad_at_w_star, math.sqrt(2 / 3) * p.grad_at_w_star,
                               rtol=1e-12)
    assert unbiased.min_bn_loss == pytest.approx(200 - 4 / 3 * math.sqrt(291), rel=1e-12)
    learn = weight_plane(X, Y, [1.0, 3.0], learnable=True)
    assert learn.bn_loss_at_w_star == pytest.approx(72 / 37, rel=1e-12)
    assert learn.min_bn_loss == pytest.approx(0.0, abs=1e-9) and learn.both_signs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("ddof", [0, 1])
@pytest.mark.parametrize("learnable", [False, True])
def test_random_problems_against_scipy(seed, ddof, learnable):
    """For random data: W* is scipy's minimiser of C, the BN direction is scipy's minimiser
    of C^ over the angle, the gradient at W* matches finite differences, and the contour
    grid holds C^ and C at its points."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(int(rng.integers(3, 9)), 2)) * 2
    y = rng.normal(size=len(x)) * 3 + 1
    w0 = rng.normal(size=2) * 2
    p = weight_plane(x, y, w0, unbiased=bool(ddof), learnable=learnable)
    w_star = minimize(lambda w: np.sum((x @ w - y) ** 2), np.zeros(2), tol=1e-14).x
    np.testing.assert_allclose(p.w_star, w_star, rtol=1e-6, atol=1e-7)
    theta = np.linspace(-math.pi, math.pi, 7201)
    losses = [bn_loss(np.array([math.cos(t), math.sin(t)]), x, y, ddof, learnable)
              for t in theta]
    t0 = theta[int(np.argmin(losses))]
    best = minimize_scalar(lambda t: bn_loss(np.array([math.cos(t), math.sin(t)]), x, y, ddof,
                                             learnable),
                           bracket=(t0 - 1e-3, t0, t0 + 1e-3), tol=1e-12).x
    direction = np.array([math.cos(best), math.sin(best)])
    assert abs(abs(p.bn_direction @ direction) - 1) < 1e-8
    if not learnable:  # a ray: the same sign
        assert p.bn_direction @ direction > 0
    assert p.min_bn_loss == pytest.approx(min(losses), rel=1e-6, abs=1e-9)
    h = 1e-6
    fd = [(bn_loss(p.w_star + h * e, x, y, ddof, learnable)
           - bn_loss(p.w_star - h * e, x, y, ddof, learnable)) / (2 * h) for e in np.eye(2)]
    np.testing.assert_allclose(p.grad_at_w_star, fd, rtol=1e-5, atol=1e-6)
    i, j = 17, 90  # a grid point: rows along w2, columns along w1
    w = np.array([p.xs[j], p.ys[i]])
    assert p.bn_loss[i, j] == pytest.approx(bn_loss(w, x, y, ddof, learnable), rel=1e-9)
    assert p.loss[i, j] == pytest.approx(np.sum((x @ w - y) ** 2), rel=1e-12)
    # the lemma's two sides, from their definitions
    cands = p.bn_direction[None] * np.linspace(-50 if learnable else 0, 50, 200001)[:, None]
    lhs = np.min(np.sum((w0 - cands) ** 2, 1))
    assert p.lemma_lhs == pytest.approx(lhs, rel=1e-6, abs=1e-8)
    ws = p.w_star
    rhs = np.sum((w0 - ws) ** 2) - (ws @ ws - ws @ w0) ** 2 / (ws @ ws)
    assert p.lemma_rhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("x, y, match", [
    (X[:2], Y[:2], "3 to 50 points"),
    (np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]), Y, "on a line"),
    (np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]]), Y, "on a line"),  # centred: rank 1
    (X, np.array([1.0, 1.0, 1.0]), "uncorrelated"),
    (X, np.array([1.0, np.nan, 1.0]), "finite"),
])
def test_degenerate_problems_are_refused(x, y, match):
    with pytest.raises(ValueError, match=match):
        weight_plane(x, y, [1.0, 3.0])
