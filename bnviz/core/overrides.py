"""BN overrides: the explorer's sliders as changes to a layer's mu and sigma (BN paper
Figure 2: "fixing mu_2 and varying sigma_1"), for all layers, one layer or one unit, applied by
:func:`bnviz.core.network.layer_statistics`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BNOverrides", "LayerOverride", "slider_overrides"]


@dataclass(frozen=True)
class LayerOverride:
    """mu -> mu_scale * mu + mu_offset and sigma -> sigma_scale * sigma for one layer.

    Each field is a scalar (all units) or a vector of length D_l (per unit).
    """

    mu_scale: float | np.ndarray = 1.0
    mu_offset: float | np.ndarray = 0.0
    sigma_scale: float | np.ndarray = 1.0


@dataclass(frozen=True)
class BNOverrides:
    """Slider overrides of the BN statistics, by layer (1-based)."""

    layers: Mapping[int, LayerOverride] = field(default_factory=dict)

    @classmethod
    def all_layers(
        cls, depth: int, mu_scale: float = 1.0, mu_offset: float = 0.0, sigma_scale: float = 1.0
    ) -> BNOverrides:
        o = LayerOverride(mu_scale, mu_offset, sigma_scale)
        return cls({layer: o for layer in range(1, depth + 1)})

    @classmethod
    def unit(
        cls,
        width: int,
        layer: int,
        unit: int,
        mu_scale: float = 1.0,
        mu_offset: float = 0.0,
        sigma_scale: float = 1.0,
    ) -> BNOverrides:
        """Override one (layer, unit) (0-based unit), as in Figure 2."""
        if not 0 <= unit < width:
            raise ValueError(f"unit {unit} out of range for a layer of width {width}")
        ms, mo, ss = np.ones(width), np.zeros(width), np.ones(width)
        ms[unit], mo[unit], ss[unit] = mu_scale, mu_offset, sigma_scale
        return cls({layer: LayerOverride(ms, mo, ss)})

    def apply(self, layer: int, mu: np.ndarray, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        o = self.layers.get(layer)
        if o is None:
            return mu, sigma
        sigma_scale = np.broadcast_to(np.asarray(o.sigma_scale, dtype=np.float64), sigma.shape)
        if np.any(~np.isfinite(sigma_scale)) or np.any(sigma_scale <= 0):
            raise ValueError(f"sigma scale of layer {layer} must be finite and > 0")
        mu_new = np.asarray(o.mu_scale, dtype=np.float64) * mu + np.asarray(o.mu_offset)
        if not np.all(np.isfinite(mu_new)):
            raise ValueError(f"mu override of layer {layer} is not finite")
        return np.broadcast_to(mu_new, mu.shape).copy(), sigma * sigma_scale


def slider_overrides(depth: int, width: int, mu_t: float, sigma_s: float, scope: str,
                     target_layer: int, target_unit: int) -> BNOverrides:
    """The sliders as BN overrides: mu = mu_t * mu_BN, sigma = sigma_s * sigma_BN, on all
    layers, on one layer, or on one (layer, unit) (0-based unit; ``width`` is the width of
    the target layer).  InputError names a target layer the network does not have."""
    from bnviz.messages import InputError

    if mu_t == 1.0 and sigma_s == 1.0:
        return BNOverrides()
    if scope == "all":
        return BNOverrides.all_layers(depth, mu_scale=mu_t, sigma_scale=sigma_s)
    if not 1 <= target_layer <= depth:
        raise InputError(f"target layer {target_layer} is not a layer of a depth-{depth} network")
    if scope == "layer":
        return BNOverrides({target_layer: LayerOverride(mu_t, 0.0, sigma_s)})
    return BNOverrides.unit(width, target_layer, target_unit, mu_scale=mu_t, sigma_scale=sigma_s)
