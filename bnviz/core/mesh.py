"""The state of a partition being cut, and the index tools that keep the cut vectorised.

A partition Omega_{1|l} is held as convex polygons in CSR form (``ptr`` into ``verts``,
counter-clockwise) with each polygon's affine map z_l(x) = J_P x + o_P (:class:`Mesh`).  The
helpers do the ragged (per-polygon) indexing and the exact grouping of int64 keys that the cut
of a layer (:mod:`bnviz.core.cut`) needs, with no Python loop over polygons, points or units.
Everything here runs on numpy arrays or torch tensors alike (:mod:`bnviz.core.arrays`): each
helper works in the library of the arrays it is given.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from bnviz.core.arrays import Ops, ops_of, torch_ops

__all__ = ["PACK", "Mesh", "box_mesh", "group_first", "lexsort", "pack_local", "ragged_arange",
           "starts"]

PACK = 31  # sign trits packed per int64 word (2 bits each, sign bit left clear)


def ragged_arange(counts: Any) -> tuple[Any, Any]:
    """For groups of the given sizes: the group of each element and its offset inside it."""
    ops = ops_of(counts)
    group = ops.repeat(ops.arange(len(counts)), counts)
    first = ops.cumsum(counts) - counts
    offset = ops.arange(len(group)) - first[group]
    return group, offset


def pack_local(point: Any, local: Any, sign: Any, n_points: int, n_words: int) -> Any:
    """Pack each point's signs over its polygon's crossing lines into int64 words (exact keys).

    Entry (point, local index i, sign s) contributes (s + 1) * 4^(i mod 31) to word i // 31.
    """
    ops = ops_of(point)
    value = (ops.to(sign, ops.int64) + 1) << ((local % PACK) * 2)
    index = point if n_words == 1 else point * n_words + local // PACK
    return ops.scatter_add(n_points * n_words, index, value).reshape(n_points, n_words)


def _fuse_columns(ops: Ops, keys: Any) -> Any:
    """Fuse non-negative int64 key columns into as few columns as their bit widths allow
    (same grouping, fewer sorts)."""
    if keys.shape[0] == 0 or keys.shape[1] == 1:
        return keys
    keys = keys - ops.amin(keys, 0)  # non-negative, same equalities
    bits = [max(1, int(v).bit_length()) for v in ops.amax(keys, 0).tolist()]
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
    return fused[0][:, None] if len(fused) == 1 else ops.stack(fused, 1)


def group_first(keys: Any, stable: bool = True) -> tuple[Any, Any]:
    """Exact grouping of equal rows of ``keys`` (int64): (first row of each group, group of each
    row); groups are numbered in the order of their keys.  Lexicographic sorts, one per column:
    ``torch.unique(dim=0)`` is row-by-row slow on the CPU, and numpy's lexsort is slower than
    these sorts on int64.  With ``stable=False`` the "first" row is some row of the group
    (faster: the last column's sort may be unstable), the groups and their order the same."""
    ops = ops_of(keys)
    n = keys.shape[0]
    keys = _fuse_columns(ops, keys)
    order = ops.argsort(keys[:, -1], stable)
    for col in range(keys.shape[1] - 2, -1, -1):
        order = order[ops.argsort(keys[order, col])]
    sk = keys[order]
    new_group = ops.zeros(n, ops.bool)
    if n:
        new_group[0] = True
        new_group[1:] = (sk[1:] != sk[:-1]).any(1)
    group_sorted = ops.cumsum(new_group) - 1
    inverse = ops.zeros(n, ops.int64)
    inverse[order] = group_sorted
    first = order[new_group]  # stable sorts: the first row of a group is its smallest index
    return first, inverse


def lexsort(primary: Any, secondary: Any) -> Any:
    """Permutation sorting by ``primary`` then ``secondary`` (two stable sorts)."""
    ops = ops_of(primary)
    order = ops.argsort(secondary)
    return order[ops.argsort(primary[order])]


def starts(counts: Any) -> Any:
    """Offset of each group's first element, for groups of the given sizes (CSR starts)."""
    return ops_of(counts).cumsum(counts) - counts


class Mesh:
    """A partition's polygons in CSR form plus each polygon's affine map, in numpy or torch.

    ``aff`` (3, R, D): z(x) = aff[0] * x + aff[1] * y + aff[2] on each polygon.  ``group``
    (R,): which realisation of the BN statistics a polygon belongs to, so that K mini-batch
    realisations of one network are cut in one pass (Figure 6); 0 everywhere for one network.
    ``ops`` is the array library that holds them (:mod:`bnviz.core.arrays`).
    """

    def __init__(self, ptr: Any, verts: Any, aff: Any, codes: Any, group: Any,
                 packed_codes: Any = None, n_units: int | None = None) -> None:
        self.ptr, self.verts, self.aff = ptr, verts, aff
        self.group = group
        self.ops = ops_of(verts)
        if codes is not None:
            self.__dict__["codes"] = codes
            n_units = codes.shape[1]
        self.n_units = n_units  # (given with packed codes only: unpacked when asked for)
        if packed_codes is not None:  # packed by the cut that made the codes
            self.__dict__["packed_codes"] = packed_codes

    @functools.cached_property
    def codes(self) -> Any:
        """(R, U) bool activation patterns (given, or unpacked from ``packed_codes``)."""
        bits = np.unpackbits(self.packed_codes, axis=1, count=self.n_units).astype(bool)
        return self.ops.asarray(bits)

    @functools.cached_property
    def packed_codes(self) -> np.ndarray:
        """The codes as numpy, packed 8 units a byte along the units (np.packbits)."""
        return np.packbits(self.ops.numpy(self.codes), axis=1)

    @functools.cached_property
    def counts(self) -> Any:
        """The number of corners of each polygon."""
        return self.ptr[1:] - self.ptr[:-1]

    @functools.cached_property
    def poly(self) -> Any:
        """The polygon of each corner."""
        return self.ops.repeat(self.ops.arange(len(self.counts)), self.counts)

    @property
    def n_regions(self) -> int:
        return len(self.ptr) - 1

    @functools.cached_property
    def nxt(self) -> Any:
        """The next corner of each corner (counter-clockwise), as an index into ``verts``."""
        nxt = self.ops.arange(self.verts.shape[0]) + 1
        nxt[self.ptr[1:] - 1] = self.ptr[:-1]
        return nxt

    @functools.cached_property
    def prv(self) -> Any:
        """The previous corner of each corner."""
        prv = self.ops.arange(self.verts.shape[0]) - 1
        prv[self.ptr[:-1]] = self.ptr[1:] - 1
        return prv

    def to(self, ops: Ops) -> Mesh:
        """The same mesh held by ``ops`` (numpy to torch: no copy on the CPU)."""
        if ops is self.ops:
            return self
        return Mesh(*(ops.asarray(a) for a in (self.ptr, self.verts, self.aff, self.codes,
                                               self.group)))


def box_mesh(box: tuple[float, float, float, float], dev: Any = None,
             groups: int = 1, ops: Ops | None = None) -> Mesh:
    """The box, once per realisation group, counter-clockwise, with the identity map z = x;
    held by ``ops`` (default: torch on ``dev``)."""
    if ops is None:
        import torch

        ops = torch_ops(torch.device(dev if dev is not None else "cpu"))
    x0, x1, y0, y1 = box
    corners = [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]
    verts = ops.asarray(corners * groups, ops.float64)
    ptr = ops.arange(groups + 1) * 4
    aff = ops.asarray([[[1.0, 0.0]] * groups, [[0.0, 1.0]] * groups, [[0.0, 0.0]] * groups],
                      ops.float64)  # z = x
    codes = ops.zeros((groups, 0), ops.bool)
    return Mesh(ptr, verts, aff, codes, ops.arange(groups))
