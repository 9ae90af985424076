"""Plain-JSON views of engine results (the CLI's output and the dashboard's downloads)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bnviz.core.partition import Partition, Polygons

__all__ = ["partition_to_dict", "polygons_to_list"]


def _finite(x: np.ndarray, digits: int | None) -> list:
    return (np.round(x, digits) if digits is not None else x).tolist()


def _numbers(x: np.ndarray) -> list:
    """Floats for strict JSON: non-finite values (the TLS error of a zero weight row) -> null."""
    return [v if math.isfinite(v) else None for v in np.asarray(x, dtype=np.float64).tolist()]


def polygons_to_list(polys: Polygons, widths: tuple[int, ...], digits: int | None = None
                     ) -> list[dict[str, Any]]:
    """Each region as {"code": "0110|10..", "vertices": [[x, y], ...]} (counter-clockwise)."""
    codes = polys.code_strings(widths)
    verts = _finite(polys.vertices, digits)
    ptr = polys.ptr.tolist()
    return [{"code": codes[i], "vertices": verts[ptr[i] : ptr[i + 1]]} for i in range(len(codes))]


def partition_to_dict(part: Partition, digits: int | None = None) -> dict[str, Any]:
    """The CLI's JSON schema (issue 2), plus box, widths, device and decision boundary."""
    x0, x1, y0, y1 = part.box
    layers = []
    for lp in part.layers:
        facets = np.concatenate([lp.facets, lp.facet_units[:, None].astype(np.float64)], 1)
        facet_list = [[*row[:4], int(row[4])] for row in _finite(facets, digits)]
        layers.append({
            "layer": lp.layer,
            "regions": polygons_to_list(lp.regions, part.widths, digits),
            "facets": facet_list,
            "mu": _numbers(lp.stats.mu),
            "sigma": _numbers(lp.stats.sigma),
            "batch_mean": _numbers(lp.stats.batch_mean),
            "batch_std": _numbers(lp.stats.batch_std),
            "weight_norm": _numbers(lp.stats.weight_norm),
            "tls_error": _numbers(lp.stats.tls_error),
        })
    out: dict[str, Any] = {
        "extent": max(abs(x0), abs(x1), abs(y0), abs(y1)),
        "box": [x0, x1, y0, y1],
        "widths": list(part.widths),
        "regions": layers[-1]["regions"],
        "layers": layers,
        "seconds": part.seconds,
        "device": part.device,
    }
    if part.decision_boundary is not None:
        out["decision_boundary"] = _finite(part.decision_boundary, digits)
    return out
