"""Partition speed: bnviz vs Regioncam on the same random networks, in one process.

He-normal weights, random bias, box [-1, 1]^2, widths x depths 16x3, 32x4, 64x3, 64x6.
Prints, per size, both region counts and the best-of-N time of each and their ratio
(bnviz / Regioncam; below 1 means bnviz is faster).  ``--profile`` adds torch's operator
profile of the largest size.  Run: ``make bench`` or ``.venv/bin/python bench/partition.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bnviz.core.network import layer_statistics, random_network  # noqa: E402
from bnviz.core.partition import compute_partition  # noqa: E402

SIZES = ((16, 3), (32, 4), (64, 3), (64, 6))
BOX = (-1.0, 1.0, -1.0, 1.0)


def regioncam_regions(net, stats) -> int:
    import regioncam

    cam = regioncam.Regioncam(size=1.0)  # the box [-1, 1]^2
    for w, st in zip(net.weights, stats, strict=True):
        w_eff = (w / st.sigma[:, None]).T.astype(np.float32)
        b_eff = (-st.mu / st.sigma).astype(np.float32)
        cam.linear(w_eff, b_eff)
        cam.relu()
    return cam.num_faces


def best_of(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    pts = np.zeros((1, 2))  # random bias: the batch does not enter the network
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}")
    print(f"{'size':>6} {'bnviz':>8} {'regioncam':>9} {'bnviz ms':>9} {'regioncam ms':>12} "
          f"{'ratio':>6}")
    for width, depth in SIZES:
        net = random_network(depth, width, activation="relu", mode="random_bias", seed=args.seed)
        stats = layer_statistics(net, pts)
        compute_partition(net, pts, BOX, stats=stats, device=args.device)  # warm-up
        t_ours, part = best_of(
            lambda n=net, s=stats: compute_partition(n, pts, BOX, stats=s, device=args.device),
            args.repeats)
        t_rc, n_rc = best_of(lambda n=net, s=stats: regioncam_regions(n, s), args.repeats)
        print(f"{width:>3}x{depth:<2} {len(part.regions):>8} {n_rc:>9} {1e3 * t_ours:>9.1f} "
              f"{1e3 * t_rc:>12.1f} {t_ours / t_rc:>6.2f}")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        width, depth = SIZES[-1]
        net = random_network(depth, width, activation="relu", mode="random_bias", seed=args.seed)
        stats = layer_statistics(net, pts)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            compute_partition(net, pts, BOX, stats=stats, device=args.device)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
