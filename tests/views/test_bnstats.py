"""Tests of the BN statistics as random variables (bnviz.views.bnmoments, the closed forms;
bnviz.views.bnsampling, the Monte Carlo; bnviz.views.bnstats, the Figure 7 report, which compares
the two): Proposition 2 (BN paper eq. 13) against Monte Carlo, the exact
finite-population moments, noise-controlled BN, the Figure 7 report, mini-batch sampling
without replacement and Luo et al.'s Gaussian model (with the corrections of docs/conventions.md).

Monte Carlo tolerances are sampling errors: a mean of S iid values is compared within
Z standard errors sqrt(var/S); a variance estimate within Z * sqrt((m4 - m2^2)/S), with the
m2, m4 of the sampled values themselves (this holds for skewed, heavy-tailed sigma^2 as well
as for Gaussian-ish values, where it is ~ var * sqrt(2/S)). Seeds are fixed.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import torch

from bnviz.views.bnmoments import (
    analytical_moments,
    finite_population_moments,
    luo_moments,
    unit_moments,
)
from bnviz.views.bnsampling import (
    MAX_ELEMENTS,
    noise_controlled,
    sample_batch_indices,
    sample_batch_statistics,
)
from bnviz.views.bnstats import MomentReport, figure7_report, figure7_samples

Z = 5.0  # standard errors allowed for a Monte Carlo estimate

# Distributions of u with exact (mean, variance, 4th central moment) and a numpy sampler.
DISTRIBUTIONS = {
    "normal": ((1.5, 2.0, 3.0 * 2.0**2), lambda rng, size: rng.normal(1.5, math.sqrt(2.0), size)),
    # Exponential(scale 2): var = 4, phi^4 = 9 * scale^4 = 144 (excess kurtosis 6).
    "exponential": ((2.0, 4.0, 144.0), lambda rng, size: rng.exponential(2.0, size)),
    # Uniform(-1, 3): var = 4^2/12, phi^4 = 4^4/80 (excess kurtosis -1.2).
    "uniform": ((1.0, 16.0 / 12.0, 256.0 / 80.0), lambda rng, size: rng.uniform(-1.0, 3.0, size)),
}


def mean_se(x: np.ndarray) -> float:
    return float(np.sqrt(np.var(x) / x.size))


def var_se(x: np.ndarray) -> float:
    c = x - x.mean()
    m2 = np.mean(c**2)
    return float(np.sqrt((np.mean(c**4) - m2**2) / x.size))


def assert_mean(x: np.ndarray, expected: float, what: str) -> None:
    err = abs(float(x.mean()) - expected)
    assert err <= Z * mean_se(x), (
        f"{what}: mean {x.mean()} vs {expected} ({err / mean_se(x):.1f} SE)"
    )


def assert_var(x: np.ndarray, expected: float, what: str) -> None:
    got = float(np.var(x, ddof=1))
    err = abs(got - expected)
    assert err <= Z * var_se(x), f"{what}: var {got} vs {expected} ({err / var_se(x):.1f} SE)"


def iid_batches(name: str, batch: int, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """mu and biased sigma^2 of `samples` fresh iid batches (not from a finite set)."""
    _, draw = DISTRIBUTIONS[name]
    x = draw(np.random.default_rng(seed), (samples, batch))
    return x.mean(axis=1), x.var(axis=1)  # numpy var: ddof = 0, the biased variance


def gen(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


# --------------------------------------------------------------------------- 1. Proposition 2


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
@pytest.mark.parametrize("batch", [4, 16, 64])
def test_proposition2_matches_iid_monte_carlo(name: str, batch: int) -> None:
    (m, s2, m4), _ = DISTRIBUTIONS[name]
    mu, sigma2 = iid_batches(name, batch, samples=40_000, seed=batch)
    ana = analytical_moments(m, s2, m4, batch)
    assert ana["mu_var"] == pytest.approx(s2 / batch)
    assert ana["sigma2_mean"] == pytest.approx((batch - 1) / batch * s2)
    assert_mean(mu, ana["mu_mean"], f"{name} B={batch} E[mu]")
    assert_var(mu, ana["mu_var"], f"{name} B={batch} var(mu)")
    assert_mean(sigma2, ana["sigma2_mean"], f"{name} B={batch} E[sigma^2]")
    assert_var(sigma2, ana["sigma2_var"], f"{name} B={batch} var(sigma^2)")


def test_eq13_as_printed_is_the_unbiased_variance_not_bns() -> None:
    """Eq. 13 as printed is var(S^2) (unbiased); BN's biased sigma^2 is ((B-1)/B)^2 of it."""
    (m, s2, m4), _ = DISTRIBUTIONS["normal"]
    batch = 4
    printed = (m4 - s2**2 * (batch - 3) / (batch - 1)) / batch
    mu, sigma2 = iid_batches("normal", batch, samples=40_000, seed=7)
    got = float(np.var(sigma2, ddof=1))
    assert abs(got - printed) > 20 * var_se(sigma2)  # clearly not the printed value for BN
    unbiased = sigma2 * batch / (batch - 1)
    assert_var(unbiased, printed, "printed eq. 13 vs unbiased S^2")
    assert analytical_moments(m, s2, m4, batch)["sigma2_var"] == pytest.approx(
        ((batch - 1) / batch) ** 2 * printed
    )


def test_unit_moments_exact() -> None:
    u = np.array([1.0, 2.0, 3.0, 6.0])
    mean, var, m4 = unit_moments(u)
    c = u - 3.0
    assert (mean, var, m4) == pytest.approx((3.0, np.mean(c**2), np.mean(c**4)))
    with pytest.raises(ValueError, match="1-D"):
        unit_moments(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        unit_moments(np.array([1.0, np.nan]))


# --------------------------------------------------------------------------- 2. finite set


@pytest.mark.parametrize("batch", [2, 3, 4, 6, 8])
def test_finite_population_moments_equal_exhaustive_enumeration(batch: int) -> None:
    """Every subset of a small training set: the exact moments, not a Monte Carlo."""
    y = np.random.default_rng(3).exponential(size=8) ** 2  # skewed, non-Gaussian values
    combos = np.array(list(itertools.combinations(range(y.size), batch)))
    mu, sigma2 = y[combos].mean(axis=1), y[combos].var(axis=1)
    fin = finite_population_moments(*unit_moments(y), train_size=y.size, batch_size=batch)
    scale = np.var(y) ** 2
    assert fin["mu_mean"] == pytest.approx(mu.mean(), abs=1e-12)
    assert fin["mu_var"] == pytest.approx(mu.var(), rel=1e-10, abs=1e-14)
    assert fin["sigma2_mean"] == pytest.approx(sigma2.mean(), rel=1e-12)
    assert fin["sigma2_var"] == pytest.approx(sigma2.var(), rel=1e-9, abs=1e-12 * scale)


def test_finite_population_tends_to_iid() -> None:
    (m, s2, m4), _ = DISTRIBUTIONS["exponential"]
    fin = finite_population_moments(m, s2, m4, train_size=10**8, batch_size=16)
    ana = analytical_moments(m, s2, m4, 16)
    for key in ana:
        assert fin[key] == pytest.approx(ana[key], rel=1e-6)


@pytest.mark.parametrize("batch", [30, 80])  # 30: rejection sampler, 80: random-key sampler
def test_without_replacement_matches_finite_population(batch: int) -> None:
    n = 100
    train = np.random.default_rng(11).exponential(size=(n, 1))
    mu, sigma2 = sample_batch_statistics(torch.from_numpy(train), batch, 30_000, gen(batch))
    mu, sigma2 = mu[:, 0].numpy(), sigma2[:, 0].numpy()
    moments = unit_moments(train[:, 0])
    fin = finite_population_moments(*moments, train_size=n, batch_size=batch)
    assert_mean(mu, fin["mu_mean"], "E[mu]")
    assert_var(mu, fin["mu_var"], "var(mu) finite population")
    assert_mean(sigma2, fin["sigma2_mean"], "E[sigma^2]")
    assert_var(sigma2, fin["sigma2_var"], "var(sigma^2) finite population")
    # The iid value s^2/B is measurably wrong here (factor (N-B)/(N-1) = 0.71 or 0.20).
    iid = analytical_moments(*moments, batch)
    assert abs(float(np.var(mu, ddof=1)) - iid["mu_var"]) > 20 * var_se(mu)
    assert abs(float(np.var(sigma2, ddof=1)) - iid["sigma2_var"]) > 20 * var_se(sigma2)


# --------------------------------------------------------------------------- 3. noise control


@pytest.mark.parametrize("name", ["normal", "exponential"])
def test_noise_controlled_iid_matches_virtual_batch(name: str) -> None:
    (m, s2, m4), _ = DISTRIBUTIONS[name]
    batch, virtual = 64, 16
    mu, sigma2 = iid_batches(name, batch, samples=40_000, seed=21)
    mu_n, sigma2_n = noise_controlled(
        torch.from_numpy(mu), torch.from_numpy(sigma2), batch, virtual, s2, m4, gen(5)
    )
    mu_n, sigma2_n = mu_n.numpy(), sigma2_n.numpy()
    real, virt = analytical_moments(m, s2, m4, batch), analytical_moments(m, s2, m4, virtual)
    assert_mean(mu_n, m, "E[mu']")
    assert_var(mu_n, s2 / virtual, "var(mu') = s^2/B'")
    assert_mean(sigma2_n, real["sigma2_mean"], "E[sigma'^2] = E_B (the real batch's mean)")
    assert_var(sigma2_n, virt["sigma2_var"], "var(sigma'^2) = V_B'")
    # and the noise did something measurable
    assert float(np.var(sigma2_n)) > 3.0 * float(np.var(sigma2))


def test_noise_controlled_finite_population_matches_virtual_batch() -> None:
    n, batch, virtual = 300, 64, 16
    train = torch.from_numpy(np.random.default_rng(4).exponential(size=(n, 2)) * [1.0, 3.0])
    mu, sigma2 = sample_batch_statistics(train, batch, 30_000, gen(8))
    t_mean = train.mean(0)
    t_var, t_m4 = (train - t_mean).pow(2).mean(0), (train - t_mean).pow(4).mean(0)
    mu_n, sigma2_n = noise_controlled(
        mu, sigma2, batch, virtual, t_var, t_m4, gen(9), population_size=n
    )
    for j in range(2):
        fin_b = finite_population_moments(*unit_moments(train[:, j].numpy()), n, batch)
        fin_v = finite_population_moments(*unit_moments(train[:, j].numpy()), n, virtual)
        assert_var(mu_n[:, j].numpy(), fin_v["mu_var"], f"unit {j} var(mu') finite")
        assert_mean(sigma2_n[:, j].numpy(), fin_b["sigma2_mean"], f"unit {j} E[sigma'^2]")
        assert_var(sigma2_n[:, j].numpy(), fin_v["sigma2_var"], f"unit {j} var(sigma'^2)")


def test_noise_controlled_no_extra_noise_and_shapes() -> None:
    mu = torch.randn(5, 7, 3, generator=gen(0), dtype=torch.float64)
    sigma2 = torch.rand(5, 7, 3, generator=gen(1), dtype=torch.float64) + 0.5
    for virtual in (32, 40):  # B' = B and B' > B: the inputs, untouched
        out = noise_controlled(mu, sigma2, 32, virtual, 1.0, 3.0, gen(2))
        assert out[0] is mu and out[1] is sigma2
    s2 = torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64)  # a constant unit gets no noise
    mu_n, sigma2_n = noise_controlled(mu, sigma2, 32, 8, s2, 3 * s2**2, gen(3))
    assert mu_n.shape == sigma2_n.shape == mu.shape
    assert torch.equal(mu_n[..., 2], mu[..., 2]) and torch.equal(sigma2_n[..., 2], sigma2[..., 2])
    assert not torch.equal(mu_n[..., :2], mu[..., :2])
    assert bool((sigma2_n > 0).all())
    again = noise_controlled(mu, sigma2, 32, 8, s2, 3 * s2**2, gen(3))
    assert torch.equal(again[0], mu_n) and torch.equal(again[1], sigma2_n)
    with pytest.raises(ValueError, match="virtual_batch_size"):
        noise_controlled(mu, sigma2, 32, 1, 1.0, 3.0, gen(0))
    with pytest.raises(ValueError, match="pop_var"):
        noise_controlled(mu, sigma2, 32, 8, torch.ones(2), 3.0, gen(0))


@pytest.mark.parametrize("shape", [0.3, 2.5, 32.0])
def test_standard_gamma_sampler(shape: float) -> None:
    """The generator-driven Gamma sampler behind chi2_k/k: mean = var = shape."""
    from bnviz.views.bnsampling import _standard_gamma

    x = _standard_gamma(torch.full((60_000,), shape, dtype=torch.float64), gen(13)).numpy()
    assert x.min() > 0
    assert_mean(x, shape, f"Gamma({shape}) mean")
    assert_var(x, shape, f"Gamma({shape}) var")


# --------------------------------------------------------------------------- 4. Figure 7


def test_figure7_report_structure_and_paper_numbers() -> None:
    report = figure7_report()
    assert json.loads(json.dumps(report)) == report
    assert {k: report[k] for k in ("batch_size", "train_size", "samples")} == {
        "batch_size": 64,
        "train_size": 1000,
        "samples": 2000,
    }
    assert (report["virtual_batch_size"], report["data_seed"], report["batch_seed"]) == (32, 0, 0)
    keys = {
        "empirical_mean",
        "empirical_var",
        "analytical_mean",
        "analytical_var",
        "noise_controlled_var",
        "finite_population_var",
    }
    assert len(report["units"]) == 3
    for unit, (m, s2) in zip(report["units"], [(1, 1), (0, 3), (-1, 0.1)], strict=True):
        assert set(unit) == {"mean", "var", "mu", "sigma2", "luo"}
        assert set(unit["mu"]) == keys and set(unit["sigma2"]) == keys
        assert (unit["mean"], unit["var"]) == (m, s2)
        assert unit["mu"]["analytical_mean"] == m
        assert unit["mu"]["analytical_var"] == pytest.approx(s2 / 64)  # 1/64, 3/64, 0.1/64
        assert unit["sigma2"]["analytical_mean"] == pytest.approx(63 / 64 * s2)
        assert unit["sigma2"]["analytical_var"] == pytest.approx(
            (63 / 64) ** 2 / 64 * (3 - 61 / 63) * s2**2
        )
        assert unit["luo"] == pytest.approx(
            {"mu_mean": m, "mu_var": s2 / 64, "sigma_mean": math.sqrt(s2), "sigma_var": s2 / 128}
        )
        # finite-population correction (N - B)/(N - 1) = 936/999 for mu
        assert unit["mu"]["finite_population_var"] == pytest.approx(s2 / 64 * 936 / 999, rel=0.2)
        # noise control doubles var(mu) (B' = B/2), loosely s^2/32 (training-set wobble incl.)
        assert unit["mu"]["noise_controlled_var"] == pytest.approx(s2 / 32, rel=0.25)
        ratio = unit["sigma2"]["noise_controlled_var"] / unit["sigma2"]["empirical_var"]
        assert 1.5 < ratio < 2.6


def test_figure7_deterministic_and_consistent_with_samples() -> None:
    kwargs = {"samples": 500, "train_size": 200, "batch_size": 16, "virtual_batch_size": 4}
    a = figure7_report(data_seed=3, batch_seed=5, **kwargs)
    assert figure7_report(data_seed=3, batch_seed=5, **kwargs) == a
    samples = figure7_samples(data_seed=3, batch_seed=5, **kwargs)
    assert samples["train"].shape == (200, 3)
    for key in ("mu", "sigma2", "mu_noise", "sigma2_noise"):
        assert samples[key].shape == (500, 3) and samples[key].dtype == np.float64
    for j, unit in enumerate(a["units"]):
        assert unit["mu"]["empirical_mean"] == pytest.approx(samples["mu"][:, j].mean())
        assert unit["mu"]["empirical_var"] == pytest.approx(np.var(samples["mu"][:, j], ddof=1))
        assert unit["sigma2"]["noise_controlled_var"] == pytest.approx(
            np.var(samples["sigma2_noise"][:, j], ddof=1)
        )
        fin = finite_population_moments(*unit_moments(samples["train"][:, j]), 200, 16)
        assert unit["mu"]["finite_population_var"] == pytest.approx(fin["mu_var"])
        assert unit["sigma2"]["finite_population_var"] == pytest.approx(fin["sigma2_var"])


def test_figure7_monte_carlo_matches_finite_population_and_virtual_batch() -> None:
    n, s = 1000, 20_000
    out = figure7_samples(samples=s, data_seed=1, batch_seed=1)
    for j in range(3):
        moments = unit_moments(out["train"][:, j])
        fin64 = finite_population_moments(*moments, n, 64)
        fin32 = finite_population_moments(*moments, n, 32)
        assert_var(out["mu"][:, j], fin64["mu_var"], f"unit {j} var(mu)")
        assert_var(out["sigma2"][:, j], fin64["sigma2_var"], f"unit {j} var(sigma^2)")
        assert_var(out["mu_noise"][:, j], fin32["mu_var"], f"unit {j} var(mu') at B'=32")
        assert_var(out["sigma2_noise"][:, j], fin32["sigma2_var"], f"unit {j} var(sigma'^2)")
        assert_mean(out["sigma2_noise"][:, j], fin64["sigma2_mean"], f"unit {j} E[sigma'^2]")


def test_moment_report_dict() -> None:
    r = MomentReport(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, None)
    assert r.to_dict() == {
        "empirical_mean": 1.0,
        "empirical_var": 2.0,
        "analytical_mean": 3.0,
        "analytical_var": 4.0,
        "noise_controlled_var": 6.0,
        "finite_population_var": None,
    }


# --------------------------------------------------------------------------- 5. sampling


@pytest.mark.parametrize(("n", "batch"), [(50, 7), (50, 15), (50, 16), (50, 50), (9, 2)])
def test_batches_are_without_replacement_and_statistics_match_numpy(n: int, batch: int) -> None:
    u = np.random.default_rng(n + batch).normal(size=(n, 3)) * [1.0, 5.0, 0.1]
    mu, sigma2, idx = sample_batch_statistics(
        torch.from_numpy(u), batch, 400, gen(batch), return_indices=True
    )
    idx = idx.numpy()
    assert idx.shape == (400, batch) and idx.min() >= 0 and idx.max() < n
    assert (np.diff(idx, axis=1) > 0).all()  # sorted and no repeated row within a batch
    ref = u[idx]  # (S, B, 3) with numpy
    np.testing.assert_allclose(mu.numpy(), ref.mean(axis=1), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sigma2.numpy(), ref.var(axis=1), rtol=1e-11, atol=1e-14)
    again = sample_batch_statistics(torch.from_numpy(u), batch, 400, gen(batch))
    assert torch.equal(again[0], mu) and torch.equal(again[1], sigma2)


@pytest.mark.parametrize("batch", [2, 3])  # 2: rejection path (B <= 0.3 N), 3: random keys
def test_batches_are_uniform_subsets(batch: int) -> None:
    n, s = 7, 60_000
    idx = sample_batch_indices(n, batch, s, gen(17)).numpy()
    subsets = list(itertools.combinations(range(n), batch))
    code = {c: i for i, c in enumerate(subsets)}
    counts = np.bincount([code[tuple(r)] for r in idx], minlength=len(subsets))
    p = 1.0 / len(subsets)
    sd = math.sqrt(s * p * (1 - p))
    assert np.abs(counts - s * p).max() < Z * sd, counts


def test_sampling_large_batches_chunked() -> None:
    """More rows than one memory chunk: still without replacement, deterministic."""
    idx = sample_batch_indices(2000, 1500, 3000, gen(0))
    assert idx.shape == (3000, 1500)
    assert bool((idx.diff(dim=1) > 0).all())
    assert torch.equal(idx, sample_batch_indices(2000, 1500, 3000, gen(0)))


# --------------------------------------------------------------------------- 6. Luo et al.


def test_luo_mu_part_is_proposition2() -> None:
    for name, ((m, s2, m4), _) in DISTRIBUTIONS.items():
        luo, ana = luo_moments(m, s2, m4, 32), analytical_moments(m, s2, m4, 32)
        assert (luo["mu_mean"], luo["mu_var"]) == (ana["mu_mean"], ana["mu_var"]), name
        assert luo["sigma_mean"] == pytest.approx(math.sqrt(s2))


@pytest.mark.parametrize("name", ["normal", "uniform"])
def test_luo_sigma_model_matches_monte_carlo_for_large_batches(name: str) -> None:
    """sigma_B (the std) for M = 256: the corrected model (sigma_P^2 factor, excess kurtosis)
    within its own O(1/M) accuracy plus sampling error; the formula as printed is far off.

    Tolerances: mean within sigma_P / M (the model drops E[sigma_B] - sigma_P ~ -3/(4M)
    sigma_P for Gaussian u) + Z SE; variance within relative 3/M + Z SE.
    """
    (m, s2, m4), _ = DISTRIBUTIONS[name]
    batch = 256
    _, sigma2 = iid_batches(name, batch, samples=20_000, seed=99)
    sigma = np.sqrt(sigma2)
    luo = luo_moments(m, s2, m4, batch)
    assert abs(sigma.mean() - luo["sigma_mean"]) <= math.sqrt(s2) / batch + Z * mean_se(sigma)
    got = float(np.var(sigma, ddof=1))
    assert abs(got - luo["sigma_var"]) <= 3.0 / batch * luo["sigma_var"] + Z * var_se(sigma)
    printed = luo_moments(m, s2, m4, batch, as_printed=True)["sigma_var"]
    assert abs(got - printed) > 20 * var_se(sigma)


def test_luo_corrections_documented_values() -> None:
    # Gaussian, sigma_P^2 = 4: corrected 4 * 2/(4M); printed (3 + 2)/(4M)
    assert luo_moments(0.0, 4.0, 48.0, 10)["sigma_var"] == pytest.approx(0.2)
    assert luo_moments(0.0, 4.0, 48.0, 10, as_printed=True)["sigma_var"] == pytest.approx(0.125)
    with pytest.raises(ValueError, match="s2"):
        luo_moments(0.0, 0.0, 0.0, 10)


# --------------------------------------------------------------------------- 7. validation


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 1}, "batch_size"),
        ({"batch_size": 1001}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"batch_size": True}, "batch_size"),
        ({"train_size": 1}, "train_size"),
        ({"train_size": 100_001}, "train_size"),
        ({"train_size": 50}, "batch_size"),  # default batch 64 > 50
        ({"samples": 9}, "samples"),
        ({"samples": 200_001}, "samples"),
        ({"virtual_batch_size": 1}, "virtual_batch_size"),
        ({"virtual_batch_size": 65}, "virtual_batch_size"),
        ({"data_seed": -1}, "data_seed"),
        ({"batch_seed": -1}, "batch_seed"),
        ({"samples": 200_000, "batch_size": 251}, "^samples x batch size is 50200000, over "),
        ({"means": (1.0, 2.0)}, "^variances: enter one variance per mean \\(2\\), got 3$"),
        ({"means": ()}, "^means: enter 1 to 16 numbers"),
        ({"means": "1,2,3"}, "^means: enter 1 to 16 numbers"),
        ({"batch_size": "64"}, "^batch_size: enter a whole number"),
        ({"variances": (1.0, -3.0, 0.1)}, "variances"),
        ({"variances": (1.0, 0.0, 0.1)}, "variances"),
        ({"means": (1.0, float("nan"), 0.0)}, "means"),
        ({"means": "abc"}, "means"),
    ],
)
def test_bad_parameters_raise_clear_value_errors(kwargs: dict, match: str) -> None:
    for fn in (figure7_report, figure7_samples):
        with pytest.raises(ValueError, match=match) as info:
            fn(**kwargs)
        assert "\n" not in str(info.value)


def test_low_level_validation() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        analytical_moments(0.0, 1.0, 3.0, 1)
    with pytest.raises(ValueError, match="m4"):
        analytical_moments(0.0, 2.0, 1.0, 8)  # m4 < s2^2 is impossible
    with pytest.raises(ValueError, match="batch_size"):
        finite_population_moments(0.0, 1.0, 3.0, 10, 11)
    with pytest.raises(ValueError, match="2-D"):
        sample_batch_statistics(torch.zeros(10), 2, 10, gen(0))
    with pytest.raises(ValueError, match="batch_size"):
        sample_batch_statistics(torch.zeros(10, 1), 11, 10, gen(0))
    with pytest.raises(ValueError, match="samples"):
        sample_batch_statistics(torch.zeros(100_000, 1), 1000, MAX_ELEMENTS // 1000 + 1, gen(0))
