"""Trained networks for the jitter page: trained in a background thread, kept on disk.

A training run is identified by a key (a hash of everything that determines it).  Its result
is written to ``$BNVIZ_HOME/trained/<key>.npz`` (default ``~/.bnviz``), so a network trained
once is reused, also after a restart; progress of runs in flight is held in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bnviz.jitter import binary_task
from bnviz.network import Network, load_network, random_network
from bnviz.train import save_network, train_network

__all__ = ["TrainingStatus", "bnviz_home", "load_trained", "save_uploaded", "start_training",
           "trained_path", "training_key", "training_status"]


def bnviz_home() -> Path:
    """Where local state lives: ``BNVIZ_HOME`` or ``~/.bnviz``."""
    return Path(os.environ.get("BNVIZ_HOME", Path.home() / ".bnviz"))


def trained_path(key: str) -> Path:
    if not (len(key) == 24 and all(c in "0123456789abcdef" for c in key)):
        raise ValueError("not a training key")  # keys never come from a path a user typed
    return bnviz_home() / "trained" / f"{key}.npz"


def training_key(params: dict) -> str:
    """A stable key for a training run's parameters."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class TrainingStatus:
    state: str  # "none", "running", "done", "failed"
    step: int = 0
    steps: int = 0
    loss: float | None = None
    accuracy: float | None = None
    error: str | None = None


_lock = threading.Lock()
_runs: dict[str, TrainingStatus] = {}


def load_trained(key: str, activation: str = "leaky_relu", alpha: float = 0.1) -> Network:
    return load_network(trained_path(key), activation, alpha, "bn")


#: A run whose progress file has not moved for this long is taken to have died with its worker.
STALE_SECONDS = 60.0


def _progress_path(key: str) -> Path:
    return trained_path(key).with_suffix(".progress.json")


def _write_progress(key: str, status: TrainingStatus) -> None:
    """Progress on disk too, so that any server process (gunicorn worker) can report it."""
    path = _progress_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**asdict(status), "updated": time.time()}))
    tmp.replace(path)


def training_status(key: str) -> TrainingStatus:
    """Status of a run: from this process, else from the progress file another process
    writes, else from the finished network on disk."""
    with _lock:
        status = _runs.get(key)
    if status is not None:
        return status
    if trained_path(key).exists():
        return TrainingStatus("done")
    try:
        saved = json.loads(_progress_path(key).read_text())
    except (OSError, ValueError):
        return TrainingStatus("none")
    updated = saved.pop("updated", 0.0)
    status = TrainingStatus(**saved)
    if status.state == "running" and time.time() - updated > STALE_SECONDS:
        return TrainingStatus("failed", status.step, status.steps,
                              error="the process running it stopped")
    return status


def start_training(params: dict) -> str:
    """Start training (or find it done on disk); returns the key to poll.

    ``params``: dataset, n, data_seed, depth, width, activation, alpha, seed, steps,
    batch_size, lr, optimizer.
    """
    key = training_key(params)
    path = trained_path(key)
    if training_status(key).state in ("running", "done"):  # here, in another process, on disk
        return key
    with _lock:
        if key in _runs and _runs[key].state == "running":
            return key
        _runs[key] = TrainingStatus("running", 0, params["steps"])

    def progress(step: int, loss: float) -> None:
        status = TrainingStatus("running", step, params["steps"], loss)
        with _lock:
            _runs[key] = status
        if step % 25 == 0:
            _write_progress(key, status)

    def work() -> None:
        try:
            data = binary_task(params["dataset"], params["n"], params["data_seed"])
            net = random_network(params["depth"], params["width"], params["activation"],
                                 params["alpha"], "bn", params["seed"], head_outputs=2)
            report = train_network(net, data.points, data.labels, params["steps"],
                                   batch_size=params["batch_size"], lr=params["lr"],
                                   optimizer=params["optimizer"], seed=params["seed"],
                                   progress=progress, device="cpu")
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.npz")
            save_network(report.network, tmp)
            tmp.replace(path)  # atomic: a half-written file is never read
            final = TrainingStatus("done", params["steps"], params["steps"],
                                   float(report.losses[-1]) if len(report.losses) else None,
                                   report.accuracy)
        except Exception as exc:  # reported in the page, never raised into the server
            final = TrainingStatus("failed", error=f"{type(exc).__name__}: {exc}")
        with _lock:
            _runs[key] = final
        try:
            if final.state == "done":  # the network on disk now says so
                _progress_path(key).unlink(missing_ok=True)
            else:  # other processes must see the failure too
                _write_progress(key, final)
        except OSError:
            pass  # the in-memory status still reports it in this process

    _write_progress(key, _runs[key])
    threading.Thread(target=work, name=f"bnviz-train-{key}", daemon=True).start()
    return key


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
