"""Tests of the partition explorer's engine (bnviz.views.explorer, issue 3): its settings
and their URL query, the central layer-1 arrangement, the distance to the boundary and the
region fill, computed independently with numpy / shapely.

The page's callbacks (URL state, views, presets, buttons, added points) are tested in
tests/pages/test_explorer_*.py; shared helpers are in tests/explorer_helpers.py.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np
import pytest
import shapely
from explorer_helpers import (
    FLOAT_FIELDS,
    INT_FIELDS,
    assert_same_settings,
    independent_central,
    valid_settings,
)
from hypothesis import given, settings

import bnviz.views.explorer as bx
from bnviz.core.network import ACTIVATIONS, MODES, random_network
from bnviz.data.datasets import DATASETS
from bnviz.params import PartitionParams
from bnviz.views.explorer import (
    EXPLORER_LIMITS,
    SCOPES,
    InputError,
    explore,
    is_central,
    pattern_raster,
)

CHOICES = {"activation": ACTIVATIONS, "mode": MODES, "dataset": DATASETS, "scope": SCOPES}


# --------------------------------------------------------------------------- settings

def test_parse_defaults_and_unknown_keys():
    assert PartitionParams.from_page({}) == PartitionParams()
    s = PartitionParams.from_page({"depth": "3", "bogus": "x", "view": "unit", "__class__": 1})
    assert s == replace(PartitionParams(), depth=3, layer=3)  # layer 4 clamped to depth
    assert type(s.depth) is int and type(s.mu_t) is float


def bad_numbers(name: str) -> list:
    lo, hi = EXPLORER_LIMITS[name]
    span = hi - lo
    bad = [lo - max(1, span * 1e-3), hi + max(1, span * 1e-3), math.nan, math.inf, -math.inf,
           "nan", "inf", "abc", "", "  ", None, True, False, [], {}]
    if name in INT_FIELDS:
        bad += [lo + 0.5, f"{lo + 0.5}"]
    return bad


@pytest.mark.parametrize("name", INT_FIELDS + FLOAT_FIELDS)
def test_parse_rejects_bad_numbers_naming_the_field(name):
    for raw in bad_numbers(name):
        with pytest.raises(InputError) as exc:
            PartitionParams.from_page({name: raw})
        msg = str(exc.value)
        assert msg.startswith(name.replace("_", " ")), (raw, msg)
        assert "\n" not in msg and "Traceback" not in msg


@pytest.mark.parametrize("name", INT_FIELDS + FLOAT_FIELDS)
def test_parse_accepts_both_bounds(name):
    lo, hi = EXPLORER_LIMITS[name]
    room = {} if name in ("depth", "width") else {"depth": 12, "width": 64}
    for raw in (lo, hi, f"{lo:.12g}", f"{hi:.12g}"):
        value = getattr(PartitionParams.from_page(room | {name: raw}), name)
        assert value == float(raw) and type(value) is (int if name in INT_FIELDS else float)


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_parse_rejects_bad_choices(name):
    for raw in ("evil", "", None, 1, CHOICES[name][0].upper(), [CHOICES[name][0]]):
        with pytest.raises(InputError, match=f"^{name}: choose one of"):
            PartitionParams.from_page({name: raw})
    for ok in CHOICES[name]:
        assert getattr(PartitionParams.from_page({name: ok}), name) == ok


def test_batch_size():
    for raw in ("all", "ALL", " all ", "", "none", None):
        assert PartitionParams.from_page({"batch_size": raw}).batch_size is None
    for raw, want in (("2", 2), (2, 2), ("16", 16), (16.0, 16), ("1e3", 1000)):
        assert PartitionParams.from_page({"batch_size": raw}).batch_size == want
    for raw in ("1", 1, 0, "-4", "2.5", 2.5, "abc", "inf", "nan", math.nan, True, [4]):
        with pytest.raises(InputError, match="^batch size"):
            PartitionParams.from_page({"batch_size": raw})
    # larger than the data: refused when the data are known, with a message
    s = PartitionParams(depth=1, width=3, n_points=20, batch_size=21)
    with pytest.raises(InputError, match=r"batch size: at most the number of points \(20\)"):
        explore(s)
    # the added points count towards n
    assert explore(s, np.zeros((1, 2))).batch.shape == (21, 2)


def test_dependent_settings_are_clamped_not_refused():
    s = PartitionParams.from_page({"depth": 2, "width": 3, "layer": 12, "target_layer": 9,
                                "target_unit": 63})
    assert (s.layer, s.target_layer, s.target_unit) == (2, 2, 2)
    s = PartitionParams.from_page({"depth": "5", "width": "40", "layer": "5", "target_unit": 39})
    assert (s.layer, s.target_unit) == (5, 39)


def test_huge_int_gives_message():
    # 10**400 is what json.loads returns for a 400-digit number in a crafted request
    for name in ("depth", "mu_t", "weight_seed"):
        with pytest.raises(InputError, match=f"^{name.replace('_', ' ')}"):
            PartitionParams.from_page({name: 10**400})


@settings(max_examples=40, deadline=None)
@given(valid_settings)
def test_to_query_parse_round_trip(s):
    q = s.to_query()
    assert all(isinstance(v, str) for v in q.values())
    assert set(q) <= {f.name for f in fields(PartitionParams)}
    back = PartitionParams.from_page(q)
    assert_same_settings(back, s)
    assert PartitionParams.from_page(back.to_query()) == back  # a second trip is exact
    # defaults are left out of the query
    assert all(getattr(s, k) != getattr(PartitionParams, k) for k in q)


# --------------------------------------------------------------------------- science

def test_is_central_against_numpy():
    rng = np.random.default_rng(3)
    for _ in range(30):
        k = int(rng.integers(3, 12))  # two lines always meet in one point
        w = rng.normal(size=(k, 2))
        c = rng.normal(size=2) * 2
        mu = w @ c
        assert is_central(w, mu) and independent_central(w, mu)
        bad = mu.copy()
        bad[int(rng.integers(k))] += 0.05 + rng.random()
        assert not is_central(w, bad) and not independent_central(w, bad)
    assert is_central(np.ones((1, 2)), np.array([3.0]))


def clipped_line(w: np.ndarray, mu: float, box) -> shapely.Geometry:
    x0, x1, y0, y1 = box
    d = np.array([-w[1], w[0]]) / np.linalg.norm(w)
    p = w * mu / (w @ w)
    far = 10 * (x1 - x0 + y1 - y0)
    return shapely.LineString([p - far * d, p + far * d]).intersection(
        shapely.box(x0, y0, x1, y1))


@pytest.mark.parametrize("mode", ["bn", "random_bias"])
def test_mean_distance_to_the_boundary_with_shapely(mode):
    s = PartitionParams(depth=1, width=3, mode=mode, n_points=40, dataset="circles", layer=1)
    r = explore(s)
    box = r.partition.box
    st_ = r.partition.layers[0].stats
    lines = shapely.union_all([clipped_line(w, mu, box)
                               for w, mu in zip(r.network.weights[0], st_.mu, strict=True)])
    want = shapely.distance(shapely.points(r.data.points), lines).mean()
    assert math.isclose(r.mean_boundary_distance, want, rel_tol=1e-9)
    # depth 2: the nearest boundary of the full partition (facets of every layer)
    s2 = replace(s, depth=2, width=4, layer=2)
    r2 = explore(s2)
    facets = np.concatenate([lp.facets for lp in r2.partition.layers])
    geom = shapely.union_all([shapely.LineString([f[:2], f[2:]]) for f in facets])
    want2 = shapely.distance(shapely.points(r2.data.points), geom).mean()
    assert math.isclose(r2.mean_boundary_distance, want2, rel_tol=1e-9)


# --------------------------------------------------------------------------- region fill

def test_pattern_raster_agrees_with_the_exact_partition():
    s = PartitionParams(depth=3, width=4, n_points=50, layer=3, mu_t=0.7)
    r = explore(s)
    raster = r.raster
    assert raster.shape == (3, bx.RASTER, bx.RASTER) and raster.dtype == np.int64
    x0, x1, y0, y1 = r.partition.box
    res = bx.RASTER
    xs = x0 + (np.arange(res) + 0.5) * (x1 - x0) / res
    ys = y0 + (np.arange(res) + 0.5) * (y1 - y0) / res
    px, py = (a.reshape(-1) for a in np.meshgrid(xs, ys))  # row 0 at the bottom
    for li, lp in enumerate(r.partition.layers):
        polys = lp.regions
        owner = np.full(px.shape, -1)
        count = np.zeros(px.shape, dtype=int)
        for i in range(len(polys)):
            v = polys.polygon(i)
            e = np.roll(v, -1, 0) - v
            # signed distance of every pixel centre to every edge (CCW: inside is positive)
            d = (e[:, 0, None] * (py[None] - v[:, 1, None])
                 - e[:, 1, None] * (px[None] - v[:, 0, None])) / np.linalg.norm(e, axis=1)[:,
                                                                                       None]
            inside = d.min(0) > 1e-9
            owner[inside] = i
            count += inside
        assert count.max() <= 1, "regions overlap"
        assert (count == 1).mean() > 0.99, "regions do not cover the box"
        h = raster[li].reshape(-1)
        hashes = {}
        for i in np.unique(owner[owner >= 0]):
            vals = np.unique(h[owner == i])
            assert len(vals) == 1, f"layer {li + 1}: region {i} has {len(vals)} colours"
            hashes[i] = vals[0]
        codes = {i: polys.codes[i].tobytes() for i in hashes}
        assert len(set(codes.values())) == len(codes)  # distinct regions, distinct codes
        assert len(set(hashes.values())) == len(hashes), "two regions share a hash"


def test_pattern_raster_is_stable_under_the_sliders():
    """A region keeps its colour while sliders move: the hash depends on the pattern only."""
    s = PartitionParams(depth=2, width=4, n_points=50, layer=2)
    a = explore(s).raster
    # sigma scales h_1, so the layer-1 patterns (and colours) stay; layer 2 keeps BN's frozen
    # mu_2, sigma_2, so its facets move and some pixels change region
    b = explore(replace(s, sigma_s=1.5)).raster
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[1], b[1])
    # pixels whose region keeps its layer-1..2 pattern keep their colour: a pattern-only hash
    c = explore(replace(s, scope="unit", target_layer=2, target_unit=1, mu_t=0.5)).raster
    assert np.array_equal(a[0], c[0])
    assert 0.3 < np.mean(a[1] == c[1]) < 1.0
    net = random_network(2, 4, seed=0)
    from bnviz.core.network import layer_statistics

    stats = layer_statistics(net, bx.explorer_data(s).points)
    r1 = pattern_raster(net, stats, (-3, 3, -3, 3), 32)
    r2 = pattern_raster(net, stats, (-3, 3, -3, 3), 32)
    assert np.array_equal(r1, r2)


def test_off_centre_data_separate_bn_from_zero_bias_in_layer_1():
    """Issue 17 (Figure 1): every data set is centred, where BN's layer-1 lines (through the
    data's centroid, Corollary 2) and zero bias's (through the origin) coincide. Moved off the
    origin, BN's meet at the moved centroid and zero bias's still at the origin."""
    import numpy as np

    from bnviz.data.datasets import make_dataset
    from bnviz.views.explorer import PRESETS, explore, is_central

    settings = PRESETS["fig1"].settings
    assert (settings.shift_x, settings.shift_y) == (1.0, 1.0)
    plain = make_dataset(settings.dataset, settings.n_points, settings.data_seed).points
    meeting = {}
    for mode in ("bn", "zero_bias"):
        r = explore(replace(settings, mode=mode, layer=1))
        np.testing.assert_array_equal(r.data.points, plain + [1.0, 1.0])  # moved, exactly
        w, mu = r.network.weights[0], r.stats[0].mu
        assert is_central(w, mu) and len(r.partition.layers[0].regions) == 2 * settings.width
        meeting[mode] = np.linalg.lstsq(w, mu, rcond=None)[0]
    np.testing.assert_allclose(meeting["bn"], (plain + [1.0, 1.0]).mean(0), atol=1e-12)
    np.testing.assert_allclose(meeting["zero_bias"], [0.0, 0.0], atol=1e-12)
    assert np.linalg.norm(meeting["bn"] - meeting["zero_bias"]) > 1.0
