"""Which lines cross which polygons (bnviz.core.crossings.find_cuts) against a brute-force
evaluation at every corner with the documented on-the-line tolerance, and the chords against
shapely's intersection of the line with the polygon; lines that only touch a corner or run
along an edge do not cross.  Each test runs on numpy and on torch meshes, with and without
the circle test (crossings.DIRECT_PAIRS: small meshes skip it)."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
import torch

import bnviz.core.crossings as crossings
from bnviz.core.arrays import NUMPY, TorchOps
from bnviz.core.crossings import RTOL, find_cuts
from bnviz.core.mesh import box_mesh

BOX = (-1.0, 2.0, -1.5, 1.0)


@pytest.fixture(params=["numpy", "torch"])
def ops(request):
    return NUMPY if request.param == "numpy" else TorchOps(torch.device("cpu"))


@pytest.fixture(params=["circle test", "all pairs"], autouse=True)
def direct(request, monkeypatch):
    monkeypatch.setattr(crossings, "DIRECT_PAIRS", 0 if request.param == "circle test" else 10**6)


def _planes(ops, a: np.ndarray, c: np.ndarray):
    """(3, R, D) planes (a_x, a_y, c) of D lines in each of R polygons."""
    return ops.asarray(np.stack([a[..., 0], a[..., 1], c]))


def _np(x) -> np.ndarray:
    return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _corners(box) -> np.ndarray:
    x0, x1, y0, y1 = box
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]])


@pytest.mark.parametrize("seed", range(5))
def test_crossing_pairs_signs_and_chords_against_brute_force(seed, ops):
    """K copies of the box (realisation groups), D random lines each: the crossing (polygon,
    line) pairs are those strictly positive at one corner and strictly negative at another, the
    others get the sign they have on the box, and each chord is the line's segment in the box."""
    rng = np.random.default_rng(seed)
    k, d = 3, 40
    a = rng.normal(size=(k, d, 2))
    c = rng.normal(size=(k, d)) * 2.0
    cuts = find_cuts(box_mesh(BOX, groups=k, ops=ops), _planes(ops, a, c), BOX)
    h = np.einsum("vx,kdx->kdv", _corners(BOX), a) + c[..., None]  # (K, D, 4 corners)
    scale = np.abs(a[..., 0]) * 2.0 + np.abs(a[..., 1]) * 1.5 + np.abs(c)
    tol = RTOL * scale[..., None]
    crossing = (h > tol).any(-1) & (h < -tol).any(-1)
    got = set(zip(cuts.pair_poly.tolist(), cuts.pair_unit.tolist(), strict=True))
    assert got == set(zip(*np.nonzero(crossing), strict=True))
    assert 0 < len(got) < k * d  # both kinds occur
    const = _np(cuts.const)
    above = (h > tol).all(-1)
    below = (h < -tol).all(-1)
    np.testing.assert_array_equal(const[above], 1)
    np.testing.assert_array_equal(const[below], -1)
    box = shapely.box(BOX[0], BOX[2], BOX[1], BOX[3])
    for i, (p, u) in enumerate(zip(cuts.pair_poly.tolist(), cuts.pair_unit.tolist(),
                                   strict=True)):
        ends = np.stack([_np(cuts.chord_a[i]), _np(cuts.chord_b[i])])
        np.testing.assert_allclose(ends @ a[p, u] + c[p, u], 0.0, atol=1e-12 * scale[p, u])
        direction = np.array([-a[p, u, 1], a[p, u, 0]])
        point = -c[p, u] * a[p, u] / (a[p, u] @ a[p, u])
        line = shapely.LineString([point - 100 * direction, point + 100 * direction])
        chord = line.intersection(box)
        assert np.linalg.norm(ends[1] - ends[0]) == pytest.approx(chord.length, rel=1e-9)
        assert cuts.t_lo[i] <= cuts.t_hi[i]


@pytest.mark.parametrize("a, c", [
    ((1.0, 1.0), 2.5),  # x + y + 2.5 = 0 touches the corner (-1, -1.5) only
    ((1.0, 0.0), 1.0),  # x = -1: along the left edge
    ((0.0, -1.0), 1.0),  # y = 1: along the top edge (h = 1 - y)
])
def test_touching_lines_do_not_cross(a, c, ops):
    """A line that only touches the box (a corner, or along an edge) is 0 there up to RTOL: no
    crossing, and the box gets the line's sign elsewhere (+)."""
    cuts = find_cuts(box_mesh(BOX, ops=ops), _planes(ops, np.array([[a]]), np.array([[c]])), BOX)
    assert len(cuts.pair_poly) == 0 and int(cuts.const[0, 0]) == 1


def test_line_through_two_corners_has_them_as_its_chord(ops):
    """2.5 x - 3 y - 2 = 0 passes through the corners (-1, -1.5) and (2, 1): it crosses, with
    no edge crossing of its own, and its chord is the diagonal."""
    cuts = find_cuts(box_mesh(BOX, ops=ops), _planes(ops, np.array([[[2.5, -3.0]]]),
                                                     np.array([[-2.0]])), BOX)
    assert cuts.pair_poly.tolist() == [0] and cuts.b_pts.shape[0] == 0
    ends = sorted(map(tuple, np.stack([_np(cuts.chord_a[0]), _np(cuts.chord_b[0])]).tolist()))
    assert ends == [(-1.0, -1.5), (2.0, 1.0)]
