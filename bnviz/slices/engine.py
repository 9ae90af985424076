"""The exact partition of an image network on a plane through image space.

The plane is x(a, b) = origin + a u + b v, (a, b) in a rectangular window.  Inside a region
every tensor of the network is affine in (a, b), so each region carries, for each tensor
still needed, its three coefficient planes (d/da, d/db, offset): shape (3, R, *tensor shape).
The forward order of the network (:class:`bnviz.slices.graph.SliceNet`) is followed:

* an affine op (convolution, BN with fixed statistics, pooling by averages, residual add,
  flatten, linear) maps the coefficient planes of all regions at once, batched on the device
  that :func:`bnviz.device.pick_device` chose (its linear part on all three planes, its bias
  on the offset: :func:`bnviz.slices.graph.linear_part`);
* a ReLU or leaky ReLU cuts every region by the lines of its units, with the compiled cut of
  the 2D views (:func:`bnviz.core.compiled_network.cut_layer`, BN paper eq. 10-11: the same
  kernel, tolerance and refusals), which also hands back each face's activated maps; a
  conv or linear op on them runs by differences from the code common to each region's
  faces (:mod:`bnviz.slices.activated_linear`: faces of one region differ in a few units);
* a max pooling splits every region into the argmax cells of its windows
  (:func:`bnviz.slices.maxcells.max_cells`);
* the logits' argmax cells give the decision boundary.

Every nonlinear layer's regions are kept with their own units' codes (ReLU: h > 0; max
pooling: the argmax of each window, one bit per window position) and the region of the
previous nonlinear layer each lies in, so a region's full code is its ancestors' codes
joined.  No region is dropped by area and nothing is sampled: the tolerance is RTOL of
:mod:`bnviz.core.crossings`, relative to the terms' scale.

Ties are canonical.  A unit an affine op makes zero within RTOL of the terms it summed (its
inputs' scales through the op's linear part taken in absolute value, plus its constant) is
exactly zero on that region: in exact arithmetic it is (a zero-sum kernel on a flat patch,
two equal pixels subtracted), and its float64 rounding, some 1e-17, would otherwise draw a
line of its own through the region, or break a tie of pooled values, by the sign of the
rounding: one region counted as two.  So a ReLU unit that is zero on a region is inactive
(code 0) there, and of pooled values tied on a region the first wins (as torch and ONNX
report the first index of a maximum), in the ReLU codes, the argmax codes and the classes
alike.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from bnviz.core import kernels
from bnviz.core.cut import WORK_PER_REGION, refusal
from bnviz.core.limits import PartitionTooLarge
from bnviz.core.partition import Polygons, join_polygons
from bnviz.device import pick_device
from bnviz.slices.activated_linear import linear_by_differences, plan_cut_matrices
from bnviz.slices.graph import Op, SliceNet, Statistics, bias_of, fold_bn, linear_part
from bnviz.slices.maxcells import SMALL_CUT_REGIONS, max_cells, pool_windows
from bnviz.slices.plane import Plane
from bnviz.slices.slice_mesh import ActivatedRows, SliceMesh, planes_of
from bnviz.slices.ties import TieSnap, largest_scale
from bnviz.slices.vectorised_cut import relu_cut_vectorised

__all__ = ["Slice", "SliceLayer", "cut_polygons", "cut_slice"]

#: Bytes of coefficient planes (3 x regions x live units x 8) past which the regions go on
#: in chunks (:class:`_Cutter`): memory stays bounded, the partition is the same.  Small on
#: purpose: chunks that stay in the caches made the cut 1.8-2.1x faster per core than 768 MB
#: ones, and the peak memory 3x lower (bench/slice.py's profile, issue 45; 2-4 MB: no gain).
CHUNK_BYTES = 8 * 2**20
#: How ReLU layers are cut: None, the vectorised torch cut where the maps are on a GPU or the
#: layer starts from at most ``SMALL_CUT_REGIONS`` regions and makes at most
#: ``SMALL_CUT_OUTPUT`` (a small window never loads numba: bench/slice.py's fixed cost; past
#: that output the compiled kernel cuts the layer again), else the compiled kernel on the
#: CPU; True or False forces one (the tests force True on the CPU).
VECTORISED_RELU_CUT: bool | None = None
#: The most regions a layer's small vectorised cut makes: uncapped, a first layer cut from the
#: window alone into thousands made the residual net's cut 1.9x slower (13,934 against 26,036
#: regions per CPU-second) and 2.4x heavier (25.0 against 10.2 KB of peak memory a region):
#: bench/slice.py section 1.
SMALL_CUT_OUTPUT = 1024


@dataclass(frozen=True)
class SliceLayer:
    """The partition after one nonlinear layer: its regions with this layer's own codes, the
    region of the previous nonlinear layer each lies in, and the facets this layer added."""

    name: str
    kind: str  # "relu" | "maxpool"
    shape: tuple[int, ...]  # the layer's output tensor, per image
    regions: Polygons  # codes: relu D bits (h > 0); maxpool one-hot argmax, window by window
    parents: np.ndarray  # (R,) region of the previous nonlinear layer (0: the window)
    facets: np.ndarray  # (S, 4)
    facet_units: np.ndarray  # (S,) relu: the unit; maxpool: the window (output element)
    facet_parents: np.ndarray  # (S,) region of the previous layer the facet lies in
    window_size: int = 1  # maxpool: positions per window (bits per output element)


@dataclass(frozen=True)
class Slice:
    plane: Plane
    window: tuple[float, float, float, float]  # a0, a1, b0, b1
    layers: list[SliceLayer]
    decision_boundary: np.ndarray  # (S, 4)
    predicted: Polygons  # the last layer's regions split by the logits' argmax
    predicted_class: np.ndarray  # (P,) class of each of them
    seconds: float
    device: str
    predicted_parents: np.ndarray | None = None  # (P,) the last layer's region of each cell
    boundary_parents: np.ndarray | None = None  # (S,) that of each boundary segment

    @property
    def counts(self) -> list[int]:
        return [len(layer.regions) for layer in self.layers]


class _Cutter:
    """Runs the ops from a given index on a mesh, depth first: a mesh whose maps outgrow
    :data:`CHUNK_BYTES` goes on in chunks of regions, one after the other, so memory stays
    bounded whatever the region count; each layer's pieces are kept in the order made."""

    def __init__(self, net: SliceNet, stats: Statistics | None, bx: float, by: float,
                 max_regions: int, progress: Callable[[float], None] | None = None):
        self.net, self.stats, self.bx, self.by = net, stats, bx, by
        self.progress, self.done = progress, 0.0
        self.max_regions = max_regions
        self.last_use = {name: i for i, op in enumerate(net.ops) for name in op.inputs}
        self.pieces: list[list[SliceLayer]] = [[] for _ in net.nonlinear]
        self.counts = [0] * len(self.pieces)
        self.decision: list[tuple] = []  # cells, classes, boundary, the cells' and its regions
        self.ties = TieSnap(stats, bx, by)

    def run(self, mesh: SliceMesh, start: int, layer_index: int) -> None:
        ops = self.net.ops
        for i in range(start, len(ops)):
            op = ops[i]
            if self.progress is not None and i / len(ops) > self.done:
                self.done = i / len(ops)  # (the first chunk's depth: monotone)
                self.progress(self.done)
            xs = [mesh.maps[name] for name in op.inputs]
            r = mesh.n
            layer = None
            if op.kind in ("relu", "maxpool"):
                cut = _relu_cut if op.kind == "relu" else _maxpool_cut
                room = self.max_regions - self.counts[layer_index]
                # a piece's output units are its region's inputs, or slope times them: the
                # input's bound on the region bounds them (for the next op's snap)
                gain = max(1.0, abs(float(op.attrs["slope"]))) if op.kind == "relu" else 1.0
                bound = self.bound(mesh, op.inputs[0]) * gain
                out, layer = cut(op, xs[0], mesh, self.bx, self.by, room)
            else:
                src = mesh.activated.get(op.inputs[0])
                out = linear_by_differences(op, src[0], src[1], src[1] + r, self.stats) \
                    if src is not None else None
                if out is None:
                    y = linear_part(op, [x.reshape(3 * r, *x.shape[2:]) for x in xs],
                                    self.stats)
                    out = y.reshape(3, r, *y.shape[1:])
                if op.kind == "flatten" and src is not None:
                    mesh.activated[op.output] = src
                bias = bias_of(op, tuple(out.shape[2:]), self.stats)
                if bias is not None:
                    out[2] += torch.as_tensor(bias, dtype=out.dtype, device=out.device)
                if op.kind != "flatten":
                    self.ties.snap(op, xs, [self.bound(mesh, name) for name in op.inputs],
                                   out, bias)
            for name in op.inputs:
                if self.last_use[name] == i:
                    del mesh.maps[name]
                    mesh.bounds.pop(name, None)
                    mesh.activated.pop(name, None)
            if layer is not None:
                base = self.counts[layer_index]
                self.pieces[layer_index].append(_shifted(layer, mesh.base))
                self.counts[layer_index] += len(layer.parents)
                mesh.base, layer_index = base, layer_index + 1
                if self._cut_into_chunks(mesh, layer.parents, out, op.output, bound, i,
                                         layer_index):
                    return
                continue
            mesh.maps[op.output] = out
            if mesh.nbytes() > CHUNK_BYTES and mesh.n > 1 and i + 1 < len(ops):
                step = max(1, int(mesh.n * CHUNK_BYTES / (2 * mesh.nbytes())))
                for s in range(0, mesh.n, step):
                    self.run(mesh.chunk(s, min(s + step, mesh.n)), i + 1, layer_index)
                return
        cells, cls, seg, parent, seg_parent = _decision(
            mesh, mesh.maps[self.net.output], self.bx, self.by, self.max_regions)
        self.decision.append((cells, cls, seg, parent + mesh.base, seg_parent + mesh.base))

    def _cut_into_chunks(self, mesh: SliceMesh, parents: np.ndarray,
                         out: torch.Tensor | ActivatedRows, name: str, bound: torch.Tensor,
                         i: int, layer_index: int) -> bool:
        """After a cut: each region's maps are its parent's, and ``name``'s are ``out``'s rows.
        Past :data:`CHUNK_BYTES` the ops after ``i`` run on chunks of regions (True), each
        chunk's maps made for it alone: whole, a cut of a conv chain's first layer wrote 1.4 GB
        of fresh memory (over half of that compiled cut) that its chunks then read 8 MB at a
        time.  Else the mesh holds them all (False)."""
        parent = torch.as_tensor(parents, device=bound.device)
        rows = out if isinstance(out, ActivatedRows) else (lambda s, e: out[:, s:e])
        maps, bounds = mesh.maps, {**mesh.bounds, name: bound}
        per = sum(3 * math.prod(v.shape[2:]) for v in [*maps.values(), out])
        n, nbytes = len(parents), 8 * len(parents) * per
        if nbytes > CHUNK_BYTES and n > 1 and i + 1 < len(self.net.ops):
            mesh.maps, mesh.bounds = {}, {}
            step = max(1, int(n * CHUNK_BYTES / (2 * nbytes)))
            for s in range(0, n, step):
                e, sub = min(s + step, n), mesh.chunk(s, min(s + step, n))
                sub.maps = {k: v[:, parent[s:e]] for k, v in maps.items()} | {name: rows(s, e)}
                sub.bounds = {k: v[parent[s:e]] for k, v in bounds.items()}
                sub.activated = {name: (out, s)} if isinstance(out, ActivatedRows) else {}
                self.run(sub, i + 1, layer_index)
            return True
        mesh.maps = {k: v[:, parent] for k, v in maps.items()} | {name: rows(0, n)}
        mesh.bounds = {k: v[parent] for k, v in bounds.items()}
        mesh.activated = {name: (out, 0)} if isinstance(out, ActivatedRows) else {}
        return False

    def layers(self) -> list[SliceLayer]:
        return [_joined(p) for p in self.pieces]

    def bound(self, mesh: SliceMesh, name: str) -> torch.Tensor:
        """(R,): a bound of the largest unit scale of tensor ``name``'s maps on each region:
        kept for a cut's output (its input's, on the parent region: cheaper by the regions a
        cut makes), else computed (:func:`bnviz.slices.ties.largest_scale`)."""
        kept = mesh.bounds.get(name)
        return kept if kept is not None else largest_scale(mesh.maps[name], self.bx, self.by)


def _shifted(layer: SliceLayer, base: int) -> SliceLayer:
    """A layer piece with its parents counted among all the previous layer's regions."""
    return replace(layer, parents=layer.parents + base,
                   facet_parents=layer.facet_parents + base)


def _joined(pieces: list[SliceLayer]) -> SliceLayer:
    """One layer from the pieces its chunks made, each distinct code kept once (a layer's
    codes are its own units', and the regions it inherits share them: the appendix CNN's
    kept codes, 1 172 bytes a region row by row, 12 shared; once a layer, not a chunk:
    1 574 calls cost a ResNet9 cut 0.15 s, 12 calls 0.02 s)."""
    first = pieces[0]
    regions = join_polygons([p.regions for p in pieces]).with_shared_codes()
    if len(pieces) == 1:
        return replace(first, regions=regions)
    return replace(first, regions=regions,
                   parents=np.concatenate([p.parents for p in pieces]),
                   facets=np.concatenate([p.facets for p in pieces]),
                   facet_units=np.concatenate([p.facet_units for p in pieces]),
                   facet_parents=np.concatenate([p.facet_parents for p in pieces]))


def cut_polygons(net: SliceNet, plane: Plane, ptr: np.ndarray, verts: np.ndarray,
                 scale: tuple[float, float], stats: Statistics | None = None,
                 device: torch.device | str | None = None, max_regions: int = 2_000_000,
                 progress: Callable[[float], None] | None = None
                 ) -> tuple[list[SliceLayer], list[tuple]]:
    """The exact cut of several convex polygons of ``plane`` at once (CSR: ``ptr``, ``verts``,
    each counter-clockwise), with the tolerance scale ``scale`` (bx, by): every nonlinear
    layer's regions (a region's polygon of the start is found by following the parents) and
    the decision cells' parts, (cells, classes, boundary, each cell's and segment's region).
    :func:`cut_slice` starts from its window; the region estimate
    (:mod:`bnviz.slices.cost`) from its sample of small rectangles, in one pass."""
    dev = torch.device(device) if device is not None else pick_device()
    mesh = SliceMesh(ptr, verts)
    basis = torch.as_tensor(np.stack([plane.u, plane.v, plane.origin]).astype(np.float64),
                            device=dev)
    mesh.maps[net.input] = basis[:, None].repeat(1, mesh.n, *[1] * (basis.ndim - 1))
    # BN after a convolution is folded into it; any other BN (after a ReLU, an add, ...)
    # still normalises with ``stats`` in train mode
    folded = fold_bn(net, stats)
    plan_cut_matrices(folded, dev.type == "cpu")  # (one budget: bnviz.caps)
    cutter = _Cutter(folded, stats, scale[0], scale[1], max_regions, progress)
    cutter.run(mesh, 0, 0)
    return cutter.layers(), cutter.decision


def cut_slice(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
              stats: Statistics | None = None, device: torch.device | str | None = None,
              max_regions: int = 2_000_000,
              progress: Callable[[float], None] | None = None,
              scale: tuple[float, float] | None = None) -> Slice:
    """The exact partition of ``window`` on ``plane`` after every nonlinear layer of ``net``,
    BN with the running statistics or the mini-batch statistics ``stats``
    (:func:`bnviz.slices.graph.batch_statistics`), and the decision boundary.

    Raises :class:`PartitionTooLarge` (one line naming the layer) when a layer would exceed
    ``max_regions`` regions.  ``progress(fraction)`` hears how far the cut is (by ops; it
    may raise to stop the cut: a job's cancel).  ``scale``: the tolerance's (bx, by), by
    default the window's largest |a| and |b| (a tile of a larger window passes the whole
    window's: :mod:`bnviz.slices.tiles`)."""
    t0 = time.perf_counter()
    dev = torch.device(device) if device is not None else pick_device()
    a0, a1, b0, b1 = (float(v) for v in window)
    if not (a0 < a1 and b0 < b1) or not all(map(math.isfinite, (a0, a1, b0, b1))):
        raise ValueError(f"the window must have a0 < a1 and b0 < b1, got {window}")
    bx, by = scale if scale is not None else (max(abs(a0), abs(a1)), max(abs(b0), abs(b1)))
    layers, parts = cut_polygons(
        net, plane, np.array([0, 4], np.int64),
        np.array([[a0, b0], [a1, b0], [a1, b1], [a0, b1]], np.float64), (bx, by), stats, dev,
        max_regions, progress)
    predicted = join_polygons([p[0] for p in parts])
    classes = np.concatenate([p[1] for p in parts])
    boundary = np.concatenate([p[2] for p in parts])
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return Slice(plane, (a0, a1, b0, b1), layers, boundary, predicted, classes,
                 time.perf_counter() - t0, str(dev), np.concatenate([p[3] for p in parts]),
                 np.concatenate([p[4] for p in parts]))


def _relu_cut(op: Op, x: torch.Tensor, mesh: SliceMesh, bx: float, by: float,
              max_regions: int) -> tuple[torch.Tensor, SliceLayer]:
    """Every region cut by the lines h_k = 0 of the layer's units (the 2D views' compiled
    cut, or on a GPU and for a few regions their vectorised cut in torch:
    :data:`VECTORISED_RELU_CUT`); the faces' activated maps come back from the cut.  A few
    regions refused by the vectorised cut's work bound go to the compiled cut, whose refusal
    counts the layer's regions."""
    r, shape = mesh.n, tuple(x.shape[2:])
    slope, d = float(op.attrs["slope"]), math.prod(shape)
    small = VECTORISED_RELU_CUT is None and x.device.type != "cuda" and r <= SMALL_CUT_REGIONS
    vectorised = VECTORISED_RELU_CUT or (VECTORISED_RELU_CUT is None and (
        x.device.type == "cuda" or small))
    if vectorised:
        try:
            ptr, verts, out, packed, parent, facets, units, fparents = relu_cut_vectorised(
                x, mesh.ptr, mesh.verts, bx, by, slope,
                min(max_regions, SMALL_CUT_OUTPUT) if small else max_regions)
        except PartitionTooLarge as exc:
            if not small:
                words = str(exc).split(": lower")[0]
                raise PartitionTooLarge(f"{op.name}: {words}: use a smaller window") from None
            vectorised = False  # more than a small output: the compiled cut (and its refusal)
    if not vectorised:
        planes = planes_of(x, r)
        status, count, ptr, verts, aff, packed, parent, facets, units, fparents = \
            kernels.require().cut_layer(
                mesh.ptr, mesh.verts, planes, np.empty((d, 0)), planes, np.zeros((1, d)),
                np.ones((1, d)), np.arange(r, dtype=np.int64), np.zeros((r, 0), np.uint8), 0,
                bx, by, slope, int(max_regions), int(WORK_PER_REGION * max_regions), False)
        if status:
            words = str(refusal(status, count, max_regions)).split(": lower")[0]
            raise PartitionTooLarge(f"{op.name}: {words}: use a smaller window")
        out = ActivatedRows(planes, parent, packed, slope, shape, x.device)
    mesh.ptr, mesh.verts = ptr, verts
    regions = Polygons(ptr, verts, packed, d)
    layer = SliceLayer(op.name, "relu", shape, regions, parent, facets, units, fparents)
    if isinstance(out, ActivatedRows):
        return out, layer
    return out.reshape(3, len(parent), *shape), layer


def _maxpool_cut(op: Op, x: torch.Tensor, mesh: SliceMesh, bx: float, by: float,
                 max_regions: int) -> tuple[torch.Tensor, SliceLayer]:
    """Every region split into the argmax cells of the pooling windows; the output's maps are
    the winning inputs' maps."""
    r, shape = mesh.n, tuple(x.shape[2:])
    windows, out_shape = pool_windows(op, shape)
    planes = planes_of(x, r)
    status, ptr, verts, parent, arg, seg, seg_win, seg_poly = max_cells(
        mesh.ptr, mesh.verts, planes, windows, bx, by, int(max_regions))
    if status:
        raise PartitionTooLarge(f"{op.name}: this layer would have more than {max_regions} "
                                "regions: use a smaller window")
    mesh.ptr, mesh.verts = ptr, verts
    n_win, k = windows.shape
    n, a = len(parent), arg.astype(np.int64).reshape(len(parent), n_win)
    # flat indices, one gather each (take/put_along_axis and torch's two-index gather cost
    # 1.4-1.7x as much: 0.28 s of a 6.3 s ResNet9 cut)
    winner = windows.ravel()[np.arange(n_win) * k + a]  # (n, n_win): each output's input
    at = (parent.astype(np.int64)[:, None] * math.prod(shape) + winner).reshape(-1)
    out = torch.from_numpy(np.take(x.reshape(3, -1).numpy(), at, axis=1)) \
        if x.device.type == "cpu" else x.reshape(3, -1)[:, torch.as_tensor(at, device=x.device)]
    bits = np.zeros(n * n_win * k, bool)
    bits[np.arange(n * n_win) * k + a.ravel()] = True  # one-hot argmax, window by window
    packed = np.packbits(bits.reshape(n, n_win * k), axis=1)
    regions = Polygons(ptr, verts, packed, n_win * k)
    layer = SliceLayer(op.name, "maxpool", out_shape, regions,
                       parent, seg, seg_win, seg_poly, k)
    return out.reshape(3, len(parent), *out_shape), layer


def _decision(mesh: SliceMesh, logits: torch.Tensor, bx: float, by: float, max_regions: int
              ) -> tuple[Polygons, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The last regions split by the logits' argmax: (the cells, their classes, the decision
    boundary's segments, the region of each cell and of each segment).  One logit: the
    boundary is where it changes sign (against 0)."""
    r = mesh.n
    planes = planes_of(logits, r)
    if planes.shape[2] == 1:
        planes = np.ascontiguousarray(np.concatenate([np.zeros_like(planes), planes], 2))
    classes = planes.shape[2]
    status, ptr, verts, parent, arg, seg, _win, seg_parent = max_cells(
        mesh.ptr, mesh.verts, planes, np.arange(classes, dtype=np.int64)[None], bx, by,
        int(max_regions))
    if status:
        raise PartitionTooLarge(f"the decision cells would be more than {max_regions}: "
                                "use a smaller window")
    cls = arg[:, 0].astype(np.int64)
    return (Polygons(ptr, verts, np.zeros((len(cls), 0), np.uint8), 0), cls, seg, parent,
            seg_parent)
