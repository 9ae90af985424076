"""Slices of image networks: how fast the exact cut is, in one process.

1. A digits ResNet9 (the jobs' default width 16; ``--weights F.safetensors`` for a trained
   one, else the seed's untrained network) through three test images, eval mode: the
   estimated regions of the default window, then windows of growing size, each cut in full
   (every layer), with regions, seconds and regions a second.
2. bnviz against Regioncam on the same network unrolled to dense float32 layers (a conv
   chain: conv-BN-ReLU x 3, the second strided; Regioncam has no residual add), on windows
   whose partitions have >= 10 000 regions: best of ``--repeats``, timed alternately so that
   a load on the machine hits both alike, and their ratio (below 1: bnviz is faster).

``--device cuda`` runs the affine maps on the GPU (the cuts stay on the CPU's compiled
kernels).  Prints the machine's load average first.  Run: ``.venv/bin/python bench/slice.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from bnviz.slices.cost import estimate_regions  # noqa: E402
from bnviz.slices.engine import cut_slice  # noqa: E402
from bnviz.slices.graph import conv_matrix  # noqa: E402
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


def regioncam_regions(net, plane, e: float) -> int:
    import regioncam

    cam = regioncam.Regioncam(size=e)
    shapes = net.shapes()
    cam.linear(np.stack([plane.u.ravel(), plane.v.ravel()]).astype(np.float32),
               plane.origin.ravel().astype(np.float32))
    pending = None
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
            cam.linear((pending * sc[:, None]).T.astype(np.float32), sh.astype(np.float32))
        elif op.kind == "relu":
            cam.relu()
        else:
            break
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

    head = Op("flatten", "flat_bench", (net.ops[relus[-1]].output,), "flat_bench")
    return SliceNet(net.ops[:cut] + (head,), net.input, "flat_bench", net.input_shape)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", type=Path, default=None)
    ap.add_argument("--fractions", default="0.01,0.02,0.04,0.06",
                    help="windows as fractions of the default one")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--skip-digits", action="store_true")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs, device {args.device}")
    if not args.skip_digits:
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
    print("\nbnviz vs Regioncam, conv chain unrolled to dense (best of "
          f"{args.repeats}; ratio = bnviz / Regioncam)")
    print(f"{'net':>12} {'E':>6} {'bnviz':>9} {'Regioncam':>9} {'t bnviz':>8} "
          f"{'t RC':>8} {'ratio':>6}")
    for channels, size, scale in ((8, 8, 0.25), (8, 8, 0.5), (16, 8, 0.4)):
        net = chain_net(channels, size)
        rng = np.random.default_rng(1)
        plane = plane_through_images(rng.normal(0, 1, (3, 1, size, size)))
        e = float(np.abs(plane.anchors).max()) * scale
        tb, tr = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            s = cut_slice(net, plane, (-e, e, -e, e), device=args.device)
            tb.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            rc = regioncam_regions(net, plane, e)
            tr.append(time.perf_counter() - t0)
        print(f"{f'{channels}ch {size}px':>12} {e:>6.2f} {s.counts[-1]:>9,} {rc:>9,} "
              f"{min(tb):>8.2f} {min(tr):>8.2f} {min(tb) / min(tr):>6.2f}")
    if torch.cuda.is_available() and args.device == "cpu":
        print("(a GPU is here: rerun with --device cuda)")


if __name__ == "__main__":
    main()
