"""Where a slice's network and images come from: an ONNX file, a job's kept network, or a
safetensors file of a bnviz architecture; the images of a data set (standardised as the jobs
standardise them) or an .npy array (N, C, H, W).  Every failure is one line (ValueError) and
nothing is loaded past it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from bnviz.slices.graph import SliceNet

if TYPE_CHECKING:
    from bnviz.records.job import Job

__all__ = ["SliceImages", "job_network", "load_images", "open_network"]


@dataclass(frozen=True)
class SliceImages:
    """Test images (where the plane goes), training images (where train mode's mini-batches
    come from), labels where known, float64 (N, C, H, W)."""

    test: np.ndarray
    train: np.ndarray
    labels: np.ndarray | None
    name: str


def load_images(data: str | Path, shape: tuple[int, ...] | None = None) -> SliceImages:
    """A data set by name (its test and training images, standardised with the training
    set's mean and std as a job's network sees them) or an .npy of images."""
    text = str(data)
    if text.endswith(".npy"):
        from bnviz.data.npfiles import read_numpy

        x = read_numpy(text)  # one line for a missing, empty, non-NumPy or pickled file
        if not isinstance(x, np.ndarray):
            x.close()
            raise ValueError(f"{text}: an .npz archive, not one .npy array of images")
        if x.ndim != 4 or not np.issubdtype(x.dtype, np.number) or not np.isfinite(x).all():
            raise ValueError(f"{text}: images must be a finite (N, C, H, W) array, got shape "
                             f"{x.shape}")
        images = SliceImages(x.astype(np.float64), x.astype(np.float64), None, Path(text).name)
    else:
        from bnviz.data.imagedata import check_available, load_image_data, parse_dataset_name
        from bnviz.images.training import standardise

        name = check_available(parse_dataset_name(text))
        t = standardise(load_image_data(name), torch.device("cpu"))
        images = SliceImages(t.x_test.double().numpy(), t.x_train.double().numpy(),
                             t.y_test.numpy(), name)
    if shape is not None and tuple(images.test.shape[1:]) != tuple(shape):
        raise ValueError(f"{images.name}: images of shape {tuple(images.test.shape[1:])}, "
                         f"the network takes {tuple(shape)}")
    return images


def _job_record(job_id: str) -> Job | None:
    """The job's record, read from the store (a slice opens what a job left: the job system
    above, which dispatches and reaps jobs, is not needed for that)."""
    from bnviz.records.job import check_job_id
    from bnviz.records.store import open_store

    return open_store().get(check_job_id(job_id))


def job_network(job_id: str, arm: str | None = None, run: int = 0) -> tuple[Path, str]:
    """The file of a job's kept network and the job's data set name."""
    from bnviz.records.results import job_networks, network_path

    job = _job_record(job_id)
    if job is None:
        raise ValueError(f"no job {job_id}")
    if job.status != "succeeded":
        raise ValueError(f"job {job_id} is {job.status}: a job's networks are sliced once it "
                         "has succeeded")
    names = job_networks(job_id)
    if not names:
        raise ValueError(f"job {job_id} kept no network (only image training jobs keep theirs, "
                         "from this version on)")
    arms = sorted({n.rsplit("-run", 1)[0] for n in names})
    arm = arm or arms[0]
    name = f"{arm}-run{run}"
    if name not in names:
        raise ValueError(f"job {job_id} has no network {name}: it kept {', '.join(names)}")
    return network_path(job_id, name), str(job.params.get("dataset", "digits"))


def open_network(model: Path | None = None, weights: Path | None = None,
                 arch: str | None = None, size: int | None = None) -> SliceNet:
    """An ONNX file (``model``) or a safetensors file of a bnviz architecture as a slice
    network."""
    if model is not None:
        from bnviz.slices.onnx_import import load_onnx

        return load_onnx(model)  # (its size is checked there)
    from bnviz.slices.slice_net import check_size
    from bnviz.slices.torch_import import load_network, slice_net

    module, build = load_network(weights, arch, size)
    shape = (int(build["in_ch"]), int(build["size"]), int(build["size"]))
    net = slice_net(module, shape, str(weights))
    try:
        check_size(net)
    except ValueError as exc:
        raise ValueError(f"{weights}: {exc}") from None
    return net


def kept_networks(limit: int = 200) -> list[dict]:
    """The finished jobs that kept networks, newest first: id, a label, the arms and runs."""
    from bnviz.records.results import job_networks
    from bnviz.records.store import open_store

    out = []
    for job in open_store().list(limit):
        if job.status != "succeeded":
            continue
        names = job_networks(job.id)
        if not names:
            continue
        arms = sorted({n.rsplit("-run", 1)[0] for n in names})
        runs = sorted({int(n.rsplit("-run", 1)[1]) for n in names})
        p = job.params
        out.append({"id": job.id, "arms": arms, "runs": runs,
                    "label": f"{job.type} · {p.get('dataset', '?')} · {p.get('arch', '?')} "
                             f"w{p.get('width', '?')} · {job.id[:8]}"})
    return out


def job_images(job_id: str, indices: list[int], data: str = "digits"
               ) -> tuple[np.ndarray, list[int]]:
    """Test images ``indices`` of the data set a job trained on (as its networks see them),
    or of ``data`` for an uploaded network (``up-...``), and their labels."""
    if job_id.startswith("up-"):
        from bnviz.data.imagedata import parse_dataset_name

        name = parse_dataset_name(data)  # a data set's name, never a path
    else:
        job = _job_record(job_id)
        if job is None:
            raise ValueError(f"no job {job_id}")
        name = str(job.params.get("dataset", "digits"))
    images = load_images(name)
    if max(indices) >= len(images.test):
        raise ValueError(f"images: {images.name} has {len(images.test)} test images "
                         f"(0 to {len(images.test) - 1})")
    labels = [-1 if images.labels is None else int(images.labels[i]) for i in indices]
    return images.test[indices], labels
