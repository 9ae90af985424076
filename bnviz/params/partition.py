"""The exact partition's parameters: one model for the explorer page, ``bnviz partition``,
``bnviz figure9`` and the lecture's scenes (issue 43: one name and one default for each).

The model's bounds are the engine's (:mod:`bnviz.caps`); the page holds its controls to
tighter ones, which keep one web request cheap (:data:`~bnviz.caps.EXPLORER_LIMITS`), checked
by :meth:`PartitionParams.from_page` on what a page, a URL or a lecture step sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any

from bnviz.caps import (
    ACTIVATIONS,
    DATASETS,
    EXPLORER_LIMITS,
    MAX_DEPTH,
    MAX_EXTENT,
    MAX_POINTS,
    MAX_REGIONS,
    MAX_WIDTH,
    MODES,
    SCOPES,
    SEED_MAX,
    WEIGHTS,
)
from bnviz.messages import brief
from bnviz.params.cost import (
    check_alpha,
    check_bn_batch_size,
    check_network_size,
    check_partition_size,
)
from bnviz.params.fields import (
    InputError,
    choice,
    count_or_all,
    int_list,
    real,
    whole,
)
from bnviz.params.model import (
    CheckInfo,
    field_check,
    model_check,
    params_dataclass,
    parse,
)

__all__ = ["WEIGHTS", "Figure9Params", "PartitionParams"]

_E = EXPLORER_LIMITS


def _int(name: str) -> Any:
    lo, hi = _E[name]
    return whole(int(lo), int(hi))


def _float(name: str) -> Any:
    return real(*_E[name])


#: Each field the page bounds, and its bounds' key in EXPLORER_LIMITS.
_PAGE_BOUNDED = {**{name: name for name in _E if name != "shift"},
                 "shift_x": "shift", "shift_y": "shift"}


@params_dataclass
class PartitionParams:
    """The exact partition of a random (or trained) 2D network on generated data, with BN's
    sliders (BN paper Figures 1, 2 and 9; issue 3): every control of the explorer page and
    every option of ``bnviz partition`` but the files.

    Settings that depend on each other are clamped, not refused (a smaller depth keeps the
    chosen layer in range), so moving one control never invalidates another. Checked before
    any work: the network's size and a BN batch of at least 2 points; the expected regions
    by :meth:`check_cost`, which the command line calls. The batch size is checked against
    the data (which include a page's added points, or a file's) when the partition is
    computed.
    """

    depth: whole(1, MAX_DEPTH) = 4
    width: whole(1, MAX_WIDTH) = 8
    activation: choice(ACTIVATIONS) = "leaky_relu"
    alpha: real() = 0.1
    mode: choice(MODES) = "bn"
    weight_seed: whole(0, SEED_MAX) = 0
    dataset: choice(DATASETS) = "moons"
    n_points: whole(1, MAX_POINTS) = 100
    data_seed: whole(0, SEED_MAX) = 0
    batch_size: count_or_all(2, MAX_POINTS) = None  # None: all data (test-time statistics)
    batch_seed: whole(0, SEED_MAX) = 0
    mu_t: _float("mu_t") = 1.0
    sigma_s: _float("sigma_s") = 1.0
    scope: choice(SCOPES) = "all"
    target_layer: whole(1, MAX_DEPTH) = 1
    target_unit: whole(0, MAX_WIDTH - 1) = 0
    layer: whole(1, MAX_DEPTH) = 4  # the highlighted layer (the page's views)
    extent: real(0.0, MAX_EXTENT, lo_open=True) = 3.0
    shift_x: real(-MAX_EXTENT, MAX_EXTENT) = 0.0  # the data moved off the origin (Figure 1)
    shift_y: real(-MAX_EXTENT, MAX_EXTENT) = 0.0
    weights: choice(WEIGHTS) = "random"
    #: Logits of a random classifier head (its decision boundary is drawn; 0: none).
    head: whole(0, 2) = 0
    #: Recompute later layers' mu, sigma after a slider moved (False: frozen, as the explorer
    #: and the paper's Figure 2).
    recompute_statistics: bool = False
    #: The layer widths of a network read from a file (None: ``depth`` layers of ``width``).
    widths: tuple[int, ...] | None = None
    #: Whether the data come from a file (their number is known only once read).
    data_file: bool = False

    @field_check("target_layer", "layer", mode="after")
    @classmethod
    def _within_depth(cls, value: int, info: CheckInfo) -> int:
        return min(value, info.data.get("depth", value))

    @field_check("target_unit", mode="after")
    @classmethod
    def _within_width(cls, value: int, info: CheckInfo) -> int:
        return min(value, info.data.get("width", value + 1) - 1)

    @property
    def layer_widths(self) -> tuple[int, ...]:
        return self.widths if self.widths is not None else (self.width,) * self.depth

    @model_check
    def _fits(self) -> None:
        widths = self.layer_widths
        check_network_size(widths, "widths")
        check_alpha(self.activation, self.alpha)
        if self.widths is not None and self.weights != "random":
            raise InputError("a network read from a file is used as it is: weights must be "
                             "random (the file's)", "weights")
        if self.widths is not None and self.scope != "all":
            if self.target_layer > len(widths):
                raise InputError(f"the network has {len(widths)} layers, got "
                                 f"{self.target_layer}", "target_layer")
            target_width = widths[self.target_layer - 1]
            if self.scope == "unit" and self.target_unit >= target_width:
                raise InputError(f"layer {self.target_layer} has units 0..{target_width - 1}, "
                                 f"got {self.target_unit}", "target_unit")
        if not self.data_file:
            check_bn_batch_size(self.mode, self.batch_size, self.n_points, "n_points")

    def check_cost(self, max_regions: int = MAX_REGIONS) -> None:
        """Refuse at once (InputError) when a layer's expected regions are over
        ``max_regions`` (:func:`bnviz.params.cost.expected_regions`, an estimate for random
        weights): what the command line checks before any work. The page does not: its own
        region cap (:data:`~bnviz.caps.EXPLORER_MAX_REGIONS`) stops a too fine cut within
        about a second, and a slider's state stays valid whatever its cost."""
        check_partition_size(self.layer_widths, self.activation, self.mode, self.extent,
                             max_regions)

    @classmethod
    def from_page(cls, raw: Any) -> PartitionParams:
        """What a page, a URL or a lecture step sends: raw values (strings from a URL,
        numbers from controls; missing -> default, unknown keys ignored), held to the
        page's bounds too (:data:`~bnviz.caps.EXPLORER_LIMITS`), checked first: one
        InputError names every setting outside them, else the model's checks run."""
        outside: dict[str, str] = {}
        for name, key in _PAGE_BOUNDED.items():
            lo, hi = _E[key]
            try:  # a value that is no number is the model's to name
                value = float(raw[name]) if isinstance(raw, Mapping) and name in raw else None
            except (TypeError, ValueError, OverflowError):
                value = None
            if value is not None and not lo <= value <= hi:  # NaN: the model's
                outside[name] = (f"{name.replace('_', ' ')}: {lo:g} to {hi:g} on this page, "
                                 f"got {value:g}")
        if outside:
            raise InputError("; ".join(outside.values()), next(iter(outside)))
        return parse(cls, raw)

    def to_query(self) -> dict[str, str]:
        """The settings as URL query values (only those that differ from the defaults)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = "all" if value is None else f"{value:.12g}" if isinstance(
                    value, float) else str(value)
        return out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@params_dataclass
class Figure9Params:
    """``bnviz figure9``: BN paper Figure 9 as the explorer's preset computes it (a trained
    4-layer network on data off the origin, two layers' TLS errors sigma^2/||w||^2, eq. 8),
    within the explorer's bounds (the same computation), with its names and defaults:
    ``weight_seed`` seeds the weights (and the order of the training's mini-batches, as the
    explorer's trained weights), ``data_seed`` the data."""

    dataset: choice(DATASETS) = "moons"
    n_points: _int("n_points") = 100
    weight_seed: _int("weight_seed") = 0
    data_seed: _int("data_seed") = 0
    depth: _int("depth") = 4
    width: _int("width") = 6
    activation: choice(ACTIVATIONS) = "leaky_relu"
    weights: choice(WEIGHTS) = "trained"
    shift_x: _float("shift") = 1.0
    shift_y: _float("shift") = 1.0
    extent: _float("extent") = 3.0
    #: The two layers shown, e.g. "1,4" (None: 1 and the depth, as the paper's Figure 9).
    layers: tuple[int, ...] | None = None

    @field_check("layers", mode="before")
    @classmethod
    def _two_layers(cls, raw: Any, info: CheckInfo) -> tuple[int, ...]:
        depth = info.data.get("depth")
        if depth is None:  # the depth itself was refused: that is the message
            return ()
        if raw is None:
            return (1, depth) if depth > 1 else (1,)
        layers = int_list(raw)
        if not 1 <= len(layers) <= 2 or len(set(layers)) != len(layers) or \
                min(layers) < 1 or max(layers) > depth:
            raise InputError(f"one or two different layer numbers from 1 to the depth "
                             f"({depth}), comma-separated, got {brief(raw)}")
        return layers

    def explorer_settings(self) -> PartitionParams:
        """The explorer's settings of this computation (its Figure 9 preset at the
        defaults)."""
        return PartitionParams(depth=self.depth, width=self.width, activation=self.activation,
                              weight_seed=self.weight_seed, dataset=self.dataset,
                              n_points=self.n_points, data_seed=self.data_seed,
                              layer=max(self.layers), extent=self.extent,
                              shift_x=self.shift_x, shift_y=self.shift_y, weights=self.weights)
