"""The slice job (``slice-tiles``): a window of millions of regions cut as tiles, each stored as
it is done, merged exactly at the end.  ``bnviz slice ... --submit`` queues it (the command's
flags, the command's model: :class:`bnviz.params.slice.SliceJobParams`), and so does the
/slice page's "run as a job" for a window over the page's cap.

Before it is queued (:func:`check_tiled_slice`): the parameters, the files, and the region
estimate's bound against a slice job's cap (:data:`bnviz.caps.SLICE_JOB_MAX_REGIONS`), one
line naming the cap and the estimate.  ``tiles`` 1 (the default) lets the job choose: about
:data:`TILE_REGIONS` regions a tile by the bound, at most the tiles' cap.

Each partition (each network, each of train mode's mini-batches: a *part*) is cut as the same
tiles.  A tile's worker stores it at once (:mod:`bnviz.slices.tile_store`: the tile, its
seams, the counts off them), so the job's memory holds no tile; a job that stops (cancelled,
failed, its worker killed, run again) leaves its tiles, and the next job of the same
parameters cuts only the missing ones (the folder is named by :func:`tiles_key`).  Progress
is the tiles done.  Where the tiles are cut:

* the local backend (and a RecordingContext): on the usable cores, by the pool of
  :func:`bnviz.slices.tile_pool.cut_tiles` (a killed worker process's tile is cut again);
  on a GPU, one after the other in the job's process (one CUDA context);
* Celery: the job hands each missing tile to the job system as a task of its own
  (``ctx.fan_out``: :mod:`bnviz.slices.tiled_share`), so every worker, on every machine
  sharing ``BNVIZ_HOME``, cuts tiles; the job's own process cuts tiles too and collects the
  others from the folder.

Last, per part, every tile's seams are merged (:mod:`bnviz.slices.tile_seams`: only the
pieces on tile lines, so the merge's memory is the seams', not the window's) and the counts
per layer, the tiles' hosts and times go into the folder's index and the job's summary; the
job's result file holds the counts and the folder's key.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from bnviz.caps import SLICE_LIMITS
from bnviz.records.types import DistInfo, JobContext, JobType, ParamError
from bnviz.slices.tiled_plan import FORMAT, TiledSetup, job_params, tile_keeper, tiled_setup

__all__ = ["TILED_SLICE_JOB", "TILE_REGIONS", "check_tiled_slice", "merge_stored",
           "run_tiled_slice"]

#: Regions a tile aims at when the job chooses the tiles (by the estimate's bound): a tile
#: of them is some 10-30 s of one core and 100-200 MB of its worker's memory.
TILE_REGIONS = 50_000
#: The share of the progress the cuts take (the merge takes the rest).
_CUTS = 0.95


def check_tiled_slice(raw: dict) -> dict:
    """The parameters (ParamError, one line), the networks and images read, and the first
    network's regions estimated against a slice job's cap (one line naming the cap and the
    estimate), before anything is queued; ``tiles`` 1 becomes the tiles the bound needs."""
    params = job_params(raw)
    try:
        from bnviz.slices.setup import prepare_slice
        from bnviz.slices.view import check_regions

        prepared = prepare_slice(params)
        estimate = check_regions(prepared.nets[0], prepared.plane, prepared.window, params,
                                 device="cpu")
    except ValueError as exc:
        raise ParamError(str(exc).splitlines()[0]) from None
    out = dataclasses.asdict(params)
    if params.tiles == 1:
        out["tiles"] = min(max(1, math.ceil(estimate.bound / TILE_REGIONS)),
                           SLICE_LIMITS["tiles"][1])
    return out


def run_tiled_slice(params: dict, ctx: JobContext, dist: DistInfo) -> dict:
    import torch

    from bnviz.slices.tiles import default_workers

    t0 = time.perf_counter()
    setup = tiled_setup(params, ctx.device)
    store, tiles = setup.store, len(setup.rects)
    store.remove_temporary()
    missing = [(p, i) for p in setup.parts for i in range(tiles) if not store.has(p.name, i)]
    total = len(setup.parts) * tiles
    resumed = total - len(missing)
    ctx.log(f"{len(setup.parts)} partition(s) of {tiles} tiles in {store.folder}"
            + (f": {resumed} of {total} stored before, cutting the other {len(missing)}"
               if resumed else ""))
    done = resumed
    ctx.progress(_CUTS * done / total)

    def finished(_i: int, _info: dict) -> None:
        nonlocal done
        done += 1
        ctx.progress(_CUTS * done / total)

    fan_out = getattr(ctx, "fan_out", None)  # the job system's: Celery hands tiles out
    if missing and fan_out is not None and fan_out([f"{p.name}-t{i}" for p, i in missing]):
        from bnviz.slices.tiled_share import cut_shared

        cut_shared(setup, missing, finished, lambda: ctx.progress(_CUTS * done / total), ctx)
    else:
        on_gpu = ctx.device is not None and torch.device(ctx.device).type != "cpu"
        workers = 1 if on_gpu else (setup.params.workers or default_workers())
        for part in setup.parts:
            todo = {i: setup.rects[i] for p, i in missing if p is part}
            if todo:
                from bnviz.slices.tile_pool import cut_tiles

                cut_tiles(part.cut, todo, min(workers, len(todo)), finished,
                          tile_keeper(setup, part))
    summary = merge_stored(setup, ctx)
    from bnviz.slices.slice_map import prerender

    t1 = time.perf_counter()
    drawn = prerender(setup.store.key)
    if drawn:
        ctx.log(f"the map's first {drawn} tiles drawn in {time.perf_counter() - t1:.1f} s")
    return summary | {"tiles": tiles, "tiles_cut": len(missing), "tiles_resumed": resumed,
                      "wall_seconds": round(time.perf_counter() - t0, 3)}


def merge_stored(setup: TiledSetup, ctx: JobContext) -> dict:
    """Each part's seams merged and stored (every tile stored), the index and the result
    written; the job's summary."""
    from bnviz.slices.tile_seams import Counts, merge_seams

    store, rects, out = setup.store, list(setup.rects), []
    t0 = time.perf_counter()
    for n, part in enumerate(setup.parts):
        seams, tiles, inside = [], [], None
        for i in range(len(rects)):
            tile, info = store.read_tile(part.name, i, setup.prepared.plane, seams=True)
            seams.append(tile)
            counted = Counts(**info["inside"])
            inside = counted if inside is None else inside + counted
            tiles.append({k: info[k] for k in ("index", "host", "pid", "seconds", "regions")})
        merged, counts = merge_seams(seams, rects, setup.window, inside)
        store.write_seams(part.name, merged)
        out.append({"part": part.name, "arm": setup.prepared.arms[part.arm],
                    "batch": part.batch, **dataclasses.asdict(counts),
                    "seams": store.seams(part.name).name, "tiles": tiles})
        ctx.progress(_CUTS + (1 - _CUTS) * (n + 1) / len(setup.parts))
    merge_seconds = time.perf_counter() - t0
    params = dataclasses.asdict(setup.params)
    store.write_index({"format": FORMAT, "key": store.key, "params": params,
                       "window": list(setup.window), "tiles": [list(r) for r in rects],
                       "anchors": setup.prepared.plane.anchors.tolist(),
                       "parts": out, "merge_seconds": round(merge_seconds, 3)})
    ctx.save_result(lambda path: _write_result(path, store.key, setup.window, out))
    first = [p for p in out if p["batch"] == 0]
    summary = {"regions": [p["regions"] for p in first], "arms": [p["arm"] for p in first],
               "seconds": round(sum(t["seconds"] for p in out for t in p["tiles"]), 3),
               "merge_seconds": round(merge_seconds, 3), "folder": str(store.folder),
               "hosts": sorted({f"{t['host']}:{t['pid']}" for p in out for t in p["tiles"]})}
    if setup.params.batches > 1:
        summary["regions_per_batch"] = [[p["regions"] for p in out if p["arm"] == arm]
                                        for arm in summary["arms"]]
        summary["disagreement_area"] = _disagreement(setup)
    return summary


def _write_result(path: Any, key: str, window: tuple, parts: list[dict]) -> None:
    """The job's result file: the tiles' key and the window, and per part its counts per
    layer (regions, facets) and of decision cells and boundary segments (the geometry is
    the tiles' folder's)."""
    import numpy as np

    arrays = {"key": np.asarray(key), "window": np.asarray(window),
              "parts": np.asarray([p["part"] for p in parts])}
    for p in parts:
        arrays |= {f"{p['part']}_regions": np.asarray(p["regions"]),
                   f"{p['part']}_facets": np.asarray(p["facets"]),
                   f"{p['part']}_cells": np.asarray(p["cells"]),
                   f"{p['part']}_segments": np.asarray(p["segments"])}
    np.savez(path, **arrays)


def _disagreement(setup: TiledSetup) -> list[float]:
    """Each network's fraction of the window where its K mini-batches' boundaries disagree."""
    from bnviz.slices.view import disagreement_area

    return [disagreement_area(net, setup.prepared.plane, setup.window, list(stats))
            for net, stats in zip(setup.prepared.nets, setup.stats, strict=True)]


TILED_SLICE_JOB = JobType("slice-tiles", check_tiled_slice, run_tiled_slice, result=True)
