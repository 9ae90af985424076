"""Where the partition concentrates (BN paper Figure 3): the command line's ``density`` and
the density page's background run.  One cost cap for both: grid^2 x depth x width^2
multiply-adds (:func:`bnviz.params.cost.check_density_work`)."""

from __future__ import annotations

from typing import Any

from bnviz.caps import (
    ACTIVATIONS,
    DATASETS,
    DENSITY_LIMITS,
    DENSITY_PAGE_LIMITS,
    MAX_EXTENT,
    MODES,
    SEED_MAX,
)
from bnviz.messages import brief
from bnviz.params.cost import check_density_work
from bnviz.params.fields import InputError, choice, int_list, real, whole
from bnviz.params.model import CheckInfo, field_check, model_check, params_dataclass

__all__ = ["DensityPageParams", "DensityParams", "default_layers"]

_D = DENSITY_LIMITS
_P = DENSITY_PAGE_LIMITS


def default_layers(depth: int) -> tuple[int, ...]:
    """First, middle and last layer (the paper's 1, 7, 11 of 11)."""
    middle = (depth + 1) // 2 + 1 if depth > 2 else 1
    return tuple(sorted({1, middle, depth}))


@params_dataclass
class DensityParams:
    """``bnviz density``: one mode, the layers to count, the grid and the ball radius (the
    network and data named and defaulted as the density page's :class:`DensityPageParams`
    and the explorer's)."""

    depth: whole(*_D["depth"]) = 11
    width: whole(*_D["width"]) = 1024
    activation: choice(ACTIVATIONS) = "leaky_relu"
    dataset: choice(DATASETS) = "star"
    n_points: whole(*_D["n_points"]) = 50
    weight_seed: whole(0, SEED_MAX) = 0
    data_seed: whole(0, SEED_MAX) = 0
    mode: choice(MODES) = "bn"
    #: Layers to count, e.g. "1,7,11" (None: :func:`default_layers`).
    layers: tuple[int, ...] | None = None
    grid: whole(*_D["grid"]) = 128
    eps: real(*_D["eps"]) = 1.0
    #: 'Near the data' distance for the near-data ratio.
    radius: real(0.0, MAX_EXTENT, lo_open=True) = 0.15
    extent: real(0.0, MAX_EXTENT, lo_open=True) = 3.0

    @field_check("layers", mode="before")
    @classmethod
    def _layer_list(cls, raw: Any, info: CheckInfo) -> tuple[int, ...]:
        depth = info.data.get("depth")
        if depth is None:  # the depth itself was refused: that is the message
            return ()
        if raw is None:
            return default_layers(depth)
        layers = tuple(sorted(set(int_list(raw))))
        if not layers or layers[0] < 1 or layers[-1] > depth:
            raise InputError(f"comma-separated layer numbers from 1 to the depth ({depth}), "
                             f"got {brief(raw)}")
        return layers

    @model_check
    def _cheap_enough(self) -> None:
        check_density_work(self.grid, self.depth, self.width)


@params_dataclass
class DensityPageParams:
    """The density page's controls: Figure 3 for the three modes in one background run (the
    names and defaults of :class:`DensityParams`, within the page's bounds; the three modes'
    networks share the weight seed)."""

    depth: whole(*_P["depth"]) = 11
    width: whole(*_P["width"]) = 1024
    activation: choice(("leaky_relu",)) = "leaky_relu"
    dataset: choice(DATASETS) = "star"
    n_points: whole(*_P["n_points"]) = 50
    weight_seed: whole(*_P["weight_seed"]) = 0
    data_seed: whole(*_P["data_seed"]) = 0
    grid: whole(*_P["grid"]) = 128
    eps: real(*_P["eps"]) = 1.0

    @model_check
    def _cheap_enough(self) -> None:
        check_density_work(self.grid, self.depth, self.width)
