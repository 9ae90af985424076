"""BN's statistics folded into a plain network's weights: the fair form of the BN paper's
"smart initialisation" (section 4, Figures 5 and 10).

The paper trains its BN-initialised network with the statistics frozen: each layer computes
(W z - mu) / sigma + b with W trained. That is the same function as a layer with weights
W / sigma and bias -mu / sigma, but not the same training: the frozen 1/sigma multiplies W's
gradient on every step, so a layer whose sigma is 0.25 learns as if its learning rate were
16 times larger (a step on W moves W/sigma by lr/sigma^2 times the gradient of W/sigma), and
one global learning rate cannot serve every layer (issue 29). Folding the statistics into the
weights once, before training, starts from exactly the frozen network's function (its
partition, its hyperplanes on the data: eq. 3 and Theorem 1) and then trains an ordinary
network, with the same learning rate for every layer as the zero-bias and random-bias arms.

* ``folded``: W <- W / sigma, b <- -mu / sigma (where BN puts the hyperplanes);
* ``scale_only``: W <- W / sigma, b <- 0 (BN's scale without moving the hyperplanes).

sigma is BN's floored, biased std (:func:`bnviz.core.bn.floored_sigma`), mu and sigma exact
over the whole training set and computed layer by layer through the already-folded layers
below (:func:`bnviz.images.networks.calibrate_frozen`): for ``scale_only`` that is the
uncentred network it will train, so each of its layers starts with unit std too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from bnviz.core.bn import floored_sigma
from bnviz.images.networks import ModeNorm, calibrate_frozen

__all__ = ["FOLDED_MODES", "fold_statistics"]

#: The modes whose statistics are folded into the weights before training.
FOLDED_MODES: tuple[str, ...] = ("folded", "scale_only")


def _conv_norm_pairs(model: nn.Module) -> list[tuple[nn.Module, ModeNorm]]:
    """(the layer before it, the norm layer) for every norm layer in a folded mode: each norm
    layer follows its convolution (or linear layer) in the same container."""
    pairs = []
    for parent in model.modules():
        children = list(parent.children())
        for before, norm in zip(children, children[1:], strict=False):
            if isinstance(norm, ModeNorm) and norm.mode in FOLDED_MODES:
                if not isinstance(before, (nn.Conv2d, nn.Linear)) or before.bias is not None:
                    raise ValueError("a folded norm layer must follow a convolution or linear "
                                     "layer without a bias of its own")
                pairs.append((before, norm))
    return pairs


@torch.no_grad()
def fold_statistics(model: nn.Module, batches: Callable[[], Iterable[torch.Tensor]],
                    progress: Callable[[float], None] | None = None) -> int:
    """Fold BN's statistics over ``batches()`` (the training set) into every ``folded`` and
    ``scale_only`` layer of ``model`` (see the module docstring); returns how many layers.

    Layer by layer in forward order, each calibrated through the layers below as they will
    train (already folded), then folded at once: a ``folded`` layer's pre-activations over
    the training set have mean 0 and std 1, a ``scale_only`` layer's std 1, and a folded
    model computes what the frozen model of the same weights computes, to float rounding."""
    pairs = _conv_norm_pairs(model)
    before = {id(norm): (layer, norm.mode) for layer, norm in pairs}

    def fold(norm: ModeNorm) -> None:
        layer, mode = before[id(norm)]
        mu, var = norm.running_mean.double(), norm.running_var.double()
        sigma = floored_sigma(mu, var)
        scale = (1.0 / sigma).view(-1, *([1] * (layer.weight.ndim - 1)))
        layer.weight.copy_((layer.weight.double() * scale).to(layer.weight.dtype))
        norm.bias.copy_((-mu / sigma if mode == "folded" else torch.zeros_like(mu)
                         ).to(norm.bias.dtype))
        norm.mode = mode  # from here on a plain layer: u + b

    for _, norm in pairs:
        norm.mode = "frozen"
    try:
        calibrate_frozen(model, batches, progress, after_layer=fold)
    finally:
        for _, norm in pairs:
            norm.mode = before[id(norm)][1]
    return len(pairs)
