"""The cut of one layer: every polygon of Omega_{1|l-1} split by the D_l folded hyperplanes of
layer l (BN paper eq. 10-11), giving Omega_{1|l} with each face's activation pattern and
affine map.

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
   positive at one corner and strictly negative at another (the on-the-line test of
   :mod:`bnviz.core.crossings`, which also finds each line's chord);
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

Sectors narrower than ANGLE_TOL radians (coincident lines, i.e. duplicate units) are skipped;
the on-the-line tolerance is :data:`bnviz.core.crossings.RTOL` (documented there).
"""

from __future__ import annotations

import math

import torch

from bnviz.core.crossings import RTOL, find_cuts
from bnviz.core.limits import MAX_REGIONS, PartitionTooLarge
from bnviz.core.mesh import PACK, Mesh, group_first, lexsort, pack_local, ragged_arange, starts

__all__ = ["ANGLE_TOL", "WORK_PER_REGION", "NumericalBreakdown", "layer_step"]

#: Sectors at a degenerate vertex narrower than this (radians) are coincident lines: skipped.
ANGLE_TOL = 1e-12
#: Work allowed per region of the cap in one layer's cut, counted in (line, line) pairs tried
#: and (new point, line) signs evaluated: the two tables whose size grows with the square and
#: the cube of the lines crossing one polygon.  The region cap alone misses cases with few
#: regions but many lines per region (BN's central layer 1, K realisations at once), which
#: took seconds and hundreds of MB per request before a region count was ever reached.
WORK_PER_REGION = 12


class NumericalBreakdown(ValueError):
    """The float64 arrangement became inconsistent (a face with fewer than 3 corners): seen
    for nearly concurrent lines far from BN's exact central case. A ValueError, so every
    caller reports it as a message; known limitation, see the tolerance notes of
    :mod:`bnviz.core.crossings`."""


def layer_step(mesh: Mesh, w: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor,
               slope: float, box, max_regions: int = MAX_REGIONS
               ) -> tuple[Mesh, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Cut every polygon of Omega_{1|l-1} by the D_l folded hyperplanes of layer l,
    h = (W z - mu) / sigma, with (mu, sigma) of shape (groups, D_l) chosen by polygon group.

    Raises PartitionTooLarge before the heavy work when the cut must exceed ``max_regions``:
    a polygon crossed by m lines becomes at least m + 1 faces, so R + M is a lower bound; or
    when its pair or sign tables would exceed ``WORK_PER_REGION * max_regions`` entries.
    Returns (the mesh of Omega_{1|l}, the facets (M, 4) as x0, y0, x1, y1, the unit of each
    facet, the polygon of Omega_{1|l-1} each facet lies in).
    """
    dev = w.device
    r = mesh.n_regions
    planes = (mesh.aff.reshape(3 * r, -1) @ w.T).view(3, r, -1)  # (d/dx, d/dy, offset) of W z
    inv_sigma = (1.0 / sigma).index_select(0, mesh.group)
    planes[2] -= mu.index_select(0, mesh.group)
    planes *= inv_sigma
    cuts = find_cuts(mesh, planes, box)
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
    poly_start = starts(per_poly)
    local = torch.arange(m, device=dev) - poly_start[pair_poly]
    n_words = max(1, -(-int(per_poly.max()) // PACK)) if m else 1
    box_len = max(box[1] - box[0], box[3] - box[2])

    # ---- pairwise intersections of a polygon's lines, strictly inside its chords ---------
    gi, off = ragged_arange(per_poly[pair_poly])
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
    ng, noff = ragged_arange(per_poly[new_poly])
    npair = poly_start[new_poly][ng] + noff
    h = grad[npair, 0] * new_pts[ng, 0] + grad[npair, 1] * new_pts[ng, 1] + cuts.offset[npair]
    tol = cuts.tol[npair]
    ns = (h > tol).to(torch.int8) - (h < -tol).to(torch.int8)
    ns = torch.where((npair == def1[ng]) | (npair == def2[ng]), torch.zeros_like(ns), ns)
    # coincident new points (same polygon, edge and sign vector) are one vertex: this merges
    # e.g. the D(D-1)/2 float64 intersections of BN's concurrent layer-1 lines
    words = pack_local(ng, local[npair], ns, n_new, n_words)
    first, _ = group_first(torch.cat([new_poly[:, None], new_edge[:, None], words], 1))
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
    pt_ent_start = starts(per_poly[pt_poly])  # every point has one entry per line
    # place entries by (point, local line index) directly: no sort needed
    slot = pt_ent_start[ent_point] + local[ent_pair]
    order = torch.empty_like(slot)
    order[slot] = torch.arange(slot.numel(), device=dev)
    ent_point, ent_pair, ent_sign = ent_point[order], ent_pair[order], ent_sign[order]
    pt_xy = torch.cat([mesh.verts[vidx], new_pts[first]])
    pt_edge = torch.cat([new_edge[first]])
    n_pts = pt_poly.numel()
    pt_words = pack_local(ent_point, local[ent_pair], ent_sign, n_pts, n_words)

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
    zshift = (local[zpair] % PACK) * 2
    zword = local[zpair] // PACK
    n_zero = torch.bincount(zq, minlength=n_pts)
    zstart = starts(n_zero)
    interior = torch.cat([torch.zeros(n_a, dtype=torch.bool, device=dev), pt_edge < 0])
    simple = (n_zero <= 1) | ((n_zero == 2) & interior)

    sp = torch.nonzero(simple, as_tuple=True)[0]
    sg, combo = ragged_arange(torch.ones_like(sp) << n_zero[sp])  # 1, 2 or 4 faces
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
    order = lexsort(ray_pt, theta)
    ray_pt, theta = ray_pt[order], theta[order]
    n_rays = torch.bincount(ray_pt, minlength=n_pts)
    _, roff = ragged_arange(n_rays[n_rays > 0])
    idx = torch.arange(theta.numel(), device=dev)
    nxt_ray = starts(n_rays)[ray_pt] + (roff + 1) % n_rays[ray_pt]
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
    tg, toff = ragged_arange(n_zero[sect_pt])
    ze = zstart[sect_pt[tg]] + toff
    fill = torch.sign((grad[zpair[ze]] * u[tg]).sum(1)).to(torch.int64)
    t_words = pt_words[sect_pt].reshape(-1).index_add(
        0, tg * n_words + zword[ze], fill << zshift[ze]).view(-1, n_words)

    # ---- faces: group the (vertex, face) entries by (polygon, sign vector) --------------
    face_pt = torch.cat([s_pt, sect_pt])
    face_words = torch.cat([s_words, t_words])
    poly_s = pt_poly[face_pt]
    face_first, face_of = group_first(torch.cat([poly_s[:, None], face_words], 1))
    n_faces = face_first.numel()
    xy = pt_xy[face_pt]
    f_count = torch.bincount(face_of, minlength=n_faces)
    if n_faces and int(f_count.min()) < 3:
        raise NumericalBreakdown("the exact partition broke down numerically at these settings "
                                 "(nearly coincident lines); move a control slightly")
    center = torch.zeros((n_faces, 2), dtype=torch.float64, device=dev).index_add_(0, face_of, xy)
    rel = xy - (center / f_count[:, None])[face_of]
    order = lexsort(face_of, torch.atan2(rel[:, 1], rel[:, 0]))
    face_xy = xy[order]
    face_parent = poly_s[face_first]

    # layer-l sign vector of each face: constant signs, then its crossing lines' signs,
    # unpacked from its key
    face_sign = cuts.const.index_select(0, face_parent)
    fg, fi = ragged_arange(per_poly[face_parent])
    trit = (face_words[face_first[fg], fi // PACK] >> ((fi % PACK) * 2)) & 3
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
    new_mesh = Mesh(ptr, verts, planes.index_select(1, parent).mul_(factor),
                     torch.cat([mesh.codes.index_select(0, parent), sign > 0], 1),
                     mesh.group.index_select(0, parent))
    facets = torch.cat([cuts.chord_a, cuts.chord_b], 1)
    return new_mesh, facets, cuts.pair_unit, pair_poly
