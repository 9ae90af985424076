"""A convolution as one dense matrix (bnviz.slices.graph.conv_matrix, the form the cut uses
on small maps and the unrolled networks Regioncam is compared on), built weight by weight:
it is torch's conv2d applied to every unit image, whatever the strides, dilations, groups
and (asymmetric) padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bnviz.slices.conv_dense import conv_out_shape, row_bands, unit_matrix
from bnviz.slices.conv_products import banded_product, channel_product, dense_form
from bnviz.slices.graph import Op, conv_matrix

# one torch thread, as a tile worker and the server run: the products on numpy's BLAS, and
# with the kernels loaded the compiled swaps (bnviz.blas.on_numpy_blas)
pytestmark = pytest.mark.usefixtures("one_torch_thread")

CASES = [  # (C, H, W), O, groups, kernel, stride, dilation, pads (top, left, bottom, right)
    ((3, 6, 6), 4, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((4, 5, 7), 6, 2, (3, 2), (2, 1), (1, 1), (0, 1, 0, 1)),
    ((2, 8, 8), 2, 2, (3, 3), (1, 2), (2, 1), (2, 0, 1, 1)),  # asymmetric padding
    ((6, 4, 4), 3, 3, (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),  # kernel wider than the map
    ((1, 7, 5), 5, 1, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0)),
    # every axis its own stride, dilation and padding; taps that read padding alone
    ((4, 6, 9), 4, 2, (4, 3), (2, 3), (2, 2), (3, 1, 0, 4)),
]


@pytest.mark.parametrize("shape, o, groups, kernel, stride, dilation, pads", CASES)
def test_the_dense_matrix_is_conv2d_on_every_unit_image(shape, o, groups, kernel, stride,
                                                         dilation, pads):
    rng = np.random.default_rng(len(shape) + o)
    weight = rng.normal(0, 1, (o, shape[0] // groups, *kernel))
    op = Op("conv", "c", ("x",), "y", {"weight": weight, "bias": None, "stride": stride,
                                      "pads": pads, "dilation": dilation, "groups": groups})
    n = int(np.prod(shape))
    eye = F.pad(torch.eye(n, dtype=torch.float64).reshape(n, *shape),
                (pads[1], pads[3], pads[0], pads[2]))
    want = F.conv2d(eye, torch.as_tensor(weight), None, stride, 0, dilation, groups)
    want = want.reshape(n, -1).T.numpy()
    got = conv_matrix(op, shape)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(got) > 0
    # the by-unit form (the differences of bnviz.slices.activated_linear): its transpose
    by_unit = unit_matrix(op.attrs, shape, 10**7)
    np.testing.assert_array_equal(by_unit.toarray(), want.T)
    assert unit_matrix(op.attrs, shape, 0) is None  # past its cap: none built


def _op(shape, o, groups, kernel, stride, dilation, pads, seed=0) -> Op:
    weight = np.random.default_rng(seed).normal(0, 1, (o, shape[0] // groups, *kernel))
    return Op("conv", "c", ("x",), "y", {"weight": weight, "bias": None, "stride": stride,
                                         "pads": pads, "dilation": dilation, "groups": groups})


BAND_CASES = [*CASES,
              ((32, 4, 4), 64, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # ResNet9's 4x4 stage
              ((3, 9, 7), 4, 1, (3, 3), (2, 2), (1, 1), (3, 0, 0, 1)),  # rows of padding alone
              ((2, 5, 5), 3, 1, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0))]


@pytest.mark.parametrize("shape, o, groups, kernel, stride, dilation, pads", BAND_CASES)
def test_the_row_bands_are_the_dense_matrix_by_output_row(shape, o, groups, kernel, stride,
                                                          dilation, pads):
    """issue 45: the row bands put back in place are the dense matrix, entry for entry, and
    an output row's band reads only the input rows the dense matrix has nonzeros in (an
    output row under padding alone reads none)."""
    op = _op(shape, o, groups, kernel, stride, dilation, pads)
    dense = conv_matrix(op, shape)
    c, h, w = shape
    oc, ho, wo = conv_out_shape(op.attrs, shape)
    bands = row_bands(op.attrs, shape)
    rebuilt = np.zeros((oc, ho, wo, c, h, w))
    for i, (lo, hi, matrix) in enumerate(zip(bands.lo, bands.hi, bands.matrices, strict=True)):
        assert matrix.shape == (max(hi - lo, 0) * c * w, oc * wo)
        if hi > lo:
            rebuilt[:, i, :, :, lo:hi, :] = matrix.reshape(hi - lo, c, w, oc, wo).transpose(
                3, 4, 1, 0, 2)
    np.testing.assert_array_equal(rebuilt.reshape(dense.shape), dense)
    reach = dense.reshape(oc, ho, wo, c, h, w).any(axis=(0, 2, 3, 5))  # (Ho, H)
    for i in range(ho):
        rows = np.flatnonzero(reach[i])
        if len(rows):  # the band is tight: its first and last rows are read
            assert (bands.lo[i], bands.hi[i]) == (rows.min(), rows.max() + 1)
        else:
            assert bands.hi[i] <= bands.lo[i] and bands.matrices[i].size == 0
    assert any(bands.hi[i] - bands.lo[i] < h for i in range(ho)) or h <= kernel[0]


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled swaps", "torch"])
@pytest.mark.parametrize("shape, o, groups, kernel, stride, dilation, pads", BAND_CASES)
def test_the_banded_and_channel_products_are_conv2d(shape, o, groups, kernel, stride, dilation,
                                                    pads, compiled, monkeypatch):
    """issue 45: the convolution by row bands (numpy's BLAS and the compiled layout swaps, or
    torch's products and permutes: the path of a GPU and of a process without the kernels)
    is torch's conv2d up to rounding, on maps that are not contiguous too; so is the 1x1
    convolution over the channels."""
    from bnviz.core import kernels
    from bnviz.core.arrays import NUMPY
    from bnviz.core.cut import compiled_kernels

    kernels.require()
    if not compiled:
        monkeypatch.setattr(kernels, "ready", lambda: None)
    from bnviz.blas import on_numpy_blas

    assert (compiled_kernels(NUMPY, 0) is not None) == compiled  # the path under test
    assert on_numpy_blas(torch.zeros(1, dtype=torch.float64))
    op = _op(shape, o, groups, kernel, stride, dilation, pads, seed=3)
    rng = np.random.default_rng(5)
    x = torch.as_tensor(rng.normal(0, 1, (7, *shape)))
    t, left, b, r = pads
    want = F.conv2d(F.pad(x, (left, r, t, b)), torch.as_tensor(op.attrs["weight"]), None,
                    stride, 0, dilation, groups)
    for batch in (x, x.transpose(0, 1).contiguous().transpose(0, 1)):  # (strided)
        got = banded_product(batch, op.attrs)
        assert got.shape == want.shape and got.is_contiguous()
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    weight = op.attrs["weight"][:, :, 0, 0] if groups == 1 else rng.normal(0, 1, (o, shape[0]))
    for batch in (x, x.transpose(0, 1).contiguous().transpose(0, 1)):
        got = channel_product(batch, weight)
        assert got.is_contiguous()
        torch.testing.assert_close(got, torch.einsum("oc,nchw->nohw", torch.as_tensor(weight),
                                                     x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, kernel, pads, form", [
    ((32, 4, 4), (3, 3), (1, 1, 1, 1), "bands"),  # ResNet9: 10 of 16 input rows read
    ((16, 8, 8), (3, 3), (1, 1, 1, 1), "bands"),  # 22 of 64: conv2d's float64 path before
    ((8, 16, 16), (3, 3), (1, 1, 1, 1), "bands"),  # 5.1x the conv's products: 2.8x conv2d
    ((64, 2, 2), (3, 3), (1, 1, 1, 1), "dense"),  # every row read: one product
    ((96, 4, 4), (5, 5), (2, 2, 2, 2), "dense"),  # 14 of 16 rows: past BAND_SHARE
    ((64, 32, 32), (3, 3), (1, 1, 1, 1), None),  # bands of 200M entries: conv2d
    # an upload's 8x8 kernels on (64, 8, 8) maps to 2 048 channels: a dense matrix of 537M
    # entries (4.3 GB) within every ratio; its bands 403M: conv2d, nothing built
    ((64, 8, 8), (8, 8), (4, 4, 3, 3), None),
])
def test_a_convolution_takes_the_form_with_the_fewest_products(shape, kernel, pads, form):
    out = 2048 if kernel == (8, 8) else shape[0]
    weight = np.zeros((out, shape[0], *kernel))  # (the form reads the shape alone)
    op = Op("conv", "c", ("x",), "y", {"weight": weight, "bias": None, "stride": (1, 1),
                                      "pads": pads, "dilation": (1, 1), "groups": 1})
    assert dense_form(op.attrs, shape) == form
    # on a GPU (never timed with bands): the dense matrix where it pays, else conv2d
    assert dense_form(op.attrs, shape, bands=False) == {
        (32, 4, 4): "dense", (16, 8, 8): None, (8, 16, 16): None}.get(shape, form)


@pytest.mark.parametrize("shape", [(5, 7, 3, 1), (4, 3, 7, 2), (2, 1, 9, 4), (3, 6, 6, 5)])
def test_the_compiled_swap_is_numpys_transpose(shape):
    from bnviz.core import kernels

    x = np.random.default_rng(1).normal(0, 1, shape)
    out = np.empty((shape[0], shape[2], shape[1], shape[3]))
    kernels.require().swap_middle_axes(x, out)
    np.testing.assert_array_equal(out, x.transpose(0, 2, 1, 3))
