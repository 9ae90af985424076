"""The cut of one layer (bnviz.core.cut.layer_step) in the cases where the geometry is special:
BN's layer-1 central arrangement (Corollary 2: 2 D regions, one central vertex, no slivers),
one layer of lines in general position (regions = 1 + lines + intersections), a tiny
triangle, duplicate and zero units, tiny and identical batches, and float64 exactness of the
slope and of nearly parallel lines; every partition is also checked against the independent
reference of tests/partition_reference.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import shapely
from partition_reference import (
    ACTS,
    ALPHA,
    BOXES,
    box_area,
    box_len,
    check_all,
    check_codes,
    check_polygons,
    expected_line_regions,
    fn_scale,
    make_overrides,
    ref_affine,
    signed_dist,
)
from shapely.geometry import Polygon as ShapelyPolygon

from bnviz.core.network import (
    MODES,
    Network,
    random_network,
    select_batch,
)
from bnviz.core.partition import compute_partition
from bnviz.data.datasets import DATASETS, make_dataset

# --------------------------------------------------------------------------- Corollary 2


def _sector_areas(centroid, w, box):
    """Areas of the 2 D sectors of D lines through ``centroid`` inside the box (shapely)."""
    ang = np.arctan2(w[:, 0], -w[:, 1])  # direction of each line
    rays = np.sort(np.concatenate([ang, ang + np.pi]) % (2 * np.pi))
    big = 100.0 * box_len(box) + np.abs(centroid).max()
    boxp = shapely.box(box[0], box[2], box[1], box[3])
    out = []
    for t0, t1 in zip(rays, np.append(rays[1:], rays[0] + 2 * np.pi), strict=True):
        ts = np.linspace(t0, t1, 8)
        poly = ShapelyPolygon([tuple(centroid)] + [tuple(centroid + big * np.array(
            [np.cos(t), np.sin(t)])) for t in ts])
        out.append(poly.intersection(boxp).area)
    return np.sort(np.array(out))


COR2 = [(w, name, seed) for w, (name, seed) in zip(
    [2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64],
    itertools.cycle([(n, s) for s in range(3) for n in DATASETS]), strict=False)]


@pytest.mark.parametrize("width,name,seed", COR2)
@pytest.mark.parametrize("act", ["relu", "abs"])
def test_corollary2_bn_layer1_is_a_central_arrangement(width, name, seed, act):
    net = random_network(2, [width, 3], activation=act, mode="bn", seed=seed)
    batch = select_batch(make_dataset(name, 200, seed=seed).points, 50, seed)
    centroid = batch.mean(0)
    box = (-3.0, 3.0, -3.0, 3.0)
    part = compute_partition(net, batch, box=box, device="cpu")
    st = part.layers[0].stats
    w = net.weights[0]
    # every layer-1 hyperplane passes through the batch centroid
    assert np.all(np.abs(w @ centroid - st.mu) <= 1e-12 * (np.abs(w).sum(1) * 3))
    polys = part.layers[0].regions
    assert len(polys) == 2 * width
    assert len(part.layers[0].facets) == width
    areas = np.sort(polys.areas())
    np.testing.assert_allclose(areas, _sector_areas(centroid, w, box), rtol=1e-7,
                               atol=1e-12 * box_area(box))
    # one central vertex: every region has the centroid as a corner, no near-duplicates of it
    d = np.hypot(*(polys.vertices - centroid).T)
    near = d < 1e-9
    assert near.sum() == 2 * width
    assert np.all(np.add.reduceat(near.astype(int), polys.ptr[:-1]) == 1)
    assert np.all((d > 1e-9) == (d > 1e-6)), "a corner within 1e-6 of the central vertex"
    # no slivers: float noise at the central point would show as extra tiny regions
    assert areas.min() > 1e-6 * box_area(box)
    check_polygons(net, part)
    check_codes(net, [lay.stats for lay in part.layers], part, np.random.default_rng(seed))


@pytest.mark.parametrize("gap", [1e-1, 1e-3, 1e-5])
@pytest.mark.parametrize("width", [2, 5, 9, 16])
@pytest.mark.parametrize("side", ["left", "top"])
def test_corollary2_centroid_near_box_edge(gap, width, side):
    net = random_network(1, width, mode="bn", seed=width)
    batch = make_dataset("blobs", 64, seed=width).points
    cx, cy = batch.mean(0)
    if side == "left":
        box = (cx - gap, cx + 2.0, cy - 1.5, cy + 1.0)
    else:
        box = (cx - 1.0, cx + 1.7, cy - 2.0, cy + gap)
    part = compute_partition(net, batch, box=box, device="cpu")
    polys = part.regions
    assert len(polys) == 2 * width
    areas = np.sort(polys.areas())
    np.testing.assert_allclose(areas, _sector_areas(np.array([cx, cy]), net.weights[0], box),
                               rtol=1e-6, atol=1e-13 * box_area(box))
    check_all(net, [lay.stats for lay in part.layers], part)

def _line_cases():
    out = []
    for seed in range(24):
        out.append(("random_bias", 2 + seed % 11, seed, BOXES[seed % 4], 0.0))
    out += [("zero_bias", 7, 1, (0.5, 3.0, 0.2, 2.0), 0.0),
            ("zero_bias", 12, 2, (-3.0, -1.0, -2.0, 2.0), 0.0),
            ("zero_bias", 5, 3, (-1.0, 1.0, 0.01, 0.5), 0.0),
            ("bn", 9, 4, (1.0, 3.0, 1.0, 3.0), 0.0),  # data centroid outside the box
            ("bn", 12, 5, (-3.0, -0.5, -3.0, 3.0), 0.0),
            ("bn", 6, 6, (-3.0, 3.0, -3.0, 3.0), 0.5),
            ("bn", 11, 7, (-1.0, 1.0, -1.0, 1.0), 0.4),
            ("bn", 3, 8, (-0.5, 2.0, -1.5, 0.7), 1.0)]
    return out


@pytest.mark.parametrize("mode,width,seed,box,offset", _line_cases())
def test_one_layer_of_lines_in_general_position(mode, width, seed, box, offset):
    net = random_network(1, width, mode=mode, seed=seed, activation="leaky_relu")
    batch = make_dataset("blobs", 80, seed=seed).points
    ov = make_overrides(net, offset, seed)
    part = compute_partition(net, batch, box=box, overrides=ov, device="cpu")
    st = part.layers[0].stats
    expected, n_cross = expected_line_regions(net.weights[0], st.mu, box)
    if mode == "zero_bias" or (mode == "bn" and not offset):
        # all lines meet at one point outside the box: no intersection inside
        assert expected == 1 + n_cross
    assert len(part.regions) == expected
    assert len(part.layers[0].facets) == n_cross
    assert np.all(part.layers[0].facet_parents == 0)
    check_all(net, [lay.stats for lay in part.layers], part, seed)


@pytest.mark.parametrize("size", [1e-2, 1e-4, 1e-6])
@pytest.mark.parametrize("where", [(0.3, -0.2), (-0.9, 0.95)])
def test_tiny_triangle_is_a_region(size, where):
    """Three lines bounding a small triangle (side ~ size) inside the box: 7 regions, and the
    triangle is one of them with its exact area (no region dropped or merged away)."""
    rng = np.random.default_rng(int(-np.log10(size)))
    ang = np.array([0.1, 2.2, 4.2]) + rng.uniform(-0.05, 0.05, 3)
    normals = np.stack([np.cos(ang), np.sin(ang)], 1)
    center = np.array(where)
    # lines n_k . (x - center) = -size / 2: the triangle contains center
    w, offset = normals, normals @ center - size / 2
    net = Network((w,), "relu", mode="random_bias", biases=(-offset,))
    box = (-1.0, 1.0, -1.0, 1.0)
    part = compute_partition(net, np.zeros((1, 2)), box=box, device="cpu")
    expected, _ = expected_line_regions(w, offset, box)
    assert expected == 7 and len(part.regions) == 7
    tri = []
    for i, j in ((0, 1), (1, 2), (2, 0)):
        tri.append(np.linalg.solve(w[[i, j]], offset[[i, j]]))
    e1, e2 = tri[1] - tri[0], tri[2] - tri[0]
    area = 0.5 * abs(e1[0] * e2[1] - e1[1] * e2[0])
    areas = part.regions.areas()
    k = np.argmin(areas)
    assert areas[k] == pytest.approx(area, rel=1e-6)
    np.testing.assert_array_equal(part.regions.codes[k], [True, True, True])  # h(center) > 0
    check_all(net, [lay.stats for lay in part.layers], part)

# --------------------------------------------------------------------------- degenerate cases


def _run_degenerate(net, batch, box=(-3.0, 3.0, -3.0, 3.0), overrides=None, seed=0):
    part = compute_partition(net, batch, box=box, overrides=overrides, device="cpu")
    stats = [lay.stats for lay in part.layers]
    check_all(net, stats, part, seed)
    return part


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTS)
def test_duplicate_units(act, mode):
    base = random_network(3, [4, 5, 4], activation=act, alpha=ALPHA, mode=mode, seed=31)
    w1 = np.vstack([base.weights[0], base.weights[0][1:2]])  # unit 4 = unit 1
    w2 = np.hstack([base.weights[1], np.full((5, 1), 0.3)])
    w2 = np.vstack([w2, w2[2:3]])  # unit 5 of layer 2 = unit 2
    w3 = np.hstack([base.weights[2], base.weights[2][:, :1]])
    biases = (np.append(base.biases[0], base.biases[0][1]),
              np.append(base.biases[1], base.biases[1][2]), base.biases[2])
    net = Network((w1, w2, w3), act, ALPHA, mode, biases)
    batch = make_dataset("moons", 80, seed=3).points
    part = _run_degenerate(net, batch)
    codes = part.regions.codes
    np.testing.assert_array_equal(codes[:, 1], codes[:, 4])
    np.testing.assert_array_equal(codes[:, 5 + 2], codes[:, 5 + 5])
    # layer 1: the duplicate changes nothing in the partition
    single = compute_partition(Network((base.weights[0],), act, ALPHA, mode, base.biases[:1]),
                               batch, device="cpu")
    assert len(part.layers[0].regions) == len(single.regions)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTS)
def test_zero_rows(act, mode):
    base = random_network(3, 5, activation=act, alpha=ALPHA, mode=mode, seed=32)
    w1, w2 = base.weights[0].copy(), base.weights[1].copy()
    w1[2] = 0.0
    w2[0] = 0.0
    net = Network((w1, w2, base.weights[2]), act, ALPHA, mode, base.biases)
    part = _run_degenerate(net, make_dataset("circles", 60, seed=1).points)
    for lay, unit in zip(part.layers[:2], (2, 0), strict=False):
        assert unit not in set(lay.facet_units.tolist())  # a constant unit has no hyperplane
    assert len(np.unique(part.regions.codes[:, 2])) == 1
    assert len(np.unique(part.regions.codes[:, 5])) == 1


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("act", ACTS)
def test_tiny_and_identical_batches(act, n):
    net = random_network(3, 6, activation=act, alpha=ALPHA, mode="bn", seed=33 + n)
    x0 = np.array([[0.4, -0.3]])
    batch = np.tile(x0, (n, 1)) if n != 2 else np.array([[0.4, -0.3], [-1.0, 0.8]])
    part = _run_degenerate(net, batch, seed=n)
    # layer-1 hyperplanes still pass through the batch centroid: 2 D regions
    assert len(part.layers[0].regions) == 12


def test_identical_points_at_origin():
    net = random_network(2, 5, activation="leaky_relu", alpha=ALPHA, mode="bn", seed=3)
    part = _run_degenerate(net, np.zeros((4, 2)))
    st = part.layers[0].stats
    assert np.all(np.isfinite(st.sigma)) and np.all(st.sigma > 0)
    assert len(part.layers[0].regions) == 10


@pytest.mark.parametrize("width", [16, 33, 64])
def test_bn_layer1_wide_has_one_central_vertex(width):
    net = random_network(2, [width, 4], activation="leaky_relu", alpha=ALPHA, mode="bn",
                         seed=width)
    batch = make_dataset("gaussian", 100, seed=width).points
    part = _run_degenerate(net, batch, seed=width)
    polys = part.layers[0].regions
    assert len(polys) == 2 * width
    centroid = batch.mean(0)
    d = np.hypot(*(polys.vertices - centroid).T)
    assert (d < 1e-9).sum() == 2 * width
    # every other corner is on the box boundary
    v = polys.vertices[d >= 1e-9]
    on_edge = np.minimum(np.abs(np.abs(v[:, 0]) - 3), np.abs(np.abs(v[:, 1]) - 3)) < 1e-12
    assert np.all(on_edge)


@pytest.mark.parametrize("act", ACTS)
def test_data_centroid_outside_the_box(act):
    net = random_network(3, 6, activation=act, alpha=ALPHA, mode="bn", seed=40)
    batch = make_dataset("blobs", 100, seed=40).points + np.array([5.0, 5.0])
    box = (-2.0, 2.0, -2.0, 2.0)
    part = _run_degenerate(net, batch, box=box)
    st = part.layers[0].stats
    expected, _ = expected_line_regions(net.weights[0], st.mu, box)
    assert len(part.layers[0].regions) == expected


def test_dead_relu_region_zero_bias():
    """ReLU, zero bias: where every layer-1 unit is off, every layer-2 pre-activation is 0."""
    w1 = np.array([[0.3, 1.0], [-0.5, 1.0], [0.1, 1.2]])
    w2 = np.array([[1.0, 0.5, 0.2], [-1.0, 0.3, 0.4]])
    net = Network((w1, w2), "relu", mode="zero_bias")
    part = _run_degenerate(net, np.zeros((2, 2)))
    assert [len(lay.regions) for lay in part.layers] == [6, 7]
    dead = ~part.regions.codes[:, :3].any(1)
    assert dead.sum() == 1 and not part.regions.codes[dead, 3:].any()


def test_abs_zero_bias_symmetry():
    """abs with zero bias is even: the partition is symmetric under x -> -x."""
    net = random_network(3, 5, activation="abs", mode="zero_bias", seed=4)
    part = _run_degenerate(net, np.zeros((3, 2)))
    areas = np.sort(part.regions.areas())
    polys = part.regions
    mirror = -polys.vertex_means()
    sd = signed_dist(mirror, polys)
    assert np.all(sd.max(1) > 0)
    np.testing.assert_allclose(np.sort(polys.areas()[sd.argmax(1)]), areas, rtol=1e-9)
# --------------------------------------------------------------------------- known bugs

# Regression: the slope factor was once built in float32 (torch.where on Python floats).


@pytest.mark.parametrize("seed", [0, 9])
def test_leaky_relu_slope_is_exact_in_deeper_layers(seed):
    """Minimal: 2 layers, leaky-ReLU alpha = 0.1; layer-2 facets must lie on their lines to
    float64 accuracy (they are ~1e-9 relative off)."""
    net = random_network(2, 10, activation="leaky_relu", alpha=0.1, mode="bn", seed=seed)
    batch = make_dataset("blobs", 100, seed=seed).points
    part = compute_partition(net, batch, box=(-6.0, 6.0, -6.0, 6.0), device="cpu")
    stats = [lay.stats for lay in part.layers]
    lay = part.layers[1]
    prev = part.layers[0].regions
    a, c = ref_affine(net, stats, prev.codes[lay.facet_parents], 2)[-1]
    s = np.arange(len(lay.facets))
    fa, fc = a[s, lay.facet_units], c[s, lay.facet_units]
    scale = fn_scale(fa, fc, part.box)
    for p in (lay.facets[:, :2], lay.facets[:, 2:]):
        err = np.abs((fa * p).sum(1) + fc) / scale
        assert err.max() <= 1e-12, f"facet end {err.max():.2e} (relative) off its line"


# Regression: 2*pi was once added in float32 to wrap-around sector widths.


@pytest.mark.parametrize(
    "orientation",
    ["x", "y", "diag"],
)
@pytest.mark.parametrize("eps", [5e-8, 1e-9])
def test_nearly_parallel_lines_crossing_inside_the_box(orientation, eps):
    """Two lines through the origin at an angle of 2 eps: 4 regions, whatever their direction
    (x: near the x axis, where the sectors around their crossing wrap around +-pi)."""
    w = {"x": [[eps, 1.0], [-eps, 1.0]], "y": [[1.0, eps], [1.0, -eps]],
         "diag": [[1.0, 1.0 + eps], [1.0, 1.0 - eps]]}[orientation]
    net = Network((np.array(w),), "relu", mode="zero_bias")
    part = compute_partition(net, np.zeros((2, 2)), box=(-1.0, 1.0, -1.0, 1.0), device="cpu")
    assert len(part.regions) == 4
    check_all(net, [lay.stats for lay in part.layers], part)
