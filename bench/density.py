"""Figure 3 at the paper's scale: time, achieved GFLOP/s against torch's own matmul, peak memory.

11 layers of width 1024, 50 star points, the three modes, layers 1, 7, 11, grids 128 and 256
(``--grids 128,256,512`` adds the big one; memory stays bounded by the row bands).
Run: ``.venv/bin/python bench/density.py``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bnviz.core.network import random_network  # noqa: E402
from bnviz.data.datasets import make_dataset  # noqa: E402
from bnviz.device import pick_device  # noqa: E402
from bnviz.views.density import concentration, near_data_ratio  # noqa: E402


def matmul_gflops(device: torch.device, dtype: torch.dtype, n: int = 1024, rows: int = 8192,
                  repeats: int = 5) -> float:
    """torch's own speed on the layer's shape: (rows x n) @ (n x n)."""
    a = torch.randn(rows, n, dtype=dtype, device=device)
    b = torch.randn(n, n, dtype=dtype, device=device)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        a @ b
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - t0)
    return 2 * rows * n * n / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", default="128,256")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=11)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    dev = pick_device(args.device)
    data = make_dataset("star", 50, 0).points
    peak_matmul = matmul_gflops(dev, torch.float32, args.width)
    print(f"device {dev}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"torch float32 matmul ({8192}x{args.width} @ {args.width}x{args.width}): "
          f"{peak_matmul:.1f} GFLOP/s")
    print(f"{'grid':>5} {'mode':>12} {'seconds':>8} {'GFLOP/s':>8} {'ratio':>6}  "
          f"max concentration (1, 7, 11)   near-data ratio (r = 0.15)")
    for grid in (int(g) for g in args.grids.split(",")):
        total = 0.0
        for mode in ("zero_bias", "random_bias", "bn"):
            net = random_network(args.depth, args.width, mode=mode, seed=0)
            layers = [1, (args.depth + 1) // 2 + 1, args.depth]
            r = concentration(net, data, layers, grid=grid, device=dev)
            total += r.seconds
            gf = r.flops / r.seconds / 1e9
            ratios = near_data_ratio(r, data, 0.15)
            print(f"{grid:>5} {mode:>12} {r.seconds:>8.2f} {gf:>8.1f} {gf / peak_matmul:>6.2f}"
                  f"  {[int(c.max()) for c in r.counts]!s:<28} "
                  f"{[round(float(q), 2) for q in ratios]}")
        print(f"{grid:>5} {'3 modes':>12} {total:>8.2f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MB")
    if dev.type == "cuda":
        print(f"peak GPU memory: {torch.cuda.max_memory_allocated(dev) / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
