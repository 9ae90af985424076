"""Partition speed: bnviz vs Regioncam on the same random networks, in one process.

He-normal weights, random bias, box [-1, 1]^2, widths x depths from 8x2 to 128x6 (``--sizes``).
Prints, per size, both region counts, the best-of-N time of each and their ratio (bnviz /
Regioncam; below 1 means bnviz is faster).  The two are timed alternately, call by call, so
that a load on the machine hits both alike.  ``--engine`` forces how every layer is cut:
``compiled`` (the numba kernels of :mod:`bnviz.core.clipping`), ``numpy`` or ``torch`` (the
vectorised cut on that library); default ``auto``, the engine's own choice (compiled while a
layer is small, :data:`bnviz.core.cut.COMPILED_MAX_WORK`).  The first run on a machine
compiles the kernels (about a minute; numba caches them).  ``--profile SIZE`` (e.g. 16x3)
prints a profile of that size instead: cProfile (the Python around the kernels), and torch's
operator profile for torch.  Run: ``make bench`` or ``.venv/bin/python bench/partition.py``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bnviz.core.arrays as arrays  # noqa: E402
import bnviz.core.cut as cut  # noqa: E402
from bnviz.core.network import layer_statistics, random_network  # noqa: E402
from bnviz.core.partition import compute_partition  # noqa: E402

SIZES = "8x2,16x3,32x4,64x3,64x6,128x4,128x6"
BOX = (-1.0, 1.0, -1.0, 1.0)
PTS = np.zeros((1, 2))  # random bias: the batch does not enter the network


def regioncam_regions(net, stats) -> int:
    import regioncam

    cam = regioncam.Regioncam(size=1.0)  # the box [-1, 1]^2
    for w, st in zip(net.weights, stats, strict=True):
        w_eff = (w / st.sigma[:, None]).T.astype(np.float32)
        b_eff = (-st.mu / st.sigma).astype(np.float32)
        cam.linear(w_eff, b_eff)
        cam.relu()
    return cam.num_faces


def parse_size(text: str) -> tuple[int, int]:
    width, depth = text.lower().split("x")
    return int(width), int(depth)


def force_engine(engine: str) -> None:
    """Make the engine cut every layer with ``engine``: the compiled kernels
    (:mod:`bnviz.core.clipping`), or the vectorised cut on numpy or on torch
    (:func:`bnviz.core.arrays.ops_for`); "auto" leaves the engine's own choice."""
    if engine in ("compiled", "numpy"):
        arrays.NUMPY_MAX_WORK.update(cpu=float("inf"), cuda=float("inf"))
    elif engine == "torch":
        arrays.NUMPY_MAX_WORK.update(cpu=-1, cuda=-1)
    if engine == "compiled":
        cut.COMPILED_MAX_WORK = float("inf")
    elif engine in ("numpy", "torch"):
        cut.COMPILED_MAX_WORK = -1


def network(width: int, depth: int, seed: int):
    net = random_network(depth, width, activation="relu", mode="random_bias", seed=seed)
    return net, layer_statistics(net, PTS)


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def compare(width: int, depth: int, seed: int, repeats: int, device: str) -> None:
    net, stats = network(width, depth, seed)
    ours = lambda: compute_partition(net, PTS, BOX, stats=stats, device=device)  # noqa: E731
    theirs = lambda: regioncam_regions(net, stats)  # noqa: E731
    ours()  # warm-up
    theirs()
    t_ours, t_rc = [], []
    for _ in range(repeats):  # alternate, so that a load on the machine hits both alike
        t, part = timed(ours)
        t_ours.append(t)
        t, n_rc = timed(theirs)
        t_rc.append(t)
    n_ours = len(part.regions)
    best_ours, best_rc = min(t_ours), min(t_rc)
    note = "" if n_ours == n_rc else "  counts differ"
    print(f"{width:>3}x{depth:<2} {n_ours:>8} {n_rc:>9} {1e3 * best_ours:>10.3f} "
          f"{1e3 * best_rc:>12.3f} {best_ours / best_rc:>6.2f} "
          f"{np.median(t_ours) / np.median(t_rc):>9.2f}{note}")


def profile(width: int, depth: int, seed: int, device: str, engine: str) -> None:
    """Where the time of one size goes: cProfile (Python functions, numpy's among them), and
    torch's operator profile when the cut may run on torch."""
    net, stats = network(width, depth, seed)
    run = lambda: compute_partition(net, PTS, BOX, stats=stats, device=device)  # noqa: E731
    for _ in range(3):
        run()
    calls = max(1, int(0.5 / timed(run)[0]))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        run()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
    print(f"cProfile of {calls} calls at {width}x{depth} (tottime: time in the function itself)")
    print(out.getvalue())
    if engine in ("compiled", "numpy") or (engine == "auto" and device == "cpu"):
        return
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as tprof:
        for _ in range(calls):
            run()
    print(tprof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES, help=f"widths x depths (default {SIZES})")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls of each, per size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--engine", choices=("auto", "compiled", "numpy", "torch"),
                        default="auto")
    parser.add_argument("--profile", metavar="SIZE", help="profile one size, e.g. 16x3")
    args = parser.parse_args()
    force_engine(args.engine)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, numpy "
          f"{np.__version__}, device {args.device}, engine {args.engine}")
    if args.profile:
        profile(*parse_size(args.profile), args.seed, args.device, args.engine)
        return
    print(f"{'size':>6} {'bnviz':>8} {'regioncam':>9} {'bnviz ms':>10} {'regioncam ms':>12} "
          f"{'ratio':>6} {'med.ratio':>9}")
    for size in args.sizes.split(","):
        width, depth = parse_size(size)
        repeats = args.repeats if width * depth < 600 else max(2, args.repeats // 3)
        compare(width, depth, args.seed, repeats, args.device)


if __name__ == "__main__":
    main()
