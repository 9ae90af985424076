"""The independent reference of the partition tests (tests/core/test_partition.py, test_cut.py):
a numpy forward pass that never calls bnviz, z_0 = x, h_l = (W_l z_{l-1} - mu_l) / sigma_l with
mu, sigma from ``layer_statistics`` (checked in test_network.py), z_l = a(h_l); ``ref_affine``
gives every h_l's affine map in a region from its activation code alone, so the partition's
polygons, codes, facets and decision boundary are checked against the network itself
(docs/conventions.md, "Exact claims")."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnviz.core.network import (
    ACTIVATIONS,
    BNOverrides,
    LayerOverride,
    Network,
)

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

BOXES = [(-3.0, 3.0, -3.0, 3.0), (-1.0, 1.0, -1.0, 1.0), (-0.5, 2.0, -1.5, 0.7),
         (0.5, 3.0, 0.2, 2.0), (-6.0, 6.0, -6.0, 6.0)]


def make_overrides(net: Network, std: float, seed: int) -> BNOverrides | None:
    if not std:
        return None
    rng = np.random.default_rng(seed + 999)
    return BNOverrides({i + 1: LayerOverride(1.0, std * rng.normal(size=d), 1.0)
                        for i, d in enumerate(net.widths)})


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
