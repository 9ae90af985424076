"""Job system figures: training speed of the image networks, and the job store's latency
(:mod:`bnviz.records.store`).

* Training: images/s of one SGD epoch on digits for each architecture in ``bn`` mode, against
  the same network with torch's own ``nn.BatchNorm2d`` in place of ModeNorm (the baseline, in
  the same process): the ratio is what the BN modes' generality costs.
* Store: milliseconds per create / add_metric / add_log / get on the SQLite store, against a
  bare sqlite3 INSERT in one transaction each (the floor of a durable write).

    .venv/bin/python bench/jobs.py [--threads N]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from bnviz.data.imagedata import load_image_data  # noqa: E402
from bnviz.images.networks import ModeNorm, build_model  # noqa: E402
from bnviz.records.sqlite_store import SQLiteStore  # noqa: E402


def _native(model: nn.Module) -> nn.Module:
    """The same network with torch's BatchNorm2d (biased batch variance in training too)."""
    for name, child in model.named_children():
        if isinstance(child, ModeNorm):
            setattr(model, name, nn.BatchNorm2d(child.channels, affine=False))
        else:
            _native(child)
    return model


def _epoch(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 64) -> float:
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()
    t0 = time.perf_counter()
    for i in range(0, len(y) - 1, batch):
        loss = F.cross_entropy(model(x[i:i + batch]), y[i:i + batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return len(y) / (time.perf_counter() - t0)


def training() -> None:
    data = load_image_data("digits")
    x = torch.as_tensor(data.x_train, dtype=torch.float32) / data.scale
    x = (x - x.mean()) / x.std()
    y = torch.as_tensor(data.y_train)
    print(f"{'arch':<10} {'width':>5} {'ModeNorm img/s':>15} {'BatchNorm2d img/s':>18} "
          f"{'ratio':>6}")
    for arch, width in (("resnet9", 16), ("cnn", 24), ("resnet50", 8)):
        ours = build_model(arch, 1, 10, 8, "bn", width=width, seed=0)
        native = _native(build_model(arch, 1, 10, 8, "bn", width=width, seed=0))
        _epoch(ours, x[:256], y[:256])  # warm-up
        _epoch(native, x[:256], y[:256])
        a = max(_epoch(ours, x, y) for _ in range(3))
        b = max(_epoch(native, x, y) for _ in range(3))
        print(f"{arch:<10} {width:>5} {a:>15.0f} {b:>18.0f} {b / a:>6.2f}")


def store() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        s = SQLiteStore(Path(tmp) / "jobs.sqlite")
        n = 300
        t0 = time.perf_counter()
        jobs = [s.create("smart-init", {"epochs": 5}) for _ in range(n)]
        create = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        for j in jobs:
            s.add_metric(j.id, {"arm": "bn", "run": 0, "epoch": 1, "test_accuracy": 0.5})
        metric = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        for j in jobs:
            s.add_log(j.id, "run 0, bn, epoch 1: loss 0.5")
        log = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        for j in jobs:
            s.get(j.id)
        get = (time.perf_counter() - t0) / n
        db = sqlite3.connect(Path(tmp) / "bare.sqlite", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (a TEXT)")
        t0 = time.perf_counter()
        for _ in range(n):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t VALUES ('x')")
            db.execute("COMMIT")
        bare = (time.perf_counter() - t0) / n
    print(f"store (SQLite, WAL): create {1e3 * create:.2f} ms, add_metric {1e3 * metric:.2f} ms,"
          f" add_log {1e3 * log:.2f} ms, get {1e3 * get:.2f} ms; bare INSERT "
          f"{1e3 * bare:.2f} ms (add_metric / bare = {metric / bare:.1f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    training()
    store()


if __name__ == "__main__":
    main()
