"""The exact merge of millions of regions in the memory of a few thousand: only the pieces on
a tile line are merged.

Why that is the whole merge.  A region of the window is one convex set (one full code:
:mod:`bnviz.slices.tiles`), and a tile's piece of it is that set cut to the tile.  A piece
with no point on an inner side of its tile (a tile line) is the whole set: a convex set that
reached past the tile would cross the tile's boundary there, and its piece would touch it.
So per layer the window's regions are the tile pieces off the tile lines, one each, as cut,
and the merge by full code (:func:`bnviz.slices.tilemerge.merge_tiles`) of the pieces on
them, the *seams*.  The same holds for the decision cells (a last-layer region and a class)
and for the facets and decision segments (each lies in one region: a segment on a tile
line lies in a region on it).  The seams are closed under parents: a piece on a tile line
lies in a parent on it (forced below all the same, for the tolerance's sake), so the seams
of every tile make a partition of the seams' union, layer under layer, which ``merge_tiles``
takes as it takes whole tiles.

A piece is on a tile line when a vertex (a segment: an end) lies within ``SEAM_TOL`` times
the window's scale (tilemerge's D) of one: ten times the distance at which ``merge_tiles``
joins segments across a line.  Taking a piece that is not on one costs nothing but its
memory (it merges alone and keeps its polygon); missing one that is would count a region
twice, so the test errs wide.

:func:`seam_slice` is what a slice job's worker computes from a tile it cut (a few per cent
of its pieces, stored in the tile's shard: :mod:`bnviz.slices.tile_store`), and
:func:`merge_seams` the merge of every tile's seams with the counts of the rest: per layer,
the untiled cut's regions and facets, the decision cells and boundary segments, exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnviz.core.partition import Polygons
from bnviz.slices.engine import Slice, SliceLayer
from bnviz.slices.tilemerge import DELTA, merge_tiles

__all__ = ["SEAM_TOL", "Counts", "merge_seams", "seam_slice", "subset_polygons"]

#: A piece is on a tile line within this, relative to the window's scale (module docstring).
SEAM_TOL = 1e4 * DELTA

Window = tuple[float, float, float, float]


@dataclass(frozen=True)
class Counts:
    """What a slice holds, per nonlinear layer (regions, facets) and for its decision cells
    and boundary segments: of a tile's pieces off the tile lines, or of a whole window."""

    regions: list[int]
    facets: list[int]
    cells: int
    segments: int

    def __add__(self, other: Counts) -> Counts:
        return Counts([a + b for a, b in zip(self.regions, other.regions, strict=True)],
                      [a + b for a, b in zip(self.facets, other.facets, strict=True)],
                      self.cells + other.cells, self.segments + other.segments)

    @staticmethod
    def of(s: Slice) -> Counts:
        return Counts([len(lay.regions) for lay in s.layers], [len(lay.facets) for lay in s.layers],
                      len(s.predicted), len(s.decision_boundary))


def _near(points: np.ndarray, rect: Window, window: Window, tol: float) -> np.ndarray:
    """(n,) whether each of the (n, 2) points lies within ``tol`` of a side of the tile
    ``rect`` that is not the window's own (a tile line)."""
    near = np.zeros(len(points), bool)
    for side, axis in ((0, 0), (1, 0), (2, 1), (3, 1)):
        if rect[side] != window[side]:
            near |= np.abs(points[:, axis] - rect[side]) <= tol
    return near


def _polygons_near(polys: Polygons, rect: Window, window: Window, tol: float) -> np.ndarray:
    """(R,) whether each polygon has a vertex on a tile line."""
    if len(polys) == 0:
        return np.zeros(0, bool)
    near = _near(polys.vertices, rect, window, tol).astype(np.int64)
    return np.add.reduceat(near, polys.ptr[:-1]) > 0


def _segments_near(seg: np.ndarray, rect: Window, window: Window, tol: float) -> np.ndarray:
    """(S,) whether each segment has an end on a tile line."""
    ends = seg.reshape(-1, 2)
    return _near(ends, rect, window, tol).reshape(-1, 2).any(1)


def subset_polygons(polys: Polygons, idx: np.ndarray) -> Polygons:
    """The polygons ``idx`` of ``polys`` (in that order), with their codes."""
    counts = np.diff(polys.ptr)[idx]
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    first = np.repeat(polys.ptr[idx] - ptr[:-1], counts) + np.arange(int(ptr[-1]))
    if polys.code_index is not None:
        return Polygons(ptr, polys.vertices[first], polys.code_rows, polys.n_units,
                        polys.code_index[idx])
    return Polygons(ptr, polys.vertices[first], polys.code_rows[idx], polys.n_units)


def seam_slice(s: Slice, rect: Window, window: Window) -> tuple[Slice, list[np.ndarray], Counts]:
    """A tile's slice ``s`` of ``rect`` (a tile of ``window``) reduced to its seams: the pieces
    on a tile line and those under them (module docstring), their facets, cells and boundary
    segments, indices renumbered within the seams.  Returns the reduced slice, each layer's
    mask of its seam regions, and the counts of everything else (whole, as cut)."""
    a0, a1, b0, b1 = window
    tol = SEAM_TOL * max(abs(a0), abs(a1), abs(b0), abs(b1), a1 - a0, b1 - b0)
    layers = s.layers
    seam = [_polygons_near(lay.regions, rect, window, tol) for lay in layers]
    last = seam[-1]
    cells_on = _polygons_near(s.predicted, rect, window, tol)
    last[s.predicted_parents[cells_on]] = True
    last[s.boundary_parents[_segments_near(s.decision_boundary, rect, window, tol)]] = True
    for k in range(len(layers) - 1, 0, -1):  # under a seam, a seam (so are a line's facets)
        lay = layers[k]
        facets_on = _segments_near(lay.facets, rect, window, tol)
        seam[k - 1][lay.facet_parents[facets_on]] = True
        seam[k - 1][lay.parents[seam[k]]] = True
    keep_prev, renumber = np.ones(1, bool), np.zeros(1, np.int64)  # the tile: one region, 0
    reduced, inside = [], Counts([], [], 0, 0)
    for k, lay in enumerate(layers):
        idx = np.flatnonzero(seam[k])
        f_idx = np.flatnonzero(keep_prev[lay.facet_parents])
        reduced.append(SliceLayer(
            lay.name, lay.kind, lay.shape, subset_polygons(lay.regions, idx),
            renumber[lay.parents[idx]], lay.facets.reshape(-1, 4)[f_idx],
            lay.facet_units[f_idx], renumber[lay.facet_parents[f_idx]], lay.window_size))
        inside.regions.append(len(lay.regions) - len(idx))
        inside.facets.append(len(lay.facets) - len(f_idx))
        keep_prev = seam[k]
        renumber = np.full(len(lay.regions), -1, np.int64)
        renumber[idx] = np.arange(len(idx))
    c_idx = np.flatnonzero(keep_prev[s.predicted_parents])
    b_idx = np.flatnonzero(keep_prev[s.boundary_parents])
    out = Slice(s.plane, s.window, reduced, s.decision_boundary.reshape(-1, 4)[b_idx],
                subset_polygons(s.predicted, c_idx), s.predicted_class[c_idx], s.seconds,
                s.device, renumber[s.predicted_parents[c_idx]],
                renumber[s.boundary_parents[b_idx]])
    inside = Counts(inside.regions, inside.facets, len(s.predicted) - len(c_idx),
                    len(s.decision_boundary) - len(b_idx))
    return out, seam, inside


def merge_seams(seams: list[Slice], rects: list[Window], window: Window,
                inside: Counts) -> tuple[Slice, Counts]:
    """Every tile's seams (:func:`seam_slice`, in the order of ``rects``) merged by full code
    (:func:`bnviz.slices.tilemerge.merge_tiles`), and the window's counts: those of the merged
    seams plus ``inside``, the tiles' pieces off the tile lines.  One tile: no seams, its own
    counts."""
    if len(rects) == 1:
        return seams[0], inside + Counts.of(seams[0])
    merged = merge_tiles(seams, rects, window, max_regions=2**62)
    return merged, inside + Counts.of(merged)
