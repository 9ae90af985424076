"""Does BN concentrate the partition near the data on slices of a trained image network?
(``bnviz slice --concentration N``; the replication entry ``bn-slice-concentration``.)

A training job type (smart-init: BN statistics frozen as an initialisation, beside zero and
random bias, the same weights and batches) is run here; then, for each arm's network, N
seeded random triples of test images each give a plane and its default window (the three
with a margin).  The region density is measured from boundary crossings on a grid
(:func:`bnviz.slices.estimate.density_by_distance`: the exact partition of such a window
holds millions of regions), and its mean within a radius R of the images (R = a quarter of
the triple's largest distance to the centroid) is divided by its mean beyond R.  A ratio
above 1: denser near the images.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bnviz.slices.estimate import density_by_distance
from bnviz.slices.graph import SliceNet, Statistics
from bnviz.slices.plane import Plane, plane_through_images
from bnviz.slices.sources import load_images
from bnviz.slices.torch_import import load_network, slice_net

__all__ = ["near_far", "near_far_ratio", "slice_concentration"]


def near_far_ratio(distance: np.ndarray, density: np.ndarray, radius: float) -> float:
    """Mean density of the distance bands within ``radius`` over that of the bands beyond."""
    ok = np.isfinite(density)
    near, far = ok & (distance <= radius), ok & (distance > radius)
    if not near.any() or not far.any() or density[far].mean() <= 0:
        return float("nan")
    return float(density[near].mean() / density[far].mean())


def near_far(net: SliceNet, plane: Plane, stats: Statistics | None = None,
             device: torch.device | str = "cpu") -> float:
    """The judge's measure on one plane (module docstring): region density within R of the
    plane's images over beyond R, on the plane's default window (a 64 x 64 grid, 8 distance
    bands), R a quarter of the largest image-to-centroid distance."""
    d, dens = density_by_distance(net, plane, plane.default_window(), stats, device, grid=64,
                                  bins=8)
    return near_far_ratio(d, dens, float(np.linalg.norm(plane.anchors, axis=1).max()) / 4)


def slice_concentration(job_type: str, params: dict[str, Any], triples: int, seed: int,
                        device: torch.device, log=lambda line: None) -> dict[str, Any]:
    """Train ``job_type`` with ``params`` here, then each arm's near/far density ratio on
    ``triples`` random triples of test images (module docstring)."""
    from bnviz.images.sweep import run_here

    with tempfile.TemporaryDirectory() as tmp:
        run = run_here(job_type, params, device, log, keep=Path(tmp))
        networks = {p.stem.rsplit("-run", 1)[0]: load_network(p)[0]
                    for p in sorted(Path(tmp).glob("*-run0.safetensors"))}
    images = load_images(run["params"]["dataset"])
    shape = tuple(images.test.shape[1:])
    rng = np.random.default_rng(seed)
    picks = [rng.choice(len(images.test), 3, replace=False) for _ in range(triples)]
    arms: dict[str, Any] = {}
    for arm, model in networks.items():
        net = slice_net(model, shape, arm)
        ratios = []
        for idx in picks:
            ratios.append(near_far(net, plane_through_images(images.test[idx]), None, device))
        r = np.asarray(ratios)
        good = r[np.isfinite(r)]
        arms[arm] = {"ratios": [None if not np.isfinite(v) else round(float(v), 4) for v in r],
                     "mean": float(good.mean()) if len(good) else None,
                     "sem": float(good.std(ddof=1) / np.sqrt(len(good))) if len(good) > 1
                     else None,
                     "accuracy": run["arms"].get(arm, {}).get("final")}
        log(f"{arm}: near/far density {arms[arm]['mean']}")
    return {"job_type": job_type, "params": run["params"], "triples": triples,
            "images": [[int(v) for v in idx] for idx in picks], "arms": arms,
            "measure": "region density (estimated from boundary crossings on a 64x64 grid of "
                       "the default window) within R of the three images over beyond R, "
                       "R = a quarter of the largest image-to-centroid distance"}
