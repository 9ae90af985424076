"""``bnviz train``: watch a 2D network learn, frame by frame, with its exact partition.

Trains the seed's random network (two-logit head) on the data set's points, with BN in
training mode or without BN (biases learned from zero or from random), and records a frame
every few steps (:mod:`bnviz.views.trainer`): loss, accuracy, regions of every layer, and the
mean distance from the data to the nearest boundary.  ``--json`` prints
``{"frames": [{"step", "loss", "accuracy", "regions", "mean_distance"}, ...], "seconds"}``;
``--save-weights FILE.npz`` writes the final weights as ``bnviz partition --weights-file``
reads them (BN: W1..WL and the head; without BN also the learned c1..cL, read with ``--mode
random_bias``), so that ``bnviz partition --weights-file FILE`` with the same ``--dataset``,
``--n-points``, ``--data-seed``, ``--activation``, ``--alpha`` and ``--extent`` gives the last
frame's counts; a frame over the region cap stops the run, and what was recorded is still printed
(with ``"stopped"``: why) and written; ``--movie FILE.gif``
(or .mp4: H.264 by the ``video`` extra's ffmpeg, imageio-ffmpeg's, else the PATH's; without
either, one line naming ``pip install 'bnviz[video]'``, before any training) writes the
frames as an animation for slides.

Options are checked by :class:`bnviz.params.live.LiveTrainingParams` before torch is loaded.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bnviz.caps import (
    ACTIVATIONS,
    DATASETS,
    MODES,
    OPTIMIZERS,
    TRAIN_LIMITS,
    TRAIN_MAX_REGIONS,
)
from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError, check_output_path, integer, number, validated
from bnviz.cli.progress import add_quiet

__all__ = ["add_train", "run_train"]

_PARAMS = ("dataset", "n_points", "weight_seed", "data_seed", "depth", "width", "activation",
           "alpha", "mode", "steps", "frames", "batch_size", "lr", "optimizer", "extent")
MOVIE_SUFFIXES = (".gif", ".mp4")


def add_train(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("train", help=summary("train"))
    add_quiet(t)
    lim = TRAIN_LIMITS
    t.add_argument("--dataset", choices=DATASETS, default="moons")
    t.add_argument("--n-points", type=integer, default=100, help="number of data points")
    t.add_argument("--weight-seed", type=integer, default=0,
                   help="seeds the random start and the mini-batches' order")
    t.add_argument("--data-seed", type=integer, default=0, help="seeds the generated data")
    t.add_argument("--depth", type=integer, default=4, help=f"layers L (<= {lim['depth'][1]})")
    t.add_argument("--width", type=integer, default=8,
                   help=f"units per layer (<= {lim['width'][1]})")
    t.add_argument("--activation", choices=ACTIVATIONS, default="leaky_relu")
    t.add_argument("--alpha", type=number, default=0.1, help="leaky-ReLU slope, 0 < alpha < 1")
    t.add_argument("--mode", choices=MODES, default="bn",
                   help="bn: BN with each mini-batch's statistics; zero_bias, random_bias: "
                        "no BN, biases learned from zero or from random")
    t.add_argument("--steps", type=integer, default=300,
                   help=f"optimiser steps (<= {lim['steps'][1]})")
    t.add_argument("--frames", type=integer, default=30,
                   help=f"frames recorded, from step 0 to the last (<= {lim['frames'][1]})")
    t.add_argument("--batch-size", type=integer, default=32, help="mini-batch size (>= 2)")
    t.add_argument("--lr", type=number, default=0.05, help="learning rate")
    t.add_argument("--optimizer", choices=OPTIMIZERS, default="adam",
                   help="sgd (momentum 0.9) or adam")
    t.add_argument("--extent", type=number, default=3.0, help="input box [-E, E]^2")
    t.add_argument("--json", action="store_true", help="print the frames as JSON")
    t.add_argument("--save-weights", type=Path, metavar="FILE.npz",
                   help="write the final weights for bnviz partition --weights")
    t.add_argument("--movie", type=Path, metavar="FILE.gif",
                   help="write the frames as an animation (.gif, or .mp4: H.264 by ffmpeg)")
    t.add_argument("--out", type=Path, help="output file (default: stdout)")


def _check_files(args: argparse.Namespace) -> None:
    """Output files that cannot be written are refused before any training."""
    check_output_path("--save-weights", args.save_weights, (".npz",))
    check_output_path("--movie", args.movie, MOVIE_SUFFIXES)
    if args.movie is not None and args.movie.suffix.lower() == ".mp4":
        from bnviz.views.video import NO_FFMPEG, ffmpeg

        if ffmpeg() is None:
            raise CLIError(f"--movie: {NO_FFMPEG}")


def run_train(args: argparse.Namespace) -> bytes:
    _check_files(args)
    from bnviz.params.live import LiveTrainingParams

    p = validated(LiveTrainingParams, {name: getattr(args, name) for name in _PARAMS})
    import torch

    from bnviz.config import setting
    from bnviz.core.limits import PartitionTooLarge
    from bnviz.core.partition import box_from_extent
    from bnviz.views.train import save_network
    from bnviz.views.trainer import new_trainer, train_frames, training_data

    # the trainer's matrices are a few units wide, on the CPU: more intra-op threads only wait
    # on each other (bnviz train --steps 200 --frames 10, 3 runs beside other work on 2
    # cores: 21.8 s median with torch's default threads, 4.5 s with one; farm-bench)
    torch.set_num_threads(int(setting("BNVIZ_TORCH_THREADS")))
    data = training_data(p, p.data_seed, (0.0, 0.0))  # bnviz partition's data, same seeds
    trainer = new_trainer(p.depth, p.width, p.activation, p.alpha, p.mode, p.weight_seed,
                          data.points, data.labels, p.batch_size, p.lr, p.optimizer,
                          box_from_extent(p.extent))
    frames: list = []
    stopped = None
    t0 = time.perf_counter()
    from bnviz.cli.progress import progress_bar

    with progress_bar(args, "training") as report:
        try:
            train_frames(trainer, p.steps, p.frames, TRAIN_MAX_REGIONS,
                         on_frame=lambda _frame: report(len(frames) / p.frames),
                         record=frames)
        except PartitionTooLarge as exc:  # a frame over the cap: what was recorded is kept
            stopped = f"stopped at step {trainer.steps}: {exc}"
            if not frames:
                raise CLIError(stopped) from None
    seconds = time.perf_counter() - t0
    if args.save_weights is not None:
        _write(args.save_weights, lambda path: save_network(frames[-1].network, path))
    if args.movie is not None:
        from bnviz.views.render import write_training_movie

        _write(args.movie, lambda path: write_training_movie(
            frames, data.points, data.labels % 2, path, p.mode))
    if args.json:
        out = {"frames": [f.summary() for f in frames], "seconds": seconds}
        return (json.dumps(out | ({"stopped": stopped} if stopped else {})) + "\n").encode()
    lines = [f"{p.mode}, {p.activation}, {p.depth}x{p.width}, {p.dataset} n={p.n_points}: "
             f"{p.steps} steps in {seconds:.2f} s",
             f"{'step':>6} {'loss':>8} {'accuracy':>8} {'mean dist':>9}  regions per layer"]
    lines += [f"{f.step:>6} {f.loss:>8.4f} {f.accuracy:>8.3f} {f.mean_distance:>9.4f}  "
              f"{f.regions}" for f in frames]
    if stopped:
        lines.append(stopped)
    return ("\n".join(lines) + "\n").encode()


def _write(path: Path, write) -> None:
    try:
        write(path)
    except OSError as exc:
        raise CLIError(f"cannot write {path}: {exc.strerror or exc}") from None
