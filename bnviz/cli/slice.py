"""``bnviz slice``: the exact partition of an image network on a plane through image space.

    bnviz slice --model net.onnx --data images.npy --through 0,1,2 --json
    bnviz slice --job ID [--arm ARM] [--run N] --bn train --batches 8
    bnviz slice --weights net.safetensors --arch resnet9 --plane plane.npz --extent 2

Options are checked by :class:`bnviz.params.SliceParams` before torch is loaded; the network
and the images are read next (one line for a file that does not fit), the region count is
estimated and checked, and only then is anything cut.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bnviz.caps import ARCHS, BN_SLICE_MODES, SLICE_MAX_REGIONS
from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError, check_output_path, integer, number, validated
from bnviz.cli.progress import add_quiet

__all__ = ["add_slice", "run_slice_command"]

FORMATS = ("summary", "json", "png", "svg")
_PARAMS = ("bn", "batches", "batch_size", "seed", "extent", "max_regions")


def _indices(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers like 0,1,2, got {text!r}"
                                         ) from None
    if any(v < 0 for v in out):
        raise argparse.ArgumentTypeError(f"image indices are 0 or more, got {text!r}")
    return out


def add_slice(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("slice", help=summary("slice"))
    add_quiet(p)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--concentration", type=integer, metavar="N",
                     help="train --train-type here (BN beside no BN), then measure each "
                          "network's region density near 3 images over far from them, on N "
                          "random triples of test images (the replication entry)")
    src.add_argument("--model", type=Path, help="an ONNX file (opset >= 13)")
    src.add_argument("--job", help="a finished image job's id: its kept network")
    src.add_argument("--weights", type=Path, help="a safetensors file of a bnviz --arch")
    p.add_argument("--arm", help="the job's arm (default: the first it kept)")
    p.add_argument("--run", type=integer, default=0, help="the job's run (default 0)")
    p.add_argument("--arch", choices=ARCHS, help="the architecture of --weights")
    p.add_argument("--data", help="images: a data set name (digits, cifar10, ...; default: "
                                  "the job's, else digits) or an .npy (N, C, H, W)")
    plane = p.add_mutually_exclusive_group()
    plane.add_argument("--through", type=_indices, default=None,
                       help="three test image indices i,j,k (default 0,1,2), or one index: "
                            "a plane through it along two random directions (--seed)")
    plane.add_argument("--plane", type=Path, help=".npz with origin, u, v of the image shape")
    p.add_argument("--extent", type=number, default=0.0,
                   help="window [-E, E]^2 (default: the images with a margin; needed with "
                        "--plane)")
    p.add_argument("--bn", choices=BN_SLICE_MODES, default="eval",
                   help="eval: running statistics; train: a mini-batch's")
    p.add_argument("--batch", type=Path, help="train mode: .npy (N, C, H, W) float32 images "
                                              "the mini-batches are drawn from (default: the "
                                              "training images)")
    p.add_argument("--batches", type=integer, default=1, help="train mode: K mini-batches "
                                                               "(their boundaries' jitter)")
    p.add_argument("--batch-size", type=integer, default=64, help="images a mini-batch")
    p.add_argument("--seed", type=integer, default=0, help="mini-batches and random planes")
    p.add_argument("--max-regions", type=integer, default=SLICE_MAX_REGIONS,
                   help=f"refuse above this many regions (<= {SLICE_MAX_REGIONS})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON (default)")
    p.add_argument("--format", choices=FORMATS, default="summary",
                   help="summary/json: counts per layer, seconds, the boundary's jitter; "
                        "png, svg: a picture of the last layer")
    p.add_argument("--geometry", type=Path, default=None, metavar="FILE.npz",
                   help="also write every layer's regions (flat vertex arrays, codes, parents)")
    p.add_argument("--train-type", default="smart-init", help="with --concentration: the "
                                                                "training job type")
    p.add_argument("--train-epochs", type=integer, default=3)
    p.add_argument("--train-width", type=integer, default=16)
    p.add_argument("--out", type=Path, help="output file (default: stdout)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")


#: ``--bn train`` on an ONNX file without BN (torch.onnx.export folds BN into the
#: convolutions by default): train mode would silently be eval mode.
NO_BN_IN_FILE = ("--bn train: the network has no BatchNormalization node (it was folded into "
                 "the convolutions at export, so there are no batch statistics to use); export "
                 "it with BN kept: model.eval(), then torch.onnx.export(..., training="
                 "torch.onnx.TrainingMode."
                 "PRESERVE, do_constant_folding=False)")


def run_slice_command(args: argparse.Namespace) -> bytes:
    check_output_path("--geometry", args.geometry, (".npz",))
    if args.concentration is not None:
        return _concentration(args)
    from bnviz.params import SliceParams

    params = validated(SliceParams, {name: getattr(args, name) for name in _PARAMS})
    if args.plane is not None and args.extent <= 0:
        raise CLIError("--plane needs --extent E (the window [-E, E]^2)")
    if args.weights is not None and args.arch is None:
        raise CLIError("--weights needs --arch (one of " + ", ".join(ARCHS) + ")")
    through = args.through if args.through is not None else (0, 1, 2)
    if args.plane is None and len(through) not in (1, 3):
        raise CLIError("--through takes three image indices (or one)")
    return _slice(params, args, through)


def _slice(params, args: argparse.Namespace, through: tuple[int, ...]) -> bytes:
    import numpy as np

    from bnviz.device import pick_device
    from bnviz.slices.plane import load_plane, plane_through_image, plane_through_images
    from bnviz.slices.sources import job_network, load_images, open_network
    from bnviz.slices.view import run_slice, slice_provenance, slice_summary

    device = pick_device(args.device)
    weights, data = args.weights, args.data
    if args.job is not None:
        weights, job_data = job_network(args.job, args.arm, args.run)
        data = data or job_data
    net = open_network(args.model, weights, args.arch)
    if args.model is not None and params.bn == "train" and \
            not any(op.kind == "bn" for op in net.ops):
        raise CLIError(NO_BN_IN_FILE)
    # images only where they are used: the plane through them, or train mode's batches
    wanted = args.plane is None or (params.bn == "train" and args.batch is None)
    images = load_images(data or "digits", net.input_shape) if wanted else None
    if args.plane is not None:
        plane = load_plane(args.plane, net.input_shape)
    else:
        if max(through) >= len(images.test):
            raise CLIError(f"--through: {images.name} has {len(images.test)} test images "
                           f"(indices 0 to {len(images.test) - 1})")
        chosen = images.test[list(through)]
        plane = plane_through_images(chosen) if len(through) == 3 else \
            plane_through_image(chosen[0], params.seed)
    train = images.train if images is not None else None
    if args.batch is not None:
        train = load_images(str(args.batch), net.input_shape).test
    from bnviz.cli.progress import progress_bar

    with progress_bar(args, "slice") as report:
        result = run_slice(net, plane, params, train, device, report)
    provenance = slice_provenance(result, _batch_source(args, images, params))
    if args.geometry is not None:
        _write_geometry(result.slices[0], args.geometry, provenance)
    if args.format in ("png", "svg"):
        from bnviz.slices.picture import render_slice

        return render_slice(result, args.format)
    summary = slice_summary(result, net) | {"provenance": provenance}
    if images is not None and images.labels is not None and args.plane is None:
        summary["labels"] = [int(images.labels[i]) for i in through]
    if args.geometry is not None:
        summary["geometry"] = str(args.geometry)
    return (json.dumps(summary, default=lambda v: np.asarray(v).tolist()) + "\n").encode()


def _concentration(args: argparse.Namespace) -> bytes:
    import sys

    from bnviz.device import pick_device
    from bnviz.images.sweep import SWEEP_TYPES
    from bnviz.slices.concentration import slice_concentration

    if not 2 <= args.concentration <= 100:
        raise CLIError("--concentration: 2 to 100 triples of images")
    if args.train_type not in SWEEP_TYPES:
        raise CLIError(f"--train-type: one of {', '.join(SWEEP_TYPES)}")
    params = {"dataset": args.data or "digits", "epochs": args.train_epochs, "runs": 1,
              "width": args.train_width, "seed": args.seed}
    out = slice_concentration(args.train_type, params, args.concentration, args.seed,
                              pick_device(args.device),
                              lambda line: print(line, file=sys.stderr, flush=True))
    return (json.dumps(out) + "\n").encode()


def _batch_source(args: argparse.Namespace, images, params) -> str | None:
    """Where train mode's mini-batches were drawn from: the batch file's sha256, or the data
    set's training images."""
    if params.bn != "train":
        return None
    if args.batch is not None:
        import hashlib

        return "sha256:" + hashlib.sha256(Path(args.batch).read_bytes()).hexdigest()
    return f"{images.name}: training images"


def _write_geometry(s, path: Path, provenance: dict) -> None:
    import numpy as np

    plane = provenance["plane"]
    arrays = {"window": np.asarray(s.window), "decision_boundary": s.decision_boundary,
              "plane_origin": np.reshape(plane["origin"], plane["shape"]),
              "plane_u": np.reshape(plane["u"], plane["shape"]),
              "plane_v": np.reshape(plane["v"], plane["shape"]),
              # the rest as one JSON text (a unicode array: np.load reads it without pickle)
              "provenance": np.asarray(json.dumps(provenance))}
    for i, lay in enumerate(s.layers):
        arrays |= {f"layer{i}_ptr": lay.regions.ptr, f"layer{i}_vertices": lay.regions.vertices,
                   f"layer{i}_codes": lay.regions.packed_codes, f"layer{i}_parents": lay.parents,
                   f"layer{i}_facets": lay.facets}
    try:
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None
