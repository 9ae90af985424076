"""Tests of bnviz.core.geometry: point-to-facet distances (BN paper eq. 12) against shapely and a
brute-force formula."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
import torch
from shapely.geometry import LineString, MultiLineString, Point

from bnviz.core.geometry import facet_distances, point_segment_distances
from bnviz.core.network import random_network
from bnviz.core.partition import compute_partition


def brute_point_segment(points: np.ndarray, segments: np.ndarray) -> np.ndarray:
    """min(distance to either end, perpendicular distance when the foot is inside the segment),
    one pair at a time (an independent formula)."""
    out = np.empty((len(points), len(segments)))
    for i, p in enumerate(points):
        for j, s in enumerate(segments):
            a, b = s[:2], s[2:]
            best = min(np.hypot(*(p - a)), np.hypot(*(p - b)))
            d = b - a
            length = np.hypot(*d)
            if length > 0:
                along = np.dot(p - a, d) / length
                if 0.0 <= along <= length:
                    best = min(best, abs(d[0] * (p - a)[1] - d[1] * (p - a)[0]) / length)
            out[i, j] = best
    return out


def _shapely_unit_distances(points, facets, facet_units, n_units):
    out = np.full((len(points), n_units), np.inf)
    for k in range(n_units):
        segs = facets[facet_units == k]
        if len(segs) == 0:
            continue
        geom = MultiLineString([[(s[0], s[1]), (s[2], s[3])] for s in segs])
        out[:, k] = [geom.distance(Point(p)) for p in points]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_facet_distances_match_shapely_random_segments(seed):
    rng = np.random.default_rng(seed)
    n_units = 6
    facets = rng.uniform(-3, 3, size=(40, 4))
    facet_units = rng.integers(0, n_units - 1, size=40)  # unit n_units - 1 has no facet
    facet_units[:n_units - 1] = np.arange(n_units - 1)
    points = rng.uniform(-4, 4, size=(60, 2))
    points[:3] = facets[:3, :2]  # on a facet end: distance 0
    points[3] = 0.5 * (facets[4, :2] + facets[4, 2:])  # on a facet: distance ~0
    got = facet_distances(points, facets, facet_units, n_units, device="cpu")
    want = _shapely_unit_distances(points, facets, facet_units, n_units)
    assert got.shape == (60, n_units) and got.dtype == np.float64
    assert np.all(np.isinf(got[:, -1]))
    np.testing.assert_allclose(got[:, :-1], want[:, :-1], rtol=1e-9, atol=1e-12)
    assert np.all(got[np.arange(3), facet_units[:3]] == 0)
    assert got[3, facet_units[4]] < 1e-12


@pytest.mark.parametrize("mode", ["bn", "random_bias"])
def test_facet_distances_on_partition_facets(mode):
    net = random_network(2, 6, mode=mode, seed=3)
    batch = np.random.default_rng(0).normal(size=(50, 2))
    part = compute_partition(net, batch, device="cpu")
    lay = part.layers[1]
    points = np.random.default_rng(1).uniform(-3, 3, size=(40, 2))
    got = facet_distances(points, lay.facets, lay.facet_units, 6)
    want = _shapely_unit_distances(points, lay.facets, lay.facet_units, 6)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    # the default device gives the same
    np.testing.assert_allclose(facet_distances(points, lay.facets, lay.facet_units, 6,
                                               device="cpu"), got, rtol=1e-12, atol=0)


def test_facet_distances_many_chunks_match_brute_force():
    # more than 4e6 point-segment pairs: several chunks
    rng = np.random.default_rng(5)
    facets = rng.uniform(-2, 2, size=(1000, 4))
    units = rng.integers(0, 7, size=1000)
    points = rng.uniform(-3, 3, size=(4500, 2))
    got = facet_distances(points, facets, units, 8, device="cpu")
    d = point_segment_distances(points, facets)  # the CPU path's own array library
    want = np.full((4500, 8), np.inf)
    for k in range(7):
        want[:, k] = d[:, units == k].min(1)
    np.testing.assert_array_equal(got, want)
    sub = rng.choice(4500, size=15, replace=False)
    sub_want = _shapely_unit_distances(points[sub], facets, units, 8)
    np.testing.assert_allclose(got[sub], sub_want, rtol=1e-9, atol=1e-12)


def test_facet_distances_empty():
    pts = np.zeros((5, 2))
    out = facet_distances(pts, np.zeros((0, 4)), np.zeros(0, dtype=np.int64), 3)
    assert out.shape == (5, 3) and np.all(np.isinf(out))
    out = facet_distances(np.zeros((0, 2)), np.ones((2, 4)), np.array([0, 1]), 3)
    assert out.shape == (0, 3)


@pytest.mark.parametrize("seed", range(3))
def test_point_segment_distances_brute_force(seed):
    rng = np.random.default_rng(seed)
    segs = rng.uniform(-2, 2, size=(25, 4))
    segs[:4, 2:] = segs[:4, :2]  # zero-length segments
    segs[4] = [1.0, 1.0, 1.0, 1.0 + 1e-300]  # (nearly) degenerate
    segs[5] = [0.0, 0.0, 1.0, 0.0]
    pts = rng.uniform(-3, 3, size=(30, 2))
    pts[0] = [0.5, 0.0]  # on segment 5
    pts[1] = [2.0, 0.0]  # on the line of segment 5, past its end: distance 1
    pts[2] = [-1.0, 3.0]  # foot before its start
    got = point_segment_distances(torch.as_tensor(pts), torch.as_tensor(segs)).numpy()
    want = brute_point_segment(pts, segs)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert got[0, 5] == 0.0
    assert got[1, 5] == pytest.approx(1.0, abs=1e-15)
    assert got[2, 5] == pytest.approx(np.hypot(1.0, 3.0), rel=1e-15)
    # zero-length segments: distance to the point
    np.testing.assert_allclose(got[:, :4], np.hypot(pts[:, None, 0] - segs[None, :4, 0],
                                                   pts[:, None, 1] - segs[None, :4, 1]),
                               rtol=1e-14)
    # against shapely for the non-degenerate ones
    for j in range(5, 25):
        line = LineString([segs[j, :2], segs[j, 2:]])
        np.testing.assert_allclose(got[:, j], shapely.distance(line, shapely.points(pts)),
                                   rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_nearest_segment_distances_rtree_matches_brute_force(seed):
    """The CPU path (an R-tree) against the all-pairs torch formula, with zero-length segments,
    points on segments, points far outside and a point of the segments' own ends."""
    from bnviz.core.geometry import nearest_by_all_pairs, nearest_segment_distances

    rng = np.random.default_rng(seed)
    segs = rng.uniform(-2, 2, size=(300, 4))
    segs[:5, 2:] = segs[:5, :2]  # zero-length segments: their point
    pts = np.concatenate([rng.uniform(-3, 3, size=(200, 2)), rng.uniform(-1e3, 1e3, (5, 2)),
                          segs[:3, :2], 0.3 * segs[10:12, :2] + 0.7 * segs[10:12, 2:]])
    got = nearest_segment_distances(pts, segs, device="cpu")
    want = brute_point_segment(pts[:40], segs).min(1)
    np.testing.assert_allclose(got[:40], want, rtol=1e-12, atol=1e-14)
    allpairs = nearest_by_all_pairs(torch.as_tensor(pts), torch.as_tensor(segs))  # cuda path
    np.testing.assert_allclose(got, allpairs.numpy(), rtol=1e-12, atol=1e-14)
    assert np.all(got[-5:-2] == 0.0) and np.all(got[-2:] < 1e-12)
    assert np.all(np.isinf(nearest_segment_distances(pts, np.empty((0, 4)), device="cpu")))


@pytest.mark.parametrize("seed", range(3))
def test_point_segment_distances_numpy_equals_torch(seed):
    # one formula, two array libraries: numpy arrays in give numpy out, to the last bit
    rng = np.random.default_rng(seed)
    segs = rng.uniform(-2, 2, size=(30, 4))
    segs[:3, 2:] = segs[:3, :2]  # zero-length segments
    pts = rng.uniform(-3, 3, size=(40, 2))
    got = point_segment_distances(pts, segs)
    assert isinstance(got, np.ndarray)
    want = point_segment_distances(torch.as_tensor(pts), torch.as_tensor(segs)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(got, brute_point_segment(pts, segs), rtol=1e-12, atol=1e-14)


def test_facet_distances_torch_path_equals_numpy_path():
    # the cuda path's scatter-min, run on the CPU, against the numpy path (reduceat), over
    # several chunks and with units that have no facet
    from bnviz.core.geometry import _unit_minima_numpy, _unit_minima_torch

    rng = np.random.default_rng(11)
    facets = rng.uniform(-2, 2, size=(900, 4))
    units = rng.choice([0, 2, 3, 7], size=900)
    points = rng.uniform(-3, 3, size=(5000, 2))
    a = _unit_minima_numpy(points, facets, units, np.full((5000, 9), np.inf))
    b = _unit_minima_torch(points, facets, units, np.full((5000, 9), np.inf), "cpu")
    np.testing.assert_allclose(a, b, rtol=1e-15, atol=0)  # libm's hypot: an ulp apart
    assert np.all(np.isinf(a[:, [1, 4, 5, 6, 8]])) and np.all(np.isfinite(a[:, [0, 2, 3, 7]]))
