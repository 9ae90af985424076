"""The faces at each vertex of a layer's cut, for any arrangement of lines (step 3-4 of
:mod:`bnviz.core.cut`), including the degenerate ones: 3+ concurrent lines (BN's layer-1
centroid, Corollary 2), 2 lines meeting on a polygon's boundary, lines through corners.

:func:`bnviz.core.cut.layer_step` builds the faces of lines in general position directly
(each vertex's faces are known from what made it); it calls :func:`vertex_faces` only when
some vertex is not of that kind.  Both give the same faces in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bnviz.core.crossings import Cuts
from bnviz.core.mesh import PACK, Mesh, group_first, lexsort, pack_local, ragged_arange, starts

__all__ = ["ANGLE_TOL", "NewPoints", "vertex_faces"]

#: Sectors at a degenerate vertex narrower than this (radians) are coincident lines: skipped.
ANGLE_TOL = 1e-12


@dataclass
class NewPoints:
    """The candidate vertices a layer adds inside the polygons it splits (edge crossings, then
    pairwise intersections), with their signs over their polygon's crossing lines."""

    xy: Any  # (N, 2)
    poly: Any  # (N,) polygon of Omega_{1|l-1}
    edge: Any  # (N,) start corner of the edge it lies on, -1 inside the polygon
    def1: Any  # (N,) the line (crossing pair) that made it
    def2: Any  # (N,) the other line of an intersection (def1 again for an edge crossing)
    n_edge: int  # how many of the points are edge crossings (they come first)
    ng: Any = None  # (E,) point of each (point, line) sign entry
    npair: Any = None  # (E,) line (crossing pair) of each entry
    ns: Any = None  # (E,) int8 sign, 0 on the line


def vertex_faces(mesh: Mesh, cuts: Cuts, new: NewPoints, local: Any, per_poly: Any,
                 vidx: Any, corner_id: Any, n_words: int,
                 pack: Callable[..., Any] = pack_local) -> tuple[Any, Any, Any, Any]:
    """Every vertex of the faces of the split polygons and the faces it belongs to.

    Coincident new points (same polygon, edge and sign vector) are merged into one vertex
    first.  ``local`` is each crossing pair's index among its polygon's lines, ``vidx`` the
    corners of the split polygons and ``corner_id`` their numbers; ``pack`` packs sign vectors
    (:func:`bnviz.core.mesh.pack_local`, passed in so that a test can watch its calls).
    Returns (the polygon of each vertex, its coordinates, then for each (vertex, face) entry:
    the vertex, the face's packed sign vector)."""
    ops = mesh.ops
    n_new = new.xy.shape[0]
    # coincident new points (same polygon, edge and sign vector) are one vertex: this merges
    # e.g. the D(D-1)/2 float64 intersections of BN's concurrent layer-1 lines
    words = pack(new.ng, local[new.npair], new.ns, n_new, n_words)
    first, _ = group_first(ops.cat([new.poly[:, None], new.edge[:, None], words], 1))
    rep_id = ops.full(n_new, -1, ops.int64)
    rep_id[first] = ops.arange(len(first))

    # ---- all vertices of the cut polygons: old corners, then the merged new points --------
    n_a = len(vidx)
    keep_ent = rep_id[new.ng] >= 0
    ent_point = ops.cat([corner_id[cuts.ent_vertex], n_a + rep_id[new.ng[keep_ent]]])
    ent_pair = ops.cat([cuts.ent_pair, new.npair[keep_ent]])
    ent_sign = ops.cat([cuts.ent_sign, new.ns[keep_ent]])
    pt_poly = ops.cat([mesh.poly[vidx], new.poly[first]])
    pt_ent_start = starts(per_poly[pt_poly])  # every point has one entry per line
    # place entries by (point, local line index) directly: no sort needed
    slot = pt_ent_start[ent_point] + local[ent_pair]
    order = ops.zeros(len(slot), ops.int64)
    order[slot] = ops.arange(len(slot))
    ent_point, ent_pair, ent_sign = ent_point[order], ent_pair[order], ent_sign[order]
    pt_xy = ops.cat([mesh.verts[vidx], new.xy[first]])
    pt_edge = new.edge[first]
    n_pts = len(pt_poly)
    pt_words = pack(ent_point, local[ent_pair], ent_sign, n_pts, n_words)

    # ---- which faces meet at each vertex ----------------------------------------------
    # A vertex in the faces' closure gets one entry per face; the face's sign vector is the
    # vertex's, with each line through the vertex given that face's sign.  Combinatorially
    # when that is determined: a corner off all lines is in 1 face, a point on one line in 2
    # (one each side), an interior crossing of exactly 2 lines in 4.  Degenerate vertices
    # (3+ concurrent lines, as BN's layer-1 centroid, or 2 lines meeting on the boundary) are
    # resolved geometrically: the rays of their lines and edges cut the plane into sectors,
    # and each sector inside the polygon is one face, its lines signed by its bisector.
    zero = ops.nonzero(ent_sign == 0)
    zq, zpair = ent_point[zero], ent_pair[zero]
    zshift = (local[zpair] % PACK) * 2
    zword = local[zpair] // PACK
    n_zero = ops.bincount(zq, n_pts)
    zstart = starts(n_zero)
    interior = ops.cat([ops.zeros(n_a, ops.bool), pt_edge < 0])
    simple = (n_zero <= 1) | ((n_zero == 2) & interior)

    sp = ops.nonzero(simple)
    sg, combo = ragged_arange(1 << n_zero[sp])  # 1, 2 or 4 faces
    s_pt = sp[sg]
    s_words = pt_words[s_pt].reshape(-1)
    for j in range(2):  # the (up to 2) lines through the vertex, signed by the bits of combo
        has = ops.nonzero(n_zero[s_pt] > j)
        ze = zstart[s_pt[has]] + j
        fill = ((combo[has] >> j) & 1) * 2 - 1
        ops.add_at(s_words, has * n_words + zword[ze], fill << zshift[ze])
    s_words = s_words.reshape(-1, n_words)

    cx = ~simple
    if not bool(cx.any()):
        return pt_poly, pt_xy, s_pt, s_words
    zc = ops.nonzero(cx[zq])
    dz = cuts.direction[zpair[zc]]
    ca = ops.nonzero(cx[:n_a])  # degenerate corners
    verts = mesh.verts
    corner_next = verts[mesh.nxt[vidx[ca]]] - verts[vidx[ca]]
    corner_prev = verts[mesh.prv[vidx[ca]]] - verts[vidx[ca]]
    ce = ops.nonzero(cx[n_a:] & (pt_edge >= 0))  # degenerate edge points
    e = pt_edge[ce]
    edge_dir = verts[mesh.nxt[e]] - verts[e]
    ray_pt = ops.cat([zq[zc], zq[zc], ca, ca, n_a + ce, n_a + ce])
    ray_dir = ops.cat([dz, -dz, corner_next, corner_prev, edge_dir, -edge_dir])
    theta = ops.atan2(ray_dir[:, 1], ray_dir[:, 0])
    order = lexsort(ray_pt, theta)
    ray_pt, theta = ray_pt[order], theta[order]
    n_rays = ops.bincount(ray_pt, n_pts)
    _, roff = ragged_arange(n_rays[n_rays > 0])
    idx = ops.arange(len(theta))
    nxt_ray = starts(n_rays)[ray_pt] + (roff + 1) % n_rays[ray_pt]
    width = theta[nxt_ray] - theta + ops.to(nxt_ray <= idx, ops.float64) * (2 * math.pi)
    mid = theta + 0.5 * width
    ux, uy = ops.cos(mid), ops.sin(mid)
    # a sector is inside the polygon when its bisector points inward across every edge
    # through its vertex (edges are counter-clockwise: inward normal = left normal)
    edge1 = ops.cat([vidx, pt_edge])  # corner: outgoing edge; new point: its edge or -1
    edge2 = ops.cat([mesh.prv[vidx], ops.full(len(pt_edge), -1, ops.int64)])
    ok = width > ANGLE_TOL
    for edges in (edge1[ray_pt], edge2[ray_pt]):
        start = ops.maximum0(edges)
        dv = verts[mesh.nxt[start]] - verts[start]
        ok &= (edges < 0) | (dv[:, 0] * uy - dv[:, 1] * ux > 0)
    sect_pt, ux, uy = ray_pt[ok], ux[ok], uy[ok]
    tg, toff = ragged_arange(n_zero[sect_pt])
    ze = zstart[sect_pt[tg]] + toff
    g = cuts.grad[zpair[ze]]
    fill = ops.to(ops.sign(g[:, 0] * ux[tg] + g[:, 1] * uy[tg]), ops.int64)
    t_words = pt_words[sect_pt].reshape(-1)
    ops.add_at(t_words, tg * n_words + zword[ze], fill << zshift[ze])
    return (pt_poly, pt_xy, ops.cat([s_pt, sect_pt]),
            ops.cat([s_words, t_words.reshape(-1, n_words)]))
