"""The `landscape` job type (Santurkar et al. on image networks): its measures against an
independent recomputation on a copy of the network, and a run on digits end to end."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bnviz.images.experiments import run_experiment, summarise
from bnviz.images.landscape import landscape_measures
from bnviz.images.networks import build_model
from bnviz.images.params import check_params
from bnviz.records.types import ParamError, RecordingContext


def _grad_at(model, params, x, y):
    """Loss and flat gradient of a deep copy of ``model`` with ``params`` loaded (train mode)."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        for k, p in m.named_parameters():
            p.copy_(params[k])
    loss = F.cross_entropy(m(x), y)
    grads = torch.autograd.grad(loss, list(m.parameters()))
    return float(loss), {k: g for (k, _), g in zip(m.named_parameters(), grads, strict=True)}


def test_measures_against_a_copy_of_the_network():
    torch.manual_seed(0)
    model = build_model("resnet9", 1, 10, 8, "bn", affine=True, width=4, seed=3)
    model.train()
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,))
    before = {k: v.clone() for k, v in model.named_buffers()}
    lr, etas = 0.05, 3
    measures, grads = landscape_measures(model, x, y, lr, etas)
    for k, v in model.named_buffers():  # a measurement does not move running statistics
        torch.testing.assert_close(v, before[k], rtol=0, atol=0)
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    loss, g0 = _grad_at(model, params, x, y)
    assert measures["train_loss"] == pytest.approx(loss, rel=1e-5)
    flat0 = torch.cat([g0[k].flatten() for k in params])
    losses, betas = [], []
    for eta in np.geomspace(0.5, 4.0, etas) * lr:
        le, ge = _grad_at(model, {k: params[k] - eta * g0[k] for k in params}, x, y)
        change = float((torch.cat([ge[k].flatten() for k in params]) - flat0).norm())
        losses.append(le)
        betas.append(change / (eta * float(flat0.norm())))
    assert measures["loss_min"] == pytest.approx(min(losses), rel=1e-4)
    assert measures["loss_max"] == pytest.approx(max(losses), rel=1e-4)
    assert measures["beta_eff"] == pytest.approx(max(betas), rel=1e-3)
    # Definition 2.1 for the second weight tensor: the first one has taken its step
    names = list(params)
    weights = [k for k in names if k.endswith("weight") and params[k].ndim > 1]
    second = names.index(weights[1])
    hybrid = {k: params[k] - lr * g0[k] if j < second else params[k]
              for j, k in enumerate(names)}
    _, gh = _grad_at(model, hybrid, x, y)
    l2 = float((g0[weights[1]] - gh[weights[1]]).norm())
    assert l2 > 0 and -1 <= measures["ics_cos"] <= 1
    # the reported ICS is the mean over the weight tensors after the first; recompute it
    l2s = []
    for w in weights[1:]:
        i = names.index(w)
        _, gh = _grad_at(model, {k: params[k] - lr * g0[k] if j < i else params[k]
                                 for j, k in enumerate(names)}, x, y)
        l2s.append(float((g0[w] - gh[w]).norm()))
    assert measures["ics_l2"] == pytest.approx(np.mean(l2s), rel=1e-3)
    assert l2s[0] == pytest.approx(l2, rel=1e-6)


def test_landscape_parameters():
    p = check_params("landscape", {"etas": "3", "measure_every": 5})
    assert p["etas"] == 3 and p["measure_every"] == 5 and "gpus" not in p
    with pytest.raises(ParamError, match="^etas is not a parameter of smart-init"):
        check_params("smart-init", {"etas": 3})
    with pytest.raises(ParamError,
                       match="^measure_every: enter a whole number from 1 to 10000, got 0$"):
        check_params("landscape", {"measure_every": 0})
    with pytest.raises(ParamError, match="over the cap"):
        check_params("landscape", {"epochs": 1000, "runs": 50, "measure_every": 1})


def test_landscape_job_on_digits():
    from bnviz.web.callbacks.jobs.figures import job_figure

    params = check_params("landscape", {"epochs": 2, "runs": 1, "max_train": 128,
                                          "width": 4, "measure_every": 2, "etas": 2})
    ctx = RecordingContext()
    run_experiment("landscape", params, ctx)
    steps = [r for r in ctx.rows if r["kind"] == "step"]
    epochs = [r for r in ctx.rows if r["kind"] == "epoch"]
    assert {r["arm"] for r in steps} == {"bn", "no_bn"}
    assert len(epochs) == 2 * 2 and all(0 <= r["test_accuracy"] <= 1 for r in epochs)
    per_arm = len(steps) // 2
    assert per_arm == 2  # 128 images in batches of 64: 2 steps an epoch, measured every 2
    for r in steps:
        assert r["loss_min"] <= r["loss_max"] and r["beta_eff"] > 0
        assert -1 <= r["ics_cos"] <= 1 and r["ics_l2"] >= 0
    s = summarise("landscape", ctx.rows)
    for arm in ("bn", "no_bn"):
        land = s["arms"][arm]["landscape"]
        assert land["step"] == [0, 2] and len(land["beta_eff"]) == 2
        assert s["arms"][arm]["epoch"] == [1, 2]
    fig = job_figure([("", "landscape", s)], "landscape")
    assert fig["layout"]["yaxis"]["type"] == "log"
    assert any("effective β" in (t.get("name") or "") for t in fig["data"])
    assert ctx.fractions and ctx.fractions[-1] == 1.0
