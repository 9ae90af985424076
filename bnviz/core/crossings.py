"""Which lines cross which polygons, and the chord each line cuts from each polygon it
crosses (step 1 of the cut of a layer, :mod:`bnviz.core.cut`; the chords are the facets
F_{l,k,P} of BN paper eq. 11).

Tolerance
---------
A value h_{l,k}(v) counts as zero ("v is on the line") when |h| <= RTOL * scale with
scale = |a_x| X + |a_y| Y + |c| (X, Y the box's largest coordinates): the size of the terms
whose rounding error the test must absorb.  RTOL = 1e-10 is far above float64 rounding through
a dozen layers (~1e-13) and far below real geometry: it merges points closer than about
1e-10 of the box, while real regions of deep nets have areas ~1e-9 (sides ~1e-5).  No region
is ever dropped by an area threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bnviz.core.mesh import Mesh, lexsort, ragged_arange, starts

__all__ = ["RTOL", "Cuts", "find_cuts"]

#: Relative tolerance of the on-the-line test (module docstring).
RTOL = 1e-10
#: Up to this many (polygon, unit) pairs (the first layers) every pair is evaluated at the
#: corners: the circle test would cost more array calls than it saves.  Same result: a pair
#: the test drops has the sign of the polygon's centre at every corner.
DIRECT_PAIRS = 256


@dataclass
class Cuts:
    """The (polygon, unit) pairs whose zero line strictly crosses the polygon, and their chords
    (numpy arrays or torch tensors, as the mesh).

    ``ent_*`` list, pair by pair and corner by corner in order, the function's value and sign
    at every corner of the pair's polygon; ``b_*`` are the strict edge crossings.
    """

    const: Any  # (R, D) int8: sign of the function on polygons it does not cross
    pair_poly: Any  # (M,)
    pair_unit: Any  # (M,)
    grad: Any  # (M, 2) gradient of the function on the polygon
    offset: Any  # (M,)
    tol: Any  # (M,)
    direction: Any  # (M, 2) unit vector along the line
    ent_pair: Any
    ent_vertex: Any
    ent_sign: Any
    b_pair: Any
    b_edge: Any  # start vertex of the crossed edge
    b_pts: Any
    chord_a: Any  # (M, 2)
    chord_b: Any
    t_lo: Any  # (M,) chord end parameters along ``direction``
    t_hi: Any
    norm: Any  # (M,) |grad|
    corner_on_line: bool  # some pair's line passes through a corner of its polygon


def _candidates(mesh: Mesh, planes: Any, scale: float) -> tuple[Any, Any, Any]:
    """The circle test: the (polygon, unit) pairs whose line may touch the polygon, and the
    sign of every function at its polygon's centre (the sign on the polygons it misses).

    The (R, D) arrays of the test are the biggest of the cut; on numpy they are processed in
    blocks of rows that stay in the CPU's cache (``ops.block`` elements: 2-2.5x faster than
    whole arrays at 64x6 and 128x6), in row order, so the pairs come out as in one block."""
    ops = mesh.ops
    verts = mesh.verts
    center = ops.segment_sum(verts, mesh.ptr, mesh.poly) / mesh.counts[:, None]
    rel = verts - center[mesh.poly]
    radius = ops.segment_max(ops.sqrt((rel * rel).sum(1)), mesh.ptr, mesh.poly)
    # |h(x) - h(centre)| <= |a|_1 * radius on the polygon; the tolerance (below) is at most
    # RTOL * (|a|_1 * max(X, Y) + |c|), so this keeps every pair that can touch the polygon
    rho = (radius * (1 + 1e-9) + 2 * RTOL * scale)[:, None]
    r, d = planes.shape[1], planes.shape[2]
    rows = r if ops.block is None else max(1, ops.block // d)
    parts = []
    for s in range(0, r, rows):
        ax, ay, c = planes[0, s : s + rows], planes[1, s : s + rows], planes[2, s : s + rows]
        hc = ax * center[s : s + rows, 0:1]
        hc += ay * center[s : s + rows, 1:2]
        hc += c
        reach = ops.abs(ax)
        reach += ops.abs(ay)
        reach *= rho[s : s + rows]
        slack = ops.abs(c)
        slack *= 2 * RTOL
        reach += slack
        cp, ck = ops.nonzero2(ops.abs(hc) <= reach)
        parts.append((cp + s, ck, ops.to(ops.sign(hc), ops.int8)))
    if len(parts) == 1:
        return parts[0]
    return tuple(ops.cat(list(p)) for p in zip(*parts, strict=True))


def find_cuts(mesh: Mesh, planes: Any, box: tuple[float, float, float, float]) -> Cuts:
    """Which functions h = a . x + c cross which polygons; ``planes`` (3, R, D) = (a_x, a_y, c).

    A circle test first: |h(centre)| > |a| * radius means the line misses the polygon, so only
    the remaining (polygon, unit) pairs are evaluated at the corners (deep layers: a few %);
    up to DIRECT_PAIRS pairs, all are.
    """
    ops = mesh.ops
    c = planes[2]
    bx = max(abs(box[0]), abs(box[1]))
    by = max(abs(box[2]), abs(box[3]))
    verts = mesh.verts
    if c.shape[0] * c.shape[1] <= DIRECT_PAIRS:  # few pairs: every pair is a candidate
        cp, ck = ops.nonzero2(ops.full(c.shape, True, ops.bool))
        const = ops.zeros(c.shape, ops.int8)  # every pair's sign is set from its corners below
    else:
        cp, ck, const = _candidates(mesh, planes, max(bx, by))
    grp, off = ragged_arange(mesh.counts[cp])
    ev = mesh.ptr[cp][grp] + off
    g3 = planes.reshape(3, -1)[:, cp * planes.shape[2] + ck]  # (3, candidates)
    gx, gy, cc = g3[0], g3[1], g3[2]
    tt = RTOL * (ops.abs(gx) * bx + ops.abs(gy) * by + ops.abs(cc))
    h = gx[grp] * verts[ev, 0] + gy[grp] * verts[ev, 1] + cc[grp]
    tg = tt[grp]
    pos, neg = h > tg, h < -tg
    s = ops.to(pos, ops.int8) - ops.to(neg, ops.int8)
    n_cand = len(cp)
    npos = ops.count(grp, pos, n_cand) > 0
    nneg = ops.count(grp, neg, n_cand) > 0
    crossing = npos & nneg
    const[cp, ck] = ops.to(npos, ops.int8) - ops.to(~npos & nneg, ops.int8)

    keep = ops.nonzero(crossing)
    remap = ops.cumsum(crossing) - 1  # a crossing candidate's index among the pairs
    ent_keep = crossing[grp]
    ent_pair, ent_vertex = remap[grp[ent_keep]], ev[ent_keep]
    ent_h, ent_sign, ent_off = h[ent_keep], s[ent_keep], off[ent_keep]
    pair_poly, pair_unit = cp[keep], ck[keep]
    grad = g3[:2, keep].T
    norm = ops.sqrt(grad[:, 0] * grad[:, 0] + grad[:, 1] * grad[:, 1])
    direction = ops.columns(-grad[:, 1] / norm, grad[:, 0] / norm)

    # strict sign changes along an edge; interpolated from the positive end, so both polygons
    # sharing the edge use the same formula
    n_corner = mesh.counts[pair_poly][ent_pair]
    ent_next = ops.arange(len(ent_pair)) - ent_off + (ent_off + 1) % n_corner
    e0 = ops.nonzero((ent_sign * ent_sign[ent_next]) < 0)
    e1 = ent_next[e0]
    h0, h1 = ent_h[e0], ent_h[e1]
    first_pos = h0 > 0
    v0, v1 = verts[ent_vertex[e0]], verts[ent_vertex[e1]]
    pa = ops.where(first_pos[:, None], v0, v1)
    pb = ops.where(first_pos[:, None], v1, v0)
    ha, hb = ops.where(first_pos, h0, h1), ops.where(first_pos, h1, h0)
    b_pts = pa + (ha / (ha - hb))[:, None] * (pb - pa)
    b_pair, b_edge = ent_pair[e0], ent_vertex[e0]

    # chords: end points are the edge crossings and the corners on the line, ordered along it
    z = ops.nonzero(ent_sign == 0)
    if len(z) == 0 and len(b_pair) == 2 * len(keep):
        # no corner on any line, two edge crossings a pair (convex polygons): the chords' ends
        # are those two, in pair order; the same ends and order as the general sort below
        t = (b_pts * direction[b_pair]).sum(1)
        t0, t1 = t[0::2], t[1::2]
        swap = t0 > t1  # the stable sort below keeps ties in entry order
        p0, p1 = b_pts[0::2], b_pts[1::2]
        return Cuts(const, pair_poly, pair_unit, grad, cc[keep], tt[keep], direction, ent_pair,
                    ent_vertex, ent_sign, b_pair, b_edge, b_pts,
                    ops.where(swap[:, None], p1, p0), ops.where(swap[:, None], p0, p1),
                    ops.where(swap, t1, t0), ops.where(swap, t0, t1), norm, False)
    end_pair = ops.cat([b_pair, ent_pair[z]])
    end_pts = ops.cat([b_pts, verts[ent_vertex[z]]])
    t = (end_pts * direction[end_pair]).sum(1)
    order = lexsort(end_pair, t)
    n_end = ops.bincount(end_pair, len(keep))
    first = order[starts(n_end)]
    last = order[starts(n_end) + n_end - 1]
    return Cuts(const, pair_poly, pair_unit, grad, cc[keep], tt[keep], direction, ent_pair,
                ent_vertex, ent_sign, b_pair, b_edge, b_pts, end_pts[first], end_pts[last],
                t[first], t[last], norm, len(z) > 0)
