"""``bnviz partition``: the exact partition of every layer, as JSON or a picture.

A thin parser over :class:`bnviz.params.PartitionParams`, the explorer page's model: one flag
for each of its fields, with the field's name (``--weight-seed`` for ``weight_seed``) and its
default, so the page, the command and the lecture name and default each setting the same way.
The files (``--weights-file``, ``--data``) and the output are not parameters. Options are
checked before torch is loaded: the bounds, a BN batch of at least 2 points, and the expected
regions against the engine's cap (refused at once, not after minutes of cutting); then
:func:`bnviz.views.explorer.partition_of` computes what the page computes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from bnviz.caps import (
    ACTIVATIONS,
    DATASETS,
    GEOMETRY_SUFFIXES,
    MAX_DEPTH,
    MAX_WIDTH,
    MODES,
    SCOPES,
    WEIGHTS,
)
from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError, batch_size, check_output_path, integer, number, validated

if TYPE_CHECKING:
    from bnviz.core.network import Network
    from bnviz.data.datasets import Dataset
    from bnviz.params import PartitionParams

__all__ = ["FORMATS", "add_partition", "run_partition"]

#: What ``--format`` may say ("json": the summary, which is JSON too).
FORMATS: tuple[str, ...] = ("summary", "json", "json-full", "svg", "png")

#: The model's fields that are no flag: a file's network and data set them, and the page's
#: highlighted layer is a view (the command computes every layer).
_FROM_FILES = ("widths", "data_file", "layer")


def add_partition(sub: argparse._SubParsersAction) -> None:
    """One flag per field of PartitionParams, of the field's name and default (written out
    here, so that ``--help`` and a syntax error load no model; tests/cli/
    test_partition_route.py holds them to the model's). No abbreviations: the old ``--n``
    would pass for ``--n-points``."""
    p = sub.add_parser("partition", help=summary("partition"), allow_abbrev=False)
    p.add_argument("--depth", type=integer, default=4, help=f"layers L (<= {MAX_DEPTH})")
    p.add_argument("--width", type=integer, default=8, help=f"units per layer (<= {MAX_WIDTH})")
    p.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    p.add_argument("--alpha", type=number, default=0.1, help="leaky-ReLU slope, 0 < alpha < 1")
    p.add_argument("--mode", choices=MODES, default="bn")
    p.add_argument("--weight-seed", type=integer, default=0,
                   help="seed of the random weights (He-normal)")
    p.add_argument("--weights", choices=WEIGHTS, default="random",
                   help="random, or those weights trained with BN on the data (Figure 9)")
    p.add_argument("--dataset", choices=DATASETS, default="moons")
    p.add_argument("--n-points", type=integer, default=100, help="number of data points")
    p.add_argument("--data-seed", type=integer, default=0, help="seed of the generated data")
    p.add_argument("--batch-size", type=batch_size, default=None,
                   help="mini-batch size for mu, sigma (>= 2), or 'all' (default: all data)")
    p.add_argument("--batch-seed", type=integer, default=0, help="seed of the mini-batch")
    p.add_argument("--extent", type=number, default=3.0, help="input box [-E, E]^2")
    p.add_argument("--shift-x", type=number, default=0.0,
                   help="move the generated data by this in x (off the origin, BN and zero "
                        "bias differ already in layer 1: Figure 1)")
    p.add_argument("--shift-y", type=number, default=0.0, help="the same in y")
    p.add_argument("--head", type=int, choices=(0, 1, 2), default=0,
                   help="classifier head logits (draws its decision boundary)")
    p.add_argument("--mu-t", type=number, default=1.0,
                   help="mu = t * mu_BN, t in [0, 1.5] (the explorer's mu slider; default 1)")
    p.add_argument("--sigma-s", type=number, default=1.0,
                   help="sigma = s * sigma_BN, s in [0.25, 4] (the sigma slider; default 1)")
    p.add_argument("--scope", choices=SCOPES, default="all",
                   help="the sliders act on all layers, --target-layer, or one unit")
    p.add_argument("--target-layer", type=integer, default=1)
    p.add_argument("--target-unit", type=integer, default=0, help="0-based unit")
    p.add_argument("--recompute-statistics", action="store_true",
                   help="recompute later layers' mu, sigma after a slider change (default: "
                        "frozen, as the explorer and the paper's Figure 2)")
    p.add_argument("--weights-file", type=Path,
                   help=".npz with W1..WL (and c1..cL, head_W, head_b); sets depth and widths")
    p.add_argument("--data", type=Path, help="the data: .npy (n, 2) or .csv x,y[,label]")
    p.add_argument("--format", choices=FORMATS, default="summary",
                   help="summary: counts, per-layer statistics, tolerance, engine seconds "
                        "(JSON, a few kB at any size; 'json' is the same); json-full: every "
                        "region and facet; svg, png: a picture")
    p.add_argument("--geometry", type=Path, default=None, metavar="FILE",
                   help="also write every layer's regions to FILE: .npz (flat arrays), "
                        ".parquet (GeoParquet) or .geojson")
    p.add_argument("--out", type=Path, help="output file (default: stdout)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")


def run_partition(args: argparse.Namespace) -> bytes:
    check_output_path("--geometry", args.geometry, GEOMETRY_SUFFIXES)  # refused at once
    if args.weights_file is not None and args.head:
        raise CLIError("--head draws a random head and cannot be combined with --weights-file: "
                       "put head_W (and head_b) in the .npz instead")
    from bnviz.params import PartitionParams

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(PartitionParams)
              if f.name not in _FROM_FILES} | {"data_file": args.data is not None}
    params = validated(PartitionParams, values)  # before torch: refusals are immediate
    params.check_cost()
    net = None
    if args.weights_file is not None:
        from bnviz.core.network import load_network

        net = load_network(args.weights_file, params.activation, params.alpha, params.mode)
        params = validated(PartitionParams, values | {"widths": net.widths},
                           {"widths": str(args.weights_file)})
        params.check_cost()
        if net.mode == "random_bias" and net.biases is None:
            raise CLIError(f"{args.weights_file}: mode random_bias needs arrays c1..cL")
    data = None
    if args.data is not None:
        from bnviz.data.pointfiles import load_points

        data = load_points(args.data)
    return _partition(params, args, net, data)


def _partition(params: PartitionParams, args: argparse.Namespace, net: Network | None,
               data: Dataset | None) -> bytes:
    from bnviz.core.export import full_json, partition_summary, write_geometry
    from bnviz.device import device_name
    from bnviz.views.explorer import partition_of

    run = partition_of(params, data=data, network=net, device=device_name(args.device))
    part, net = run.partition, run.network
    if args.geometry is not None:
        try:
            write_geometry(part, args.geometry)
        except OSError as exc:
            raise CLIError(f"cannot write {args.geometry}: {exc.strerror or exc}") from None
    if args.format in ("summary", "json"):
        summary = partition_summary(part, net.mode, run.data.points)
        if args.geometry is not None:
            summary["geometry"] = str(args.geometry)
        return (json.dumps(summary) + "\n").encode()
    if args.format == "json-full":
        return full_json(part)
    from bnviz.views.render import render_partition

    title = f"{net.mode}, {net.activation}, widths {list(net.widths)}"
    return render_partition(part, run.data.points, args.format, title=title)
