"""The exact partition (bnviz.core.partition: compute_partition and its result types) against
an independent numpy reference (tests/partition_reference.py): on many random networks every
region is convex and the regions tile the box, the activation pattern is constant in a region,
facets lie on their hyperplanes, adjacent regions differ in the separating unit, the decision
boundary is the zero set of the logit, and the region counts equal regioncam's.  Claims
checked: docs/conventions.md, "Exact claims"; the special cases of one layer's cut are in
test_cut.py.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np
import pytest
import regioncam
from partition_reference import (
    ACTS,
    ALPHA,
    BOXES,
    box_area,
    box_len,
    check_adjacency,
    check_all,
    check_codes,
    check_facets,
    check_point_location,
    check_polygons,
    fn_scale,
    make_overrides,
    ref_affine,
    ref_logit,
    ref_slope,
    seg_point_dist,
    signed_dist,
)

from bnviz.core.crossings import RTOL
from bnviz.core.limits import PartitionTooLarge
from bnviz.core.network import (
    MODES,
    BNOverrides,
    Head,
    Network,
    layer_statistics,
    random_network,
    select_batch,
)
from bnviz.core.partition import box_from_extent, compute_partition
from bnviz.data.datasets import DATASETS, make_dataset

# --------------------------------------------------------------------------- cases


class Case(NamedTuple):
    act: str
    mode: str
    depth: int
    width: int
    seed: int
    box: tuple
    data: str
    batch: int | None
    mu_offset: float = 0.0  # std of a random per-unit mu offset on every layer
    head: int = 0
    alpha: float = ALPHA

    def __str__(self) -> str:
        return (f"{self.act}-{self.mode}-d{self.depth}w{self.width}-s{self.seed}-{self.data}"
                f"-b{self.batch}-box{self.box[1] - self.box[0]:g}"
                + (f"-off{self.mu_offset:g}" if self.mu_offset else "")
                + (f"-head{self.head}" if self.head else "")
                + (f"-a{self.alpha:g}" if self.act == "leaky_relu" else ""))


def _cases() -> list[Case]:
    out = []
    for idx, (act, mode) in enumerate(itertools.product(ACTS, MODES)):
        for j in range(8):
            i = 8 * idx + j
            out.append(Case(act, mode, 1 + i % 4, 2 + (7 * i) % 11, i, BOXES[i % 5],
                            DATASETS[i % 6], (None, 16, 40, 3)[i % 4],
                            alpha=(0.125, 0.25, 0.375)[j % 3]))
    # larger ones, and BN with mu overrides (general position in layer 1)
    out += [
        Case("leaky_relu", "bn", 4, 12, 101, BOXES[0], "moons", None),
        Case("leaky_relu", "random_bias", 1, 12, 107, BOXES[0], "moons", None, alpha=0.1),
        Case("relu", "bn", 4, 8, 102, BOXES[0], "spiral", 32),
        Case("abs", "bn", 3, 10, 103, BOXES[4], "star", None),
        Case("leaky_relu", "bn", 3, 8, 104, BOXES[1], "gaussian", 20, mu_offset=0.5),
        Case("abs", "bn", 2, 9, 105, BOXES[2], "blobs", None, mu_offset=0.3),
        Case("relu", "bn", 3, 6, 106, BOXES[0], "circles", 8, mu_offset=1.0),
    ]
    return out


CASES = _cases()


@functools.cache
def build(case: Case):
    net = random_network(case.depth, case.width, activation=case.act, alpha=case.alpha,
                         mode=case.mode, seed=case.seed, head_outputs=case.head)
    batch = select_batch(make_dataset(case.data, 100, seed=case.seed).points, case.batch,
                         case.seed)
    ov = make_overrides(net, case.mu_offset, case.seed)
    stats = layer_statistics(net, batch, ov)
    part = compute_partition(net, batch, box=case.box, overrides=ov, device="cpu")
    return net, batch, stats, part


# --------------------------------------------------------------------------- property tests


@pytest.mark.parametrize("case", CASES, ids=str)
def test_regions_convex_ccw_and_tile_the_box(case):
    net, _, _, part = build(case)
    assert part.box == case.box and part.widths == net.widths
    assert len(part.layers) == net.depth and part.regions is part.layers[-1].regions
    assert [lay.layer for lay in part.layers] == list(range(1, net.depth + 1))
    assert part.decision_boundary is None
    check_polygons(net, part)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_activation_pattern_constant_in_every_region(case):
    net, _, stats, part = build(case)
    check_codes(net, stats, part, np.random.default_rng(case.seed))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_random_points_fall_in_one_region_with_their_pattern(case):
    net, _, stats, part = build(case)
    check_point_location(net, stats, part, np.random.default_rng(case.seed + 1))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_facets_lie_on_their_hyperplanes(case):
    net, _, stats, part = build(case)
    for lay, st in zip(part.layers, stats, strict=True):
        assert lay.stats is st or np.array_equal(lay.stats.mu, st.mu)
    check_facets(net, stats, part)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_adjacent_regions_differ_in_the_separating_unit(case):
    net, _, stats, part = build(case)
    tested = check_adjacency(net, stats, part, np.random.default_rng(case.seed + 2))
    n_facets = sum(len(lay.facets) for lay in part.layers)
    assert tested >= min(n_facets, 3)

# --------------------------------------------------------------------------- decision boundary


HEAD_CASES = [
    Case("leaky_relu", "bn", 3, 8, 201, BOXES[0], "moons", None, head=1),
    Case("relu", "bn", 2, 10, 202, BOXES[0], "circles", 32, head=2),
    Case("abs", "random_bias", 3, 6, 203, BOXES[1], "star", None, head=1),
    Case("leaky_relu", "zero_bias", 2, 7, 204, BOXES[2], "spiral", None, head=2),
    Case("relu", "random_bias", 4, 6, 205, BOXES[4], "blobs", None, head=2),
    Case("abs", "bn", 2, 5, 207, BOXES[0], "gaussian", 16, mu_offset=0.3, head=1),
]


def _decision_ground(net, stats, part, box):
    """For every final region, the decision function's affine map from the region's code."""
    codes = part.regions.codes
    aff = ref_affine(net, stats, codes, net.depth)
    a, c = aff[-1]
    f = np.where(codes[:, -net.widths[-1]:], 1.0, ref_slope(net.activation, net.alpha))
    wd = net.head.weight if net.head.weight.shape[0] == 1 else (
        net.head.weight[1:] - net.head.weight[:1])
    bd = net.head.bias[0] if net.head.weight.shape[0] == 1 else (
        net.head.bias[1] - net.head.bias[0])
    ga = np.einsum("d,rdc->rc", wd[0], f[:, :, None] * a)
    gc = (f * c) @ wd[0] + bd
    return ga, gc, fn_scale(ga, gc, box)


@pytest.mark.parametrize("case", HEAD_CASES, ids=str)
def test_decision_boundary_is_the_zero_set_of_the_logit(case):
    net, _, stats, part = build(case)
    box = part.box
    blen = box_len(box)
    seg = part.decision_boundary
    assert seg is not None and seg.ndim == 2 and seg.shape[1] == 4
    ga, gc, gs = _decision_ground(net, stats, part, box)
    polys = part.regions
    own = np.repeat(np.arange(len(polys)), np.diff(polys.ptr))
    gv = (ga[own] * polys.vertices).sum(1) + gc[own]
    vmax = np.maximum.reduceat(gv, polys.ptr[:-1])
    vmin = np.minimum.reduceat(gv, polys.ptr[:-1])
    crossing = (vmax > 1e-9 * gs) & (vmin < -1e-9 * gs)
    # one segment per region that the boundary crosses
    assert len(seg) == int(crossing.sum())
    assert len(seg) > 0
    mid = 0.5 * (seg[:, :2] + seg[:, 2:])
    sd = signed_dist(mid, polys)
    reg = sd.argmax(1)
    assert np.all(sd.max(1) > 0) and np.all(crossing[reg])
    assert len(np.unique(reg)) == len(seg)
    for p in (seg[:, :2], seg[:, 2:], mid):
        g = ref_logit(net, stats, p)
        assert np.all(np.abs(g) <= 1e-8 * gs[reg]), "a boundary point is off the zero set"
    # the logit changes sign across every segment (away from facets)
    facets = np.concatenate([lay.facets for lay in part.layers])
    d = seg[:, 2:] - seg[:, :2]
    n = np.stack([-d[:, 1], d[:, 0]], 1) / np.hypot(*d.T)[:, None]
    near = seg_point_dist(mid, facets).min(1) < 1e-6 * blen
    eps = 1e-8 * blen
    gp = ref_logit(net, stats, mid + eps * n)
    gm = ref_logit(net, stats, mid - eps * n)
    assert np.all((np.sign(gp) * np.sign(gm))[~near] < 0)
    assert (~near).sum() >= len(seg) // 2


def test_decision_boundary_logit_conventions():
    """Two outputs: boundary {logit_1 = logit_0}; swapping the outputs keeps the boundary."""
    net = random_network(2, 6, alpha=ALPHA, seed=7, head_outputs=2)
    batch = make_dataset("moons", 60, seed=7).points
    p = compute_partition(net, batch, device="cpu")
    h = net.head
    swapped = Network(net.weights, net.activation, net.alpha, net.mode, net.biases,
                      Head(h.weight[::-1], h.bias[::-1]))
    q = compute_partition(swapped, batch, device="cpu")
    key = lambda s: np.sort(np.round(np.minimum(s[:, :2], s[:, 2:]).sum(1), 9))  # noqa: E731
    assert len(p.decision_boundary) == len(q.decision_boundary)
    np.testing.assert_allclose(key(p.decision_boundary), key(q.decision_boundary), atol=1e-8)
    one = Network(net.weights, net.activation, net.alpha, net.mode, net.biases,
                  Head(h.weight[1:] - h.weight[:1], h.bias[1:] - h.bias[:1]))
    r = compute_partition(one, batch, device="cpu")
    np.testing.assert_allclose(r.decision_boundary, p.decision_boundary, atol=1e-12)

# --------------------------------------------------------------------------- regioncam


def _regioncam_cases():
    rng = np.random.default_rng(2024)
    out = []
    for i in range(120):
        act = ("relu", "leaky_relu", "abs")[i % 3]
        mode = "random_bias" if i % 2 else "bn"
        out.append((act, mode, int(rng.integers(1, 5)), int(rng.integers(3, 17)), i,
                    (1.0, 3.0)[(i // 2) % 2]))
    return out


@pytest.mark.parametrize("act,mode,depth,width,seed,extent", _regioncam_cases())
def test_region_counts_match_regioncam(act, mode, depth, width, seed, extent):
    net = random_network(depth, width, activation=act, mode=mode, seed=seed)
    batch = make_dataset(DATASETS[seed % 6], 64, seed=seed).points
    ov = make_overrides(net, 0.5, seed) if mode == "bn" else None  # layer 1 not central
    box = box_from_extent(extent)
    assert box == (-extent, extent, -extent, extent)
    part = compute_partition(net, batch, box=box, overrides=ov, device="cpu")
    stats = layer_statistics(net, batch, ov)
    cam = regioncam.Regioncam(size=extent)
    v = np.asarray(cam.vertex_inputs)
    assert np.allclose(np.sort(np.abs(v), axis=0), extent)  # the box [-E, E]^2
    counts = []
    for w, st in zip(net.weights, stats, strict=True):
        w_eff = w / st.sigma[:, None]
        b_eff = -st.mu / st.sigma
        cam.linear(w_eff.T.astype(np.float32), b_eff.astype(np.float32))
        if act == "relu":
            cam.relu()
        else:
            cam.leaky_relu(ref_slope(act, net.alpha))
        counts.append(cam.num_faces)
    assert [len(lay.regions) for lay in part.layers] == counts


# --------------------------------------------------------------------------- API edges


def test_max_regions():
    net = random_network(3, 10, mode="random_bias", seed=5)
    batch = make_dataset("moons", 50).points
    part = compute_partition(net, batch, device="cpu")
    sizes = [len(lay.regions) for lay in part.layers]
    top = max(sizes)
    compute_partition(net, batch, device="cpu", max_regions=top)  # at the cap: fine
    with pytest.raises(PartitionTooLarge, match=rf"{top - 1}") as info:
        compute_partition(net, batch, device="cpu", max_regions=top - 1)
    assert "regions" in str(info.value) and isinstance(info.value, ValueError)
    with pytest.raises(PartitionTooLarge, match=r"layer 1"):
        compute_partition(net, batch, device="cpu", max_regions=sizes[0] - 1)


def _same_partition(p, q, exact):
    assert len(p.layers) == len(q.layers)
    for a, b in zip(p.layers, q.layers, strict=True):
        ra, rb = a.regions, b.regions
        assert len(ra) == len(rb) and len(a.facets) == len(b.facets)
        if exact:
            for x, y in ((ra.ptr, rb.ptr), (ra.vertices, rb.vertices), (ra.codes, rb.codes),
                         (a.facets, b.facets), (a.facet_units, b.facet_units),
                         (a.facet_parents, b.facet_parents)):
                np.testing.assert_array_equal(x, y)
        else:
            oa = np.lexsort(ra.codes.T)
            ob = np.lexsort(rb.codes.T)
            np.testing.assert_array_equal(ra.codes[oa], rb.codes[ob])
            np.testing.assert_allclose(ra.areas()[oa], rb.areas()[ob], rtol=1e-9,
                                       atol=1e-12 * box_area(p.box))


def test_cpu_device_equals_default():
    net = random_network(3, 8, mode="bn", seed=6, head_outputs=1)
    batch = make_dataset("spiral", 80, seed=6).points
    p = compute_partition(net, batch)
    q = compute_partition(net, batch, device="cpu")
    assert q.device == "cpu" and q.seconds >= 0
    _same_partition(p, q, exact=p.device == "cpu")
    if p.device == "cpu":
        np.testing.assert_array_equal(p.decision_boundary, q.decision_boundary)


def test_given_stats_and_overrides_agree():
    net = random_network(3, 6, alpha=ALPHA, mode="bn", seed=9)
    batch = make_dataset("star", 70, seed=9).points
    ov = BNOverrides.unit(6, layer=2, unit=3, mu_offset=0.7, sigma_scale=0.5)
    p = compute_partition(net, batch, overrides=ov, device="cpu")
    q = compute_partition(net, batch, stats=layer_statistics(net, batch, ov), device="cpu")
    _same_partition(p, q, exact=True)
    plain = compute_partition(net, batch, device="cpu")
    assert len(plain.layers[0].regions) == len(p.layers[0].regions)
    np.testing.assert_array_equal(plain.layers[0].regions.vertices, p.layers[0].regions.vertices)
    check_all(net, [lay.stats for lay in p.layers], p)


@pytest.mark.parametrize("box", [(1.0, 1.0, 0.0, 1.0), (0.0, 1.0, 2.0, -2.0),
                                 (0.0, math.inf, 0.0, 1.0), (math.nan, 1.0, 0.0, 1.0)])
def test_bad_box(box):
    net = random_network(1, 3, seed=0)
    with pytest.raises(ValueError):
        compute_partition(net, np.zeros((3, 2)), box=box, device="cpu")


def test_box_from_extent_and_rtol():
    assert box_from_extent(2) == (-2.0, 2.0, -2.0, 2.0)
    for bad in (0, -1, math.inf, math.nan):
        with pytest.raises(ValueError):
            box_from_extent(bad)
    assert RTOL == 1e-10


def test_code_strings():
    net = random_network(2, [3, 2], seed=1)
    part = compute_partition(net, make_dataset("moons", 30).points, device="cpu")
    strings = part.regions.code_strings(net.widths)
    assert len(strings) == len(part.regions)
    for s, code in zip(strings, part.regions.codes, strict=True):
        a, b = s.split("|")
        assert len(a) == 3 and len(b) == 2
        assert [c == "1" for c in a + b] == list(code)

# --------------------------------------------------------------------------- known bugs

# Regression: the slope factor was once built in float32 (torch.where on Python floats).


@pytest.mark.parametrize("case", [
    Case("leaky_relu", "bn", 2, 10, 9, BOXES[4], "blobs", None, alpha=0.1),
    Case("leaky_relu", "random_bias", 3, 8, 3, BOXES[0], "moons", None, alpha=0.1),
    Case("leaky_relu", "bn", 4, 12, 101, BOXES[0], "moons", None, alpha=0.1),
], ids=str)
def test_codes_exact_with_default_alpha(case):
    net, _, stats, part = build(case)
    check_codes(net, stats, part, np.random.default_rng(0))
