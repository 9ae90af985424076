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
        matrix = np.zeros((o * ho * wo, int(np.prod(shape))))
        for rows, cols, taps in _taps(attrs, shape):  # memory of one output's size a tap
            matrix[rows, cols] = taps
        cache[shape] = matrix
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
        sizes = np.maximum(hi - lo, 0) * c * w * o * wo
        offsets = np.r_[0, np.cumsum(sizes)]
        flat = np.zeros(int(offsets[-1]))
        for rows, cols, taps in _taps(attrs, shape):
            out_c, rest = np.divmod(rows, ho * wo)
            i, j = np.divmod(rest, wo)
            in_c, rest = np.divmod(cols, shape[1] * w)
            y, x = np.divmod(rest, w)
            flat[offsets[i] + (((y - lo[i]) * c + in_c) * w + x) * (o * wo) + out_c * wo + j] = taps
        cache[key] = RowBands(lo, hi, tuple(
            flat[offsets[i]:offsets[i + 1]].reshape(-1, o * wo) for i in range(ho)))
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

    rows, cols, taps = (np.concatenate(a) for a in zip(*_taps(attrs, shape), strict=True))
    units = int(np.prod(shape))
    order = np.lexsort((rows, cols))
    indptr = np.zeros(units + 1, np.int32)
    np.cumsum(np.bincount(cols, minlength=units), out=indptr[1:])
    return sparse.csr_matrix((taps[order], rows[order].astype(np.int32), indptr),
                             shape=(units, o * ho * wo))


def _taps(attrs: MutableMapping[str, Any], shape: tuple[int, ...]
          ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The convolution's nonzero matrix entries (output units, input units, weights), one
    kernel tap (di, dj) at a time.  Each weight is written where it lands: output (o, i, j)
    reads input (c, i sh - top + di dh, j sw - left + dj dw), zero padding outside."""
    c, h, w = shape
    weight = np.asarray(attrs["weight"], np.float64)
    o, cg, kh, kw = weight.shape
    (sh, sw), (dh, dw) = attrs["stride"], attrs["dilation"]
    top, left = attrs["pads"][0], attrs["pads"][1]
    _, ho, wo = conv_out_shape(attrs, shape)
    oc = np.arange(o)[:, None, None, None]
    ii, jj = np.arange(ho)[None, :, None, None], np.arange(wo)[None, None, :, None]
    rows = np.broadcast_to((oc * ho + ii) * wo + jj, (o, ho, wo, cg))
    channel = (oc // (o // attrs["groups"])) * cg + np.arange(cg)[None, None, None, :]
    for di in range(kh):
        for dj in range(kw):
            y, x = ii * sh - top + di * dh, jj * sw - left + dj * dw
            inside = np.broadcast_to((y >= 0) & (y < h) & (x >= 0) & (x < w), rows.shape)
            yield (rows[inside], np.broadcast_to((channel * h + y) * w + x, rows.shape)[inside],
                   np.broadcast_to(weight[:, None, None, :, di, dj], rows.shape)[inside])
