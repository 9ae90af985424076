"""The exact partition's parameters: the command line's ``partition`` and the explorer page.

Both describe one computation (a random 2D network, its data and batch, the mu and sigma
sliders, the box); they differ in names (the CLI's option names, the page's controls) and in
bounds (the page keeps one web request cheap: :data:`~bnviz.caps.EXPLORER_LIMITS`).
"""

from __future__ import annotations

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
    whole_or_none,
)
from bnviz.params.model import (
    CheckInfo,
    field_check,
    model_check,
    params_dataclass,
    parse,
)

__all__ = ["WEIGHTS", "ExplorerParams", "Figure9Params", "PartitionParams"]

_E = EXPLORER_LIMITS
#: Where the explorer's weights come from: ``random`` (He-normal from the weight seed) or
#: ``trained`` (that random start trained on the data with BN: the BN paper's Figure 9 shows
#: a trained toy network; :func:`bnviz.views.explorer.trained_network`).


def _int(name: str) -> Any:
    lo, hi = _E[name]
    return whole(int(lo), int(hi))


def _float(name: str) -> Any:
    return real(*_E[name])


@params_dataclass
class PartitionParams:
    """``bnviz partition``: every option but the files (``--weights`` sets ``widths``).

    Checked before any work: the bounds, the sliders' target, a BN batch of at least 2
    points, and every layer's expected regions against :data:`MAX_REGIONS`
    (:func:`bnviz.params.cost.expected_regions`, an estimate for random weights; a trained
    network read from a file may differ, and the engine's runtime cap stays the final guard).
    The batch's spread is checked once the data are read (:func:`~bnviz.params.cost.
    check_bn_batch`).
    """

    depth: whole(1, MAX_DEPTH) = 4
    width: whole(1, MAX_WIDTH) = 6
    activation: choice(ACTIVATIONS) = "leaky_relu"
    alpha: real() = 0.1
    mode: choice(MODES) = "bn"
    dataset: choice(DATASETS) = "moons"
    n: whole(1, MAX_POINTS) = 100
    seed: whole(0, SEED_MAX) = 0
    batch_seed: whole_or_none(0, SEED_MAX) = None
    batch_size: count_or_all(2, MAX_POINTS) = None
    extent: real(0.0, MAX_EXTENT, lo_open=True) = 3.0
    shift_x: real(-MAX_EXTENT, MAX_EXTENT) = 0.0  # the data moved off the origin
    shift_y: real(-MAX_EXTENT, MAX_EXTENT) = 0.0
    head: whole(0, 2) = 0
    mu_scale: _float("mu_t") = 1.0
    sigma_scale: _float("sigma_s") = 1.0
    scope: choice(SCOPES) = "all"
    target_layer: whole(1, MAX_DEPTH) = 1
    target_unit: whole(0, MAX_WIDTH - 1) = 0
    #: The layer widths of a network read from a file (None: ``depth`` layers of ``width``).
    widths: tuple[int, ...] | None = None
    #: Whether the data come from a file (their number is known only once read).
    data_file: bool = False

    @property
    def layer_widths(self) -> tuple[int, ...]:
        return self.widths if self.widths is not None else (self.width,) * self.depth

    @model_check
    def _fits(self) -> None:
        widths = self.layer_widths
        check_network_size(widths, "widths")
        check_alpha(self.activation, self.alpha)
        if self.scope != "all" and self.target_layer > len(widths):
            raise InputError(f"the network has {len(widths)} layers, got {self.target_layer}",
                             "target_layer")
        target_width = widths[min(self.target_layer, len(widths)) - 1]
        if self.scope == "unit" and self.target_unit >= target_width:
            raise InputError(f"layer {self.target_layer} has units 0..{target_width - 1}, got "
                             f"{self.target_unit}", "target_unit")
        if not self.data_file:
            check_bn_batch_size(self.mode, self.batch_size, self.n)
        check_partition_size(widths, self.activation, self.mode, self.extent, MAX_REGIONS)


@params_dataclass
class ExplorerParams:
    """Every control of the explorer page (issue 3, BN paper Figures 1, 2 and 9).

    Settings that depend on each other are clamped, not refused (a smaller depth keeps the
    chosen layer in range), so moving one control never invalidates another.  The batch size
    is checked against the data (which include added points) when the partition is computed,
    and the page's region cap (:data:`~bnviz.caps.EXPLORER_MAX_REGIONS`) refuses a
    too fine partition within about a second, so no estimate is needed here.
    """

    depth: _int("depth") = 4
    width: _int("width") = 8
    activation: choice(ACTIVATIONS) = "leaky_relu"
    alpha: _float("alpha") = 0.1
    mode: choice(MODES) = "bn"
    weight_seed: _int("weight_seed") = 0
    dataset: choice(DATASETS) = "moons"
    n_points: _int("n_points") = 100
    data_seed: _int("data_seed") = 0
    batch_size: count_or_all(2, MAX_POINTS) = None  # None: all data (test-time statistics)
    batch_seed: _int("batch_seed") = 0
    mu_t: _float("mu_t") = 1.0
    sigma_s: _float("sigma_s") = 1.0
    scope: choice(SCOPES) = "all"
    target_layer: _int("target_layer") = 1
    target_unit: _int("target_unit") = 0
    layer: _int("layer") = 4  # highlighted layer
    extent: _float("extent") = 3.0
    shift_x: _float("shift") = 0.0  # the data moved off the origin (BN paper Figure 1)
    shift_y: _float("shift") = 0.0
    weights: choice(WEIGHTS) = "random"

    @field_check("target_layer", "layer", mode="after")
    @classmethod
    def _within_depth(cls, value: int, info: CheckInfo) -> int:
        return min(value, info.data.get("depth", value))

    @field_check("target_unit", mode="after")
    @classmethod
    def _within_width(cls, value: int, info: CheckInfo) -> int:
        return min(value, info.data.get("width", value + 1) - 1)

    @classmethod
    def parse(cls, raw: Any) -> ExplorerParams:
        """Validate raw values (strings from a URL, numbers from controls); missing ->
        default, unknown keys ignored.  Raises InputError naming the first bad setting."""
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
    within the explorer's bounds (the same computation). ``--seed`` seeds the data and the
    weights (and the training's mini-batches)."""

    dataset: choice(DATASETS) = "moons"
    n: _int("n_points") = 100
    seed: _int("weight_seed") = 0
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

    def explorer_settings(self) -> ExplorerParams:
        """The explorer's settings of this computation (its Figure 9 preset at seed 0)."""
        return ExplorerParams(depth=self.depth, width=self.width, activation=self.activation,
                              weight_seed=self.seed, dataset=self.dataset, n_points=self.n,
                              data_seed=self.seed, layer=max(self.layers), extent=self.extent,
                              shift_x=self.shift_x, shift_y=self.shift_y, weights=self.weights)
