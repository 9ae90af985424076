"""A click on the partition (bnviz.views.inspect): the region's code, the nearest folded
hyperplane and eq. 11's numbers, against an independent forward pass and a brute-force
distance to every facet."""

from __future__ import annotations

import numpy as np
import pytest

from bnviz.params import InputError, PartitionParams
from bnviz.views.explorer import explore
from bnviz.views.inspect import inspect_point

SETTINGS = [PartitionParams(), PartitionParams(depth=3, width=5, mode="random_bias", layer=2),
            PartitionParams(depth=2, width=7, activation="relu", batch_size=16, mu_t=0.4,
                           sigma_s=2.0, layer=2)]


def _segment_distance(p: np.ndarray, seg: np.ndarray) -> np.ndarray:
    a, b = seg[:, :2], seg[:, 2:]
    ab = b - a
    t = np.clip(((p - a) * ab).sum(1) / np.maximum((ab * ab).sum(1), 1e-300), 0, 1)
    return np.hypot(*(a + t[:, None] * ab - p).T)


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "random-bias", "relu-batch"])
def test_codes_and_nearest_facet_against_independent_computations(settings):
    r = explore(settings)
    net, stats = r.network, r.stats
    rng = np.random.default_rng(0)
    for x, y in rng.uniform(-2.9, 2.9, size=(25, 2)):
        info = inspect_point(r, x, y)
        # the codes: an independent forward pass (eq. 3 with the statistics the layers use)
        z = np.array([x, y])
        for j, code in enumerate(info.codes):
            w = net.weights[j]
            h = (w @ z - stats[j].mu) / stats[j].sigma
            assert code == "".join("1" if v > 0 else "0" for v in h)
            z = np.maximum(h, 0) + net.negative_slope * np.minimum(h, 0)
        assert len(info.codes) == info.layer == settings.layer
        # the nearest facet: brute force over every facet of layers 1..l
        best = min((float(_segment_distance(np.array([x, y]), lp.facets).min()), j + 1)
                   for j, lp in enumerate(r.partition.layers[:info.layer]) if len(lp.facets))
        assert info.distance == pytest.approx(best[0], abs=1e-12)
        lp = r.partition.layers[info.unit_layer - 1]
        mine = lp.facets[lp.facet_units == info.unit]
        assert _segment_distance(np.array([x, y]), mine).min() == pytest.approx(info.distance,
                                                                                abs=1e-12)
        # eq. 11's numbers are the unit's pre-activation at the point
        assert info.pre_activation == pytest.approx((info.projection - info.mu) / info.sigma)
        assert info.projection == pytest.approx(float(info.weights @ info.inputs))


def test_on_a_facet_the_pre_activation_vanishes():
    r = explore(PartitionParams(layer=1))
    lp = r.partition.layers[0]
    for seg, unit in zip(lp.facets[:10], lp.facet_units[:10], strict=True):
        mid = (seg[:2] + seg[2:]) / 2
        info = inspect_point(r, *mid)
        assert info.distance < 1e-9 and info.on_facet(1e-6)
        assert (info.unit_layer, info.unit) == (1, int(unit))
        assert abs(info.pre_activation) < 1e-9
        np.testing.assert_allclose(info.inputs, mid)  # layer 1: z_0 is the point itself
    # off the facets, the pre-activation does not vanish
    info = inspect_point(r, 2.9, -2.9)
    assert not info.on_facet(1e-6) and abs(info.pre_activation) > 1e-6


@pytest.mark.parametrize("point", [(np.nan, 0.0), (0.0, np.inf), (3.5, 0.0), (0.0, -9.0)])
def test_points_outside_the_box_are_refused(point):
    with pytest.raises(InputError):
        inspect_point(explore(PartitionParams()), *point)
