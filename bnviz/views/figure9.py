"""BN paper Figure 9: each unit's sigma^2/||w||^2, and how close its (folded) hyperplane is
to the data in the input space (no dash here).

The paper colours the layer-1 hyperplanes H_{1,k} and the layer-4 folded hyperplanes F_{4,k}
of a trained toy network by sigma_{l,k}^2 / ||w_{l,k}||^2 and reads the colour as closeness to
the data. Eq. 7-8 say exactly what that number is: with mu_{l,k} the batch mean (BN, eq. 3),

    mean_B d(z_{l-1}, H_{l,k})^2 = sigma_{l,k}^2 / ||w_{l,k}||^2        (eq. 8)

the mean squared distance from the layer's INPUT batch z_{l-1} to the unit's hyperplane in
that layer's input space, the total-least-squares error that mu minimises (Theorem 1). In
layer 1 that space is the input space, so the colour is the mean squared point-to-line
distance of the data (exact). In a deeper layer it is measured in feature space; whether it
ranks the input-space closeness of the folded hyperplane F_{l,k} (the union of the unit's
facets, eq. 10-11) is an empirical question, answered here by the input-space distances of
the batch to each unit's facets (exact point-to-segment distances, eq. 12) and their
Spearman rank correlation with the colour.

The colour is what :class:`~bnviz.core.network.LayerStatistics` calls ``tls_error``: eq. 8's
left side at the mu in use. It equals sigma^2/||w||^2 only at BN's own statistics; with the
explorer's mu or sigma sliders moved it is the mean squared distance at the moved mu, and
:attr:`TLSLayer.exact` says which (views name the quantity by it:
:func:`bnviz.views.style.colour_bar_title`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import spearmanr

from bnviz.core.geometry import facet_distances
from bnviz.params import PartitionParams
from bnviz.views.explorer import PRESETS, ExplorerResult, explore

if TYPE_CHECKING:
    import torch

__all__ = ["FIGURE9_SETTINGS", "Figure9", "TLSLayer", "figure9", "figure9_layers",
           "tls_layers"]

#: The paper's setup, the explorer's Figure 9 preset: a 4-layer toy network of 6 leaky-ReLU
#: units a layer trained on 2D data (the moons, moved off the origin as the Figure 1 preset
#: does), test-time BN statistics over all the data.
FIGURE9_SETTINGS: PartitionParams = PRESETS["fig9"].settings
@dataclass(frozen=True)
class TLSLayer:
    """One layer of Figure 9: its units' colour and their facets' closeness to the data.

    ``values[k]`` is mean_B d(z_{l-1}, H_{l,k})^2 at the mu in use (eq. 8's left side; inf
    for a zero weight row). ``exact`` is True when every unit's mu is the batch mean and its
    sigma the batch's (biased) std: then ``values`` IS sigma_{l,k}^2 / ||w_{l,k}||^2.
    ``mean_distance[k]`` (``mean_sq_distance[k]``) is the mean (squared) input-space distance
    from the batch to F_{l,k} within the box, inf for a unit with no facet in the box;
    ``spearman`` (``spearman_sq``) ranks ``values`` against them over the units with facets
    (nan below 3 such units, or for constant values).
    """

    layer: int
    values: np.ndarray  # (D,)
    sigma2_over_w2: np.ndarray  # (D,) with the sigma in use
    exact: bool
    mean_distance: np.ndarray  # (D,)
    mean_sq_distance: np.ndarray  # (D,)
    facets: np.ndarray  # (S, 4) x0, y0, x1, y1
    facet_units: np.ndarray  # (S,) 0-based unit of each facet
    spearman: float
    spearman_sq: float

    @property
    def facet_values(self) -> np.ndarray:
        """(S,) each facet's colour: its unit's value."""
        return self.values[self.facet_units]

    @property
    def drawn(self) -> np.ndarray:
        """(D,) whether the unit has a facet in the box (a colour on the picture)."""
        return np.bincount(self.facet_units, minlength=len(self.values)) > 0

    @property
    def colour_range(self) -> tuple[float, float]:
        """This layer's own colour scale: the finite values of the drawn units (nan, nan
        when none is drawn)."""
        shown = self.values[self.drawn & np.isfinite(self.values)]
        if shown.size == 0:
            return math.nan, math.nan
        return float(shown.min()), float(shown.max())


@dataclass(frozen=True)
class Figure9:
    """Figure 9's panels, one per layer asked for, over the same data and box."""

    settings: PartitionParams
    layers: tuple[TLSLayer, ...]
    points: np.ndarray  # (N, 2) the data
    batch_mask: np.ndarray | None  # which points are in the mini-batch (None: all)
    box: tuple[float, float, float, float]
    train_accuracy: float | None  # weights="trained": on the training data, else None
    train_loss: float | None

    def layer(self, number: int) -> TLSLayer:
        return next(t for t in self.layers if t.layer == number)

    def as_json(self) -> dict:
        """The numbers (no facets): per layer and unit the value, its distances, the ranks."""
        def num(v: float) -> float | None:
            return float(v) if math.isfinite(v) else None

        return {
            "settings": self.settings.as_dict(), "train_accuracy": self.train_accuracy,
            "train_loss": self.train_loss,
            "layers": [{"layer": t.layer, "exact": t.exact,
                        "quantity": "sigma^2/||w||^2" if t.exact else
                        "mean squared distance at the current mu",
                        "values": [num(v) for v in t.values],
                        "mean_distance": [num(v) for v in t.mean_distance],
                        "mean_sq_distance": [num(v) for v in t.mean_sq_distance],
                        "facets": np.bincount(t.facet_units,
                                              minlength=len(t.values)).tolist(),
                        "spearman": num(t.spearman), "spearman_sq": num(t.spearman_sq)}
                       for t in self.layers]}


def _spearman(values: np.ndarray, distances: np.ndarray) -> float:
    ok = np.isfinite(values) & np.isfinite(distances)
    if ok.sum() < 3 or np.ptp(values[ok]) == 0 or np.ptp(distances[ok]) == 0:
        return math.nan
    return float(spearmanr(values[ok], distances[ok]).statistic)


def figure9_layers(settings: PartitionParams) -> tuple[int, ...]:
    """The layers Figure 9 shows for explorer settings: 1 and the highlighted layer (the
    paper: 1 and 4), or layer 1 alone."""
    return (1, settings.layer) if settings.layer > 1 else (1,)


def tls_layers(result: ExplorerResult, layers: Sequence[int] | None = None,
               device: torch.device | str | None = None) -> Figure9:
    """Figure 9 of an explorer result, for ``layers`` (default :func:`figure9_layers`).

    The distances are measured from the batch (the points whose statistics define mu and
    sigma, so that both numbers describe the same points), all pairs of points and facets at
    once (:func:`bnviz.core.geometry.facet_distances`)."""
    part = result.partition
    layers = tuple(layers) if layers is not None else figure9_layers(result.settings)
    if not layers or min(layers) < 1 or max(layers) > len(part.layers):
        raise ValueError(f"layers must lie in 1..{len(part.layers)}, got {layers}")
    out = []
    for number in layers:
        lp = part.layers[number - 1]
        st = lp.stats
        d = len(st.mu)
        dist = facet_distances(result.batch, lp.facets, lp.facet_units, d, device=device)
        with np.errstate(invalid="ignore"):  # inf - inf never happens: inf stays inf
            mean_d, mean_d2 = dist.mean(0), (dist**2).mean(0)
        scale = np.maximum(np.abs(st.batch_mean), st.batch_std) + 1e-300
        exact = bool(np.all(np.abs(st.mu - st.batch_mean) <= 1e-12 * scale) and
                     np.all(np.abs(st.sigma - st.batch_std) <= 1e-12 * scale))
        with np.errstate(divide="ignore"):
            s2w2 = np.where(st.weight_norm > 0, st.sigma**2 / st.weight_norm**2, np.inf)
        out.append(TLSLayer(number, st.tls_error.copy(), s2w2, exact, mean_d, mean_d2,
                            lp.facets, lp.facet_units, _spearman(st.tls_error, mean_d),
                            _spearman(st.tls_error, mean_d2)))
    training = result.training
    return Figure9(result.settings, tuple(out), result.data.points, result.batch_mask,
                   part.box, training.accuracy if training else None,
                   training.loss if training else None)


def figure9(settings: PartitionParams = FIGURE9_SETTINGS, layers: Sequence[int] | None = None,
            device: torch.device | str | None = None) -> Figure9:
    """BN paper Figure 9 for explorer settings (default: the paper's setup,
    :data:`FIGURE9_SETTINGS`): the exact partition with the settings' BN statistics and
    each shown layer's units' values, distances and rank correlations. Deterministic for
    the settings (the seeds are in them); about a second, most of it the training (kept per
    process: :func:`bnviz.views.explorer.trained_network`)."""
    return tls_layers(explore(settings, device=device), layers, device=device)
