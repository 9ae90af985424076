"""``bnviz jitter`` (Figure 6), ``bnviz density`` (Figure 3), ``bnviz bnstats`` (Figure 7)
and ``bnviz figure9`` (Figure 9's numbers): each checks its options with its parameter model
before loading torch."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bnviz.caps import ACTIVATIONS, DATASETS, MODES, OPTIMIZERS, WEIGHTS
from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError, integer, number, validated
from bnviz.cli.progress import add_quiet, progress_bar

__all__ = ["add_bnstats", "add_density", "add_figure9", "add_jitter", "run_bnstats",
           "run_density", "run_figure9", "run_jitter"]


def add_jitter(sub: argparse._SubParsersAction) -> None:
    j = sub.add_parser("jitter", help=summary("jitter"))
    add_quiet(j)
    j.add_argument("--dataset", choices=DATASETS, default="moons",
                   help="binary task (labels mod 2)")
    j.add_argument("--n", type=integer, default=200)
    j.add_argument("--depth", type=integer, default=3)
    j.add_argument("--width", type=integer, default=8)
    j.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    j.add_argument("--seed", type=integer, default=0, help="seeds data, weights, batches")
    j.add_argument("--batch-size", type=integer, default=16)
    j.add_argument("--realizations", type=integer, default=16)
    j.add_argument("--virtual-batch-size", type=integer, default=None,
                   help="noise-controlled BN: raise the statistics' variance to a batch of B'")
    j.add_argument("--train-steps", type=integer, default=0,
                   help="train the network first (mini-batches of --batch-size)")
    j.add_argument("--optimizer", choices=OPTIMIZERS, default="adam")
    j.add_argument("--lr", type=number, default=0.01)
    j.add_argument("--weights", type=Path, help=".npz of a (trained) network with head_W")
    j.add_argument("--save", type=Path, help="write the (trained) network to this .npz")
    j.add_argument("--extent", type=number, default=3.0)
    j.add_argument("--json", action="store_true", help="JSON output (the default)")
    j.add_argument("--format", choices=("json", "png", "svg"), default="json")
    j.add_argument("--out", type=Path)
    j.add_argument("--device", default=None)


def run_jitter(args: argparse.Namespace) -> bytes:
    from bnviz.params import JitterParams, TrainingParams

    seed = args.seed  # one --seed for the data, the weights and the batches
    settings = validated(JitterParams, {
        "dataset": args.dataset, "n": args.n, "data_seed": seed, "depth": args.depth,
        "width": args.width, "activation": args.activation, "seed": seed,
        "batch_size": args.batch_size, "realizations": args.realizations,
        "virtual_batch_size": args.virtual_batch_size, "batch_seed": seed,
        "extent": args.extent}, {"data_seed": "--seed", "batch_seed": "--seed"})
    training = validated(TrainingParams, {"train_steps": args.train_steps,
                                          "optimizer": args.optimizer, "lr": args.lr})
    from bnviz.core.network import load_network, random_network
    from bnviz.device import pick_device
    from bnviz.params.cost import check_network_size
    from bnviz.views.jitter import binary_task, run_jitter
    from bnviz.views.train import save_network, train_network

    device = pick_device(args.device)
    data = binary_task(settings.dataset, settings.n, settings.data_seed)
    if args.weights is not None:
        net = load_network(args.weights, settings.activation, mode="bn")
        if net.head is None:
            raise CLIError(f"{args.weights}: no classifier head (head_W) in the file")
        check_network_size(net.widths, None)
    else:
        net = random_network(settings.depth, settings.width, settings.activation,
                             settings.alpha, "bn", settings.seed, head_outputs=2)
    extra = {"train_steps": training.train_steps}

    with progress_bar(args, "jitter") as report:
        if training.train_steps:
            trained = train_network(net, data.points, data.labels, training.train_steps,
                                    batch_size=settings.batch_size, lr=training.lr,
                                    optimizer=training.optimizer, seed=settings.seed,
                                    device=device)
            net = trained.network
            extra |= {"final_loss": float(trained.losses[-1]),
                      "train_accuracy": trained.accuracy}
            report(0.5)
        if args.save is not None:
            try:
                save_network(net, args.save)
            except OSError as exc:
                raise CLIError(f"cannot write {args.save}: {exc.strerror or exc}") from None
        result = run_jitter(settings, net=net, data=data, device=device)
        report(1.0)
    if args.format == "json":
        return (json.dumps(result.as_json() | extra) + "\n").encode()
    from bnviz.views.render import render_jitter

    return render_jitter(result, args.format)


def add_density(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("density", help=summary("density"))
    add_quiet(d)
    d.add_argument("--depth", type=integer, default=11)
    d.add_argument("--width", type=integer, default=1024)
    d.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    d.add_argument("--dataset", choices=DATASETS, default="star")
    d.add_argument("--n", type=integer, default=50)
    d.add_argument("--seed", type=integer, default=0)
    d.add_argument("--mode", choices=MODES, default="bn")
    d.add_argument("--layers", default=None,
                   help="comma-separated layers (default: first, middle, last, e.g. 1,7,11)")
    d.add_argument("--grid", type=integer, default=128)
    d.add_argument("--eps", type=number, default=1.0, help="ball radius in grid cells (>= 1)")
    d.add_argument("--radius", type=number, default=0.15,
                   help="'near the data' distance for the near-data ratio")
    d.add_argument("--extent", type=number, default=3.0)
    d.add_argument("--json", action="store_true", help="JSON output (the default)")
    d.add_argument("--format", choices=("json", "png", "svg"), default="json")
    d.add_argument("--out", type=Path)
    d.add_argument("--device", default=None)


def run_density(args: argparse.Namespace) -> bytes:
    import numpy as np

    from bnviz.params import DensityParams

    p = validated(DensityParams, {name: getattr(args, name) for name in (
        "depth", "width", "activation", "dataset", "n", "seed", "mode", "layers", "grid",
        "eps", "radius", "extent")})
    from bnviz.core.network import random_network
    from bnviz.data.datasets import make_dataset
    from bnviz.device import pick_device
    from bnviz.views.density import concentration, near_data_ratio

    data = make_dataset(p.dataset, p.n, p.seed)
    net = random_network(p.depth, p.width, p.activation, 0.1, p.mode, p.seed)
    e = p.extent

    with progress_bar(args, "density") as report:
        result = concentration(net, data.points, p.layers, p.grid, p.eps, (-e, e, -e, e),
                               device=pick_device(args.device), progress=report)
    ratios = near_data_ratio(result, data.points, p.radius)
    if args.format != "json":
        from bnviz.views.render import render_density

        return render_density(result, data.points, p.mode, args.format)
    return (json.dumps({
        "mode": p.mode, "grid": p.grid, "eps": p.eps, "radius": p.radius,
        "layers": [{"layer": layer, "max_concentration": int(c.max()),
                    "near_data_ratio": None if np.isnan(q) else float(q)}
                   for layer, c, q in zip(result.layers, result.counts, ratios, strict=True)],
        "seconds": result.seconds, "device": result.device,
        "gflops": result.flops / max(result.seconds, 1e-9) / 1e9,
    }) + "\n").encode()


def add_bnstats(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bnstats", help=summary("bnstats"))
    b.add_argument("--batch-size", type=integer, default=64)
    b.add_argument("--train-size", type=integer, default=1000)
    b.add_argument("--samples", type=integer, default=2000)
    b.add_argument("--virtual-batch-size", type=integer, default=None,
                   help="default: half the batch size (the paper: 64 -> 32)")
    b.add_argument("--seed", type=integer, default=0)
    b.add_argument("--json", action="store_true", help="JSON output (the default)")
    b.add_argument("--out", type=Path)


def run_bnstats(args: argparse.Namespace) -> bytes:
    from bnviz.params import BNStatsParams

    p = validated(BNStatsParams, {name: getattr(args, name) for name in (
        "batch_size", "train_size", "samples", "virtual_batch_size", "seed")})
    from bnviz.views.bnstats import figure7_report

    report = figure7_report(batch_size=p.batch_size, train_size=p.train_size,
                            samples=p.samples, virtual_batch_size=p.virtual_batch_size,
                            seed=p.seed)
    return (json.dumps(report) + "\n").encode()


def add_figure9(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("figure9", help=summary("figure9"))
    add_quiet(f)
    f.add_argument("--dataset", choices=DATASETS, default="moons")
    f.add_argument("--n", type=integer, default=100, help="number of data points")
    f.add_argument("--seed", type=integer, default=0,
                   help="seeds the data, the weights and the training's batches")
    f.add_argument("--depth", type=integer, default=4)
    f.add_argument("--width", type=integer, default=6)
    f.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    f.add_argument("--weights", choices=WEIGHTS, default="trained",
                   help="trained (the paper's Figure 9) or the random start")
    f.add_argument("--layers", default=None,
                   help="one or two comma-separated layers (default: 1 and the depth)")
    f.add_argument("--shift-x", type=number, default=1.0, help="the data moved off the origin")
    f.add_argument("--shift-y", type=number, default=1.0)
    f.add_argument("--extent", type=number, default=3.0, help="the box [-E, E]^2")
    f.add_argument("--json", action="store_true", help="JSON output (default: a table)")
    f.add_argument("--out", type=Path)
    f.add_argument("--device", default=None)


def run_figure9(args: argparse.Namespace) -> bytes:
    """Figure 9's numbers as the explorer's preset computes them (the same settings at the
    defaults): per shown layer and unit the colour, the mean (squared) input-space distance
    of the data to the unit's facets, and their rank correlations."""
    from bnviz.params.partition import Figure9Params

    p = validated(Figure9Params, {name: getattr(args, name) for name in (
        "dataset", "n", "seed", "depth", "width", "activation", "weights", "layers",
        "shift_x", "shift_y", "extent")})
    from bnviz.device import device_name
    from bnviz.views.figure9 import figure9


    with progress_bar(args, "figure9") as report:
        result = figure9(p.explorer_settings(), p.layers, device=device_name(args.device))
        report(1.0)
    if args.json:
        return (json.dumps(result.as_json()) + "\n").encode()
    return figure9_table(result).encode()


def figure9_table(result) -> str:
    """Figure 9's numbers as a plain-text table (one block a layer)."""
    import numpy as np

    s = result.settings
    lines = [f"BN paper Figure 9: {s.dataset}, {s.n_points} points, seed {s.weight_seed}, "
             f"{s.depth} layers of {s.width}, {s.weights} weights"
             + (f" (training accuracy {100 * result.train_accuracy:.0f} %)"
                if result.train_accuracy is not None else "")]
    for t in result.layers:
        what = "sigma^2/||w||^2 (TLS error, eq. 8)" if t.exact else \
            "mean squared distance at the current mu (eq. 8)"
        facets = np.bincount(t.facet_units, minlength=len(t.values))
        lines += ["", f"layer {t.layer}: value = {what}; distances from the data to the "
                  "unit's facets in the input space",
                  f"{'unit':>6} {'value':>10} {'mean dist':>10} {'mean dist^2':>12} "
                  f"{'facets':>7}"]
        lines += [f"{k + 1:>6} {v:>10.4g} {d:>10.4g} {d2:>12.4g} {c:>7}" for k, (v, d, d2, c)
                  in enumerate(zip(t.values, t.mean_distance, t.mean_sq_distance, facets,
                                   strict=True))]
        lines.append(f"Spearman rank correlation of the value with the mean distance "
                     f"{t.spearman:.3f}, with the mean squared distance {t.spearman_sq:.3f}")
    return "\n".join(lines) + "\n"
