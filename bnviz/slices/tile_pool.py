"""The processes that cut a slice's tiles (:mod:`bnviz.slices.tiles`, the slice job of
:mod:`bnviz.slices.tiled_job`), one tile at a time each, handed out as workers free up.

Why not :class:`multiprocessing.pool.Pool`: a worker that dies (SIGKILL, the kernel's OOM
killer) takes its task with it, and the pool's ``imap`` then waits for that task forever.
Here each worker has its own pipe and the pool knows which tile each one is cutting: a worker
whose process ends without answering is replaced and its tile handed out again (at most
``restarts`` times a tile, then RuntimeError naming the tile and the exit code), so a slice
job's killed worker costs one tile's time, not the job.  Everything used is public
multiprocessing API (pipes, process sentinels, :func:`multiprocessing.connection.wait`).

The processes fork from a ``forkserver`` (a fresh server process that imported this module,
torch and the engine, and loaded the compiled kernels, once: :mod:`bnviz.slices.tile_preload`;
where the process had started a forkserver before, its workers import and load those
themselves), torch at one thread each.  ``workers=1`` cuts in this process, torch at one
thread too (then back to its count): N workers use N cores.  A script that cuts with
workers > 1 must guard its main code with ``if __name__ == "__main__"`` (each worker imports
the main module, as multiprocessing's forkserver and spawn do).

What a worker does with a tile it cut is the caller's ``keep(index, slice)`` (a picklable
function: module-level, or a :func:`functools.partial` of one), run in the worker; what it
returns is what ``on_done(index, value)`` hears in this process (default: the slice itself).
So a slice job's worker stores its tile and hands back a few numbers, never the tile.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

import torch

from bnviz.slices.engine import Slice, cut_slice
from bnviz.slices.graph import SliceNet, Statistics
from bnviz.slices.plane import Plane

__all__ = ["TileCut", "cut_tiles"]

Window = tuple[float, float, float, float]
Keep = Callable[[int, Slice], Any]


@dataclass(frozen=True)
class TileCut:
    """What every tile of one partition is cut with: the network (BN folded once:
    :func:`bnviz.slices.graph.fold_bn`), the plane, BN's statistics, the device (None: each
    process picks its own), the regions a layer may have, and the whole window's tolerance
    scale (:func:`bnviz.slices.engine.cut_slice`'s ``scale``)."""

    net: SliceNet
    plane: Plane
    stats: Statistics | None
    device: str | None
    max_regions: int
    scale: tuple[float, float]

    def cut(self, rect: Window, progress: Callable[[float], None] | None = None) -> Slice:
        """The exact slice of one tile ``rect``."""
        return cut_slice(self.net, self.plane, rect, self.stats, self.device, self.max_regions,
                         progress, scale=self.scale)


def _picklable(exc: BaseException) -> BaseException:
    """``exc``, or a RuntimeError with its text when it cannot cross a pipe."""
    try:
        pickle.dumps(exc)
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _serve(cut: TileCut, keep: Keep | None, conn: Any) -> None:
    """A worker: cut each (index, rect) the pipe brings until it brings None or closes."""
    torch.set_num_threads(1)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        i, rect = job
        try:
            s = cut.cut(rect)
            conn.send(("done", i, keep(i, s) if keep is not None else s))
        except Exception as exc:  # the tile's error goes to the caller, the worker goes on
            conn.send(("error", i, _picklable(exc)))


def _context() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["bnviz.slices.tile_preload"])
        return ctx
    return multiprocessing.get_context("spawn")  # (no forkserver: Windows)


class _Worker:
    """One worker process and this end of its pipe."""

    def __init__(self, ctx: Any, cut: TileCut, keep: Keep | None):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(cut, keep, child), daemon=True)
        self.process.start()
        child.close()

    def stop(self, now: bool) -> None:
        if not now:
            try:
                self.conn.send(None)
            except OSError:
                now = True
        if now:
            self.process.kill()
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def cut_tiles(cut: TileCut, todo: dict[int, Window], workers: int,
              on_done: Callable[[int, Any], None], keep: Keep | None = None,
              restarts: int = 3) -> None:
    """Cut every tile of ``todo`` (index -> its rectangle) on ``workers`` processes (1: here,
    one after the other), calling ``on_done(index, keep(index, slice))`` here as each is
    done, in the order they finish.  A tile's error is raised here (the workers are stopped);
    so is whatever ``on_done`` raises (a job's cancel).  A worker that dies is replaced and
    its tile cut again, up to ``restarts`` times a tile (module docstring)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if workers == 1 or len(todo) <= 1:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for i, rect in todo.items():
                s = cut.cut(rect)
                on_done(i, keep(i, s) if keep is not None else s)
        finally:
            torch.set_num_threads(threads)
        return
    ctx = _context()
    pending = deque(todo)
    died: dict[int, int] = {}
    idle = [_Worker(ctx, cut, keep) for _ in range(min(workers, len(todo)))]
    busy: dict[_Worker, int] = {}
    ok = False
    try:
        while pending or busy:
            while pending and idle:
                w, i = idle.pop(), pending.popleft()
                w.conn.send((i, todo[i]))
                busy[w] = i
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for w in [w for w in busy if w.conn in ready or w.process.sentinel in ready]:
                try:
                    kind, i, value = w.conn.recv() if w.conn.poll() else (None, None, None)
                except EOFError:
                    kind = None
                if kind is None:  # the process ended without answering: its tile again
                    if w.process.is_alive():
                        continue  # (its pipe became readable before its answer was whole)
                    i = busy.pop(w)
                    died[i] = died.get(i, 0) + 1
                    w.process.join()
                    if died[i] > restarts:
                        raise RuntimeError(f"tile {i}: its worker process died {died[i]} times "
                                           f"(the last exit code {w.process.exitcode})")
                    w.conn.close()
                    pending.appendleft(i)
                    idle.append(_Worker(ctx, cut, keep))
                    continue
                del busy[w]
                idle.append(w)
                if kind == "error":
                    raise value
                on_done(i, value)
        ok = True
    finally:
        for w in [*idle, *busy]:
            w.stop(now=not ok)
