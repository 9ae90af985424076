"""``bnviz slice``: the exact partition of an image network on a plane through image space.

    bnviz slice --model net.onnx --data images.npy --images 0,1,2 --json
    bnviz slice --job ID [--arms ARM] [--run N] --bn train --batches 8
    bnviz slice --weights net.safetensors --arch resnet9 --plane plane.npz --extent 2
    bnviz slice --job ID --submit        # a window of millions of regions, as a job

A thin parser over the one model of a slice, :class:`bnviz.params.slice.SliceSetup`: each
of its fields is the flag of its name, with its default, checked by the model before torch
is loaded; the cut is :func:`bnviz.slices.setup.slice_networks`, the route the /slice page's
job takes too (the network and the images read first, one line for a file that does not
fit, the region count estimated and checked, and only then anything cut).  What is printed
(summary, JSON, PNG/SVG, the geometry file and the provenance) is this module's.

``--submit`` queues the same flags as a slice job instead (:mod:`bnviz.slices.tiled_job`,
the model :class:`~bnviz.params.slice.SliceJobParams`: the command's, with a slice job's
region cap, which is ``--max-regions``' default there): checked and estimated here, one
line for what does not fit, then cut as tiles by the job system's workers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from bnviz.caps import ARCHS, BN_SLICE_MODES, SLICE_JOB_MAX_REGIONS, SLICE_MAX_REGIONS
from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError, check_output_path, integer, number, validated
from bnviz.cli.progress import add_quiet
from bnviz.params.slice import SliceJobParams, SliceSetup

__all__ = ["add_slice", "run_slice_command", "slice_setup"]

FORMATS = ("summary", "json", "png", "svg")
#: The model's fields, each the flag of its name, and their defaults (the flags' defaults).
_FIELDS = {f.name: f.default for f in dataclasses.fields(SliceSetup)}
#: The fields that name a file: absolute in a job's parameters (its worker has its own
#: working directory).
_FILES = ("model", "weights", "plane", "batch", "data")


class _Given(argparse.Action):
    """Stores the flag's value and notes that it was given (``args.given``): a slice job's
    default (``--submit``) is not the command's."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.given = {*getattr(namespace, "given", ()), self.dest}


def add_slice(sub: argparse._SubParsersAction) -> None:
    d = _FIELDS
    p = sub.add_parser("slice", help=summary("slice"))
    add_quiet(p)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--concentration", type=integer, metavar="T",
                     help="the replication entry's experiment: --seeds networks per arm (BN, "
                          "zero bias, random bias, BN's scale only) at initialisation and "
                          "trained here, each cut exactly in windows about T triples of test "
                          "images and about matched Gaussian and pixel-shuffled ones")
    src.add_argument("--model", type=Path, help="an ONNX file (opset >= 13)")
    src.add_argument("--job", help="a finished image job's id (its kept network), or an "
                                   "uploaded network's reference (up-...)")
    src.add_argument("--weights", type=Path, help="a safetensors file of a bnviz --arch")
    p.add_argument("--arms", default=d["arms"], metavar="ARM",
                   help="the job's arm (default: the first it kept; the /slice page cuts two "
                        "side by side, the command line one)")
    p.add_argument("--run", type=integer, default=d["run"], help="the job's run")
    p.add_argument("--arch", choices=ARCHS, default=d["arch"],
                   help="the architecture of --weights")
    p.add_argument("--data", default=None,
                   help="images: a data set name (digits, cifar10, ...) or an .npy (N, C, H, "
                        f"W) (default: {d['data']}; a job's network is cut on its job's data "
                        "set)")
    plane = p.add_mutually_exclusive_group()
    plane.add_argument("--images", default=d["images"], metavar="I,J,K",
                       help=f"three test image indices the plane goes through (default "
                            f"{d['images']}), or one index: a plane through it along two "
                            "random directions (--seed)")
    plane.add_argument("--plane", type=Path, help=".npz with origin, u, v of the image shape")
    p.add_argument("--extent", type=number, default=d["extent"],
                   help="window [-E, E]^2 (default: the images with a margin; needed with "
                        "--plane)")
    p.add_argument("--bn", choices=BN_SLICE_MODES, default=d["bn"],
                   help="eval: running statistics; train: a mini-batch's")
    p.add_argument("--batch", type=Path, help="train mode: .npy (N, C, H, W) float32 images "
                                              "the mini-batches are drawn from (default: the "
                                              "training images)")
    p.add_argument("--batches", type=integer, default=d["batches"],
                   help="train mode: K mini-batches (their boundaries' jitter)")
    p.add_argument("--batch-size", type=integer, default=d["batch_size"],
                   help="images a mini-batch")
    p.add_argument("--seed", type=integer, default=d["seed"],
                   help="mini-batches and random planes")
    p.add_argument("--max-regions", type=integer, default=d["max_regions"], action=_Given,
                   help=f"refuse above this many regions (<= {SLICE_MAX_REGIONS}; with "
                        f"--submit <= {SLICE_JOB_MAX_REGIONS}, which it takes when not given; "
                        "default: %(default)s)")
    p.add_argument("--tiles", type=integer, default=d["tiles"], metavar="N",
                   help="cut the window as N tiles, each exact, merged by full activation "
                        "code (the same regions as one cut; default 1; with --submit, 1 lets "
                        "the job choose)")
    p.add_argument("--submit", action="store_true",
                   help="queue the slice as a job instead (bnviz jobs wait ID, bnviz jobs "
                        "show ID): cut as tiles by the job system's workers, each tile stored "
                        "as it is done, so a rerun cuts only the missing ones")
    p.add_argument("--workers", type=integer, default=d["workers"], metavar="N",
                   help="processes cutting the tiles (default: every usable core)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON (default)")
    p.add_argument("--format", choices=FORMATS, default="summary",
                   help="summary/json: counts per layer, seconds, the boundary's jitter; "
                        "png, svg: a picture of the last layer")
    p.add_argument("--geometry", type=Path, default=None, metavar="FILE.npz",
                   help="also write every layer's regions (flat vertex arrays, codes, parents)")
    p.add_argument("--seeds", type=integer, default=5,
                   help="with --concentration: networks per arm (seeds --seed, --seed + 1, ...)")
    p.add_argument("--train-epochs", type=integer, default=3,
                   help="with --concentration: training epochs")
    p.add_argument("--train-width", type=integer, default=8,
                   help="with --concentration: the network's base width")
    p.add_argument("--half-width", type=number, default=0.03,
                   help="with --concentration: the windows' half-width (image-space length)")
    p.add_argument("--out", type=Path, help="output file (default: stdout)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")


def slice_setup(args: argparse.Namespace, model: type[SliceSetup] = SliceSetup) -> SliceSetup:
    """The model of the flags (one line naming the flag for a bad value): every field from
    the flag of its name, with the model's default (a flag not given: None; ``--max-regions``
    not given: ``model``'s)."""
    if args.job is not None and args.data is not None:
        raise CLIError("--data: a job's network is cut on its job's own data set (leave out "
                       "--data)")
    values = {name: getattr(args, name) for name in _FIELDS}
    if "max_regions" not in getattr(args, "given", ()):
        values.pop("max_regions")
    params = validated(model, {k: v for k, v in values.items() if v is not None})
    if "," in params.arms:
        raise CLIError("--arms: one arm (the command line cuts one network; the /slice page "
                       "cuts two side by side)")
    return params


def run_slice_command(args: argparse.Namespace) -> bytes:
    check_output_path("--geometry", args.geometry, (".npz",))
    if args.concentration is not None:
        if args.submit:
            raise CLIError("--submit: the concentration experiment runs here (bnviz "
                           "replicate keeps its outcome)")
        return _concentration(args)
    if args.submit:
        return _submit(args)
    return _slice(slice_setup(args), args)


def _submit(args: argparse.Namespace) -> bytes:
    """Queue the flags as a slice job: checked and its regions estimated here (one line),
    then handed to the job system; prints the job's id."""
    import os

    from bnviz import jobs

    for flag, value, default in (("--format", args.format, "summary"),
                                 ("--geometry", args.geometry, None),
                                 ("--device", args.device, None)):
        if value != default:
            raise CLIError(f"{flag}: not with --submit (the job cuts on its worker's device "
                           "and keeps its tiles: bnviz jobs show ID names their folder)")
    params = dataclasses.asdict(slice_setup(args, SliceJobParams))
    for name in _FILES:
        if params[name] is not None and os.path.isfile(params[name]):
            params[name] = os.path.abspath(params[name])
    try:
        job = jobs.submit_job("slice-tiles", params)
    except (jobs.StoreError, jobs.QueueFull, jobs.DiskFull) as exc:
        raise CLIError(str(exc).splitlines()[0]) from None
    tiles = job.params["tiles"]
    if args.json:
        return (json.dumps({"id": job.id, "type": job.type, "backend": job.backend,
                            "tiles": tiles}) + "\n").encode()
    return (f"submitted job {job.id} (slice-tiles, {job.backend} backend): {tiles} tiles; "
            f"bnviz jobs wait {job.id} follows it, bnviz jobs show {job.id} gives its counts "
            "per layer\n").encode()


def _slice(params: SliceSetup, args: argparse.Namespace) -> bytes:
    import numpy as np

    from bnviz.cli.progress import progress_bar
    from bnviz.device import pick_device
    from bnviz.slices.setup import slice_networks
    from bnviz.slices.view import slice_provenance, slice_summary

    device = pick_device(args.device)
    with progress_bar(args, "slice") as report:
        cut = slice_networks(params, device, report)
    prepared, result = cut.prepared, cut.results[0]
    provenance = slice_provenance(result, prepared.batch_source)
    if args.geometry is not None:
        _write_geometry(result.slices[0], args.geometry, provenance)
    if args.format in ("png", "svg"):
        from bnviz.slices.picture import render_slice

        return render_slice(result, args.format)
    summary = slice_summary(result, prepared.nets[0]) | {"provenance": provenance}
    if prepared.through is not None and prepared.images.labels is not None:
        summary["labels"] = prepared.labels
    if args.geometry is not None:
        summary["geometry"] = str(args.geometry)
    return (json.dumps(summary, default=lambda v: np.asarray(v).tolist()) + "\n").encode()


def _concentration(args: argparse.Namespace) -> bytes:
    import math
    import sys

    from bnviz.device import pick_device
    from bnviz.slices.concentration import slice_concentration
    from bnviz.slices.concentration_arms import Recipe

    if not 2 <= args.concentration <= 100:
        raise CLIError("--concentration: 2 to 100 triples of images")
    if not 1 <= args.seeds <= 20:
        raise CLIError("--seeds: 1 to 20 networks per arm")
    if not 1 <= args.train_epochs <= 50:
        raise CLIError("--train-epochs: 1 to 50")
    if not 1 <= args.train_width <= 64:
        raise CLIError("--train-width: 1 to 64")
    if not (math.isfinite(args.half_width) and 0 < args.half_width <= 10):
        raise CLIError("--half-width: above 0, at most 10")
    recipe = Recipe(arch=args.arch or "resnet9", width=args.train_width,
                    epochs=args.train_epochs)
    out = slice_concentration(args.concentration, list(range(args.seed, args.seed + args.seeds)),
                              args.data or "digits", recipe, args.half_width, args.seed,
                              pick_device(args.device),
                              lambda line: print(line, file=sys.stderr, flush=True))
    return (json.dumps(out) + "\n").encode()


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
