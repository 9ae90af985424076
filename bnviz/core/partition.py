"""The exact input-space partition of a 2D network, layer by layer (BN paper eq. 10-11): what
a partition is (:class:`Polygons`, :class:`LayerPartition`, :class:`Partition`) and the driver
that cuts the input box layer after layer.

Each layer's cut is made by one of two engines, chosen in one place
(:func:`bnviz.core.cut.compiled_kernels`), and both give the same partition, region for region
(tests/engine_cases.py):

* the compiled kernels (numba: :mod:`bnviz.core.compiled_network`, :mod:`bnviz.core.clipping`),
  the default wherever numpy holds the mesh (the CPU at every size, measured faster from 8x2 to
  128x6; a GPU while the mesh is small) once the process has them loaded
  (:mod:`bnviz.core.kernels`: a server and a job's process load them in the background); a
  network's first, small layers are cut in one compiled call;
* the vectorised cut (:func:`bnviz.core.crossings.find_cuts` finds the lines that cross each
  polygon and their chords, the facets; :func:`bnviz.core.cut.layer_step` builds the faces of
  Omega_{1|l}), vectorised over every region and unit at once, on numpy or torch
  (:mod:`bnviz.core.arrays`): what a one-shot command runs (it never imports numba), what a
  server runs until its kernels are loaded, what a big mesh on a GPU runs on torch, and what
  :func:`decision_boundaries` runs for K realisations at once.

The partition Omega_{1|l-1} is kept as convex polygons with each polygon's exact affine map
(:class:`bnviz.core.mesh.Mesh`).  The tolerances are documented in :mod:`bnviz.core.crossings`
(on the line: RTOL = 1e-10 of the terms' scale; no region is ever dropped by an area
threshold).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from bnviz.core import cut
from bnviz.core.arrays import device_type, ops_for
from bnviz.core.crossings import find_cuts
from bnviz.core.cut import (
    WORK_PER_REGION,
    compiled_kernels,
    compiled_max_work,
    layer_step,
    refusal,
)
from bnviz.core.limits import MAX_EXTENT, MAX_REGIONS, PartitionTooLarge
from bnviz.core.mesh import Mesh, box_mesh
from bnviz.core.network import BNOverrides, LayerStatistics, Network, layer_statistics
from bnviz.core.rows import shared_code_rows
from bnviz.device import device_name

__all__ = [
    "LayerPartition",
    "Partition",
    "Polygons",
    "box_from_extent",
    "compute_partition",
    "decision_boundaries",
    "join_polygons",
]


def box_from_extent(extent: float) -> tuple[float, float, float, float]:
    """The input box [-E, E]^2 as (xmin, xmax, ymin, ymax)."""
    e = float(extent)
    if not (math.isfinite(e) and 0 < e <= MAX_EXTENT):
        raise ValueError(f"extent must be a number in (0, {MAX_EXTENT:g}], got {extent}")
    return (-e, e, -e, e)


@dataclass(frozen=True)
class Polygons:
    """Convex polygons in CSR layout, counter-clockwise, with their activation codes.

    ``codes[i]`` holds the activation pattern (True: h > 0) of every unit of layers 1..l,
    layer by layer, constant inside polygon i.  They are kept packed, 8 units a byte
    (``packed_codes``): a partition keeps every layer's regions, and unpacked codes of 12
    layers of 48 units at the explorer's region cap took 220 MB of one request's memory.

    A slice's layer keeps each distinct code once (``code_index``: the row of ``code_rows``
    of each polygon, :func:`shared_code_rows`): its codes are its own units' only, and the
    regions it inherits from the earlier layers share a few dozen to a few hundred of them
    (the appendix CNN's 22 511 regions: at most 215 distinct codes a layer, its codes'
    1 172 bytes a region kept row by row).
    """

    ptr: np.ndarray  # (R + 1,) int64
    vertices: np.ndarray  # (V, 2) float64
    code_rows: np.ndarray  # (R or K, ceil(U / 8)) uint8, np.packbits of codes along units
    n_units: int  # U
    code_index: np.ndarray | None = None  # (R,) unsigned: the row of code_rows of each

    @property
    def packed_codes(self) -> np.ndarray:
        """(R, ceil(U / 8)) uint8: each polygon's packed code (a new array when shared)."""
        return self.code_rows if self.code_index is None else self.code_rows[self.code_index]

    @property
    def codes(self) -> np.ndarray:
        """(R, U) bool activation patterns (unpacked on each access)."""
        bits = np.unpackbits(self.code_rows, axis=1, count=self.n_units).astype(bool)
        return bits if self.code_index is None else bits[self.code_index]

    def with_shared_codes(self) -> Polygons:
        """The same polygons keeping each distinct code once."""
        rows, index = shared_code_rows(self.packed_codes)
        return Polygons(self.ptr, self.vertices, rows, self.n_units, index)

    def __len__(self) -> int:
        return len(self.ptr) - 1

    def polygon(self, i: int) -> np.ndarray:
        return self.vertices[self.ptr[i] : self.ptr[i + 1]]

    def areas(self) -> np.ndarray:
        """Shoelace areas, vectorised over all polygons."""
        v = self.vertices
        counts = np.diff(self.ptr)
        nxt = np.arange(len(v)) + 1
        nxt[self.ptr[1:] - 1] = self.ptr[:-1]
        cross = v[:, 0] * v[nxt, 1] - v[nxt, 0] * v[:, 1]
        poly = np.repeat(np.arange(len(counts)), counts)
        return 0.5 * np.bincount(poly, weights=cross, minlength=len(counts))

    def vertex_means(self) -> np.ndarray:
        """A point strictly inside each polygon (the mean of its corners)."""
        counts = np.diff(self.ptr)
        poly = np.repeat(np.arange(len(counts)), counts)
        sums = np.stack([np.bincount(poly, weights=self.vertices[:, d], minlength=len(counts))
                         for d in (0, 1)], axis=1)
        return sums / counts[:, None]

    def code_strings(self, widths: tuple[int, ...]) -> list[str]:
        """Codes as '0110|10..' strings, one group per layer l' <= l, built as one byte
        array: the bits as ASCII digits with a '|' column between layers, each row one
        fixed-width string (the 144 k regions of a 128x4 net's 4 layers: 0.24 s; joining
        characters region by region took 6 s under cProfile)."""
        layers = [w for w in np.cumsum(widths) if w <= self.n_units]
        bits = np.unpackbits(self.code_rows, axis=1, count=self.n_units) + np.uint8(48)
        text = np.insert(bits, layers[:-1], np.uint8(ord("|")), axis=1) if len(layers) > 1 \
            else bits
        if self.code_index is not None:
            text = text[self.code_index]
        if len(text) == 0 or text.shape[1] == 0:
            return [""] * len(text)
        width = text.shape[1]
        return np.frombuffer(np.ascontiguousarray(text).tobytes(), dtype=f"S{width}") \
            .astype(f"U{width}").tolist()


def join_polygons(parts: list[Polygons]) -> Polygons:
    """The polygons of ``parts`` as one CSR list, part after part; shared codes stay
    shared (one table of the parts' distinct codes)."""
    starts = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    ptr = np.concatenate([np.zeros(1, np.int64)] + [p.ptr[1:] + s for p, s in
                                                     zip(parts, starts, strict=True)])
    ptr = ptr.astype(np.int64, copy=False)
    vertices = np.concatenate([p.vertices for p in parts])
    if all(p.code_index is None for p in parts):
        return Polygons(ptr, vertices,
                        np.concatenate([p.code_rows for p in parts]), parts[0].n_units)
    tables = [p.code_rows if p.code_index is not None else p.packed_codes for p in parts]
    offsets = np.cumsum([0] + [len(t) for t in tables[:-1]])
    index = np.concatenate([(p.code_index if p.code_index is not None else
                             np.arange(len(p))).astype(np.int64) + o
                            for p, o in zip(parts, offsets, strict=True)])
    rows, row_of = shared_code_rows(np.concatenate(tables))
    return Polygons(ptr, vertices, rows, parts[0].n_units,
                    row_of[index].astype(row_of.dtype))


@dataclass(frozen=True)
class LayerPartition:
    """Omega_{1|l} and the facets that layer l added to its boundary (eq. 11)."""

    layer: int
    regions: Polygons
    facets: np.ndarray  # (S, 4): x0, y0, x1, y1
    facet_units: np.ndarray  # (S,) unit k (0-based) of layer l
    facet_parents: np.ndarray  # (S,) index of the region of Omega_{1|l-1} the facet lies in
    stats: LayerStatistics


@dataclass(frozen=True)
class Partition:
    box: tuple[float, float, float, float]
    widths: tuple[int, ...]
    layers: list[LayerPartition]
    decision_boundary: np.ndarray | None  # (S, 4) segments, when the network has a head
    seconds: float
    device: str

    @property
    def regions(self) -> Polygons:
        """The full partition Omega_{1|L}."""
        return self.layers[-1].regions



def _polygons(mesh: Mesh) -> Polygons:
    """The mesh's polygons and codes as numpy (codes packed 8 units a byte)."""
    ops = mesh.ops
    return Polygons(ops.numpy(mesh.ptr), ops.numpy(mesh.verts), mesh.packed_codes,
                    mesh.n_units)


def _head_cuts(mesh: Mesh, net: Network, box) -> tuple[Any, Any]:
    """The head's decision boundary {w . z_L + b = 0} in every polygon: (segments (S, 4), the
    polygon of each segment), in the mesh's array library."""
    ops = mesh.ops
    wd, bd = net.head.decision_function()
    planes = mesh.aff @ ops.asarray(wd, ops.float64)  # (3, R)
    planes[2] += bd
    engine = compiled_kernels(ops, mesh.n_regions)
    if engine is not None:  # the compiled chords (bnviz.core.clipping.chords), as find_cuts
        _, pair_ptr, _, _, chords = engine.chords(
            mesh.ptr, mesh.verts, np.ascontiguousarray(planes[:, :, None]),
            max(abs(box[0]), abs(box[1])), max(abs(box[2]), abs(box[3])))
        return chords, np.repeat(np.arange(len(pair_ptr) - 1), np.diff(pair_ptr))
    cuts = find_cuts(mesh, planes[:, :, None], box)
    return ops.cat([cuts.chord_a, cuts.chord_b], 1), cuts.pair_poly


def _step(mesh: Mesh, dev: Any, w: np.ndarray, mu: Any, sigma: Any, slope: float,
          box: tuple[float, float, float, float], max_regions: int, layer: int,
          compiled: bool = True) -> tuple[Mesh, Any, Any, Any]:
    """One layer's cut, in the array library that suits the mesh's size on ``dev``
    (:func:`bnviz.core.arrays.ops_for`), with the region cap checked after it."""
    ops = ops_for(dev, mesh.n_regions * w.shape[0])
    mesh = mesh.to(ops)
    try:
        out = layer_step(mesh, ops.asarray(w), ops.asarray(mu, ops.float64),
                         ops.asarray(sigma, ops.float64), slope, box, max_regions, compiled)
    except PartitionTooLarge as exc:
        raise PartitionTooLarge(f"layer {layer}: {exc}") from None
    if out[0].n_regions > max_regions:  # R + M was below the cap, the faces are not
        raise PartitionTooLarge(
            f"layer {layer} has {out[0].n_regions} regions, over the cap of {max_regions}: "
            "lower the width, the depth or the box")
    return out


def _compiled_layers(engine: Any, net: Network, stats: list[LayerStatistics],
                     box: tuple[float, float, float, float], dev: Any,
                     max_regions: int) -> tuple[list[LayerPartition], Mesh | None]:
    """The first layers whose meshes are small (:func:`bnviz.core.cut.layer_step` would cut
    each with the compiled kernels) in one compiled call
    (:func:`bnviz.core.compiled_network.cut_network`): their LayerPartitions and the mesh to
    go on from (None when no layer was that small)."""
    (status, count, done, offsets, ptr_cat, verts_cat, packed_cat, facets_cat, units_cat,
     parents_cat, aff, group) = engine.cut_network(
        *box, np.concatenate([w.ravel() for w in net.weights]),
        np.array(net.widths, np.int64), np.concatenate([st.mu for st in stats]),
        np.concatenate([st.sigma for st in stats]), float(net.negative_slope),
        int(max_regions), int(WORK_PER_REGION * max_regions),
        compiled_max_work(dev),
        int(min(cut.COMPILED_MAX_GEMM, 1 << 62)))
    if status:
        raise PartitionTooLarge(
            f"layer {stats[done].layer}: {refusal(status, count, max_regions)}")
    (p0, v0, c0, f0), layers, n_units = offsets[:, :done + 1].tolist(), [], 0
    for i, d in enumerate(net.widths[:done]):
        n_units += d
        facets = slice(f0[i], f0[i + 1])
        regions = Polygons(ptr_cat[p0[i] : p0[i + 1]], verts_cat[v0[i] : v0[i + 1]],
                           packed_cat[c0[i] : c0[i + 1]].reshape(-1, (n_units + 7) // 8),
                           n_units)
        layers.append(LayerPartition(stats[i].layer, regions, facets_cat[facets],
                                     units_cat[facets], parents_cat[facets], stats[i]))
    if not done:
        return layers, None
    last = layers[-1].regions
    return layers, Mesh(last.ptr, last.vertices, aff, None, group, last.packed_codes, n_units)


def compute_partition(
    net: Network,
    batch: np.ndarray,
    box: tuple[float, float, float, float] = (-3.0, 3.0, -3.0, 3.0),
    overrides: BNOverrides | None = None,
    device: Any = None,
    stats: list[LayerStatistics] | None = None,
    max_regions: int = MAX_REGIONS,
) -> Partition:
    """Exact partition Omega_{1|l} of ``box`` for every layer l, with facets and statistics.

    ``batch`` is the explicit batch whose statistics define mu and sigma
    (docs/conventions.md).  Raises
    :class:`PartitionTooLarge` when a layer's partition exceeds ``max_regions`` regions.
    Small meshes are cut with numpy whatever the device (:mod:`bnviz.core.arrays`).
    """
    t0 = time.perf_counter()
    dev = device if device is not None else device_name()
    x0, x1, y0, y1 = float(box[0]), float(box[1]), float(box[2]), float(box[3])
    if not (-MAX_EXTENT <= x0 < x1 <= MAX_EXTENT and -MAX_EXTENT <= y0 < y1 <= MAX_EXTENT):
        raise ValueError(f"the box must lie within +/-{MAX_EXTENT:g} with xmin < xmax and "
                         f"ymin < ymax, got {box}")
    box = (x0, x1, y0, y1)
    if stats is None:
        stats = layer_statistics(net, batch, overrides)
    slope = net.negative_slope
    layers, mesh = [], None
    engine = compiled_kernels(ops_for(dev, 0), 0)
    if engine is not None:  # the first, small layers: one compiled call
        layers, mesh = _compiled_layers(engine, net, stats, box, dev, max_regions)
    if len(layers) == len(stats) and net.head is None:  # all cut by the compiled call
        return Partition(box, net.widths, layers, None, time.perf_counter() - t0, str(dev))
    if mesh is None:
        mesh = box_mesh(box, ops=ops_for(dev, 0))
    for w, st in zip(net.weights[len(layers):], stats[len(layers):], strict=True):
        mesh, facets, units, parents = _step(mesh, dev, w, st.mu[None], st.sigma[None], slope,
                                             box, max_regions, st.layer)
        ops = mesh.ops
        layers.append(LayerPartition(st.layer, _polygons(mesh), ops.numpy(facets),
                                     ops.numpy(units), ops.numpy(parents), st))
    boundary = None
    if net.head is not None:
        boundary = mesh.ops.numpy(_head_cuts(mesh, net, box)[0])
    if device_type(dev) == "cuda":
        import torch

        torch.cuda.synchronize(dev)
    return Partition(box, net.widths, layers, boundary, time.perf_counter() - t0, str(dev))


def decision_boundaries(net: Network, mu: Any,
                        sigma: Any,
                        box: tuple[float, float, float, float] = (-3.0, 3.0, -3.0, 3.0),
                        device: Any = None,
                        max_regions: int = MAX_REGIONS) -> list[np.ndarray]:
    """The exact decision boundary of the head for K realisations of the BN statistics.

    ``mu[k][l]`` and ``sigma[k][l]`` (one (D_l,) vector per layer, or arrays of shape
    (K, L, D) for equal widths) are realisation k's statistics of layer l.  All K partitions
    are cut in one batched pass (polygons carry their realisation), not a loop over K.
    Returns K arrays of segments (S_k, 4).  ``max_regions`` caps the regions of all K together.
    """
    if net.head is None:
        raise ValueError("decision boundaries need a network with a classifier head")
    dev = device if device is not None else device_name()
    box = tuple(float(v) for v in box)
    k = len(mu)
    mesh = box_mesh(box, groups=k, ops=ops_for(dev, k))
    for layer, w in enumerate(net.weights):
        d = w.shape[0]  # statistics may be padded to the widest layer
        ops = ops_for(dev, mesh.n_regions * d)
        m = ops.stack([ops.asarray(mu[i][layer], ops.float64)[:d] for i in range(k)])
        s = ops.stack([ops.asarray(sigma[i][layer], ops.float64)[:d] for i in range(k)])
        mesh, *_ = _step(mesh, dev, w, m, s, net.negative_slope, box, max_regions, layer + 1,
                         compiled=False)  # the vectorised cut's caps on K realisations
    ops = mesh.ops
    segments, poly = _head_cuts(mesh, net, box)
    group = mesh.group[poly]
    order = ops.argsort(group)
    counts = ops.bincount(group, k).tolist()
    ends = np.cumsum(counts)
    sorted_segments = ops.numpy(segments[order])
    return [sorted_segments[e - c : e] for e, c in zip(ends, counts, strict=True)]
