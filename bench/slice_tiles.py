"""A slice cut as tiles (bnviz.slices.tiles): how much faster workers make it.

A digits ResNet9 (the jobs' default width 16, the seed's untrained network, eval mode)
through three test images, on a square window about the plane's origin, ``--fraction`` of
the default window's half-width: >= 10 000 regions in its last layer.  Timed, one after the
other (best of ``--repeats``): the untiled cut (``cut_slice``, torch at its threads and at
one); the same window as ``--tiles`` tiles with workers=1 (in this process, tile after
tile, torch at one thread) and with workers=2 (a forkserver pool; the first call also
starts the pool's server, timed apart as "cold"); the merge alone (on the tiles' slices);
and the speed-ups.  Every tiled count is checked
equal to the untiled one.  Prints the machine's load average (1, 5, 15 minutes) before and
after, and how much faster two processes run a pure-Python loop than one, then: the
machine is shared, and what its load leaves to two processes bounds the workers' speed-up.

Run: ``.venv/bin/python bench/slice_tiles.py [--fraction 0.05 --tiles 8 --repeats 2]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path

import psutil
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bnviz.slices.engine import cut_slice  # noqa: E402
from bnviz.slices.graph import fold_bn  # noqa: E402
from bnviz.slices.tilemerge import merge_tiles  # noqa: E402
from bnviz.slices.tiles import cut_tiled, tile_windows  # noqa: E402


def digits_resnet9(width: int):
    from bnviz.images.networks import build_model
    from bnviz.slices.plane import plane_through_images
    from bnviz.slices.sources import load_images
    from bnviz.slices.torch_import import slice_net

    model = build_model("resnet9", 1, 10, 8, "bn", width=width, seed=0).eval()
    images = load_images("digits", (1, 8, 8))
    return slice_net(model, (1, 8, 8)), plane_through_images(images.test[:3])


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _spin(_: int) -> float:
    t0, x = time.perf_counter(), 0
    for i in range(10_000_000):
        x += i
    return time.perf_counter() - t0


def parallel_capacity() -> float:
    """How much faster two pure-Python loops run in two processes than one after the other,
    now: what the machine's load leaves to two workers (2.0 on two idle cores)."""
    t0 = time.perf_counter()
    _spin(0)
    _spin(1)
    serial = time.perf_counter() - t0
    with multiprocessing.get_context("spawn").Pool(2) as pool:  # (not the tiles' server)
        pool.map(_spin, [0, 1])  # (started)
        t0 = time.perf_counter()
        pool.map(_spin, [0, 1])
        return serial / (time.perf_counter() - t0)


class ChildCPU:
    """CPU seconds this process's descendants (the pool's server and workers) spend while
    it is entered: sampled every 50 ms (a worker's last sample before it exits counts)."""

    def __enter__(self) -> ChildCPU:
        self.seen: dict[int, float] = {}
        self.start = self._sample()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    @staticmethod
    def _sample() -> dict[int, float]:
        out = {}
        for child in psutil.Process().children(recursive=True):
            try:
                t = child.cpu_times()
                out[child.pid] = t.user + t.system
            except psutil.Error:
                pass
        return out

    def _run(self) -> None:
        while not self.stop.wait(0.05):
            self.seen.update(self._sample())

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.seconds = sum(v - self.start.get(pid, 0.0) for pid, v in self.seen.items())


def best(repeats: int, run) -> tuple[float, object]:
    """The best wall time of ``repeats`` runs, and the last's result; prints the share of a
    core this process had in them (its CPU time over the wall time)."""
    times, cpu, out = [], 0.0, None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = run()
        times.append(time.perf_counter() - t0)
        cpu += time.process_time() - c0
    best.share = cpu / sum(times)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--fraction", type=float, default=0.05)
    ap.add_argument("--tiles", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=1)
    report(ap.parse_args())


def report(args: argparse.Namespace) -> None:
    """Everything the module docstring lists, for ``args`` (width, fraction, tiles,
    repeats): bench/slice.py prints it as its section 5."""
    print(f"load average before: {load()} ({len(os.sched_getaffinity(0))} cores); two "
          f"processes run {parallel_capacity():.2f}x one (a pure-Python loop, each)")
    net, plane = digits_resnet9(args.width)
    e = plane.default_window()[1] * args.fraction
    window = (-e, e, -e, e)
    cut_slice(net, plane, (-e / 50, e / 50, -e / 50, e / 50), device="cpu")  # kernels loaded
    t_whole, whole = best(args.repeats, lambda: cut_slice(net, plane, window, device="cpu"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t_whole1, _ = best(args.repeats, lambda: cut_slice(net, plane, window, device="cpu"))
    print(f"ResNet9 width {args.width}, window +-{e:.4f}: {whole.counts[-1]} regions in the "
          f"last layer, {sum(whole.counts)} in all {len(whole.counts)} layers")
    print(f"untiled:            {t_whole:7.2f} s  (torch at {threads} threads; at 1 thread: "
          f"{t_whole1:.2f} s, {100 * best.share:.0f} % of a core)")
    rects = tile_windows(window, args.tiles)
    folded = fold_bn(net)  # (as cut_tiled cuts its tiles)

    def one_by_one():
        return [cut_slice(folded, plane, r, device="cpu", scale=(e, e)) for r in rects]

    t_cuts, pieces = best(args.repeats, one_by_one)
    torch.set_num_threads(threads)
    t_merge, merged = best(args.repeats, lambda: merge_tiles(pieces, rects, window))
    assert merged.counts == whole.counts, (merged.counts, whole.counts)
    t1, s1 = best(args.repeats, lambda: cut_tiled(net, plane, window, tiles=args.tiles,
                                                  workers=1, device="cpu"))
    share1 = best.share
    t_cold = time.perf_counter()
    cut_tiled(net, plane, window, tiles=args.tiles, workers=2, device="cpu")
    t_cold = time.perf_counter() - t_cold
    with ChildCPU() as cpu:
        t2, s2 = best(args.repeats, lambda: cut_tiled(net, plane, window, tiles=args.tiles,
                                                      workers=2, device="cpu"))
    wall2 = t2 if args.repeats == 1 else float("nan")
    assert s1.counts == whole.counts and s2.counts == whole.counts
    print(f"{args.tiles} tiles, workers=1: {t1:7.2f} s  ({100 * share1:.0f} % of a core; tile "
          f"cuts {t_cuts:.2f} s, merge {t_merge:.2f} s = {100 * t_merge / t1:.1f} %)")
    print(f"{args.tiles} tiles, workers=2: {t2:7.2f} s  (merge {100 * t_merge / t2:.1f} %; "
          f"the first call, starting the pool's server: {t_cold:.2f} s)")
    print(f"  its workers' CPU: {cpu.seconds / args.repeats:.2f} s a run"
          + (f", {100 * cpu.seconds / (2 * wall2):.0f} % of two cores" if wall2 == wall2
             else ""))
    print(f"speed-up workers=2 over workers=1: {t1 / t2:.2f}x; over untiled: "
          f"{t_whole / t2:.2f}x (at 1 thread: {t_whole1 / t2:.2f}x); workers=1 over untiled "
          f"at 1 thread: {t_whole1 / t1:.2f}x")
    print(f"load average after: {load()}; two processes run {parallel_capacity():.2f}x one")


if __name__ == "__main__":
    main()
