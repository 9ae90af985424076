"""``bnviz partition``: the exact partition of every layer, as JSON or a picture.

Options are checked by :class:`bnviz.params.PartitionParams` before torch is loaded: the
bounds, the sliders' target, a BN batch of at least 2 points, and the expected regions against
the engine's cap (refused at once, not after minutes of cutting).
"""

from __future__ import annotations

import argparse
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
)
from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError, batch_size, check_output_path, integer, number, validated

if TYPE_CHECKING:
    from bnviz.params import PartitionParams

__all__ = ["FORMATS", "add_partition", "run_partition"]

#: What ``--format`` may say ("json": the summary, which is JSON too).
FORMATS: tuple[str, ...] = ("summary", "json", "json-full", "svg", "png")

#: The options whose values the model checks (the files and the output are not parameters).
_PARAMS = ("depth", "width", "activation", "alpha", "mode", "dataset", "n", "seed",
           "batch_seed", "batch_size", "extent", "shift_x", "shift_y", "head", "mu_scale",
           "sigma_scale", "scope",
           "target_layer", "target_unit")


def add_partition(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("partition", help=summary("partition"))
    p.add_argument("--depth", type=integer, default=4, help=f"layers L (<= {MAX_DEPTH})")
    p.add_argument("--width", type=integer, default=6, help=f"units per layer (<= {MAX_WIDTH})")
    p.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    p.add_argument("--alpha", type=number, default=0.1, help="leaky-ReLU slope, 0 < alpha < 1")
    p.add_argument("--mode", choices=MODES, default="bn")
    p.add_argument("--dataset", choices=DATASETS, default="moons")
    p.add_argument("--n", type=integer, default=100, help="number of data points")
    p.add_argument("--seed", type=integer, default=0, help="seeds weights, data and batch")
    p.add_argument("--batch-seed", type=integer, default=None,
                   help="seed of the mini-batch (default: --seed)")
    p.add_argument("--batch-size", type=batch_size, default=None,
                   help="mini-batch size for mu, sigma (>= 2), or 'all' (default: all data)")
    p.add_argument("--extent", type=number, default=3.0, help="input box [-E, E]^2")
    p.add_argument("--shift-x", type=number, default=0.0,
                   help="move the generated data by this in x (off the origin, BN and zero "
                        "bias differ already in layer 1: Figure 1)")
    p.add_argument("--shift-y", type=number, default=0.0, help="the same in y")
    p.add_argument("--head", type=int, choices=(0, 1, 2), default=0,
                   help="classifier head logits (draws its decision boundary)")
    p.add_argument("--weights", type=Path,
                   help=".npz with W1..WL (and c1..cL, head_W, head_b); sets depth and widths")
    p.add_argument("--data", type=Path, help="the data: .npy (n, 2) or .csv x,y[,label]")
    p.add_argument("--mu-scale", type=number, default=1.0,
                   help="mu = t * mu_BN, t in [0, 1.5] (the explorer's mu slider; default 1)")
    p.add_argument("--sigma-scale", type=number, default=1.0,
                   help="sigma = s * sigma_BN, s in [0.25, 4] (the sigma slider; default 1)")
    p.add_argument("--scope", choices=SCOPES, default="all",
                   help="the sliders act on all layers, --target-layer, or one unit")
    p.add_argument("--target-layer", type=integer, default=1)
    p.add_argument("--target-unit", type=integer, default=0, help="0-based unit")
    p.add_argument("--recompute-statistics", action="store_true",
                   help="recompute later layers' mu, sigma after a slider change (default: "
                        "frozen, as the explorer and the paper's Figure 2)")
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
    from bnviz.params import PartitionParams

    if args.weights is not None and args.head:
        raise CLIError("--head draws a random head and cannot be combined with --weights: "
                       "put head_W (and head_b) in the .npz instead")
    values = {name: getattr(args, name) for name in _PARAMS} | {"data_file": args.data
                                                                is not None}
    params = validated(PartitionParams, values)  # before torch: refusals are immediate
    net = None
    if args.weights is not None:
        from bnviz.core.network import load_network

        net = load_network(args.weights, args.activation, args.alpha, args.mode)
        params = validated(PartitionParams, values | {"widths": net.widths},
                           {"widths": str(args.weights)})
        if net.mode == "random_bias" and net.biases is None:
            raise CLIError(f"{args.weights}: mode random_bias needs arrays c1..cL")
    return _partition(params, args, net)


def _partition(params: PartitionParams, args: argparse.Namespace, net) -> bytes:
    from bnviz.core.export import full_json, partition_summary, write_geometry
    from bnviz.core.network import (
        layer_statistics,
        random_network,
        select_batch,
        slider_overrides,
    )
    from bnviz.core.partition import box_from_extent, compute_partition
    from bnviz.data.datasets import make_dataset, shifted
    from bnviz.data.pointfiles import load_points
    from bnviz.device import device_name
    from bnviz.params.cost import check_bn_batch

    p = params
    data = load_points(args.data) if args.data is not None else shifted(make_dataset(
        p.dataset, p.n, p.seed), p.shift_x, p.shift_y)
    if net is None:
        net = random_network(p.depth, p.width, p.activation, p.alpha, p.mode, p.seed,
                             head_outputs=p.head)
    batch = select_batch(data.points, p.batch_size, p.seed if p.batch_seed is None
                         else p.batch_seed)
    check_bn_batch(batch, net.weights[0], net.mode)
    device = device_name(args.device)
    target_width = net.widths[min(p.target_layer, net.depth) - 1]
    overrides = slider_overrides(net.depth, target_width, p.mu_scale, p.sigma_scale, p.scope,
                                 p.target_layer, p.target_unit)
    stats = layer_statistics(net, batch, overrides, frozen=not args.recompute_statistics)
    part = compute_partition(net, batch, box_from_extent(p.extent), stats=stats, device=device)
    if args.geometry is not None:
        try:
            write_geometry(part, args.geometry)
        except OSError as exc:
            raise CLIError(f"cannot write {args.geometry}: {exc.strerror or exc}") from None
    if args.format in ("summary", "json"):
        summary = partition_summary(part, net.mode, data.points)
        if args.geometry is not None:
            summary["geometry"] = str(args.geometry)
        return (json.dumps(summary) + "\n").encode()
    if args.format == "json-full":
        return full_json(part)
    from bnviz.views.render import render_partition

    title = f"{net.mode}, {net.activation}, widths {list(net.widths)}"
    return render_partition(part, data.points, args.format, title=title)
