"""``bnviz jitter`` (Figure 6), ``bnviz density`` (Figure 3), ``bnviz bnstats`` (Figure 7)
and ``bnviz figure9`` (Figure 9's numbers): each checks its options with its parameter model
before loading torch. Each is a thin parser over the model its page uses too
(:class:`~bnviz.params.JitterParams`, :class:`~bnviz.params.DensityParams`,
:class:`~bnviz.params.BNStatsParams`, :class:`~bnviz.params.partition.Figure9Params`): one
flag per field, of its name and default."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from bnviz.caps import ACTIVATIONS, DATASETS, MODES, OPTIMIZERS, WEIGHTS
from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError, integer, number, validated
from bnviz.cli.progress import add_quiet, progress_bar

if TYPE_CHECKING:
    from bnviz.params import DensityParams, JitterParams, TrainingParams
    from bnviz.params.partition import Figure9Params

__all__ = ["add_bnstats", "add_density", "add_figure9", "add_jitter", "density_settings",
           "figure9_settings", "jitter_settings", "run_bnstats", "run_density", "run_figure9",
           "run_jitter"]


def _parser(sub: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:
    """A command whose flags are its models' fields: one flag per field, of the field's name
    (``--weight-seed`` for ``weight_seed``) and default, as ``bnviz partition``'s, written
    out here so that ``--help`` loads no model (tests/cli/test_figures_route.py holds them
    to the models). No abbreviations: the old ``--n`` would pass for ``--n-points``."""
    return sub.add_parser(name, help=summary(name), allow_abbrev=False)


def add_jitter(sub: argparse._SubParsersAction) -> None:
    """JitterParams' fields, then TrainingParams' (the training first), then the files."""
    j = _parser(sub, "jitter")
    add_quiet(j)
    j.add_argument("--dataset", choices=DATASETS, default="moons",
                   help="binary task (labels mod 2)")
    j.add_argument("--n-points", type=integer, default=200, help="number of data points")
    j.add_argument("--data-seed", type=integer, default=0, help="seed of the generated data")
    j.add_argument("--depth", type=integer, default=3)
    j.add_argument("--width", type=integer, default=8)
    j.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    j.add_argument("--alpha", type=number, default=0.1, help="leaky-ReLU slope, 0 < alpha < 1")
    j.add_argument("--weight-seed", type=integer, default=0,
                   help="seed of the random weights (He-normal) and of the training's batch "
                        "order")
    j.add_argument("--batch-size", type=integer, default=16)
    j.add_argument("--realizations", type=integer, default=16)
    j.add_argument("--virtual-batch-size", type=integer, default=None,
                   help="noise-controlled BN: raise the statistics' variance to a batch of B'")
    j.add_argument("--batch-seed", type=integer, default=0,
                   help="seed of the K mini-batches (and of a virtual batch's noise)")
    j.add_argument("--extent", type=number, default=3.0)
    j.add_argument("--train-steps", type=integer, default=0,
                   help="train the network first (mini-batches of --batch-size; 0: untrained)")
    j.add_argument("--optimizer", choices=OPTIMIZERS, default="adam")
    j.add_argument("--lr", type=number, default=0.01)
    j.add_argument("--weights-file", type=Path,
                   help=".npz of a (trained) network with head_W")
    j.add_argument("--save", type=Path, help="write the (trained) network to this .npz")
    j.add_argument("--json", action="store_true", help="JSON output (the default)")
    j.add_argument("--format", choices=("json", "png", "svg"), default="json")
    j.add_argument("--out", type=Path)
    j.add_argument("--device", default=None)


def _fields(model: type, args: argparse.Namespace) -> dict:
    """The option values of ``model``'s fields (each field is a flag of its name)."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(model)}


def jitter_settings(args: argparse.Namespace) -> tuple[JitterParams, TrainingParams]:
    """The jitter settings and the training's of ``bnviz jitter``'s options (InputError
    naming the flag)."""
    from bnviz.params import JitterParams, TrainingParams

    return (validated(JitterParams, _fields(JitterParams, args)),
            validated(TrainingParams, _fields(TrainingParams, args)))


def run_jitter(args: argparse.Namespace) -> bytes:
    settings, training = jitter_settings(args)
    from bnviz.core.network import load_network, random_network
    from bnviz.device import pick_device
    from bnviz.params.cost import check_network_size
    from bnviz.views.jitter import binary_task, run_jitter
    from bnviz.views.train import save_network, train_network

    device = pick_device(args.device)
    data = binary_task(settings.dataset, settings.n_points, settings.data_seed)
    if args.weights_file is not None:
        net = load_network(args.weights_file, settings.activation, settings.alpha, mode="bn")
        if net.head is None:
            raise CLIError(f"{args.weights_file}: no classifier head (head_W) in the file")
        check_network_size(net.widths, None)
    else:
        net = random_network(settings.depth, settings.width, settings.activation,
                             settings.alpha, "bn", settings.weight_seed, head_outputs=2)
    extra = {"train_steps": training.train_steps}

    with progress_bar(args, "jitter") as report:
        if training.train_steps:
            trained = train_network(net, data.points, data.labels, training.train_steps,
                                    batch_size=settings.batch_size, lr=training.lr,
                                    optimizer=training.optimizer, seed=settings.weight_seed,
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
    """DensityParams' fields (the density page's names and defaults)."""
    d = _parser(sub, "density")
    add_quiet(d)
    d.add_argument("--depth", type=integer, default=11)
    d.add_argument("--width", type=integer, default=1024)
    d.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    d.add_argument("--dataset", choices=DATASETS, default="star")
    d.add_argument("--n-points", type=integer, default=50, help="number of data points")
    d.add_argument("--weight-seed", type=integer, default=0,
                   help="seed of the random weights (He-normal)")
    d.add_argument("--data-seed", type=integer, default=0, help="seed of the generated data")
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


def density_settings(args: argparse.Namespace) -> DensityParams:
    """The settings of ``bnviz density``'s options (InputError naming the flag)."""
    from bnviz.params import DensityParams

    return validated(DensityParams, _fields(DensityParams, args))


def run_density(args: argparse.Namespace) -> bytes:
    import numpy as np

    p = density_settings(args)
    from bnviz.core.network import random_network
    from bnviz.data.datasets import make_dataset
    from bnviz.device import pick_device
    from bnviz.views.density import concentration, near_data_ratio

    data = make_dataset(p.dataset, p.n_points, p.data_seed)
    net = random_network(p.depth, p.width, p.activation, 0.1, p.mode, p.weight_seed)
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
    """BNStatsParams' fields."""
    b = _parser(sub, "bnstats")
    b.add_argument("--batch-size", type=integer, default=64)
    b.add_argument("--train-size", type=integer, default=1000)
    b.add_argument("--samples", type=integer, default=2000)
    b.add_argument("--virtual-batch-size", type=integer, default=None,
                   help="default: half the batch size (the paper: 64 -> 32)")
    b.add_argument("--data-seed", type=integer, default=0, help="seed of the training set")
    b.add_argument("--batch-seed", type=integer, default=0,
                   help="seed of the mini-batches (and of the noise-controlled BN's noise)")
    b.add_argument("--means", default=(1.0, 0.0, -1.0), metavar="M1,M2,...",
                   help="each unit's mean (default: the paper's 1,0,-1)")
    b.add_argument("--variances", default=(1.0, 3.0, 0.1), metavar="V1,V2,...",
                   help="each unit's variance, one per mean (default: the paper's 1,3,0.1)")
    b.add_argument("--json", action="store_true", help="JSON output (the default)")
    b.add_argument("--out", type=Path)


def run_bnstats(args: argparse.Namespace) -> bytes:
    from bnviz.params import BNStatsParams

    p = validated(BNStatsParams, _fields(BNStatsParams, args))
    from bnviz.views.bnstats import figure7_report

    report = figure7_report(batch_size=p.batch_size, train_size=p.train_size,
                            samples=p.samples, virtual_batch_size=p.virtual_batch_size,
                            data_seed=p.data_seed, batch_seed=p.batch_seed, means=p.means,
                            variances=p.variances)
    return (json.dumps(report) + "\n").encode()


def add_figure9(sub: argparse._SubParsersAction) -> None:
    """Figure9Params' fields (the explorer's names and the Figure 9 preset's defaults)."""
    f = _parser(sub, "figure9")
    add_quiet(f)
    f.add_argument("--dataset", choices=DATASETS, default="moons")
    f.add_argument("--n-points", type=integer, default=100, help="number of data points")
    f.add_argument("--weight-seed", type=integer, default=0,
                   help="seed of the random weights (He-normal) and of the training's batch "
                        "order")
    f.add_argument("--data-seed", type=integer, default=0, help="seed of the generated data")
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


def figure9_settings(args: argparse.Namespace) -> Figure9Params:
    """The settings of ``bnviz figure9``'s options (InputError naming the flag)."""
    from bnviz.params.partition import Figure9Params

    return validated(Figure9Params, _fields(Figure9Params, args))


def run_figure9(args: argparse.Namespace) -> bytes:
    """Figure 9's numbers as the explorer's preset computes them (the same settings at the
    defaults): per shown layer and unit the colour, the mean (squared) input-space distance
    of the data to the unit's facets, and their rank correlations."""
    p = figure9_settings(args)
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
    lines = [f"BN paper Figure 9: {s.dataset}, {s.n_points} points, weight seed "
             f"{s.weight_seed}, data seed {s.data_seed}, {s.depth} layers of {s.width}, "
             f"{s.weights} weights"
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
