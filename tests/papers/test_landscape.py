"""Santurkar et al.'s measurements (bnviz.papers.landscape) against step-by-step recomputation:
torch's own batch norm for the forward pass, one autograd call per step size and per
Definition 2.1 hybrid (no vmap), and the distribution of Algorithm 1's noise."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bnviz.papers import landscape as ls
from bnviz.params import InputError, LandscapeParams
from bnviz.views.jitter import binary_task

SMALL = dict(n_points=64, depth=3, width=6, steps=4, batch_size=16, lr=0.2, etas=5,
             weight_seed=2)


def test_bn_forward_is_torch_batch_norm():
    s = ls.LandscapeParams(**SMALL)
    p = ls.init_params(s.depth, s.width, s.weight_seed, True)
    gen = torch.Generator().manual_seed(0)
    for i in range(1, 4):
        p[f"gamma{i}"] = torch.rand(6, generator=gen, dtype=torch.float64) + 0.5
        p[f"beta{i}"] = torch.randn(6, generator=gen, dtype=torch.float64)
    x = torch.randn(16, 2, generator=gen, dtype=torch.float64)
    z = x
    for i in range(1, 4):  # torch's training-mode BN normalises by the biased variance
        z = torch.relu(F.batch_norm(z @ p[f"W{i}"].T, None, None, p[f"gamma{i}"],
                                    p[f"beta{i}"], training=True, eps=1e-300))
    want = z @ p["head_W"].T + p["head_b"]
    torch.testing.assert_close(ls._logits(p, x, 3, True, None), want, rtol=1e-12, atol=1e-12)


def test_both_arms_start_from_the_same_weights():
    s = ls.LandscapeParams(**SMALL)
    a, b = (ls.init_params(s.depth, s.width, s.weight_seed, bn) for bn in (True, False))
    for k in ("W1", "W2", "W3", "head_W"):
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0)
    assert "gamma1" in a and "b1" in b and "b1" not in a


@pytest.mark.parametrize("noisy", [None, ls.NoisyBN()])
def test_measures_equal_a_step_by_step_recomputation(noisy):
    """Replay the run: the same batches and noise, one autograd call per step size and per
    hybrid of Definition 2.1, and compare every recorded number."""
    s = ls.LandscapeParams(**SMALL, noisy=noisy)
    result = ls.run_landscape(s, device="cpu")
    data = binary_task(s.dataset, s.n_points, s.data_seed)
    x_all = torch.as_tensor(data.points)
    y_all = torch.as_tensor(data.labels, dtype=torch.int64)
    etas = np.logspace(math.log10(s.eta_lo), math.log10(s.eta_hi), s.etas) * s.lr
    for arm in ("bn", "no_bn"):
        bn = arm == "bn"
        params = ls.init_params(s.depth, s.width, s.weight_seed, bn)
        batch_gen = torch.Generator().manual_seed(s.weight_seed + 17)
        noise_gen = torch.Generator().manual_seed(s.weight_seed + 29)
        got = result.arms[arm]
        for t in range(s.steps):
            idx = torch.randperm(s.n_points, generator=batch_gen)[:s.batch_size]
            x, y = x_all[idx], y_all[idx]
            noise = (ls._draw_noise(noisy, s.batch_size, s.width, s.depth, noise_gen,
                                    torch.device("cpu")) if bn and noisy else None)

            def loss_and_grad(p, x=x, y=y, bn=bn, noise=noise):
                q = {k: v.detach().clone().requires_grad_() for k, v in p.items()}
                loss = F.cross_entropy(ls._logits(q, x, s.depth, bn, noise), y)
                grads = torch.autograd.grad(loss, list(q.values()))
                return float(loss), dict(zip(q, grads, strict=True))

            loss, grads = loss_and_grad(params)
            g = torch.cat([v.flatten() for v in grads.values()])
            losses, changes = [], []
            for eta in etas:
                le, ge = loss_and_grad({k: params[k] - eta * grads[k] for k in params})
                losses.append(le)
                changes.append(float((torch.cat([v.flatten() for v in ge.values()]) - g).norm()))
            assert got["loss"][t] == pytest.approx(loss, rel=1e-10)
            assert got["loss_min"][t] == pytest.approx(min(losses), rel=1e-10)
            assert got["loss_max"][t] == pytest.approx(max(losses), rel=1e-10)
            assert got["grad_change_max"][t] == pytest.approx(max(changes), rel=1e-8)
            assert got["beta_eff"][t] == pytest.approx(
                max(c / (e * float(g.norm())) for c, e in zip(changes, etas, strict=True)),
                rel=1e-8)
            stepped = {k: params[k] - s.lr * grads[k] for k in params}
            for i in range(1, s.depth + 1):  # Definition 2.1, layer i
                hybrid = {k: (stepped[k] if k[-1].isdigit() and int(k[-1]) < i else params[k])
                          for k in params}
                _, gh = loss_and_grad(hybrid)
                a, b = grads[f"W{i}"].flatten(), gh[f"W{i}"].flatten()
                assert got["ics_l2"][t, i - 1] == pytest.approx(float((a - b).norm()),
                                                                rel=1e-8, abs=1e-14)
                assert got["ics_cos"][t, i - 1] == pytest.approx(
                    float(a @ b / (a.norm() * b.norm())), rel=1e-10)
            # nothing below layer 1 moves: 0 up to the rounding of the batched (vmap) gradient
            assert got["ics_l2"][t, 0] <= 1e-12 * float(grads["W1"].norm())
            params = stepped


def test_algorithm1_noise_distribution():
    spec = ls.NoisyBN()
    gen = torch.Generator().manual_seed(5)
    draws = [ls._draw_noise(spec, 4000, 20, 1, gen, torch.device("cpu"))[0] for _ in range(30)]
    for s, m in draws:
        mu_j = m.mean(0)  # per unit: U(mu_j - 0.1, mu_j + 0.1) around one mu_j per step
        assert torch.all((m - mu_j).abs() <= spec.r_mu + 0.01)
        assert torch.all(mu_j.abs() <= spec.n_mu + 0.01)
        sigma_j = s.mean(0)
        assert torch.all((sigma_j >= 1 - 0.01) & (sigma_j <= spec.n_sigma + 0.01))
        assert torch.allclose(s.std(0), torch.full((20,), spec.r_sigma, dtype=torch.float64),
                              rtol=0.08)
    # the per-step unit means cover U(-0.5, 0.5): variance 1/12 * (2 * 0.5)^2
    means = torch.cat([m.mean(0) for _, m in draws])
    assert float(means.var()) == pytest.approx(1 / 12, rel=0.25)


@pytest.mark.parametrize("change, says", [
    (dict(depth=0), r"^depth: enter a whole number from 1 to 8, got 0$"),
    (dict(width=1000), r"^width: enter a whole number from 2 to 64, got 1000$"),
    (dict(lr=0.0), r"^lr: enter a number from 0.0001 to 2, got 0.0$"),
    (dict(steps=2.5), r"^steps: enter a whole number from 1 to 2000, got 2.5$"),
    (dict(batch_size=500, n_points=100),
     r"^batch size: 500 is larger than the data \(100 points\)$"),
    (dict(eta_lo=4.0, eta_hi=1.0), r"^eta hi: enter a step size \(a multiple of lr\) above "
                                   r"eta lo \(4\), got 1$"),
    (dict(etas=True), r"^etas: enter a whole number from 2 to 32, got True$"),
    (dict(noisy=ls.NoisyBN(n_sigma=1.0), steps=2000, width=64, depth=8),
     r"^steps x step sizes x batch x width\^2 x depth is over the cap"),
])
def test_settings_are_checked(change, says):
    """The run's settings are the parameter layer's model (one line naming the setting)."""
    assert ls.LandscapeParams is LandscapeParams
    with pytest.raises(InputError, match=says):
        ls.LandscapeParams(**{**SMALL, **change})


def test_training_learns_and_decision_maps_are_drawn():
    r = ls.run_landscape(ls.LandscapeParams(n_points=200, steps=120, weight_seed=1), device="cpu")
    for arm in ("bn", "no_bn"):
        a = r.arms[arm]
        assert a["loss"][-10:].mean() < 0.7 * a["loss"][:10].mean()
        assert r.decision[arm].shape == (96, 96) and set(np.unique(r.decision[arm])) <= {0, 1}
        assert len(np.unique(r.decision[arm])) == 2  # both classes somewhere in the box
