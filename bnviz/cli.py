"""Command line: ``python -m bnviz partition ...`` (figures for slides and papers, scripted).

Bad options or files print one line on stderr and exit with code 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bnviz.core.limits import MAX_DEPTH, MAX_WIDTH, PartitionTooLarge
from bnviz.core.network import (
    ACTIVATIONS,
    MODES,
    Network,
    layer_statistics,
    load_network,
    random_network,
    select_batch,
)
from bnviz.data.datasets import DATASETS, make_dataset
from bnviz.data.pointfiles import load_points
from bnviz.jobs import cli as job_cli
from bnviz.jobs.local import WorkerRunning
from bnviz.jobs.store import StoreError
from bnviz.views.explorer import EXPLORER_LIMITS, SCOPES, slider_overrides

__all__ = ["main"]


class CLIError(Exception):
    """A problem with the user's options or files: one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line instead of usage + message
        raise CLIError(message)


def _int_at_least(lo: int, hi: int = 2**63 - 1):
    """argparse type: an integer from lo to hi (seeds and sizes must fit torch's int64)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") \
                from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"expected an integer from {lo} to {hi}, got "
                                             f"{text[:40]}")
        return value

    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _batch_size(text: str) -> int | None:
    if text.strip().lower() in ("all", "none", "full"):
        return None
    return _positive_int(text)


def _build_parser() -> _Parser:
    parser = _Parser(prog="python -m bnviz",
                     description="Exact input-space partitions of batch-normalized networks.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("partition", help="the exact partition of every layer, as JSON or a picture")
    p.add_argument("--depth", type=_positive_int, default=4, help=f"layers L (<= {MAX_DEPTH})")
    p.add_argument("--width", type=_positive_int, default=6,
                   help=f"units per layer (<= {MAX_WIDTH})")
    p.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    p.add_argument("--alpha", type=_finite_float, default=0.1,
                   help="leaky-ReLU slope, 0 < alpha < 1")
    p.add_argument("--mode", choices=MODES, default="bn")
    p.add_argument("--dataset", choices=DATASETS, default="moons")
    p.add_argument("--n", type=_positive_int, default=100, help="number of data points")
    p.add_argument("--seed", type=_nonneg_int, default=0, help="seeds weights, data and batch")
    p.add_argument("--batch-seed", type=_nonneg_int, default=None,
                   help="seed of the mini-batch (default: --seed)")
    p.add_argument("--batch-size", type=_batch_size, default=None,
                   help="mini-batch size for mu, sigma, or 'all' (default: all data)")
    p.add_argument("--extent", type=_finite_float, default=3.0, help="input box [-E, E]^2")
    p.add_argument("--head", type=int, choices=(0, 1, 2), default=0,
                   help="classifier head logits (draws its decision boundary)")
    p.add_argument("--weights", type=Path,
                   help=".npz with W1..WL (and c1..cL, head_W, head_b); sets depth and widths")
    p.add_argument("--data", type=Path, help="the data: .npy (n, 2) or .csv x,y[,label]")
    p.add_argument("--mu-scale", type=_finite_float, default=1.0,
                   help="mu = t * mu_BN, t in [0, 1.5] (the explorer's mu slider; default 1)")
    p.add_argument("--sigma-scale", type=_finite_float, default=1.0,
                   help="sigma = s * sigma_BN, s in [0.25, 4] (the sigma slider; default 1)")
    p.add_argument("--scope", choices=SCOPES, default="all",
                   help="the sliders act on all layers, --target-layer, or one unit")
    p.add_argument("--target-layer", type=_positive_int, default=1)
    p.add_argument("--target-unit", type=_nonneg_int, default=0, help="0-based unit")
    p.add_argument("--recompute-statistics", action="store_true",
                   help="recompute later layers' mu, sigma after a slider change (default: "
                        "frozen, as the explorer and the paper's Figure 2)")
    p.add_argument("--format", choices=("json", "svg", "png"), default="json")
    p.add_argument("--out", type=Path, help="output file (default: stdout)")
    p.add_argument("--device", default=None, help="torch device (default: cuda if available)")

    j = sub.add_parser("jitter", help="decision-boundary realisations across mini-batches (Fig. 6)")
    j.add_argument("--dataset", choices=DATASETS, default="moons",
                   help="binary task (labels mod 2)")
    j.add_argument("--n", type=_positive_int, default=200)
    j.add_argument("--depth", type=_positive_int, default=3)
    j.add_argument("--width", type=_positive_int, default=8)
    j.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    j.add_argument("--seed", type=_nonneg_int, default=0, help="seeds data, weights, batches")
    j.add_argument("--batch-size", type=_positive_int, default=16)
    j.add_argument("--realizations", type=_positive_int, default=16)
    j.add_argument("--virtual-batch-size", type=_positive_int, default=None,
                   help="noise-controlled BN: raise the statistics' variance to a batch of B'")
    j.add_argument("--train-steps", type=_nonneg_int, default=0,
                   help="train the network first (mini-batches of --batch-size)")
    j.add_argument("--optimizer", choices=("sgd", "adam"), default="adam")
    j.add_argument("--lr", type=_finite_float, default=0.01)
    j.add_argument("--weights", type=Path, help=".npz of a (trained) network with head_W")
    j.add_argument("--save", type=Path, help="write the (trained) network to this .npz")
    j.add_argument("--extent", type=_finite_float, default=3.0)
    j.add_argument("--json", action="store_true", help="JSON output (the default)")
    j.add_argument("--format", choices=("json", "png", "svg"), default="json")
    j.add_argument("--out", type=Path)
    j.add_argument("--device", default=None)

    d = sub.add_parser("density", help="concentration of the facets near the data (Fig. 3)")
    d.add_argument("--depth", type=_positive_int, default=11)
    d.add_argument("--width", type=_positive_int, default=1024)
    d.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    d.add_argument("--dataset", choices=DATASETS, default="star")
    d.add_argument("--n", type=_positive_int, default=50)
    d.add_argument("--seed", type=_nonneg_int, default=0)
    d.add_argument("--mode", choices=MODES, default="bn")
    d.add_argument("--layers", default=None,
                   help="comma-separated layers (default: first, middle, last, e.g. 1,7,11)")
    d.add_argument("--grid", type=_positive_int, default=128)
    d.add_argument("--eps", type=_finite_float, default=1.0, help="ball radius in grid cells")
    d.add_argument("--radius", type=_finite_float, default=0.15,
                   help="'near the data' distance for the near-data ratio")
    d.add_argument("--extent", type=_finite_float, default=3.0)
    d.add_argument("--json", action="store_true", help="JSON output (the default)")
    d.add_argument("--format", choices=("json", "png", "svg"), default="json")
    d.add_argument("--out", type=Path)
    d.add_argument("--device", default=None)

    b = sub.add_parser("bnstats", help="distributions of the BN statistics (Fig. 7, eq. 13)")
    b.add_argument("--batch-size", type=_positive_int, default=64)
    b.add_argument("--train-size", type=_positive_int, default=1000)
    b.add_argument("--samples", type=_positive_int, default=2000)
    b.add_argument("--virtual-batch-size", type=_positive_int, default=None,
                   help="default: half the batch size (the paper: 64 -> 32)")
    b.add_argument("--seed", type=_nonneg_int, default=0)
    b.add_argument("--json", action="store_true", help="JSON output (the default)")
    b.add_argument("--out", type=Path)
    c = sub.add_parser("claims", help="every closed-form claim of the five papers, checked "
                                      "numerically (paper value beside computed value)")
    c.add_argument("--id", action="append", dest="ids", metavar="ID",
                   help="only this claim (repeatable); default: all")
    c.add_argument("--json", action="store_true", help="JSON output (default: a table)")
    c.add_argument("--out", type=Path)
    c.add_argument("--device", default=None)
    job_cli.add_commands(sub, _Parser)
    return parser


def _network(args: argparse.Namespace) -> Network:
    if args.weights is not None:
        if args.head:
            raise CLIError("--head draws a random head and cannot be combined with --weights: "
                           "put head_W (and head_b) in the .npz instead")
        net = load_network(args.weights, args.activation, args.alpha, args.mode)
        if net.depth > MAX_DEPTH or max(net.widths) > MAX_WIDTH:
            raise CLIError(f"{args.weights}: network of widths {net.widths} exceeds the limits "
                           f"(depth <= {MAX_DEPTH}, width <= {MAX_WIDTH})")
        return net
    if args.depth > MAX_DEPTH:
        raise CLIError(f"--depth {args.depth} is over the limit of {MAX_DEPTH}")
    if args.width > MAX_WIDTH:
        raise CLIError(f"--width {args.width} is over the limit of {MAX_WIDTH}")
    return random_network(args.depth, args.width, args.activation, args.alpha, args.mode,
                          args.seed, head_outputs=args.head)


def _run_partition(args: argparse.Namespace) -> bytes:
    from bnviz.core.export import partition_to_dict
    from bnviz.core.partition import box_from_extent, compute_partition
    from bnviz.device import pick_device

    if args.extent <= 0:
        raise CLIError(f"--extent must be > 0, got {args.extent}")
    data = load_points(args.data) if args.data is not None else make_dataset(
        args.dataset, args.n, args.seed)
    net = _network(args)
    if net.mode == "random_bias" and net.biases is None:
        raise CLIError(f"{args.weights}: mode random_bias needs arrays c1..cL")
    seed = args.seed if args.batch_seed is None else args.batch_seed
    batch = select_batch(data.points, args.batch_size, seed)
    device = pick_device(args.device)
    lo_t, hi_t = EXPLORER_LIMITS["mu_t"]
    lo_s, hi_s = EXPLORER_LIMITS["sigma_s"]
    if not lo_t <= args.mu_scale <= hi_t:
        raise CLIError(f"--mu-scale must be in [{lo_t:g}, {hi_t:g}], got {args.mu_scale}")
    if not lo_s <= args.sigma_scale <= hi_s:
        raise CLIError(f"--sigma-scale must be in [{lo_s:g}, {hi_s:g}], got {args.sigma_scale}")
    if args.scope != "all" and args.target_layer > net.depth:
        raise CLIError(f"--target-layer {args.target_layer}: the network has {net.depth} layers")
    target_width = net.widths[min(args.target_layer, net.depth) - 1]
    if args.scope == "unit" and args.target_unit >= target_width:
        raise CLIError(f"--target-unit {args.target_unit}: layer {args.target_layer} has "
                       f"units 0..{target_width - 1}")
    overrides = slider_overrides(net.depth, target_width, args.mu_scale, args.sigma_scale,
                                 args.scope, args.target_layer, args.target_unit)
    stats = layer_statistics(net, batch, overrides, frozen=not args.recompute_statistics)
    part = compute_partition(net, batch, box_from_extent(args.extent), stats=stats,
                             device=device)
    if args.format == "json":
        return (json.dumps(partition_to_dict(part)) + "\n").encode()
    from bnviz.views.render import render_partition

    title = f"{net.mode}, {net.activation}, widths {list(net.widths)}"
    return render_partition(part, data.points, args.format, title=title)


def _run_jitter(args: argparse.Namespace) -> bytes:
    from bnviz.device import pick_device
    from bnviz.views.jitter import JITTER_LIMITS, JitterSettings, binary_task, run_jitter
    from bnviz.views.train import save_network, train_network

    lo, hi = JITTER_LIMITS["train_steps"]
    if not lo <= args.train_steps <= hi:
        raise CLIError(f"--train-steps must be from {lo} to {hi}, got {args.train_steps}")
    if not 0 < args.extent <= 1e6:
        raise CLIError(f"--extent must be > 0, got {args.extent}")
    settings = JitterSettings(args.dataset, args.n, args.seed, args.depth, args.width,
                              args.activation, 0.1, args.seed, args.batch_size,
                              args.realizations, args.virtual_batch_size, args.seed,
                              args.extent)
    device = pick_device(args.device)
    data = binary_task(args.dataset, args.n, args.seed)
    net = None
    if args.weights is not None:
        net = load_network(args.weights, args.activation, mode="bn")
        if net.head is None:
            raise CLIError(f"{args.weights}: no classifier head (head_W) in the file")
        if net.depth > MAX_DEPTH or max(net.widths) > MAX_WIDTH:
            raise CLIError(f"{args.weights}: network of widths {net.widths} exceeds the limits")
    else:
        net = random_network(args.depth, args.width, args.activation, 0.1, "bn", args.seed,
                             head_outputs=2)
    extra = {"train_steps": args.train_steps}
    if args.train_steps:
        report = train_network(net, data.points, data.labels, args.train_steps,
                               batch_size=args.batch_size, lr=args.lr,
                               optimizer=args.optimizer, seed=args.seed, device=device)
        net = report.network
        extra |= {"final_loss": float(report.losses[-1]), "train_accuracy": report.accuracy}
    if args.save is not None:
        try:
            save_network(net, args.save)
        except OSError as exc:
            raise CLIError(f"cannot write {args.save}: {exc.strerror or exc}") from None
    result = run_jitter(settings, net=net, data=data, device=device)
    if args.format == "json":
        return (json.dumps(result.as_json() | extra) + "\n").encode()
    from bnviz.views.render import render_jitter

    return render_jitter(result, args.format)


def _run_bnstats(args: argparse.Namespace) -> bytes:
    from bnviz.views.bnstats import figure7_report

    virtual = args.virtual_batch_size
    if virtual is None:
        virtual = max(2, args.batch_size // 2)
    report = figure7_report(batch_size=args.batch_size, train_size=args.train_size,
                            samples=args.samples, virtual_batch_size=virtual, seed=args.seed)
    return (json.dumps(report) + "\n").encode()


def _run_density(args: argparse.Namespace) -> bytes:
    from bnviz.data.datasets import make_dataset
    from bnviz.device import pick_device
    from bnviz.views.density import MAX_DENSITY_WORK, concentration, density_work, near_data_ratio

    if args.layers is None:
        args.layers = ",".join(str(v) for v in sorted({1, (args.depth + 1) // 2 + 1
                                                       if args.depth > 2 else 1, args.depth}))
    try:
        layers = [int(v) for v in args.layers.split(",")]
    except ValueError:
        raise CLIError(
            f"--layers must be comma-separated layer numbers, got {args.layers!r}") from None
    if args.depth > MAX_DEPTH or args.width > 4096:
        raise CLIError(f"--depth <= {MAX_DEPTH} and --width <= 4096")
    if density_work(args.grid, args.depth, args.width) > MAX_DENSITY_WORK:
        raise CLIError("grid^2 x depth x width^2 is over the cap of 4e12: lower the grid, "
                       "the width or the depth")
    if not 0 < args.extent <= 1e6 or args.radius <= 0:
        raise CLIError("--extent and --radius must be > 0")
    data = make_dataset(args.dataset, args.n, args.seed)
    net = random_network(args.depth, args.width, args.activation, 0.1, args.mode, args.seed)
    e = args.extent
    result = concentration(net, data.points, layers, args.grid, args.eps, (-e, e, -e, e),
                           device=pick_device(args.device))
    ratios = near_data_ratio(result, data.points, args.radius)
    if args.format != "json":
        from bnviz.views.render import render_density

        return render_density(result, data.points, args.mode, args.format)
    return (json.dumps({
        "mode": args.mode, "grid": args.grid, "eps": args.eps, "radius": args.radius,
        "layers": [{"layer": layer, "max_concentration": int(c.max()),
                    "near_data_ratio": None if np.isnan(q) else float(q)}
                   for layer, c, q in zip(result.layers, result.counts, ratios, strict=True)],
        "seconds": result.seconds, "device": result.device,
        "gflops": result.flops / max(result.seconds, 1e-9) / 1e9,
    }) + "\n").encode()


def _run_claims(args: argparse.Namespace) -> bytes:
    """``{"claims": [{id, paper, statement, paper_value, computed, holds, how, view}]}``, or
    a table: one line per claim, then how it was computed."""
    from bnviz.device import pick_device
    from bnviz.papers.claims import run_claims

    claims = run_claims(args.ids, device=pick_device(args.device))
    if args.json:
        return (json.dumps({"claims": [c.as_json() for c in claims]}) + "\n").encode()

    def short(value) -> str:
        text = json.dumps(value, default=float)
        return text if len(text) <= 60 else text[:57] + "..."

    lines = []
    for c in claims:
        lines += [f"{'holds' if c.holds else 'FAILS'}  {c.id}  ({c.paper})",
                  f"       {c.statement}",
                  f"       paper: {short(c.paper_value)}   computed: {short(c.computed)}",
                  f"       {c.how}", ""]
    return "\n".join(lines).encode()


COMMANDS = {"partition": _run_partition, "jitter": _run_jitter, "bnstats": _run_bnstats,
            "density": _run_density, "claims": _run_claims}
#: Commands that return (output, exit code): jobs, the worker, data downloads.
STATUS_COMMANDS = {"jobs": job_cli.run_jobs, "worker": job_cli.run_worker,
                   "data": job_cli.run_data}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    code = 0
    try:
        args = parser.parse_args(argv)
        if args.command in STATUS_COMMANDS:
            payload, code = STATUS_COMMANDS[args.command](args)
        else:
            payload = COMMANDS[args.command](args)
        out = getattr(args, "out", None)
        if out is not None:
            try:
                out.write_bytes(payload)
            except OSError as exc:
                raise CLIError(f"cannot write {out}: {exc.strerror or exc}") from None
        else:
            sys.stdout.buffer.write(payload)
            sys.stdout.flush()
    except (CLIError, ValueError, PartitionTooLarge) as exc:  # PartitionTooLarge: ValueError
        print(f"bnviz: error: {exc}", file=sys.stderr)  # also ParamError, DataError
        return 2
    except KeyError as exc:
        print(f"bnviz: error: no job {exc.args[0]}", file=sys.stderr)
        return 2
    except (StoreError, TimeoutError, WorkerRunning) as exc:
        print(f"bnviz: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code
