"""A convolution as one dense matrix (bnviz.slices.graph.conv_matrix, the form the cut uses
on small maps and the unrolled networks Regioncam is compared on), built weight by weight:
it is torch's conv2d applied to every unit image, whatever the strides, dilations, groups
and (asymmetric) padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bnviz.slices.conv_dense import unit_matrix
from bnviz.slices.graph import Op, conv_matrix

CASES = [  # (C, H, W), O, groups, kernel, stride, dilation, pads (top, left, bottom, right)
    ((3, 6, 6), 4, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((4, 5, 7), 6, 2, (3, 2), (2, 1), (1, 1), (0, 1, 0, 1)),
    ((2, 8, 8), 2, 2, (3, 3), (1, 2), (2, 1), (2, 0, 1, 1)),  # asymmetric padding
    ((6, 4, 4), 3, 3, (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),  # kernel wider than the map
    ((1, 7, 5), 5, 1, (1, 1), (2, 2), (1, 1), (0, 0, 0, 0)),
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
