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

In general position (no corner on a line, no 3 lines through a point, no 2 meeting on an
edge: random-bias networks almost surely) step 3's merging is the identity and step 4 is
combinatorial throughout, so both are built directly from what made each vertex; the general
steps (:mod:`bnviz.core.degenerate`) run only when some sign test says otherwise.  Both ways
give the same faces in the same order.  The cut runs on numpy or torch arrays alike
(:mod:`bnviz.core.arrays`).

Sectors narrower than ANGLE_TOL radians (coincident lines, i.e. duplicate units) are skipped;
the on-the-line tolerance is :data:`bnviz.core.crossings.RTOL` (documented there).
"""

from __future__ import annotations

import math
from typing import Any

from bnviz.core import kernels
from bnviz.core.arrays import NUMPY, NUMPY_MAX_WORK, Ops, device_type, single_thread_matmul
from bnviz.core.crossings import RTOL, Cuts, find_cuts
from bnviz.core.degenerate import ANGLE_TOL, NewPoints, vertex_faces
from bnviz.core.limits import MAX_REGIONS, PartitionTooLarge
from bnviz.core.mesh import PACK, Mesh, group_first, lexsort, pack_local, ragged_arange, starts

__all__ = ["ANGLE_TOL", "COMPILED_MAX_GEMM", "COMPILED_MAX_WORK", "WORK_PER_REGION",
           "compiled_kernels", "compiled_max_work",
           "NumericalBreakdown", "layer_step", "refusal"]

#: Work allowed per region of the cap in one layer's cut, counted in (line, line) pairs tried
#: and (new point, line) signs evaluated: the two tables whose size grows with the square and
#: the cube of the lines crossing one polygon.  The region cap alone misses cases with few
#: regions but many lines per region (BN's central layer 1, K realisations at once), which
#: took seconds and hundreds of MB per request before a region count was ever reached.
WORK_PER_REGION = 12

#: Largest (regions x units) product of a layer cut by the compiled kernels
#: (:mod:`bnviz.core.clipping`) rather than by the vectorised cut below, when numpy holds the
#: mesh (on the CPU; on a GPU while the mesh is small, :data:`bnviz.core.arrays.NUMPY_MAX_WORK`).
#: Every size: bench/partition.py --engine compiled|numpy measured the compiled cut faster from
#: 8x2 to 128x6 (time / Regioncam's: 0.84 against 12.6 at 8x2, 0.47 / 3.2 at 16x3, 0.29 / 0.38
#: at 64x6, 0.32 / 0.53 at 128x6).  Tests lower it to compare the two cuts.
COMPILED_MAX_WORK: float = float("inf")
#: Largest GEMM W z (multiply-adds) the compiled cut does in its own loops; BLAS above.
COMPILED_MAX_GEMM: float = 20_000


class NumericalBreakdown(ValueError):
    """The float64 arrangement became inconsistent (a face with fewer than 3 corners): seen
    for nearly concurrent lines far from BN's exact central case. A ValueError, so every
    caller reports it as a message; known limitation, see the tolerance notes of
    :mod:`bnviz.core.crossings`."""


def layer_step(mesh: Mesh, w: Any, mu: Any, sigma: Any, slope: float,
               box: tuple[float, float, float, float], max_regions: int = MAX_REGIONS,
               compiled: bool = True, planes: Any = None) -> tuple[Mesh, Any, Any, Any]:
    """Cut every polygon of Omega_{1|l-1} by the D_l folded hyperplanes of layer l,
    h = (W z - mu) / sigma, with (mu, sigma) of shape (groups, D_l) chosen by polygon group.

    ``w``, ``mu``, ``sigma`` are arrays of the mesh's library (numpy or torch).  Raises
    PartitionTooLarge before the heavy work when the cut must exceed ``max_regions``:
    a polygon crossed by m lines becomes at least m + 1 faces, so R + M is a lower bound; or
    when its pair or sign tables would exceed ``WORK_PER_REGION * max_regions`` entries.
    Returns (the mesh of Omega_{1|l}, the facets (M, 4) as x0, y0, x1, y1, the unit of each
    facet, the polygon of Omega_{1|l-1} each facet lies in).  ``compiled=False`` keeps a
    numpy mesh on the vectorised cut (K realisations at once: the sign-table cap above is
    the vectorised cut's, which the compiled kernels do not reproduce yet).  ``planes``
    (3, R, D_l): W z already computed (an image slice's pre-activations,
    :mod:`bnviz.slices.vectorised_cut`), with ``compiled=False``; ``w`` is then unused.
    """
    ops = mesh.ops
    r = mesh.n_regions
    engine = compiled_kernels(ops, r * w.shape[0]) if compiled else None
    if engine is not None:
        return _compiled_step(engine, mesh, w, mu, sigma, slope, box, max_regions)
    if planes is None:  # d/dx, d/dy, offset of W z
        planes = ops.matmul(mesh.aff.reshape(3 * r, -1), w.T).reshape(3, r, -1)
    if mu.shape[0] == 1:  # one realisation: broadcast rather than gather per polygon
        planes[2] -= mu
        if not bool((sigma == 1).all()):  # (random or zero bias: sigma = 1, nothing to do)
            planes *= 1.0 / sigma
    else:
        planes[2] -= mu[mesh.group]
        planes *= (1.0 / sigma)[mesh.group]
    cuts = find_cuts(mesh, planes, box)
    m = len(cuts.pair_poly)
    if r + m > max_regions:
        raise refusal(REGIONS, r + m, max_regions)
    if m == 0:  # no line crosses any polygon: the same polygons, one more layer of code
        positive = cuts.const > 0
        new_mesh = Mesh(ops.cat([mesh.ptr]), ops.cat([mesh.verts]),  # copies, as below
                        _activate(ops, planes, positive, slope),
                        ops.cat([mesh.codes, positive], 1), mesh.group)
        return new_mesh, ops.zeros((0, 4), ops.float64), cuts.pair_unit, cuts.pair_poly
    pair_poly = cuts.pair_poly
    per_poly = ops.bincount(pair_poly, r)  # crossing lines per polygon
    work_cap = WORK_PER_REGION * max_regions
    pair_work = int((per_poly * per_poly).sum())
    if pair_work > work_cap:
        raise refusal(PAIRS, pair_work, max_regions)
    split = per_poly > 0
    poly_start = starts(per_poly)
    local = ops.arange(m) - poly_start[pair_poly]
    n_words = max(1, -(-int(per_poly.max()) // PACK))
    new = _new_points(ops, cuts, per_poly, poly_start, local, max(box[1] - box[0], box[3] - box[2]))
    sign_work = int(per_poly[new.poly].sum())
    if sign_work > work_cap:
        raise PartitionTooLarge(
            f"this layer would evaluate {sign_work} signs of new vertices, over the cap of "
            f"{work_cap}: lower the width, the depth or the box")
    new.ng, noff = ragged_arange(per_poly[new.poly])
    new.npair = poly_start[new.poly][new.ng] + noff
    grad = cuts.grad
    h = (grad[new.npair, 0] * new.xy[new.ng, 0] + grad[new.npair, 1] * new.xy[new.ng, 1]
         + cuts.offset[new.npair])
    tol = cuts.tol[new.npair]
    ns = ops.to(h > tol, ops.int8) - ops.to(h < -tol, ops.int8)
    forced = (new.npair == new.def1[new.ng]) | (new.npair == new.def2[new.ng])
    ns[forced] = 0
    new.ns = ns

    vmask = split[mesh.poly]
    vidx = ops.nonzero(vmask)  # the corners of the split polygons
    corner_id = ops.cumsum(vmask) - 1
    if cuts.corner_on_line or bool(((ns == 0) & ~forced).any()):
        # some vertex on 3+ lines, or a line through a corner: the general way
        pt_poly, pt_xy, face_pt, face_words = vertex_faces(
            mesh, cuts, new, local, per_poly, vidx, corner_id, n_words, pack=pack_local)
    else:
        pt_poly, pt_xy, face_pt, face_words = _general_position_faces(
            mesh, cuts, new, local, per_poly, vidx, corner_id, n_words)

    # ---- faces: group the (vertex, face) entries by (polygon, sign vector) --------------
    poly_s = pt_poly[face_pt]
    word_bits = 2 * min(int(per_poly.max()), PACK)  # a word holds trits 0..2 of its lines
    if n_words == 1 and r.bit_length() + word_bits <= 62:  # one int64 key: one sort
        keys = ((poly_s << word_bits) | face_words[:, 0])[:, None]
    else:
        keys = ops.cat([poly_s[:, None], face_words], 1)
    face_first, face_of = group_first(keys, stable=False)
    n_faces = len(face_first)
    xy = pt_xy[face_pt]
    f_count = ops.bincount(face_of, n_faces)
    if n_faces and int(f_count.min()) < 3:
        raise NumericalBreakdown("the exact partition broke down numerically at these settings "
                                 "(nearly coincident lines); move a control slightly")
    center = ops.scatter_add(n_faces, face_of, xy) / f_count[:, None]
    rel = xy - center[face_of]
    face_xy = xy[_by_angle(ops, face_of, ops.atan2(rel[:, 1], rel[:, 0]))]
    face_parent = poly_s[face_first]

    # layer-l sign vector of each face: constant signs, then its crossing lines' signs,
    # unpacked from its key
    face_sign = cuts.const[face_parent]
    fg, fi = ragged_arange(per_poly[face_parent])
    trit = (face_words[face_first[fg], fi // PACK] >> ((fi % PACK) * 2)) & 3
    fpair = poly_start[face_parent[fg]] + fi
    face_sign[fg, cuts.pair_unit[fpair]] = ops.to(trit - 1, ops.int8)

    # ---- assemble Omega_{1|l}: untouched polygons, then the faces ----------------------
    keep_poly = ops.nonzero(~split)
    counts = ops.cat([mesh.counts[keep_poly], f_count])
    ptr = ops.cat([ops.zeros(1, ops.int64), ops.cumsum(counts)])
    verts = ops.cat([mesh.verts[~vmask], face_xy])
    parent = ops.cat([keep_poly, face_parent])
    sign = ops.cat([cuts.const[keep_poly], face_sign])
    positive = sign > 0
    new_mesh = Mesh(ptr, verts, _activate(ops, ops.take(planes, parent, 1), positive, slope),
                    ops.cat([mesh.codes[parent], positive], 1), mesh.group[parent])
    facets = ops.cat([cuts.chord_a, cuts.chord_b], 1)
    return new_mesh, facets, cuts.pair_unit, pair_poly


def compiled_kernels(ops: Ops, work: float) -> Any:
    """The engine's one choice between its two cuts, for a cut of ``work`` (regions x units
    of a layer; the regions alone for the head's boundary; 0 for a network's first layers)
    whose mesh ``ops`` holds: :mod:`bnviz.core.compiled_network` when the compiled kernels
    cut it, else None (the vectorised cut: the same partition, tests/engine_cases.py).

    The kernels cut when numpy holds the mesh (on the CPU at every size; on a GPU while the
    mesh is small, :func:`bnviz.core.arrays.ops_for`), ``work`` is within
    :data:`COMPILED_MAX_WORK` (every size, measured) and this process has them loaded
    (:func:`bnviz.core.kernels.ready`: a server or a job's process loads them in the
    background, a one-shot command never).  Every caller asks here (tests/test_architecture.py
    checks that nothing else reads ``kernels.ready``)."""
    if ops is not NUMPY or work > COMPILED_MAX_WORK:
        return None
    return kernels.ready()


def compiled_max_work(device: Any) -> int:
    """The largest layer work :func:`compiled_kernels` gives the kernels on ``device``: the
    same rule as a bound, for the compiled call that cuts a network's first layers in one go
    (:func:`bnviz.core.compiled_network.cut_network` stops at the first layer past it)."""
    return int(min(COMPILED_MAX_WORK, NUMPY_MAX_WORK.get(device_type(device), 0), 1 << 62))


def _compiled_step(compiled: Any, mesh: Mesh, w: Any, mu: Any, sigma: Any, slope: float,
                   box: tuple[float, float, float, float], max_regions: int
                   ) -> tuple[Mesh, Any, Any, Any]:
    """The layer cut by the compiled kernels (``compiled``: :func:`compiled_kernels`' module,
    :func:`bnviz.core.compiled_network.cut_layer`), refused as above."""
    work_cap = WORK_PER_REGION * max_regions
    aff = mesh.aff
    r = aff.shape[1]
    planes = compiled.NO_PLANES  # a small W z: the kernel's loops
    if 3 * r * w.size > COMPILED_MAX_GEMM:
        planes = single_thread_matmul(aff.reshape(3 * r, -1), w.T).reshape(3, r, -1)
    n_units = mesh.n_units
    status, count, ptr, verts, aff, packed, group, facets, units, parents = \
        compiled.cut_layer(mesh.ptr, mesh.verts, aff, w, planes, mu, sigma, mesh.group,
                           mesh.packed_codes, n_units, max(abs(box[0]), abs(box[1])),
                           max(abs(box[2]), abs(box[3])), float(slope), int(max_regions),
                           int(work_cap), True)
    if status:
        raise refusal(status, count, max_regions)
    return (Mesh(ptr, verts, aff, None, group, packed, n_units + w.shape[0]), facets, units,
            parents)


#: What a cut refuses (the status of the compiled cut, :func:`bnviz.core.compiled_network.
#: cut_layer`): R + M over the region cap, the pair work over its cap, the faces over the cap.
REGIONS, PAIRS, FACES = 1, 2, 3


def refusal(status: int, count: int, max_regions: int) -> PartitionTooLarge:
    """The refusal ``status`` (REGIONS, PAIRS or FACES) with its count, in the same words
    whichever cut (compiled or vectorised) made it."""
    if status == REGIONS:
        return PartitionTooLarge(
            f"this layer would have more than {max_regions} regions (at least {count}): "
            "lower the width, the depth or the box")
    if status == PAIRS:
        return PartitionTooLarge(
            f"this layer would try {count} pairs of lines, over the cap of "
            f"{WORK_PER_REGION * max_regions}: lower the width, the depth or the box")
    return PartitionTooLarge(f"this layer would have more than {max_regions} regions: "
                             "lower the width, the depth or the box")


def _by_angle(ops: Ops, face: Any, theta: Any) -> Any:
    """The permutation ordering entries by face, then by angle: one unstable sort of the
    float key 8 face + theta + pi, checked, else the exact two-key sort.  The key keeps faces
    apart (theta + pi < 8) and its rounding is monotone, so it can only tie angles closer than
    its resolution, never swap them; a strictly increasing angle in every face proves the
    order the same as the two-key sort's."""
    order = ops.argsort(ops.to(face, ops.float64) * 8.0 + (theta + math.pi), stable=False)
    th, fa = theta[order], face[order]
    if bool(((th[1:] > th[:-1]) | (fa[1:] != fa[:-1])).all()):
        return order
    return lexsort(face, theta)


def _activate(ops: Ops, planes: Any, positive: Any, slope: float) -> Any:
    """The affine maps of a(h) from those of h (3, R, D), in place: h where h > 0, slope * h
    elsewhere (multiplied by exactly 1.0 or slope, as a float64 factor)."""
    if slope == 0.0:
        planes *= positive
    else:
        planes *= ops.where(positive, ops.asarray(1.0, ops.float64),
                            ops.asarray(slope, ops.float64))
    return planes


def _new_points(ops: Ops, cuts: Cuts, per_poly: Any, poly_start: Any, local: Any,
                box_len: float) -> NewPoints:
    """The edge crossings, then the pairwise intersections of each polygon's lines that fall
    strictly inside both chords."""
    pair_poly = cuts.pair_poly
    # each pair i with its polygon's later lines j > i (pairs of a polygon are contiguous)
    gi, off = ragged_arange(per_poly[pair_poly] - local - 1)
    gj = gi + 1 + off
    gx, gy = cuts.grad[:, 0], cuts.grad[:, 1]
    a1x, a1y, a2x, a2y = gx[gi], gy[gi], gx[gj], gy[gj]
    c1, c2 = cuts.offset[gi], cuts.offset[gj]
    det = a1x * a2y - a1y * a2x
    nonparallel = ops.abs(det) > 1e-14 * cuts.norm[gi] * cuts.norm[gj]
    safe = ops.where(nonparallel, det, 1.0)
    qx = (c2 * a1y - c1 * a2y) / safe
    qy = (c1 * a2x - c2 * a1x) / safe
    ttol = RTOL * box_len
    dx, dy = cuts.direction[:, 0], cuts.direction[:, 1]
    t1 = qx * dx[gi] + qy * dy[gi]
    t2 = qx * dx[gj] + qy * dy[gj]
    inside = ops.nonzero(nonparallel & (t1 > cuts.t_lo[gi] + ttol) & (t1 < cuts.t_hi[gi] - ttol)
                         & (t2 > cuts.t_lo[gj] + ttol) & (t2 < cuts.t_hi[gj] - ttol))
    gi, gj = gi[inside], gj[inside]
    q = ops.columns(qx[inside], qy[inside])
    def1 = ops.cat([cuts.b_pair, gi])
    return NewPoints(ops.cat([cuts.b_pts, q]), pair_poly[def1],
                     ops.cat([cuts.b_edge, ops.full(len(gi), -1, ops.int64)]), def1,
                     ops.cat([cuts.b_pair, gj]), len(cuts.b_pair))


def _general_position_faces(mesh: Mesh, cuts: Cuts, new: NewPoints, local: Any, per_poly: Any,
                            vidx: Any, corner_id: Any, n_words: int
                            ) -> tuple[Any, Any, Any, Any]:
    """:func:`bnviz.core.degenerate.vertex_faces` for lines in general position, built from
    what made each vertex: a corner is in 1 face, an edge crossing of line i in 2 (i signed
    -, +), an interior crossing of lines i < j in 4 (i, j signed --, +-, -+, ++).  The same
    vertices and (vertex, face) entries as the general way, which lists the new points in the
    order of their keys rather than as made: the faces, numbered by their keys, are the same."""
    ops = mesh.ops
    n_a, n_b = len(vidx), new.n_edge
    n_q = new.xy.shape[0] - n_b
    n_pts = n_a + n_b + n_q
    pt_poly = ops.cat([mesh.poly[vidx], new.poly])
    pt_xy = ops.cat([mesh.verts[vidx], new.xy])
    pt_words = pack_local(ops.cat([corner_id[cuts.ent_vertex], n_a + new.ng]),
                          ops.cat([local[cuts.ent_pair], local[new.npair]]),
                          ops.cat([cuts.ent_sign, new.ns]), n_pts, n_words)
    reps = ops.repeat(ops.asarray([1, 2, 4]), ops.asarray([n_a, n_b, n_q]))
    face_pt = ops.repeat(ops.arange(n_pts), reps)
    face_words = pt_words[face_pt]
    flat = face_words.reshape(-1)
    # line 1 of each edge point and intersection (entries after the corners' n_a), then line
    # 2 of each intersection: +-1 in its 2-bit field, by the bits of the entry's combo
    e = ops.arange(2 * n_b + 4 * n_q)
    combo = ops.cat([e[: 2 * n_b] & 1, e[: 4 * n_q] & 3])
    line1 = local[ops.repeat(new.def1, reps[n_a:])]
    flat[(n_a + e) * n_words + line1 // PACK] += ((combo & 1) * 2 - 1) << ((line1 % PACK) * 2)
    eq = n_a + 2 * n_b + e[: 4 * n_q]
    line2 = local[ops.repeat(new.def2[n_b:], 4)]
    flat[eq * n_words + line2 // PACK] += (((combo[2 * n_b:] >> 1) & 1) * 2 - 1) << (
        (line2 % PACK) * 2)
    return pt_poly, pt_xy, face_pt, face_words
