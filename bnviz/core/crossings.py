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

import torch

from bnviz.core.mesh import Mesh, lexsort, ragged_arange, starts

__all__ = ["RTOL", "Cuts", "find_cuts"]

#: Relative tolerance of the on-the-line test (module docstring).
RTOL = 1e-10


@dataclass
class Cuts:
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


def find_cuts(mesh: Mesh, planes: torch.Tensor, box) -> Cuts:
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
    grp, off = ragged_arange(mesh.counts[cp])
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
    order = lexsort(end_pair, t)
    n_end = torch.bincount(end_pair, minlength=m)
    first = order[starts(n_end)]
    last = order[starts(n_end) + n_end - 1]
    return Cuts(const, pair_poly, pair_unit, grad, cc[keep], tt[keep], direction, ent_pair,
                ent_vertex, ent_sign, b_pair, b_edge, b_pts, end_pts[first], end_pts[last],
                t[first], t[last])
