"""The torch state of a partition being cut, and the index tools that keep the cut vectorised.

A partition Omega_{1|l} is held as convex polygons in CSR form (``ptr`` into ``verts``,
counter-clockwise) with each polygon's affine map z_l(x) = J_P x + o_P (:class:`Mesh`).  The
helpers do the ragged (per-polygon) indexing and the exact grouping of int64 keys that the cut
of a layer (:mod:`bnviz.core.cut`) needs, with no Python loop over polygons, points or units.
"""

from __future__ import annotations

import torch

__all__ = ["PACK", "Mesh", "box_mesh", "group_first", "lexsort", "pack_local", "ragged_arange",
           "starts"]

PACK = 31  # sign trits packed per int64 word (2 bits each, sign bit left clear)


def ragged_arange(counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For groups of the given sizes: the group of each element and its offset inside it."""
    n = counts.numel()
    group = torch.repeat_interleave(torch.arange(n, device=counts.device), counts)
    first = torch.cumsum(counts, 0) - counts
    offset = torch.arange(group.numel(), device=counts.device) - first[group]
    return group, offset


def pack_local(point: torch.Tensor, local: torch.Tensor, sign: torch.Tensor, n_points: int,
               n_words: int) -> torch.Tensor:
    """Pack each point's signs over its polygon's crossing lines into int64 words (exact keys).

    Entry (point, local index i, sign s) contributes (s + 1) * 4^(i mod 31) to word i // 31.
    """
    words = torch.zeros(n_points * n_words, dtype=torch.int64, device=point.device)
    shift = (local % PACK) * 2
    value = (sign.to(torch.int64) + 1) << shift
    words.index_add_(0, point * n_words + local // PACK, value)
    return words.view(n_points, n_words)


def _fuse_columns(keys: torch.Tensor) -> torch.Tensor:
    """Fuse non-negative int64 key columns into as few columns as their bit widths allow
    (same grouping, fewer sorts)."""
    if keys.shape[0] == 0 or keys.shape[1] == 1:
        return keys
    keys = keys - keys.amin(0)  # non-negative, same equalities
    bits = [max(1, int(v).bit_length()) for v in keys.amax(0).tolist()]
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
    return torch.stack(fused, 1)


def group_first(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact grouping of equal rows of ``keys`` (int64): (first row of each group, group of each
    row).  Lexicographic stable sorts, one per column: ``torch.unique(dim=0)`` is row-by-row
    slow on the CPU."""
    n = keys.shape[0]
    keys = _fuse_columns(keys)
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


def lexsort(primary: torch.Tensor, secondary: torch.Tensor) -> torch.Tensor:
    """Permutation sorting by ``primary`` then ``secondary`` (two stable sorts)."""
    order = torch.sort(secondary, stable=True).indices
    return order[torch.sort(primary[order], stable=True).indices]


def starts(counts: torch.Tensor) -> torch.Tensor:
    """Offset of each group's first element, for groups of the given sizes (CSR starts)."""
    return torch.cumsum(counts, 0) - counts


class Mesh:
    """Torch state of a partition: polygons in CSR form plus each polygon's affine map.

    ``aff`` (3, R, D): z(x) = aff[0] * x + aff[1] * y + aff[2] on each polygon.  ``group``
    (R,): which realisation of the BN statistics a polygon belongs to, so that K mini-batch
    realisations of one network are cut in one pass (Figure 6); 0 everywhere for one network.
    """

    def __init__(self, ptr, verts, aff, codes, group):
        self.ptr, self.verts, self.aff, self.codes = ptr, verts, aff, codes
        self.group = group
        self.counts = ptr[1:] - ptr[:-1]
        r, v = self.counts.numel(), verts.shape[0]
        dev = verts.device
        self.poly = torch.repeat_interleave(torch.arange(r, device=dev), self.counts)
        ar = torch.arange(v, device=dev)
        self.nxt = ar + 1
        self.nxt[ptr[1:] - 1] = ptr[:-1]
        self.prv = ar - 1
        self.prv[ptr[:-1]] = ptr[1:] - 1

    @property
    def n_regions(self) -> int:
        return self.ptr.numel() - 1


def box_mesh(box: tuple[float, float, float, float], dev: torch.device | str,
             groups: int = 1) -> Mesh:
    """The box, once per realisation group, counter-clockwise, with the identity map z = x."""
    x0, x1, y0, y1 = box
    corners = torch.tensor([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=torch.float64,
                           device=dev)
    verts = corners.repeat(groups, 1)
    ptr = torch.arange(groups + 1, dtype=torch.int64, device=dev) * 4
    aff = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 0.0]]], dtype=torch.float64,
                       device=dev).repeat(1, groups, 1)  # z = x
    codes = torch.zeros((groups, 0), dtype=torch.bool, device=dev)
    return Mesh(ptr, verts, aff, codes, torch.arange(groups, device=dev))

