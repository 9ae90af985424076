"""The networks of the slice concentration experiment (:mod:`bnviz.slices.concentration`):
per seed, one network per arm, built and trained by the image jobs' own code.

* ``bn``: BN as it trains (:class:`bnviz.images.networks.ModeNorm` mode ``bn``: each
  mini-batch's mean and biased variance in training, running averages kept for eval);
* ``zero_bias``, ``random_bias``: a learnable per-channel bias, initialised at 0 or N(0, 1);
* ``scale_only``: BN without its centring: the training set's per-unit sigma folded into the
  weights before training, bias 0 (:func:`bnviz.images.folding.fold_statistics`), then
  trained as a plain network.

All four arms of a seed start from the same weights (:func:`bnviz.images.networks.
build_model` draws them from the seed alone), and are trained by the jobs' training step
(``bnviz.images.training``: SGD with momentum 0.9, gradients clipped at norm 5, the epoch's
order drawn from the seed), as ``bnviz jobs run smart-init`` and ``jitter-noise`` train
theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from bnviz.images.folding import FOLDED_MODES, fold_statistics
from bnviz.images.networks import build_model
from bnviz.images.training import ImageTensors, _train_arm, chunks, test_accuracy
from bnviz.records.types import DistInfo, RecordingContext

__all__ = ["ARMS", "Recipe", "cpu_tensors", "initial_network", "train_network"]

#: The arms, BN first, each with its norm mode (:data:`bnviz.images.networks.NORM_MODES`).
ARMS: dict[str, str] = {"bn": "bn", "zero_bias": "zero_bias", "random_bias": "random_bias",
                        "scale_only": "scale_only"}


@dataclass(frozen=True)
class Recipe:
    """The architecture and its training, the same for every arm and seed."""

    arch: str = "resnet9"
    width: int = 8
    epochs: int = 3
    lr: float = 0.05
    batch_size: int = 64


def initial_network(arm: str, seed: int, data: ImageTensors, recipe: Recipe) -> nn.Module:
    """The arm's network at initialisation (seed ``seed``): the seed's weights with the arm's
    norm mode, BN's scale folded in for ``scale_only``."""
    mode = ARMS[arm]
    shape = tuple(data.x_train.shape[1:])
    model = build_model(recipe.arch, shape[0], data.classes, shape[1], mode,
                        width=recipe.width, seed=seed).to(data.x_train.device)
    if mode in FOLDED_MODES:
        fold_statistics(model, lambda: chunks(data.x_train))
    return model.eval()


def train_network(model: nn.Module, seed: int, data: ImageTensors, recipe: Recipe) -> float:
    """Train ``model`` in place for ``recipe.epochs`` epochs with the jobs' step (the seed
    orders the epochs); its test accuracy after (eval mode: BN's running statistics)."""
    params = {"lr": recipe.lr, "batch_size": recipe.batch_size, "epochs": recipe.epochs}
    ctx = RecordingContext(device=data.x_train.device)
    _train_arm(model, data, params, seed, ctx, lambda *row: None, lambda: None, DistInfo())
    model.eval()
    return test_accuracy(model, data.x_test, data.y_test)


def cpu_tensors(name: str) -> ImageTensors:
    """The data set as the jobs standardise it (the training set's mean and std), on the
    CPU."""
    from bnviz.data.imagedata import check_available, load_image_data, parse_dataset_name
    from bnviz.images.training import standardise

    return standardise(load_image_data(check_available(parse_dataset_name(name))),
                       torch.device("cpu"))
