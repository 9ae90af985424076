"""Tiles with an exact merge (issue 45, item 2): a window cut as N tiles and merged by full
code is the untiled cut: the same region count per layer, the same full codes, each region
with the same area and centroid, the same facets (count, and length per unit and region),
the same decision cells (area per region and class) and boundary; workers=2 as workers=1.
A pooling layer's facets are compared as points (length per window and region): where the
untiled cut splits a cell's edge lies on a tile line, the merge joins the pieces there.
On the slice tests' networks (conv, strided, residual, leaky ReLU, max pooling with a ResNet
stem's padded pooling, a BN after a ReLU; tests/onnx_nets.py) in eval and BN train mode,
and on the ties of tests/slices/test_ties.py (flat blocks, zero-sum kernels)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from slice_compare import assert_same, onnx_case, ties_case

from bnviz.core.limits import PartitionTooLarge
from bnviz.slices.engine import cut_slice
from bnviz.slices.tiles import cut_tiled, tile_windows

CASES = {"conv": dict(stride2=False), "strided": dict(), "residual": dict(residual=True),
         "leaky": dict(leaky=True, residual=True), "maxpool": dict(maxpool=True),
         "stem-pool": dict(maxpool=True, stride2=False, size=7, pool=(3, 2, 1, False), seed=4),
         "bn-after-relu": dict(bn_after_act=True, residual=True, seed=6)}

#: The cases whose windows hold a decision boundary (the ties' hold a few segments too).
BOUNDARY = {("conv", "eval"), ("conv", "train"), ("maxpool", "train")}


def _setup(tmp_path, case: str, mode: str):
    """The network, plane, half the default window (a few thousand regions) and stats."""
    return onnx_case(tmp_path, CASES[case], mode)


@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("case", list(CASES))
def test_tiles_merge_into_the_untiled_cut(tmp_path, case, mode):
    net, plane, window, stats = _setup(tmp_path, case, mode)
    whole = cut_slice(net, plane, window, stats, device="cpu")
    assert sum(whole.counts) > 1000
    if (case, mode) in BOUNDARY:  # (the others' windows hold one class)
        assert len(whole.decision_boundary) > 20
    for n in (2, 4, 9):
        assert_same(cut_tiled(net, plane, window, stats, tiles=n, workers=1, device="cpu"),
                    whole)


@pytest.mark.parametrize(("order", "seed"), [("relu-pool", 4), ("relu-pool", 12),
                                             ("pool-relu", 4), ("pool-relu", 9)])
def test_ties_merge_into_the_untiled_cut(order, seed):
    """Lines through the origin, where the tile lines of N = 4 cross, and pooling switches
    the untiled cut holds twice (tied inputs): still one region per code, the same facets."""
    net, plane, window, _ = ties_case(order, seed)
    whole = cut_slice(net, plane, window, device="cpu")
    for n in (2, 4, 9):
        assert_same(cut_tiled(net, plane, window, tiles=n, workers=1, device="cpu"), whole)


def test_two_workers_cut_what_one_cuts(tmp_path):
    net, plane, window, stats = _setup(tmp_path, "maxpool", "train")
    heard = []
    one = cut_tiled(net, plane, window, stats, tiles=4, workers=1, device="cpu",
                    progress=lambda d, t: heard.append((d, t)))
    assert heard == [(1, 4), (2, 4), (3, 4), (4, 4)]
    heard.clear()
    two = cut_tiled(net, plane, window, stats, tiles=4, workers=2, device="cpu",
                    progress=lambda d, t: heard.append((d, t)))
    assert heard == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert_same(two, one)
    assert_same(two, cut_slice(net, plane, window, stats, device="cpu"))


def test_progress_that_raises_stops_the_workers(tmp_path):
    net, plane, window, stats = _setup(tmp_path, "residual", "train")

    def stop(done, total):
        raise KeyboardInterrupt("cancelled")

    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt, match="cancelled"):
        cut_tiled(net, plane, window, stats, tiles=16, workers=2, device="cpu", progress=stop)
    assert time.perf_counter() - t0 < 60


def test_the_merged_cap_is_the_untiled_cap(tmp_path):
    net, plane, window, _ = _setup(tmp_path, "conv", "eval")
    n = cut_slice(net, plane, window, device="cpu").counts[0]
    with pytest.raises(PartitionTooLarge, match=rf"more than {n - 1} regions"):
        cut_tiled(net, plane, window, tiles=4, workers=1, device="cpu", max_regions=n - 1)


@pytest.mark.parametrize("n", range(1, 11))
def test_tiles_are_a_near_square_grid_of_equal_areas(n):
    window = (-1.0, 3.0, -2.0, 0.5)
    tiles = np.array(tile_windows(window, n))
    assert len(tiles) == n
    areas = (tiles[:, 1] - tiles[:, 0]) * (tiles[:, 3] - tiles[:, 2])
    np.testing.assert_allclose(areas, 10.0 / n, rtol=1e-12)
    assert (tiles[:, 0] >= -1).all() and (tiles[:, 1] <= 3).all()
    assert (tiles[:, 2] >= -2).all() and (tiles[:, 3] <= 0.5).all()
    rows = np.unique(tiles[:, 2])
    assert len(rows) == round(np.sqrt(n))
    if round(np.sqrt(n)) ** 2 == n:
        assert len(np.unique(tiles[:, 0])) == len(rows)
    # no overlap: the centres of a fine grid each lie in exactly one tile
    g = np.stack(np.meshgrid(np.linspace(-0.99, 2.99, 57), np.linspace(-1.99, 0.49, 43)),
                 -1).reshape(-1, 2)
    inside = ((g[:, None, 0] >= tiles[:, 0]) & (g[:, None, 0] < tiles[:, 1])
              & (g[:, None, 1] >= tiles[:, 2]) & (g[:, None, 1] < tiles[:, 3]))
    assert (inside.sum(1) == 1).all()


def _squares(*corners, h: float = 1.0):
    """Unit squares (height ``h``) with these lower-left corners, CCW, as Polygons."""
    from bnviz.core.partition import Polygons

    verts = np.concatenate([np.array([[x, y], [x + 1, y], [x + 1, y + h], [x, y + h]])
                            for x, y in corners])
    return Polygons(np.arange(0, 4 * len(corners) + 1, 4), verts,
                    np.zeros((len(corners), 0), np.uint8), 0)


def test_hulls_of_pieces_are_their_unions():
    """Pieces sharing edges and a corner (points on the tile lines inside the union, and
    repeated) make one polygon of their union's corners; a lone piece keeps its polygon; a
    union thinner than the tolerance keeps its largest piece; a union that is not convex is
    refused."""
    from bnviz.slices.tilemerge import _Geometry, _hulls

    geo = _Geometry(np.zeros((0, 4)), np.array([-4.0, 4.0, -4.0, 4.0]), 8.0)
    pieces = _squares((-1, -1), (0, -1), (-1, 0), (0, 0), (2, 2))
    ptr, verts = _hulls(pieces, np.array([0, 0, 0, 0, 1]), 2, geo)
    assert ptr.tolist() == [0, 4, 8]
    assert {tuple(v) for v in verts[:4]} == {(-1, -1), (1, -1), (1, 1), (-1, 1)}
    assert np.array_equal(verts[4:], pieces.vertices[16:])  # as it was
    thin = _squares((0, 0), (1, 0), h=1e-13)
    ptr, verts = _hulls(thin, np.array([0, 0]), 1, geo)
    assert ptr.tolist() == [0, 4]
    with pytest.raises(ValueError, match="not make one convex polygon"):
        _hulls(_squares((0, 0), (1, 0), (0, 1)), np.array([0, 0, 0]), 1, geo)
