"""A convolution's float64 products, in the forms a BLAS runs fastest (issue 45).

:func:`bnviz.slices.graph.linear_part` takes one of four forms for a convolution on a batch
of maps: torch's conv2d, whose float64 path ran at 3-6 GFLOP/s on one core here; one dense
matrix (:func:`bnviz.slices.conv_dense.dense_matrix`), a BLAS product at 50-60 (AVX2) that
also multiplies the zeros of every tap in the padding; the dense matrix cut by output row
(:class:`bnviz.slices.conv_dense.RowBands`), which leaves out the input rows an output row
cannot read; or, for a 1x1 convolution, one product over the channels at every pixel.
:func:`dense_form` chooses by the multiply-adds each form does.

The row bands read the maps rows-first (N, H, C, W), so that the rows an output row reads are
one block of columns, and write rows-first (N, Ho, O, Wo).  The layouts are swapped by a
compiled copy
(:func:`bnviz.core.compiled_network.swap_middle_axes`) once the kernels are loaded in the
process (else torch's permutes run: the same values).  On ResNet9's 4x4 maps the swaps take
0.5-1.5 ms for 3 000 maps, torch's ``permute().contiguous()`` of float64 1.6-6.5 ms.  The
sums are the dense product's, the zeros left out, summed in the BLAS's order: equal up to
its rounding.

Measured (one core, AVX2 kernels, ``bench/slice.py``'s ResNet9 window of 49 402 regions):
the row bands took its three 4x4 convolutions from 2.3 s to 1.5 s and the whole cut from
5.4 to 4.9 s.  A 1x1 convolution reads and writes channels-last, by the same compiled swaps
(with a loop of their own for its pixels, twice as fast as the general one: 0.3 ms for a
(1 523, 192, 2, 2) chunk, torch's permute and copy 1.0 ms); with the snap's compiled test
(:mod:`bnviz.slices.ties`) and the matrices written tap by tap as strided views
(:mod:`bnviz.slices.conv_dense`), the cuts of bench/slice.py's three networks took 0.95-0.97
of their CPU time (fresh processes, best of 3-4, alternately, 2026-11-30).
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any

import numpy as np
import torch

from bnviz.blas import on_numpy_blas, times_transposed
from bnviz.core.arrays import NUMPY
from bnviz.core.cut import compiled_kernels
from bnviz.slices.conv_dense import band_rows, conv_out_shape, row_bands

__all__ = ["banded_product", "channel_product", "dense_form", "plan_forms"]

#: Inputs (C * H * W) up to which a convolution may run as one dense matrix
#: ((O * Ho * Wo) x (C * H * W) float64, built once per op and shape).
DENSE_MAX_UNITS = 4096
#: Entries of a convolution's dense matrix (8 bytes each) past which it is not built: 32 MB
#: kept on the op while the cut runs.  (Without it, an upload's 8x8 kernels over 64 channels
#: of 8x8 maps, 2 048 of them, asked for a 4.3 GB matrix; the appendix CNN's largest is 2.4M.)
DENSE_ENTRIES = 4_000_000
#: A convolution runs as the dense matrix, or its row bands, when they do at most this many
#: times the multiply-adds of the convolution itself (the dense rows also multiply the zeros
#: of every tap that misses the map).  Measured on one core in float64 (bench/slice.py's
#: profile, issue 45): the dense product runs at about 25 GFLOP/s, torch's float64 conv2d at
#: 3-6, so the dense form is 2.3-3.9x faster on 4x4 and 6x6 maps (ratio 1.8-4), even on 8x8
#: maps with few channels (ratio 7: 0.8-1.3x) and 2x slower on 8x8 with 64 channels: 4 keeps
#: the maps where it wins.
DENSE_MAX_RATIO = 4.0
#: The row bands run instead of the dense matrix when they do at most this share of its
#: multiply-adds: their products are narrower (O * Wo columns, not O * Ho * Wo), and ran at
#: 49 GFLOP/s against the dense one's 58 on ResNet9's 4x4 maps (AVX2, one core).
BAND_SHARE = 0.8
#: The row bands run when they do at most this many times the convolution's own
#: multiply-adds: they ran at 40-50 GFLOP/s on one core (AVX2), conv2d's float64 path at 3-6,
#: and beat it 2.2x on (16, 8, 8) and (32, 8, 8) maps (ratio 2.4), 1.8x on (16, 12, 12)
#: (3.5) and 2.8x on (8, 16, 16) (5.1), 3 000 maps to 32 channels or 2 000 to 16 and 8.
BAND_MAX_RATIO = 8.0
#: Entries of a convolution's row bands (8 bytes each) past which they are not built: 32 MB
#: kept on the op while the cut runs ((64, 8, 8) to 64 channels has 5.8M: conv2d, 1.4x
#: slower than its bands would be).
BAND_ENTRIES = 4_000_000


def dense_form(attrs: MutableMapping[str, Any], shape: tuple[int, ...], bands: bool = True
               ) -> str | None:
    """How a (not 1x1) convolution on inputs of ``shape`` (C, H, W) runs: "bands", "dense"
    or None (torch's conv2d), by the multiply-adds of each (the module docstring), or as
    :func:`plan_forms` planned it.  Not ``bands`` (a GPU's maps, where they were never
    timed): "dense" or None.  Kept in ``attrs["_dense"]``, as the matrices are."""
    cache = attrs.setdefault("_dense", {})
    key = ("form", shape, bands)
    if key not in cache:
        cache[key] = _form(_products(attrs, shape), bands)
    return cache[key]


def plan_forms(convs: Iterable[tuple[MutableMapping[str, Any], tuple[int, ...]]], bands: bool,
               budget: int) -> int:
    """Choose the form of every convolution of one network (``convs``: each op's attributes
    and input shape, in forward order) before any is built, under one ``budget`` of bytes for
    their matrices: a convolution whose matrices would not fit runs on conv2d and builds
    nothing.  Each form is counted twice, the op's matrices and the snap's of its absolute
    values (:class:`bnviz.slices.ties.TieSnap`); a form already chosen is counted as it is
    (it may be built).  Returns the bytes counted.  Without it, each op capped its own
    matrices (32 MB) but nothing capped their sum: an upload of 582 KB, 60 convolutions on
    (128, 4, 4) maps that share one weight, held 1.25 GB once loaded."""
    used = 0
    for attrs, shape in convs:
        cache = attrs.setdefault("_dense", {})
        key = ("form", shape, bands)
        sizes = _products(attrs, shape)
        form = cache[key] if key in cache else _form(sizes, bands)
        cost = 2 * 8 * {"bands": sizes[2], "dense": sizes[1]}.get(form, 0)
        if key not in cache and used + cost > budget:
            form, cost = None, 0
        cache[key] = form
        used += cost
    return used


def _products(attrs: MutableMapping[str, Any], shape: tuple[int, ...]
              ) -> tuple[int, int, int, int]:
    """The multiply-adds an input of the convolution itself, of its dense matrix and of its
    row bands (the matrices' entries too), and the input's units."""
    c, h, w = shape
    o, cg, kh, kw = attrs["weight"].shape
    _, ho, wo = conv_out_shape(attrs, shape)
    lo, hi = band_rows(attrs, shape)
    return (o * ho * wo * cg * kh * kw, o * ho * wo * c * h * w,
            int(np.maximum(hi - lo, 0).sum()) * c * w * o * wo, c * h * w)


def _form(sizes: tuple[int, int, int, int], bands: bool) -> str | None:
    conv, dense, banded, units = sizes
    if bands and banded <= BAND_SHARE * dense and banded <= BAND_MAX_RATIO * conv and \
            banded <= BAND_ENTRIES:
        return "bands"
    if units <= DENSE_MAX_UNITS and dense <= DENSE_MAX_RATIO * conv and dense <= DENSE_ENTRIES:
        return "dense"
    return None


def banded_product(x: torch.Tensor, attrs: MutableMapping[str, Any]) -> torch.Tensor:
    """The convolution of ``x`` (N, C, H, W), without bias, by its row bands, as (N, O, Ho,
    Wo)."""
    n, c, h, w = x.shape
    o, ho, wo = conv_out_shape(attrs, (c, h, w))
    bands = row_bands(attrs, (c, h, w))
    compiled = compiled_kernels(NUMPY, 0)  # the kernels where this process has them
    if compiled is None or not on_numpy_blas(x):
        rows = x.permute(0, 2, 1, 3).reshape(n, -1)
        y = torch.zeros((n, ho, o * wo), dtype=x.dtype, device=x.device)
        for i, (lo, hi, matrix) in enumerate(zip(bands.lo, bands.hi, bands.matrices,
                                                 strict=True)):
            if hi > lo:
                y[:, i] = rows[:, lo * c * w:hi * c * w] @ torch.as_tensor(
                    matrix, dtype=x.dtype, device=x.device)
        return y.reshape(n, ho, o, wo).permute(0, 2, 1, 3).contiguous()
    rows = np.empty((n, h, c, w))
    compiled.swap_middle_axes(np.ascontiguousarray(x.numpy()), rows)
    rows = rows.reshape(n, -1)
    y = np.empty((n, ho, o * wo))
    for i, (lo, hi, matrix) in enumerate(zip(bands.lo, bands.hi, bands.matrices, strict=True)):
        if hi > lo:
            np.matmul(rows[:, lo * c * w:hi * c * w], matrix, out=y[:, i])
        else:
            y[:, i] = 0.0  # only padding under this output row
    out = np.empty((n, o, ho, wo))
    compiled.swap_middle_axes(y.reshape(n, ho, o, wo), out)
    return torch.from_numpy(out)


def channel_product(x: torch.Tensor, weight: np.ndarray) -> torch.Tensor:
    """The 1x1 convolution of ``x`` (N, C, H, W) with ``weight`` (O, C), without bias, as
    (N, O, H, W): y[n, o, i, j] = sum_c weight[o, c] x[n, c, i, j], one BLAS product on the
    pixels' rows, the layouts swapped by the compiled copy where this process has the kernels
    and numpy's BLAS runs the product, else by torch's permutes (the module docstring)."""
    n, c, h, w = x.shape
    compiled = compiled_kernels(NUMPY, 0)
    if compiled is None or not on_numpy_blas(x):
        y = times_transposed(x.permute(0, 2, 3, 1).reshape(-1, c), weight)
        return y.reshape(n, h, w, -1).permute(0, 3, 1, 2).contiguous()
    pixels = np.empty((n, h * w, c, 1))  # channels-last by the compiled swap
    compiled.swap_middle_axes(np.ascontiguousarray(x.numpy()).reshape(n, c, h * w, 1), pixels)
    y = np.matmul(pixels.reshape(-1, c), weight.T)
    out = np.empty((n, weight.shape[0], h * w, 1))
    compiled.swap_middle_axes(y.reshape(n, h * w, -1, 1), out)
    return torch.from_numpy(out.reshape(n, -1, h, w))
