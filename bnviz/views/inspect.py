"""What a click on the partition shows (issue 16, "click a region or a hyperplane"): the
region's activation code in every layer up to the highlighted one, the folded hyperplane
nearest to the point (its layer, unit and distance), and BN paper eq. 11 for that unit with
the numbers at the point: F_{j,k} = {x : <w_{j,k}, z_{j-1}(x)> = mu_{j,k}}, i.e. h_{j,k}(x) =
(<w_{j,k}, z_{j-1}(x)> - mu_{j,k}) / sigma_{j,k} = 0 (eq. 3 and 10-11).

One point, one forward pass in float64 with numpy (the network is small); the nearest facet
is measured on the exact facets of the partition (:func:`bnviz.core.geometry.facet_distances`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnviz.core.geometry import facet_distances
from bnviz.params import InputError
from bnviz.views.explorer import ExplorerResult

__all__ = ["PointInfo", "inspect_point"]


@dataclass(frozen=True)
class PointInfo:
    point: tuple[float, float]
    layer: int  # the highlighted layer l: codes of layers 1..l
    codes: tuple[str, ...]  # per layer j <= l: "1" where h_{j,k}(x) > 0, unit k left to right
    unit_layer: int  # the nearest folded hyperplane's layer j ...
    unit: int  # ... and unit k (0-based)
    distance: float  # from the point to F_{j,k} (inf: no facet of layers <= l in the box)
    weights: np.ndarray  # w_{j,k}
    inputs: np.ndarray  # z_{j-1}(x): the point itself for j = 1
    projection: float  # <w_{j,k}, z_{j-1}(x)>
    mu: float
    sigma: float
    pre_activation: float  # h_{j,k}(x) = (projection - mu) / sigma

    def on_facet(self, tolerance: float) -> bool:
        """Whether the click is on the facet, within ``tolerance`` (input units)."""
        return bool(self.distance <= tolerance)


def inspect_point(result: ExplorerResult, x: float, y: float, layer: int | None = None
                  ) -> PointInfo:
    """The region and the nearest folded hyperplane at (x, y) for the explorer's result; the
    highlighted layer is the settings' unless given. InputError for a point that is not
    finite or outside the box."""
    part, net = result.partition, result.network
    if not (np.isfinite(x) and np.isfinite(y)):
        raise InputError("the clicked point must be finite")
    x0, x1, y0, y1 = part.box
    if not (x0 <= x <= x1 and y0 <= y <= y1):
        raise InputError(f"the point ({x:.3g}, {y:.3g}) is outside the box")
    layer = int(np.clip(layer or result.settings.layer, 1, len(part.layers)))
    z = np.array([x, y], dtype=np.float64)
    inputs, pre = [], []
    for w, st in zip(net.weights[:layer], result.stats[:layer], strict=True):
        inputs.append(z)
        h = (w @ z - st.mu) / st.sigma  # eq. 3 with frozen statistics
        pre.append(h)
        z = np.where(h > 0, h, net.negative_slope * h)
    best = (np.inf, 1, 0)
    for j in range(layer):  # the nearest facet of layers 1..l (a few hundred segments)
        lp = part.layers[j]
        d = facet_distances(np.array([[x, y]]), lp.facets, lp.facet_units,
                            net.weights[j].shape[0], device="cpu")[0]
        k = int(np.argmin(d))
        if d[k] < best[0]:
            best = (float(d[k]), j + 1, k)
    distance, j, k = best
    if not np.isfinite(distance):  # no facet in the box: unit 1 of layer 1, for eq. 11
        j, k = 1, 0
    w, st = net.weights[j - 1][k], result.stats[j - 1]
    projection = float(w @ inputs[j - 1])
    return PointInfo((float(x), float(y)), layer,
                     tuple("".join("1" if v > 0 else "0" for v in h) for h in pre), j, k,
                     distance, w.copy(), inputs[j - 1].copy(), projection, float(st.mu[k]),
                     float(st.sigma[k]), float(pre[j - 1][k]))
