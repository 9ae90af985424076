"""The exact cut of a max over affine functions: max pooling's argmax switches, and the
decision boundary where the logits' argmax switches (compiled with numba where the cut is
not small: :data:`SMALL_CUT_REGIONS`).

Inside a region P of the partition every pooling input is affine in the plane's coordinates,
f_i(a, b) = g_i . (a, b) + c_i, so the argmax of one pooling window is constant on convex
cells {f_i >= f_j for all j} of P (the upper envelope's cells).  This kernel splits every
polygon into the common refinement of the cells of all its windows: for a window whose argmax
is not constant on P, each current piece Q is clipped, for every candidate i, by the
half-planes f_i - f_j >= 0 (Sutherland-Hodgman on convex polygons, as
:mod:`bnviz.core.clipping` clips a ReLU layer), and each non-empty result is a piece of the
next refinement.  A window whose argmax is constant on P (one input >= the others at every
corner of P, hence everywhere on P: the differences are affine) costs one corner test.

Tolerances are the ReLU cut's (:data:`bnviz.core.crossings.RTOL`): f_i - f_j counts as zero at
a corner when it is within RTOL of the terms' scale |g| . (bx, by) + |c| of both functions;
a clipped piece with no corner strictly inside is empty (no area threshold is used).  Two
inputs with the same affine function on P (after a ReLU, inactive inputs are all exactly 0)
tie everywhere: the first of them wins, as torch's and ONNX's max pooling report the first
index of the maximum.

Each edge of a cell that lies on a line f_i = f_j between cell i and a later candidate j is
a switch segment: the facets of a max pooling layer, the decision boundary of a head.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from bnviz.core.crossings import RTOL
from bnviz.core.rows import grow_rows as _grow_rows
from bnviz.slices.slice_net import pool_out_shape

if TYPE_CHECKING:
    from bnviz.slices.graph import Op

__all__ = ["SMALL_CUT_REGIONS", "max_cells", "pool_windows", "warm_up"]

#: Polygons up to which the cells are found by the kernel's own Python (no numba): loading
#: numba and its compiled kernels costs a process 0.85 s (import 0.34 s with scipy, cached
#: kernels 0.5 s, bench/slice.py's fixed cost), the uncompiled kernel about 1.6 ms a polygon
#: of the residual net (3 polygons: 17 ms against 13 ms compiled; 50: 75 ms against 18 ms).
#: The engine's ReLU cut takes its vectorised path below the same count.  Both paths give
#: the same cells: they are the same code.
SMALL_CUT_REGIONS = 64

_compile_lock = threading.Lock()
_compiled: Callable[..., Any] | None = None


def _clip(xy: Any, n: int, gx: float, gy: float, gc: float, tt: float, out: Any) -> int:
    """The convex polygon ``xy[:n]`` clipped to gx a + gy b + gc >= 0 (within ``tt``) into
    ``out``; returns its corner count (0: empty, i.e. no corner strictly positive)."""
    pos = neg = False
    for v in range(n):
        h = gx * xy[v, 0] + gy * xy[v, 1] + gc
        if h > tt:
            pos = True
        elif h < -tt:
            neg = True
    if not pos:
        return 0
    if not neg:
        out[:n] = xy[:n]
        return n
    m = 0
    for v in range(n):
        w = v + 1 if v + 1 < n else 0
        hv = gx * xy[v, 0] + gy * xy[v, 1] + gc
        hw = gx * xy[w, 0] + gy * xy[w, 1] + gc
        sv = 1 if hv > tt else (-1 if hv < -tt else 0)
        sw = 1 if hw > tt else (-1 if hw < -tt else 0)
        if sv >= 0:
            out[m] = xy[v]
            m += 1
        if sv * sw < 0:  # a strict sign change: the point, interpolated from the positive end
            if sv > 0:
                t = hv / (hv - hw)
                out[m, 0] = xy[v, 0] + t * (xy[w, 0] - xy[v, 0])
                out[m, 1] = xy[v, 1] + t * (xy[w, 1] - xy[v, 1])
            else:
                t = hw / (hw - hv)
                out[m, 0] = xy[w, 0] + t * (xy[v, 0] - xy[w, 0])
                out[m, 1] = xy[w, 1] + t * (xy[v, 1] - xy[w, 1])
            m += 1
    return m


def _max_cells(ptr: Any, verts: Any, planes: Any, windows: Any, bx: float, by: float,
               max_regions: int) -> Any:
    """Split every polygon (``ptr`` into ``verts``, CCW) by the argmax cells of every window.

    ``planes`` (3, R, D): the inputs' affine maps on each polygon (d/da, d/db, offset);
    ``windows`` (W, K) int64: each window's inputs (indices into D; -1 pads a window with
    fewer inputs, as padding never wins a max).  Returns (status: 0 done, 1 over
    ``max_regions`` pieces; ptr, verts of the pieces; the polygon each piece lies in; the
    argmax of every window on each piece (position in the window, int32); the switch
    segments (S, 4); their windows; the polygon each lies in).
    """
    r = ptr.shape[0] - 1
    n_win, k = windows.shape
    out_ptr = np.zeros(r + 1, np.int64)
    out_xy = np.empty((max(16, verts.shape[0]), 2))
    out_parent = np.empty(max(4, r), np.int64)
    out_arg = np.empty((max(4, r), n_win), np.int32)
    seg = np.empty((16, 4))
    seg_win = np.empty(16, np.int64)
    seg_piece = np.empty(16, np.int64)
    n_out = n_xy = n_seg = 0
    # per polygon: the current pieces (ptr into xy, argmax rows) and the next ones
    cur_xy = np.empty((64, 2))
    cur_ptr = np.zeros(2, np.int64)
    cur_arg = np.empty((1, n_win), np.int32)
    scratch = np.empty((64, 2))
    tmp = np.empty((64, 2))
    vals = np.empty((k, 3))
    pos = np.empty(k, np.int64)  # each candidate's position in its window
    for p in range(r):
        c0, c1 = ptr[p], ptr[p + 1]
        nc = c1 - c0
        cur_xy = _grow_rows(cur_xy, nc)
        cur_xy[:nc] = verts[c0:c1]
        cur_ptr = np.zeros(2, np.int64)
        cur_ptr[1] = nc
        cur_arg = np.zeros((1, n_win), np.int32)
        n_pieces = 1
        for w in range(n_win):
            # candidates and the corner test on P: the first input >= all others everywhere
            nk = 0
            for i in range(k):
                u = windows[w, i]
                if u < 0:
                    continue
                vals[nk, 0] = planes[0, p, u]
                vals[nk, 1] = planes[1, p, u]
                vals[nk, 2] = planes[2, p, u]
                pos[nk] = i
                nk += 1
            if nk == 0:  # a window wholly in the padding (refused by pool_windows)
                continue
            winner = -1
            for i in range(nk):
                dominates = True
                for j in range(nk):
                    if j == i:
                        continue
                    gx, gy = vals[i, 0] - vals[j, 0], vals[i, 1] - vals[j, 1]
                    gc = vals[i, 2] - vals[j, 2]
                    tt = RTOL * (abs(vals[i, 0]) * bx + abs(vals[i, 1]) * by + abs(vals[i, 2])
                                 + abs(vals[j, 0]) * bx + abs(vals[j, 1]) * by
                                 + abs(vals[j, 2]))
                    for v in range(c0, c1):
                        if gx * verts[v, 0] + gy * verts[v, 1] + gc < -tt:
                            dominates = False
                            break
                    if not dominates:
                        break
                if dominates:
                    winner = i
                    break
            if winner >= 0:
                for q in range(n_pieces):
                    cur_arg[q, w] = pos[winner]
                continue
            # split every piece into its cells
            nxt_xy = np.empty((max(64, 2 * cur_ptr[n_pieces]), 2))
            nxt_ptr = np.zeros(n_pieces * nk + 1, np.int64)
            nxt_arg = np.empty((n_pieces * nk, n_win), np.int32)
            n_next = 0
            for q in range(n_pieces):
                q0, nq = cur_ptr[q], cur_ptr[q + 1] - cur_ptr[q]
                for i in range(nk):
                    scratch = _grow_rows(scratch, nq + 2 * nk + 2)
                    tmp = _grow_rows(tmp, nq + 2 * nk + 2)
                    scratch[:nq] = cur_xy[q0 : q0 + nq]
                    m = nq
                    for j in range(nk):
                        if j == i or m == 0:
                            continue
                        gx, gy = vals[i, 0] - vals[j, 0], vals[i, 1] - vals[j, 1]
                        gc = vals[i, 2] - vals[j, 2]
                        tt = RTOL * (abs(vals[i, 0]) * bx + abs(vals[i, 1]) * by
                                     + abs(vals[i, 2]) + abs(vals[j, 0]) * bx
                                     + abs(vals[j, 1]) * by + abs(vals[j, 2]))
                        if abs(gx) * bx + abs(gy) * by + abs(gc) <= tt:  # the same function
                            if j < i:
                                m = 0  # the first of equal inputs wins
                            continue
                        m = _clip(scratch, m, gx, gy, gc, tt, tmp)
                        scratch, tmp = tmp, scratch
                    if m < 3:
                        continue
                    # switch segments: edges on a line f_i = f_j with a later candidate j
                    for e in range(m):
                        f = e + 1 if e + 1 < m else 0
                        for j in range(i + 1, nk):
                            gx, gy = vals[i, 0] - vals[j, 0], vals[i, 1] - vals[j, 1]
                            gc = vals[i, 2] - vals[j, 2]
                            tt = RTOL * (abs(vals[i, 0]) * bx + abs(vals[i, 1]) * by
                                         + abs(vals[i, 2]) + abs(vals[j, 0]) * bx
                                         + abs(vals[j, 1]) * by + abs(vals[j, 2]))
                            if abs(gx) * bx + abs(gy) * by + abs(gc) <= tt:
                                continue
                            he = gx * scratch[e, 0] + gy * scratch[e, 1] + gc
                            hf = gx * scratch[f, 0] + gy * scratch[f, 1] + gc
                            if abs(he) <= tt and abs(hf) <= tt:
                                seg = _grow_rows(seg, n_seg + 1)
                                seg_win = _grow_rows(seg_win, n_seg + 1)
                                seg_piece = _grow_rows(seg_piece, n_seg + 1)
                                seg[n_seg, 0], seg[n_seg, 1] = scratch[e, 0], scratch[e, 1]
                                seg[n_seg, 2], seg[n_seg, 3] = scratch[f, 0], scratch[f, 1]
                                seg_win[n_seg] = w
                                seg_piece[n_seg] = p
                                n_seg += 1
                                break
                    start = nxt_ptr[n_next]
                    nxt_xy = _grow_rows(nxt_xy, start + m)
                    nxt_xy[start : start + m] = scratch[:m]
                    nxt_ptr[n_next + 1] = start + m
                    nxt_arg[n_next] = cur_arg[q]
                    nxt_arg[n_next, w] = pos[i]
                    n_next += 1
            if n_out + n_next > max_regions:
                return (1, out_ptr[:1], out_xy[:0], out_parent[:0], out_arg[:0], seg[:0],
                        seg_win[:0], seg_piece[:0])
            cur_xy, cur_ptr, cur_arg, n_pieces = nxt_xy, nxt_ptr, nxt_arg, n_next
        if n_out + n_pieces > max_regions:
            return (1, out_ptr[:1], out_xy[:0], out_parent[:0], out_arg[:0], seg[:0],
                    seg_win[:0], seg_piece[:0])
        # emit the pieces of P
        out_parent = _grow_rows(out_parent, n_out + n_pieces)
        out_arg = _grow_rows(out_arg, n_out + n_pieces)
        out_ptr = _grow_rows(out_ptr, n_out + n_pieces + 1)
        total = cur_ptr[n_pieces]
        out_xy = _grow_rows(out_xy, n_xy + total)
        out_xy[n_xy : n_xy + total] = cur_xy[:total]
        for q in range(n_pieces):
            out_parent[n_out + q] = p
            out_arg[n_out + q] = cur_arg[q]
            out_ptr[n_out + q + 1] = n_xy + cur_ptr[q + 1]
        n_out += n_pieces
        n_xy += total
    return (0, out_ptr[: n_out + 1].copy(), out_xy[:n_xy].copy(), out_parent[:n_out].copy(),
            out_arg[:n_out].copy(), seg[:n_seg].copy(), seg_win[:n_seg].copy(),
            seg_piece[:n_seg].copy())


def _jitted() -> Callable[..., Any]:
    """The kernel compiled by numba (loaded from its cache on disk, or compiled once per
    machine), imported only here: its helpers are jitted too and bound in its globals."""
    global _compiled
    with _compile_lock:
        if _compiled is None:
            from numba import njit

            from bnviz.core.clipping import _JIT
            from bnviz.core.clipping import _grow_rows as grow_jitted

            scope = dict(globals(), _grow_rows=grow_jitted)

            def bound(fn: types.FunctionType) -> types.FunctionType:
                return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__)

            scope["_clip"] = njit(**_JIT)(bound(_clip))
            _compiled = njit(**_JIT)(bound(_max_cells))
    return _compiled


def max_cells(ptr: Any, verts: Any, planes: Any, windows: Any, bx: float, by: float,
              max_regions: int) -> Any:
    """:func:`_max_cells`, compiled, or run as Python where it is small (at most
    :data:`SMALL_CUT_REGIONS` polygons) and this process has not loaded numba for it."""
    if _compiled is None and len(ptr) - 1 <= SMALL_CUT_REGIONS:
        return _max_cells(ptr, verts, planes, windows, bx, by, max_regions)
    return _jitted()(ptr, verts, planes, windows, bx, by, max_regions)


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel for the types the slice engine passes."""
    ptr = np.array([0, 4])
    verts = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    planes = np.array([[[1.0, -1.0]], [[0.0, 0.5]], [[0.1, 0.2]]])
    _jitted()(ptr, verts, planes, np.array([[0, 1]], np.int64), 1.0, 1.0, 100)


def pool_windows(op: Op, shape: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, int, int]]:
    """Each output element's inputs (C * Ho * Wo, kh * kw) as indices into the flattened input
    (C * H * W), -1 where the window covers padding (which never wins a max), and the output
    shape (C, Ho, Wo).  ValueError for padding as wide as the kernel (a window could lie in
    the padding alone)."""
    c, h, w = shape
    (kh, kw), (sh, sw) = op.attrs["kernel"], op.attrs["stride"]
    top, left, bottom, right = op.attrs["pads"]
    if max(top, bottom) >= kh or max(left, right) >= kw:
        raise ValueError(f"{op.name}: padding as wide as the pooling kernel is not supported")
    _, ho, wo = pool_out_shape(op, shape)
    rows = (np.arange(ho) * sh - top)[:, None] + np.arange(kh)[None]  # (Ho, kh)
    cols = (np.arange(wo) * sw - left)[:, None] + np.arange(kw)[None]  # (Wo, kw)
    rr = rows[:, None, :, None]
    cc = cols[None, :, None, :]
    valid = (rr >= 0) & (rr < h) & (cc >= 0) & (cc < w)  # (Ho, Wo, kh, kw)
    flat = np.where(valid, rr * w + cc, -1)
    idx = np.where(valid[None], np.arange(c)[:, None, None, None, None] * h * w + flat[None], -1)
    return idx.reshape(c * ho * wo, kh * kw).astype(np.int64), (c, ho, wo)
