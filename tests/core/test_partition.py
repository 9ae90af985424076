"""Property tests of bnviz.core.partition against an independent numpy reference.

The reference forward pass below never calls bnviz: for a point x, z_0 = x,
h_l = (W_l z_{l-1} - mu_l) / sigma_l with mu, sigma from ``layer_statistics`` (whose values are
checked independently in test_network.py), z_l = a(h_l).  ``ref_affine`` gives the affine map of
every h_l inside a region from that region's activation code alone (slopes fixed by the code),
so the partition's polygons, codes, facets and decision boundary can each be checked against
the network itself.  Claims checked: SPEC.md "Claims that must hold exactly".
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np
import pytest
import regioncam
import shapely
from shapely.geometry import Polygon as ShapelyPolygon

from bnviz.core.limits import PartitionTooLarge
from bnviz.core.network import (
    ACTIVATIONS,
    MODES,
    BNOverrides,
    Head,
    LayerOverride,
    Network,
    layer_statistics,
    random_network,
    select_batch,
)
from bnviz.core.partition import RTOL, box_from_extent, compute_partition
from bnviz.data.datasets import DATASETS, make_dataset

ACTS = ACTIVATIONS
#: leaky-ReLU slope of the exactness tests (the default; not exact in float32, which catches
#: a slope built in float32 by mistake)
ALPHA = 0.1

# --------------------------------------------------------------------------- reference


def ref_slope(activation: str, alpha: float) -> float:
    return {"relu": 0.0, "leaky_relu": alpha, "abs": -1.0}[activation]


def ref_act(h: np.ndarray, activation: str, alpha: float) -> np.ndarray:
    if activation == "relu":
        return np.maximum(h, 0.0)
    if activation == "leaky_relu":
        return np.where(h > 0, h, alpha * h)
    return np.abs(h)


def ref_preacts(net: Network, stats, x: np.ndarray) -> list[np.ndarray]:
    """h_1..h_L at the points x (N, 2), by a plain numpy forward pass."""
    z = np.asarray(x, dtype=np.float64)
    out = []
    for w, st in zip(net.weights, stats, strict=True):
        h = (z @ w.T - st.mu) / st.sigma
        out.append(h)
        z = ref_act(h, net.activation, net.alpha)
    return out


def ref_logit(net: Network, stats, x: np.ndarray) -> np.ndarray:
    """The decision function (logit, or logit_1 - logit_0) at x."""
    z = ref_act(ref_preacts(net, stats, x)[-1], net.activation, net.alpha)
    logits = z @ net.head.weight.T + net.head.bias
    return logits[:, 0] if logits.shape[1] == 1 else logits[:, 1] - logits[:, 0]


def ref_pattern(net: Network, stats, x: np.ndarray, upto: int) -> np.ndarray:
    """Activation pattern (h > 0) of layers 1..upto at x, concatenated."""
    return np.concatenate([h > 0 for h in ref_preacts(net, stats, x)[:upto]], axis=1)


def ref_affine(net: Network, stats, codes: np.ndarray, upto: int):
    """For R activation codes: [(A_l (R, D_l, 2), c_l (R, D_l)) for l = 1..upto] with
    h_l(x) = A_l x + c_l on the region of that code (slopes taken from the code)."""
    r = codes.shape[0]
    jac = np.broadcast_to(np.eye(2), (r, 2, 2))
    off = np.zeros((r, 2))
    slope = ref_slope(net.activation, net.alpha)
    out, col = [], 0
    for w, st in list(zip(net.weights, stats, strict=True))[:upto]:
        a = np.einsum("dk,rkc->rdc", w, jac) / st.sigma[None, :, None]
        c = (off @ w.T - st.mu) / st.sigma
        out.append((a, c))
        d = w.shape[0]
        if len(out) < upto:
            f = np.where(codes[:, col:col + d], 1.0, slope)
            jac, off = f[:, :, None] * a, f * c
            col += d
    return out


def fn_scale(a: np.ndarray, c: np.ndarray, box) -> np.ndarray:
    """|a_x| X + |a_y| Y + |c|: the size of the terms of a . x + c in the box."""
    bx, by = max(abs(box[0]), abs(box[1])), max(abs(box[2]), abs(box[3]))
    return np.abs(a[..., 0]) * bx + np.abs(a[..., 1]) * by + np.abs(c)


def box_len(box) -> float:
    return max(box[1] - box[0], box[3] - box[2])


def box_area(box) -> float:
    return (box[1] - box[0]) * (box[3] - box[2])


# --------------------------------------------------------------------------- polygons


def _edges(polys):
    v, ptr = polys.vertices, polys.ptr
    nxt = np.arange(len(v)) + 1
    nxt[ptr[1:] - 1] = ptr[:-1]
    e = v[nxt] - v
    length = np.hypot(e[:, 0], e[:, 1])
    return v, e, nxt, length


def signed_dist(points: np.ndarray, polys) -> np.ndarray:
    """(N, R) distance of each point to the boundary of each convex ccw polygon: > 0 inside."""
    v, e, _, length = _edges(polys)
    out = []
    for lo in range(0, len(points), 64):
        p = points[lo:lo + 64]
        cross = (e[None, :, 0] * (p[:, None, 1] - v[None, :, 1])
                 - e[None, :, 1] * (p[:, None, 0] - v[None, :, 0])) / np.maximum(length, 1e-300)
        out.append(np.minimum.reduceat(cross, polys.ptr[:-1], axis=1))
    return np.concatenate(out) if out else np.zeros((0, len(polys)))


def signed_dist_to(points: np.ndarray, polys, idx: np.ndarray) -> np.ndarray:
    """(N,) signed distance of point i to polygon idx[i]."""
    counts = np.diff(polys.ptr)[idx]
    owner = np.repeat(np.arange(len(idx)), counts)
    seg_start = np.cumsum(counts) - counts
    vi = polys.ptr[idx][owner] + np.arange(counts.sum()) - np.repeat(seg_start, counts)
    v, e, _, length = _edges(polys)
    rel = points[owner] - v[vi]
    cross = (e[vi, 0] * rel[:, 1] - e[vi, 1] * rel[:, 0]) / np.maximum(length[vi], 1e-300)
    return np.minimum.reduceat(cross, seg_start)


def interior_samples(polys, per_region: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Random points strictly inside each polygon: convex combinations of its corners with
    weights >= 1 / (2 n).  Returns (points, region index)."""
    counts = np.diff(polys.ptr)
    owner = np.repeat(np.arange(len(counts)), counts)
    pts, regs = [], []
    for _ in range(per_region):
        lam = 1.0 + rng.random(len(owner))
        tot = np.bincount(owner, weights=lam, minlength=len(counts))
        xy = np.stack([np.bincount(owner, weights=lam * polys.vertices[:, d],
                                   minlength=len(counts)) for d in (0, 1)], 1)
        pts.append(xy / tot[:, None])
        regs.append(np.arange(len(counts)))
    return np.concatenate(pts), np.concatenate(regs)


def seg_point_dist(points: np.ndarray, segs: np.ndarray) -> np.ndarray:
    """(N, S) point-segment distances (brute force)."""
    a, b = segs[None, :, :2], segs[None, :, 2:]
    d = b - a
    p = points[:, None, :]
    len2 = (d**2).sum(-1)
    t = np.clip(((p - a) * d).sum(-1) / np.where(len2 > 0, len2, 1.0), 0.0, 1.0)
    return np.hypot(*np.moveaxis(p - a - t[..., None] * d, -1, 0))


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


BOXES = [(-3.0, 3.0, -3.0, 3.0), (-1.0, 1.0, -1.0, 1.0), (-0.5, 2.0, -1.5, 0.7),
         (0.5, 3.0, 0.2, 2.0), (-6.0, 6.0, -6.0, 6.0)]


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


def make_overrides(net: Network, std: float, seed: int) -> BNOverrides | None:
    if not std:
        return None
    rng = np.random.default_rng(seed + 999)
    return BNOverrides({i + 1: LayerOverride(1.0, std * rng.normal(size=d), 1.0)
                        for i, d in enumerate(net.widths)})


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


# --------------------------------------------------------------------------- checks


def check_polygons(net, part):
    """Convex, counter-clockwise, inside the box, tiling it (areas sum to the box)."""
    box = part.box
    blen, barea = box_len(box), box_area(box)
    cols = 0
    for lay, d in zip(part.layers, net.widths, strict=True):
        polys = lay.regions
        cols += d
        r = len(polys)
        assert r >= 1 and polys.ptr[0] == 0 and np.all(np.diff(polys.ptr) >= 3)
        assert polys.ptr[-1] == len(polys.vertices)
        assert polys.codes.shape == (r, cols) and polys.codes.dtype == np.bool_
        v, e, nxt, length = _edges(polys)
        assert np.all(np.isfinite(v))
        # inside the box
        assert np.all(v[:, 0] >= box[0] - 1e-9 * blen) and np.all(v[:, 0] <= box[1] + 1e-9 * blen)
        assert np.all(v[:, 1] >= box[2] - 1e-9 * blen) and np.all(v[:, 1] <= box[3] + 1e-9 * blen)
        # no repeated corner; convex and counter-clockwise
        assert np.all(length > 0), "a polygon repeats a corner"
        turn = e[:, 0] * e[nxt, 1] - e[:, 1] * e[nxt, 0]
        assert np.all(turn >= -1e-9 * length * length[nxt]), "a polygon is not convex/ccw"
        areas = polys.areas()
        assert np.all(areas > 0), "a polygon has no positive area"
        assert areas.sum() == pytest.approx(barea, rel=1e-9)
        # shoelace, independently
        counts = np.diff(polys.ptr)
        own = np.repeat(np.arange(r), counts)
        sl = 0.5 * np.bincount(own, weights=v[:, 0] * v[nxt, 1] - v[nxt, 0] * v[:, 1],
                               minlength=r)
        np.testing.assert_allclose(areas, sl, rtol=1e-9, atol=1e-15 * barea)
        # a region is the set of one activation pattern (a convex set): codes are unique
        assert len(np.unique(polys.codes, axis=0)) == r, "two regions share an activation code"
        # vertex means are inside; polygon(i) is the CSR slice
        assert np.all(signed_dist_to(polys.vertex_means(), polys, np.arange(r)) > 0)
        np.testing.assert_array_equal(polys.polygon(r - 1), v[polys.ptr[r - 1]:])


def check_codes(net, stats, part, rng, per_region=2):
    """Codes agree with the network: no hyperplane of layers <= l crosses a region of layer l,
    the reference pattern of interior points is the region's code, and interior pre-activations
    are not ~0; each region lies in the region of layer l-1 with its code prefix."""
    box = part.box
    for li, lay in enumerate(part.layers):
        layer = li + 1
        polys = lay.regions
        codes = polys.codes
        aff = ref_affine(net, stats, codes, layer)
        counts = np.diff(polys.ptr)
        own = np.repeat(np.arange(len(polys)), counts)
        pts, reg = interior_samples(polys, per_region, rng)
        hs = ref_preacts(net, stats, pts)[:layer]
        col = 0
        for (a, c), h in zip(aff, hs, strict=True):
            d = c.shape[1]
            code = codes[:, col:col + d]
            s = np.where(code, 1.0, -1.0)
            scale = fn_scale(a, c, box)
            hv = np.einsum("vdc,vc->vd", a[own], polys.vertices) + c[own]
            bad = s[own] * hv < -1e-9 * scale[own]
            assert not bad.any(), f"layer {layer}: a hyperplane (column {col}) crosses a region"
            # interior points: the affine map of the code is the network there
            hp = np.einsum("ndc,nc->nd", a[reg], pts) + c[reg]
            np.testing.assert_allclose(h, hp, rtol=0, atol=1e-9 * scale[reg].max() + 1e-300)
            np.testing.assert_array_equal(h > 0, code[reg])
            vmax = np.maximum.reduceat(np.abs(hv), polys.ptr[:-1], axis=0)
            live = vmax[reg] > 1e-12 * scale[reg]  # not identically 0 on the region
            assert np.all(np.abs(h)[live] > 1e-13 * scale[reg][live]), "h ~ 0 inside a region"
            col += d
        if layer > 1:  # nesting: Omega_{1|l} refines Omega_{1|l-1} with the same code prefix
            prev = part.layers[li - 1].regions
            inner = polys.vertex_means()
            sd = signed_dist(inner, prev)
            where = sd.argmax(1)
            assert np.all(sd.max(1) > 0)
            np.testing.assert_array_equal(prev.codes[where], codes[:, :prev.codes.shape[1]])


def check_point_location(net, stats, part, rng, n=200):
    box = part.box
    pts = np.stack([rng.uniform(box[0], box[1], n), rng.uniform(box[2], box[3], n)], 1)
    tol = 1e-12 * box_len(box)
    for li, lay in enumerate(part.layers):
        sd = signed_dist(pts, lay.regions)
        assert np.all((sd > tol).sum(1) == 1), "a point of the box is not in exactly one region"
        assert np.all((sd > -tol).sum(1) == 1)
        pat = ref_pattern(net, stats, pts, li + 1)
        np.testing.assert_array_equal(lay.regions.codes[sd.argmax(1)], pat)


def check_facets(net, stats, part):
    """Facets lie on their unit's folded hyperplane, in the box, in their parent region, and
    every (parent region, unit) that the unit crosses has exactly one facet."""
    box = part.box
    blen = box_len(box)
    for li, lay in enumerate(part.layers):
        layer = li + 1
        f, units, parents = lay.facets, lay.facet_units, lay.facet_parents
        s = len(f)
        assert f.shape == (s, 4) and units.shape == (s,) and parents.shape == (s,)
        if layer == 1:
            prev_codes = np.zeros((1, 0), dtype=bool)
            prev = None
        else:
            prev = part.layers[li - 1].regions
            prev_codes = prev.codes
        n_prev = len(prev_codes)
        # completeness: crossing (parent, unit) pairs from the reference
        a, c = ref_affine(net, stats, prev_codes, layer)[-1]
        scale = fn_scale(a, c, box)
        if prev is None:
            bx = np.array([[box[0], box[2]], [box[1], box[2]], [box[1], box[3]], [box[0], box[3]]])
            hv = np.einsum("dc,vc->vd", a[0], bx) + c[0]
            vmax, vmin = hv.max(0, keepdims=True), hv.min(0, keepdims=True)
        else:
            own = np.repeat(np.arange(n_prev), np.diff(prev.ptr))
            hv = np.einsum("vdc,vc->vd", a[own], prev.vertices) + c[own]
            vmax = np.maximum.reduceat(hv, prev.ptr[:-1], axis=0)
            vmin = np.minimum.reduceat(hv, prev.ptr[:-1], axis=0)
        crossing = (vmax > 1e-9 * scale) & (vmin < -1e-9 * scale)
        ambiguous = ((vmax > 1e-12 * scale) & (vmax <= 1e-9 * scale)
                     | (vmin < -1e-12 * scale) & (vmin >= -1e-9 * scale))
        if s:
            assert units.min() >= 0 and units.max() < net.widths[li]
            assert parents.min() >= 0 and parents.max() < n_prev
            keys = parents * net.widths[li] + units
            assert len(np.unique(keys)) == s, "two facets for one (region, unit)"
        got = np.zeros_like(crossing)
        got[parents, units] = True
        mism = (got != crossing) & ~ambiguous
        assert not mism.any(), f"layer {layer}: facets missing or extra at {np.argwhere(mism)[:5]}"
        if not s:
            continue
        # on the line: endpoints and midpoint
        p0, p1 = f[:, :2], f[:, 2:]
        mid = 0.5 * (p0 + p1)
        fa, fc = a[parents, units], c[parents, units]
        fs = scale[parents, units]
        for p in (p0, p1, mid):
            hp = (fa * p).sum(1) + fc
            assert np.all(np.abs(hp) <= 1e-8 * fs), f"layer {layer}: a facet is off its line"
        h_mid = ref_preacts(net, stats, mid)[li][np.arange(s), units]
        assert np.all(np.abs(h_mid) <= 1e-8 * fs)
        assert np.all(np.hypot(*(p1 - p0).T) > 0)
        # inside the box, and in the parent region
        tol = 1e-9 * blen
        assert np.all(f[:, [0, 2]] >= box[0] - tol) and np.all(f[:, [0, 2]] <= box[1] + tol)
        assert np.all(f[:, [1, 3]] >= box[2] - tol) and np.all(f[:, [1, 3]] <= box[3] + tol)
        if prev is not None:
            # a facet is the whole chord of its parent: ends on the boundary, middle inside
            for p in (p0, p1):
                assert np.all(np.abs(signed_dist_to(p, prev, parents)) <= tol)
            assert np.all(signed_dist_to(mid, prev, parents) > 0)
        else:
            for p in (p0, p1):
                edge = np.minimum(np.minimum(p[:, 0] - box[0], box[1] - p[:, 0]),
                                  np.minimum(p[:, 1] - box[2], box[3] - p[:, 1]))
                assert np.all(np.abs(edge) <= tol)


def check_adjacency(net, stats, part, rng, per_layer=25):
    """Points just either side of a facet differ in exactly the facet's unit (layers 1..l)."""
    blen = box_len(part.box)
    box = part.box
    tested = 0
    for li, lay in enumerate(part.layers):
        s = len(lay.facets)
        if s == 0:
            continue
        others = np.concatenate([part.layers[j].facets for j in range(li + 1)])
        base = sum(net.widths[:li])
        offset = sum(len(part.layers[j].facets) for j in range(li))
        for i in rng.choice(s, size=min(per_layer, s), replace=False):
            seg = lay.facets[i]
            mid = seg[:2] + rng.uniform(0.2, 0.8) * (seg[2:] - seg[:2])  # a point on the facet
            d = seg[2:] - seg[:2]
            n = np.array([-d[1], d[0]]) / np.hypot(*d)
            dist = seg_point_dist(mid[None], others)[0]
            dist[offset + i] = np.inf  # the facet itself
            edge = min(mid[0] - box[0], box[1] - mid[0], mid[1] - box[2], box[3] - mid[1])
            if dist.min() < 1e-6 * blen or edge < 1e-6 * blen:
                continue
            eps = 1e-8 * blen
            hs = np.concatenate(ref_preacts(net, stats, np.stack([mid + eps * n,
                                                                  mid - eps * n]))[:li + 1], 1)
            diff = np.flatnonzero((hs[0] > 0) != (hs[1] > 0))
            unit = base + lay.facet_units[i]
            # a unit that is identically 0 on one side (ReLU with zero bias after a dead layer)
            # flips its code without a hyperplane of its own: not a separating unit
            dead = (hs[0] == 0) | (hs[1] == 0)
            assert list(diff[~dead[diff] | (diff == unit)]) == [unit], (li + 1, i, diff)
            tested += 1
    return tested


def check_all(net, stats, part, seed=0):
    rng = np.random.default_rng(seed)
    check_polygons(net, part)
    check_codes(net, stats, part, rng)
    check_point_location(net, stats, part, rng)
    check_facets(net, stats, part)
    check_adjacency(net, stats, part, rng)


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


# --------------------------------------------------------------------------- counting lines


def expected_line_regions(w: np.ndarray, mu: np.ndarray, box) -> tuple[int, int]:
    """(1 + lines crossing the box + pairwise intersections strictly inside, lines crossing),
    for lines {w_k . x = mu_k}; asserts general position inside the box."""
    corners = np.array([[box[0], box[2]], [box[1], box[2]], [box[1], box[3]], [box[0], box[3]]])
    vals = corners @ w.T - mu  # (4, D)
    scale = np.abs(corners) @ np.abs(w).T + np.abs(mu)
    assert np.all(np.abs(vals) > 1e-9 * scale), "a line passes through a box corner"
    crossing = (vals.max(0) > 0) & (vals.min(0) < 0)
    blen = box_len(box)
    inter = 0
    for i, j in itertools.combinations(range(len(w)), 2):
        m = np.array([w[i], w[j]])
        det = np.linalg.det(m)
        if abs(det) < 1e-12 * np.linalg.norm(w[i]) * np.linalg.norm(w[j]):
            continue
        q = np.linalg.solve(m, [mu[i], mu[j]])
        margin = min(q[0] - box[0], box[1] - q[0], q[1] - box[2], box[3] - q[1])
        if margin > 0:
            assert margin > 1e-9 * blen, "an intersection on the box boundary"
            inter += 1
    return 1 + int(crossing.sum()) + inter, int(crossing.sum())


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


@pytest.mark.parametrize("case", [
    Case("leaky_relu", "bn", 2, 10, 9, BOXES[4], "blobs", None, alpha=0.1),
    Case("leaky_relu", "random_bias", 3, 8, 3, BOXES[0], "moons", None, alpha=0.1),
    Case("leaky_relu", "bn", 4, 12, 101, BOXES[0], "moons", None, alpha=0.1),
], ids=str)
def test_codes_exact_with_default_alpha(case):
    net, _, stats, part = build(case)
    check_codes(net, stats, part, np.random.default_rng(0))


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
