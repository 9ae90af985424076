"""Decision-boundary jitter across mini-batches (BN paper section 5, Figure 6): its settings,
and the training ``bnviz jitter --train-steps`` or the jitter page's training job
(``jitter-training``) runs first, on the same network (:class:`JitterNetwork`)."""

from __future__ import annotations

from bnviz.caps import (
    ACTIVATIONS,
    DATASETS,
    JITTER_LIMITS,
    LEARNING_RATE,
    MAX_EXTENT,
    OPTIMIZERS,
    SEED_MAX,
)
from bnviz.params.cost import check_alpha
from bnviz.params.fields import InputError, choice, real, whole, whole_or_none
from bnviz.params.model import model_check, params_dataclass

__all__ = ["JitterNetwork", "JitterParams", "TrainingJobParams", "TrainingParams"]

_J = JITTER_LIMITS


@params_dataclass
class JitterNetwork:
    """The jitter page's network and data: a random BN network with a two-logit head (its
    weights from ``weight_seed``) on a binary task of ``n_points`` points (from
    ``data_seed``), the names and defaults of the explorer's :class:`~bnviz.params.
    PartitionParams`.  Shared by the jitter settings and the training job, so the network a
    training starts from is the one the page shows."""

    dataset: choice(DATASETS) = "moons"
    n_points: whole(*_J["n_points"]) = 200
    data_seed: whole(0, SEED_MAX) = 0
    depth: whole(*_J["depth"]) = 3
    width: whole(*_J["width"]) = 8
    activation: choice(ACTIVATIONS) = "leaky_relu"
    alpha: real() = 0.1
    #: Seeds the random weights and, when the network is trained first, the order of the
    #: training's mini-batches (as the explorer's trained weights).
    weight_seed: whole(0, SEED_MAX) = 0

    @model_check
    def _slope(self) -> None:
        check_alpha(self.activation, self.alpha)

    def _batch_fits(self, batch_size: int) -> None:
        if batch_size > self.n_points:
            raise InputError(f"{batch_size} is larger than the data ({self.n_points} points)",
                             "batch_size")


@params_dataclass
class JitterParams(JitterNetwork):
    """K mini-batch realisations of a BN network's decision boundary.

    Their cost is bounded by the network (depth, width), the data and batch sizes and the
    number of realisations (:data:`~bnviz.caps.JITTER_LIMITS`); all K partitions are
    cut together under :data:`~bnviz.caps.JITTER_MAX_REGIONS`.
    """

    batch_size: whole(*_J["batch_size"]) = 16
    realizations: whole(*_J["realizations"]) = 16
    virtual_batch_size: whole_or_none(2, _J["batch_size"][1]) = None  # None: plain BN
    #: Seeds the K mini-batches (and a virtual batch's noise).
    batch_seed: whole(0, SEED_MAX) = 0
    extent: real(0.0, MAX_EXTENT, lo_open=True) = 3.0

    @model_check
    def _consistent(self) -> None:
        self._batch_fits(self.batch_size)
        vb = self.virtual_batch_size
        if vb is not None and vb > self.batch_size:
            raise InputError(f"enter a whole number from 2 to the batch size "
                             f"({self.batch_size}), got {vb}", "virtual_batch_size")


@params_dataclass
class TrainingParams:
    """Training a jitter network first (mini-batches of the jitter batch size): the options
    of ``bnviz jitter --train-steps`` (0: untrained), named as the page's training job
    (:class:`TrainingJobParams`) names them."""

    train_steps: whole(*_J["train_steps"]) = 0
    optimizer: choice(OPTIMIZERS) = "adam"
    lr: real(*LEARNING_RATE, lo_open=True) = 0.01


@params_dataclass
class TrainingJobParams(JitterNetwork):
    """The jitter page's training job (``jitter-training``): the page's network trained for
    ``train_steps`` mini-batches of ``batch_size`` in the order of ``weight_seed``: the
    parameter ``bnviz jitter --train-steps`` names, with its bounds, but at least one step
    (else there is nothing to run), and 500 where the command's default is 0 (untrained: the
    page before its train button is pressed; 500 is what that button trains)."""

    train_steps: whole(1, _J["train_steps"][1]) = 500
    batch_size: whole(*_J["batch_size"]) = 16
    lr: real(*LEARNING_RATE, lo_open=True) = 0.01
    optimizer: choice(OPTIMIZERS) = "adam"

    @model_check
    def _consistent(self) -> None:
        self._batch_fits(self.batch_size)
