"""What a slice job's tiles are cut from (:mod:`bnviz.slices.tiled_job`): the job's networks,
plane, mini-batches and tiles (:func:`tiled_setup`), the key that names its folder of tiles
(:func:`tiles_key`), and what a tile's worker does with the tile it cut (:func:`store_tile`).
The job's process and every worker that cuts its tiles (:mod:`bnviz.slices.tiled_share`)
build the same setup from the job's parameters.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bnviz.params.slice import SliceJobParams
from bnviz.records.job import HOST
from bnviz.records.types import validate_params

__all__ = ["FORMAT", "Part", "TiledSetup", "job_params", "store_tile", "tile_keeper",
           "tiled_setup", "tiles_key"]

#: Files whose contents the cut depends on (hashed into the tiles' key).
_FILES = ("model", "weights", "plane", "batch", "data")
#: The tiles' format: a change makes earlier tiles another key's.
FORMAT = 1


def job_params(raw: object) -> SliceJobParams:
    """A slice job's parameters, checked (ParamError, one line)."""
    return validate_params(SliceJobParams, raw, "slice-tiles")


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tiles_key(params: dict) -> str:
    """What names a job's folder of tiles: a digest of the parameters that determine the cut
    (all but ``workers``), the contents of the files they name, bnviz's version and the
    tiles' format; the same cut, the same folder (a rerun resumes)."""
    from bnviz import __version__

    what = {k: v for k, v in params.items() if k != "workers"}
    for name in _FILES:
        path = params.get(name)
        if isinstance(path, str) and os.path.isfile(path):
            what[f"{name}_sha256"] = _digest(path)
    what |= {"bnviz": __version__, "format": FORMAT}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Part:
    """One partition of the job: a network (``arm``) with one mini-batch's statistics
    (``batch``; eval mode: the running ones), and what cuts its tiles."""

    arm: int
    batch: int
    cut: Any  # bnviz.slices.tile_pool.TileCut

    @property
    def name(self) -> str:
        from bnviz.slices.tile_store import part_name

        return part_name(self.arm, self.batch)


@dataclass(frozen=True)
class TiledSetup:
    """Everything a job's tiles are cut from: the prepared slice, the parts, the window and
    its tiles, the store."""

    params: SliceJobParams
    prepared: Any  # bnviz.slices.setup.PreparedSlice
    parts: tuple[Part, ...]
    window: tuple[float, float, float, float]
    rects: tuple[tuple[float, float, float, float], ...]
    store: Any  # bnviz.slices.tile_store.TileStore
    stats: tuple[tuple, ...]  # each network's statistics, per mini-batch

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)


def tiled_setup(raw: dict, device: Any) -> TiledSetup:
    """The job's networks, plane, mini-batches and tiles (no estimate: :func:`check_tiled_
    slice` made it before the job was queued)."""
    from bnviz.slices.graph import fold_bn
    from bnviz.slices.setup import prepare_slice
    from bnviz.slices.tile_pool import TileCut
    from bnviz.slices.tile_store import TileStore
    from bnviz.slices.tiles import check_window, tile_windows, window_scale
    from bnviz.slices.view import batch_indices, statistics_of

    params = job_params(raw)
    prepared = prepare_slice(params)
    window = check_window(prepared.window)
    scale = window_scale(window)
    dev = None if device is None else str(device)
    parts, stats = [], []
    for a, net in enumerate(prepared.nets):
        if params.bn == "train":
            chosen = batch_indices(len(prepared.train), params)
            each = statistics_of(net, [prepared.train[i] for i in chosen])
        else:
            each = [None]
        stats.append(tuple(each))
        parts += [Part(a, k, TileCut(fold_bn(net, s), prepared.plane, s, dev,
                                     params.max_regions, scale)) for k, s in enumerate(each)]
    key = tiles_key(dataclasses.asdict(params))
    return TiledSetup(params, prepared, tuple(parts), window,
                      tuple(tile_windows(window, params.tiles)), TileStore(key),
                      tuple(stats))


def store_tile(root: str, key: str, part: str, window: tuple, index: int, tile: Any) -> dict:
    """Store a tile just cut (in the process that cut it): its slice, its seams and the
    counts off them; returns its info (host, process, seconds, counts), never the tile."""
    from bnviz.slices.tile_seams import seam_slice
    from bnviz.slices.tile_store import TileStore

    seams, masks, inside = seam_slice(tile, tile.window, window)
    info = {"index": index, "host": HOST, "pid": os.getpid(), "seconds": tile.seconds,
            "regions": tile.counts, "inside": dataclasses.asdict(inside)}
    TileStore(key, Path(root)).write_tile(part, index, tile, seams, masks, info)
    return info


def tile_keeper(setup: TiledSetup, part: Part) -> Callable[[int, Any], dict]:
    """What a tile's worker does with the tile it cut: :func:`store_tile` in the job's folder."""
    return functools.partial(store_tile, str(setup.store.folder.parent), setup.store.key,
                             part.name, setup.window)
