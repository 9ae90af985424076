"""Engine results written out: the CLI's summary (the default of ``bnviz partition``), the full
JSON (``--format json-full``) and the geometry files (``--geometry FILE``: ``.npz``,
``.parquet``, ``.geojson``).

GeoParquet needs pyarrow, the ``geo`` extra (``pip install 'bnviz[geo]'``): without it a
``.parquet`` is refused with that one line (:class:`~bnviz.extras.MissingExtra`), before any
work where the caller asks :func:`require_writer` first.

Memory stays bounded at any size: vertices go from the engine's numpy arrays to the output
without a Python object per vertex (orjson writes numpy arrays itself; the npz and Parquet
writers take whole arrays; GeoJSON rings are numpy slices).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bnviz.caps import GEOMETRY_SUFFIXES
from bnviz.core.crossings import RTOL
from bnviz.core.partition import Partition, Polygons
from bnviz.extras import require

__all__ = ["GEOMETRY_SUFFIXES", "full_json", "partition_summary",
           "partition_to_dict",
           "polygons_to_list", "require_writer", "write_geometry"]

_JSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


def _rounded(x: np.ndarray, digits: int | None) -> np.ndarray:
    return np.round(x, digits) if digits is not None else x


def _numbers(x: np.ndarray) -> list:
    """Floats for strict JSON: non-finite values (the TLS error of a zero weight row) -> null."""
    return [v if math.isfinite(v) else None for v in np.asarray(x, dtype=np.float64).tolist()]


def polygons_to_list(polys: Polygons, widths: tuple[int, ...], digits: int | None = None
                     ) -> list[dict[str, Any]]:
    """Each region as {"code": "0110|10..", "vertices": (n, 2) array} (counter-clockwise):
    one dict per region, the vertices a view of the engine's array (orjson writes it)."""
    codes = polys.code_strings(widths)
    verts = np.ascontiguousarray(_rounded(polys.vertices, digits))
    ptr = polys.ptr
    return [{"code": codes[i], "vertices": verts[ptr[i]:ptr[i + 1]]} for i in range(len(codes))]


def _stats(lp) -> dict[str, list]:
    return {name: _numbers(getattr(lp.stats, name)) for name in
            ("mu", "sigma", "batch_mean", "batch_std", "weight_norm", "tls_error")}


def _facets_json(facets: np.ndarray, units: np.ndarray) -> orjson.Fragment:
    """``[[x0, y0, x1, y1, unit], ...]`` with an integer unit, as ready JSON: orjson writes
    the float columns from the array, each row's unit is appended to its text (two small
    byte strings a facet, no Python float per coordinate)."""
    if len(facets) == 0:
        return orjson.Fragment(b"[]")
    rows = orjson.dumps(np.ascontiguousarray(facets, dtype=np.float64),
                        option=_JSON_OPTIONS)[2:-2].split(b"],[")
    tails = orjson.dumps(units.astype(np.int64), option=_JSON_OPTIONS)[1:-1].split(b",")
    return orjson.Fragment(b"[[" + b"],[".join(r + b"," + t for r, t in
                                               zip(rows, tails, strict=True)) + b"]]")


def partition_to_dict(part: Partition, digits: int | None = None) -> dict[str, Any]:
    """The full JSON (issue 2's schema, ``--format json-full``): every layer's regions and
    facets, statistics, box, widths, device and decision boundary.  Arrays stay numpy
    arrays: serialise with :func:`full_json`."""
    x0, x1, y0, y1 = part.box
    layers = []
    for lp in part.layers:
        layers.append({"layer": lp.layer,
                       "regions": polygons_to_list(lp.regions, part.widths, digits),
                       "facets": _facets_json(_rounded(lp.facets, digits), lp.facet_units),
                       **_stats(lp)})
    out: dict[str, Any] = {
        "extent": max(abs(x0), abs(x1), abs(y0), abs(y1)), "box": [x0, x1, y0, y1],
        "widths": list(part.widths), "regions": layers[-1]["regions"], "layers": layers,
        "seconds": part.seconds, "device": part.device}
    if part.decision_boundary is not None:
        out["decision_boundary"] = np.ascontiguousarray(_rounded(part.decision_boundary,
                                                                 digits))
    return out


def full_json(part: Partition, digits: int | None = None) -> bytes:
    """``--format json-full``: :func:`partition_to_dict` written by orjson (numpy arrays as
    they are; NaN and inf as null).  A facet is ``[x0, y0, x1, y1, unit]``."""
    return orjson.dumps(partition_to_dict(part, digits), option=_JSON_OPTIONS) + b"\n"


def _area_summary(areas: np.ndarray) -> dict[str, float]:
    return {"min": float(areas.min()), "median": float(np.median(areas)),
            "max": float(areas.max()), "total": float(areas.sum())}


def partition_summary(part: Partition, mode: str | None = None,
                      points: np.ndarray | None = None) -> dict[str, Any]:
    """``bnviz partition``'s default: counts, per-layer statistics, the tolerance and the
    engine's time, a few kB at any size (no geometry: ``--geometry`` writes it).

    Per layer: regions of Omega_{1|l} (and how many layer l added), facets, vertices, the
    regions' areas (min, median, max, total: the box's area up to rounding), and the
    statistics each unit's hyperplane has (eq. 3: mu, sigma; eq. 8: the TLS error), as
    min / mean / max over the layer's units.  With ``points`` (the data), ``data_distance``:
    the mean over the points of the input-space distance to the nearest of the layer's own
    facets (eq. 12; None where the layer has none), the measure of Figure 1's claim that does
    not depend on each layer's weight scale (the TLS error, measured in the layer's own input
    space, does)."""
    from bnviz.core.geometry import nearest_segment_distances
    x0, x1, y0, y1 = part.box
    layers, previous = [], 1
    for lp in part.layers:
        n = len(lp.regions)
        stats = {}
        for name in ("mu", "sigma", "tls_error"):
            v = np.asarray(getattr(lp.stats, name), dtype=np.float64)
            v = v[np.isfinite(v)]
            stats[name] = ({"min": float(v.min()), "mean": float(v.mean()),
                            "max": float(v.max())} if len(v) else None)
        tls = np.asarray(lp.stats.tls_error, dtype=np.float64)
        layers.append({"layer": lp.layer, "units": int(part.widths[lp.layer - 1]),
                       "regions": n, "new_regions": n - previous, "facets": len(lp.facets),
                       "vertices": len(lp.regions.vertices),
                       "area": _area_summary(lp.regions.areas()),
                       "tls_error_sum": float(tls[np.isfinite(tls)].sum()), **stats})
        if points is not None:
            dist = nearest_segment_distances(points, lp.facets, "cpu") if len(lp.facets) \
                else None
            layers[-1]["data_distance"] = None if dist is None else float(np.mean(dist))
        previous = n
    out: dict[str, Any] = {
        "format": "summary", "extent": max(abs(x0), abs(x1), abs(y0), abs(y1)),
        "box": [x0, x1, y0, y1], "widths": list(part.widths),
        "mode": mode, "regions": len(part.regions), "layers": layers,
        "tolerance": {"rtol": RTOL, "rule": "a vertex v is on F_{l,k} when |h_{l,k}(v)| <= "
                      "rtol x (|a_x| X + |a_y| Y + |c|), with h = a.x + c on the region and "
                      "X, Y the box's largest coordinates (bnviz.core.crossings)"},
        "seconds": part.seconds, "device": part.device}
    if part.decision_boundary is not None:
        out["decision_boundary_segments"] = len(part.decision_boundary)
    return out


# ---------------------------------------------------------------------- geometry files
def _npz(part: Partition, path: Path) -> None:
    """Flat arrays, one group per layer l: ``layer{l}_vertices`` (V, 2) float64,
    ``layer{l}_offsets`` (R + 1,) int64 (region i is vertices[offsets[i]:offsets[i+1]]),
    ``layer{l}_codes`` (R, ceil(U/8)) uint8 (the activation bits of layers 1..l, packed 8 a
    byte: ``np.unpackbits(codes, axis=1, count=U)``), ``layer{l}_facets`` (S, 4) and
    ``layer{l}_facet_units`` (S,); and ``box``, ``widths``, ``seconds``."""
    arrays: dict[str, np.ndarray] = {"box": np.asarray(part.box, dtype=np.float64),
                                     "widths": np.asarray(part.widths, dtype=np.int64),
                                     "seconds": np.asarray(part.seconds)}
    for lp in part.layers:
        key = f"layer{lp.layer}"
        arrays |= {f"{key}_vertices": lp.regions.vertices,
                   f"{key}_offsets": lp.regions.ptr.astype(np.int64),
                   f"{key}_codes": lp.regions.packed_codes,
                   f"{key}_facets": lp.facets, f"{key}_facet_units": lp.facet_units}
    if part.decision_boundary is not None:
        arrays["decision_boundary"] = part.decision_boundary
    with path.open("wb") as f:
        np.savez_compressed(f, **arrays)


def _rings(polys: Polygons) -> np.ndarray:
    """Every polygon's ring closed (its first vertex repeated), flat: (V + R, 2)."""
    counts = np.diff(polys.ptr)
    starts = polys.ptr[:-1]
    order = np.repeat(np.arange(len(counts)), counts + 1)
    within = np.arange(len(order)) - np.repeat(np.cumsum(counts + 1) - (counts + 1), counts + 1)
    src = starts[order] + np.where(within < counts[order], within, 0)
    return polys.vertices[src]


def _region_table(part: Partition) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray,
                                             np.ndarray]:
    """All layers' regions: layer, region index, code string, area, polygon (shapely)."""
    import shapely

    layers, index, codes, areas, polygons = [], [], [], [], []
    for lp in part.layers:
        polys = lp.regions
        counts = np.diff(polys.ptr) + 1
        rings = shapely.linearrings(_rings(polys),
                                    indices=np.repeat(np.arange(len(counts)), counts))
        polygons.append(shapely.polygons(rings))
        n = len(polys)
        layers.append(np.full(n, lp.layer, dtype=np.int32))
        index.append(np.arange(n, dtype=np.int64))
        codes += polys.code_strings(part.widths)
        areas.append(polys.areas())
    return (np.concatenate(layers), np.concatenate(index), codes, np.concatenate(areas),
            np.concatenate(polygons))


def _parquet(part: Partition, path: Path) -> None:
    """GeoParquet 1.0: one row per region of each layer (``layer``, ``region``, ``code``,
    ``area``, ``geometry`` as WKB polygons), the ``geo`` metadata naming the geometry column
    (no CRS: the input plane)."""
    import shapely

    pa = require("pyarrow", "GeoParquet", "geo")
    pq = require("pyarrow.parquet", "GeoParquet", "geo")

    layer, region, codes, area, polygons = _region_table(part)
    x0, x1, y0, y1 = part.box
    geo = {"version": "1.0.0", "primary_column": "geometry",
           "columns": {"geometry": {"encoding": "WKB", "geometry_types": ["Polygon"],
                                    "crs": None, "bbox": [x0, y0, x1, y1]}}}
    table = pa.table({"layer": layer, "region": region, "code": pa.array(codes, pa.string()),
                      "area": area,
                      "geometry": pa.array(shapely.to_wkb(polygons), pa.binary())})
    table = table.replace_schema_metadata({b"geo": orjson.dumps(geo),
                                           b"bnviz": orjson.dumps({"widths": part.widths})})
    pq.write_table(table, path)


def _geojson(part: Partition, path: Path) -> None:
    """A FeatureCollection: one Polygon feature per region of each layer, with its layer,
    region index, code and area; rings are numpy slices written by orjson."""
    features = []
    for lp in part.layers:
        polys = lp.regions
        ring = _rings(polys)
        starts = polys.ptr[:-1] + np.arange(len(polys))
        ends = polys.ptr[1:] + np.arange(1, len(polys) + 1)
        codes = polys.code_strings(part.widths)
        areas = polys.areas().tolist()
        features += [{"type": "Feature",
                      "geometry": {"type": "Polygon", "coordinates": [ring[s:e]]},
                      "properties": {"layer": lp.layer, "region": i, "code": codes[i],
                                     "area": areas[i]}}
                     for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(),
                                                    strict=True))]
    path.write_bytes(orjson.dumps({"type": "FeatureCollection", "features": features},
                                  option=_JSON_OPTIONS))


def require_writer(path: Path) -> None:
    """The package the format of ``path`` needs is installed, else MissingExtra (one line
    naming the pip command): asked before the work whose result goes to ``path``."""
    if path.suffix.lower() == ".parquet":
        require("pyarrow.parquet", "GeoParquet", "geo")


def write_geometry(part: Partition, path: Path) -> Path:
    """Write every layer's regions to ``path``, in the format its suffix names
    (:data:`GEOMETRY_SUFFIXES`; checked by the CLI before any work). MissingExtra when the
    format's optional package is not installed (:func:`require_writer`)."""
    require_writer(path)
    writers = {".npz": _npz, ".parquet": _parquet, ".geojson": _geojson}
    writers[path.suffix.lower()](part, path)
    return path
