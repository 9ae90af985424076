"""The exact input-space partition of a 2D network, layer by layer (BN paper eq. 10-11).

Algorithm (one pass per layer, vectorised over every region and every unit at once)
-----------------------------------------------------------------------------------
The partition Omega_{1|l-1} is kept as convex polygons (CSR: ``ptr`` into ``vertices``, counter-
clockwise) together with, per polygon P, the affine map z_{l-1}(x) = J_P x + o_P, carried
exactly by composing the layers' affine maps (no interpolation).  The maps are stored as three
planes (d/dx, d/dy, offset) of shape (R, D), so that a layer's maps are one GEMM and every
dense operation runs over contiguous memory.  For layer l every unit's
pre-activation is affine on P: h_{l,k}(x) = a_{P,k} . x + c_{P,k}.  Then:

1. find the (P, k) pairs whose line strictly crosses P: a circle test per polygon
   (|h(centre)| > |a| * radius: the line misses P) leaves a few percent of the pairs in deep
   layers; those are evaluated at P's corners, and a unit *crosses* P when it is strictly
   positive at one corner and strictly negative at another (on-the-line test below);
2. the new vertices inside the crossed polygons are the old corners, the points where a line
   crosses an edge, and the pairwise intersections of lines that fall strictly inside P
   (tested against the chord of each line, the facet F_{l,k,P} of eq. 11);
3. each candidate vertex gets its sign vector over P's crossing lines (0 where it is on the
   line), packed into int64 words.  Candidates with the same polygon, edge and sign vector
   are the same vertex: this merges, on purpose, the D(D-1)/2 float64 intersections of BN's
   layer-1 lines, which all pass through the batch centroid (Corollary 2), into one vertex;
4. each vertex lists the faces it belongs to, by their sign vectors: combinatorially when the
   vertex is not degenerate (a corner off all lines: 1 face; on one line: 2; an interior
   crossing of two lines: 4), and otherwise geometrically (3+ concurrent lines, such as BN's
   layer-1 centroid with its 2 D faces, or 2 lines meeting on P's boundary): the rays of the
   lines and edges through the vertex cut the plane into sectors, and each sector inside P is
   one face, each line through the vertex signed by the sector's bisector.  Grouping these
   entries by (polygon, sign vector) gives every face with its corners, which are then
   ordered by angle.  The face's sign vector is its layer-l activation pattern.

Tolerance
---------
A value h_{l,k}(v) counts as zero ("v is on the line") when |h| <= RTOL * scale with
scale = |a_x| X + |a_y| Y + |c| (X, Y the box's largest coordinates): the size of the terms
whose rounding error the test must absorb.  RTOL = 1e-10 is far above float64 rounding through
a dozen layers (~1e-13) and far below real geometry: it merges points closer than about
1e-10 of the box, while real regions of deep nets have areas ~1e-9 (sides ~1e-5).  No region
is ever dropped by an area threshold.  Sectors narrower than ANGLE_TOL radians (coincident
lines, i.e. duplicate units) are skipped.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from bnviz.core.limits import MAX_EXTENT, MAX_REGIONS, PartitionTooLarge
from bnviz.core.network import BNOverrides, LayerStatistics, Network, layer_statistics
from bnviz.device import pick_device

__all__ = [
    "ANGLE_TOL",
    "RTOL",
    "LayerPartition",
    "NumericalBreakdown",
    "Partition",
    "Polygons",
    "compute_partition",
    "decision_boundaries",
    "box_from_extent",
]

RTOL = 1e-10
ANGLE_TOL = 1e-12
_PACK = 31  # sign trits packed per int64 word (2 bits each, sign bit left clear)
#: Work allowed per region of the cap in one layer's cut, counted in (line, line) pairs tried
#: and (new point, line) signs evaluated: the two tables whose size grows with the square and
#: the cube of the lines crossing one polygon.  The region cap alone misses cases with few
#: regions but many lines per region (BN's central layer 1, K realisations at once), which
#: took seconds and hundreds of MB per request before a region count was ever reached.
WORK_PER_REGION = 12


class NumericalBreakdown(ValueError):
    """The float64 arrangement became inconsistent (a face with fewer than 3 corners): seen
    for nearly concurrent lines far from BN's exact central case. A ValueError, so every
    caller reports it as a message; known limitation, see the module's tolerance notes."""


def box_from_extent(extent: float) -> tuple[float, float, float, float]:
    """The input box [-E, E]^2 as (xmin, xmax, ymin, ymax)."""
    e = float(extent)
    if not (math.isfinite(e) and 0 < e <= MAX_EXTENT):
        raise ValueError(f"extent must be a number in (0, {MAX_EXTENT:g}], got {extent}")
    return (-e, e, -e, e)


@dataclass(frozen=True)
class Polygons:
    """Convex polygons in CSR layout, counter-clockwise, with their activation codes.

    ``codes[i]`` holds the activation pattern (True: h > 0) of every unit of layers 1..l,
    layer by layer, constant inside polygon i.  They are kept packed, 8 units a byte
    (``packed_codes``): a partition keeps every layer's regions, and unpacked codes of 12
    layers of 48 units at the explorer's region cap took 220 MB of one request's memory.
    """

    ptr: np.ndarray  # (R + 1,) int64
    vertices: np.ndarray  # (V, 2) float64
    packed_codes: np.ndarray  # (R, ceil(U / 8)) uint8, np.packbits of the codes along units
    n_units: int  # U

    @property
    def codes(self) -> np.ndarray:
        """(R, U) bool activation patterns (unpacked on each access)."""
        return np.unpackbits(self.packed_codes, axis=1, count=self.n_units).astype(bool)

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def polygon(self, i: int) -> np.ndarray:
        return self.vertices[self.ptr[i] : self.ptr[i + 1]]

    def areas(self) -> np.ndarray:
        """Shoelace areas, vectorised over all polygons."""
        v = self.vertices
        counts = np.diff(self.ptr)
        nxt = np.arange(len(v)) + 1
        nxt[self.ptr[1:] - 1] = self.ptr[:-1]
        cross = v[:, 0] * v[nxt, 1] - v[nxt, 0] * v[:, 1]
        poly = np.repeat(np.arange(len(counts)), counts)
        return 0.5 * np.bincount(poly, weights=cross, minlength=len(counts))

    def vertex_means(self) -> np.ndarray:
        """A point strictly inside each polygon (the mean of its corners)."""
        counts = np.diff(self.ptr)
        poly = np.repeat(np.arange(len(counts)), counts)
        sums = np.stack([np.bincount(poly, weights=self.vertices[:, d], minlength=len(counts))
                         for d in (0, 1)], axis=1)
        return sums / counts[:, None]

    def code_strings(self, widths: tuple[int, ...]) -> list[str]:
        """Codes as '0110|10..' strings, one group per layer."""
        bits = np.where(self.codes, "1", "0")
        cuts = np.cumsum((0, *widths))
        return ["|".join("".join(row[cuts[j] : cuts[j + 1]]) for j in range(len(widths))
                         if cuts[j + 1] <= len(row)) for row in bits]


@dataclass(frozen=True)
class LayerPartition:
    """Omega_{1|l} and the facets that layer l added to its boundary (eq. 11)."""

    layer: int
    regions: Polygons
    facets: np.ndarray  # (S, 4): x0, y0, x1, y1
    facet_units: np.ndarray  # (S,) unit k (0-based) of layer l
    facet_parents: np.ndarray  # (S,) index of the region of Omega_{1|l-1} the facet lies in
    stats: LayerStatistics


@dataclass(frozen=True)
class Partition:
    box: tuple[float, float, float, float]
    widths: tuple[int, ...]
    layers: list[LayerPartition]
    decision_boundary: np.ndarray | None  # (S, 4) segments, when the network has a head
    seconds: float
    device: str

    @property
    def regions(self) -> Polygons:
        """The full partition Omega_{1|L}."""
        return self.layers[-1].regions


def _ragged_arange(counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For groups of the given sizes: the group of each element and its offset inside it."""
    n = counts.numel()
    group = torch.repeat_interleave(torch.arange(n, device=counts.device), counts)
    starts = torch.cumsum(counts, 0) - counts
    offset = torch.arange(group.numel(), device=counts.device) - starts[group]
    return group, offset


def _pack_local(point: torch.Tensor, local: torch.Tensor, sign: torch.Tensor, n_points: int,
                n_words: int) -> torch.Tensor:
    """Pack each point's signs over its polygon's crossing lines into int64 words (exact keys).

    Entry (point, local index i, sign s) contributes (s + 1) * 4^(i mod 31) to word i // 31.
    """
    words = torch.zeros(n_points * n_words, dtype=torch.int64, device=point.device)
    shift = (local % _PACK) * 2
    value = (sign.to(torch.int64) + 1) << shift
    words.index_add_(0, point * n_words + local // _PACK, value)
    return words.view(n_points, n_words)


def _fuse_columns(keys: torch.Tensor) -> torch.Tensor:
    """Fuse non-negative int64 key columns into as few columns as their bit widths allow
    (same grouping, fewer sorts)."""
    if keys.shape[0] == 0 or keys.shape[1] == 1:
        return keys
    keys = keys - keys.amin(0)  # non-negative, same equalities
    bits = [max(1, int(v).bit_length()) for v in keys.amax(0).tolist()]
    fused, current, used = [], None, 0
    for col, b in enumerate(bits):
        if current is not None and used + b <= 62:
            current = (current << b) | keys[:, col]
            used += b
        else:
            if current is not None:
                fused.append(current)
            current, used = keys[:, col], b
    fused.append(current)
    return torch.stack(fused, 1)


def _group_first(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact grouping of equal rows of ``keys`` (int64): (first row of each group, group of each
    row).  Lexicographic stable sorts, one per column: ``torch.unique(dim=0)`` is row-by-row
    slow on the CPU."""
    n = keys.shape[0]
    keys = _fuse_columns(keys)
    order = torch.arange(n, device=keys.device)
    for col in range(keys.shape[1] - 1, -1, -1):
        order = order[torch.sort(keys[order, col], stable=True).indices]
    sk = keys[order]
    new_group = torch.ones(n, dtype=torch.bool, device=keys.device)
    if n > 1:
        new_group[1:] = (sk[1:] != sk[:-1]).any(1)
    group_sorted = torch.cumsum(new_group, 0) - 1
    inverse = torch.empty_like(group_sorted)
    inverse[order] = group_sorted
    first = order[new_group]  # stable sorts: the first row of a group is its smallest index
    return first, inverse


def _lexsort(primary: torch.Tensor, secondary: torch.Tensor) -> torch.Tensor:
    """Permutation sorting by ``primary`` then ``secondary`` (two stable sorts)."""
    order = torch.sort(secondary, stable=True).indices
    return order[torch.sort(primary[order], stable=True).indices]


def _starts(counts: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(counts, 0) - counts


class _Mesh:
    """Torch state of a partition: polygons in CSR form plus each polygon's affine map.

    ``aff`` (3, R, D): z(x) = aff[0] * x + aff[1] * y + aff[2] on each polygon.  ``group``
    (R,): which realisation of the BN statistics a polygon belongs to, so that K mini-batch
    realisations of one network are cut in one pass (Figure 6); 0 everywhere for one network.
    """

    def __init__(self, ptr, verts, aff, codes, group):
        self.ptr, self.verts, self.aff, self.codes = ptr, verts, aff, codes
        self.group = group
        self.counts = ptr[1:] - ptr[:-1]
        r, v = self.counts.numel(), verts.shape[0]
        dev = verts.device
        self.poly = torch.repeat_interleave(torch.arange(r, device=dev), self.counts)
        ar = torch.arange(v, device=dev)
        self.nxt = ar + 1
        self.nxt[ptr[1:] - 1] = ptr[:-1]
        self.prv = ar - 1
        self.prv[ptr[:-1]] = ptr[1:] - 1

    @property
    def n_regions(self) -> int:
        return self.ptr.numel() - 1

    def to_polygons(self) -> Polygons:
        codes = self.codes.cpu().numpy()
        return Polygons(self.ptr.cpu().numpy(), self.verts.cpu().numpy(),
                        np.packbits(codes, axis=1), codes.shape[1])


def _box_mesh(box, dev, groups: int = 1) -> _Mesh:
    """The box, once per realisation group."""
    x0, x1, y0, y1 = box
    corners = torch.tensor([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=torch.float64,
                           device=dev)
    verts = corners.repeat(groups, 1)
    ptr = torch.arange(groups + 1, dtype=torch.int64, device=dev) * 4
    aff = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 0.0]]], dtype=torch.float64,
                       device=dev).repeat(1, groups, 1)  # z = x
    codes = torch.zeros((groups, 0), dtype=torch.bool, device=dev)
    return _Mesh(ptr, verts, aff, codes, torch.arange(groups, device=dev))


@dataclass
class _Cuts:
    """The (polygon, unit) pairs whose zero line strictly crosses the polygon, and their chords.

    ``ent_*`` list, pair by pair and corner by corner in order, the function's value and sign
    at every corner of the pair's polygon; ``b_*`` are the strict edge crossings.
    """

    const: torch.Tensor  # (R, D) int8: sign of the function on polygons it does not cross
    pair_poly: torch.Tensor  # (M,)
    pair_unit: torch.Tensor  # (M,)
    grad: torch.Tensor  # (M, 2) gradient of the function on the polygon
    offset: torch.Tensor  # (M,)
    tol: torch.Tensor  # (M,)
    direction: torch.Tensor  # (M, 2) unit vector along the line
    ent_pair: torch.Tensor
    ent_vertex: torch.Tensor
    ent_sign: torch.Tensor
    b_pair: torch.Tensor
    b_edge: torch.Tensor  # start vertex of the crossed edge
    b_pts: torch.Tensor
    chord_a: torch.Tensor  # (M, 2)
    chord_b: torch.Tensor
    t_lo: torch.Tensor  # (M,) chord end parameters along ``direction``
    t_hi: torch.Tensor


def _find_cuts(mesh: _Mesh, planes: torch.Tensor, box) -> _Cuts:
    """Which functions h = a . x + c cross which polygons; ``planes`` (3, R, D) = (a_x, a_y, c).

    A circle test first: |h(centre)| > |a| * radius means the line misses the polygon, so only
    the remaining (polygon, unit) pairs are evaluated at the corners (deep layers: a few %).
    """
    ax, ay, c = planes[0], planes[1], planes[2]
    dev = c.device
    bx = max(abs(box[0]), abs(box[1]))
    by = max(abs(box[2]), abs(box[3]))
    r = mesh.n_regions
    verts = mesh.verts
    center = torch.zeros((r, 2), dtype=verts.dtype, device=dev).index_add_(0, mesh.poly, verts)
    center = center / mesh.counts[:, None]
    radius = torch.zeros(r, dtype=verts.dtype, device=dev).scatter_reduce_(
        0, mesh.poly, (verts - center[mesh.poly]).norm(dim=1), "amax")
    hc = ax * center[:, 0:1] + ay * center[:, 1:2] + c
    # |h(x) - h(centre)| <= |a|_1 * radius on the polygon; the tolerance (below) is at most
    # RTOL * (|a|_1 * max(X, Y) + |c|), so this keeps every pair that can touch the polygon
    reach_scale = radius * (1 + 1e-9) + 2 * RTOL * max(bx, by)
    cand = hc.abs() - 2 * RTOL * c.abs() <= (ax.abs() + ay.abs()) * reach_scale[:, None]
    const = torch.sign(hc).to(torch.int8)
    cp, ck = torch.nonzero(cand, as_tuple=True)
    grp, off = _ragged_arange(mesh.counts[cp])
    ev = mesh.ptr[cp][grp] + off
    g3 = planes.reshape(3, -1).index_select(1, cp * planes.shape[2] + ck)  # (3, candidates)
    g, cc = g3[:2].T, g3[2]
    tt = RTOL * (g[:, 0].abs() * bx + g[:, 1].abs() * by + cc.abs())
    h = g[grp, 0] * verts[ev, 0] + g[grp, 1] * verts[ev, 1] + cc[grp]
    s = (h > tt[grp]).to(torch.int8) - (h < -tt[grp]).to(torch.int8)
    n_cand = cp.numel()
    zeros = torch.zeros(n_cand, dtype=torch.int32, device=dev)
    npos = zeros.index_add(0, grp, (s > 0).to(torch.int32))
    nneg = zeros.index_add(0, grp, (s < 0).to(torch.int32))
    crossing = (npos > 0) & (nneg > 0)
    const[cp, ck] = (npos > 0).to(torch.int8) - ((npos == 0) & (nneg > 0)).to(torch.int8)

    keep = torch.nonzero(crossing, as_tuple=True)[0]
    m = keep.numel()
    remap = torch.full((n_cand,), -1, dtype=torch.int64, device=dev)
    remap[keep] = torch.arange(m, device=dev)
    ent_keep = crossing[grp]
    ent_pair, ent_vertex = remap[grp[ent_keep]], ev[ent_keep]
    ent_h, ent_sign, ent_off = h[ent_keep], s[ent_keep], off[ent_keep]
    pair_poly, pair_unit = cp[keep], ck[keep]
    grad = g[keep]
    direction = torch.stack([-grad[:, 1], grad[:, 0]], 1)
    direction = direction / direction.norm(dim=1, keepdim=True)

    # strict sign changes along an edge; interpolated from the positive end, so both polygons
    # sharing the edge use the same formula
    n_corner = mesh.counts[pair_poly][ent_pair]
    idx = torch.arange(ent_pair.numel(), device=dev)
    ent_next = idx - ent_off + (ent_off + 1) % n_corner
    e0 = torch.nonzero((ent_sign * ent_sign[ent_next]) < 0, as_tuple=True)[0]
    e1 = ent_next[e0]
    h0, h1 = ent_h[e0], ent_h[e1]
    first_pos = h0 > 0
    v0, v1 = verts[ent_vertex[e0]], verts[ent_vertex[e1]]
    pa = torch.where(first_pos[:, None], v0, v1)
    pb = torch.where(first_pos[:, None], v1, v0)
    ha, hb = torch.where(first_pos, h0, h1), torch.where(first_pos, h1, h0)
    b_pts = pa + (ha / (ha - hb))[:, None] * (pb - pa)
    b_pair, b_edge = ent_pair[e0], ent_vertex[e0]

    # chords: end points are the edge crossings and the corners on the line, ordered along it
    z = torch.nonzero(ent_sign == 0, as_tuple=True)[0]
    end_pair = torch.cat([b_pair, ent_pair[z]])
    end_pts = torch.cat([b_pts, verts[ent_vertex[z]]])
    t = (end_pts * direction[end_pair]).sum(1)
    order = _lexsort(end_pair, t)
    n_end = torch.bincount(end_pair, minlength=m)
    first = order[_starts(n_end)]
    last = order[_starts(n_end) + n_end - 1]
    return _Cuts(const, pair_poly, pair_unit, grad, cc[keep], tt[keep], direction, ent_pair,
                 ent_vertex, ent_sign, b_pair, b_edge, b_pts, end_pts[first], end_pts[last],
                 t[first], t[last])


def _layer_step(mesh: _Mesh, w: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor,
                slope: float, box, max_regions: int = MAX_REGIONS):
    """Cut every polygon of Omega_{1|l-1} by the D_l folded hyperplanes of layer l,
    h = (W z - mu) / sigma, with (mu, sigma) of shape (groups, D_l) chosen by polygon group.

    Raises PartitionTooLarge before the heavy work when the cut must exceed ``max_regions``:
    a polygon crossed by m lines becomes at least m + 1 faces, so R + M is a lower bound; or
    when its pair or sign tables would exceed ``WORK_PER_REGION * max_regions`` entries.
    """
    dev = w.device
    r = mesh.n_regions
    planes = (mesh.aff.reshape(3 * r, -1) @ w.T).view(3, r, -1)  # (d/dx, d/dy, offset) of W z
    inv_sigma = (1.0 / sigma).index_select(0, mesh.group)
    planes[2] -= mu.index_select(0, mesh.group)
    planes *= inv_sigma
    cuts = _find_cuts(mesh, planes, box)
    m = cuts.pair_poly.numel()
    if r + m > max_regions:
        raise PartitionTooLarge(
            f"this layer would have more than {max_regions} regions (at least {r + m}): "
            "lower the width, the depth or the box")
    pair_poly, grad, direction = cuts.pair_poly, cuts.grad, cuts.direction
    per_poly = torch.bincount(pair_poly, minlength=r)  # crossing lines per polygon
    work_cap = WORK_PER_REGION * max_regions
    pair_work = int((per_poly * per_poly).sum())
    if pair_work > work_cap:
        raise PartitionTooLarge(
            f"this layer would try {pair_work} pairs of lines, over the cap of {work_cap}: "
            "lower the width, the depth or the box")
    split = per_poly > 0
    poly_start = _starts(per_poly)
    local = torch.arange(m, device=dev) - poly_start[pair_poly]
    n_words = max(1, -(-int(per_poly.max()) // _PACK)) if m else 1
    box_len = max(box[1] - box[0], box[3] - box[2])

    # ---- pairwise intersections of a polygon's lines, strictly inside its chords ---------
    gi, off = _ragged_arange(per_poly[pair_poly])
    gj = poly_start[pair_poly[gi]] + off
    keep = gj > gi
    gi, gj = gi[keep], gj[keep]
    a1, a2 = grad[gi], grad[gj]
    c1, c2 = cuts.offset[gi], cuts.offset[gj]
    det = a1[:, 0] * a2[:, 1] - a1[:, 1] * a2[:, 0]
    nonparallel = det.abs() > 1e-14 * a1.norm(dim=1) * a2.norm(dim=1)
    safe = torch.where(nonparallel, det, torch.ones_like(det))
    q = torch.stack([(c2 * a1[:, 1] - c1 * a2[:, 1]) / safe,
                     (c1 * a2[:, 0] - c2 * a1[:, 0]) / safe], 1)
    ttol = RTOL * box_len
    t1 = (q * direction[gi]).sum(1)
    t2 = (q * direction[gj]).sum(1)
    inside = (nonparallel & (t1 > cuts.t_lo[gi] + ttol) & (t1 < cuts.t_hi[gi] - ttol)
              & (t2 > cuts.t_lo[gj] + ttol) & (t2 < cuts.t_hi[gj] - ttol))
    gi, gj, q = gi[inside], gj[inside], q[inside]

    # ---- new points (edge crossings, intersections): signs over their polygon's lines ----
    new_pts = torch.cat([cuts.b_pts, q])
    def1 = torch.cat([cuts.b_pair, gi])
    def2 = torch.cat([cuts.b_pair, gj])
    new_poly = pair_poly[def1]
    new_edge = torch.cat([cuts.b_edge, torch.full_like(gi, -1)])
    n_new = new_pts.shape[0]
    sign_work = int(per_poly[new_poly].sum())
    if sign_work > work_cap:
        raise PartitionTooLarge(
            f"this layer would evaluate {sign_work} signs of new vertices, over the cap of "
            f"{work_cap}: lower the width, the depth or the box")
    ng, noff = _ragged_arange(per_poly[new_poly])
    npair = poly_start[new_poly][ng] + noff
    h = grad[npair, 0] * new_pts[ng, 0] + grad[npair, 1] * new_pts[ng, 1] + cuts.offset[npair]
    tol = cuts.tol[npair]
    ns = (h > tol).to(torch.int8) - (h < -tol).to(torch.int8)
    ns = torch.where((npair == def1[ng]) | (npair == def2[ng]), torch.zeros_like(ns), ns)
    # coincident new points (same polygon, edge and sign vector) are one vertex: this merges
    # e.g. the D(D-1)/2 float64 intersections of BN's concurrent layer-1 lines
    words = _pack_local(ng, local[npair], ns, n_new, n_words)
    first, _ = _group_first(torch.cat([new_poly[:, None], new_edge[:, None], words], 1))
    rep_id = torch.full((n_new,), -1, dtype=torch.int64, device=dev)
    rep_id[first] = torch.arange(first.numel(), device=dev)

    # ---- all vertices of the cut polygons: old corners, then the merged new points --------
    vidx = torch.nonzero(split[mesh.poly], as_tuple=True)[0]
    n_a = vidx.numel()
    corner_id = torch.full((mesh.verts.shape[0],), -1, dtype=torch.int64, device=dev)
    corner_id[vidx] = torch.arange(n_a, device=dev)
    keep_ent = rep_id[ng] >= 0
    ent_point = torch.cat([corner_id[cuts.ent_vertex], n_a + rep_id[ng[keep_ent]]])
    ent_pair = torch.cat([cuts.ent_pair, npair[keep_ent]])
    ent_sign = torch.cat([cuts.ent_sign, ns[keep_ent]])
    pt_poly = torch.cat([mesh.poly[vidx], new_poly[first]])
    pt_ent_start = _starts(per_poly[pt_poly])  # every point has one entry per line
    # place entries by (point, local line index) directly: no sort needed
    slot = pt_ent_start[ent_point] + local[ent_pair]
    order = torch.empty_like(slot)
    order[slot] = torch.arange(slot.numel(), device=dev)
    ent_point, ent_pair, ent_sign = ent_point[order], ent_pair[order], ent_sign[order]
    pt_xy = torch.cat([mesh.verts[vidx], new_pts[first]])
    pt_edge = torch.cat([new_edge[first]])
    n_pts = pt_poly.numel()
    pt_words = _pack_local(ent_point, local[ent_pair], ent_sign, n_pts, n_words)

    # ---- which faces meet at each vertex ----------------------------------------------
    # A vertex in the faces' closure gets one entry per face; the face's sign vector is the
    # vertex's, with each line through the vertex given that face's sign.  Combinatorially
    # when that is determined: a corner off all lines is in 1 face, a point on one line in 2
    # (one each side), an interior crossing of exactly 2 lines in 4.  Degenerate vertices
    # (3+ concurrent lines, as BN's layer-1 centroid, or 2 lines meeting on the boundary) are
    # resolved geometrically: the rays of their lines and edges cut the plane into sectors,
    # and each sector inside the polygon is one face, its lines signed by its bisector.
    zero = torch.nonzero(ent_sign == 0, as_tuple=True)[0]
    zq, zpair = ent_point[zero], ent_pair[zero]
    zshift = (local[zpair] % _PACK) * 2
    zword = local[zpair] // _PACK
    n_zero = torch.bincount(zq, minlength=n_pts)
    zstart = _starts(n_zero)
    interior = torch.cat([torch.zeros(n_a, dtype=torch.bool, device=dev), pt_edge < 0])
    simple = (n_zero <= 1) | ((n_zero == 2) & interior)

    sp = torch.nonzero(simple, as_tuple=True)[0]
    sg, combo = _ragged_arange(torch.ones_like(sp) << n_zero[sp])  # 1, 2 or 4 faces
    s_pt = sp[sg]
    s_words = pt_words[s_pt].reshape(-1)
    for j in range(2):  # the (up to 2) lines through the vertex, signed by the bits of combo
        has = torch.nonzero(n_zero[s_pt] > j, as_tuple=True)[0]
        ze = zstart[s_pt[has]] + j
        fill = ((combo[has] >> j) & 1) * 2 - 1
        s_words = s_words.index_add(0, has * n_words + zword[ze], fill << zshift[ze])
    s_words = s_words.view(-1, n_words)

    cx = ~simple
    zc = torch.nonzero(cx[zq], as_tuple=True)[0]
    dz = direction[zpair[zc]]
    ca = torch.nonzero(cx[:n_a], as_tuple=True)[0]  # degenerate corners
    corner_next = mesh.verts[mesh.nxt[vidx[ca]]] - mesh.verts[vidx[ca]]
    corner_prev = mesh.verts[mesh.prv[vidx[ca]]] - mesh.verts[vidx[ca]]
    ce = torch.nonzero(cx[n_a:] & (pt_edge >= 0), as_tuple=True)[0]  # degenerate edge points
    e = pt_edge[ce]
    edge_dir = mesh.verts[mesh.nxt[e]] - mesh.verts[e]
    ray_pt = torch.cat([zq[zc], zq[zc], ca, ca, n_a + ce, n_a + ce])
    ray_dir = torch.cat([dz, -dz, corner_next, corner_prev, edge_dir, -edge_dir])
    theta = torch.atan2(ray_dir[:, 1], ray_dir[:, 0])
    order = _lexsort(ray_pt, theta)
    ray_pt, theta = ray_pt[order], theta[order]
    n_rays = torch.bincount(ray_pt, minlength=n_pts)
    _, roff = _ragged_arange(n_rays[n_rays > 0])
    idx = torch.arange(theta.numel(), device=dev)
    nxt_ray = _starts(n_rays)[ray_pt] + (roff + 1) % n_rays[ray_pt]
    # (float64 constants: torch.where with Python floats would build float32)
    width = theta[nxt_ray] - theta + (nxt_ray <= idx).to(theta.dtype) * (2 * math.pi)
    mid = theta + 0.5 * width
    u = torch.stack([torch.cos(mid), torch.sin(mid)], 1)
    # a sector is inside the polygon when its bisector points inward across every edge
    # through its vertex (edges are counter-clockwise: inward normal = left normal)
    edge1 = torch.cat([vidx, pt_edge])  # corner: outgoing edge; new point: its edge or -1
    edge2 = torch.cat([mesh.prv[vidx], torch.full_like(pt_edge, -1)])
    ok = width > ANGLE_TOL
    for edges in (edge1[ray_pt], edge2[ray_pt]):
        start = edges.clamp(min=0)
        dv = mesh.verts[mesh.nxt[start]] - mesh.verts[start]
        ok &= (edges < 0) | (dv[:, 0] * u[:, 1] - dv[:, 1] * u[:, 0] > 0)
    sect_pt, u = ray_pt[ok], u[ok]
    tg, toff = _ragged_arange(n_zero[sect_pt])
    ze = zstart[sect_pt[tg]] + toff
    fill = torch.sign((grad[zpair[ze]] * u[tg]).sum(1)).to(torch.int64)
    t_words = pt_words[sect_pt].reshape(-1).index_add(
        0, tg * n_words + zword[ze], fill << zshift[ze]).view(-1, n_words)

    # ---- faces: group the (vertex, face) entries by (polygon, sign vector) --------------
    face_pt = torch.cat([s_pt, sect_pt])
    face_words = torch.cat([s_words, t_words])
    poly_s = pt_poly[face_pt]
    face_first, face_of = _group_first(torch.cat([poly_s[:, None], face_words], 1))
    n_faces = face_first.numel()
    xy = pt_xy[face_pt]
    f_count = torch.bincount(face_of, minlength=n_faces)
    if n_faces and int(f_count.min()) < 3:
        raise NumericalBreakdown("the exact partition broke down numerically at these settings "
                                 "(nearly coincident lines); move a control slightly")
    center = torch.zeros((n_faces, 2), dtype=torch.float64, device=dev).index_add_(0, face_of, xy)
    rel = xy - (center / f_count[:, None])[face_of]
    order = _lexsort(face_of, torch.atan2(rel[:, 1], rel[:, 0]))
    face_xy = xy[order]
    face_parent = poly_s[face_first]

    # layer-l sign vector of each face: constant signs, then its crossing lines' signs,
    # unpacked from its key
    face_sign = cuts.const.index_select(0, face_parent)
    fg, fi = _ragged_arange(per_poly[face_parent])
    trit = (face_words[face_first[fg], fi // _PACK] >> ((fi % _PACK) * 2)) & 3
    fpair = poly_start[face_parent[fg]] + fi
    face_sign[fg, cuts.pair_unit[fpair]] = (trit - 1).to(torch.int8)

    # ---- assemble Omega_{1|l}: untouched polygons, then the faces ----------------------
    keep_poly = torch.nonzero(~split, as_tuple=True)[0]
    counts = torch.cat([mesh.counts[keep_poly], f_count])
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=dev), torch.cumsum(counts, 0)])
    verts = torch.cat([mesh.verts[~split[mesh.poly]], face_xy])
    parent = torch.cat([keep_poly, face_parent])
    sign = torch.cat([cuts.const.index_select(0, keep_poly), face_sign])
    factor = torch.where(sign > 0, planes.new_tensor(1.0), planes.new_tensor(slope))
    new_mesh = _Mesh(ptr, verts, planes.index_select(1, parent).mul_(factor),
                     torch.cat([mesh.codes.index_select(0, parent), sign > 0], 1),
                     mesh.group.index_select(0, parent))
    facets = torch.cat([cuts.chord_a, cuts.chord_b], 1)
    return new_mesh, facets, cuts.pair_unit, pair_poly


def _head_cuts(mesh: _Mesh, net: Network, box) -> tuple[torch.Tensor, torch.Tensor]:
    """The head's decision boundary {w . z_L + b = 0} in every polygon: (segments (S, 4), the
    polygon of each segment)."""
    wd, bd = net.head.decision_function()
    planes = mesh.aff @ torch.as_tensor(wd, device=mesh.verts.device)  # (3, R)
    planes[2] += bd
    cuts = _find_cuts(mesh, planes[:, :, None], box)
    return torch.cat([cuts.chord_a, cuts.chord_b], 1), cuts.pair_poly


def compute_partition(
    net: Network,
    batch: np.ndarray,
    box: tuple[float, float, float, float] = (-3.0, 3.0, -3.0, 3.0),
    overrides: BNOverrides | None = None,
    device: torch.device | str | None = None,
    stats: list[LayerStatistics] | None = None,
    max_regions: int = MAX_REGIONS,
) -> Partition:
    """Exact partition Omega_{1|l} of ``box`` for every layer l, with facets and statistics.

    ``batch`` is the explicit batch whose statistics define mu and sigma (SPEC.md).  Raises
    :class:`PartitionTooLarge` when a layer's partition exceeds ``max_regions`` regions.
    """
    t0 = time.perf_counter()
    dev = torch.device(device) if device is not None else pick_device()
    x0, x1, y0, y1 = (float(v) for v in box)
    if not all(abs(v) <= MAX_EXTENT for v in (x0, x1, y0, y1)) or not (x0 < x1 and y0 < y1):
        raise ValueError(f"the box must lie within +/-{MAX_EXTENT:g} with xmin < xmax and "
                         f"ymin < ymax, got {box}")
    box = (x0, x1, y0, y1)
    if stats is None:
        stats = layer_statistics(net, batch, overrides)
    slope = net.negative_slope
    mesh = _box_mesh(box, dev)
    layers = []
    for w, st in zip(net.weights, stats, strict=True):
        try:
            mesh, facets, units, parents = _layer_step(
                mesh, torch.as_tensor(w, device=dev), torch.as_tensor(st.mu, device=dev)[None],
                torch.as_tensor(st.sigma, device=dev)[None], slope, box, max_regions)
        except PartitionTooLarge as exc:
            raise PartitionTooLarge(f"layer {st.layer}: {exc}") from None
        if mesh.n_regions > max_regions:
            raise PartitionTooLarge(
                f"layer {st.layer} has {mesh.n_regions} regions, over the cap of {max_regions}: "
                "lower the width, the depth or the box")
        layers.append(LayerPartition(st.layer, mesh.to_polygons(), facets.cpu().numpy(),
                                     units.cpu().numpy(), parents.cpu().numpy(), st))
    boundary = None
    if net.head is not None:
        boundary = _head_cuts(mesh, net, box)[0].cpu().numpy()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return Partition(box, net.widths, layers, boundary, time.perf_counter() - t0, str(dev))


def decision_boundaries(net: Network, mu: np.ndarray | torch.Tensor,
                        sigma: np.ndarray | torch.Tensor,
                        box: tuple[float, float, float, float] = (-3.0, 3.0, -3.0, 3.0),
                        device: torch.device | str | None = None,
                        max_regions: int = MAX_REGIONS) -> list[np.ndarray]:
    """The exact decision boundary of the head for K realisations of the BN statistics.

    ``mu[k][l]`` and ``sigma[k][l]`` (one (D_l,) vector per layer, or arrays of shape
    (K, L, D) for equal widths) are realisation k's statistics of layer l.  All K partitions
    are cut in one batched pass (polygons carry their realisation), not a loop over K.
    Returns K arrays of segments (S_k, 4).  ``max_regions`` caps the regions of all K together.
    """
    if net.head is None:
        raise ValueError("decision boundaries need a network with a classifier head")
    dev = torch.device(device) if device is not None else pick_device()
    box = tuple(float(v) for v in box)
    k = len(mu)
    mesh = _box_mesh(box, dev, groups=k)
    for layer, w in enumerate(net.weights):
        d = w.shape[0]  # statistics may be padded to the widest layer
        m = torch.stack([torch.as_tensor(mu[i][layer], dtype=torch.float64, device=dev)[:d]
                         for i in range(k)])
        s = torch.stack([torch.as_tensor(sigma[i][layer], dtype=torch.float64, device=dev)[:d]
                         for i in range(k)])
        try:
            mesh, *_ = _layer_step(mesh, torch.as_tensor(w, device=dev), m, s,
                                   net.negative_slope, box, max_regions)
        except PartitionTooLarge as exc:
            raise PartitionTooLarge(f"layer {layer + 1}: {exc}") from None
        if mesh.n_regions > max_regions:  # R + M was below the cap, the faces are not
            raise PartitionTooLarge(
                f"layer {layer + 1} has {mesh.n_regions} regions, over the cap of {max_regions}: "
                "lower the width, the depth or the box")
    segments, poly = _head_cuts(mesh, net, box)
    group = mesh.group.index_select(0, poly)
    order = torch.argsort(group, stable=True)
    counts = torch.bincount(group, minlength=k).tolist()
    return [part.cpu().numpy() for part in torch.split(segments[order], counts)]
