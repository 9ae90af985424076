"""BN's statistics folded into the weights (bnviz.images.folding): the fair smart
initialisation of issue 29. Checked against independent computations in float64 numpy:

* a folded network computes what the paper's frozen network of the same weights computes;
* after folding, every folded layer's pre-activations over the training images have mean 0
  and std 1 (a scale-only layer's std 1): the statistics are those of the network that trains;
* the frozen network's weight gradients are the folded network's divided by sigma, per
  channel: why the frozen arm does not train like the others (its learning rate is rescaled).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bnviz.core.bn import floored_sigma
from bnviz.images.folding import fold_statistics
from bnviz.images.networks import (
    ARCHS,
    ModeNorm,
    build_model,
    calibrate_frozen,
    layer_preactivations,
    norm_layers,
)

WIDTH = {"resnet9": 4, "cnn": 8, "resnet50": 2}


def _images(n: int = 48, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scale = torch.linspace(0.5, 3.0, 3).view(1, 3, 1, 1)
    return torch.randn(n, 3, 16, 16, generator=g) * scale + 0.7


def _batches(x: torch.Tensor):
    return lambda: iter([x[:20], x[20:]])  # two chunks: statistics over the whole set


def _pair(arch: str, mode: str, x: torch.Tensor) -> torch.nn.Module:
    model = build_model(arch, 3, 5, 16, mode, width=WIDTH[arch], seed=4).double()
    if mode == "frozen":
        calibrate_frozen(model, _batches(x))
    else:
        assert fold_statistics(model, _batches(x)) == len(norm_layers(model))
    return model.eval()


@pytest.mark.parametrize("arch", ARCHS)
def test_folded_network_computes_the_frozen_network(arch):
    x = _images().double()
    frozen, folded = _pair(arch, "frozen", x), _pair(arch, "folded", x)
    assert all(m.mode == "folded" for m in norm_layers(folded))
    with torch.no_grad():
        a, b = frozen(x).numpy(), folded(x).numpy()
    # the frozen layer normalises in float32 and keeps its statistics in float32
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6 * np.abs(a).max())
    # and it is no longer BN: the fold changed the weights, not the norm layers' arithmetic
    first = next(m for m in folded.modules() if isinstance(m, torch.nn.Conv2d))
    start = next(m for m in build_model(arch, 3, 5, 16, "folded", width=WIDTH[arch],
                                        seed=4).modules() if isinstance(m, torch.nn.Conv2d))
    assert not torch.allclose(first.weight.float(), start.weight)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("mode", ["folded", "scale_only"])
def test_every_folded_layer_starts_standardised_on_the_training_images(arch, mode):
    x = _images().double()
    model = _pair(arch, mode, x)
    with torch.no_grad():
        outs = layer_preactivations(model, x)
    for layer, h in zip(norm_layers(model), outs, strict=True):
        # the norm layer's output, per channel over images and positions, in float64 numpy
        a = h.view(len(x), layer.channels, -1).permute(1, 0, 2).reshape(layer.channels, -1)
        a = a.numpy()
        live = a.std(1) > 1e-6 * np.sqrt((a * a).mean(1))  # a channel BN floors (dead)
        # (the statistics are stored in float32: 1e-7 relative)
        np.testing.assert_allclose(a.std(1)[live], 1.0, rtol=1e-6)
        if mode == "folded":
            np.testing.assert_allclose(a.mean(1)[live], 0.0, atol=1e-6)
    if mode == "scale_only":
        assert all(float(m.bias.detach().abs().max()) == 0.0 for m in norm_layers(model))


def test_frozen_gradients_are_the_folded_ones_over_sigma():
    """A frozen layer computes (W z - mu)/sigma + b with W trained: dL/dW is dL/dW' / sigma
    for W' = W/sigma, the folded network's weights (the same function). A step of size lr
    on W moves W' by lr/sigma^2 times its gradient: the frozen arm's per-layer rescaling."""
    x = _images().double()
    frozen, folded = _pair("cnn", "frozen", x), _pair("cnn", "folded", x)  # eval: no dropout
    y = torch.arange(len(x)) % 5
    for model in (frozen, folded):
        F.cross_entropy(model(x), y).backward()
    convs = [[m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
             for net in (frozen, folded)]
    norms = [m for m in frozen.modules() if isinstance(m, ModeNorm)]
    assert len(convs[0]) == len(norms)
    ratios = []
    for conv_frozen, conv_folded, norm in zip(*convs, norms, strict=True):
        sigma = floored_sigma(norm.running_mean.double(), norm.running_var.double())
        want = conv_folded.weight.grad / sigma.view(-1, 1, 1, 1)
        np.testing.assert_allclose(conv_frozen.weight.grad.numpy(), want.numpy(), rtol=1e-4,
                                   atol=1e-5 * float(want.abs().max()))
        ratios.append(float(sigma.min()))
    assert min(ratios) < 0.9 or max(ratios) > 1.1  # the rescaling is real here, not 1


def test_folding_refuses_a_norm_layer_after_a_biased_layer():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=True), ModeNorm(4, "folded"))
    with pytest.raises(ValueError, match="without a bias"):
        fold_statistics(model, _batches(_images()))
