"""A convolution as one dense matrix: the form :func:`bnviz.slices.graph.linear_part` uses on
small maps (one BLAS product beats conv2d's float64 path there), and the network unrolled to
dense layers that Regioncam is compared on (bench/slice.py).  Works on an op's attributes
(:class:`bnviz.slices.graph.Op`: weight (O, I/groups, kh, kw), stride, dilation, pads (top,
left, bottom, right), groups), so that the graph imports it and not the other way round."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

if TYPE_CHECKING:  # (scipy.sparse is imported where a by-unit matrix is built: 0.16 s of
    from scipy import sparse  # a small slice's start, with numpy.f2py that it pulls in)

__all__ = ["RowBands", "band_rows", "conv_out_shape", "dense_matrix", "row_bands", "unit_matrix"]


def conv_out_shape(attrs: MutableMapping[str, Any], shape: tuple[int, ...]
                   ) -> tuple[int, int, int]:
    """The output shape (O, Ho, Wo) of the convolution on inputs of ``shape`` (C, H, W)."""
    _, h, w = shape
    o, _, kh, kw = attrs["weight"].shape
    t, left, b, r = attrs["pads"]
    (sh, sw), (dh, dw) = attrs["stride"], attrs["dilation"]
    return (o, (h + t + b - dh * (kh - 1) - 1) // sh + 1,
            (w + left + r - dw * (kw - 1) - 1) // sw + 1)


def dense_matrix(attrs: MutableMapping[str, Any], shape: tuple[int, ...]) -> np.ndarray:
    """The convolution on inputs of ``shape`` (C, H, W) as one dense matrix (O * Ho * Wo,
    C * H * W), without its bias, kept in ``attrs["_dense"]`` for the next call.  (The
    convolution applied to every unit image, as before, cost 0.38-0.77 s for a 96-channel 5x5
    conv on 4x4 maps, 6 s of an appendix CNN cut's 10: every cut folds BN into new ops, so
    each makes its matrices afresh.)"""
    cache = attrs.setdefault("_dense", {})
    if shape not in cache:
        o, ho, wo = conv_out_shape(attrs, shape)
        matrix = np.zeros((o, ho, wo, *shape))
        _write_taps(matrix, matrix.strides, attrs, shape, (0, ho), 0)
        cache[shape] = matrix.reshape(o * ho * wo, -1)
    return cache[shape]


@dataclass(frozen=True)
class RowBands:
    """The dense matrix cut by output row: output row i (every channel and column, laid out
    (O, Wo)) reads input rows ``lo[i]``..``hi[i]`` - 1 alone (every channel and column, laid
    out (rows, C, W)), through ``matrices[i]`` ((hi - lo) * C * W, O * Wo)."""

    lo: np.ndarray
    hi: np.ndarray
    matrices: tuple[np.ndarray, ...]


def band_rows(attrs: MutableMapping[str, Any], shape: tuple[int, ...]
              ) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) (Ho,): the input rows each output row reads, padding left out: output row i
    reads rows i sh - top + di dh, di < kh (lo >= hi: padding alone)."""
    _, h, _ = shape
    _, _, kh, _ = attrs["weight"].shape
    (sh, _), (dh, _) = attrs["stride"], attrs["dilation"]
    first = np.arange(conv_out_shape(attrs, shape)[1]) * sh - attrs["pads"][0]
    last = first + (kh - 1) * dh
    lo = first + np.maximum(-(first // dh), 0) * dh  # the first tap on the map (dilated)
    hi = last - np.maximum(-((h - 1 - last) // dh), 0) * dh + 1
    return lo, np.maximum(hi, lo)


def row_bands(attrs: MutableMapping[str, Any], shape: tuple[int, ...]) -> RowBands:
    """The convolution on inputs of ``shape`` by output row (:class:`RowBands`), built from
    its taps (not from the dense matrix, which may be many times larger) and kept in
    ``attrs["_dense"]``.  The same entries as :func:`dense_matrix`, the rows that only
    padding reaches left out."""
    cache = attrs.setdefault("_dense", {})
    key = ("bands", shape)
    if key not in cache:
        c, _, w = shape
        o, ho, wo = conv_out_shape(attrs, shape)
        lo, hi = band_rows(attrs, shape)
        matrices = []
        for i in range(ho):  # band i laid out (input row - lo[i], C, W, O, Wo)
            band = np.zeros((max(hi[i] - lo[i], 0), c, w, o, wo))
            if band.size:
                s_y, s_c, s_x, s_o, s_j = band.strides
                _write_taps(band, (s_o, 0, s_j, s_c, s_y, s_x), attrs, shape, (i, i + 1),
                            int(lo[i]))
            matrices.append(band.reshape(-1, o * wo))
        cache[key] = RowBands(lo, hi, tuple(matrices))
    return cache[key]


def unit_matrix(attrs: MutableMapping[str, Any], shape: tuple[int, ...],
                max_entries: int) -> sparse.csr_matrix | None:
    """The convolution on inputs of ``shape`` as a sparse matrix by input unit (C * H * W,
    O * Ho * Wo), int32 indices: row u is what a one at input unit u adds to the outputs (the
    transpose of :func:`dense_matrix`, its zeros left out), or None past ``max_entries``
    entries.  Not kept: its caller keeps it (:mod:`bnviz.slices.activated_linear`)."""
    o, cg, kh, kw = attrs["weight"].shape
    _, ho, wo = conv_out_shape(attrs, shape)
    if o * cg * kh * kw * ho * wo > max_entries:
        return None
    from scipy import sparse

    c, h, w = shape
    weight = np.asarray(attrs["weight"], np.float64)
    (sh, sw), og = attrs["stride"], o // attrs["groups"]
    blocks = list(_tap_blocks(attrs, shape, (0, ho)))
    sizes = [og * (i1 - i0) * (j1 - j0) * cg for _, _, _, i0, i1, j0, j1, _, _ in blocks]
    # the entries written block by block into their arrays (16 bytes an entry; int32
    # indices, the compiled kernel's types: a unit index past int32 needs maps of 2^31 units,
    # and a slice's tensors hold 2^18 at most, SLICE_MAX_TENSOR_UNITS), then scipy's COO to
    # CSR (12 bytes an entry), a counting sort by input unit: 28 bytes an entry at the peak,
    # where the pieces joined took 80 (a 4M-entry matrix held 320 MB for a moment)
    outputs, inputs = np.empty(sum(sizes), np.int32), np.empty(sum(sizes), np.int32)
    data, at = np.empty(sum(sizes)), 0
    for (g, di, dj, i0, i1, j0, j1, y0, x0), size in zip(blocks, sizes, strict=True):
        block = (og, i1 - i0, j1 - j0, cg)
        oc = np.arange(g * og, (g + 1) * og)[:, None, None, None]
        ii, jj = np.arange(i0, i1)[None, :, None, None], np.arange(j0, j1)[None, None, :, None]
        ic = np.arange(g * cg, (g + 1) * cg)[None, None, None, :]
        outputs[at:at + size].reshape(block)[...] = (oc * ho + ii) * wo + jj
        inputs[at:at + size].reshape(block)[...] = (ic * h + ii * sh + y0) * w + jj * sw + x0
        data[at:at + size].reshape(block)[...] = weight[g * og:(g + 1) * og, None, None, :, di, dj]
        at += size
    matrix = sparse.csr_matrix((data, (inputs, outputs)), shape=(c * h * w, o * ho * wo))
    matrix.sort_indices()  # (each row's outputs in order)
    return matrix


def _write_taps(target: np.ndarray, strides: tuple[int, ...], attrs: MutableMapping[str, Any],
                shape: tuple[int, ...], rows: tuple[int, int], row_shift: int) -> None:
    """Write the convolution's weights into ``target`` (zeros, C-contiguous), whose byte
    ``strides`` for the axes (o, i, j, c, y, x) (output channel, row, column; input channel,
    row, column) say where each entry goes, for the output rows ``rows`` (i0, i1) and the
    input rows counted from ``row_shift``.  A tap (di, dj) of one group lands on a lattice:
    output (o, i, j) reads input (c, i sh - top + di dh, j sw - left + dj dw), so its entries
    over the outputs whose input is on the map are one strided view of ``target``, written at
    once (the entries one at a time, by fancy indexing, took 5x as long: 0.11 s for the
    appendix CNN's matrices, built anew by every cut, against 0.02 s)."""
    weight = np.asarray(attrs["weight"], np.float64)
    o, cg = weight.shape[:2]
    og = o // attrs["groups"]
    sh, sw = attrs["stride"]
    s_o, s_i, s_j, s_c, s_y, s_x = strides
    flat = target.reshape(-1)
    for g, di, dj, i0, i1, j0, j1, y0, x0 in _tap_blocks(attrs, shape, rows):
        start = (g * og * s_o + i0 * s_i + j0 * s_j + g * cg * s_c
                 + (i0 * sh + y0 - row_shift) * s_y + (j0 * sw + x0) * s_x)
        view = as_strided(flat[start // target.itemsize:], (og, i1 - i0, j1 - j0, cg),
                          (s_o, s_i + sh * s_y, s_j + sw * s_x, s_c))
        view[...] = weight[g * og:(g + 1) * og, None, None, :, di, dj]


def _tap_blocks(attrs: MutableMapping[str, Any], shape: tuple[int, ...], rows: tuple[int, int]
                ) -> Iterator[tuple[int, ...]]:
    """Each kernel tap (di, dj) of each group g that reads the map, with the outputs it
    reaches, rows ``rows`` (i0, i1) at most: (g, di, dj, i0, i1, j0, j1, y0, x0), output
    (o, i, j), i0 <= i < i1, j0 <= j < j1, reading input (c, i sh + y0, j sw + x0) (y0 =
    di dh - top, x0 = dj dw - left): on the map there, in the padding elsewhere."""
    _, h, w = shape
    _, _, kh, kw = attrs["weight"].shape
    (sh, sw), (dh, dw) = attrs["stride"], attrs["dilation"]
    top, left = attrs["pads"][0], attrs["pads"][1]
    wo = conv_out_shape(attrs, shape)[2]
    for di in range(kh):
        y0 = di * dh - top
        i0, i1 = max(rows[0], -(y0 // sh)), min(rows[1], (h - 1 - y0) // sh + 1)
        for dj in range(kw):
            x0 = dj * dw - left
            j0, j1 = max(0, -(x0 // sw)), min(wo, (w - 1 - x0) // sw + 1)
            if i1 > i0 and j1 > j0:
                for g in range(attrs["groups"]):
                    yield g, di, dj, i0, i1, j0, j1, y0, x0
