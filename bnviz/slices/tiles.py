"""A slice's window cut as N tiles, in worker processes, merged into the untiled cut exactly.

Why the merge is exact.  In a network of affine ops, ReLU (leaky ReLU) and max pooling, fix a
nonlinear layer l and a full code c: the ReLU patterns (h > 0) and the pooling argmaxes of
every layer up to l, this layer's included.  On the points whose earlier layers have codes c,
every input of layer l is one affine function of (a, b), so the points with code c are an
intersection of half-planes: {h_k > 0} or {h_k <= 0} for a ReLU unit, {f_i >= f_j} (strict
for a j before i: the first of tied inputs wins) for a pooling window; by induction over the
layers, a convex set.  :func:`bnviz.slices.engine.cut_slice` makes exactly one region per
code (ties canonical: tests/slices/test_ties.py), the set of its code cut to the window.  A
tile's cut is the same sets cut to the tile, so the pieces with one full code, over all
tiles, are the pieces of one convex set: merged by full code (per layer: the merged parent
region and the layer's own code, np.unique on their bytes) they are the untiled cut's
regions, one each, with its counts and codes.  The union of convex pieces that is convex is
the convex hull of their vertices, the merged polygon (:mod:`bnviz.slices.tilemerge`, which
checks it against the pieces' areas, and documents its tolerances).  The same holds for the
decision cells (a last-layer region and a class: the logits' argmax cells, convex) and
joins the facets and the decision boundary that the tile lines cut.  Each tile is cut with
the whole window's tolerance scale (``cut_slice``'s ``scale``), so what is a tie, a zero
unit or a point on a line is decided as in the untiled cut.  What could still differ lies
within the tolerances: a region thinner than RTOL of the terms' scale where a tile line
crosses it (none met in the tests).

The tiles: N = r x r for a perfect square; otherwise r = round(sqrt N) rows of N // r or
N // r + 1 tiles (the longer rows first), each row as high as its share of the tiles, so that
every tile has the window's area over N.

Workers: the processes of :func:`bnviz.slices.tile_pool.cut_tiles` (a forkserver's, torch at
one thread each, tiles handed out one at a time as workers free up; a worker that dies is
replaced and its tile cut again); ``workers=1`` cuts the tiles one after the other in this
process.  A script that calls :func:`cut_tiled` with workers > 1 must guard its main code
with ``if __name__ == "__main__"``.  The slice job (:mod:`bnviz.slices.tiled_job`) cuts its
tiles with the same pool, each stored as it is done.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

import torch

from bnviz.slices.engine import Slice
from bnviz.slices.graph import SliceNet, Statistics, fold_bn
from bnviz.slices.plane import Plane
from bnviz.slices.tile_pool import TileCut, cut_tiles
from bnviz.slices.tilemerge import merge_tiles

__all__ = ["check_window", "cut_tiled", "default_workers", "tile_windows", "window_scale"]

Window = tuple[float, float, float, float]


def default_workers() -> int:
    """Every core this process may run on."""
    return len(os.sched_getaffinity(0))


def tile_windows(window: Window, n: int) -> list[Window]:
    """``window`` (a0, a1, b0, b1) as ``n`` tiles of equal area, row by row from b0 (module
    docstring: r x r for a square, else round(sqrt n) rows of near-equal length)."""
    if n < 1:
        raise ValueError(f"tiles must be at least 1, got {n}")
    a0, a1, b0, b1 = (float(v) for v in window)
    rows = max(1, round(math.sqrt(n)))
    per_row = [n // rows + (1 if i < n % rows else 0) for i in range(rows)]
    tiles = []
    done = 0
    for i, k in enumerate(per_row):
        lo = b0 + (b1 - b0) * done / n
        done += k
        hi = b1 if i == rows - 1 else b0 + (b1 - b0) * done / n
        cuts = [a0 + (a1 - a0) * j / k for j in range(k)] + [a1]
        tiles += [(cuts[j], cuts[j + 1], lo, hi) for j in range(k)]
    return tiles


def cut_tiled(net: SliceNet, plane: Plane, window: Window, stats: Statistics | None = None,
              tiles: int = 4, workers: int | None = None,
              device: torch.device | str | None = None,
              max_regions: int = 2_000_000,
              progress: Callable[[int, int], None] | None = None) -> Slice:
    """The exact slice of ``window`` (what :func:`bnviz.slices.engine.cut_slice` returns for
    it: the same regions, codes and areas per layer, the same decision cells and boundary),
    cut as ``tiles`` tiles (:func:`tile_windows`) on ``workers`` processes (default: every
    core this process may use; 1: here, one tile after the other) and merged by full code
    (module docstring).  ``progress(done, total)`` hears each tile done (it may raise to
    stop the cut: the workers are stopped); ``max_regions`` caps each tile's layers and the
    merged ones (PartitionTooLarge).  ``device``: each tile's (None: each process picks its
    own, :func:`bnviz.device.pick_device`).  The slice's ``seconds`` are the wall time of
    the cuts and the merge."""
    t0 = time.perf_counter()
    window = check_window(window)
    rects = tile_windows(window, tiles)
    workers = min(default_workers() if workers is None else int(workers), len(rects))
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    # BN folded once (cut_slice folds nothing more): the ops, and the dense matrices of small
    # maps' convolutions cached on them (graph.conv_matrix), serve every tile of a process
    cut = TileCut(fold_bn(net, stats), plane, stats, None if device is None else str(device),
                  max_regions, window_scale(window))
    pieces: list[Slice | None] = [None] * len(rects)

    def done(i: int, s: Slice) -> None:
        pieces[i] = s
        if progress is not None:
            progress(sum(p is not None for p in pieces), len(rects))

    cut_tiles(cut, dict(enumerate(rects)), workers, done)
    return merge_tiles(pieces, rects, window, max_regions, seconds=time.perf_counter() - t0)


def check_window(window: Window) -> Window:
    """``window`` as floats (ValueError unless a0 < a1 and b0 < b1, finite)."""
    a0, a1, b0, b1 = (float(v) for v in window)
    if not (a0 < a1 and b0 < b1) or not all(map(math.isfinite, (a0, a1, b0, b1))):
        raise ValueError(f"the window must have a0 < a1 and b0 < b1, got {window}")
    return a0, a1, b0, b1


def window_scale(window: Window) -> tuple[float, float]:
    """The whole window's tolerance scale (bx, by), which each of its tiles is cut with."""
    a0, a1, b0, b1 = window
    return max(abs(a0), abs(a1)), max(abs(b0), abs(b1))
