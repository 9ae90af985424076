"""Trained networks for the jitter page: trained in the background, kept on disk.

A training run is a :mod:`bnviz.runs` run of kind ``trained``: its network is written to
``$BNVIZ_HOME/trained/<key>.npz`` (default ``~/.bnviz``), so a network trained once is
reused, also after a restart, and its progress is visible to every server process.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from bnviz.core.network import Network, load_network, random_network
from bnviz.runs import (
    STALE_SECONDS,
    RunStatus,
    bnviz_home,
    result_path,
    run_key,
    run_status,
    start_run,
)
from bnviz.runs import _progress_path as _run_progress_path
from bnviz.runs import _write_progress as _run_write_progress
from bnviz.views.jitter import binary_task
from bnviz.views.train import save_network, train_network

__all__ = ["STALE_SECONDS", "TrainingStatus", "bnviz_home", "load_trained", "save_uploaded",
           "start_training", "trained_path", "training_key", "training_status"]

KIND = "trained"
TrainingStatus = RunStatus


def trained_path(key: str) -> Path:
    return result_path(KIND, key)


def training_key(params: dict) -> str:
    return run_key(params)


def training_status(key: str) -> TrainingStatus:
    return run_status(KIND, key)


def _progress_path(key: str) -> Path:
    return _run_progress_path(KIND, key)


def _write_progress(key: str, status: TrainingStatus) -> None:
    _run_write_progress(KIND, key, status)


def load_trained(key: str, activation: str = "leaky_relu", alpha: float = 0.1) -> Network:
    return load_network(trained_path(key), activation, alpha, "bn")


def start_training(params: dict) -> str:
    """Start training (or find it done or running, here or elsewhere); returns the key.

    ``params``: dataset, n, data_seed, depth, width, activation, alpha, seed, steps,
    batch_size, lr, optimizer.
    """

    def work(progress, tmp: Path) -> RunStatus:
        data = binary_task(params["dataset"], params["n"], params["data_seed"])
        net = random_network(params["depth"], params["width"], params["activation"],
                             params["alpha"], "bn", params["seed"], head_outputs=2)
        report = train_network(net, data.points, data.labels, params["steps"],
                               batch_size=params["batch_size"], lr=params["lr"],
                               optimizer=params["optimizer"], seed=params["seed"],
                               progress=progress, device="cpu")
        save_network(report.network, tmp)
        return RunStatus("done", params["steps"], params["steps"],
                         float(report.losses[-1]) if len(report.losses) else None,
                         report.accuracy)

    return start_run(KIND, params, params["steps"], work)


def save_uploaded(data: bytes) -> str:
    """Store an uploaded .npz network (validated by loading it) and return its key."""
    key = hashlib.sha256(data).hexdigest()[:24]
    path = trained_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    tmp.write_bytes(data)
    try:
        net = load_network(tmp, mode="bn")
        if net.head is None:
            raise ValueError("the network has no classifier head (head_W)")
        if net.depth > 6 or max(net.widths) > 32:
            raise ValueError(f"widths {net.widths}: at most 6 layers of 32 units here")
        np.load(tmp, allow_pickle=False).close()
    except (ValueError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise ValueError(str(exc).replace(str(tmp), "the upload")) from None
    tmp.replace(path)
    return key
