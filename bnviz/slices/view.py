"""A slice as the command line (and the /slice page) asks for it: the network, the plane, BN
in eval or train mode with K mini-batches, the cost checked before any cut, the exact
partitions, and the decision boundary's jitter across the mini-batches (Figure 6 of the BN
paper on real images).

Train mode: each BN layer normalises by the mean and biased variance of a mini-batch of
training images (earlier layers in train mode too), and the slice's own points are NOT part
of that batch, so the network stays piecewise affine on the plane (with them in the batch,
every point would move the statistics, and nothing would be affine).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bnviz.params.slice import SliceParams, check_slice_regions, slice_region_cap
from bnviz.slices.cost import RegionEstimate, estimate_regions
from bnviz.slices.engine import Slice, cut_slice
from bnviz.slices.estimate import CHUNK_BYTES
from bnviz.slices.graph import SliceNet, Statistics, batch_statistics, forward
from bnviz.slices.plane import Plane
from bnviz.slices.slice_net import multiply_adds

__all__ = ["TRAIN_MODE_NOTE", "SliceResult", "check_regions", "disagreement_area", "run_slice",
           "slice_summary"]

TRAIN_MODE_NOTE = ("train mode: BN uses the statistics of each mini-batch of training images; "
                   "the slice's own points are not in the batch, so the network stays piecewise "
                   "affine on the plane")


#: What a slice's ``seconds`` measure (its JSON says so beside them).
SECONDS_MEASURE = ("wall time of the exact cuts, summed over the mini-batches: not the "
                   "process's start, the network's or images' loading, nor the estimate")


@dataclass(frozen=True)
class SliceResult:
    params: SliceParams
    slices: list[Slice]  # one per mini-batch (one in eval mode)
    stats: list  # each mini-batch's BN statistics (None: the running ones)
    estimate: RegionEstimate  # the first partition's regions, before the cut
    disagreement: float | None  # fraction of the window where the K boundaries disagree
    batch_indices: list[list[int]] | None = None  # each mini-batch's images (train mode)


def batch_indices(count: int, params: SliceParams) -> list[list[int]]:
    """The indices of K mini-batches of ``batch_size`` of ``count`` images, drawn without
    replacement (seeded): a slice's train mode is reproduced from them."""
    if count < params.batch_size:
        raise ValueError(f"a mini-batch of {params.batch_size} needs as many images; there "
                         f"are {count}")
    rng = np.random.default_rng(params.seed)
    return [rng.choice(count, params.batch_size, replace=False).tolist()
            for _ in range(params.batches)]


def mini_batches(images: np.ndarray, params: SliceParams) -> list[np.ndarray]:
    """K mini-batches of ``batch_size`` images drawn without replacement (seeded)."""
    return [images[i] for i in batch_indices(len(images), params)]


def statistics_of(net: SliceNet, batches: list[np.ndarray]) -> list[Statistics | None]:
    return [batch_statistics(net, torch.as_tensor(b, dtype=torch.float64)) for b in batches]


def run_slice(net: SliceNet, plane: Plane, params: SliceParams,
              train_images: np.ndarray | None = None,
              device: torch.device | str | None = None,
              progress: Callable[[float], None] = lambda fraction: None) -> SliceResult:
    """The slice of ``params`` (module docstring): refused from the region estimate's bound
    before any cut (:func:`check_regions`);
    ``progress`` hears the fraction done (over the K cuts)."""
    window = ((-params.extent, params.extent, -params.extent, params.extent)
              if params.extent > 0 else plane.default_window())
    chosen = None
    if params.bn == "train":
        if train_images is None:
            raise ValueError("train mode needs images for its mini-batches")
        chosen = batch_indices(len(train_images), params)
        stats = statistics_of(net, [train_images[i] for i in chosen])
    else:
        stats = [None]
    estimate = check_regions(net, plane, window, params, stats[0], device)
    slices = [_cut(net, plane, window, s, params, device,
                   lambda f, k=k: progress((k + f) / len(stats)))
              for k, s in enumerate(stats)]
    disagreement = disagreement_area(net, plane, window, stats) if len(stats) > 1 else None
    return SliceResult(params, slices, stats, estimate, disagreement, chosen)


def _cut(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
         stats: Statistics | None, params: SliceParams, device: torch.device | str | None,
         progress: Callable[[float], None]) -> Slice:
    """One partition: one exact cut, or ``params.tiles`` tiles merged exactly by full code
    (:func:`bnviz.slices.tiles.cut_tiled`: the same regions, codes and areas), on
    ``params.workers`` processes; on a GPU the tiles share this process's device (one CUDA
    context), so they run here."""
    if params.tiles == 1:
        return cut_slice(net, plane, window, stats, device, params.max_regions, progress)
    from bnviz.slices.tiles import cut_tiled

    on_gpu = device is not None and torch.device(device).type != "cpu"
    return cut_tiled(net, plane, window, stats, tiles=params.tiles,
                     workers=1 if on_gpu else params.workers, device=device,
                     max_regions=params.max_regions,
                     progress=lambda done, total: progress(done / total))


def check_regions(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                  params: SliceParams, stats: Statistics | None = None,
                  device: torch.device | str | None = None) -> RegionEstimate:
    """The first partition's regions estimated (:func:`bnviz.slices.cost.estimate_regions`,
    its sample grown until the cap's decision is clear) and refused, one line, when the bound
    is over the cap."""
    work = multiply_adds(net)  # (a heavy network's caps are scaled down: bnviz.caps)
    estimate = estimate_regions(net, plane, window, stats, device,
                                slice_region_cap(params, work))
    check_slice_regions(estimate.regions, estimate.error, estimate.bound, params,
                        estimate.exceeded, work)
    return estimate


@torch.no_grad()
def disagreement_area(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                      stats: list[Statistics | None], resolution: int = 96) -> float:
    """Fraction of the window where the K networks do not all predict the same class, at the
    centres of a resolution x resolution grid (as the jitter page measures it)."""
    a0, a1, b0, b1 = window
    steps = (np.arange(resolution) + 0.5) / resolution
    aa, bb = np.meshgrid(a0 + steps * (a1 - a0), b0 + steps * (b1 - b0))
    ab = np.stack([aa.ravel(), bb.ravel()], 1)
    units = sum(int(np.prod(s)) for s in net.shapes().values())
    chunk = max(1, CHUNK_BYTES // (8 * units))  # (the forward keeps one tensor or two)
    disagree = 0
    for s0 in range(0, len(ab), chunk):
        x = torch.as_tensor(plane.points(ab[s0:s0 + chunk]))
        preds = torch.stack([forward(net, x, s).argmax(1) for s in stats])
        disagree += int((preds != preds[:1]).any(0).sum())
    return disagree / len(ab)


def slice_summary(result: SliceResult, net: SliceNet) -> dict:
    """What ``bnviz slice --json`` prints: counts per layer, seconds, the window, the images'
    coordinates, the decision boundary, and the jitter across mini-batches."""
    first = result.slices[0]
    layers = [{"name": lay.name, "kind": lay.kind, "units": int(np.prod(lay.shape)),
               "regions": len(lay.regions), "facets": len(lay.facets)} for lay in first.layers]
    out = {
        "network": net.source, "input_shape": list(net.input_shape), "bn": result.params.bn,
        "window": list(first.window), "anchors": first.plane.anchors.tolist(),
        "regions": first.counts, "layers": layers, "estimate": result.estimate.regions,
        "estimate_error": result.estimate.error, "estimate_bound": result.estimate.bound,
        "decision_boundary_segments": len(first.decision_boundary),
        "classes": np.unique(first.predicted_class).tolist(),
        "seconds": round(sum(s.seconds for s in result.slices), 4), "device": first.device,
    }
    if result.params.bn == "train":
        out["note"] = TRAIN_MODE_NOTE
        out["batches"] = result.params.batches
        out["batch_size"] = result.params.batch_size
        out["regions_per_batch"] = [s.counts for s in result.slices]
    if result.disagreement is not None:
        out["disagreement_area"] = result.disagreement
    out["provenance"] = slice_provenance(result)
    return out


def slice_provenance(result: SliceResult, batch_source: str | None = None) -> dict:
    """What reproduces a slice from its JSON or geometry file alone: the plane (origin, u, v
    as flat lists of the image's shape), the window, the seed, each mini-batch's image
    indices (train mode) and where they were drawn from, bnviz's version, and what
    ``seconds`` measures."""
    from bnviz import __version__

    plane = result.slices[0].plane
    return {
        "plane": {"shape": list(np.shape(plane.origin)),
                  "origin": np.ravel(plane.origin).tolist(), "u": np.ravel(plane.u).tolist(),
                  "v": np.ravel(plane.v).tolist()},
        "window": list(result.slices[0].window), "seed": result.params.seed,
        "bn": result.params.bn, "batch_indices": result.batch_indices,
        "batch_source": batch_source, "bnviz_version": __version__,
        "seconds_measure": SECONDS_MEASURE,
    }
