"""Figure 1's entry (BN paper): how it reads ``bnviz partition``'s output and judges it.

The claim is that BN puts every layer's folded hyperplanes *on the data*, not merely that it
cuts the input space finely.  So the measure is concentration relative to uniform: for each
network (seed) and layer, the mean distance from uniform points over the box to the layer's
nearest facet, divided by the mean distance from the data to it.  A partition equally dense
everywhere scores about 1 (a little more where the data sit away from the box's edges, which
have no facets beyond them); one whose facets cluster on the data scores well above 1.

The data's distances are ``bnviz partition --format json``'s ``data_distance`` (eq. 12, per
layer); the uniform points' are computed here, with the same function, from the facets of
``--format json-full`` for the same settings.  The rule is :func:`fig1_status`'s docstring;
the statistics (two standard errors) are :mod:`bnviz.replication.judges`'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from bnviz.core.geometry import nearest_segment_distances
from bnviz.replication.judges import CI_Z

__all__ = ["GRID", "fig1_comparisons", "fig1_ours", "fig1_status", "log_concentration",
           "uniform_points"]

#: The uniform points: the centres of a GRID x GRID grid of equal cells over the box.
GRID = 60


def uniform_points(box: Sequence[float]) -> np.ndarray:
    """(GRID^2, 2) points spread uniformly over ``box`` = [x0, x1, y0, y1]."""
    x0, x1, y0, y1 = box
    t = (np.arange(GRID) + 0.5) / GRID
    xs, ys = np.meshgrid(x0 + t * (x1 - x0), y0 + t * (y1 - y0))
    return np.column_stack([xs.ravel(), ys.ravel()])


def _uniform_distances(full: dict, points: np.ndarray) -> list[float | None]:
    """Per layer, the mean distance from ``points`` to its nearest facet (None: no facet)."""
    out: list[float | None] = []
    for layer in full["layers"]:
        facets = np.asarray([f[:4] for f in layer["facets"]], dtype=np.float64).reshape(-1, 4)
        out.append(float(nearest_segment_distances(points, facets, "cpu").mean())
                   if len(facets) else None)
    return out


def fig1_ours(runs: Sequence[dict], modes: Sequence[str]) -> dict[str, Any]:
    """From ``bnviz partition``'s output, seed after seed, each mode of ``modes`` (BN first)
    as a pair (``--format json``, ``--format json-full``): per mode, seed and layer the mean
    distance from the data (``distance_*``) and from the uniform points (``uniform_distance_*``)
    to the layer's nearest facet; BN's layer-1 region counts; and, first, what the judge
    concludes from them (:func:`fig1_comparisons`)."""
    dist: dict[str, list] = {m: [] for m in modes}
    uniform: dict[str, list] = {m: [] for m in modes}
    for k in range(0, len(runs), 2):
        summary, full = runs[k], runs[k + 1]
        mode = modes[(k // 2) % len(modes)]
        dist[mode].append([layer["data_distance"] for layer in summary["layers"]])
        uniform[mode].append(_uniform_distances(full, uniform_points(summary["box"])))
    ours: dict[str, Any] = {
        "seeds": len(dist[modes[0]]), "width": runs[0]["widths"][0],
        "regions_bn_layer1": [run["layers"][0]["regions"] for run in runs[::2 * len(modes)]],
        **{f"distance_{m}": v for m, v in dist.items()},
        **{f"uniform_distance_{m}": v for m, v in uniform.items()}}
    return {**fig1_comparisons(ours), **ours}


def log_concentration(ours: dict, mode: str) -> np.ndarray:
    """One value per seed: the mean over the layers of log(uniform distance / data
    distance); a layer without a facet has none near the data (log 1 = 0)."""
    rows = []
    for data_row, uniform_row in zip(ours[f"distance_{mode}"], ours[f"uniform_distance_{mode}"],
                                     strict=True):
        rows.append([0.0 if d is None or u is None else math.log(u / d)
                     for d, u in zip(data_row, uniform_row, strict=True)])
    return np.asarray(rows, dtype=float).mean(axis=1)


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The mean of the paired differences a - b (one per seed) and its standard error."""
    d = a - b
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.inf


def fig1_comparisons(ours: dict) -> dict[str, Any]:
    """Each mode's concentration (the geometric mean over seeds and layers) and, for each
    mode without BN, BN's log-concentration minus it: the paired mean over the seeds and its
    standard error."""
    modes = [k.removeprefix("distance_") for k in ours if k.startswith("distance_")]
    logs = {m: log_concentration(ours, m) for m in modes}
    out: dict[str, Any] = {f"concentration_{m}": float(np.exp(v.mean())) for m, v in logs.items()}
    for m in modes:
        if m != "bn":
            mean, se = _paired(logs["bn"], logs[m])
            out[f"log_bn_over_{m}"] = mean
            out[f"log_bn_over_{m}_se"] = se
    return out


def fig1_status(ours: dict) -> str:
    """Concentration relative to uniform (the module's measure), one value per seed: the
    mean over the layers of log(mean distance of uniform points over the box to the layer's
    nearest facet / that of the data).  BN against zero bias and against random bias, paired
    over the seeds (same weights, same data): BN concentrates more when the mean of the
    paired differences is more than two standard errors above 0.  Reproduced: more than both,
    and BN's layer 1 is central (2 D_1 regions) in every seed; partly: more than one of them,
    or than both without a central layer 1; not reproduced: more than neither (a partition
    as dense away from the data as on it scores like the networks without BN)."""
    c = fig1_comparisons(ours)
    others = [k for k in c if k.startswith("log_bn_over_") and not k.endswith("_se")]
    wins = sum(c[k] - CI_Z * c[f"{k}_se"] > 0 for k in others)
    central = all(r == 2 * ours["width"] for r in ours["regions_bn_layer1"])
    if wins == len(others) and wins and central:
        return "reproduced"
    return "partly" if wins else "not reproduced"
