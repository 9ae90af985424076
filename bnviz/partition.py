"""The exact input-space partition of a 2D network, layer by layer (BN paper eq. 10-11).

Algorithm (one pass per layer, vectorised over every region and every unit at once)
-----------------------------------------------------------------------------------
The partition Omega_{1|l-1} is kept as convex polygons (CSR: ``ptr`` into ``vertices``, counter-
clockwise) together with, per polygon P, the affine map z_{l-1}(x) = J_P x + o_P, carried
exactly by composing the layers' affine maps (no interpolation).  For layer l every unit's
pre-activation is affine on P: h_{l,k}(x) = a_{P,k} . x + c_{P,k}.  Then:

1. evaluate every h_{l,k} at every vertex; a unit *crosses* P when it is strictly positive at
   one vertex and strictly negative at another (on-the-line test below);
2. the new vertices inside the crossed polygons are the old corners, the points where a line
   crosses an edge, and the pairwise intersections of lines that fall strictly inside P
   (tested against the chord of each line, the facet F_{l,k,P} of eq. 11);
3. each candidate vertex gets its sign vector over the layer's units (0 where it is on the
   line).  Candidates with the same polygon, edge and sign vector are the same vertex: this
   merges, on purpose, the D(D-1)/2 float64 intersections of BN's layer-1 lines, which all
   pass through the batch centroid (Corollary 2), into one vertex with 2 D sectors;
4. around each vertex, the rays of the lines through it (and of P's edges) cut the plane into
   sectors; each sector inside P gives the sign vector of one face, so grouping sectors by
   (polygon, sign vector) gives each face of the arrangement with its corners, which are
   then ordered by angle.  The face's sign vector is its layer-l activation pattern.

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

from bnviz.device import pick_device
from bnviz.limits import MAX_REGIONS, PartitionTooLarge
from bnviz.network import LayerStatistics, Network, layer_statistics

__all__ = [
    "ANGLE_TOL",
    "RTOL",
    "LayerPartition",
    "Partition",
    "Polygons",
    "compute_partition",
    "box_from_extent",
]

RTOL = 1e-10
ANGLE_TOL = 1e-12
_PACK = 31  # sign trits packed per int64 word (2 bits each, sign bit left clear)


def box_from_extent(extent: float) -> tuple[float, float, float, float]:
    """The input box [-E, E]^2 as (xmin, xmax, ymin, ymax)."""
    e = float(extent)
    if not (math.isfinite(e) and e > 0):
        raise ValueError(f"extent must be a finite number > 0, got {extent}")
    return (-e, e, -e, e)


@dataclass(frozen=True)
class Polygons:
    """Convex polygons in CSR layout, counter-clockwise, with their activation codes.

    ``codes[i]`` holds the activation pattern (True: h > 0) of every unit of layers 1..l,
    layer by layer, constant inside polygon i.
    """

    ptr: np.ndarray  # (R + 1,) int64
    vertices: np.ndarray  # (V, 2) float64
    codes: np.ndarray  # (R, U) bool

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


def _pack_signs(s: torch.Tensor) -> torch.Tensor:
    """Pack sign vectors in {-1, 0, 1} into int64 words (exact keys for grouping)."""
    n, d = s.shape
    words = -(-d // _PACK)
    v = torch.zeros((n, words * _PACK), dtype=torch.int64, device=s.device)
    v[:, :d] = s.to(torch.int64) + 1
    powers = 4 ** torch.arange(_PACK, dtype=torch.int64, device=s.device)
    return (v.view(n, words, _PACK) * powers).sum(-1)


def _group_first(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact grouping of equal rows of ``keys`` (int64): (first row of each group, group of each
    row).  Lexicographic stable sorts, one per column: ``torch.unique(dim=0)`` is row-by-row
    slow on the CPU."""
    n = keys.shape[0]
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


class _Mesh:
    """Torch state of a partition: polygons in CSR form plus each polygon's affine map."""

    def __init__(self, ptr, verts, jac, off, codes):
        self.ptr, self.verts, self.jac, self.off, self.codes = ptr, verts, jac, off, codes
        counts = ptr[1:] - ptr[:-1]
        r, v = counts.numel(), verts.shape[0]
        dev = verts.device
        self.poly = torch.repeat_interleave(torch.arange(r, device=dev), counts)
        ar = torch.arange(v, device=dev)
        self.nxt = ar + 1
        self.nxt[ptr[1:] - 1] = ptr[:-1]
        self.prv = ar - 1
        self.prv[ptr[:-1]] = ptr[1:] - 1

    @property
    def n_regions(self) -> int:
        return self.ptr.numel() - 1

    def to_polygons(self) -> Polygons:
        return Polygons(self.ptr.cpu().numpy(), self.verts.cpu().numpy(),
                        self.codes.cpu().numpy())


def _box_mesh(box, dev) -> _Mesh:
    x0, x1, y0, y1 = box
    verts = torch.tensor([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=torch.float64, device=dev)
    ptr = torch.tensor([0, 4], dtype=torch.int64, device=dev)
    jac = torch.eye(2, dtype=torch.float64, device=dev)[None]
    off = torch.zeros((1, 2), dtype=torch.float64, device=dev)
    codes = torch.zeros((1, 0), dtype=torch.bool, device=dev)
    return _Mesh(ptr, verts, jac, off, codes)


@dataclass
class _Signs:
    """Per-polygon affine functions evaluated at the mesh vertices, with the on-line test."""

    a: torch.Tensor  # (R, D, 2) gradients
    c: torch.Tensor  # (R, D) offsets
    hv: torch.Tensor  # (V, D) values at vertices
    tol: torch.Tensor  # (R, D) on-the-line tolerance
    sv: torch.Tensor  # (V, D) int8 signs with tolerance
    crossing: torch.Tensor  # (R, D) bool: strictly both signs in the polygon
    const: torch.Tensor  # (R, D) int8 sign of non-crossing functions on the polygon


def _evaluate(mesh: _Mesh, a: torch.Tensor, c: torch.Tensor, box) -> _Signs:
    bx = max(abs(box[0]), abs(box[1]))
    by = max(abs(box[2]), abs(box[3]))
    tol = RTOL * (a[..., 0].abs() * bx + a[..., 1].abs() * by + c.abs())
    p = mesh.poly
    x, y = mesh.verts[:, 0:1], mesh.verts[:, 1:2]
    hv = a[p, :, 0] * x + a[p, :, 1] * y + c[p]
    tv = tol[p]
    pos, neg = hv > tv, hv < -tv
    sv = pos.to(torch.int8) - neg.to(torch.int8)
    r, d = c.shape
    zeros = torch.zeros((r, d), dtype=torch.int32, device=c.device)
    npos = zeros.index_add(0, p, pos.to(torch.int32))
    nneg = zeros.index_add(0, p, neg.to(torch.int32))
    crossing = (npos > 0) & (nneg > 0)
    const = (npos > 0).to(torch.int8) - ((npos == 0) & (nneg > 0)).to(torch.int8)
    return _Signs(a, c, hv, tol, sv, crossing, const)


def _edge_crossings(mesh: _Mesh, sig: _Signs, vidx: torch.Tensor):
    """Points where a function changes sign strictly along an edge starting at ``vidx``.

    Returns (start vertex, unit, point).  The point is interpolated from the positive end
    toward the negative end, so both polygons sharing the edge compute the same formula.
    """
    nxt = mesh.nxt[vidx]
    hit = (sig.sv[vidx] * sig.sv[nxt]) < 0
    row, unit = torch.nonzero(hit, as_tuple=True)
    j, n = vidx[row], nxt[row]
    h0, h1 = sig.hv[j, unit], sig.hv[n, unit]
    first_pos = (h0 > 0)[:, None]
    pa = torch.where(first_pos, mesh.verts[j], mesh.verts[n])
    pb = torch.where(first_pos, mesh.verts[n], mesh.verts[j])
    ha, hb = torch.where(h0 > 0, h0, h1), torch.where(h0 > 0, h1, h0)
    t = (ha / (ha - hb))[:, None]
    return j, unit, pa + t * (pb - pa)


def _chords(mesh: _Mesh, sig: _Signs, vidx, pair_index, n_pairs, directions, b_poly, b_unit,
            b_pts):
    """The chord (facet) of every crossing (polygon, unit) pair: its two end points.

    End points are the strict edge crossings and the corners on the line; along the line they
    are ordered by the parameter t = direction . point, and the chord runs from min to max.
    """
    vpoly = mesh.poly[vidx]
    on_line = (sig.sv[vidx] == 0) & sig.crossing[vpoly]
    row, unit = torch.nonzero(on_line, as_tuple=True)
    poly = torch.cat([b_poly, vpoly[row]])
    units = torch.cat([b_unit, unit])
    pts = torch.cat([b_pts, mesh.verts[vidx[row]]])
    pair = pair_index[poly, units]
    t = (pts * directions[pair]).sum(1)
    order = _lexsort(pair, t)
    counts = torch.bincount(pair, minlength=n_pairs)
    start = torch.cumsum(counts, 0) - counts
    first, last = order[start], order[start + counts - 1]
    return pts[first], pts[last], t[first], t[last]


def _layer_step(mesh: _Mesh, w_eff: torch.Tensor, b_eff: torch.Tensor, slope: float, box):
    """Cut every polygon of Omega_{1|l-1} by the D_l folded hyperplanes of layer l."""
    dev = w_eff.device
    a = torch.einsum("dk,rkc->rdc", w_eff, mesh.jac)  # (R, D, 2)
    c = mesh.off @ w_eff.T + b_eff  # (R, D)
    sig = _evaluate(mesh, a, c, box)
    split = sig.crossing.any(1)
    box_len = max(box[1] - box[0], box[3] - box[2])

    # ---- crossing pairs, their lines and chords (facets) --------------------------------
    pairs_p, pairs_k = torch.nonzero(sig.crossing, as_tuple=True)  # sorted by polygon
    n_pairs = pairs_p.numel()
    pair_index = torch.full(sig.crossing.shape, -1, dtype=torch.int64, device=dev)
    pair_index[pairs_p, pairs_k] = torch.arange(n_pairs, device=dev)
    grad = a[pairs_p, pairs_k]  # (M, 2)
    directions = torch.stack([-grad[:, 1], grad[:, 0]], 1)
    directions = directions / directions.norm(dim=1, keepdim=True)

    vidx = torch.nonzero(split[mesh.poly], as_tuple=True)[0]  # corners of split polygons
    b_start, b_unit, b_pts = _edge_crossings(mesh, sig, vidx)
    b_poly = mesh.poly[b_start]
    chord_a, chord_b, t_lo, t_hi = _chords(mesh, sig, vidx, pair_index, n_pairs, directions,
                                           b_poly, b_unit, b_pts)

    # ---- pairwise intersections strictly inside their polygon ---------------------------
    per_poly = torch.bincount(pairs_p, minlength=mesh.n_regions)
    poly_start = torch.cumsum(per_poly, 0) - per_poly
    gi, off = _ragged_arange(per_poly[pairs_p])
    gj = poly_start[pairs_p[gi]] + off
    keep = gj > gi
    gi, gj = gi[keep], gj[keep]
    p_c = pairs_p[gi]
    a1, a2 = grad[gi], grad[gj]
    c1, c2 = c[p_c, pairs_k[gi]], c[p_c, pairs_k[gj]]
    det = a1[:, 0] * a2[:, 1] - a1[:, 1] * a2[:, 0]
    nonparallel = det.abs() > 1e-14 * a1.norm(dim=1) * a2.norm(dim=1)
    safe = torch.where(nonparallel, det, torch.ones_like(det))
    q = torch.stack([(c2 * a1[:, 1] - c1 * a2[:, 1]) / safe,
                     (c1 * a2[:, 0] - c2 * a1[:, 0]) / safe], 1)
    ttol = RTOL * box_len
    t1 = (q * directions[gi]).sum(1)
    t2 = (q * directions[gj]).sum(1)
    inside = (nonparallel & (t1 > t_lo[gi] + ttol) & (t1 < t_hi[gi] - ttol)
              & (t2 > t_lo[gj] + ttol) & (t2 < t_hi[gj] - ttol))
    q, p_c = q[inside], p_c[inside]
    k_c1, k_c2 = pairs_k[gi[inside]], pairs_k[gj[inside]]

    # ---- sign vectors of the new points; merge coincident ones -------------------------
    def signs_at(poly, pts):
        h = a[poly, :, 0] * pts[:, 0:1] + a[poly, :, 1] * pts[:, 1:2] + c[poly]
        tol = sig.tol[poly]
        s = (h > tol).to(torch.int8) - (h < -tol).to(torch.int8)
        return torch.where(sig.crossing[poly], s, sig.const[poly])

    s_b = signs_at(b_poly, b_pts)
    s_b[torch.arange(b_unit.numel(), device=dev), b_unit] = 0
    s_c = signs_at(p_c, q)
    rows_c = torch.arange(q.shape[0], device=dev)
    s_c[rows_c, k_c1] = 0
    s_c[rows_c, k_c2] = 0
    new_poly = torch.cat([b_poly, p_c])
    new_edge = torch.cat([b_start, torch.full_like(p_c, -1)])
    new_s = torch.cat([s_b, s_c])
    new_pts = torch.cat([b_pts, q])
    if new_poly.numel():
        keys = torch.cat([new_poly[:, None], new_edge[:, None], _pack_signs(new_s)], 1)
        first, _ = _group_first(keys)
        new_poly, new_edge, new_s, new_pts = (new_poly[first], new_edge[first], new_s[first],
                                              new_pts[first])

    # all candidate vertices: old corners of split polygons, then the merged new points
    a_poly = mesh.poly[vidx]
    pt_poly = torch.cat([a_poly, new_poly])
    pt_xy = torch.cat([mesh.verts[vidx], new_pts])
    pt_s = torch.cat([torch.where(sig.crossing[a_poly], sig.sv[vidx], sig.const[a_poly]), new_s])
    n_a = vidx.numel()

    # ---- rays around every vertex: lines through it, and the polygon's edges ------------
    zq, zk = torch.nonzero((pt_s == 0) & sig.crossing[pt_poly], as_tuple=True)
    dz = directions[pair_index[pt_poly[zq], zk]]
    corner_next = mesh.verts[mesh.nxt[vidx]] - mesh.verts[vidx]
    corner_prev = mesh.verts[mesh.prv[vidx]] - mesh.verts[vidx]
    has_edge = torch.nonzero(new_edge >= 0, as_tuple=True)[0]
    e = new_edge[has_edge]
    edge_dir = mesh.verts[mesh.nxt[e]] - mesh.verts[e]
    ar_a = torch.arange(n_a, device=dev)
    ray_pt = torch.cat([zq, zq, ar_a, ar_a, n_a + has_edge, n_a + has_edge])
    ray_dir = torch.cat([dz, -dz, corner_next, corner_prev, edge_dir, -edge_dir])
    theta = torch.atan2(ray_dir[:, 1], ray_dir[:, 0])
    order = _lexsort(ray_pt, theta)
    ray_pt, theta = ray_pt[order], theta[order]
    n_rays = torch.bincount(ray_pt, minlength=pt_poly.numel())
    grp, off = _ragged_arange(n_rays[n_rays > 0])
    ray_start = torch.cumsum(n_rays, 0) - n_rays
    idx = torch.arange(theta.numel(), device=dev)
    nxt_ray = ray_start[ray_pt] + (off + 1) % n_rays[ray_pt]
    width = theta[nxt_ray] - theta + torch.where(nxt_ray <= idx, 2 * math.pi, 0.0)
    mid = theta + 0.5 * width
    u = torch.stack([torch.cos(mid), torch.sin(mid)], 1)

    # a sector is inside the polygon when its bisector points inward across every edge
    # through its vertex (edges are counter-clockwise: inward normal = left normal)
    def inward(start):
        dv = mesh.verts[mesh.nxt[start]] - mesh.verts[start]
        return torch.stack([-dv[:, 1], dv[:, 0]], 1)

    edge1 = torch.cat([vidx, new_edge])  # corner: outgoing edge; new point: its edge or -1
    edge2 = torch.cat([mesh.prv[vidx], torch.full_like(new_edge, -1)])
    ok = width > ANGLE_TOL
    for edges in (edge1[ray_pt], edge2[ray_pt]):
        has = edges >= 0
        n_in = inward(edges.clamp(min=0))
        ok &= ~has | ((n_in * u).sum(1) > 0)
    sect_pt, u = ray_pt[ok], u[ok]

    # ---- faces: group sectors by (polygon, sign vector), order corners by angle ---------
    poly_s = pt_poly[sect_pt]
    s_face = pt_s[sect_pt]
    fill = torch.sign(a[poly_s, :, 0] * u[:, 0:1] + a[poly_s, :, 1] * u[:, 1:2]).to(torch.int8)
    s_face = torch.where((s_face == 0) & sig.crossing[poly_s], fill, s_face)
    face_keys = torch.cat([poly_s[:, None], _pack_signs(s_face)], 1)
    face_first, face_of = _group_first(face_keys)
    n_faces = face_first.numel()
    xy = pt_xy[sect_pt]
    f_count = torch.bincount(face_of, minlength=n_faces)
    center = torch.zeros((n_faces, 2), dtype=torch.float64, device=dev).index_add_(0, face_of, xy)
    center = center / f_count[:, None]
    rel = xy - center[face_of]
    ang = torch.atan2(rel[:, 1], rel[:, 0])
    order = _lexsort(face_of, ang)
    face_xy = xy[order]
    face_parent = poly_s[face_first]
    face_sign = s_face[face_first]
    if n_faces and int(f_count.min()) < 3:
        raise RuntimeError("partition: a face with fewer than 3 corners (numerical breakdown)")

    # ---- assemble Omega_{1|l}: untouched polygons, then the faces ----------------------
    keep_poly = torch.nonzero(~split, as_tuple=True)[0]
    keep_counts = (mesh.ptr[1:] - mesh.ptr[:-1])[keep_poly]
    keep_xy = mesh.verts[~split[mesh.poly]]
    counts = torch.cat([keep_counts, f_count])
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64, device=dev), torch.cumsum(counts, 0)])
    verts = torch.cat([keep_xy, face_xy])
    parent = torch.cat([keep_poly, face_parent])
    sign = torch.cat([sig.const[keep_poly], face_sign])
    factor = torch.where(sign > 0, 1.0, slope).to(torch.float64)
    jac = factor[:, :, None] * a[parent]
    offv = factor * c[parent]
    codes = torch.cat([mesh.codes[parent], sign > 0], 1)
    new_mesh = _Mesh(ptr, verts, jac, offv, codes)
    facets = torch.cat([chord_a, chord_b], 1)
    return new_mesh, facets, pairs_k, pairs_p


def _boundary_segments(mesh: _Mesh, a: torch.Tensor, c: torch.Tensor, box) -> torch.Tensor:
    """Segments of {g = 0} for one affine function g per polygon (the decision boundary)."""
    sig = _evaluate(mesh, a[:, None, :], c[:, None], box)
    pairs_p, _ = torch.nonzero(sig.crossing, as_tuple=True)
    n_pairs = pairs_p.numel()
    pair_index = torch.full(sig.crossing.shape, -1, dtype=torch.int64, device=c.device)
    pair_index[pairs_p, 0] = torch.arange(n_pairs, device=c.device)
    g = a[pairs_p]
    directions = torch.stack([-g[:, 1], g[:, 0]], 1)
    directions = directions / directions.norm(dim=1, keepdim=True)
    vidx = torch.nonzero(sig.crossing[mesh.poly, 0], as_tuple=True)[0]
    b_start, b_unit, b_pts = _edge_crossings(mesh, sig, vidx)
    chord_a, chord_b, _, _ = _chords(mesh, sig, vidx, pair_index, n_pairs, directions,
                                     mesh.poly[b_start], b_unit, b_pts)
    return torch.cat([chord_a, chord_b], 1)


def compute_partition(
    net: Network,
    batch: np.ndarray,
    box: tuple[float, float, float, float] = (-3.0, 3.0, -3.0, 3.0),
    overrides=None,
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
    if not all(math.isfinite(v) for v in (x0, x1, y0, y1)) or not (x0 < x1 and y0 < y1):
        raise ValueError(f"the box must be finite with xmin < xmax and ymin < ymax, got {box}")
    box = (x0, x1, y0, y1)
    if stats is None:
        stats = layer_statistics(net, batch, overrides)
    slope = net.negative_slope
    mesh = _box_mesh(box, dev)
    layers = []
    for w, st in zip(net.weights, stats, strict=True):
        sigma = torch.as_tensor(st.sigma, device=dev)
        w_eff = torch.as_tensor(w, device=dev) / sigma[:, None]
        b_eff = -torch.as_tensor(st.mu, device=dev) / sigma
        mesh, facets, units, parents = _layer_step(mesh, w_eff, b_eff, slope, box)
        if mesh.n_regions > max_regions:
            raise PartitionTooLarge(
                f"layer {st.layer} has {mesh.n_regions} regions, over the cap of {max_regions}: "
                "lower the width, the depth or the box")
        layers.append(LayerPartition(st.layer, mesh.to_polygons(), facets.cpu().numpy(),
                                     units.cpu().numpy(), parents.cpu().numpy(), st))
    boundary = None
    if net.head is not None:
        wd, bd = net.head.decision_function()
        wd_t = torch.as_tensor(wd, device=dev)
        a = torch.einsum("k,rkc->rc", wd_t, mesh.jac)
        c = mesh.off @ wd_t + bd
        boundary = _boundary_segments(mesh, a, c, box).cpu().numpy()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return Partition(box, net.widths, layers, boundary, time.perf_counter() - t0, str(dev))
