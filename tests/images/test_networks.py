"""Tests of bnviz.images.networks: ModeNorm's modes against independent numpy computations (the
biased variance, docs/conventions.md), calibrate_frozen's exact whole-set statistics in every
architecture,
build_model's mode-independent initial weights, output shapes, noisy_bn's extra variance of the
batch statistics, and layer_preactivations.

Monte Carlo tolerances (noisy_bn) are stated where they are used; everything else is exact up to
float32 rounding (1e-5 relative)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

from bnviz.images.networks import (
    ARCHS,
    NORM_MODES,
    ModeNorm,
    build_model,
    calibrate_frozen,
    layer_preactivations,
    norm_layers,
)

WIDTH = {"resnet9": 4, "cnn": 8, "resnet50": 2}
RTOL = 1e-5


def _channel_stats(t: torch.Tensor | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and BIASED variance over the batch and all spatial positions, in
    float64 numpy (independent of the code under test)."""
    a = np.asarray(t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t, np.float64)
    axes = (0, *range(2, a.ndim))
    return a.mean(axes), a.var(axes)  # numpy's var is the biased one (ddof=0)


def _shaped(v: np.ndarray, ndim: int) -> np.ndarray:
    return v.reshape(1, -1, *([1] * (ndim - 2)))


def _input(shape, seed: int = 0) -> torch.Tensor:
    """Channels with different means and scales (so normalising does something)."""
    g = torch.Generator().manual_seed(seed)
    c = shape[1]
    scale = torch.linspace(0.3, 4.0, c).view(1, c, *([1] * (len(shape) - 2)))
    shift = torch.linspace(-3.0, 5.0, c).view(1, c, *([1] * (len(shape) - 2)))
    return torch.randn(shape, generator=g) * scale + shift


# --------------------------------------------------------------------------- ModeNorm


@pytest.mark.parametrize("shape", [(8, 5, 4, 3), (3, 6), (2, 4, 1, 1)])
def test_bn_training_uses_batch_mean_and_biased_variance(shape):
    x = _input(shape)
    norm = ModeNorm(shape[1], "bn").train()
    out = norm(x)
    mean, var = _channel_stats(x)
    xn = x.numpy().astype(np.float64)
    expected = (xn - _shaped(mean, x.ndim)) / np.sqrt(_shaped(var, x.ndim))
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=RTOL, atol=RTOL)
    out_mean, out_var = _channel_stats(out)
    np.testing.assert_allclose(out_mean, 0.0, atol=RTOL)
    np.testing.assert_allclose(out_var, 1.0, rtol=RTOL)  # biased variance 1
    # with the unbiased variance the output's biased variance would be (n-1)/n != 1
    n = x.numel() // shape[1]
    assert abs((n - 1) / n - 1.0) > 100 * RTOL
    # running statistics move by the momentum towards the batch mean and BIASED variance
    np.testing.assert_allclose(norm.running_mean.numpy(), 0.1 * mean, rtol=RTOL, atol=1e-7)
    np.testing.assert_allclose(norm.running_var.numpy(), 0.9 + 0.1 * var, rtol=RTOL)


def test_bn_eval_uses_running_statistics():
    x = _input((6, 3, 5, 5), seed=1)
    norm = ModeNorm(3, "bn")
    rm, rv = np.array([0.5, -2.0, 3.0]), np.array([4.0, 0.25, 9.0])
    norm.running_mean.copy_(torch.tensor(rm))
    norm.running_var.copy_(torch.tensor(rv))
    norm.eval()
    out = norm(x)
    expected = (x.numpy().astype(np.float64) - _shaped(rm, 4)) / np.sqrt(_shaped(rv, 4))
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=RTOL, atol=RTOL)
    # test-time outputs do not depend on the rest of the batch, and do not move the averages
    np.testing.assert_allclose(norm(x[2:3]).detach().numpy(), out[2:3].detach().numpy(),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(norm.running_mean.numpy(), rm.astype(np.float32))
    np.testing.assert_array_equal(norm.running_var.numpy(), rv.astype(np.float32))


def test_bn_running_averages_converge_to_population_statistics():
    x = _input((400, 2), seed=2)
    norm = ModeNorm(2, "bn", momentum=0.5).train()
    for _ in range(40):
        norm(x)
    mean, var = _channel_stats(x)
    np.testing.assert_allclose(norm.running_mean.numpy(), mean, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(norm.running_var.numpy(), var, rtol=RTOL)  # biased, not n/(n-1)
    norm.eval()
    np.testing.assert_allclose(_channel_stats(norm(x))[1], 1.0, rtol=1e-4)


def test_affine_parameters():
    plain = ModeNorm(4, "bn", affine=False)
    assert list(plain.parameters()) == []
    assert list(ModeNorm(4, "noisy_bn").parameters()) == []
    norm = ModeNorm(4, "bn", affine=True).train()
    assert {n: tuple(p.shape) for n, p in norm.named_parameters()} == {"weight": (4,),
                                                                       "bias": (4,)}
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([2.0, -1.0, 0.5, 3.0]))
        norm.bias.copy_(torch.tensor([1.0, 0.0, -2.0, 4.0]))
    x = _input((10, 4, 2, 2), seed=3)
    h = plain.train()(x)
    out = norm(x)
    expected = h.detach().numpy() * _shaped(np.array([2.0, -1, 0.5, 3]), 4) + _shaped(
        np.array([1.0, 0, -2, 4]), 4)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=RTOL, atol=RTOL)
    out.sum().backward()
    assert norm.weight.grad is not None and norm.bias.grad is not None
    np.testing.assert_allclose(norm.bias.grad.numpy(), 40.0)  # d sum / d beta = N*H*W
    # the bias-only modes have one bias (and affine changes nothing there)
    for mode in ("frozen", "zero_bias", "random_bias"):
        for affine in (False, True):
            params = dict(ModeNorm(4, mode, affine=affine).named_parameters())
            assert list(params) == ["bias"] and params["bias"].shape == (4,)


def test_bias_modes_and_errors():
    x = _input((5, 3, 2, 2), seed=4)
    zero = ModeNorm(3, "zero_bias")
    np.testing.assert_array_equal(zero(x).detach().numpy(), x.numpy())
    rand = ModeNorm(3, "random_bias")
    rand.reset_bias(torch.Generator().manual_seed(0))
    b = rand.bias.detach().numpy()
    assert np.all(b != 0)
    np.testing.assert_allclose(rand(x).detach().numpy(), x.numpy() + _shaped(b, 4), rtol=1e-6)
    with pytest.raises(RuntimeError, match="calibrate_frozen"):
        ModeNorm(3, "frozen")(x)
    with pytest.raises(ValueError, match="unknown norm mode"):
        ModeNorm(3, "batchnorm")


def test_constant_channel_stays_finite():
    x = _input((6, 3, 2, 2), seed=5)
    x[:, 1] = 7.0
    out = ModeNorm(3, "bn").train()(x)
    assert torch.isfinite(out).all()
    np.testing.assert_array_equal(out[:, 1].detach().numpy(), 0.0)


# --------------------------------------------------------------------------- noisy_bn


def _record_noise(monkeypatch) -> list[tuple[torch.Tensor, ...]]:
    """Wrap ModeNorm._add_noise: record (batch mu, batch var, mu used, var used) per call."""
    original = ModeNorm._add_noise
    calls: list[tuple[torch.Tensor, ...]] = []

    def recording(self, mu, var):
        mu_out, var_out = original(self, mu, var)
        calls.append(tuple(t.detach().clone().double() for t in (mu, var, mu_out, var_out)))
        return mu_out, var_out

    monkeypatch.setattr(ModeNorm, "_add_noise", recording)
    return calls


def _run_batches(norm: ModeNorm, population: torch.Tensor, batch: int, steps: int,
                 seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    norm.train()
    for _ in range(steps):
        idx = torch.randperm(len(population), generator=g)[:batch]
        xb = population[idx]
        out = norm(xb)
    return xb, out


def _population(channels: int, seed: int) -> torch.Tensor:
    pop = _input((2000, channels), seed=seed)
    pop[:, :3] = pop[:, :3].exp()  # skewed units as well as Gaussian ones
    return pop


def test_noisy_bn_raises_the_variance_of_batch_statistics_by_the_fraction(monkeypatch):
    """Over many mini-batches from a fixed population, the (mu, sigma^2) that noisy_bn uses
    vary 15% more than the batch's own (mu_B, sigma_B^2). The extra variance is 0.15 times a
    running (EMA, weight 0.05) estimate of var(mu_B), whose expectation is ~2.6% low, so the
    measured fraction is ~0.146; its Monte Carlo spread with 2500 batches x 12 channels is
    ~0.01 for mu and ~0.02 for sigma^2 (checked over seeds). Tolerance: 0.15 +- 0.04 for the
    channel average (mu and sigma^2), 0.15 +- 0.07 for every single channel's mu."""
    calls = _record_noise(monkeypatch)
    channels, steps, warmup = 12, 2500, 200
    pop = _population(channels, seed=6)
    norm = ModeNorm(channels, "noisy_bn", noise=0.15,
                    generator=torch.Generator().manual_seed(7))
    xb, out = _run_batches(norm, pop, batch=16, steps=steps, seed=8)
    assert len(calls) == steps
    mu_b, var_b, mu_used, var_used = (torch.stack(c)[warmup:].numpy()
                                      for c in zip(*calls, strict=True))
    # the recorded inputs are the batch's mean and biased variance
    last_mean, last_var = _channel_stats(xb)
    np.testing.assert_allclose(calls[-1][0].numpy(), last_mean, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(calls[-1][1].numpy(), last_var, rtol=RTOL)
    # ... and the output is normalised with the noisy ones
    expected = (xb.numpy() - calls[-1][2].numpy()) / np.sqrt(calls[-1][3].numpy())
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-4, atol=1e-4)
    assert not np.allclose(mu_used, mu_b)
    extra_mu = mu_used.var(0) / mu_b.var(0) - 1.0
    extra_var = var_used.var(0) / var_b.var(0) - 1.0
    assert abs(extra_mu.mean() - 0.15) < 0.04, extra_mu
    assert np.all(np.abs(extra_mu - 0.15) < 0.07), extra_mu
    assert abs(extra_var.mean() - 0.15) < 0.04, extra_var
    # the noise on mu is additive and independent: var(mu_used - mu_B) ~ 0.15 var(mu_B)
    assert abs(((mu_used - mu_b).var(0) / mu_b.var(0)).mean() - 0.15) < 0.04
    # the mean of sigma^2 is kept (multiplicative noise with expectation 1)
    np.testing.assert_allclose(var_used.mean(0), var_b.mean(0), rtol=0.05)


def test_noisy_bn_first_steps_only_measure_and_noise_zero_adds_nothing(monkeypatch):
    calls = _record_noise(monkeypatch)
    pop = _population(5, seed=9)
    noisy = ModeNorm(5, "noisy_bn", noise=0.15, generator=torch.Generator().manual_seed(1))
    _run_batches(noisy, pop, batch=8, steps=10, seed=10)
    for mu, var, mu_used, var_used in calls:  # the first 10 steps only measure
        np.testing.assert_array_equal(mu_used.numpy(), mu.numpy())
        np.testing.assert_array_equal(var_used.numpy(), var.numpy())
    calls.clear()
    silent = ModeNorm(5, "noisy_bn", noise=0.0, generator=torch.Generator().manual_seed(1))
    plain = ModeNorm(5, "bn")
    g = torch.Generator().manual_seed(11)
    for _ in range(300):
        xb = pop[torch.randperm(len(pop), generator=g)[:8]]
        np.testing.assert_array_equal(silent(xb).detach().numpy(), plain(xb).detach().numpy())
    assert len(calls) == 300
    for mu, var, mu_used, var_used in calls:
        np.testing.assert_array_equal(mu_used.numpy(), mu.numpy())
        np.testing.assert_array_equal(var_used.numpy(), var.numpy())
    np.testing.assert_array_equal(silent.running_mean.numpy(), plain.running_mean.numpy())
    # in eval mode noisy_bn is plain bn with running statistics
    noisy.eval()
    x = pop[:20]
    expected = (x.numpy().astype(np.float64) - noisy.running_mean.numpy()) / np.sqrt(
        noisy.running_var.numpy())
    np.testing.assert_allclose(noisy(x).detach().numpy(), expected, rtol=RTOL, atol=RTOL)


# --------------------------------------------------------------------------- calibrate_frozen


def _norm_inputs(model: nn.Module, x: torch.Tensor) -> list[tuple[ModeNorm, torch.Tensor]]:
    """(layer, its input u) for every norm layer, in the order the forward pass calls them."""
    seen: list[tuple[ModeNorm, torch.Tensor]] = []
    hooks = [m.register_forward_pre_hook(lambda mod, inp: seen.append((mod, inp[0].detach())))
             for m in norm_layers(model)]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in hooks:
            h.remove()
    return seen


@pytest.mark.parametrize("size", [8, 32])
@pytest.mark.parametrize("arch", ARCHS)
def test_calibrate_frozen_gives_exact_whole_set_statistics(arch, size):
    model = build_model(arch, 3, 10, size, "frozen", width=WIDTH[arch], seed=3)
    one_chunk = copy.deepcopy(model)
    g = torch.Generator().manual_seed(size)
    x = torch.rand(20, 3, size, size, generator=g) * 4.0 - 1.0
    chunks = list(x.split(4))
    assert len(chunks) == 5
    model.train()
    steps: list[float] = []
    calibrate_frozen(model, lambda: iter(chunks), progress=steps.append)
    assert model.training  # the mode is restored
    layers = norm_layers(model)
    assert steps == pytest.approx([(i + 1) / len(layers) for i in range(len(layers))])
    model.eval()
    seen = _norm_inputs(model, x)
    assert len(seen) == len(layers) and {id(m) for m, _ in seen} == {id(m) for m in layers}
    outs = layer_preactivations(model, x)
    assert len(outs) == len(layers)
    for i, (layer, u) in enumerate(seen):
        assert bool(layer.calibrated)
        mean, var = _channel_stats(u)  # over the whole X, in the frozen network
        std = np.sqrt(var)
        stored_mean = layer.running_mean.double().numpy()
        stored_var = layer.running_var.double().numpy()
        np.testing.assert_allclose(stored_mean, mean, rtol=0, atol=RTOL * std.max(),
                                   err_msg=f"layer {i} mean")
        np.testing.assert_allclose(stored_var, var, rtol=RTOL, err_msg=f"layer {i} var")
        # the layer's output over X is standardised per channel
        h = outs[i].view(len(x), layer.channels, -1)  # outputs come in call order too
        h_mean, h_var = _channel_stats(h)
        scale = 1.0 + np.abs(mean) / std  # float32 rounding of u - mu is relative to |u|
        np.testing.assert_allclose(h_mean, 0.0, atol=RTOL * scale.max(),
                                   err_msg=f"layer {i} output mean")
        np.testing.assert_allclose(h_var, 1.0, rtol=RTOL * scale.max(),
                                   err_msg=f"layer {i} output var")
    # the check is not vacuous: the inputs are far from the initial (0, 1)
    assert any(np.abs(_channel_stats(u)[0]).max() > 0.1 for _, u in seen)
    assert any(np.abs(_channel_stats(u)[1] - 1).max() > 0.1 for _, u in seen)
    # chunking does not change the result
    calibrate_frozen(one_chunk, lambda: [x])
    for a, b in zip(norm_layers(model), norm_layers(one_chunk), strict=True):
        scale = float(b.running_var.sqrt().max())
        np.testing.assert_allclose(a.running_mean.numpy(), b.running_mean.numpy(), rtol=RTOL,
                                   atol=RTOL * scale)
        np.testing.assert_allclose(a.running_var.numpy(), b.running_var.numpy(), rtol=RTOL)


def test_calibrate_frozen_touches_only_frozen_layers_and_uncalibrated_input_is_not_ok():
    model = build_model("resnet9", 1, 3, 8, "frozen", width=4, seed=0)
    x = torch.rand(6, 1, 8, 8)
    with pytest.raises(RuntimeError, match="before calibrate_frozen"):
        model(x)
    bn_model = build_model("resnet9", 1, 3, 8, "bn", width=4, seed=0)
    before = [m.running_mean.clone() for m in norm_layers(bn_model)]
    calibrate_frozen(bn_model, lambda: [x])
    for b, m in zip(before, norm_layers(bn_model), strict=True):
        assert torch.equal(b, m.running_mean) and not bool(m.calibrated)


# --------------------------------------------------------------------------- build_model


def _weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()
            if not isinstance(_owner(model, n), ModeNorm)}


def _owner(model: nn.Module, name: str) -> nn.Module:
    return model.get_submodule(name.rsplit(".", 1)[0])


@pytest.mark.parametrize("arch", ARCHS)
def test_build_model_weights_depend_on_seed_not_mode(arch):
    ref = _weights(build_model(arch, 3, 10, 8, "bn", width=WIDTH[arch], seed=5))
    n_conv = sum(1 for n in ref if n.endswith("weight") and ref[n].ndim == 4)
    assert n_conv == len(norm_layers(build_model(arch, 3, 10, 8, "bn", width=WIDTH[arch])))
    for mode in NORM_MODES:
        for affine in (False, True):
            other = _weights(build_model(arch, 3, 10, 8, mode, affine=affine,
                                         width=WIDTH[arch], seed=5))
            assert list(other) == list(ref)
            for name in ref:
                assert torch.equal(other[name], ref[name]), (mode, affine, name)
    seed6 = _weights(build_model(arch, 3, 10, 8, "bn", width=WIDTH[arch], seed=6))
    for name, w in ref.items():
        if name.endswith("weight"):
            assert not torch.equal(seed6[name], w), name
    # convolutions carry no bias of their own
    model = build_model(arch, 3, 10, 8, "bn", width=WIDTH[arch])
    assert all(m.bias is None for m in model.modules() if isinstance(m, nn.Conv2d))


def test_build_model_biases_by_mode():
    def biases(mode: str, seed: int) -> list[torch.Tensor]:
        model = build_model("cnn", 3, 10, 8, mode, width=8, seed=seed)
        return [m.bias.detach().clone() for m in norm_layers(model)]

    for mode in ("zero_bias", "frozen"):
        assert all(torch.equal(b, torch.zeros_like(b)) for b in biases(mode, 3))
    r3, r3_again, r4 = biases("random_bias", 3), biases("random_bias", 3), biases("random_bias", 4)
    assert all(torch.all(b != 0) for b in r3)
    assert all(torch.equal(a, b) for a, b in zip(r3, r3_again, strict=True))
    assert all(not torch.equal(a, b) for a, b in zip(r3, r4, strict=True))
    values = torch.cat(r3)
    assert len(torch.unique(values)) == len(values)  # layers do not share one draw
    assert 0.5 < float(values.std()) < 1.5 and abs(float(values.mean())) < 0.5  # ~ N(0, 1)


def test_build_model_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_model("resnet9", 3, 10, 8, "random_bias", width=4, seed=9)
    assert torch.equal(torch.rand(3), expected)


def test_build_model_rejects_unknown_arch():
    with pytest.raises(ValueError, match="unknown arch"):
        build_model("vgg", 3, 10, 32, "bn")


# --------------------------------------------------------------------------- shapes, backward


@pytest.mark.parametrize("in_ch", [1, 3])
@pytest.mark.parametrize("size", [8, 32, 64])
@pytest.mark.parametrize("arch", ARCHS)
def test_output_shape_and_backward(arch, size, in_ch):
    model = build_model(arch, in_ch, 7, size, "bn", affine=True, width=WIDTH[arch], seed=1)
    model.train()
    x = torch.rand(3, in_ch, size, size, generator=torch.Generator().manual_seed(size))
    out = model(x)
    assert out.shape == (3, 7) and torch.isfinite(out).all()
    nn.functional.cross_entropy(out, torch.tensor([0, 3, 6])).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert any(float(p.grad.abs().max()) > 0 for p in model.parameters())
    model.eval()
    assert model(x).shape == (3, 7)


@pytest.mark.parametrize("mode", NORM_MODES)
def test_every_mode_trains_one_step(mode):
    model = build_model("resnet9", 3, 4, 8, mode, width=4, seed=2)
    x = torch.rand(6, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    if mode == "frozen":
        calibrate_frozen(model, lambda: [x])
    model.train()
    out = model(x)
    assert out.shape == (6, 4)
    out.square().mean().backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None and torch.isfinite(g).all() for g in grads.values())
    if mode in ("frozen", "zero_bias", "random_bias"):
        assert any(float(grads[n].abs().max()) > 0 for n in grads
                   if isinstance(_owner(model, n), ModeNorm))  # the learnable norm bias


# --------------------------------------------------------------------------- preactivations


@pytest.mark.parametrize("mode", ["zero_bias", "random_bias", "bn"])
def test_layer_preactivations_one_per_norm_layer(mode):
    model = build_model("resnet9", 3, 10, 8, mode, width=4, seed=0).eval()
    x = torch.rand(5, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    outs = layer_preactivations(model, x)
    layers = norm_layers(model)
    assert len(outs) == len(layers) == 8
    # resnet9 at 8x8: widths w, 2w, [2w, 2w], 4w, 8w, [8w, 8w] at 8, 8, 4, 4, 4, 2, 1, 1
    w = 4
    spatial = [64, 64, 16, 16, 16, 4, 1, 1]
    channels = [w, 2 * w, 2 * w, 2 * w, 4 * w, 8 * w, 8 * w, 8 * w]
    assert [tuple(o.shape) for o in outs] == [(5, c * s) for c, s in
                                              zip(channels, spatial, strict=True)]
    assert [m.channels for m in layers] == channels
    # the first is the norm layer's output on the first convolution (conv(x) + b here)
    with torch.no_grad():
        first = layers[0](model[0][0](x)).flatten(1)
    np.testing.assert_allclose(outs[0].detach().numpy(), first.numpy(), rtol=1e-6, atol=1e-6)
    if mode == "zero_bias":
        np.testing.assert_allclose(outs[0].detach().numpy(),
                                   model[0][0](x).detach().flatten(1).numpy(), rtol=1e-6)
    # the hooks are gone afterwards: a second call gives as many tensors, no more
    assert all(not m._forward_hooks for m in layers)
    assert len(layer_preactivations(model, x)) == 8


@pytest.mark.parametrize("arch", ARCHS)
def test_layer_preactivations_units_cover_each_channel(arch):
    model = build_model(arch, 1, 10, 32, "zero_bias", width=WIDTH[arch], seed=0).eval()
    x = torch.rand(2, 1, 32, 32)
    outs = layer_preactivations(model, x)
    layers = norm_layers(model)
    assert len(outs) == len(layers)
    seen = _norm_inputs(model, x)
    # outputs come in call order; each is (N, C*H*W) for its layer's input (zero_bias: h = u)
    for (layer, u), o in zip(seen, outs, strict=True):
        assert o.shape == (2, u[0].numel()) and u.shape[1] == layer.channels
        np.testing.assert_allclose(o.detach().numpy(), u.flatten(1).numpy(), rtol=1e-6)
