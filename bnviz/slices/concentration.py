"""Does BN put the partition on the data?  Exact region counts in small windows on and off
the data, network by network (``bnviz slice --concentration T``; the replication entry
``bn-slice-concentration``, judged by :mod:`bnviz.replication.slice_concentration`).

For each seed, one network per arm (:mod:`bnviz.slices.concentration_arms`: ``bn`` trained
with mini-batch statistics, ``zero_bias``, ``random_bias``, ``scale_only``: BN without
centring), measured at initialisation and again after training.  Each network is cut on the
same planes (:mod:`bnviz.slices.concentration_windows`): T triples of test images, and for
each its two matched off-data triples (Gaussian images with the data's per-pixel mean and
covariance; the triple's images with their pixels shuffled); in each of the three windows of
half-width h about a plane's images, the exact region count after the last nonlinear layer.

A network with BN is cut twice: ``eval``, BN with fixed statistics (at initialisation the
training set's, as the BN paper's Figure 4 takes them; after training the running averages
training kept), and ``train``, BN with the statistics of each triple's mini-batch of training
images (earlier layers in train mode too).  A network without BN is one network in either
mode: it is cut once, and its counts stand under both.

The per-network value (the judge's, computed from these counts) is the natural log of the
mean count on the data over the mean count off the data, for each off-data kind.

:func:`near_far` and :func:`near_far_ratio` are the lecture's slice scene's measure (region
density near three images over far from them, estimated on a grid).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from bnviz.slices.concentration_arms import (
    ARMS,
    Recipe,
    cpu_tensors,
    initial_network,
    train_network,
)
from bnviz.slices.concentration_windows import KINDS, Triples, draw_triples, window_counts
from bnviz.slices.estimate import density_by_distance
from bnviz.slices.graph import SliceNet, Statistics, batch_statistics
from bnviz.slices.plane import Plane
from bnviz.slices.torch_import import slice_net

__all__ = ["MEASURE", "measure_network", "near_far", "near_far_ratio", "slice_concentration"]

MEASURE = ("exact region count (after the last nonlinear layer) in each square window of "
           "half-width h centred on each of the three images of a plane; on the data: planes "
           "through three test images; off the data, the same windows on planes through three "
           "Gaussian images (the data's per-pixel mean and covariance) and through the same "
           "three test images with their pixels shuffled")


def near_far_ratio(distance: np.ndarray, density: np.ndarray, radius: float) -> float:
    """Mean density of the distance bands within ``radius`` over that of the bands beyond."""
    ok = np.isfinite(density)
    near, far = ok & (distance <= radius), ok & (distance > radius)
    if not near.any() or not far.any() or density[far].mean() <= 0:
        return float("nan")
    return float(density[near].mean() / density[far].mean())


def near_far(net: SliceNet, plane: Plane, stats: Statistics | None = None,
             device: torch.device | str = "cpu") -> float:
    """The lecture scene's measure on one plane: region density within R of the plane's
    images over beyond R, on the plane's default window (a 64 x 64 grid, 8 distance bands),
    R a quarter of the largest image-to-centroid distance."""
    d, dens = density_by_distance(net, plane, plane.default_window(), stats, device, grid=64,
                                  bins=8)
    return near_far_ratio(d, dens, float(np.linalg.norm(plane.anchors, axis=1).max()) / 4)


def measure_network(net: SliceNet, triples: Triples, train: np.ndarray, half_width: float,
                    fixed: Statistics | None = None, device: torch.device | str = "cpu"
                    ) -> dict[str, dict[str, list[int]]]:
    """``{mode: {kind: counts}}``: every window's count on every kind of plane, in eval mode
    (BN with ``fixed`` statistics, None: its running ones) and in train mode (each triple's
    mini-batch of ``train`` images); a network without BN once, under both modes."""
    n = len(triples)
    eval_counts = {k: window_counts(net, triples.planes[k], half_width, [fixed] * n, device)
                   for k in KINDS}
    if not net.bn_ops:
        return {"eval": eval_counts, "train": eval_counts}
    stats = [batch_statistics(net, torch.as_tensor(train[b])) for b in triples.batches]
    return {"eval": eval_counts,
            "train": {k: window_counts(net, triples.planes[k], half_width, stats, device)
                      for k in KINDS}}


def _means(counts: dict[str, dict[str, list[int]]]) -> str:
    return "; ".join(f"{mode} " + ", ".join(f"{k} {np.mean(v):.1f}" for k, v in by.items())
                     for mode, by in counts.items())


def slice_concentration(triples: int, seeds: list[int], data: str = "digits",
                        recipe: Recipe | None = None, half_width: float = 0.03,
                        seed: int = 0, device: torch.device | str = "cpu",
                        log: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """The experiment (module docstring): ``triples`` triples drawn from ``seed``, one network
    per arm and seed of ``seeds``, each measured at initialisation and after training;
    returns every network's window counts with what made them."""
    from bnviz.core import kernels

    kernels.require()
    recipe = recipe or Recipe()
    t0 = time.perf_counter()
    tensors = cpu_tensors(data)
    test = tensors.x_test.double().numpy()
    train = tensors.x_train.double().numpy()
    shape = tuple(test.shape[1:])
    drawn = draw_triples(test, train, triples, recipe.batch_size, seed)
    networks: list[dict[str, Any]] = []
    spent = {"training": 0.0, "cuts": 0.0}
    for s in seeds:
        for arm in ARMS:
            model = initial_network(arm, s, tensors, recipe)
            for stage in ("init", "trained"):
                accuracy = None
                if stage == "trained":
                    t = time.perf_counter()
                    accuracy = train_network(model, s, tensors, recipe)
                    spent["training"] += time.perf_counter() - t
                t = time.perf_counter()
                net = slice_net(model, shape, f"{recipe.arch} {arm} seed {s} {stage}")
                # at initialisation BN's fixed statistics are the training set's (the BN
                # paper's Figure 4); after training, the running averages it kept
                fixed = batch_statistics(net, torch.as_tensor(train)) \
                    if net.bn_ops and stage == "init" else None
                counts = measure_network(net, drawn, train, half_width, fixed, device)
                seconds = time.perf_counter() - t
                spent["cuts"] += seconds
                networks.append({"arm": arm, "seed": s, "stage": stage,
                                 "bn": bool(net.bn_ops), "accuracy": accuracy,
                                 "counts": counts, "seconds": round(seconds, 2)})
                log(f"{arm} seed {s} {stage}: mean regions a window: {_means(counts)} "
                    f"({seconds:.1f} s)")
    return {"experiment": "slice-concentration", "dataset": data, "arch": recipe.arch,
            "width": recipe.width, "epochs": recipe.epochs, "lr": recipe.lr,
            "batch_size": recipe.batch_size, "arms": list(ARMS), "seeds": list(seeds),
            "seed": seed, "triples": triples, "half_width": half_width,
            "window_area": (2 * half_width) ** 2, "kinds": list(KINDS),
            "images": drawn.indices, "batches": drawn.batches, "measure": MEASURE,
            "eval_statistics": {"init": "the training set's (every training image)",
                                "trained": "the running averages kept in training"},
            "networks": networks,
            "seconds": {"total": round(time.perf_counter() - t0, 1),
                        "training": round(spent["training"], 1),
                        "cuts": round(spent["cuts"], 1)}}
