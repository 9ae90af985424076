"""The region estimate that a slice's caps act on, against exact counts (issue 44, item 4).

For digits ResNet9 networks of width 16 (the jobs' default): ``untrained`` (the seed's
network, bench/slice.py's), and ``bn`` and ``zero_bias`` trained here (the slice
concentration experiment's recipe, :mod:`bnviz.slices.concentration_arms`, ``--epochs``), on
the plane through test images 0, 1, 2: windows of growing size (fractions of the default
window) about the images' centroid and about the first image, each

* counted exactly: cut by the engine (the count and the cut's seconds), or past
  ``--cut-up-to`` tile row by tile row (:func:`tiled_count`: Euler's formula over whole
  tiles, memory a row's), both ways below ``--check-up-to`` (they must agree),
* counted by the grid (:func:`bnviz.slices.estimate.crofton_regions`, the old estimate),
* estimated by :func:`bnviz.slices.cost.estimate_regions` with seeds 0 .. ``--seeds``-1
  (no cap: the first sample's precision): the estimate, its standard error, the bound the cap
  acts on (estimate + 3 standard errors), the regions its samples cut, its seconds.

Each row prints as it is measured: estimate / exact, z = (estimate - exact) / error, bound /
exact, and the estimate's seconds over the cut's.  The summary: how many bounds fell under the
exact count, the largest |z|, the spread of estimate / exact and bound / exact, and the
grid's worst ratio; rows are also written as JSON lines to ``--out``.  A window the grid
finds over ``--max-regions`` is skipped (and the larger ones of that centre with it).

Run: ``.venv/bin/python bench/slice_estimate.py`` (``--device cuda`` on a GPU machine: the
affine maps there, the cuts on the CPU's compiled kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bnviz.slices import cost  # noqa: E402
from bnviz.slices.cost import Z, estimate_regions  # noqa: E402
from bnviz.slices.engine import cut_slice  # noqa: E402
from bnviz.slices.estimate import crofton_regions  # noqa: E402
from bnviz.slices.plane import plane_through_images  # noqa: E402


def networks(names: list[str], epochs: int, device: str):
    """(name, SliceNet) of each of ``names``, and the plane through test images 0, 1, 2."""
    import torch

    from bnviz.images.networks import build_model
    from bnviz.slices.concentration_arms import (
        Recipe,
        cpu_tensors,
        initial_network,
        train_network,
    )
    from bnviz.slices.sources import load_images
    from bnviz.slices.torch_import import slice_net

    images = load_images("digits", (1, 8, 8))
    plane = plane_through_images(images.test[:3])
    out = []
    for name in names:
        if name == "untrained":
            model = build_model("resnet9", 1, 10, 8, "bn", width=16, seed=0).eval()
        else:
            data = cpu_tensors("digits")
            if device != "cpu":
                from dataclasses import replace

                data = replace(data, **{k: getattr(data, k).to(device) for k in
                                        ("x_train", "y_train", "x_test", "y_test")})
            recipe = Recipe(width=16, epochs=epochs)
            t0 = time.perf_counter()
            model = initial_network(name, 0, data, recipe)
            accuracy = train_network(model, 0, data, recipe)
            model = model.to("cpu").eval()
            print(f"# {name}: trained {epochs} epochs, test accuracy {accuracy:.3f} "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
        with torch.no_grad():
            out.append((name, slice_net(model, (1, 8, 8))))
    return out, plane


def tiled_count(net, plane, window, device: str, tiles: int = 16) -> int:
    """The exact count of the window's last layer, a row of ``tiles`` tiles at a time (memory
    a row's): by Euler's formula, 1 + B/2 + the tiles' interior vertices W (each tile's
    regions less 1 less half its sides' crossings), B the crossings of the window's sides
    read from the tiles along them (bnviz.slices.cost's bookkeeping with every tile whole)."""
    import torch

    a0, a1, b0, b1 = window
    ea, eb = np.linspace(a0, a1, tiles + 1), np.linspace(b0, b1, tiles + 1)
    ea[-1], eb[-1] = a1, b1
    w = sides = 0.0
    for r in range(tiles):
        rects = np.stack([ea[:-1], ea[1:], np.full(tiles, eb[r]), np.full(tiles, eb[r + 1])], 1)
        ptr, verts, root = cost._cut_rectangles(net, plane, rects, window, None,
                                                torch.device(device), 10**8)
        touching = cost._touching(ptr, verts, root, rects)  # a0, a1, b0, b1 sides
        counts = np.bincount(root, minlength=tiles)
        w += float((counts - 1 - (touching - 1).sum(1) / 2).sum())
        sides += (touching[0, 0] - 1) + (touching[-1, 1] - 1)  # the window's left, right
        if r == 0:
            sides += float((touching[:, 2] - 1).sum())  # bottom
        if r == tiles - 1:
            sides += float((touching[:, 3] - 1).sum())  # top
    return int(round(1 + sides / 2 + w))


def measure(net, plane, window, grid: int, args) -> tuple[int, float, str]:
    """The exact count, its seconds and how: the engine's cut (``cut_slice``) up to
    ``--cut-up-to`` regions by the grid, the tiled count past it (memory a row's); both where
    the grid finds under ``--check-up-to``, which must agree."""
    t0 = time.perf_counter()
    if grid > args.cut_up_to:
        return tiled_count(net, plane, window, args.device), time.perf_counter() - t0, "tiled"
    exact = cut_slice(net, plane, window, device=args.device).counts[-1]
    seconds = time.perf_counter() - t0
    if grid <= args.check_up_to:
        tiled = tiled_count(net, plane, window, args.device)
        if tiled != exact:
            print(f"# the tiled count {tiled:,} differs from the cut's {exact:,}", flush=True)
    return exact, seconds, "cut"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", default="untrained,bn,zero_bias")
    ap.add_argument("--fractions", default="0.01,0.02,0.04,0.08,0.12",
                    help="window sizes, as fractions of the default window")
    ap.add_argument("--centres", default="origin,image")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--max-regions", type=int, default=1_500_000,
                    help="windows the grid finds larger are skipped")
    ap.add_argument("--cut-up-to", type=int, default=300_000,
                    help="count by the engine's cut up to this (by the grid), tiled past it")
    ap.add_argument("--check-up-to", type=int, default=60_000,
                    help="count both ways up to this (by the grid): they must agree")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    ap.add_argument("--exact-from", type=Path, default=None, metavar="FILE.jsonl",
                    help="take the exact counts (and their seconds) from an earlier --out")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    print(f"# load average {os.getloadavg()}, {os.cpu_count()} CPUs, device {args.device}",
          flush=True)
    nets, plane = networks(args.nets.split(","), args.epochs, args.device)
    e = plane.default_window()[1]
    cut_slice(nets[0][1], plane, (-0.002 * e, 0.002 * e) * 2, device=args.device)  # warm
    print(f"# {'net':>9} {'centre':>6} {'window':>6} {'exact':>9} {'t cut':>7} {'how':>5} "
          f"{'grid/ex':>7} {'estimate':>9} {'error':>7} {'est/ex':>7} {'z':>6} "
          f"{'bound/ex':>8} {'sampled':>7} {'t est':>6} {'t est/cut':>9}", flush=True)
    rows = []
    known = {}
    if args.exact_from is not None:
        for line in args.exact_from.read_text().splitlines():
            r = json.loads(line)
            known[(r["net"], r["centre"], r["fraction"])] = (r["exact"], r["cut_seconds"],
                                                             r["counted_by"])
    out = args.out.open("w") if args.out is not None else None
    for name, net in nets:
        for centre in args.centres.split(","):
            ca, cb = (0.0, 0.0) if centre == "origin" else plane.anchors[0]
            for frac in (float(v) for v in args.fractions.split(",")):
                h = frac * e
                window = (ca - h, ca + h, cb - h, cb + h)
                t0 = time.perf_counter()
                grid = crofton_regions(net, plane, window, device=args.device)
                t_grid = time.perf_counter() - t0
                if grid > args.max_regions:
                    print(f"# {name} {centre} {frac}: about {grid:,} regions by the grid, over "
                          f"{args.max_regions:,}: skipped with the larger windows", flush=True)
                    break
                exact, t_cut, how = known.get((name, centre, frac)) or \
                    measure(net, plane, window, grid, args)
                for seed in range(args.seeds):
                    est = estimate_regions(net, plane, window, device=args.device, seed=seed)
                    z = (est.regions - exact) / est.error if est.error else 0.0
                    row = {"net": name, "centre": centre, "fraction": frac, "seed": seed,
                           "exact": exact, "counted_by": how, "cut_seconds": round(t_cut, 2),
                           "grid": grid, "grid_seconds": round(t_grid, 2),
                           "estimate": est.regions, "error": est.error, "bound": est.bound,
                           "sampled": est.sampled, "sampled_fraction": est.fraction,
                           "estimate_seconds": round(est.seconds, 2), "z": round(z, 2)}
                    rows.append(row)
                    if out is not None:
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                    print(f"  {name:>9} {centre:>6} {frac:>6.3f} {exact:>9,} {t_cut:>7.1f} "
                          f"{how:>5} {grid / exact:>7.3f} {est.regions:>9,} {est.error:>7,} "
                          f"{est.regions / exact:>7.3f} {z:>+6.2f} {est.bound / exact:>8.3f} "
                          f"{est.sampled:>7,} {est.seconds:>6.1f} {est.seconds / t_cut:>9.3f}",
                          flush=True)
    summary(rows)


def summary(rows: list[dict]) -> None:
    if not rows:
        return
    sampled = [r for r in rows if r["error"] > 0]
    ratio = np.array([r["estimate"] / r["exact"] for r in sampled])
    bound = np.array([r["bound"] / r["exact"] for r in rows])
    z = np.array([r["z"] for r in sampled])
    grid = np.array([r["grid"] / r["exact"] for r in rows])
    print(f"# {len(rows)} estimates ({len(rows) - len(sampled)} counted exactly), windows of "
          f"{min(r['exact'] for r in rows):,} to {max(r['exact'] for r in rows):,} regions")
    print(f"# bounds under the exact count: {int((bound < 1).sum())} of {len(rows)}; "
          f"bound / exact {bound.min():.3f} .. {bound.max():.3f} (median "
          f"{np.median(bound):.3f})")
    if len(sampled):
        print(f"# sampled: estimate / exact {ratio.min():.3f} .. {ratio.max():.3f}, |z| max "
              f"{np.abs(z).max():.2f}, |z| > {Z}: {int((np.abs(z) > Z).sum())}, |z| > 2: "
              f"{int((np.abs(z) > 2).sum())} of {len(z)}; sd of z {z.std():.2f}")
    print(f"# grid (the old estimate) / exact {grid.min():.3f} .. {grid.max():.3f}")
    slow = max(rows, key=lambda r: r["estimate_seconds"] / r["cut_seconds"])
    big = max(rows, key=lambda r: r["exact"])
    print(f"# estimate seconds / cut seconds: at most "
          f"{slow['estimate_seconds'] / slow['cut_seconds']:.3f} ({slow['exact']:,} regions); "
          f"the largest window {big['estimate_seconds']:.1f} s against "
          f"{big['cut_seconds']:.1f} s ({big['exact']:,} regions)")


if __name__ == "__main__":
    main()
