"""The compiled cut's entry points: one layer (:func:`cut_layer`), or the first layers of a
network in one call (:func:`cut_network`), and :func:`warm_up`.

Why: cutting 8x2 took 40 us through the per-layer path, half of it the Python around two
kernel calls (dispatch, argument and result conversion, the mesh and layer objects); Regioncam
takes 45 us.  :func:`cut_network` runs :func:`cut_layer` layer after layer
inside numba, from the input box, for as long as the mesh stays small enough for it
(``max_work`` regions x units, ``max_gemm`` multiply-adds of W z), and returns the layers it
cut concatenated, with offsets, plus the mesh to go on from.  :func:`bnviz.core.partition.
compute_partition` takes these layers as they are and cuts any further layer one by one.
Same kernel, same partition as the per-layer path (tests/core/test_clipping.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from bnviz.core.clipping import _JIT, _grow_rows, chords, clip_faces

__all__ = ["NO_PLANES", "activated_maps", "add_unit_steps", "chords", "common_codes", "cut_layer",
           "cut_network", "rows_under_bound", "swap_middle_axes", "warm_up"]

#: The empty ``planes`` that asks :func:`cut_layer` for its own GEMM.
NO_PLANES = np.empty((3, 0, 0))


@njit(**_JIT)
def cut_layer(ptr: Any, verts: Any, aff: Any, w: Any, planes: Any, mu: Any, sigma: Any,
              group: Any, codes: Any, n_units: int, bx: float, by: float, slope: float,
              max_regions: int, work_cap: int, maps: bool) -> Any:
    """The cut of one layer in one compiled call: h = (W z - mu) / sigma from ``planes`` =
    W z (3, R, D) (scaled in place), or from the maps ``aff`` (3, R, D_{l-1}) and ``w`` when
    ``planes`` is empty; (mu, sigma) of shape (groups, D), chosen by polygon group; the
    crossings and chords, the caps, the faces.  ``codes``: the polygons' activation codes of
    ``n_units`` units, packed 8 a byte (np.packbits along the units); ``bx``, ``by``: the
    box's largest coordinates (the tolerance's scale).  Returns (status: 0 done, 1 R + M
    over the region cap, 2 the pair work over ``work_cap``, 3 the faces over the region cap;
    the count that was over; Omega_{1|l} as ptr, verts, aff, packed codes, group; the facets
    (M, 4), their units, their polygons), for :func:`bnviz.core.cut.layer_step` to raise its
    messages.  ``maps`` False: ``aff`` is left empty, for :func:`activated_maps`."""
    r, d = aff.shape[1], w.shape[0]
    if planes.shape[1] != r:  # W z here: a small GEMM costs less than a call to BLAS
        planes = np.zeros((3, r, d))
        for a in range(3):
            for p in range(r):
                for j in range(w.shape[1]):
                    z = aff[a, p, j]
                    for k in range(d):
                        planes[a, p, k] += z * w[k, j]
    one = mu.shape[0] == 1
    for p in range(r):
        g = 0 if one else group[p]
        for k in range(d):
            inv = 1.0 / sigma[g, k]
            planes[2, p, k] -= mu[g, k]
            for a in range(3):
                planes[a, p, k] *= inv
    const, pair_ptr, pair_unit, pair_tol, chord = chords(ptr, verts, planes, bx, by)
    m = pair_unit.shape[0]
    pair_poly = np.empty(m, np.int64)
    pair_work = 0
    for p in range(r):
        n = pair_ptr[p + 1] - pair_ptr[p]
        pair_poly[pair_ptr[p] : pair_ptr[p + 1]] = p
        pair_work += n * n
    status, info = 0, 0
    if r + m > max_regions:
        status, info = 1, r + m
    elif pair_work > work_cap:
        status, info = 2, pair_work
    else:
        status, new_ptr, new_xy, aff, packed, new_group = clip_faces(
            ptr, verts, planes, codes, n_units, group, const, pair_ptr, pair_unit, pair_tol,
            slope, max_regions, maps)
        if status == 0:
            return (0, 0, new_ptr, new_xy, aff, packed, new_group,
                    chord, pair_unit, pair_poly)
        status, info = 3, max_regions
    u = n_units + d
    return (status, info, np.empty(0, np.int64), np.empty((0, 2)), np.empty((3, 0, d)),
            np.empty((0, (u + 7) // 8), np.uint8), np.empty(0, np.int64),
            np.empty((0, 4)), np.empty(0, np.int64), np.empty(0, np.int64))


@njit(**_JIT)
def activated_maps(planes: Any, parent: Any, packed: Any, n_units: int, slope: float,
                   out: Any) -> None:
    """``out`` (3, F, D): each face's activated maps, its polygon's ``planes`` (3, R, D,
    scaled as :func:`cut_layer` scales them) times 1 where its code's bit n_units + k of
    ``packed`` is on, else ``slope``: what :func:`cut_layer` makes with ``maps``, the same
    products, into an array its caller made: the slice engine makes them a chunk of faces at
    a time (:class:`bnviz.slices.slice_mesh.ActivatedRows`), not all at once."""
    d = planes.shape[2]
    for e in range(parent.shape[0]):
        p = parent[e]
        for k in range(d):
            u = n_units + k
            factor = 1.0 if (packed[e, u >> 3] >> (7 - (u & 7))) & 1 else slope
            for a in range(3):
                out[a, e, k] = planes[a, p, k] * factor


@njit(**_JIT)
def common_codes(packed: Any, starts: Any) -> Any:
    """Each group's common code and the faces' differences from it: faces
    starts[g]..starts[g+1]-1 of ``packed`` (F, ceil(U / 8), bits as np.packbits) are group g;
    returns (G, ceil(U / 8)) uint8 with unit u on where every face of the group has it on,
    and the number of (face, unit) pairs that differ from their group's (units on in the
    face, off in the common code: :mod:`bnviz.slices.activated_linear`)."""
    groups, n_bytes = starts.shape[0] - 1, packed.shape[1]
    out = np.full((groups, n_bytes), 255, np.uint8)
    ones = np.zeros(256, np.int64)
    for b in range(256):
        ones[b] = (b & 1) + ((b >> 1) & 1) + ((b >> 2) & 1) + ((b >> 3) & 1) + \
            ((b >> 4) & 1) + ((b >> 5) & 1) + ((b >> 6) & 1) + ((b >> 7) & 1)
    differing = 0
    for g in range(groups):
        for f in range(starts[g], starts[g + 1]):
            for b in range(n_bytes):
                out[g, b] &= packed[f, b]
        for f in range(starts[g], starts[g + 1]):
            for b in range(n_bytes):
                differing += ones[packed[f, b] ^ out[g, b]]
    return out, differing


@njit(**_JIT)
def add_unit_steps(planes: Any, parent: Any, packed: Any, reference: Any, group: Any,
                   slope: float, indptr: Any, indices: Any, data: Any, out: Any) -> None:
    """``out`` (3, F, V), holding each face's group reference's output, plus every unit u
    where face f's code differs from its group's ``reference``: (factor_f[u] -
    factor_ref[u]) planes[:, parent[f], u] times row u of the by-unit matrix (CSR ``indptr``,
    ``indices``, ``data``): what u adds to the outputs (:mod:`bnviz.slices.activated_linear`).
    The same products as the op on the faces' activated maps, summed in another order."""
    n_bytes = packed.shape[1]
    for f in range(parent.shape[0]):
        g, p = group[f], parent[f]
        for b in range(n_bytes):
            x = packed[f, b] ^ reference[g, b]
            if x == 0:
                continue
            for bit in range(8):
                if not (x >> (7 - bit)) & 1:
                    continue
                u = 8 * b + bit
                step = 1.0 - slope if (packed[f, b] >> (7 - bit)) & 1 else slope - 1.0
                da, db, dc = planes[0, p, u] * step, planes[1, p, u] * step, \
                    planes[2, p, u] * step
                for j in range(indptr[u], indptr[u + 1]):  # the three maps in one pass
                    k, w = indices[j], data[j]
                    out[0, f, k] += da * w
                    out[1, f, k] += db * w
                    out[2, f, k] += dc * w


@njit(**_JIT)
def swap_middle_axes(x: Any, out: Any) -> None:
    """``out`` (N, B, A, K) = ``x`` (N, A, B, K) with its two middle axes swapped: maps
    channels-first to rows-first and back, around a convolution's row-band products
    (:mod:`bnviz.slices.conv_products`).  One item's A * B * K values fit in the
    first-level cache, so the loop reads or writes its longer axis contiguously: 0.45-1.5 ms
    for the (3 000, 32, 4, 4) and (3 000, 4, 64, 4) swaps around ResNet9's 4x4 convolutions
    on one core here, where numpy's and torch's copies of the transposed view took 1.6-6.5
    ms."""
    n, a_len, b_len, k_len = x.shape
    if k_len == 1:  # (a 1x1 convolution's channels and pixels: without the inner loop of
        # one, twice as fast: 12-17 ms against 25 ms for (13 674, 96, 16, 1), about memcpy's)
        if a_len >= b_len:
            for i in range(n):
                for b in range(b_len):
                    for a in range(a_len):
                        out[i, b, a, 0] = x[i, a, b, 0]
        else:
            for i in range(n):
                for a in range(a_len):
                    for b in range(b_len):
                        out[i, b, a, 0] = x[i, a, b, 0]
    elif a_len >= b_len:
        for i in range(n):
            for b in range(b_len):
                for a in range(a_len):
                    for k in range(k_len):
                        out[i, b, a, k] = x[i, a, b, k]
    else:
        for i in range(n):
            for a in range(a_len):
                for b in range(b_len):
                    for k in range(k_len):
                        out[i, b, a, k] = x[i, a, b, k]


@njit(**_JIT)
def rows_under_bound(values: Any, constant: Any, per_unit: Any, scale: Any) -> Any:
    """(R,) bool: whether any unit u of row r has |values[r, u]| <= constant[u] + per_unit[u]
    scale[r]: the tie snap's first test (:class:`bnviz.slices.ties.TieSnap`), one pass that
    stops at a row's first such unit, where torch made the bound, the magnitudes and the
    comparison each as an array of the rows' size, then reduced it."""
    r_len, u_len = values.shape
    out = np.zeros(r_len, np.bool_)
    for r in range(r_len):
        s = scale[r]
        for u in range(u_len):
            if abs(values[r, u]) <= constant[u] + per_unit[u] * s:
                out[r] = True
                break
    return out


@njit(**_JIT)
def _append(buf: Any, n: int, rows: Any) -> Any:
    """``rows`` written at row ``n`` of ``buf`` (grown as needed)."""
    buf = _grow_rows(buf, n + rows.shape[0])
    buf[n : n + rows.shape[0]] = rows
    return buf


@njit(**_JIT)
def cut_network(x0: float, x1: float, y0: float, y1: float, w_flat: Any, widths: Any,
                mu_flat: Any, sigma_flat: Any, slope: float, max_regions: int,
                work_cap: int, max_work: int, max_gemm: int) -> Any:
    """Cut the box [x0, x1] x [y0, y1] by layers 1, 2, ... of a network while each layer's
    mesh has at most ``max_work`` regions x units and ``max_gemm`` multiply-adds of W z.

    ``w_flat`` holds W_1, W_2, ... (D_l, D_{l-1}) raveled one after the other, ``widths`` the
    D_l, ``mu_flat``/``sigma_flat`` each layer's (mu, sigma) likewise.  Returns (status and
    count as :func:`cut_layer`'s, for the layer after the cut ones; the
    number of layers cut; offsets into the concatenated ptrs, vertices, packed codes (bytes)
    and facets of the cut layers; those four (and the facets' units and polygons); the last
    mesh's affine maps and groups, the rest of it being the last layer's)."""
    bx, by = max(abs(x0), abs(x1)), max(abs(y0), abs(y1))
    ptr = np.empty(2, np.int64)
    ptr[0], ptr[1] = 0, 4
    verts = np.empty((4, 2))
    verts[0, 0], verts[0, 1], verts[1, 0], verts[1, 1] = x0, y0, x1, y0
    verts[2, 0], verts[2, 1], verts[3, 0], verts[3, 1] = x1, y1, x0, y1
    aff = np.zeros((3, 1, 2))
    aff[0, 0, 0] = aff[1, 0, 1] = 1.0  # z = x
    packed = np.zeros((1, 0), np.uint8)
    group = np.zeros(1, np.int64)
    n_layers = widths.shape[0]
    offsets = np.zeros((4, n_layers + 1), np.int64)  # ptr, vertex, code-byte, facet starts
    ptr_cat = np.empty(64, np.int64)
    verts_cat = np.empty((64, 2))
    packed_cat = np.empty(64, np.uint8)
    facets_cat = np.empty((64, 4))
    units_cat = np.empty(64, np.int64)
    parents_cat = np.empty(64, np.int64)
    no_planes = np.empty((3, 0, 0))
    w_at = s_at = 0
    d_prev = 2
    status = count = done = n_units = 0
    for layer in range(n_layers):
        d = widths[layer]
        r = ptr.shape[0] - 1
        if r * d > max_work or 3 * r * d * d_prev > max_gemm:
            break
        w = w_flat[w_at : w_at + d * d_prev].reshape((d, d_prev))
        mu = mu_flat[s_at : s_at + d].reshape((1, d))
        sigma = sigma_flat[s_at : s_at + d].reshape((1, d))
        status, count, ptr, verts, aff, packed, group, chord, units, parents = \
            cut_layer(ptr, verts, aff, w, no_planes, mu, sigma, group, packed, n_units, bx,
                      by, slope, max_regions, work_cap, True)
        if status != 0:
            break
        o = offsets[:, layer].copy()
        ptr_cat = _append(ptr_cat, o[0], ptr)
        verts_cat = _append(verts_cat, o[1], verts)
        packed_cat = _append(packed_cat, o[2], packed.ravel())
        facets_cat = _append(facets_cat, o[3], chord)
        units_cat = _append(units_cat, o[3], units)
        parents_cat = _append(parents_cat, o[3], parents)
        offsets[0, layer + 1] = o[0] + ptr.shape[0]
        offsets[1, layer + 1] = o[1] + verts.shape[0]
        offsets[2, layer + 1] = o[2] + packed.size
        offsets[3, layer + 1] = o[3] + chord.shape[0]
        w_at += d * d_prev
        s_at += d
        d_prev = d
        n_units += d
        done = layer + 1
    return (status, count, done, offsets, ptr_cat, verts_cat, packed_cat, facets_cat,
            units_cat, parents_cat, aff, group)


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels for the types the engine passes, so
    that the first request does not wait for the compiler (about a minute on a new machine,
    0.5 s from the cache)."""
    ptr = np.array([0, 4])
    verts = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    aff = np.array([[[1.0, 0.0]], [[0.0, 1.0]], [[0.1, 0.2]]])
    w = np.eye(2)
    stat = np.ones((1, 2))
    for planes in (NO_PLANES, aff @ w.T):
        for maps in (True, False):
            cut_layer(ptr, verts, aff, w, planes, stat, stat, np.zeros(1, np.int64),
                      np.zeros((1, 0), np.uint8), 0, 1.0, 1.0, 0.0, 100, 1000, maps)
    activated_maps(aff, np.zeros(1, np.int64), np.zeros((1, 1), np.uint8), 0, 0.0,
                   np.empty((3, 1, 2)))
    reference, _ = common_codes(np.zeros((2, 1), np.uint8), np.array([0, 2]))
    add_unit_steps(aff, np.zeros(2, np.int64), np.zeros((2, 1), np.uint8), reference,
                   np.zeros(2, np.int64), 0.0, np.array([0, 1, 1], np.int32),
                   np.zeros(1, np.int32), np.ones(1), np.zeros((3, 2, 1)))
    swap_middle_axes(np.zeros((1, 2, 3, 1)), np.empty((1, 3, 2, 1)))
    rows_under_bound(np.zeros((1, 2)), np.zeros(2), np.zeros(2), np.zeros(1))
    cut_network(-1.0, 1.0, -1.0, 1.0, w.ravel(), np.array([2], np.int64), stat[0], stat[0],
                0.0, 100, 1000, 1000, 1000)
    chords(ptr, verts, aff, 1.0, 1.0)
