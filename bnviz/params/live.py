"""Live training (``bnviz train``, the explorer's play button): its settings and their caps.

Bounded before any work: the network, the data, the steps and the frames
(:data:`~bnviz.caps.TRAIN_LIMITS`), and the regions every frame's exact partition may
have, estimated for the network's widths (:func:`bnviz.params.cost.expected_regions`, which
holds for random networks; training may add regions, so each frame's cut is also capped by
:data:`~bnviz.caps.TRAIN_MAX_REGIONS`), times the frames, against
:data:`~bnviz.caps.TRAIN_MAX_FRAME_REGIONS`.
"""

from __future__ import annotations

from bnviz.caps import (
    ACTIVATIONS,
    DATASETS,
    LEARNING_RATE,
    MAX_EXTENT,
    MODES,
    OPTIMIZERS,
    SEED_MAX,
    TRAIN_LIMITS,
    TRAIN_MAX_FRAME_REGIONS,
    TRAIN_MAX_REGIONS,
    TRAIN_STEPS_PER_FRAME,
)
from bnviz.params.cost import check_alpha, check_partition_size, expected_regions
from bnviz.params.fields import InputError, choice, real, whole
from bnviz.params.model import model_check, params_dataclass

__all__ = ["LiveFrameParams", "LiveTrainingParams"]

_T = TRAIN_LIMITS


@params_dataclass
class LiveTrainingParams:
    """A 2D network trained step by step with a frame every few steps
    (:mod:`bnviz.views.trainer`): the seed's random network with a two-logit head, on
    ``n_points`` points of ``dataset`` (classes mod 2) generated from ``data_seed``: the
    explorer's names (:class:`~bnviz.params.partition.PartitionParams`)."""

    dataset: choice(DATASETS) = "moons"
    n_points: whole(*_T["n_points"]) = 100
    weight_seed: whole(0, SEED_MAX) = 0  # the random start, and the mini-batches' order
    data_seed: whole(0, SEED_MAX) = 0
    depth: whole(*_T["depth"]) = 4
    width: whole(*_T["width"]) = 8
    activation: choice(ACTIVATIONS) = "leaky_relu"
    alpha: real() = 0.1
    mode: choice(MODES) = "bn"
    steps: whole(*_T["steps"]) = 300
    frames: whole(*_T["frames"]) = 30
    batch_size: whole(*_T["batch_size"]) = 32
    lr: real(*LEARNING_RATE, lo_open=True) = 0.05
    optimizer: choice(OPTIMIZERS) = "adam"
    extent: real(0.0, MAX_EXTENT, lo_open=True) = 3.0

    @model_check
    def _consistent(self) -> None:
        check_alpha(self.activation, self.alpha)
        if self.batch_size > self.n_points:
            raise InputError(f"{self.batch_size} is larger than the data ({self.n_points} "
                             "points)",
                             "batch_size")
        widths = [self.width] * self.depth
        check_partition_size(widths, self.activation, self.mode_of_partition, self.extent,
                             TRAIN_MAX_REGIONS)
        total = self.frames * expected_regions(widths, self.activation,
                                               self.mode_of_partition, self.extent)[-1]
        if total > TRAIN_MAX_FRAME_REGIONS:
            raise InputError(f"{self.frames} frames of about {total / self.frames:.2g} regions "
                             f"each is over the cap of {TRAIN_MAX_FRAME_REGIONS:.2g} regions "
                             "in all: record fewer frames, or lower the width or the depth",
                             "frames")

    @property
    def mode_of_partition(self) -> str:
        """How a frame's network is cut: with BN, or as a random-bias network (the learned
        biases; zero bias stops being zero after the first step)."""
        return "bn" if self.mode == "bn" else "random_bias"


@params_dataclass
class LiveFrameParams(LiveTrainingParams):
    """One frame of the explorer's live training (a request): ``steps`` are the steps per
    frame, at most :data:`~bnviz.caps.TRAIN_STEPS_PER_FRAME` (a run's 20 000 steps
    are checked against the steps its state has trained)."""

    steps: whole(*TRAIN_STEPS_PER_FRAME) = 5
