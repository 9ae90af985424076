"""The map of a slice job (issue 45, item 4): a partition of millions of regions drawn as a
raster you can pan and zoom, and cut again exactly once the view is small enough to draw.

A finished slice job keeps its exact partition as tiles on disk (:mod:`bnviz.slices.
tile_store`). The map never sends those polygons to a browser: it rasterises their facets on
the server with datashader (a count of segments per pixel, shaded on a log scale) into map
tiles of :data:`TILE_PX` pixels, on a quadtree over the job's window (zoom ``z``: 2^z by 2^z
tiles), and a view is the tiles that cover it at the zoom whose pixels match the screen's.
A map tile reads only the job's tiles it overlaps, and is kept in the shared disk cache
(:func:`bnviz.service.cache.shared_cache`: every web process, across restarts).

Zoomed in until the stored partition has at most :data:`RECUT_MAX_REGIONS` regions in the
view (counted from the stored tiles' own counts, prorated by area), the view is cut again,
exactly, with the job's own networks, plane, BN statistics and tolerance scale
(:mod:`bnviz.slices.tiled_plan`): the page then draws it as vectors, with codes on click and
the images on hover, as it draws a small slice (:func:`bnviz.slices.job.slice_arrays`).
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bnviz.caps import SLICE_MAP_MAX_ZOOM, SLICE_MAP_RECUT_REGIONS
from bnviz.service.cache import memoize
from bnviz.slices.tile_store import TileStore, tiles_root

__all__ = ["RECUT_MAX_REGIONS", "TILE_PX", "MapSource", "exact_regions", "finished_maps",
           "map_view", "open_map", "png_uri", "prepare_recut", "prerender", "recut_view",
           "regions_in_view", "warm_rasteriser"]

#: A map tile's side in pixels.
TILE_PX = 256
#: The most regions (summed over the job's partitions) a view may hold to be cut again.
RECUT_MAX_REGIONS = SLICE_MAP_RECUT_REGIONS
#: Seconds to read one layer's facets of one stored tile and rasterise them (measured: 16 map
#: tiles of the 163-tile default window's 12 layers in 3.0 s), for the web's admission.
_TILE_READ_SECONDS = 0.0015
_FACET_RGB = (60, 60, 60)
_BOUNDARY_RGB = (214, 39, 40)

Rect = tuple[float, float, float, float]  # a0, a1, b0, b1


@dataclass(frozen=True)
class MapSource:
    """A finished slice job's stored partition, as the map reads it (its ``index.json``)."""

    key: str
    folder: Path
    window: Rect
    tiles: np.ndarray  # (T, 4): each stored tile's rectangle
    parts: tuple[str, ...]  # "a<arm>-b<batch>"
    arms: tuple[str, ...]
    layers: tuple[str, ...]  # the first part's nonlinear layers, by name
    regions: dict[str, np.ndarray]  # part -> (T, L): each tile's regions per layer
    params: dict[str, Any]
    anchors: np.ndarray | None = None  # (3, 2): the three images on the plane (None: older jobs)
    merged: dict[str, np.ndarray] | None = None  # part -> (L,): the merged partition's regions

    @property
    def store(self) -> TileStore:
        return TileStore(self.key, self.folder.parent)


@memoize()
def open_map(key: str, root: str | None = None) -> MapSource:
    """The stored partition of the slice job whose tiles' key is ``key`` (ValueError when it
    is not a finished one: no ``index.json``)."""
    store = TileStore(key, Path(root) if root else tiles_root())
    if not store.index.is_file():
        raise ValueError(f"no finished slice job has the tiles {key}")
    index = store.read_index()
    parts = tuple(p["part"] for p in index["parts"])
    regions = {p["part"]: np.array([t["regions"] for t in sorted(
        p["tiles"], key=lambda t: t["index"])], dtype=np.int64) for p in index["parts"]}
    first = store.read_info(parts[0], 0)
    arms = tuple(dict.fromkeys(p["arm"] for p in index["parts"]))
    return MapSource(key, store.folder, tuple(float(v) for v in index["window"]),
                     np.asarray(index["tiles"], dtype=np.float64), parts, arms,
                     tuple(lay["name"] for lay in first["layers"]), regions, index["params"],
                     np.asarray(index["anchors"], dtype=np.float64) if "anchors" in index
                     else None,
                     {p["part"]: np.asarray(p["regions"], np.int64) for p in index["parts"]}
                     if all("regions" in p for p in index["parts"]) else None)


def _overlap(tiles: np.ndarray, rect: Rect) -> np.ndarray:
    """Each tile's area inside ``rect``, as a fraction of the tile's area."""
    a0, a1, b0, b1 = rect
    w = np.clip(np.minimum(tiles[:, 1], a1) - np.maximum(tiles[:, 0], a0), 0, None)
    h = np.clip(np.minimum(tiles[:, 3], b1) - np.maximum(tiles[:, 2], b0), 0, None)
    area = (tiles[:, 1] - tiles[:, 0]) * (tiles[:, 3] - tiles[:, 2])
    return w * h / area


def regions_in_view(source: MapSource, rect: Rect, layer: int = -1) -> float:
    """The regions of ``layer`` (default: the last) in ``rect``, summed over the job's
    partitions (the cost of cutting the view again): exact where the view holds the whole
    window (:func:`exact_regions`), else each stored tile's count prorated by the share of its
    area in the view (a region a tile line cuts counts once per tile it lies in)."""
    exact = exact_regions(source, rect, layer)
    if exact is not None:
        return float(exact)
    share = _overlap(source.tiles, rect)
    return float(sum((share * r[:, layer]).sum() for r in source.regions.values()))


def exact_regions(source: MapSource, rect: Rect, layer: int = -1) -> int | None:
    """The merged partitions' regions of ``layer``, summed, when ``rect`` holds the whole
    window (the job's exact count), else None."""
    a0, a1, b0, b1 = source.window
    if source.merged is None or not (rect[0] <= a0 and rect[1] >= a1 and rect[2] <= b0
                                     and rect[3] >= b1):
        return None
    return int(sum(int(r[layer]) for r in source.merged.values()))


def tile_rect(window: Rect, z: int, i: int, j: int) -> Rect:
    """Map tile (i: column, j: row from the bottom) of zoom ``z`` in the window."""
    a0, a1, b0, b1 = window
    n = 2 ** z
    wa, wb = (a1 - a0) / n, (b1 - b0) / n
    return a0 + i * wa, a0 + (i + 1) * wa, b0 + j * wb, b0 + (j + 1) * wb


def _segments(source: MapSource, part: str, layer: int, rect: Rect) -> tuple[np.ndarray,
                                                                                np.ndarray]:
    """The facets of every layer up to ``layer`` and the decision boundary, as (N, 4)
    segments, of the stored tiles that overlap ``rect``."""
    store = source.store
    facets, boundary = [], []
    for t in np.flatnonzero(_overlap(source.tiles, rect) > 0):
        with np.load(store.shard(part, int(t)), allow_pickle=False) as f:
            facets += [f[f"l{k}_facets"] for k in range(layer + 1)]
            boundary.append(f["boundary"])
    empty = np.zeros((0, 4))
    return (np.concatenate(facets) if facets else empty,
            np.concatenate(boundary) if boundary else empty)


def _count(segments: np.ndarray, rect: Rect, px: int) -> np.ndarray:
    """Segments crossing each pixel of a px x px raster of ``rect`` (datashader), rows from
    the top."""
    from bnviz.extras import require

    ds = require("datashader", "the map of a slice job", "map")
    import pandas as pd

    a0, a1, b0, b1 = rect
    canvas = ds.Canvas(plot_width=px, plot_height=px, x_range=(a0, a1), y_range=(b0, b1))
    frame = pd.DataFrame(segments, columns=["x0", "y0", "x1", "y1"])
    agg = canvas.line(frame, x=["x0", "x1"], y=["y0", "y1"], axis=1, agg=ds.count())
    return np.nan_to_num(np.asarray(agg.values, dtype=np.float64))[::-1]


def warm_rasteriser() -> None:
    """Compile datashader's line kernels (numba, about 2 s) before a page waits for them."""
    _count(np.array([[0.0, 0.0, 1.0, 1.0]]), (0.0, 1.0, 0.0, 1.0), 8)


def _shade(facets: np.ndarray, boundary: np.ndarray) -> np.ndarray:
    """RGBA (h, w, 4) uint8 of a view: the facets' counts per pixel in grey on a log scale
    that saturates at the view's 99th percentile (so that a view of millions of regions shows
    where they are dense, not one black square), the decision boundary in red over them,
    transparent where neither is."""
    lit = facets[facets > 0]
    top = max(float(np.percentile(lit, 99)) if lit.size else 1.0, 1.0)
    grey = np.clip(np.log1p(facets) / np.log1p(top), 0, 1)
    alpha_f = np.where(facets > 0, 0.15 + 0.85 * grey, 0)  # one facet stays visible
    alpha_b = (boundary > 0).astype(np.float64)
    alpha = alpha_b + alpha_f * (1 - alpha_b)
    rgb = np.where(alpha[..., None] > 0,
                   (np.multiply.outer(alpha_b, _BOUNDARY_RGB)
                    + np.multiply.outer(alpha_f * (1 - alpha_b), _FACET_RGB))
                   / np.maximum(alpha, 1e-12)[..., None], 0)
    return np.dstack([rgb, 255 * alpha]).round().astype(np.uint8)


def map_tile(source: MapSource, part: str, layer: int, z: int, i: int, j: int) -> np.ndarray:
    """Map tile (z, i, j) of ``part``'s partition up to ``layer``: (2, TILE_PX, TILE_PX)
    float32, the facets and the decision boundary crossing each pixel (rows from the top),
    from the shared disk cache when a process drew it before."""
    from bnviz.service.cache import shared_cache

    cache = shared_cache()
    name = ("slice-map", 2, source.key, part, layer, z, i, j)
    kept = cache.get(name)
    if kept is not None:
        return np.frombuffer(kept, np.float32).reshape(2, TILE_PX, TILE_PX)
    from bnviz.service.admission import admitted

    rect = tile_rect(source.window, z, i, j)
    stored = int((_overlap(source.tiles, rect) > 0).sum())
    with admitted(_TILE_READ_SECONDS * stored * (layer + 1)):  # a heavy one waits its turn
        facets, boundary = _segments(source, part, layer, rect)
        counts = np.stack([_count(facets, rect, TILE_PX),
                           _count(boundary, rect, TILE_PX)]).astype(np.float32)
    cache.set(name, counts.tobytes())
    return counts


def zoom_for(window: Rect, rect: Rect, width_px: int) -> int:
    """The zoom whose tiles have about one pixel per screen pixel across ``rect``, judged by
    its longer side (relative to the window's): a view is at most about width_px / TILE_PX
    + 1 map tiles a side, whatever its shape (a thin view of a crafted request included)."""
    share = max((rect[1] - rect[0]) / (window[1] - window[0]),
                (rect[3] - rect[2]) / (window[3] - window[2]), 1e-300)
    tiles_across = width_px / TILE_PX / share
    return int(min(max(math.ceil(math.log2(max(tiles_across, 1.0))), 0), SLICE_MAP_MAX_ZOOM))


def map_view(source: MapSource, part: str, layer: int, rect: Rect, width_px: int
             ) -> tuple[np.ndarray, Rect, int]:
    """The map of ``rect`` (clipped to the window) for a graph ``width_px`` wide: the RGBA of
    the map tiles that cover it, put together, the rectangle that image spans, and the
    zoom."""
    w = source.window
    rect = (max(rect[0], w[0]), min(rect[1], w[1]), max(rect[2], w[2]), min(rect[3], w[3]))
    if rect[1] <= rect[0] or rect[3] <= rect[2]:
        rect = w
    z = zoom_for(w, rect, width_px)
    n = 2 ** z
    def span(lo: float, hi: float, w0: float, w1: float) -> tuple[int, int]:
        """The first and last tile (of n) that [lo, hi] overlaps (a rounding's width of
        overlap does not count)."""
        first = int(math.floor((lo - w0) / (w1 - w0) * n + 1e-9))
        last = int(math.ceil((hi - w0) / (w1 - w0) * n - 1e-9)) - 1
        return min(max(first, 0), n - 1), min(max(last, first, 0), n - 1)

    i0, i1 = span(rect[0], rect[1], w[0], w[1])
    j0, j1 = span(rect[2], rect[3], w[2], w[3])
    rows = [np.concatenate([map_tile(source, part, layer, z, i, j) for i in range(i0, i1 + 1)],
                           axis=2) for j in range(j1, j0 - 1, -1)]  # top row first
    counts = np.concatenate(rows, axis=1)
    image = _shade(counts[0], counts[1])
    a0, _, b0, _ = tile_rect(w, z, i0, j0)
    _, a1, _, b1 = tile_rect(w, z, i1, j1)
    return image, (a0, a1, b0, b1), z


def png_uri(rgba: np.ndarray) -> str:
    """An RGBA array as a PNG data URI (what a Plotly layout image shows)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="PNG", optimize=False, compress_level=3)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


@memoize()
def _setup(key: str, root: str | None) -> Any:
    """The job's networks, plane, statistics and tolerance scale (as its tiles were cut)."""
    from bnviz.slices.tiled_plan import tiled_setup

    source = open_map(key, root)
    return tiled_setup(source.params, None)


def prepare_recut(key: str, root: str | None = None) -> None:
    """Open the job's networks and statistics now (about a second), so that the first zoom
    that cuts the view again does not wait for them."""
    _setup(key, root)


def recut_view(source: MapSource, rect: Rect, root: str | None = None
               ) -> dict[str, np.ndarray]:
    """``rect`` cut again exactly by the job's own networks (every partition: each network
    with each mini-batch's statistics), as the arrays the page draws a small slice from
    (:func:`bnviz.slices.job.slice_arrays`). ValueError past :data:`RECUT_MAX_REGIONS`."""
    from bnviz.slices.job import slice_arrays

    regions = regions_in_view(source, rect)
    if regions > RECUT_MAX_REGIONS:
        raise ValueError(f"the view holds about {regions:,.0f} regions: zoom in to "
                         f"{RECUT_MAX_REGIONS:,} or fewer to cut it again exactly")
    setup = _setup(source.key, root)
    prepared = setup.prepared
    slices: list[list] = [[] for _ in prepared.nets]
    for part in setup.parts:
        slices[part.arm].append(part.cut.cut(tuple(float(v) for v in rect)))
    return slice_arrays(list(prepared.arms), slices, [None] * len(slices), prepared.plane,
                        prepared.labels, prepared.images.test[list(prepared.through)])


def finished_maps(limit: int = 200) -> list[dict[str, str]]:
    """The finished slice jobs, newest first, as the map lists them: the job's id, its tiles'
    key, and a label (the network, BN's mode, the last layer's regions)."""
    from bnviz.records.results import load_result
    from bnviz.records.store import open_store

    out = []
    for job in open_store().list(limit):
        if job.type != "slice-tiles" or job.status != "succeeded":
            continue
        try:
            key = str(load_result(job.id)["key"])
        except (OSError, KeyError, ValueError):
            continue
        p, summary = job.params, job.summary or {}
        net = p.get("job") or Path(str(p.get("model") or p.get("weights") or "?")).name
        regions = summary.get("regions") or [[0]]
        out.append({"id": job.id, "key": key,
                    "label": f"{net} · BN {p.get('bn', 'eval')} · "
                             f"{regions[0][-1]:,} regions · {job.id[:8]}"})
    return out


def recut_seconds(source: MapSource, rect: Rect) -> float:
    """About how long cutting ``rect`` again takes (the web's admission control): the
    regions in view at 5,000 a second (the cut's rate on one core, bench/slice.py)."""
    return regions_in_view(source, rect) / 5000.0


def prerender(key: str, levels: int = 2) -> int:
    """Rasterise the map tiles of zooms 0 to ``levels`` of every partition's last layer into
    the shared disk cache (what the map tab first shows), at the end of a slice job: the
    first view of a map then reads them instead of every stored tile. Nothing without the
    ``map`` extra; the tiles drawn."""
    from bnviz.extras import MissingExtra

    try:
        warm_rasteriser()
    except MissingExtra:
        return 0
    source = open_map(key)
    drawn = 0
    for part in source.parts:
        for z in range(levels + 1):
            for i in range(2 ** z):
                for j in range(2 ** z):
                    map_tile(source, part, len(source.layers) - 1, z, i, j)
                    drawn += 1
    return drawn
