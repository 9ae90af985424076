"""Luo et al.'s formulas (bnviz.papers.luo) against Monte Carlo of their definitions and the
paper's stated fixed point and learning-rate bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnviz.papers import luo


@pytest.mark.parametrize("name", sorted(luo.DISTRIBUTIONS))
def test_statistics_against_the_corrected_model(name):
    """At M = 256 the Gaussian model holds: var(mu_B) = sigma_P^2/M and var(sigma_B) =
    sigma_P^2 (rho+2)/(4M) (within 5 %, the model is first order); the printed variance,
    without sigma_P^2, is off whenever sigma_P != 1."""
    s = luo.statistics_samples(name, 256, 40_000, seed=3, device="cpu")
    mean, std, rho = luo.DISTRIBUTIONS[name]
    # the draws have the stated moments (independent numpy check of the sampler)
    assert s.mu.mean() == pytest.approx(mean, abs=4 * std / math.sqrt(256 * 40_000))
    assert s.mu.var() == pytest.approx(s.mu_var_model, rel=0.04)  # SE ~0.7 %
    assert s.sigma.var() == pytest.approx(s.sigma_var_model, rel=0.06)
    if std != 1.0:
        assert abs(s.sigma.var() / s.sigma_var_printed - 1) > 0.5
    assert s.mu_var_model == pytest.approx(std**2 / 256)
    assert s.sigma_var_model == pytest.approx(std**2 * (rho + 2) / 1024)


def test_gamma_decay_gap_scales_as_gamma_squared():
    gammas = np.array([0.25, 1.0, 3.0])
    gap = luo.gamma_decay_gap(16, gammas, batches=1 << 18, seed=1, device="cpu")
    np.testing.assert_allclose(gap / gammas**2, gap[1], rtol=1e-12)
    exact = 1 - math.sqrt(2 / 16) * math.exp(math.lgamma(8) - math.lgamma(7.5))
    assert gap[1] == pytest.approx(exact, rel=0.01)  # SE ~0.15 %
    assert gap[1] == pytest.approx(3 / 64, rel=0.03)  # leading order in 1/M


@pytest.mark.parametrize("gamma, r", [(0.7, 0.3), (1.2, -0.5), (0.4, 0.95), (1.0, 0.0)])
def test_integrals_against_monte_carlo(gamma, r):
    """I1 = <delta s>, I2 = <delta^2>, I3 = <delta t>, delta = g'(s)(g(t) - g(s)), g = ReLU,
    s ~ N(0, gamma^2), t ~ N(0, 1), cov(s, t) = gamma R."""
    rng = np.random.default_rng(7)
    n = 2_000_000
    t = rng.standard_normal(n)
    s = gamma * (r * t + math.sqrt(1 - r * r) * rng.standard_normal(n))
    delta = (s > 0) * (np.maximum(t, 0) - s)
    i1, i2, i3 = luo.integrals(gamma, r)
    for got, sample in ((i1, delta * s), (i2, delta**2), (i3, delta * t)):
        assert got == pytest.approx(sample.mean(), abs=5 * sample.std() / math.sqrt(n))
    printed = luo.integrals(gamma, r, printed_i2=True)[1]
    assert abs(printed - (delta**2).mean()) > 20 * (delta**2).std() / math.sqrt(n) or r == 1


@pytest.mark.parametrize("zeta", [0.0, 1 / 64, 0.1, 0.25])
def test_eta_max_from_the_linearised_dynamics(zeta):
    """eta_max = (d(gamma0 I3 - I1)/dR / gamma0 - zeta gamma0) / (dI2/dR / 2) at the fixed
    point (gamma0, R = 1): 2 (1 + 2 zeta) with the corrected I2, not with the printed one."""
    g0 = 1 / (1 + 2 * zeta)

    def slope(f, h=1e-7):  # one-sided: R <= 1
        return (f(1.0) - f(1.0 - h)) / h

    num = slope(lambda r: g0 * luo.integrals(g0, r)[2] - luo.integrals(g0, r)[0]) / g0 \
        - zeta * g0
    for printed, matches in ((False, True), (True, False)):
        di2 = slope(lambda r, p=printed: luo.integrals(g0, r, p)[1])
        value = num / (di2 / 2)
        # one-sided differences at R = 1, where K has a square-root edge: ~1e-4 relative
        assert bool(value == pytest.approx(luo.eta_max(zeta), rel=1e-3)) is matches


def test_dynamics_reach_the_fixed_point_gamma():
    d = luo.learning_dynamics(0.5, 0.25, t_max=200.0, dt=0.02)
    assert d.gamma[-1] == pytest.approx(d.gamma0, rel=0.02) and d.r[-1] > 0.97
    assert np.all(np.diff(d.length) >= -1e-12)  # dL/dt >= 0 (I2 >= 0)
    # the solution does not depend on the spacing of the returned samples
    fine = luo.learning_dynamics(0.5, 0.25, t_max=20.0, dt=0.005)
    coarse = luo.learning_dynamics(0.5, 0.25, t_max=20.0, dt=0.02)
    assert fine.r[-1] == pytest.approx(coarse.r[-1], abs=1e-6)


def _rk4(eta: float, zeta: float, y0, t_max: float, dt: float) -> np.ndarray:
    """Eq. 6 by a fixed-step classical RK4, written out here: (steps + 1, 3) states."""
    def rate(y):
        g, r, ell = y
        j = (np.pi * r + 2 * np.sqrt(1 - r * r) + 2 * r * np.arcsin(r)) / (4 * np.pi)
        k = (np.pi + 2 * r * np.sqrt(1 - r * r) + 2 * np.arcsin(r)) / (4 * np.pi)
        i1, i2, i3 = g * j - g * g / 2, g * g / 2 + k - 2 * g * j, k - g * r / 2
        return np.array([eta * i1 / g - eta * zeta * g,
                         eta * g * i3 / ell**2 - eta * r * i1 / ell**2
                         - eta**2 * g**2 * r * i2 / (2 * ell**4),
                         eta**2 * g**2 * i2 / (2 * ell**3)])

    y, out = np.array(y0, dtype=np.float64), [np.array(y0, dtype=np.float64)]
    for _ in range(int(round(t_max / dt))):
        a = rate(y)
        b = rate(y + dt / 2 * a)
        c = rate(y + dt / 2 * b)
        y = y + dt / 6 * (a + 2 * b + 2 * c + rate(y + dt * c))
        y[1] = min(y[1], 1.0)
        out.append(y)
    return np.array(out)


@pytest.mark.parametrize("eta, zeta", [(0.5, 0.25), (2.0, 0.1), (6.0, 0.25)])
def test_dynamics_agree_with_a_fixed_step_rk4(eta, zeta):
    """The adaptive solver against RK4 at dt = 0.005 (global error ~dt^4), at every sample."""
    d = luo.learning_dynamics(eta, zeta, t_max=10.0, dt=0.005)
    ref = _rk4(eta, zeta, (0.5, 0.1, 1.0), 10.0, 0.005)
    np.testing.assert_allclose(np.stack([d.gamma, d.r, d.length], 1), ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(d.t, np.arange(len(ref)) * 0.005, rtol=1e-15)


@pytest.mark.parametrize("kwargs, says", [
    (dict(eta=0.0, zeta=0.1), "eta"), (dict(eta=1.0, zeta=-1.0), "zeta"),
    (dict(eta=1.0, zeta=0.1, r_init=2.0), "R"), (dict(eta=float("nan"), zeta=0.1), "eta"),
    (dict(eta=1.0, zeta=0.1, t_max=1000.0, dt=1e-4), "time step"),
])
def test_dynamics_settings_checked(kwargs, says):
    with pytest.raises(ValueError, match=says):
        luo.learning_dynamics(**kwargs)


@pytest.mark.parametrize("args, says", [
    (("cauchy", 16), "distribution"), (("gaussian", 1), "batch size"),
    (("gaussian", 4096, 200_000), "samples"),
])
def test_statistics_settings_checked(args, says):
    with pytest.raises(ValueError, match=says):
        luo.statistics_samples(*args, device="cpu")


def test_bn_and_population_normalisation_with_the_whole_data_as_batch():
    """With M = n BN's forward pass is PN's (the batch statistics are the population's); the
    two differ only in BN's gradient through its statistics, so their test-time boundaries
    nearly coincide. Gamma decay shrinks gamma, and every arm learns the moons."""
    r = luo.compare_normalisations(batch_size=64, n=64, steps=200, depth=2, width=8,
                                   device="cpu")
    assert np.mean(r.decision["bn"] == r.decision["pn"]) > 0.9
    assert r.gamma_sq["pn_decay"] < r.gamma_sq["pn"]
    assert r.zeta == pytest.approx(3 / 256)
    for arm in luo.NORMALISATIONS:
        assert r.train_accuracy[arm] >= 0.8 and 0 <= r.test_accuracy[arm] <= 1
        assert r.decision[arm].shape == r.patterns[arm].shape == (96, 96)
        assert len(np.unique(r.patterns[arm])) > 4  # a partition, not one region


@pytest.mark.parametrize("kwargs", [dict(batch_size=2), dict(batch_size=300, n=200),
                                    dict(depth=0), dict(lr=0.0), dict(steps=5)])
def test_normalisation_settings_checked(kwargs):
    with pytest.raises(ValueError):
        luo.compare_normalisations(**kwargs)
