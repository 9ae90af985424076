"""Calibrate and check the image jobs' time estimate (bnviz.params.jobcost) on this machine.

* ``--fit``: times training steps (the training loop's own pieces: cross-entropy, SGD with
  momentum, gradient clipping) and evaluation passes of the real networks
  (:func:`bnviz.images.networks.build_model`, random images) over a grid of architectures,
  widths, image sizes, batch sizes and norm modes; a job process's start (python, torch and
  bnviz imported); and reading and standardising CIFAR-format files. Fits
  :class:`~bnviz.params.jobcost.Rates` by non-negative least squares on relative error and
  prints them, with each point's measured / fitted ratio.
* default (check): runs whole jobs through the real code
  (:func:`bnviz.images.experiments.run_experiment` with a RecordingContext, in this process,
  torch's default threads) on digits and on CIFAR-format files of random images written to a
  temporary ``BNVIZ_DATA``, and prints measured seconds, the estimate
  (:func:`~bnviz.params.jobcost.job_seconds` for the data actually used, less a process's
  start, which an in-process run does not pay) and measured / estimated.

Each timing is the best of ``--repeat`` runs (default 1 for jobs, 3 for the fit's pieces):
other processes on a 2-core machine only ever slow a run down. The load average is printed
at the start and the end. Run: ``.venv/bin/python bench/jobcost.py [--fit] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bnviz.params.jobcost import RATES, DataFacts, job_seconds, network_cost  # noqa: E402
from bnviz.params.jobs import ARMS  # noqa: E402

#: The fit's networks: (arch, width, side, channels, batch sizes, modes).
GRID = [
    ("resnet9", 4, 8, 1, (8, 64), ("bn", "zero_bias")),
    ("resnet9", 16, 8, 1, (8, 64, 256), ("bn", "zero_bias")),
    ("resnet9", 64, 8, 1, (64,), ("bn", "zero_bias")),
    ("resnet9", 8, 32, 3, (64,), ("bn", "zero_bias")),
    ("resnet9", 16, 32, 3, (16, 64), ("bn", "zero_bias")),
    ("resnet9", 32, 32, 3, (64,), ("bn",)),
    ("cnn", 16, 8, 1, (64,), ("bn", "zero_bias")),
    ("cnn", 24, 32, 3, (64,), ("bn", "zero_bias")),
    ("resnet50", 4, 32, 3, (32,), ("bn", "zero_bias")),
    ("resnet50", 8, 8, 1, (64,), ("bn",)),
]
QUICK_GRID = [g for g in GRID if g[2] == 8]

#: Whole jobs: (job type, parameters, data: "digits" or (train, test) CIFAR-format images).
JOBS = [
    ("smart-init", {"epochs": 5, "runs": 2}, "digits"),  # the defaults
    ("smart-init", {"epochs": 20, "runs": 1, "width": 4}, "digits"),  # tests/jobs' long job
    ("jitter-noise", {"epochs": 2, "runs": 1, "arch": "cnn"}, "digits"),
    ("landscape", {"epochs": 1, "runs": 1, "width": 8, "measure_every": 5, "etas": 3},
     "digits"),
    ("concentration", {"runs": 1, "images": 50, "samples": 32}, "digits"),
    ("affine-ablation", {"epochs": 1, "runs": 1}, (2000, 500)),
    ("smart-init", {"epochs": 1, "runs": 1, "width": 32, "max_train": 1000}, (1000, 500)),
    ("concentration", {"runs": 1, "images": 20, "samples": 32, "eps": "0.1,0.3"},
     (1000, 200)),
    ("smart-init", {"epochs": 1, "runs": 1, "arch": "resnet50", "width": 4,
                    "batch_size": 32, "max_train": 500}, (500, 200)),
]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --------------------------------------------------------------------------- the fit


def _pieces(grid):
    """(what, timed function, features...) of training steps and evaluation passes."""
    from bnviz.images.networks import build_model

    pieces = []
    for arch, width, side, channels, batches, modes in grid:
        net = network_cost(arch, channels, side, width, 10)
        for mode in modes:
            model = build_model(arch, channels, 10, side, mode, width=width)
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            for b in batches:
                x, y = torch.randn(b, channels, side, side), torch.randint(0, 10, (b,))

                def step(model=model, opt=opt, x=x, y=y) -> None:
                    model.train()
                    loss = F.cross_entropy(model(x), y)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                    opt.step()

                norm = mode in ("bn", "noisy_bn", "frozen")
                pieces.append((f"train {arch} w{width} {side}px b{b} {mode}", step,
                               b * net.macs, b * net.elements * norm,
                               b * net.elements * (not norm), net.norms))
            if mode == "bn":
                continue
            xe = torch.randn(512, channels, side, side)

            def forward(model=model, xe=xe) -> None:
                model.eval()
                with torch.no_grad():
                    model(xe)

            pieces.append((f"eval  {arch} w{width} {side}px b512", forward,
                           512 * net.macs, 512 * net.elements, 0.0, 0.0))
    return pieces


def time_pieces(grid, repeat: int, passes: int) -> list[tuple]:
    """(what, seconds, features...): each piece's best time over ``passes`` rounds of the
    whole grid (``repeat`` runs each), so that every piece gets a chance at a quiet moment."""
    pieces = _pieces(grid)
    seconds = [float("inf")] * len(pieces)
    for done in range(passes):
        for i, (_, fn, *_features) in enumerate(pieces):
            fn()  # warm up
            seconds[i] = min(seconds[i], best(fn, repeat))
        print(f"  pass {done + 1} of {passes} (load {load()})", flush=True)
    return [(what, t, *features) for (what, _, *features), t in zip(pieces, seconds,
                                                                      strict=True)]


def fit(rows, columns: slice) -> np.ndarray:
    from scipy.optimize import nnls

    seconds = np.array([r[1] for r in rows])
    features = np.array([r[2:] for r in rows])[:, columns]
    weights = 1.0 / seconds  # relative error
    scale = features.max(axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(features * weights[:, None] / scale, seconds * weights)
    return coef / scale


def run_fit(args: argparse.Namespace) -> None:
    rows = time_pieces(QUICK_GRID if args.quick else GRID, args.repeat or 3, args.passes)
    train = [r for r in rows if r[0].startswith("train")]
    evals = [r for r in rows if r[0].startswith("eval")]
    mac_train, element_norm, element_bias, step_layer = fit(train, slice(0, 4))
    mac_eval, element_eval = fit(evals, slice(0, 2))
    for r in train:
        fitted = mac_train * r[2] + element_norm * r[3] + element_bias * r[4] + step_layer * r[5]
        print(f"  {r[0]:<42} {r[1]:8.4f} s  measured / fitted {r[1] / fitted:5.2f}")
    for r in evals:
        fitted = mac_eval * r[2] + element_eval * r[3]
        print(f"  {r[0]:<42} {r[1]:8.4f} s  measured / fitted {r[1] / fitted:5.2f}")
    start = best(lambda: subprocess.run([sys.executable, "-c",
                                         "import bnviz.images.experiments"], check=True),
                 args.repeat or 3)
    with tempfile.TemporaryDirectory() as tmp:
        write_cifar(Path(tmp), 5000, 1000)
        os.environ["BNVIZ_DATA"] = tmp
        from bnviz.data.imagedata import load_image_data
        from bnviz.images.training import standardise

        pixel = best(lambda: standardise(load_image_data("cifar10"), torch.device("cpu")),
                     args.repeat or 3) / (6000 * 3 * 32 * 32)
    print(f"Rates(mac_train={mac_train:.3g}, element_norm={element_norm:.3g}, "
          f"element_bias={element_bias:.3g}, mac_eval={mac_eval:.3g}, "
          f"element_eval={element_eval:.3g}, step_layer={step_layer:.3g}, start={start:.3g}, "
          f"pixel={pixel:.3g})")


# --------------------------------------------------------------------------- whole jobs


def write_cifar(root: Path, train: int, test: int) -> None:
    from bnviz.data.imagedata import cifar_batch_bytes

    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    sizes = [train // 5 + (i < train % 5) for i in range(5)]
    for name, n in [(f"data_batch_{i + 1}", n) for i, n in enumerate(sizes)] + \
            [("test_batch", test)]:
        x = rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8)
        (folder / name).write_bytes(cifar_batch_bytes(x, rng.integers(0, 10, n)))


def run_jobs(args: argparse.Namespace) -> None:
    from bnviz.images.experiments import run_experiment
    from bnviz.images.params import check_params
    from bnviz.records.types import RecordingContext

    print(f"{'job':<78} {'measured':>9} {'estimate':>9} {'ratio':>6}")
    for job_type, given, data in (JOBS[:5] if args.quick else JOBS):
        with tempfile.TemporaryDirectory() as tmp:
            if data == "digits":
                facts = DataFacts(1, 8, 10, 1352, 445)
                raw = {"dataset": "digits", **given}
            else:
                write_cifar(Path(tmp), *data)
                facts = DataFacts(3, 32, 10, *data)
                raw = {"dataset": "cifar10", **given}
            os.environ["BNVIZ_DATA"] = tmp
            params = check_params(job_type, raw)
            if params.get("max_train"):
                facts = DataFacts(facts.channels, facts.size, facts.classes,
                                  min(facts.train, params["max_train"]), facts.test)
            modes = [mode for mode, _ in ARMS[job_type].values()]
            estimate = job_seconds(job_type, params, modes, facts) - RATES.start
            measured = best(partial(run_experiment, job_type, params, RecordingContext()),
                            args.repeat or 1)
            shown = ", ".join(f"{k}={v}" for k, v in given.items())
            what = f"{job_type} {raw['dataset']} {facts.train}/{facts.test} {shown}"
            print(f"{what:<78} {measured:8.1f}s {estimate:8.1f}s {measured / estimate:6.2f}",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="fit the rates from timed pieces")
    parser.add_argument("--quick", action="store_true", help="fewer networks / jobs")
    parser.add_argument("--repeat", type=int, default=0, help="best of this many runs")
    parser.add_argument("--passes", type=int, default=4, help="--fit: rounds of the grid")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} cores; load {load()}", flush=True)
    if args.fit:
        run_fit(args)
    else:
        run_jobs(args)
    print(f"load {load()}")


if __name__ == "__main__":
    main()
