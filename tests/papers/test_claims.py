"""Tests of the claims engine (bnviz/papers/claims.py: the table; claim.py; checks_*.py: each
paper's checks) and ``python -m bnviz claims``.

Every claim's computed value is checked here against an INDEPENDENT computation written in this
file (numpy/scipy or a hand-written torch/Fraction derivation, never the bnviz helper that
produced it): scipy minimisation against the TLS closed form, sign patterns on a circle against
the partition engine's region count, numpy Monte Carlo with other seeds against the claims' own
Monte Carlo, finite differences and exact fractions against autograd.  Each tolerance is stated
next to its assertion.

The claims are computed once (module fixture, on the CPU) and the real CLI runs once in a
subprocess, so the file takes about 15 s on an idle 2-core machine.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from bnviz.cli import main
from bnviz.core.network import random_network
from bnviz.data.datasets import make_dataset
from bnviz.papers.checks_santurkar import dannemann_example
from bnviz.papers.claim import PAPERS, Claim
from bnviz.papers.claims import claim_ids, run_claims
from bnviz.papers.dannemann import bn_loss

REPO = Path(__file__).resolve().parents[2]

REQUIRED = ("bn-thm1-tls-minimiser", "bn-cor2-central-arrangement", "bn-prop2-variance",
            "dannemann-gradient", "santurkar-thm41", "luo-gamma-decay-gap",
            "luo-sgd-generalisation")
MUST_FAIL = ("santurkar-thm41-as-printed", "dannemann-lemma45",
             "luo-sigma-b-variance-as-printed", "luo-i2-as-printed")
ALSO_HOLD = ("ergen-closed-form",)
JSON_KEYS = {"id", "paper", "statement", "statement_tex", "paper_value", "computed",
             "holds", "how", "view"}
#: Claims without randomness: the CLI must reproduce the in-process values.
DETERMINISTIC = ("bn-thm1-tls-minimiser", "bn-cor2-central-arrangement", "dannemann-gradient",
                 "dannemann-lemma45", "santurkar-thm41", "santurkar-thm41-as-printed")


@pytest.fixture(scope="module")
def claims() -> dict[str, Claim]:
    """Every claim, computed once on the CPU, by id."""
    result = run_claims(device="cpu")
    return {c.id: c for c in result}


def _reject_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name}")


def _flatten(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [v for key in sorted(value) for v in _flatten(value[key])]
    if isinstance(value, list | tuple):
        return [v for item in value for v in _flatten(item)]
    return [float(value)]


# ------------------------------------------------------------------ 1. JSON, CLI, text output


def test_cli_json_lists_every_claim_with_the_documented_keys(claims: dict[str, Claim]) -> None:
    proc = subprocess.run([sys.executable, "-m", "bnviz", "claims", "--json"], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout, parse_constant=_reject_constant)  # strict JSON: no NaN
    assert list(doc) == ["claims"]
    items = doc["claims"]
    ids = [item["id"] for item in items]
    assert ids == claim_ids()  # the documented order, each id once
    assert len(set(ids)) == len(ids)
    for required in REQUIRED + MUST_FAIL:
        assert required in ids
    for item in items:
        assert set(item) == JSON_KEYS, item["id"]
        assert isinstance(item["holds"], bool)
        assert item["paper"] in PAPERS.values()
        assert item["statement"] and item["how"] and item["view"].startswith("/")
        assert item["statement_tex"] == claims[item["id"]].statement_tex
    by_id = {item["id"]: item for item in items}
    for cid, claim in claims.items():
        assert by_id[cid]["holds"] == claim.holds, cid
    # The deterministic claims give the in-process values (rel 1e-9: allows another device).
    for cid in DETERMINISTIC:
        cli_values = _flatten(by_id[cid]["computed"]) + _flatten(by_id[cid]["paper_value"])
        ref = _flatten(claims[cid].computed) + _flatten(claims[cid].paper_value)
        assert cli_values == pytest.approx(ref, rel=1e-9, abs=1e-12), cid


def test_cli_unknown_id_is_one_error_line(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    capsysbinary.readouterr()
    rc = main(["claims", "--id", "unknown"])
    out, err = capsysbinary.readouterr()
    assert rc == 2
    assert out == b""
    lines = err.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("bnviz: error: unknown claim 'unknown'")
    assert "Traceback" not in err.decode()


def test_cli_text_output_lists_every_id_with_holds_or_fails(
        claims: dict[str, Claim], capsysbinary: pytest.CaptureFixture[bytes],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The table of all claims; the (already computed) claims stand in for run_claims so the
    formatting is tested without computing everything a third time."""
    calls = []

    def fake_run_claims(ids=None, device=None, progress=None):
        calls.append(ids)
        return [claims[i] for i in claim_ids()]

    monkeypatch.setattr("bnviz.papers.claims.run_claims", fake_run_claims)
    capsysbinary.readouterr()
    assert main(["claims"]) == 0
    out = capsysbinary.readouterr().out.decode()
    assert calls == [None]
    assert not out.lstrip().startswith("{")  # a table, not JSON
    heads = [line for line in out.splitlines() if line.startswith(("holds  ", "FAILS  "))]
    assert len(heads) == len(claim_ids())
    for head, cid in zip(heads, claim_ids(), strict=True):
        status = "holds" if claims[cid].holds else "FAILS"
        assert head.startswith(f"{status}  {cid}  ("), head
    assert out.count("paper: ") == len(claim_ids())
    assert out.count("computed: ") == len(claim_ids())


def test_cli_text_and_json_with_id_filter_run_only_those(
        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """Real (cheap) claims through the CLI: --id selects, in the order given."""
    capsysbinary.readouterr()
    rc = main(["claims", "--id", "santurkar-thm41-as-printed", "--id", "dannemann-gradient",
               "--device", "cpu"])
    out = capsysbinary.readouterr().out.decode()
    assert rc == 0
    heads = [line for line in out.splitlines() if line.startswith(("holds", "FAILS"))]
    assert heads[0].startswith("FAILS  santurkar-thm41-as-printed  (")
    assert heads[1].startswith("holds  dannemann-gradient  (")
    assert len(heads) == 2
    rc = main(["claims", "--json", "--id", "santurkar-thm41", "--device", "cpu"])
    doc = json.loads(capsysbinary.readouterr().out)
    assert rc == 0
    assert [c["id"] for c in doc["claims"]] == ["santurkar-thm41"]


def test_run_claims_selects_and_rejects() -> None:
    assert [c.id for c in run_claims(["dannemann-gradient"], device="cpu")] == [
        "dannemann-gradient"]
    with pytest.raises(ValueError, match="unknown claim 'nope'"):
        run_claims(["dannemann-gradient", "nope"], device="cpu")


# ------------------------------------------------------------------ 2. Theorem 1 (TLS)


def _tls(mu: np.ndarray, z: np.ndarray, w: np.ndarray) -> float:
    """Eq. 9 written from eq. 7: sum_k mean_B (<w_k, z> - mu_k)^2 / ||w_k||^2."""
    return float((((z @ w.T - mu) / np.linalg.norm(w, axis=1)) ** 2).mean(0).sum())


def _tls_grad(mu: np.ndarray, z: np.ndarray, w: np.ndarray) -> np.ndarray:
    return -2 * (z @ w.T - mu).mean(0) / np.linalg.norm(w, axis=1) ** 2


def _scipy_tls_argmin(z: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    res = minimize(_tls, np.zeros(w.shape[0]), args=(z, w), jac=_tls_grad, method="BFGS",
                   options={"gtol": 1e-13})
    return res.x, float(res.fun)


def _biased_and_unbiased_minimum(z: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    u, n2 = z @ w.T, np.linalg.norm(w, axis=1) ** 2
    return float((u.var(0, ddof=0) / n2).sum()), float((u.var(0, ddof=1) / n2).sum())


def test_thm1_tls_minimiser_on_fresh_random_batches() -> None:
    """The theorem itself, on data of this test's own (numpy seed 5): scipy's argmin of eq. 9 is
    the batch mean and the minimum uses the BIASED variance."""
    rng = np.random.default_rng(5)
    for units, dim, batch in ((4, 2, 16), (7, 5, 40)):
        w = rng.standard_normal((units, dim)) * rng.uniform(0.3, 3.0, (units, 1))
        z = rng.standard_normal((batch, dim)) * rng.uniform(0.5, 2, dim) + rng.normal(0, 2, dim)
        argmin, minimum = _scipy_tls_argmin(z, w)
        biased, unbiased = _biased_and_unbiased_minimum(z, w)
        # BFGS stops on precision loss <= ~3e-8 from the argmin (a wrong centre, e.g. the median,
        # is ~0.1 away); the value is flat there: 1e-12 relative
        assert np.allclose(argmin, (z @ w.T).mean(0), rtol=0, atol=1e-6)
        assert minimum == pytest.approx(biased, rel=1e-12)
        assert unbiased / biased == pytest.approx(batch / (batch - 1), rel=1e-12)
        assert abs(minimum - unbiased) > 0.5 * (unbiased - biased)  # distinguishes conventions


def test_thm1_claim_matches_scipy_on_its_setup(claims: dict[str, Claim]) -> None:
    """The claim's setup (torch seed 0: W 5x3, a batch of 32 in R^3, as its docstring says),
    regenerated with the same torch calls; everything after that in numpy/scipy."""
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(5, 3, generator=gen, dtype=torch.float64).numpy()
    z = (torch.randn(32, 3, generator=gen, dtype=torch.float64).numpy() * [1.0, 2.0, 0.5]
         + [0.3, -1.0, 2.0])
    claim = claims["bn-thm1-tls-minimiser"]
    argmin, minimum = _scipy_tls_argmin(z, w)
    biased, unbiased = _biased_and_unbiased_minimum(z, w)
    # paper side: the batch mean and the biased-sigma sum (1e-12 relative: the same sums)
    assert np.allclose(claim.paper_value["argmin"], (z @ w.T).mean(0), rtol=1e-12, atol=1e-12)
    assert claim.paper_value["minimum"] == pytest.approx(biased, rel=1e-12)
    # computed side: scipy's independent minimiser (BFGS: <= ~3e-8 on the argmin, see above)
    assert np.allclose(claim.computed["argmin"], argmin, rtol=0, atol=1e-6)
    assert claim.computed["minimum"] == pytest.approx(minimum, rel=1e-12)
    # with the unbiased variance the minimum would be off by |B|/(|B|-1) = 32/31 (3.2 %)
    assert unbiased / biased == pytest.approx(32 / 31, rel=1e-12)
    assert claim.computed["minimum"] != pytest.approx(unbiased, rel=0.01)
    assert claim.holds


# ------------------------------------------------------------------ 3. Corollary 2


def _circle_patterns(w: np.ndarray, mu: np.ndarray, centre: np.ndarray, radius: float,
                     samples: int) -> np.ndarray:
    t = np.linspace(0.0, 2 * np.pi, samples, endpoint=False)
    pts = centre + radius * np.stack([np.cos(t), np.sin(t)], 1)
    return (pts @ w.T - mu) > 0  # sign of the BN pre-activation (sigma > 0 keeps the sign)


def test_cor2_region_count_by_sign_patterns(claims: dict[str, Claim]) -> None:
    """Independent count: the activation patterns on a fine circle around the batch centroid
    (every layer-1 line passes through it, so every region is a cone that meets the circle), and
    on a dense grid of the box (which finds no region the circle missed)."""
    claim = claims["bn-cor2-central-arrangement"]
    widths, names = (3, 6, 11, 24), ("moons", "circles", "blobs", "spiral")
    counts = []
    for i, (d, name) in enumerate(zip(widths, names, strict=True)):
        data = make_dataset(name, 200, i).points
        w = random_network(1, d, mode="bn", seed=i).weights[0]
        mu = (data @ w.T).mean(0)  # BN's layer-1 mean over the batch (the whole data set)
        centre = data.mean(0)
        assert np.all(np.abs(centre) < 3)  # the centroid lies in the box [-3, 3]^2
        # the lines cross the circle at the angles of their directions +-pi; the sampling step
        # must be finer than the smallest arc between two crossings
        crossings = np.sort(np.concatenate([np.arctan2(-w[:, 0], w[:, 1]) % np.pi,
                                            np.arctan2(-w[:, 0], w[:, 1]) % np.pi + np.pi]))
        smallest_arc = np.min(np.diff(np.append(crossings, crossings[0] + 2 * np.pi)))
        samples = 200_000
        assert 2 * np.pi / samples < smallest_arc / 4
        circle = _circle_patterns(w, mu, centre, 0.5, samples)
        distinct = {row.tobytes() for row in circle}
        # walking around the circle, consecutive distinct patterns differ in exactly one unit
        changes = np.flatnonzero(np.any(circle != np.roll(circle, 1, axis=0), axis=1))
        assert len(changes) == 2 * d
        for j in changes:
            assert np.sum(circle[j] != circle[j - 1]) == 1
        g = np.linspace(-3, 3, 301)
        grid = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
        assert {row.tobytes() for row in (grid @ w.T - mu) > 0} <= distinct
        counts.append(len(distinct))
    assert counts == [2 * d for d in widths]
    assert claim.computed == counts
    assert claim.paper_value == [2 * d for d in widths]
    assert claim.holds


# ------------------------------------------------------------------ 4. Proposition 2


def test_prop2_variance_of_the_batch_mean_by_numpy_monte_carlo(claims: dict[str, Claim]) -> None:
    means, s2, b, k = np.array([1.0, 0.0, -1.0]), np.array([1.0, 3.0, 0.1]), 64, 40_000
    rng = np.random.default_rng(20240607)
    u = rng.standard_normal((k, b, 3)) * np.sqrt(s2) + means
    var_mu = u.mean(1).var(0, ddof=1)
    expected = s2 / b
    se = expected * math.sqrt(2 / (k - 1))  # SE of a Gaussian sample variance over k batches
    assert np.all(np.abs(var_mu - expected) <= 4 * se)  # 4 SE
    claim = claims["bn-prop2-variance"]
    assert claim.paper_value["mu_var"] == pytest.approx(expected.tolist(), rel=1e-15)
    computed = np.array(claim.computed["mu_var"])
    # two independent estimates with the same SE: within 4 combined SE, sqrt(2) * se
    assert np.all(np.abs(computed - var_mu) <= 4 * math.sqrt(2) * se)
    assert np.all(np.abs(computed - expected) <= 4 * se)
    # the rest of Proposition 2: BN's biased sigma^2, its mean and its variance (Gaussian
    # inputs: phi^4 = 3 s^4), by numpy, against the claim's closed forms
    sigma2 = u.var(1)  # ddof 0: BN's biased sigma^2
    mean_expected = (b - 1) / b * s2
    var_expected = ((b - 1) / b) ** 2 * (3 * s2**2 - s2**2 * (b - 3) / (b - 1)) / b
    assert claim.paper_value["sigma2_mean"] == pytest.approx(mean_expected.tolist())
    assert claim.paper_value["sigma2_var"] == pytest.approx(var_expected.tolist())
    assert np.all(np.abs(sigma2.mean(0) - mean_expected) <= 4 * np.sqrt(var_expected / k))
    assert np.all(np.abs(sigma2.var(0) - var_expected) <= 0.05 * var_expected)
    assert claim.holds


# ------------------------------------------------------------------ 5, 6. Dannemann & Junike

X_D = np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 3.0]])
Y_D = np.array([2.0, 5.0, 13.0])


def _chat(w: np.ndarray, ddof: int = 0) -> np.ndarray:
    """C^(w): sum of squared errors of the BN neuron (gamma 1, beta 0) on Example 3.2;
    ``w`` of shape (..., 2)."""
    z = np.asarray(w) @ X_D.T
    u = (z - z.mean(-1, keepdims=True)) / z.std(-1, ddof=ddof, keepdims=True)
    return ((u - Y_D) ** 2).sum(-1)


def _fd_grad(f, w: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central differences: truncation ~h^2 f'''/6 ~ 1e-10, rounding ~ 200 eps / h ~ 5e-9."""
    e = np.eye(len(w))
    return np.array([(f(w + h * e[i]) - f(w - h * e[i])) / (2 * h) for i in range(len(w))])


def test_dannemann_example_and_loss_helper() -> None:
    x, y = dannemann_example()
    assert np.array_equal(x, X_D) and np.array_equal(y, Y_D)
    # W* = (1, 3) solves the normal equations of the plain least squares C (C(W*) = 12)
    assert np.allclose(np.linalg.lstsq(X_D, Y_D, rcond=None)[0], [1.0, 3.0], atol=1e-12)
    ws = np.random.default_rng(1).normal(size=(20, 2)) * 3
    tx, ty = torch.as_tensor(X_D), torch.as_tensor(Y_D)
    for ddof in (0, 1):
        helper = bn_loss(torch.as_tensor(ws), tx, ty, unbiased=bool(ddof)).numpy()
        assert np.allclose(helper, _chat(ws, ddof), rtol=1e-12, atol=0)  # the same sum: 1e-12


def test_dannemann_gradient(claims: dict[str, Claim]) -> None:
    claim = claims["dannemann-gradient"]
    g = np.array(claim.computed)
    exact = np.array([-108.0, 36.0]) / (37 * math.sqrt(74))  # the closed form of the notes
    assert np.allclose(g, exact, rtol=0, atol=1e-12)
    w_star = np.array([1.0, 3.0])
    assert np.allclose(_fd_grad(_chat, w_star), g, rtol=0, atol=1e-7)  # FD error <= ~5e-9
    # scale invariance: C^(t w) = C^(w), so the gradient is orthogonal to w
    assert abs(g @ w_star) < 1e-12
    assert _chat(7.5 * w_star) == pytest.approx(_chat(w_star), rel=1e-13)
    # unbiased sigma: u scales by sqrt((M-1)/M) = sqrt(2/3) and ||u||^2 is constant
    unbiased = _fd_grad(lambda w: _chat(w, ddof=1), w_star)
    assert np.allclose(unbiased, math.sqrt(2 / 3) * g, rtol=0, atol=1e-7)
    assert np.linalg.norm(unbiased - g) > 0.05  # the conventions differ visibly
    # the unbiased value quoted in the claim's how text (5 decimals)
    quoted = re.search(r"\((-?\d+\.\d+), (-?\d+\.\d+)\)", claim.how)
    assert quoted is not None, claim.how
    assert np.allclose([float(quoted[1]), float(quoted[2])], unbiased, rtol=0, atol=1e-5)
    assert claim.paper_value == [-0.34, 0.11]
    assert claim.holds


def test_dannemann_lemma45_fails_by_72_over_17(claims: dict[str, Claim]) -> None:
    claim = claims["dannemann-lemma45"]
    # distance^2 from W0 = (1, 3) to the ray t (5, 3): 10 - <W0, (5,3)>^2 / 34, exactly
    exact = Fraction(10) - Fraction(14) ** 2 / 34
    assert exact == Fraction(72, 17)
    assert claim.computed == pytest.approx(72 / 17, rel=0, abs=1e-9)
    assert claim.paper_value == 0
    assert claim.holds is False
    # the BN minimisers are the ray t (5, 3): C^ there is below C^ at nearby angles ...
    base = math.atan2(3.0, 5.0)
    for t in (0.5, 1.0, 4.0):
        at_ray = _chat(t * np.array([5.0, 3.0]))
        for d_angle in (-1e-2, -1e-3, 1e-3, 1e-2):
            a = base + d_angle
            assert _chat(t * math.sqrt(34) * np.array([math.cos(a), math.sin(a)])) > at_ray
        # ... and the gradient vanishes (FD error ~5e-9 at |w| ~ 6; 1e-7 at |w| ~ 3 / t)
        assert np.all(np.abs(_fd_grad(_chat, t * np.array([5.0, 3.0]))) < 1e-7 / t)
    # global: on a fine grid of angles the smallest C^ is at the angle of (5, 3)
    angles = np.linspace(-np.pi, np.pi, 100_001)
    values = _chat(np.stack([np.cos(angles), np.sin(angles)], 1))
    assert abs(angles[np.argmin(values)] - base) < 1e-4  # grid step 6.3e-5
    assert values.min() == pytest.approx(201 - 2 * math.sqrt(194), rel=1e-9)
    # the direction quoted by the claim is (5, 3) / sqrt(34) (6 decimals)
    quoted = re.search(r"\((\d+\.\d+), (\d+\.\d+)\)", claim.how)
    assert quoted is not None, claim.how
    assert np.allclose([float(quoted[1]), float(quoted[2])], np.array([5, 3]) / math.sqrt(34),
                       rtol=0, atol=1e-6)


# ------------------------------------------------------------------ 7. Santurkar Theorem 4.1


def test_santurkar_thm41_exact_fractions(claims: dict[str, Claim]) -> None:
    """y = (0, 1, 2, 5), g = c = (1, 2, 3, 4), gamma = 1: the gradient by Fact C.1 (eq. 4) in
    exact fractions, ||grad||^2 = 6/49; the 1/m right side 6/49; the printed one -58/49."""
    y = [Fraction(v) for v in (0, 1, 2, 5)]
    g = [Fraction(v) for v in (1, 2, 3, 4)]
    m = len(y)
    mean_y, mean_g = sum(y) / m, sum(g) / m
    d = [v - mean_y for v in y]  # y - mu; y^ = d / sigma
    s2 = sum(v * v for v in d) / m  # biased sigma^2 = 7/2
    gd = sum(a * b for a, b in zip(g, d, strict=True))  # <g, d>; <g, y^>^2 = gd^2 / s2
    # eq. 4: grad_y L^ = (1/sigma)(g - mean(g) - y^ <g, y^>/m); squared norm, exactly
    vec = [a - mean_g - b * gd / (m * s2) for a, b in zip(g, d, strict=True)]
    lhs = sum(v * v for v in vec) / s2
    base = sum(v * v for v in g) - sum(g) ** 2 / m
    rhs_m = (base - gd**2 / s2 / m) / s2
    rhs_printed = (base - gd**2 / s2 / 2) / s2  # sqrt(m) = 2
    assert lhs == rhs_m == Fraction(6, 49)
    assert rhs_printed == Fraction(-58, 49)
    # numpy central differences of L^(y) = <c, (y - mean)/std>: error ~1e-9 on ||grad||^2
    c = np.array([1.0, 2.0, 3.0, 4.0])

    def loss(v: np.ndarray) -> float:
        return float(c @ ((v - v.mean()) / v.std()))

    fd = _fd_grad(loss, np.array([0.0, 1.0, 2.0, 5.0]), h=1e-6)
    assert float(fd @ fd) == pytest.approx(6 / 49, abs=1e-8)
    thm, printed = claims["santurkar-thm41"], claims["santurkar-thm41-as-printed"]
    assert thm.computed == pytest.approx(6 / 49, rel=1e-12)  # float64 autograd: 1e-12
    assert thm.paper_value == pytest.approx(6 / 49, rel=1e-12)
    assert printed.computed == pytest.approx(6 / 49, rel=1e-12)
    assert printed.paper_value == pytest.approx(-58 / 49, rel=1e-12)
    assert thm.holds is True
    assert printed.holds is False


def test_santurkar_thm41_randomised_autograd() -> None:
    """50 random BN units (m, y, gamma, beta, downstream loss), autograd written here: the 1/m
    form is an equality and the printed 1/sqrt(m) bound is violated whenever <g, y^> != 0."""
    gen = torch.Generator().manual_seed(41)
    f64 = torch.float64
    for _ in range(50):
        m = int(torch.randint(3, 65, (1,), generator=gen))
        y = (torch.randn(m, generator=gen, dtype=f64) * 3
             + torch.randn(1, generator=gen, dtype=f64)).requires_grad_()
        gamma = float(torch.rand(1, generator=gen, dtype=f64)) * 3 + 0.1
        beta = float(torch.randn(1, generator=gen, dtype=f64))
        c = torch.randn(m, generator=gen, dtype=f64)
        a = torch.randn(m, m, generator=gen, dtype=f64) / math.sqrt(m)
        target = torch.randn(m, generator=gen, dtype=f64)

        def downstream(z: torch.Tensor, c=c, a=a, target=target) -> torch.Tensor:
            r = z - target
            return c @ z + 0.5 * r @ (a @ a.T) @ r + torch.sin(z).sum()

        mu = y.mean()
        sigma = ((y - mu) ** 2).mean().sqrt()  # biased
        y_hat = (y - mu) / sigma
        z = gamma * y_hat + beta
        (grad_y,) = torch.autograd.grad(downstream(z), y)
        zz = z.detach().requires_grad_()
        (g,) = torch.autograd.grad(downstream(zz), zz)
        yh, s = y_hat.detach(), float(sigma.detach())
        scale = gamma**2 / s**2
        lhs = float(grad_y @ grad_y)
        g_yh2 = float(g @ yh) ** 2
        rest = float(g @ g) - float(g.sum()) ** 2 / m
        rhs_m = scale * (rest - g_yh2 / m)
        rhs_printed = scale * (rest - g_yh2 / math.sqrt(m))
        # 1e-10 relative to the size of the terms that cancel (scale * ||g||^2)
        assert abs(lhs - rhs_m) <= 1e-10 * scale * float(g @ g)
        assert lhs == pytest.approx(rhs_m, rel=1e-10)
        assert g_yh2 > 0
        # the printed bound is below the truth by scale <g,y^>^2 (1/sqrt(m) - 1/m) > 0
        assert lhs > rhs_printed
        assert lhs - rhs_printed == pytest.approx(scale * g_yh2 * (1 / math.sqrt(m) - 1 / m),
                                                  rel=1e-8)


# ------------------------------------------------------------------ 8. Luo: gamma decay


def test_luo_gamma_decay_gap_by_numpy_monte_carlo(claims: dict[str, Claim]) -> None:
    m, k = 16, 1 << 19
    rng = np.random.default_rng(777)
    h = rng.standard_normal((k, m))
    mu = h.mean(1, keepdims=True)
    sigma = h.std(1, keepdims=True)  # biased (ddof 0)
    gap = ((h - (h - mu) / sigma) ** 2 / 2).mean(1)  # h a member of its batch
    mine, sd = float(gap.mean()), float(gap.std(ddof=1))
    se = sd / math.sqrt(k)
    exact = 1 - math.sqrt(2 / m) * math.exp(math.lgamma(m / 2) - math.lgamma((m - 1) / 2))
    assert exact == pytest.approx(0.047746, abs=5e-7)
    paper = 3 / (4 * m)
    claim = claims["luo-gamma-decay-gap"]
    assert claim.paper_value == paper == 0.046875
    batches = re.search(r"over (\d+) batches", claim.how)
    assert batches is not None, claim.how
    se_claim = sd / math.sqrt(int(batches[1]))  # the same per-batch distribution
    # mine and the claim's: within 4 SE of the exact value, and within 4 combined SE
    assert abs(mine - exact) <= 4 * se
    assert abs(claim.computed - exact) <= 4 * se_claim
    assert abs(claim.computed - mine) <= 4 * math.hypot(se, se_claim)
    # both within 3 % of the leading-order 3/(4M)
    assert abs(mine - paper) <= 0.03 * paper
    assert abs(claim.computed - paper) <= 0.03 * paper
    assert claim.holds
    # the other reading, h independent of its batch, gives about 0.0656: the reading matters
    h_out = rng.standard_normal(k)
    gap_b = (h_out - (h_out - mu[:, 0]) / sigma[:, 0]) ** 2 / 2
    inv1 = math.sqrt(m / 2) * math.exp(math.lgamma((m - 2) / 2) - math.lgamma((m - 1) / 2))
    exact_b = (1 - 2 * inv1 + (1 + 1 / m) * m / (m - 3)) / 2  # E[1/s], E[1/s^2] = M/(M-3)
    assert exact_b == pytest.approx(0.065556, abs=5e-7)
    se_b = float(gap_b.std(ddof=1)) / math.sqrt(k)
    assert abs(float(gap_b.mean()) - exact_b) <= 4 * se_b
    assert exact_b > 1.35 * paper
    assert abs(claim.computed - exact_b) > 50 * math.hypot(se_b, se_claim)


# ------------------------------------------------------------------ 9. Luo: SGD generalisation


def _finite_n_error(alpha: float, n: int, s: float) -> float:
    """Exact mean of |w - w*|^2/N for min-norm least squares with x ~ N(0, I/N), |w*|^2 = N:
    (N-P)/N + S P/(N-P-1) for P < N (inverse Wishart), S N/(P-N-1) for P > N."""
    p = int(alpha * n)
    return (n - p) / n + s * p / (n - p - 1) if p < n else s * n / (p - n - 1)


def test_luo_sgd_generalisation_by_numpy_lstsq(claims: dict[str, Claim]) -> None:
    s_noise, alphas = 0.25, (0.5, 1.5, 2.0, 3.0)
    closed = [1 - a + a * s_noise / (1 - a) if a < 1 else s_noise / (a - 1) for a in alphas]
    assert closed == [0.75, 0.5, 0.25, 0.125]
    claim = claims["luo-sgd-generalisation"]
    assert claim.paper_value == pytest.approx(closed, rel=1e-15)
    setup = re.search(r"N = (\d+) inputs.*?(\d+) repetitions", claim.how)
    assert setup is not None, claim.how
    n, claim_reps = int(setup[1]), int(setup[2])
    rng = np.random.default_rng(4242)
    reps = 20
    for a, c_value, claim_value in zip(alphas, closed, claim.computed, strict=True):
        p = int(a * n)
        errs = []
        for _ in range(reps):
            x = rng.standard_normal((p, n)) / math.sqrt(n)
            w_star = rng.standard_normal(n)
            w_star *= math.sqrt(n) / np.linalg.norm(w_star)
            y = x @ w_star + math.sqrt(s_noise) * rng.standard_normal(p)
            w = np.linalg.lstsq(x, y, rcond=None)[0]  # min-norm solution (SGD from 0)
            errs.append(float(((w - w_star) ** 2).sum() / n))
        mine, sd = float(np.mean(errs)), float(np.std(errs, ddof=1))
        se, se_claim = sd / math.sqrt(reps), sd / math.sqrt(claim_reps)
        exact = _finite_n_error(a, n, s_noise)
        assert abs(exact - c_value) <= 0.02 * c_value  # finite N: +1 % at alpha 1.5, N 200
        assert abs(mine - exact) <= 4 * se  # 4 SE
        assert abs(claim_value - exact) <= 4 * se_claim
        assert abs(claim_value - mine) <= 4 * math.hypot(se, se_claim)
    assert claim.holds


# ------------------------------------------------------------------ 10. holds flags


@pytest.mark.parametrize("cid", REQUIRED + ALSO_HOLD)
def test_required_claims_hold(claims: dict[str, Claim], cid: str) -> None:
    assert claims[cid].holds is True


@pytest.mark.parametrize("cid", MUST_FAIL)
def test_printed_errors_do_not_hold(claims: dict[str, Claim], cid: str) -> None:
    assert claims[cid].holds is False


def test_claim_ids_cover_the_computed_claims(claims: dict[str, Claim]) -> None:
    assert sorted(claims) == sorted(claim_ids())
    assert set(REQUIRED) | set(MUST_FAIL) | set(ALSO_HOLD) == set(claim_ids())
    for cid, claim in claims.items():
        assert claim.as_json()["id"] == cid
        assert set(claim.as_json()) == JSON_KEYS


# ---- the printed Luo et al. formulas, and Ergen et al.'s closed form ------------------------

def test_luo_sigma_variance_as_printed(claims: dict[str, Claim]) -> None:
    """numpy Monte Carlo (own seed): var of the biased sigma_B of Gaussian batches of 256
    with sigma_P = 2 is sigma_P^2 (rho + 2)/(4M) = 1/128 to first order (within 4 %), four
    times the printed (rho + 2)/(4M) = 1/512."""
    c = claims["luo-sigma-b-variance-as-printed"]
    rng = np.random.default_rng(31)
    sig = (rng.normal(1.0, 2.0, size=(20_000, 256))).std(1)
    assert float(sig.var()) == pytest.approx(4 / 512, rel=0.04)
    assert c.paper_value == pytest.approx(1 / 512)
    assert c.computed == pytest.approx(float(sig.var()), rel=0.05)
    assert c.holds is False


def test_luo_i2_as_printed(claims: dict[str, Claim]) -> None:
    """At R = 0 (s, t independent) <delta^2> = E[1{s>0}(relu(t) - s)^2] = 1/4 + gamma^2/2 -
    gamma/pi, by numpy Monte Carlo and in closed form; the printed I2 lacks the 1/4."""
    c = claims["luo-i2-as-printed"]
    gamma = 0.7
    closed = 0.25 + gamma**2 / 2 - gamma / math.pi
    rng = np.random.default_rng(12)
    t, s = rng.standard_normal(2_000_000), gamma * rng.standard_normal(2_000_000)
    d2 = ((s > 0) * (np.maximum(t, 0) - s)) ** 2
    assert float(d2.mean()) == pytest.approx(closed, abs=4 * d2.std() / math.sqrt(len(d2)))
    assert c.computed == pytest.approx(closed, rel=0.01)
    assert c.paper_value == pytest.approx(closed - 0.25, abs=1e-12)  # the typo drops 1/4
    assert c.holds is False


def test_ergen_closed_form_claim(claims: dict[str, Claim]) -> None:
    """p* summed by hand for 3 balanced classes of 8 (||y_j|| = sqrt 8), beta = 0.7."""
    c = claims["ergen-closed-form"]
    want = 3 * (0.7 * math.sqrt(8) - 0.7**2 / 2)
    assert c.paper_value["p_star"] == pytest.approx(want, rel=1e-12)
    assert want <= c.computed["objective"] <= want * 1.001
    assert c.computed["rank"] == c.paper_value["rank"] == 3 and c.holds is True


# ------------------------------------------------------------------ 11. the statements in TeX

#: ASCII spellings of math that the TeX statement must not keep (outside or inside $...$).
ASCII_MATH = re.compile(r"sqrt\(|\|\||<=|\^T\b|_\(|~|(?<![\\\w])"
                        r"(?:sigma|gamma|beta|alpha|rho|phi|mu|pi|eps|sum|grad|arcsin)\b")


def _math_and_prose(tex: str) -> tuple[list[str], str]:
    """The inline math segments of a Markdown statement, and the prose around them; an odd
    number of ``$`` (an unclosed segment) fails here."""
    assert "$$" not in tex and "\\$" not in tex, tex  # inline math only, no escaped $
    parts = tex.split("$")
    assert len(parts) % 2 == 1, f"unbalanced $ in {tex!r}"
    return parts[1::2], " ".join(parts[0::2])


@pytest.mark.parametrize("cid", claim_ids())
def test_statement_tex_is_the_statement_with_its_math_typeset(
        claims: dict[str, Claim], cid: str) -> None:
    """Every claim's statement_tex (the page's table: Markdown, TeX between $ signs) has
    balanced, non-empty math, keeps no ASCII math, and says what the plain statement says:
    the same numbers, and no word in its prose that the plain statement lacks."""
    claim = claims[cid]
    tex, plain = claim.statement_tex, claim.statement
    assert isinstance(tex, str) and tex.strip() and tex != plain
    math, prose = _math_and_prose(tex)
    assert math, f"{cid}: no math"
    for segment in math:
        assert segment.strip() and segment == segment.strip(), (cid, segment)
        assert segment.count("{") == segment.count("}"), (cid, segment)
        assert segment.count("(") == segment.count(")"), (cid, segment)
    assert any("\\" in m or "^" in m or "_" in m for m in math), cid  # TeX, not plain words
    assert not ASCII_MATH.search(tex), (cid, ASCII_MATH.search(tex))
    # Markdown would turn these into emphasis, code or HTML in the prose
    assert not re.search(r"[*_`<>\\]", prose), (cid, prose)
    number = re.compile(r"\d+(?:\.\d+)?")
    assert set(number.findall(tex)) == set(number.findall(plain)), cid
    words = re.compile(r"[A-Za-z]{3,}")
    assert set(words.findall(prose)) <= set(words.findall(plain)), cid

