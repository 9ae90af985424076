"""The cut of one layer compiled with numba: the fast path for small meshes on the CPU.

Why: a small partition (the explorer's lecture nets, 8x2 to 16x3) is a few hundred tiny
array operations per layer in the vectorised cut (:mod:`bnviz.core.cut`), each ~1 us of numpy
dispatch; Regioncam (Rust) cuts 8x2 in 60 us where they took 730 us.  Compiled loops have no
such floor.  What it computes is what :func:`bnviz.core.cut.layer_step` computes (BN paper eq.
10-11), region for region, in the same order:

1. every (polygon P, unit k) is evaluated at P's corners with the on-the-line tolerance of
   :mod:`bnviz.core.crossings` (RTOL of the terms' scale); a unit crosses P when it is
   strictly positive at one corner and strictly negative at another, and its chord (the facet
   F_{l,k,P}) runs between the extreme edge crossings and on-line corners along the line;
2. each crossed polygon is clipped by its crossing lines one after the other (Sutherland-
   Hodgman on convex faces): a face with corners strictly on both sides splits in two, corners
   within the tolerance of the line go to both halves, and an edge with a strict sign change
   gets the point interpolated from its positive end (the vectorised cut's formula).  So BN's
   concurrent layer-1 lines (Corollary 2) meet in one vertex with 2 D faces around it, and a
   line through a corner adds no vertex, with no special case.  Each face keeps the lines
   after the one that made it that may still cross it: a line with every corner of the face
   beyond twice its tolerance on one side has its corners so on every face clipped from it
   (a convex subset), where its own test would give that side, so its trit is set and it
   is never tested there.  A polygon of m lines into F faces was m F tests (the first layer
   of a 16-channel conv chain, 1 024 lines into 57 000 faces: 0.49 s of a 1.5 s cut), now
   the lines near each face (0.38 s); the faces and their corners are the same;
3. the faces of P are numbered as the vectorised cut numbers them (by their packed sign
   vectors over P's crossing lines) and their corners start at the smallest angle about their
   mean, counter-clockwise; untouched polygons come first, then the faces, polygon by polygon.

Coordinates agree with the vectorised cut to float64 rounding (an interior vertex is found
along a chord here, by a 2x2 solve there); tests/core/test_clipping.py compares the two.
The kernels are compiled on first use and cached on disk (numba's ``cache=True``; the
directory is ``NUMBA_CACHE_DIR`` where set); :mod:`bnviz.core.compiled_network` has the entry
points (one layer, several layers) and the warm-up that compiles them ahead of a request.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from bnviz.core.crossings import RTOL
from bnviz.core.mesh import PACK
from bnviz.core.rows import grow_rows

__all__ = ["chords", "clip_faces"]

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


_grow_rows = njit(**_JIT)(grow_rows)


@njit(**_JIT)
def _signs(gx: float, gy: float, c: float, tt: float, xy: Any, start: int, n: int, hv: Any,
           sv: Any) -> tuple[bool, bool]:
    """h = gx x + gy y + c at the points ``xy[start:start + n]`` into ``hv`` and their signs
    into ``sv`` (0 within ``tt`` of the line), evaluated as the vectorised cut evaluates them
    ((gx x + gy y) + c); whether some point is strictly positive, some strictly negative."""
    npos = nneg = False
    for j in range(n):
        h = gx * xy[start + j, 0] + gy * xy[start + j, 1] + c
        hv[j] = h
        if h > tt:
            sv[j] = 1
            npos = True
        elif h < -tt:
            sv[j] = -1
            nneg = True
        else:
            sv[j] = 0
    return npos, nneg


@njit(**_JIT)
def chords(ptr: Any, verts: Any, planes: Any, bx: float, by: float) -> Any:
    """Which of the functions h = a . x + c (``planes`` (3, R, D)) cross which polygon, as
    :func:`bnviz.core.crossings.find_cuts` decides it, and the chord of each crossing.

    Returns (const (R, D) int8: the sign on polygons a function does not cross, +1 where it
    crosses; pair_ptr (R + 1,): the crossing pairs of each polygon, CSR; pair_unit (M,);
    pair_tol (M,): the on-the-line tolerance; chord (M, 4): x0, y0, x1, y1 along the line's
    direction (-a_y, a_x) / |a|)."""
    r, d = planes.shape[1], planes.shape[2]
    const = np.zeros((r, d), np.int8)
    pair_ptr = np.zeros(r + 1, np.int64)
    pair_unit = np.empty(max(16, r), np.int64)
    pair_tol = np.empty(max(16, r), np.float64)
    chord = np.empty((max(16, r), 4), np.float64)
    nmax = 0
    for p in range(r):
        nmax = max(nmax, ptr[p + 1] - ptr[p])
    hv = np.empty(nmax, np.float64)
    sv = np.empty(nmax, np.int64)
    m = 0
    for p in range(r):
        s0 = ptr[p]
        nv = ptr[p + 1] - s0
        for k in range(d):
            gx, gy, c = planes[0, p, k], planes[1, p, k], planes[2, p, k]
            tt = RTOL * (abs(gx) * bx + abs(gy) * by + abs(c))
            npos, nneg = _signs(gx, gy, c, tt, verts, s0, nv, hv, sv)
            if not (npos and nneg):
                const[p, k] = 1 if npos else (-1 if nneg else 0)
                continue
            const[p, k] = 1
            norm = math.sqrt(gx * gx + gy * gy)
            dx, dy = -gy / norm, gx / norm
            # ends: the strict edge crossings in corner order, then the corners on the line;
            # the first of the smallest t and the last of the largest, as a stable sort's
            t_lo, t_hi = np.inf, -np.inf
            ax = ay = bx_ = by_ = 0.0
            for j in range(2 * nv):
                if j < nv:
                    jn = j + 1 if j + 1 < nv else 0
                    if sv[j] * sv[jn] >= 0:
                        continue
                    pa, pb = (j, jn) if hv[j] > 0 else (jn, j)
                    f = hv[pa] / (hv[pa] - hv[pb])
                    x = verts[s0 + pa, 0] + f * (verts[s0 + pb, 0] - verts[s0 + pa, 0])
                    y = verts[s0 + pa, 1] + f * (verts[s0 + pb, 1] - verts[s0 + pa, 1])
                else:
                    if sv[j - nv] != 0:
                        continue
                    x, y = verts[s0 + j - nv, 0], verts[s0 + j - nv, 1]
                t = x * dx + y * dy
                if t < t_lo:
                    t_lo, ax, ay = t, x, y
                if t >= t_hi:
                    t_hi, bx_, by_ = t, x, y
            if m == pair_unit.shape[0]:
                pair_unit = _grow_rows(pair_unit, m + 1)
                pair_tol = _grow_rows(pair_tol, m + 1)
                chord = _grow_rows(chord, m + 1)
            pair_unit[m], pair_tol[m] = k, tt
            chord[m, 0], chord[m, 1], chord[m, 2], chord[m, 3] = ax, ay, bx_, by_
            m += 1
        pair_ptr[p + 1] = m
    return const, pair_ptr, pair_unit[:m].copy(), pair_tol[:m].copy(), chord[:m].copy()


@njit(**_JIT)
def _side(gx: float, gy: float, c: float, margin: float, xy: Any, start: int, n: int) -> int:
    """+1 where h = gx x + gy y + c exceeds ``margin`` at every point ``xy[start:start + n]``,
    -1 where it is below -``margin`` at every one, else 0."""
    above = below = True
    for j in range(n):
        h = gx * xy[start + j, 0] + gy * xy[start + j, 1] + c
        above = above and h > margin
        below = below and h < -margin
        if not (above or below):
            return 0
    return 1 if above else -1


@njit(**_JIT)
def clip_faces(ptr: Any, verts: Any, planes: Any, codes: Any, n_units: int, group: Any, const: Any,
          pair_ptr: Any, pair_unit: Any, pair_tol: Any, slope: float, max_regions: int,
          maps: bool) -> Any:
    """Steps 2-3 of the module docstring, then Omega_{1|l} assembled: (status, ptr, verts,
    aff (3, F, D), the codes (F, U + D) packed as np.packbits packs them, group); ``codes``:
    the U units' codes of the polygons, packed likewise; ``maps`` False: no ``aff`` (empty;
    :func:`bnviz.core.compiled_network.activated_maps` makes it where the caller allocates);
    status 1 when the faces pass ``max_regions`` (the arrays are then empty)."""
    r, d = planes.shape[1], planes.shape[2]
    n_keep = 0
    nmax = 0
    for p in range(r):
        nmax = max(nmax, ptr[p + 1] - ptr[p])
        if pair_ptr[p + 1] == pair_ptr[p]:
            n_keep += 1
    # faces of the split polygons, as emitted: corners, counts, parent, activation
    out_xy = np.empty((64, 2), np.float64)
    out_len = np.empty(16, np.int64)
    out_parent = np.empty(16, np.int64)
    out_pos = np.empty((16, d), np.bool_)
    n_out = 0
    n_out_xy = 0
    # scratch of one polygon's clipping
    pool = np.empty((64, 2), np.float64)
    f_start = np.empty(16, np.int64)
    f_len = np.empty(16, np.int64)
    trits = np.empty((16, d), np.int8)
    hv = np.empty(nmax + d + 2, np.float64)
    sv = np.empty(nmax + d + 2, np.int64)
    ang = np.empty(nmax + d + 2, np.float64)
    keys = np.empty((16, (d + PACK - 1) // PACK), np.int64)
    order = np.empty(16, np.int64)
    cand = np.empty(64, np.int64)
    c_start = np.empty(16, np.int64)
    c_len = np.empty(16, np.int64)
    stack = np.empty(16, np.int64)
    for p in range(r):
        q0, q1 = pair_ptr[p], pair_ptr[p + 1]
        m = q1 - q0
        if m == 0:
            continue
        s0 = ptr[p]
        nv = ptr[p + 1] - s0
        if nv > pool.shape[0]:
            pool = _grow_rows(pool, nv)
        for j in range(nv):
            pool[j, 0], pool[j, 1] = verts[s0 + j, 0], verts[s0 + j, 1]
        n_pool, nf = nv, 1
        f_start[0], f_len[0] = 0, nv
        # the lines still to test on each face (module docstring, step 2): all of them on P
        if m > cand.shape[0]:
            cand = _grow_rows(cand, m)
        for i in range(m):
            cand[i] = i
        n_cand, c_start[0], c_len[0] = m, 0, m
        stack[0], top = 0, 1
        while top > 0:
            top -= 1
            f = stack[top]
            cs, cl, pos = c_start[f], c_len[f], 0
            while pos < cl:
                i = cand[cs + pos]
                pos += 1
                k = pair_unit[q0 + i]
                gx, gy, c, tt = planes[0, p, k], planes[1, p, k], planes[2, p, k], \
                    pair_tol[q0 + i]
                st, ln = f_start[f], f_len[f]
                npos, nneg = _signs(gx, gy, c, tt, pool, st, ln, hv, sv)
                if not nneg:
                    trits[f, i] = 1 if npos else 0
                    continue
                if not npos:
                    trits[f, i] = -1
                    continue
                if n_keep + n_out + nf + 1 > max_regions:
                    return (1, np.empty(0, np.int64), np.empty((0, 2)), np.empty((3, 0, d)),
                            np.empty((0, (n_units + d + 7) // 8), np.uint8),
                            np.empty(0, np.int64))
                if n_pool + 2 * ln + 4 > pool.shape[0]:
                    pool = _grow_rows(pool, n_pool + 2 * ln + 4)
                if nf == f_start.shape[0]:
                    f_start = _grow_rows(f_start, nf + 1)
                    f_len = _grow_rows(f_len, nf + 1)
                    trits = _grow_rows(trits, nf + 1)
                    c_start = _grow_rows(c_start, nf + 1)
                    c_len = _grow_rows(c_len, nf + 1)
                    stack = _grow_rows(stack, nf + 1)
                a, b = n_pool, n_pool + ln + 2
                na = nb = 0
                for j in range(ln):
                    if sv[j] >= 0:
                        pool[a + na, 0], pool[a + na, 1] = pool[st + j, 0], pool[st + j, 1]
                        na += 1
                    if sv[j] <= 0:
                        pool[b + nb, 0], pool[b + nb, 1] = pool[st + j, 0], pool[st + j, 1]
                        nb += 1
                    jn = j + 1 if j + 1 < ln else 0
                    if sv[j] * sv[jn] < 0:  # from the positive end, as the vectorised cut
                        pa, pb = (j, jn) if sv[j] > 0 else (jn, j)
                        t = hv[pa] / (hv[pa] - hv[pb])
                        x = pool[st + pa, 0] + t * (pool[st + pb, 0] - pool[st + pa, 0])
                        y = pool[st + pa, 1] + t * (pool[st + pb, 1] - pool[st + pa, 1])
                        pool[a + na, 0], pool[a + na, 1] = x, y
                        pool[b + nb, 0], pool[b + nb, 1] = x, y
                        na += 1
                        nb += 1
                g = nf
                f_start[f], f_len[f] = a, na
                f_start[g], f_len[g] = b, nb
                for j in range(m):
                    trits[g, j] = trits[f, j]
                trits[f, i], trits[g, i] = 1, -1
                nf += 1
                n_pool += 2 * ln + 4
                # the lines after i, kept for each part only where they may cross it: a
                # line with every corner of the part beyond twice its tolerance on one side
                # has them so on every face clipped from it (a convex subset), where its
                # test would give that side: its trit is set now, and it is never tested
                rest = cl - pos
                if n_cand + 2 * rest > cand.shape[0]:
                    cand = _grow_rows(cand, n_cand + 2 * rest)
                for part in (g, f):
                    first = n_cand
                    for rj in range(rest):
                        j = cand[cs + pos + rj]
                        kj = pair_unit[q0 + j]
                        side = _side(planes[0, p, kj], planes[1, p, kj], planes[2, p, kj],
                                     2.0 * pair_tol[q0 + j], pool, f_start[part],
                                     f_len[part])
                        if side == 0:
                            cand[n_cand] = j
                            n_cand += 1
                        else:
                            trits[part, j] = side
                    c_start[part], c_len[part] = first, n_cand - first
                stack[top] = g
                top += 1
                cs, cl, pos = c_start[f], c_len[f], 0
        # number the faces by their sign vectors packed as the vectorised cut packs them
        n_words = (m + PACK - 1) // PACK
        if nf > order.shape[0]:
            keys = _grow_rows(keys, nf)
            order = _grow_rows(order, nf)
        for f in range(nf):
            order[f] = f
            for w in range(n_words):
                keys[f, w] = 0
            for i in range(m):
                keys[f, i // PACK] += np.int64(trits[f, i] + 1) << (2 * (i % PACK))
        if n_words == 1 and nf <= 32:  # insertion sort: no allocation for the usual few faces
            for a in range(1, nf):
                f = order[a]
                b = a - 1
                while b >= 0 and keys[order[b], 0] > keys[f, 0]:
                    order[b + 1] = order[b]
                    b -= 1
                order[b + 1] = f
        else:  # lexicographic over the words: stable sorts, last word first
            order[:nf] = np.argsort(keys[:nf, n_words - 1], kind="mergesort")
            for w in range(n_words - 2, -1, -1):
                order[:nf] = order[:nf][np.argsort(keys[order[:nf], w], kind="mergesort")]
        for f in order[:nf]:
            st, ln = f_start[f], f_len[f]
            cx = cy = 0.0
            for j in range(ln):
                cx += pool[st + j, 0]
                cy += pool[st + j, 1]
            cx /= ln
            cy /= ln
            first = 0
            for j in range(ln):  # the pseudo-angle, monotone in atan2 (no libm call)
                x, y = pool[st + j, 0] - cx, pool[st + j, 1] - cy
                ax = abs(x) + abs(y)
                ang[j] = math.copysign(1.0 - x / ax, y) if ax > 0 else 0.0
                if ang[j] < ang[first]:
                    first = j
            if n_out_xy + ln > out_xy.shape[0]:
                out_xy = _grow_rows(out_xy, n_out_xy + ln)
            for j in range(ln):
                jj = st + (first + j if first + j < ln else first + j - ln)
                out_xy[n_out_xy + j, 0], out_xy[n_out_xy + j, 1] = pool[jj, 0], pool[jj, 1]
            n_out_xy += ln
            if n_out == out_len.shape[0]:
                out_len = _grow_rows(out_len, n_out + 1)
                out_parent = _grow_rows(out_parent, n_out + 1)
                out_pos = _grow_rows(out_pos, n_out + 1)
            out_len[n_out], out_parent[n_out] = ln, p
            for k in range(d):
                out_pos[n_out, k] = const[p, k] > 0
            for i in range(m):
                out_pos[n_out, pair_unit[q0 + i]] = trits[f, i] > 0
            n_out += 1

    # Omega_{1|l}: untouched polygons, then the faces; each with its activated affine map
    n_all = n_keep + n_out
    new_ptr = np.zeros(n_all + 1, np.int64)
    new_parent = np.empty(n_all, np.int64)
    new_pos = np.empty((n_all, d), np.bool_)
    n_keep_xy = 0
    e = 0
    for p in range(r):
        if pair_ptr[p + 1] == pair_ptr[p]:
            new_parent[e] = p
            new_ptr[e + 1] = new_ptr[e] + ptr[p + 1] - ptr[p]
            for k in range(d):
                new_pos[e, k] = const[p, k] > 0
            n_keep_xy += ptr[p + 1] - ptr[p]
            e += 1
    new_xy = np.empty((n_keep_xy + n_out_xy, 2), np.float64)
    for e in range(n_keep):
        p = new_parent[e]
        for j in range(ptr[p + 1] - ptr[p]):
            new_xy[new_ptr[e] + j, 0] = verts[ptr[p] + j, 0]
            new_xy[new_ptr[e] + j, 1] = verts[ptr[p] + j, 1]
    for j in range(n_out_xy):
        new_xy[n_keep_xy + j, 0], new_xy[n_keep_xy + j, 1] = out_xy[j, 0], out_xy[j, 1]
    for f in range(n_out):
        new_parent[n_keep + f] = out_parent[f]
        new_ptr[n_keep + f + 1] = new_ptr[n_keep + f] + out_len[f]
        for k in range(d):
            new_pos[n_keep + f, k] = out_pos[f, k]
    aff = np.empty((3, n_all if maps else 0, d), np.float64)
    packed = np.zeros((n_all, (n_units + d + 7) // 8), np.uint8)  # as np.packbits(axis=1)
    new_group = np.empty(n_all, np.int64)
    for e in range(n_all):
        p = new_parent[e]
        new_group[e] = group[p]
        for b in range(codes.shape[1]):
            packed[e, b] = codes[p, b]
        for k in range(d):
            if new_pos[e, k]:
                u = n_units + k
                packed[e, u >> 3] |= np.uint8(128 >> (u & 7))
        if maps:
            for k in range(d):
                factor = 1.0 if new_pos[e, k] else slope
                for a in range(3):
                    aff[a, e, k] = planes[a, p, k] * factor
    return 0, new_ptr, new_xy, aff, packed, new_group
