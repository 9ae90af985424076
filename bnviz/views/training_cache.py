"""Trained networks for the jitter page: trained by a job, or uploaded; both kept on disk.

* Training is a job of type ``jitter-training`` (:data:`TRAINING_JOB`, run by the job worker:
  :mod:`bnviz.jobs`): its network is the job's result file, so the same training is done once
  and reused, also after a restart, and its progress and loss are in the job store.
* An uploaded network is not a job: it is checked and kept, by the hash of its bytes, in
  ``$BNVIZ_HOME/uploads/<hash>.npz``, under a quota and a retention time
  (:func:`evict_uploads`): the least recently used go first.

The page refers to a network by a string that says which it is: ``job:<job id>`` or
``upload:<hash>`` (:func:`trained_path` turns either into its file, and refuses anything
else: the page's store comes from the client).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict
from pathlib import Path

from bnviz.config import bnviz_home, setting
from bnviz.core.network import Network, load_network, random_network
from bnviz.params.jitter import TrainingJobParams
from bnviz.records.results import result_path
from bnviz.records.types import DistInfo, JobContext, JobType, validate_params
from bnviz.service.disk import Eviction, enforce_quota, keep_checked, touch
from bnviz.views.jitter import binary_task
from bnviz.views.train import save_network, train_network

__all__ = ["TRAINING_JOB", "check_training_params", "evict_uploads", "load_trained",
           "run_training_job", "save_uploaded", "trained_path", "training_reference"]

_UPLOAD = re.compile(r"^upload:([0-9a-f]{24})$")
#: A loss is recorded about this many times in a training (the page shows the latest).
LOSS_REPORTS = 50


def check_training_params(raw: dict) -> dict:
    """A training job's parameters (:class:`~bnviz.params.jitter.TrainingJobParams`) checked
    and completed (ParamError naming the parameter)."""
    return asdict(validate_params(TrainingJobParams, raw, "training"))


def run_training_job(params: dict, ctx: JobContext, dist: DistInfo) -> dict:
    """Train from the weight seed's initial weights, in the batch order of the same seed (on
    the CPU: a network of at most 6 x 32 units trains faster there, and the same parameters
    give the same network on any worker); the loss goes to the job's metrics about
    LOSS_REPORTS times, the network to its result."""
    data = binary_task(params["dataset"], params["n_points"], params["data_seed"])
    net = random_network(params["depth"], params["width"], params["activation"],
                         params["alpha"], "bn", params["weight_seed"], head_outputs=2)
    steps = params["train_steps"]
    every = max(1, steps // LOSS_REPORTS)

    def progress(step: int, loss: float | None = None) -> None:
        if loss is not None and (step % every == 0 or step == steps):
            ctx.metric({"step": step, "loss": float(loss)})
        ctx.progress(step / steps)

    report = train_network(net, data.points, data.labels, steps,
                           batch_size=params["batch_size"], lr=params["lr"],
                           optimizer=params["optimizer"], seed=params["weight_seed"],
                           progress=progress, device="cpu")
    ctx.save_result(lambda path: save_network(report.network, path))
    return {"steps": steps, "accuracy": float(report.accuracy),
            "loss": float(report.losses[-1]) if len(report.losses) else None}


TRAINING_JOB = JobType("jitter-training", check_training_params, run_training_job, result=True)


def training_reference(job_id: str) -> str:
    """The page's reference to the network a training job wrote."""
    return f"job:{job_id}"


def _uploads() -> Path:
    return bnviz_home() / "uploads"


def trained_path(reference: object) -> Path:
    """The file of ``job:<id>`` or ``upload:<hash>``; ValueError for anything else."""
    if isinstance(reference, str) and reference.startswith("job:"):
        return result_path(reference[len("job:"):])
    found = _UPLOAD.match(reference) if isinstance(reference, str) else None
    if found is None:
        raise ValueError("not a trained network (job:<id> or upload:<hash>)")
    return _uploads() / f"{found[1]}.npz"


def load_trained(reference: str, activation: str = "leaky_relu", alpha: float = 0.1) -> Network:
    path = trained_path(reference)
    if not path.is_file():  # evicted (uploads: quota, retention) or another server's disk
        raise ValueError("this network is no longer on the server (uploads are kept for "
                         f"{setting('BNVIZ_UPLOAD_RETENTION_DAYS'):g} days after their last "
                         "use, and the oldest go when they fill their quota): load or train "
                         "it again")
    network = load_network(path, activation, alpha, "bn")
    if reference.startswith("upload:"):
        touch(path)  # in use: kept (retention and eviction count from the last use)
    return network


def evict_uploads() -> Eviction:
    """Uploads past ``BNVIZ_UPLOAD_RETENTION_DAYS`` since their last use go, then the least
    recently used until the rest fit in ``BNVIZ_UPLOAD_QUOTA_MB``: a loop of uploads cannot
    fill the disk.  One quota for every upload: this page's networks and the /slice page's
    (:mod:`bnviz.slices.uploads`)."""
    return enforce_quota(_uploads(), int(setting("BNVIZ_UPLOAD_QUOTA_MB") * 2**20),
                         setting("BNVIZ_UPLOAD_RETENTION_DAYS") * 86_400, pattern="*.*")


def save_uploaded(data: bytes) -> str:
    """Keep an uploaded .npz network (validated by loading it); returns its reference.
    Refused (DiskFull, a ValueError) when the disk is nearly full; older uploads are evicted
    past the quota (:func:`evict_uploads`)."""
    reference = f"upload:{hashlib.sha256(data).hexdigest()[:24]}"

    def check(path: Path) -> None:
        net = load_network(path, mode="bn")
        if net.head is None:
            raise ValueError("the network has no classifier head (head_W)")
        if net.depth > 6 or max(net.widths) > 32:
            raise ValueError(f"widths {net.widths}: at most 6 layers of 32 units here")

    keep_checked(trained_path(reference), data, check)
    evict_uploads()
    return reference
