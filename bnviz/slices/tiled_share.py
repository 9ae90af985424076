"""A slice job's tiles shared by the job system's workers (Celery: every worker, on every
machine that shares ``BNVIZ_HOME``), for :mod:`bnviz.slices.tiled_job`.

The job hands each missing tile to the job system (``ctx.fan_out``: one task a tile, run by
:func:`run_tile_part` wherever a worker is free) and cuts tiles itself as well: with one
worker (a solo pool busy with the job) nobody else would.  Who cuts a tile is decided by its
claim file (created with O_EXCL, :meth:`bnviz.slices.tile_store.TileStore.claim`): a worker
that finds it taken, or the shard already there, or the job ended, does nothing.  The job's
process collects the shards as they appear (its progress: the tiles done) and looks after
the claims of the tiles still missing: a claim whose process is gone (on this host: its pid
is dead; on another: neither it nor its worker's main process beat in the store within
``BNVIZ_JOB_STALE_SECONDS``) is released, so the job cuts that tile again, whatever
became of the task's message (with late acknowledgement a lost worker's message waits for
the broker's visibility timeout, an hour on Redis).  A cancelled job stops: its own cut at
once, the others' at their next look at the store (between a cut's layers, or before the
next tile).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from bnviz.records.job import HOST, pid_alive, stale_seconds
from bnviz.records.types import Cancelled, JobContext

__all__ = ["POLL_SECONDS", "cut_shared", "run_tile_part"]

#: How often the job looks at the folder and the claims while others cut.
POLL_SECONDS = 0.2


def _owner() -> dict[str, Any]:
    return {"host": HOST, "pid": os.getpid(), "ppid": os.getppid(), "time": time.time()}


def _gone(owner: dict[str, Any] | None) -> bool:
    """Whether the process that claimed a tile is gone (module docstring)."""
    if not owner:  # no claim, or one being written
        return False
    if owner.get("host") == HOST:
        return not pid_alive(int(owner.get("pid", 0)))
    from bnviz.records.store import open_store

    pids = {owner.get("pid"), owner.get("ppid")}
    beats = [w.get("time", 0.0) for w in open_store().workers().values()
             if w.get("host") == owner.get("host") and w.get("pid") in pids]
    newest = max(beats, default=float(owner.get("time", 0.0)))
    return time.time() - newest > stale_seconds()


def cut_shared(setup: Any, missing: list[tuple[Any, int]],
               finished: Callable[[int, dict], None], report: Callable[[], None],
               ctx: JobContext) -> None:
    """Until every tile of ``missing`` ((part, index)) is stored: collect the stored ones
    (``finished``), cut one that nobody has claimed here, else release the claims of gone
    processes and wait (module docstring).  ``report()`` reports the progress (it raises on
    a cancel)."""
    from bnviz.slices.tiled_plan import tile_keeper

    store = setup.store
    left = list(missing)
    while left:
        for part, i in [t for t in left if store.has(t[0].name, t[1])]:
            left.remove((part, i))
            finished(i, store.read_info(part.name, i))
        mine = next(((p, i) for p, i in left if store.claim(p.name, i, _owner())), None)
        if mine is not None:
            part, i = mine
            try:
                if not store.has(part.name, i):
                    tile = part.cut.cut(setup.rects[i], lambda _fraction: report())
                    tile_keeper(setup, part)(i, tile)
            finally:
                store.release(part.name, i)
            continue
        for part, i in left:
            owner = store.claimant(part.name, i)
            if _gone(owner) and not store.has(part.name, i):
                ctx.log(f"tile {i} of {part.name}: its worker {owner.get('host')}:"
                        f"{owner.get('pid')} is gone; cutting it again")
                store.release(part.name, i)
        report()
        time.sleep(POLL_SECONDS)


#: The setup of the last job this process cut a tile of (a worker cuts many of one job).
_LAST: dict[str, Any] = {}


def run_tile_part(job_id: str, params: dict, part: str) -> str:
    """One tile of a slice job, ``part`` = ``a<arm>-b<batch>-t<index>``, cut by a worker of
    the job system and stored; returns what became of it: "cut", "stored" (there already),
    "taken" (another worker has it) or "ended" (the job ended or was cancelled)."""
    from bnviz.device import pick_device
    from bnviz.records.store import open_store
    from bnviz.slices.tiled_plan import tile_keeper, tiled_setup

    name, _, index = part.rpartition("-t")
    i = int(index)
    if _LAST.get("job") != job_id:
        _LAST.clear()
        _LAST.update(job=job_id, setup=tiled_setup(params, pick_device()))
    setup = _LAST["setup"]
    store = setup.store
    if store.has(name, i):
        return "stored"
    if not store.claim(name, i, _owner()):
        return "taken"
    jobs = open_store()

    def still_wanted(_fraction: float) -> None:
        job = jobs.get(job_id)
        if job is None or job.ended or job.cancel_requested:
            raise Cancelled

    try:
        if store.has(name, i):
            return "stored"
        still_wanted(0.0)
        tile = setup.part(name).cut.cut(setup.rects[i], still_wanted)
        tile_keeper(setup, setup.part(name))(i, tile)
        return "cut"
    except Cancelled:
        return "ended"
    finally:
        store.release(name, i)
