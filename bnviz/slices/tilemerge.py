"""The exact merge of a slice cut as tiles (:mod:`bnviz.slices.tiles`): one region per full
code, its polygon the convex hull of its pieces, the facets and the decision boundary joined
across the tile lines.  All of it vectorised over the regions (numpy grouping: np.unique on
code rows, lexsort); the only Python loops run over layers, tiles and the few rounds of the
hull's filter.

Why one code is one region, and its polygon a hull: see :mod:`bnviz.slices.tiles`.  The
tolerances here are lengths, ``DELTA`` times the window's scale D = max(bx, by, width,
height):

* a merged polygon is the convex hull of its pieces' vertices, found by sorting them by
  angle about their mean (strictly inside the hull) and dropping, round after round, every
  vertex within D * DELTA of its predecessor or not outside the line through its two
  neighbours by more than D * DELTA (points on the tile lines, inside the region or on its
  edges).  No extreme point is ever dropped that way (it lies outside the triangle of the
  mean and its two neighbours), and the result is checked: the hull's area equals the sum of
  the pieces' areas within ``AREA_RTOL`` of it plus DELTA * D^2, else ValueError (the
  pieces would not make one convex polygon: the claim of one code, one convex region,
  broken);
* a facet or decision segment that a tile line cut is joined again.  At each junction
  (endpoints of one key, within D * 1e3 DELTA of each other on a tile line inside the
  window; the key: the unit or window and the merged region, for the decision boundary the
  region) the pieces on one line through it (angles within ``ANGLE_TOL``) are paired one to
  one across it, from different tiles, and checked collinear within D * 1e3 DELTA; a chain
  of paired pieces is one segment, from the first to the last of its endpoints along the
  line.  So a ReLU layer's facets (one chord per unit and region) and the decision boundary
  (one segment per region and pair of classes) are the untiled cut's, one for one.  A
  pooling layer's facets are the same points, but the untiled cut splits a cell's edge where
  another window's switch meets it: where that lies on a tile line (the ties' lines through
  the origin, tests/slices/test_ties.py) the merge joins the two, one facet fewer.
"""

from __future__ import annotations

import numpy as np

from bnviz.core.limits import PartitionTooLarge
from bnviz.core.partition import Polygons, join_polygons
from bnviz.slices.engine import Slice, SliceLayer

__all__ = ["merge_tiles"]

#: Lengths relative to the window's scale below which points coincide or are collinear.
DELTA = 1e-11
#: Pieces meeting at a junction lie on one line when their angles agree to this (radians).
ANGLE_TOL = 1e-7
#: A merged region's area equals its pieces' sum to this (plus DELTA * D^2).
AREA_RTOL = 1e-9

Window = tuple[float, float, float, float]


def merge_tiles(tiles: list[Slice], rects: list[Window], window: Window,
                max_regions: int = 2_000_000, seconds: float = 0.0) -> Slice:
    """One slice of ``window`` from the slices of its tiles ``rects`` (each cut with the
    whole window's tolerance scale): per layer one region per full code, the facets, the
    decision cells and boundary merged as the module docstring says."""
    a0, a1, b0, b1 = window
    scale = max(abs(a0), abs(a1), abs(b0), abs(b1), a1 - a0, b1 - b0)
    geo = _Geometry(np.asarray(rects, np.float64), np.asarray(window, np.float64), scale)
    n_tiles = len(tiles)
    ids = np.zeros(n_tiles, np.int64)  # the window: one region (0) in every tile
    offsets = np.arange(n_tiles + 1, dtype=np.int64)
    layers = []
    for i, first in enumerate(tiles[0].layers):
        parts = [t.layers[i] for t in tiles]
        counts = np.array([len(p.regions) for p in parts])
        tile_of = np.repeat(np.arange(n_tiles), counts)
        parents = ids[np.concatenate([p.parents for p in parts]) + offsets[tile_of]]
        regions = join_polygons([p.regions for p in parts])
        if regions.code_index is None:  # tiles read back from their shards
            regions = regions.with_shared_codes()
        group, n = _groups(parents, regions.code_index[:, None])  # one table of distinct codes
        if n > max_regions:
            raise PartitionTooLarge(f"{first.name}: this layer would have more than "
                                    f"{max_regions} regions: use a smaller window")
        rep = _first_of(group, n)
        merged = Polygons(*_hulls(regions, group, n, geo), regions.code_rows, regions.n_units,
                          regions.code_index[rep])
        f_tile = np.repeat(np.arange(n_tiles), [len(p.facets) for p in parts])
        f_parent = ids[np.concatenate([p.facet_parents for p in parts])
                       + offsets[:-1][f_tile]]
        f_units = np.concatenate([p.facet_units for p in parts])
        key = _groups(f_parent, f_units[:, None])[0]
        facets, f_rep = _join_segments(np.concatenate([p.facets for p in parts]).reshape(-1, 4),
                                       key, f_tile, geo)
        layers.append(SliceLayer(first.name, first.kind, first.shape, merged, parents[rep],
                                 facets, f_units[f_rep], f_parent[f_rep], first.window_size))
        ids, offsets = group, np.concatenate([[0], np.cumsum(counts)])
    # the decision cells: one per (last region, class); the boundary joined per last region
    counts = np.array([len(t.predicted) for t in tiles])
    tile_of = np.repeat(np.arange(n_tiles), counts)
    cell_parent = ids[np.concatenate([t.predicted_parents for t in tiles])
                      + offsets[:-1][tile_of]]
    classes = np.concatenate([t.predicted_class for t in tiles])
    cells = join_polygons([t.predicted for t in tiles])
    group, n = _groups(cell_parent, classes[:, None])
    rep = _first_of(group, n)
    predicted = Polygons(*_hulls(cells, group, n, geo), cells.packed_codes[rep], 0)
    s_tile = np.repeat(np.arange(n_tiles), [len(t.decision_boundary) for t in tiles])
    s_parent = ids[np.concatenate([t.boundary_parents for t in tiles]) + offsets[:-1][s_tile]]
    boundary, s_rep = _join_segments(
        np.concatenate([t.decision_boundary for t in tiles]).reshape(-1, 4), s_parent, s_tile,
        geo)
    return Slice(tiles[0].plane, tuple(map(float, window)), layers, boundary, predicted,
                 classes[rep], seconds, tiles[0].device, cell_parent[rep], s_parent[s_rep])


class _Geometry:
    """The tiles' rectangles (T, 4), the window, and the tolerances' length D * DELTA."""

    def __init__(self, rects: np.ndarray, window: np.ndarray, scale: float):
        self.rects, self.window, self.scale = rects, window, scale
        self.eps = DELTA * scale

    def on_tile_line(self, xy: np.ndarray, tile: np.ndarray) -> np.ndarray:
        """(n, 2) points of the tiles ``tile``: snapped onto their tile's sides that lie
        inside the window (the tile lines) where within the tolerance, in place; returns
        for each point 0 (on none), 1 (on a vertical one: x exact) or 2 (horizontal only)."""
        r = self.rects[tile]
        on = np.zeros((len(xy), 2), bool)
        for side, axis in ((0, 0), (1, 0), (2, 1), (3, 1)):
            inner = r[:, side] != self.window[side]
            near = inner & (np.abs(xy[:, axis] - r[:, side]) <= 1e3 * self.eps)
            xy[near, axis] = r[near, side]
            on[:, axis] |= near
        return np.where(on[:, 0], 1, np.where(on[:, 1], 2, 0))


def _groups(parents: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, int]:
    """A group id per row of (parent, code row): equal rows, one group; groups numbered in
    the order of their first row.  Returns (ids, number of groups)."""
    code_bytes = np.ascontiguousarray(codes).view(np.uint8).reshape(len(parents), -1) \
        if codes.size else np.zeros((len(parents), 0), np.uint8)
    rows = np.ascontiguousarray(np.concatenate(
        [parents.astype(">i8").view(np.uint8).reshape(-1, 8), code_bytes], 1))
    keys = rows.view(np.dtype((np.void, rows.shape[1])))[:, 0]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.ravel()], len(first)


def _first_of(group: np.ndarray, n: int) -> np.ndarray:
    """The first row of each of ``n`` groups."""
    first = np.full(n, len(group), np.int64)
    np.minimum.at(first, group, np.arange(len(group)))
    return first


def _hulls(pieces: Polygons, group: np.ndarray, n: int, geo: _Geometry
           ) -> tuple[np.ndarray, np.ndarray]:
    """(ptr, vertices) of the ``n`` merged polygons: a group of one piece keeps its polygon;
    the others, the convex hull of their pieces' vertices (module docstring), checked; one
    thinner than the tolerance (a hull of under 3 corners), its largest piece."""
    counts = np.diff(pieces.ptr)
    sizes = np.bincount(group, minlength=n)
    split = sizes[group] > 1
    v_group = np.repeat(group, counts)
    v_split = np.repeat(split, counts)
    xy, g = pieces.vertices[v_split], v_group[v_split]
    keep_xy, keep_g = pieces.vertices[~v_split], v_group[~v_split]
    if len(g):
        hull_xy, hull_g = _convex_hulls(xy, g, n, geo.eps)
        thin = (sizes > 1) & (np.bincount(hull_g, minlength=n) < 3)
        if thin.any():
            order = np.lexsort((-pieces.areas(), group))
            largest = order[np.r_[True, group[order][1:] != group[order][:-1]]][thin]
            idx = np.repeat(pieces.ptr[largest] - np.cumsum(np.r_[0, counts[largest][:-1]]),
                            counts[largest]) + np.arange(counts[largest].sum())
            drop = thin[hull_g]
            hull_xy = np.concatenate([hull_xy[~drop], pieces.vertices[idx]])
            hull_g = np.concatenate([hull_g[~drop], v_group[idx]])
            order = np.argsort(hull_g, kind="stable")
            hull_xy, hull_g = hull_xy[order], hull_g[order]
        area = _areas(hull_xy, hull_g, n)
        want = np.bincount(group[split], weights=pieces.areas()[split], minlength=n)
        bad = (sizes > 1) & (np.abs(area - want) > AREA_RTOL * np.abs(want)
                             + DELTA * geo.scale**2)
        if bad.any():
            q = int(np.flatnonzero(bad)[0])
            raise ValueError(f"tiles: the {int(sizes[q])} pieces of region {q} of one code do "
                             f"not make one convex polygon (area {area[q]:.6g} against "
                             f"{want[q]:.6g}): {int(bad.sum())} such regions")
        keep_xy, keep_g = np.concatenate([keep_xy, hull_xy]), np.concatenate([keep_g, hull_g])
    order = np.argsort(keep_g, kind="stable")
    ptr = np.concatenate([[0], np.cumsum(np.bincount(keep_g, minlength=n))]).astype(np.int64)
    return ptr, np.ascontiguousarray(keep_xy[order])


def _areas(xy: np.ndarray, g: np.ndarray, n: int) -> np.ndarray:
    """Shoelace areas of polygons given as vertices grouped (contiguous) by ``g``."""
    nxt = _cyclic(g, 1)
    cross = xy[:, 0] * xy[nxt, 1] - xy[nxt, 0] * xy[:, 1]
    return 0.5 * np.bincount(g, weights=cross, minlength=n)


def _cyclic(g: np.ndarray, step: int) -> np.ndarray:
    """For points grouped contiguously by ``g``: the index of each one's next (step 1) or
    previous (step -1) point in its group, cyclically."""
    idx = np.arange(len(g))
    start = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    end = np.r_[start[1:], len(g)] - 1
    first, last = np.repeat(start, end - start + 1), np.repeat(end, end - start + 1)
    if step > 0:
        return np.where(idx == last, first, idx + 1)
    return np.where(idx == first, last, idx - 1)


def _convex_hulls(xy: np.ndarray, g: np.ndarray, n: int, eps: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The convex hull of each group's points, counter-clockwise: sorted by angle about the
    group's mean, near-duplicates dropped, then every vertex not outside the line through
    its neighbours, round after round."""
    sizes = np.bincount(g, minlength=n)
    mean = np.stack([np.bincount(g, weights=xy[:, d], minlength=n) for d in (0, 1)], 1)
    mean = mean / np.maximum(sizes, 1)[:, None]
    rel = xy - mean[g]
    order = np.lexsort((np.hypot(rel[:, 0], rel[:, 1]), np.arctan2(rel[:, 1], rel[:, 0]), g))
    xy, g = xy[order], g[order]
    # near-duplicates (a point the tiles share, maybe across the angle's cut): the first kept
    prev, nxt = _cyclic(g, -1), _cyclic(g, 1)
    start = np.r_[True, g[1:] != g[:-1]]
    end = np.r_[g[1:] != g[:-1], True]
    dup = ~start & ((np.hypot(*(xy - xy[prev]).T) <= eps)
                    | (end & (np.hypot(*(xy - xy[nxt]).T) <= eps)))
    xy, g = xy[~dup], g[~dup]
    while len(g):
        prev, nxt = _cyclic(g, -1), _cyclic(g, 1)
        q, p, r = xy[prev], xy, xy[nxt]
        chord = r - q
        length = np.hypot(chord[:, 0], chord[:, 1])
        out = (chord[:, 0] * (p - q)[:, 1] - chord[:, 1] * (p - q)[:, 0]) * -1.0
        convex = np.where(length > 0, out > eps * length, np.hypot(*(p - q).T) > eps)
        if convex.all():
            break
        xy, g = xy[convex], g[convex]
    return xy, g


def _join_segments(seg: np.ndarray, key: np.ndarray, tile: np.ndarray, geo: _Geometry
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Segments (S, 4) of the tiles ``tile`` joined across the tile lines where pieces of
    one ``key`` meet there and are collinear (module docstring).  Returns the segments and,
    for each, one piece it came from (in the order of their first pieces)."""
    s = len(seg)
    if s == 0:
        return seg.copy(), np.zeros(0, np.int64)
    tol = 1e3 * geo.eps
    pairs = _junctions(seg, key, tile, geo, tol)
    pairs = pairs[_collinear(seg, pairs, tol)]
    label = np.arange(s)
    while len(pairs):
        new = label.copy()
        np.minimum.at(new, pairs[:, 0], label[pairs[:, 1]])
        np.minimum.at(new, pairs[:, 1], label[pairs[:, 0]])
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    comp, n = _groups(label, np.zeros((s, 0), np.uint8))
    length = np.hypot(seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1])
    longest = np.lexsort((-length, comp))
    longest = longest[np.r_[True, comp[longest][1:] != comp[longest][:-1]]]  # (n,) by comp
    direction = (seg[longest, 2:] - seg[longest, :2]) / np.maximum(length[longest], 1e-300)[:, None]
    points = seg.reshape(2 * s, 2)
    e_comp = np.repeat(comp, 2)
    along = ((points - seg[longest, :2][e_comp]) * direction[e_comp]).sum(1)
    order = np.lexsort((along, e_comp))
    bounds = np.concatenate([[0], np.cumsum(np.bincount(e_comp, minlength=n))])
    out = np.concatenate([points[order[bounds[:-1]]], points[order[bounds[1:] - 1]]], 1)
    single = np.bincount(comp, minlength=n) == 1
    out[single] = seg[longest[single]]  # one piece: as the tile cut it
    return out, _first_of(comp, n)


def _junctions(seg: np.ndarray, key: np.ndarray, tile: np.ndarray, geo: _Geometry,
               tol: float) -> np.ndarray:
    """Pairs of pieces (P, 2) that continue each other across a tile line: endpoints of one
    key on a tile line within ``tol`` of each other (a junction), pieces on one line through
    it (angles within ANGLE_TOL) on its two sides, from different tiles.  One to one: where
    the untiled cut holds a segment twice (tied pooling inputs), its two copies stay two."""
    s = len(seg)
    ends = seg.reshape(2 * s, 2).copy()
    e_seg, e_tile, e_key = np.repeat(np.arange(s), 2), np.repeat(tile, 2), np.repeat(key, 2)
    kind = geo.on_tile_line(ends, e_tile)
    away = seg.reshape(2 * s, 2)[np.arange(2 * s) ^ 1] - ends  # to the piece's other end
    j = np.flatnonzero((kind > 0) & (np.hypot(away[:, 0], away[:, 1]) > tol))
    if len(j) < 2:
        return np.zeros((0, 2), np.int64)
    # junctions: one key, one line (x exact on a vertical one, y on a horizontal), close along
    along, across = np.where(kind[j] == 1, ends[j, 1], ends[j, 0]), \
        np.where(kind[j] == 1, ends[j, 0], ends[j, 1])
    o = np.lexsort((along, across, kind[j], e_key[j]))
    j, along, across = j[o], along[o], across[o]
    new = np.r_[True, (e_key[j][1:] != e_key[j][:-1]) | (kind[j][1:] != kind[j][:-1])
                | (across[1:] != across[:-1]) | (np.diff(along) > tol)]
    junction = np.cumsum(new)
    # the line through it: its angle mod pi (near pi counted near 0), and the side
    theta = np.arctan2(away[j, 1], away[j, 0])
    phi = np.mod(theta, np.pi)
    phi = np.where(phi > np.pi - ANGLE_TOL, phi - np.pi, phi)
    side = (np.abs(np.angle(np.exp(1j * (theta - phi)))) > np.pi / 2).astype(np.int64)
    o = np.lexsort((phi, junction))
    j, junction, phi, side = j[o], junction[o], phi[o], side[o]
    line = np.cumsum(np.r_[True, (junction[1:] != junction[:-1]) | (np.diff(phi) > ANGLE_TOL)])
    # the k-th piece on one side of a line with the k-th on the other
    o = np.lexsort((side, line))
    j, line, side = j[o], line[o], side[o]
    starts = np.r_[True, (line[1:] != line[:-1]) | (side[1:] != side[:-1])]
    run = np.cumsum(starts) - 1
    rank = np.arange(len(j)) - np.flatnonzero(starts)[run]
    o = np.lexsort((side, rank, line))
    j, line, side, rank = j[o], line[o], side[o], rank[o]
    p, q = np.arange(len(j) - 1), np.arange(1, len(j))
    meet = ((line[p] == line[q]) & (rank[p] == rank[q]) & (side[p] == 0) & (side[q] == 1)
            & (e_tile[j[p]] != e_tile[j[q]]))
    return np.stack([e_seg[j[p[meet]]], e_seg[j[q[meet]]]], 1)


def _collinear(seg: np.ndarray, pairs: np.ndarray, tol: float) -> np.ndarray:
    """Whether each pair of segments lies on one line: the shorter's endpoints within
    ``tol`` of the longer's line."""
    a, b = seg[pairs[:, 0]], seg[pairs[:, 1]]
    la = np.hypot(a[:, 2] - a[:, 0], a[:, 3] - a[:, 1])
    lb = np.hypot(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1])
    long_, short = np.where((la >= lb)[:, None], a, b), np.where((la >= lb)[:, None], b, a)
    d = long_[:, 2:] - long_[:, :2]
    norm = np.maximum(np.hypot(d[:, 0], d[:, 1]), 1e-300)
    dist = [np.abs(d[:, 0] * (short[:, k + 1] - long_[:, 1])
                   - d[:, 1] * (short[:, k] - long_[:, 0])) / norm for k in (0, 2)]
    return (dist[0] <= tol) & (dist[1] <= tol)
