"""Where the slice concentration experiment counts regions (``bnviz slice --concentration``;
:mod:`bnviz.slices.concentration`): the same planes and windows for every network.

* On the data: a plane through three test images (:func:`bnviz.slices.plane.
  plane_through_images`); a window is the square of half-width ``h`` centred on each of the
  three images, so a triple gives three windows of area (2h)^2.
* Off the data, two kinds of matched triples, each on its own plane through its three images,
  with the same windows about them:

  - ``gaussian``: three images drawn from the Gaussian with the data's per-pixel mean and
    covariance (of the standardised training images): what the data look like to second
    order, without their structure (the BN paper's Figure 4 control, with the full
    covariance where the paper matches mean and variance);
  - ``shuffled``: the triple's own three test images, each with its pixel positions permuted
    (channels kept together): every pixel value of the data, none of its arrangement.

* Train mode's mini-batch: ``batch_size`` training images per triple, drawn without
  replacement (they never include the test images the plane goes through).

The count in a window is the number of regions of the exact partition after every nonlinear
layer (:func:`bnviz.slices.engine.cut_slice`: nothing sampled, nothing dropped by area).
Everything is drawn once from one seed, so every network is cut on the same planes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bnviz.slices.engine import cut_slice
from bnviz.slices.graph import SliceNet, Statistics
from bnviz.slices.plane import Plane, plane_through_images

__all__ = ["KINDS", "OFF_KINDS", "Triples", "draw_triples", "gaussian_images",
           "shuffled_images", "window_counts", "windows"]

#: The kinds of triple: on the data first, then the two off the data.
KINDS: tuple[str, ...] = ("data", "gaussian", "shuffled")
OFF_KINDS: tuple[str, ...] = KINDS[1:]


@dataclass(frozen=True)
class Triples:
    """The planes every network is cut on: ``planes[kind][t]`` for triple t, the test images
    of each triple (``indices``), and each triple's mini-batch of training images (indices
    into the training images) for train mode's BN statistics."""

    indices: list[list[int]]
    planes: dict[str, list[Plane]]
    batches: list[list[int]]

    def __len__(self) -> int:
        return len(self.indices)


def gaussian_images(train: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` images drawn from N(mean, cov) of ``train`` (N, C, H, W), the per-pixel mean
    and (sample) covariance; a singular covariance (pixels that never change) is sampled
    through its eigendecomposition, negative rounding clipped to 0."""
    x = train.reshape(len(train), -1).astype(np.float64)
    mean = x.mean(0)
    lam, vec = np.linalg.eigh(np.cov(x, rowvar=False))
    root = vec * np.sqrt(np.clip(lam, 0.0, None))
    z = rng.standard_normal((count, x.shape[1]))
    return (mean + z @ root.T).reshape(count, *train.shape[1:])


def shuffled_images(images: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each image (C, H, W) with its H*W pixel positions permuted, its own permutation (the
    channels of a pixel move together)."""
    n, c = images.shape[:2]
    flat = images.reshape(n, c, -1)
    out = np.empty_like(flat)
    for i in range(n):
        out[i] = flat[i][:, rng.permutation(flat.shape[2])]
    return out.reshape(images.shape)


def draw_triples(test: np.ndarray, train: np.ndarray, count: int, batch_size: int,
                 seed: int) -> Triples:
    """``count`` triples of distinct test images and their matched off-data triples, and a
    mini-batch of ``batch_size`` training images per triple, all from ``seed``."""
    if len(train) < batch_size:
        raise ValueError(f"a mini-batch of {batch_size} needs as many training images; there "
                         f"are {len(train)}")
    rng = np.random.default_rng(seed)
    indices, planes = [], {k: [] for k in KINDS}
    batches = []
    for _ in range(count):
        idx = rng.choice(len(test), 3, replace=False)
        indices.append([int(i) for i in idx])
        planes["data"].append(plane_through_images(test[idx]))
        planes["gaussian"].append(plane_through_images(gaussian_images(train, 3, rng)))
        planes["shuffled"].append(plane_through_images(shuffled_images(test[idx], rng)))
        batches.append([int(i) for i in rng.choice(len(train), batch_size, replace=False)])
    return Triples(indices, planes, batches)


def windows(plane: Plane, half_width: float) -> list[tuple[float, float, float, float]]:
    """The squares of half-width ``half_width`` centred on the plane's images."""
    h = float(half_width)
    return [(float(a) - h, float(a) + h, float(b) - h, float(b) + h) for a, b in plane.anchors]


def window_counts(net: SliceNet, planes: list[Plane], half_width: float,
                  stats: list[Statistics | None], device: torch.device | str = "cpu",
                  max_regions: int = 1_000_000) -> list[int]:
    """The exact region count (after the last nonlinear layer) in every window of every
    plane, plane by plane (``stats[t]``: BN's statistics for plane t, None: the running
    ones)."""
    counts = []
    for plane, st in zip(planes, stats, strict=True):
        for window in windows(plane, half_width):
            counts.append(cut_slice(net, plane, window, st, device, max_regions).counts[-1])
    return counts
