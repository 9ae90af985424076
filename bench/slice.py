"""Slices of image networks: how fast the exact cut is, per core, and what it costs in memory.

1. Per core, this cut against the one when issue 45 opened (item 1): three networks, the digits
   ResNet9 (the jobs' default width 16, the seed's untrained network, or ``--weights
   F.safetensors``) through three test images, the BN paper's appendix-D CNN on digits, and a
   residual ONNX net with max pooling and leaky ReLU (tests/onnx_nets.py) on 12x12 inputs,
   each on a window of >= 10 000 regions.  Each cut runs in a fresh child process with torch
   at one thread: regions per CPU-second (the child's own CPU time, so a load on the machine
   slows the wall clock but not the figure), peak RSS over the child's start per region, and
   the bytes kept per region (every layer's polygons, codes and facets).  The baseline is
   the cut when issue 45 opened: ``BASELINE_COMMIT``'s bnviz, taken from git (``git
   archive``) and run in the same way, alternately, best of ``--repeats`` (in a copy without
   git history only this checkout is timed).  On a GPU the ReLU layers are cut by the
   vectorised torch cut (``engine.VECTORISED_RELU_CUT``).
2. The digits ResNet9's default window: its estimated regions, then windows of growing size,
   each cut in full (every layer), with regions, seconds and regions a second.
3. bnviz against Regioncam on the same network unrolled to dense float32 layers (a conv
   chain: conv-BN-ReLU x 2, the second strided; Regioncam has no residual add), on windows
   whose partitions have >= 10 000 regions: the same work on both sides (the dense matrices
   are built outside Regioncam's timing; bnviz's head is one zero logit, so that it finds
   no decision cells, as Regioncam finds none), CPU seconds of this process with torch at one
   thread, best of ``--repeats``, timed alternately so that a load on the machine hits both
   alike, and their ratio (below 1: bnviz is faster).
4. The fixed cost: ``bnviz slice`` on a 0.01-wide window of the residual net, the whole
   process, median of ``--repeats`` runs.
5. Two worker processes over one: the digits ResNet9's window of 0.05 of the default one
   as 8 tiles, cut with workers=1 and workers=2 (bench/slice_tiles.py, which says how).

On one torch thread (sections 1 and 3) the products run on numpy's BLAS
(:mod:`bnviz.blas`); the first lines say which kernels it runs.  Where the machine forces
older ones (``OPENBLAS_CORETYPE``, with ``OPENBLAS_L2_SIZE``), ``env -u OPENBLAS_CORETYPE -u
OPENBLAS_L2_SIZE`` before the command times what OpenBLAS chooses itself.  ``--device
cuda`` runs the affine maps on the GPU (the cuts stay on the CPU's compiled kernels); a GPU
present adds section 1's figure on it.  Prints the machine's load average first.  Run:
``.venv/bin/python bench/slice.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bnviz.slices.engine import cut_slice  # noqa: E402
from bnviz.slices.plane import plane_through_images  # noqa: E402


def digits_resnet9(weights: Path | None):
    from bnviz.images.networks import build_model
    from bnviz.slices.sources import load_images
    from bnviz.slices.torch_import import load_network, slice_net

    if weights is not None:
        model, _ = load_network(weights)
    else:
        model = build_model("resnet9", 1, 10, 8, "bn", width=16, seed=0).eval()
    images = load_images("digits", (1, 8, 8))
    return slice_net(model, (1, 8, 8)), plane_through_images(images.test[:3])


def regioncam_layers(net) -> list:
    """The conv chain unrolled to Regioncam's dense float32 layers, BN folded: ("linear", W,
    b) and ("relu",), built once, outside Regioncam's timing (its cut alone is timed)."""
    from bnviz.slices.graph import conv_matrix  # (here: the baseline's bnviz has no cost)

    shapes = net.shapes()
    layers, pending = [], None
    for op in net.ops:
        shape = shapes[op.inputs[0]]
        if op.kind == "conv":
            pending = conv_matrix(op, shape)
        elif op.kind == "bn":
            a = op.attrs
            scale = a["gamma"] / np.sqrt(a["var"] + a["eps"])
            per = int(np.prod(shape[1:]))
            sc = np.repeat(scale, per)
            sh = np.repeat(a["beta"] - scale * a["mean"], per)
            layers.append(("linear", np.ascontiguousarray((pending * sc[:, None]).T,
                                                          np.float32), sh.astype(np.float32)))
        elif op.kind == "relu":
            layers.append(("relu",))
        else:
            break
    return layers


def regioncam_regions(layers: list, plane, e: float) -> int:
    import regioncam

    cam = regioncam.Regioncam(size=e)
    cam.linear(np.stack([plane.u.ravel(), plane.v.ravel()]).astype(np.float32),
               plane.origin.ravel().astype(np.float32))
    for layer in layers:
        if layer[0] == "linear":
            cam.linear(layer[1], layer[2])
        else:
            cam.relu()
    return cam.num_faces


def chain_net(channels: int, size: int):
    from onnx_nets import conv_net

    from bnviz.slices.onnx_import import load_onnx

    path = Path(tempfile.mkdtemp()) / "chain.onnx"
    conv_net(path, channels=channels, size=size, residual=False)
    net = load_onnx(path)
    relus = [i for i, op in enumerate(net.ops) if op.kind == "relu"]
    cut = relus[-1] + 1  # the conv chain alone (Regioncam's part)
    from bnviz.slices.graph import Op, SliceNet

    flat = Op("flatten", "flat_bench", (net.ops[relus[-1]].output,), "flat_bench")
    d = int(np.prod(net.shapes()[net.ops[relus[-1]].output]))
    # one logit, zero: the decision cells cost one corner test a region, as Regioncam finds
    # none (a head of the chain's D outputs would add the argmax cells of D classes)
    head = Op("linear", "logit_bench", ("flat_bench",), "logit_bench",
              {"weight": np.zeros((1, d)), "bias": np.zeros(1)})
    return SliceNet(net.ops[:cut] + (flat, head), net.input, "logit_bench", net.input_shape)


#: The cut as it was when issue 45 opened: section 1's baseline is this commit's code, taken
#: from git into a folder of its own and run like this one's (``git archive``).
BASELINE_COMMIT = "241d9e222b2109dd853e5eebd6fc54466f413573"
#: Section 1's networks: name -> the window as a fraction of the default one (ResNet9,
#: CNN) or the extent (the residual net), each >= 10 000 regions.
PER_CORE = {"digits ResNet9": 0.06, "appendix CNN": 0.015, "residual ONNX": 3.0}


def residual_onnx():
    """The residual net with max pooling and leaky ReLU, 12x12, and a seeded plane."""
    from onnx_nets import conv_net

    from bnviz.slices.onnx_import import load_onnx

    path = Path(tempfile.mkdtemp()) / "residual.onnx"
    conv_net(path, channels=8, size=12, residual=True, maxpool=True, leaky=True)
    plane = plane_through_images(np.random.default_rng(0).normal(0, 1, (3, 1, 12, 12)))
    return load_onnx(path), plane


def _per_core_case(name: str, weights: Path | None):
    if name == "digits ResNet9":
        net, plane = digits_resnet9(weights)
    elif name == "appendix CNN":
        from bnviz.images.networks import build_model
        from bnviz.slices.sources import load_images
        from bnviz.slices.torch_import import slice_net

        model = build_model("cnn", 1, 10, 8, "bn", seed=0).eval()
        net = slice_net(model, (1, 8, 8))
        plane = plane_through_images(load_images("digits", (1, 8, 8)).test[:3])
    else:
        net, plane = residual_onnx()
        e = PER_CORE[name]
        return net, plane, (-e, e, -e, e)
    return net, plane, tuple(PER_CORE[name] * v for v in plane.default_window())


#: One cut in a fresh process, on the bnviz of ``sys.argv[1]`` (this checkout or the
#: baseline's folder): regions, CPU seconds, peak RSS over the start and the kept bytes, as
#: one JSON line.  Its own script, not a function of this module, so that the baseline's
#: bnviz is the only one imported.
CHILD = """
import json, resource, sys, time
from pathlib import Path
root, name, device, weights = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] or None
sys.path[:0] = [root, root + "/tests", sys.argv[5]]
import torch
torch.set_num_threads(1)
import bnviz.slices.engine
assert bnviz.slices.engine.__file__.startswith(root), bnviz.slices.engine.__file__
from bnviz.core import kernels
kernels.require()
from bnviz.slices.engine import cut_slice
from slice import _per_core_case
net, plane, window = _per_core_case(name, weights and Path(weights))
cut_slice(net, plane, tuple(0.01 * v for v in window), device=device)  # warm
start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.process_time()
s = cut_slice(net, plane, window, device=device)
cpu = time.process_time() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start
# every array a layer and its polygons hold (the baseline's rows of codes, this one's table)
kept = sum(a.nbytes for layer in s.layers for held in (layer, layer.regions)
           for a in vars(held).values() if hasattr(a, "nbytes"))
print(json.dumps([s.counts[-1], cpu, peak * 1024, kept]))
"""


def baseline_tree() -> Path | None:
    """The baseline commit's bnviz and tests in a folder of their own, or None (no git, or
    not a clone with that commit)."""
    root = Path(__file__).resolve().parents[1]
    folder = Path(tempfile.mkdtemp(prefix="bnviz-baseline-"))
    try:
        archive = subprocess.run(["git", "-C", str(root), "archive", BASELINE_COMMIT, "bnviz",
                                  "tests"], capture_output=True)
    except OSError:  # no git
        archive = None
    if archive is None or archive.returncode:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def _cut_in_child(root: Path, name: str, device: str, weights: Path | None) -> tuple:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), name, device, str(weights or ""),
         str(Path(__file__).resolve().parent)],
        capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if done.returncode:
        raise RuntimeError(f"the cut of {name} at {root} failed:\n{done.stderr[-2000:]}")
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def per_core(repeats: int, device: str, weights: Path | None) -> None:
    here = Path(__file__).resolve().parents[1]
    base = baseline_tree()
    print(f"\n1. per core ({device}, torch at 1 thread, a fresh process a cut; best of "
          f"{repeats}, alternately): regions per CPU-second, this checkout against the cut "
          f"when issue 45 opened (commit {BASELINE_COMMIT[:7]}"
          f"{', not in this clone: not timed' if base is None else ''})")
    print(f"{'net':>16} {'regions':>8} {'baseline':>9} {'now':>9} {'speed-up':>8} "
          f"{'peak KB/reg':>12} {'was':>7} {'kept B/reg':>10}")
    roots = {"now": here} if base is None else {"baseline": base, "now": here}
    try:
        _per_core_rows(roots, repeats, device, weights)
    finally:
        if base is not None:
            shutil.rmtree(base, ignore_errors=True)


def _per_core_rows(roots: dict[str, Path], repeats: int, device: str, weights: Path | None
                   ) -> None:
    for name in PER_CORE:
        best: dict[str, tuple] = {}
        for _ in range(repeats):
            for which, root in roots.items():
                got = _cut_in_child(root, name, device, weights)
                if which not in best or got[1] < best[which][1]:
                    best[which] = got
        n, t_now, m_now, kept = best["now"]
        if "baseline" not in roots:
            print(f"{name:>16} {n:>8,} {'-':>9} {n / t_now:>9,.0f} {'-':>8} "
                  f"{m_now / n / 1024:>12.1f} {'-':>7} {kept / n:>10.0f}")
            continue
        n_base, t_base, m_base, _ = best["baseline"]
        same = "" if n_base == n else f" (baseline: {n_base:,} regions)"
        print(f"{name:>16} {n:>8,} {n_base / t_base:>9,.0f} {n / t_now:>9,.0f} "
              f"{(n / t_now) / (n_base / t_base):>7.2f}x {m_now / n / 1024:>12.1f} "
              f"{m_base / n_base / 1024:>7.1f} {kept / n:>10.0f}{same}")


def fixed_cost(repeats: int) -> None:
    """The whole ``bnviz slice`` process on a 0.01-wide window (median of ``repeats``)."""
    from onnx_nets import conv_net

    folder = Path(tempfile.mkdtemp())
    model = conv_net(folder / "residual.onnx", channels=8, size=12, residual=True,
                     maxpool=True, leaky=True)
    _, plane = residual_onnx()
    np.savez(folder / "plane.npz", origin=plane.origin, u=plane.u, v=plane.v)
    cmd = [sys.executable, "-m", "bnviz", "slice", "--model", str(model), "--plane",
           str(folder / "plane.npz"), "--extent", "0.005", "--format", "summary", "--quiet"]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    print(f"\n4. fixed cost: bnviz slice, a 0.01-wide window, whole process: median "
          f"{statistics.median(times):.2f} s of {repeats} (min {min(times):.2f} s)")


def two_workers() -> None:
    """Section 5: bench/slice_tiles.py's figures at its defaults."""
    from slice_tiles import report

    print("\n5. two worker processes over one (bench/slice_tiles.py)")
    report(argparse.Namespace(width=16, fraction=0.05, tiles=8, repeats=1))


def blas_kernels() -> str:
    """Which kernels numpy's BLAS runs (the CPU's float64 products: bnviz.blas), and why."""
    from threadpoolctl import threadpool_info

    found = sorted({f"{i['internal_api']} {i.get('architecture')}" for i in threadpool_info()
                    if i["user_api"] == "blas"})
    told = os.environ.get("OPENBLAS_CORETYPE")
    return (f"numpy's BLAS: {', '.join(found) or 'none found'} "
            f"({'OPENBLAS_CORETYPE=' + told if told else 'its own choice'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", type=Path, default=None)
    ap.add_argument("--fractions", default="0.01,0.02,0.04,0.06",
                    help="windows as fractions of the default one")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--skip-digits", action="store_true")
    ap.add_argument("--quick", action="store_true", help="sections 1 and 4 only")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs, device {args.device}")
    print(blas_kernels())
    per_core(args.repeats, "cpu", args.weights)
    if torch.cuda.is_available():
        per_core(args.repeats, "cuda", args.weights)
    if args.quick:
        fixed_cost(args.repeats)
        return
    if not args.skip_digits:
        from bnviz.slices.cost import estimate_regions

        print("\n2. the digits ResNet9's default window")
        net, plane = digits_resnet9(args.weights)
        w = plane.default_window()
        t0 = time.perf_counter()
        est = estimate_regions(net, plane, w, device=args.device)
        print(f"digits ResNet9 w16, default window [-{w[1]:.2f}, {w[1]:.2f}]^2: about "
              f"{est.regions:,} regions, standard error {est.error:,} (estimate, "
              f"{time.perf_counter() - t0:.2f} s)")
        cut_slice(net, plane, tuple(0.005 * v for v in w), device=args.device)  # warm
        print(f"{'window':>10} {'regions':>9} {'seconds':>8} {'regions/s':>10}")
        for f in (float(v) for v in args.fractions.split(",")):
            win = tuple(f * v for v in w)
            t0 = time.perf_counter()
            s = cut_slice(net, plane, win, device=args.device)
            dt = time.perf_counter() - t0
            print(f"{f:>9.3f}x {s.counts[-1]:>9,} {dt:>8.2f} {s.counts[-1] / dt:>10,.0f}")
    print("\n3. bnviz vs Regioncam, conv chain unrolled to dense, the same partition (no "
          f"decision cells): CPU seconds, torch at one thread, best of {args.repeats}; "
          "ratio = bnviz / Regioncam")
    print(f"{'net':>12} {'E':>6} {'bnviz':>9} {'Regioncam':>9} {'cpu bnviz':>9} "
          f"{'cpu RC':>8} {'ratio':>6}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    for channels, size, scale in ((8, 8, 0.25), (8, 8, 0.5), (16, 8, 0.4)):
        net = chain_net(channels, size)
        layers = regioncam_layers(net)
        rng = np.random.default_rng(1)
        plane = plane_through_images(rng.normal(0, 1, (3, 1, size, size)))
        e = float(np.abs(plane.anchors).max()) * scale
        tb, tr = [], []
        for _ in range(args.repeats):
            t0 = time.process_time()
            s = cut_slice(net, plane, (-e, e, -e, e), device=args.device)
            tb.append(time.process_time() - t0)
            t0 = time.process_time()
            rc = regioncam_regions(layers, plane, e)
            tr.append(time.process_time() - t0)
        print(f"{f'{channels}ch {size}px':>12} {e:>6.2f} {s.counts[-1]:>9,} {rc:>9,} "
              f"{min(tb):>9.2f} {min(tr):>8.2f} {min(tb) / min(tr):>6.2f}")
    torch.set_num_threads(threads)
    fixed_cost(args.repeats)
    two_workers()
    if torch.cuda.is_available() and args.device == "cpu":
        print("(a GPU is here: rerun with --device cuda for sections 2 and 3 on it)")


if __name__ == "__main__":
    main()
