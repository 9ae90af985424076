"""What each view draws, as plain data: its colours, trace names, titles and axis labels.

The dashboard's plotly figures (``callbacks/<page>/figures.py``) and the command line's
matplotlib pictures (:mod:`bnviz.views.render`) read these descriptions, so a colour or a
caption is changed in one place and the two media cannot drift apart. Only what is the same
in both media lives here: line widths, marker and font sizes are in each medium's units
(plotly pixels, matplotlib points) and stay with the code that draws.

Titles and names are ``str.format`` templates; the fields each one takes are named in its
comment. Colours are CSS hex strings (both plotly and matplotlib read them); a colour scale is
a tuple of (position in [0, 1], colour) stops, the form both plotly (``colorscale``) and
matplotlib (``LinearSegmentedColormap.from_list``) take. This module imports neither library.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "BLACK", "BLUE", "CATEGORICAL", "CLASS_SYMBOLS", "DENSITY", "FIGURE7", "GRAY", "GREEN",
    "JITTER", "LIGHT_GRAY", "ORANGE", "PARTITION", "PURPLE", "SKY_BLUE", "UNIT", "VERMILLION",
    "YELLOW", "DensityStyle", "Figure7Style", "JitterStyle", "PartitionStyle",
    "REGION_PALETTE", "SLATE", "UnitStyle", "WHITE", "mode_label", "FIGURE9",
    "Figure9Style", "TRAINING", "TrainingStyle", "colour_bar_title", "hover_quantity",
    "subscript",
]

# ---- the dashboard's colours (named once; each view below says what it uses them for) ---
# Okabe and Ito's colour-blind-safe palette (Wong, Nature Methods 8, 441, 2011): every set of
# colours one figure shows stays apart under simulated protanopia, deuteranopia and
# tritanopia (tests/views/test_colours.py: CIELAB distances after Machado et al.'s 2009
# simulation). Classes have marker shapes as well (CLASS_SYMBOLS).

BLUE = "#0072b2"
SKY_BLUE = "#56b4e9"
ORANGE = "#e69f00"
VERMILLION = "#d55e00"  # the red of the palette: the decision boundary, class 0
GREEN = "#009e73"  # bluish green
PURPLE = "#cc79a7"  # reddish purple
YELLOW = "#f0e442"
GRAY = "#9a9a9a"
BLACK = "black"
WHITE = "white"
LIGHT_GRAY = "#adb5bd"  # histogram bars
DARK_GRAY = "#495057"
SLATE = "#868e96"

#: Series told apart by colour (curves of several jobs, classes beyond two), in this order.
CATEGORICAL = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY_BLUE, BLACK, YELLOW)
#: Marker shapes of classes, in class order, as plotly names them (the command line's
#: matplotlib pictures map them: bnviz.views.render.MARKERS).
CLASS_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "star",
                 "pentagon")

#: Region fills: pale colours, chosen by a hash of the activation pattern (BN paper Fig. 1).
REGION_PALETTE = (
    "#e8eef7", "#f6e8e8", "#e9f4e6", "#f7f1e1", "#efe7f5", "#e3f3f3",
    "#f4e4ee", "#eceee2", "#e2ebf3", "#f5ece4", "#e6f0ec", "#eee6e6",
)


def region_colour_index(raster: np.ndarray, k: int) -> np.ndarray:
    """Each raster pixel's region (its activation pattern's hash) as an index into a palette
    of ``k`` colours: through a multiplicative (Knuth) hash first, so that neighbouring
    hashes get unrelated colours; a region keeps its colour while sliders move. The one
    colouring of regions (the pages' heatmaps, the slides' pictures)."""
    return ((np.asarray(raster) * 2654435761) % (2**32) % k).astype(np.uint8)


def mode_label(mode: str) -> str:
    """A network mode as views print it: "zero_bias" -> "zero bias", "bn" -> "BN"."""
    return "BN" if mode == "bn" else mode.replace("_", " ")


@dataclass(frozen=True)
class PartitionStyle:
    """The partition of the input space: BN paper Figures 1, 2b, 2c and 9 (the explorer's
    input-space and side-by-side views; ``bnviz partition --format png|svg``)."""

    region_palette: tuple[str, ...] = REGION_PALETTE
    current: str = BLUE  # the facets of the highlighted layer l (eq. 10-11)
    earlier: str = GRAY  # the facets of layers 1..l-1
    target: str = ORANGE  # the facets F_{l,k} of one unit (Figure 2b, c)
    boundary: str = VERMILLION  # the decision boundary of the classifier head
    data: str = BLACK  # the data points (the mini-batch when there is one)
    other_data: str = WHITE  # points outside the mini-batch: white, black outline
    tls_colourscale: str = "Viridis"  # Figure 9: facets coloured by TLS error (eq. 8)
    tls_bins: int = 8
    title: str = "layer {layer}: {regions} regions"  # layer, regions
    current_name: str = "layer {layer}"  # layer
    earlier_name: str = "earlier layers"
    target_name: str = "F({layer},{unit})"  # layer, unit (1-based, as the page counts)
    boundary_name: str = "decision boundary"
    data_name: str = "data"
    batch_name: str = "mini-batch"
    other_name: str = "other data"
    tls_name: str = "TLS bin {bin}"  # bin (1-based)
    tls_colourbar: str = "σ²/‖w‖²"
    column: str = "layer {layer}"  # side by side: a column's heading; layer
    with_bn: str = "with BN"  # side by side: the rows
    without_bn: str = "without BN ({mode})"  # mode (mode_label)

    def row_label(self, mode: str) -> str:
        """A side-by-side row's (or panel's) name for a network mode."""
        return self.with_bn if mode == "bn" else self.without_bn.format(mode=mode_label(mode))


@dataclass(frozen=True)
class UnitStyle:
    """One unit's hyperplane and its TLS loss: BN paper Figure 2a (the explorer's unit view)."""

    projections: str = LIGHT_GRAY  # histogram of <w, z> over the batch
    loss: str = DARK_GRAY  # the TLS loss L(mu), eq. 8
    mu: str = ORANGE  # the hyperplane at mu and the current-mu marker
    bn_mean: str = BLUE  # the BN mean (the parabola's minimum), dashed
    title: str = ("unit {unit} of layer {layer}: hyperplane at μ = {mu:.3g} (orange), "
                  "BN mean {mean:.3g} (dashed)")  # unit (1-based), layer, mu, mean
    projections_name: str = "<w, z> over the batch"
    loss_name: str = "TLS loss L(μ)"
    mu_name: str = "current μ"
    projections_axis: str = "⟨w, z⟩ in the layer's input space"
    count_axis: str = "batch points"
    mu_axis: str = "μ"
    loss_axis: str = "mean squared distance"


@dataclass(frozen=True)
class JitterStyle:
    """Decision boundaries across mini-batches: BN paper Figure 6 (the jitter page;
    ``bnviz jitter --format png|svg``), with the page's disagreement and margin plots."""

    # each mini-batch's boundary: a gray cloud, apart from both classes' colours as drawn
    # (translucent over white)
    realisation: str = DARK_GRAY
    realisation_opacity: float = 0.45
    test_boundary: str = BLACK  # the boundary with the statistics of all the data
    # class 0, class 1: the paper's red and green are one colour to a deuteranope; here
    # vermillion circles and sky-blue squares
    class_colours: tuple[str, ...] = (VERMILLION, SKY_BLUE)
    class_symbols: tuple[str, ...] = CLASS_SYMBOLS[:2]
    batches: str = "|B| = {batch}, {k} mini-batches"  # batch, k: both media's titles start so
    realisations_name: str = "{k} mini-batches"  # k
    test_name: str = "all data (test time)"
    class_name: str = "class {label}"  # label
    curve: str = BLUE  # disagreement area vs |B|
    current: str = ORANGE  # the current |B| on that curve
    curve_title: str = "disagreement area vs |B|"
    curve_x: str = "|B|"
    curve_y: str = "fraction of the box"
    margins: str = LIGHT_GRAY
    margins_title: str = "margins: point-to-boundary distances"
    margins_x: str = "distance"


@dataclass(frozen=True)
class Figure7Style:
    """Distributions of the BN statistics over mini-batches: BN paper Figure 7 (eq. 13)."""

    empirical: str = BLACK
    noise_controlled: str = VERMILLION
    analytical: str = BLUE
    empirical_name: str = "empirical"
    noise_name: str = "noise-controlled"
    analytical_name: str = "analytical (eq. 13)"
    axis: str = "{statistic}, unit {unit}"  # statistic (μ or σ²), unit (1-based)


@dataclass(frozen=True)
class DensityStyle:
    """Concentration of the facets near the data: BN paper Figure 3 (the density page;
    ``bnviz density --format png|svg``)."""

    #: facet counts, each panel normalised by its maximum: white (none) to black (the most)
    counts: tuple[tuple[float, str], ...] = ((0.0, "#ffffff"), (1.0, "#000000"))
    data: str = VERMILLION  # over the grey panels; the ratio plot's modes keep their own
    panel: str = "layer {layer} (max {top})"  # layer, top (the panel's largest count)
    mode_colours: tuple[tuple[str, str], ...] = (
        ("zero_bias", SLATE), ("random_bias", ORANGE), ("bn", BLUE))
    ratio_title: str = "near-data ratio per layer"
    ratio_x: str = "layer"
    ratio_y: str = "ratio"
    #: the lecture's slice step (Figure 3 on a plane through three test images): digits
    #: (their classes), ratios (each mode's near/far region density, slice_ratio)
    slice_title: str = "plane through digits {digits} · density near/far: {ratios}"
    slice_ratio: str = "{mode} ×{ratio:.2f}"

    def mode_colour(self, mode: str) -> str:
        return dict(self.mode_colours).get(mode, BLACK)


@dataclass(frozen=True)
class TrainingStyle:
    """Live training (``bnviz train --movie``, the explorer's play button): a frame is the
    partition of the last layer (earlier layers' facets in gray, the last layer's in blue),
    the decision boundary and the data by class; the previous frame's boundary as a ghost."""

    #: the decision boundary: black (light in the dark theme), apart from both classes'
    #: colours (vermillion was class 0's too)
    boundary: str = BLACK
    ghost: str = "#c8c8c8"  # the previous frame's decision boundary
    ghost_name: str = "previous frame"
    frame_title: str = ("{mode} · step {step} · loss {loss:.3f} · {accuracy:.0%} · "
                        "{regions} regions")  # mode (row label), step, loss, accuracy, regions
    # side by side, each panel's title (the step and the losses are in the counter above)
    panel_title: str = "{mode}: {regions} regions"  # the frame_title's names
    #: the lecture's training step, above its two panels
    lecture_title: str = "step {step} of {steps}"
    loss_title: str = "loss"
    accuracy_title: str = "accuracy"
    distance_title: str = "distance"  # mean, from the data to the nearest boundary


PARTITION = PartitionStyle()
TRAINING = TrainingStyle()
UNIT = UnitStyle()
JITTER = JitterStyle()
FIGURE7 = Figure7Style()
DENSITY = DensityStyle()


# ---- Figure 9 (bnviz.views.figure9): the TLS colours, layer by layer ------------------
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def subscript(n: int) -> str:
    """A layer number as subscript digits: 4 -> '₄', 12 -> '₁₂'."""
    return str(n).translate(_SUB)


@dataclass(frozen=True)
class Figure9Style:
    """What Figure 9's pictures draw (the explorer's, the lecture's and the slides'): one
    colour scale a layer, blue for a small value (close to the data), green for a large
    one, as the paper; viridis's blue-to-green part, readable by colour-blind viewers."""

    colourscale: tuple[tuple[float, str], ...] = (
        (0.0, "#3b528b"), (0.35, "#2c728e"), (0.7, "#21918c"), (1.0, "#5ec962"))
    #: a panel's title: layer 1's hyperplanes H_{1,k}, a deeper layer's folded F_{l,k}
    #: (short: a projector's two panels at 1280 px are narrow); layer, what
    panel: str = "layer {layer}: {what}"
    lines: str = "H{l},ₖ"  # l: the layer as subscript digits
    folded: str = "F{l},ₖ"
    title: str = "Figure 9: each unit's TLS error (eq. 8)"
    #: a facet's hover (plotly template): layer, quantity (:func:`hover_quantity`); the
    #: facet's customdata is (unit, value, mean distance)
    hover: str = ("layer {layer}, unit %{{customdata[0]}}<br>{quantity} = "
                  "%{{customdata[1]:.4g}}<br>mean input-space distance of the data to "
                  "this unit's facets = %{{customdata[2]:.4g}}<extra></extra>")
    data_name: str = PARTITION.data_name


FIGURE9 = Figure9Style()


def colour_bar_title(layer: int, exact: bool, sep: str = "<br>") -> str:
    """What a layer's colour shows, named exactly: sigma^2/||w||^2 at BN's statistics (eq. 8),
    else the mean squared distance at the current mu (which is sigma^2/||w||^2 only at the
    batch mean). ``sep`` breaks it in two lines (HTML for plotly, a newline for
    matplotlib)."""
    sub = subscript(layer)
    if exact:
        return f"σ²{sub},ₖ/‖w{sub},ₖ‖²{sep}(layer {layer}, eq. 8)"
    return f"mean d² to H{sub},ₖ at{sep}current μ (layer {layer})"


def hover_quantity(exact: bool) -> str:
    """The hover's name for the value: the exact quantity, or what it is at a moved mu."""
    return "σ²/‖w‖² (TLS error, eq. 8)" if exact else \
        "mean d² at current μ (eq. 8; = σ²/‖w‖² at μ = batch mean)"
