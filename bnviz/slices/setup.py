"""The one route of a slice: ``bnviz slice`` and the /slice page's ``slice`` job fill one
model (:class:`bnviz.params.slice.SliceSetup`; the page's is its :class:`~bnviz.params.slice.
SlicePageParams`) and call :func:`slice_networks`, which opens the networks, reads the images,
lays the plane and cuts each network (:func:`bnviz.slices.view.run_slice`: the estimate
checked against the cap before any cut).  What each caller makes of the cut stays with it:
the command's JSON, picture and geometry file (:mod:`bnviz.cli.slice`), the job's arrays and
region density (:mod:`bnviz.slices.job`).

Every failure before the cut is one line (ValueError), and nothing is loaded past it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from bnviz.params.slice import SliceSetup, image_indices
from bnviz.slices.graph import SliceNet
from bnviz.slices.plane import Plane
from bnviz.slices.sources import SliceImages
from bnviz.slices.view import SliceResult, check_regions

__all__ = ["NO_BN_IN_FILE", "PreparedSlice", "SliceRun", "check_slice_cost", "prepare_slice",
           "slice_networks"]

#: ``bn="train"`` on an ONNX file without BN (torch.onnx.export folds BN into the
#: convolutions by default): train mode would silently be eval mode.
NO_BN_IN_FILE = ("--bn train: the network has no BatchNormalization node (it was folded into "
                 "the convolutions at export, so there are no batch statistics to use); export "
                 "it with BN kept: model.eval(), then torch.onnx.export(..., training="
                 "torch.onnx.TrainingMode."
                 "PRESERVE, do_constant_folding=False)")


@dataclass(frozen=True)
class PreparedSlice:
    """What a slice cuts, before any cut: each network with its name (the job's arm,
    ``upload``, or the file's name), the images (None where none are used: a plane and a
    batch from files), the plane, the test images it goes through (None: a plane from a
    file), train mode's pool of mini-batch images and where it came from."""

    params: SliceSetup
    arms: tuple[str, ...]
    nets: tuple[SliceNet, ...]
    images: SliceImages | None
    plane: Plane
    through: tuple[int, ...] | None
    train: np.ndarray | None
    batch_source: str | None

    @property
    def window(self) -> tuple[float, float, float, float]:
        e = self.params.extent
        return (-e, e, -e, e) if e > 0 else self.plane.default_window()

    @property
    def labels(self) -> list[int] | None:
        """The labels of the images the plane goes through (-1 where unknown); None for a
        plane from a file."""
        if self.through is None:
            return None
        known = self.images is not None and self.images.labels is not None
        return [int(self.images.labels[i]) if known else -1 for i in self.through]


@dataclass(frozen=True)
class SliceRun:
    """A slice cut: what was prepared, and each network's cut (in the order of ``arms``)."""

    prepared: PreparedSlice
    results: tuple[SliceResult, ...]


def _networks(params: SliceSetup) -> tuple[list[tuple[str, SliceNet]], str]:
    """The networks and the data set their images come from: a job's kept networks (its own
    data set), an uploaded network or a file (``data``)."""
    from bnviz.slices.sources import job_network, open_network

    if params.job.startswith("up-"):  # an uploaded network, on the data set chosen
        from bnviz.slices.uploads import open_upload

        return [("upload", open_upload(params.job))], params.data
    if params.job:
        nets, data = [], params.data
        for arm in params.arms.split(",") if params.arms else [None]:
            path, data = job_network(params.job, arm, params.run)
            nets.append((path.stem.rsplit("-run", 1)[0], open_network(weights=path)))
        return nets, data
    if params.model is not None:
        return [(Path(params.model).name, open_network(model=Path(params.model)))], params.data
    weights = Path(str(params.weights))
    return [(weights.name, open_network(weights=weights, arch=params.arch))], params.data


def prepare_slice(params: SliceSetup) -> PreparedSlice:
    """The networks, the images, the plane and train mode's images of ``params`` (one-line
    ValueError for anything that does not fit; nothing is cut)."""
    from bnviz.slices.plane import load_plane, plane_through_image, plane_through_images
    from bnviz.slices.sources import load_images

    named, data = _networks(params)
    arms, nets = tuple(a for a, _ in named), tuple(n for _, n in named)
    shape = nets[0].input_shape
    if params.model is not None and params.bn == "train" and \
            not any(op.kind == "bn" for op in nets[0].ops):
        raise ValueError(NO_BN_IN_FILE)
    # images only where they are used: the plane through them, or train mode's batches
    wanted = params.plane is None or (params.bn == "train" and params.batch is None)
    images = load_images(data, shape) if wanted else None
    through = None
    if params.plane is not None:
        plane = load_plane(Path(params.plane), shape)
    else:
        through = image_indices(params.images)
        if max(through) >= len(images.test):
            raise ValueError(f"images: {images.name} has {len(images.test)} test images "
                             f"(indices 0 to {len(images.test) - 1})")
        chosen = images.test[list(through)]
        plane = plane_through_images(chosen) if len(through) == 3 else \
            plane_through_image(chosen[0], params.seed)
    train, source = (images.train if images is not None else None), None
    if params.batch is not None:
        train = load_images(params.batch, shape).test
    if params.bn == "train":
        source = ("sha256:" + hashlib.sha256(Path(params.batch).read_bytes()).hexdigest()
                  if params.batch is not None else f"{images.name}: training images")
    return PreparedSlice(params, arms, nets, images, plane, through, train, source)


def check_slice_cost(prepared: PreparedSlice) -> None:
    """The first network's regions estimated and their bound checked against the cap
    (:func:`bnviz.slices.view.check_regions`, eval mode's statistics, on the CPU): what the
    page refuses before a job is queued (each cut checks its own again)."""
    check_regions(prepared.nets[0], prepared.plane, prepared.window, prepared.params,
                  device="cpu")


def slice_networks(params: SliceSetup, device: torch.device | str | None = None,
                   progress: Callable[[float], None] = lambda fraction: None) -> SliceRun:
    """The slice of ``params``: every network cut on the same plane and window; ``progress``
    hears the fraction done, over the networks and their K cuts."""
    from bnviz.slices.view import run_slice

    prepared = prepare_slice(params)
    n = len(prepared.nets)
    results = []
    for a, net in enumerate(prepared.nets):
        progress(a / n)
        results.append(run_slice(net, prepared.plane, params, prepared.train, device,
                                 lambda f, a=a: progress((a + f) / n)))
    progress(1.0)
    return SliceRun(prepared, tuple(results))
