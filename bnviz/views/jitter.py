"""Decision-boundary jitter across mini-batches (BN paper section 5, Figure 6).

Because mu and sigma are recomputed for every mini-batch, a BN network's decision boundary
moves from batch to batch.  Here K mini-batches of size B are drawn at once, each one's BN
statistics computed by one batched forward pass (train-mode BN: every layer normalised by
that batch's own mean and biased std, eq. 3), optionally with the extra noise of
noise-controlled BN (a virtual batch size B' < B), and all K exact decision boundaries are
cut in one batched partition pass (:func:`bnviz.core.partition.decision_boundaries`).
The realisations themselves are :mod:`bnviz.views.realisations` (their names are re-exported
here, where the page and the command line import them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from bnviz.caps import JITTER_LIMITS, JITTER_MAX_REGIONS
from bnviz.core.geometry import facet_distances
from bnviz.core.limits import PartitionTooLarge
from bnviz.core.network import Network, layer_statistics, random_network
from bnviz.core.partition import decision_boundaries
from bnviz.data.datasets import Dataset
from bnviz.device import pick_device
from bnviz.params import JitterParams
from bnviz.views.bnmoments import unit_moments
from bnviz.views.bnstats import unit_report
from bnviz.views.realisations import (
    CURVE_REALIZATIONS,
    MIN_NETWORK_SAMPLES,
    NETWORK_STATS_MAX_POINTS,
    binary_task,
    disagreement_area,
    draw_batches,
    realisation_statistics,
    virtual_references,
    virtual_statistics,
)
from bnviz.views.virtual_batch import calibrated_statistics

__all__ = [
    "JITTER_LIMITS",
    "JitterResult",
    "realisation_statistics",
    "virtual_references",
    "virtual_statistics",
    "binary_task",
    "disagreement_area",
    "disagreement_by_batch_size",
    "run_jitter",
]

@dataclass(frozen=True)
class JitterResult:
    settings: JitterParams
    network: Network
    data: Dataset
    batches: np.ndarray  # (K, B) indices into the data
    boundaries: list[np.ndarray]  # K arrays of segments (x0, y0, x1, y1)
    test_boundary: np.ndarray  # full-data (test-time) statistics
    disagreement_area: float
    margins: np.ndarray  # (n, K): distance from each point to each realisation's boundary
    seconds: float
    device: str
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        finite = self.margins[np.isfinite(self.margins)]
        return {
            "batch_size": self.settings.batch_size,
            "realizations": self.settings.realizations,
            "virtual_batch_size": self.settings.virtual_batch_size,
            "disagreement_area": self.disagreement_area,
            "margins": {"mean": float(finite.mean()) if finite.size else None,
                        "min": float(finite.min()) if finite.size else None},
            "boundaries": [b.tolist() for b in self.boundaries],
            "test_boundary": self.test_boundary.tolist(),
            "seconds": self.seconds,
            "device": self.device,
            **self.extra,
        }


def run_jitter(settings: JitterParams, net: Network | None = None,
               data: Dataset | None = None, device: torch.device | str | None = None
               ) -> JitterResult:
    """Figure 6: K mini-batch realisations of a BN network's decision boundary, the test-time
    boundary, the disagreement area and the margins of the data to each realisation.

    With a virtual batch B' < B, noise-controlled BN at the strength that makes K virtual
    batches disagree as much as K real batches of B'
    (:func:`bnviz.views.virtual_batch.calibrate_strength`; ``extra["virtual_calibration"]``).
    """
    t0 = time.perf_counter()
    dev = torch.device(device) if device is not None else pick_device()
    if data is None:
        data = binary_task(settings.dataset, settings.n_points, settings.data_seed)
    if net is None:
        net = random_network(settings.depth, settings.width, settings.activation,
                             settings.alpha, "bn", settings.weight_seed, head_outputs=2)
    if net.head is None:
        raise ValueError("jitter needs a network with a classifier head")
    n = data.points.shape[0]
    if settings.batch_size > n:
        raise ValueError(f"batch size {settings.batch_size} is larger than the data ({n})")
    box = (-settings.extent, settings.extent, -settings.extent, settings.extent)
    batches = draw_batches(n, settings.batch_size, settings.realizations, settings.batch_seed,
                            dev)
    vb, extra = settings.virtual_batch_size, {}
    if vb is not None and vb < settings.batch_size:  # noise calibrated to jitter as real B'
        mu, sigma, calibration = calibrated_statistics(
            net, data.points, batches, vb, settings.realizations, settings.batch_seed, box, dev)
        extra = {"virtual_calibration": calibration.as_json()}
    else:
        mu, sigma = realisation_statistics(net, data.points, batches, device=dev)
    try:
        boundaries = decision_boundaries(net, mu, sigma, box, dev,
                                         max_regions=JITTER_MAX_REGIONS)
    except PartitionTooLarge as exc:  # all K realisations are cut together: K is a knob too
        raise PartitionTooLarge(f"{settings.realizations} realisations together: {exc}, or "
                                "the number of realisations") from None
    full = layer_statistics(net.with_mode("bn"), data.points)
    test_boundary = decision_boundaries(net, [[s.mu for s in full]], [[s.sigma for s in full]],
                                        box, dev)[0]
    area = disagreement_area(net, mu, sigma, box)
    segs = np.concatenate(boundaries) if boundaries else np.zeros((0, 4))
    owner = np.repeat(np.arange(len(boundaries)), [len(b) for b in boundaries])
    margins = facet_distances(data.points, segs, owner, len(boundaries), device=dev)
    return JitterResult(settings, net, data, batches.cpu().numpy(), boundaries, test_boundary,
                        area, margins, time.perf_counter() - t0, str(dev), extra)


def disagreement_by_batch_size(settings: JitterParams, net: Network, data: Dataset,
                               sizes: tuple[int, ...] = (2, 4, 8, 16, 32, 64, 128, 256, 512),
                               device: torch.device | str | None = None
                               ) -> list[tuple[int, float]]:
    """Disagreement area of min(K, CURVE_REALIZATIONS) realisations of real batches of each
    size up to the data size (64^2 grid estimate; no exact boundaries needed), for the small
    plot of area vs B.  No virtual batch: this is the reference a virtual batch is calibrated
    against (its own point: :func:`bnviz.views.virtual_batch.virtual_curve_point`)."""
    dev = torch.device(device) if device is not None else pick_device()
    box = (-settings.extent, settings.extent, -settings.extent, settings.extent)
    k = min(settings.realizations, CURVE_REALIZATIONS)
    out = []
    for b in sizes:  # a handful of sizes, each batched over the realisations
        if b > data.points.shape[0]:
            break
        batches = draw_batches(data.points.shape[0], b, k, settings.batch_seed, dev)
        mu, sigma = realisation_statistics(net, data.points, batches, None,
                                           settings.batch_seed, dev)
        out.append((b, disagreement_area(net, mu, sigma, box, resolution=64)))
    return out


def network_unit_statistics(net: Network, points: np.ndarray, layer: int, batch_size: int,
                            samples: int = 2000, virtual_batch_size: int | None = None,
                            batch_seed: int = 0, units: int = 3,
                            device: torch.device | str | None = None) -> tuple[dict, dict]:
    """Figure 7 for units of this network: (report, samples) in the format of
    :func:`bnviz.views.bnstats.figure7_report` / :func:`~bnviz.views.bnstats.figure7_samples`.

    Empirical: mu and sigma^2 of the first ``units`` units of ``layer`` over ``samples``
    mini-batches of the data (train-mode BN, one batched pass; drawn, with a virtual batch's
    noise, from ``batch_seed``, as the jitter page's K mini-batches).  Analytical (eq. 13) and
    finite-population values use the moments of the unit's W z over all the data with
    test-time statistics: exact in layer 1, an approximation beyond it, where each batch is
    normalised by its own statistics (compare the empirical column).

    Cost: only layers 1..``layer`` are run, and the mini-batches are capped at
    ``NETWORK_STATS_MAX_POINTS`` points in all (samples x batch size; the report says how many
    were drawn): 2000 batches of 512 through 6 layers of 32 units held ~1 GB of float64
    temporaries and took 15 s in one web request.
    """
    dev = torch.device(device) if device is not None else pick_device()
    n = points.shape[0]
    if not 1 <= layer <= net.depth:
        raise ValueError(f"layer must be from 1 to {net.depth}, got {layer}")
    if not 2 <= batch_size <= n:
        raise ValueError(f"batch size must be from 2 to the number of points ({n})")
    units = min(units, net.widths[layer - 1])
    samples = max(1, min(samples, max(MIN_NETWORK_SAMPLES,
                                      NETWORK_STATS_MAX_POINTS // batch_size)))
    net = Network(net.weights[:layer], net.activation, net.alpha, "bn")  # deeper: not needed
    batches = draw_batches(n, batch_size, samples, batch_seed, dev)
    mu, sigma = realisation_statistics(net, points, batches, None, batch_seed, dev)
    mu_n, sigma_n = realisation_statistics(net, points, batches, virtual_batch_size, batch_seed,
                                           dev)
    full = layer_statistics(net, points)
    u = full[layer - 1].inputs @ net.weights[layer - 1][:units].T  # (n, units)
    sample = {"mu": mu[:, layer - 1, :units].cpu().numpy(),
              "sigma2": sigma[:, layer - 1, :units].pow(2).cpu().numpy(),
              "mu_noise": mu_n[:, layer - 1, :units].cpu().numpy(),
              "sigma2_noise": sigma_n[:, layer - 1, :units].pow(2).cpu().numpy(), "train": u}
    report_units = [unit_report(sample, j, batch_size, n, *unit_moments(u[:, j]))
                    for j in range(units)]
    report = {"batch_size": batch_size, "train_size": n, "samples": samples,
              "virtual_batch_size": virtual_batch_size, "batch_seed": batch_seed, "layer": layer,
              "units": report_units}
    return report, sample
