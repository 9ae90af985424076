"""The slice graph's shapes by arithmetic, and the convolution's fast forms (issue 45, item 1).

``check_size`` used to propagate shapes on torch's meta device, which imports torch._dynamo
and sympy (2-10 s of a one-shot ``bnviz slice``); it now computes them, and these tests hold
the arithmetic to the real forward on every op kind the importer makes.  ``linear_part``
runs a 1x1 convolution as one product over the channels and a convolution on a small map as
its dense matrix: both are held to torch's conv2d, and the partition to the forward in
tests/slices/test_engine.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from onnx_nets import conv_net

from bnviz.slices.graph import Op, linear_part
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.slice_net import check_size
from bnviz.slices.slice_net import op_out_shape as _out_shape

#: conv_net's variants: residual, pooling with stride, padding and ceil mode, BN after an
#: activation, leaky ReLU, an extra op, odd sizes
VARIANTS = [
    {"size": 7, "residual": True},
    {"size": 9, "maxpool": True, "pool": (3, 2, 1, True)},
    {"size": 8, "maxpool": True, "pool": (2, 2, 0, False), "leaky": True},
    {"size": 11, "stride2": False, "bn_after_act": True, "maxpool": True,
     "pool": (3, 3, 0, True)},
    {"size": 6, "extra_op": "Identity", "channels": 5},
]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}{v[k]}" for k in v))
def test_arithmetic_shapes_equal_the_forward(tmp_path: Path, variant: dict) -> None:
    net = load_onnx(conv_net(tmp_path / "net.onnx", **variant))
    real = net.shapes()
    shapes = {net.input: tuple(net.input_shape)}
    for op in net.ops:
        shapes[op.output] = _out_shape(op, [shapes[i] for i in op.inputs])
        assert shapes[op.output] == real[op.output], op.name


def test_a_shape_that_cannot_be_is_refused_in_one_line() -> None:
    w = np.zeros((4, 3, 5, 5))
    conv = Op("conv", "c", ("x",), "y", {"weight": w, "bias": None, "stride": (1, 1),
                                         "pads": (0, 0, 0, 0), "dilation": (1, 1),
                                         "groups": 1})
    with pytest.raises(ValueError, match="convolution of 3 channels"):
        _out_shape(conv, [(2, 8, 8)])
    assert _out_shape(conv, [(3, 3, 3)]) == (4, -1, -1)  # check_size refuses it (below)
    from bnviz.slices.graph import SliceNet

    relu = Op("relu", "r", ("y",), "z", {"slope": 0.0})
    with pytest.raises(ValueError, match="an output of shape"):
        check_size(SliceNet((conv, relu), "x", "z", (3, 3, 3)))


def test_checking_a_network_imports_neither_dynamo_nor_sympy(tmp_path: Path) -> None:
    """The one-shot command's fixed cost: loading and checking an ONNX net (max pooling,
    residual add, ReLU, global average pooling) leaves torch._dynamo and sympy unimported."""
    path = conv_net(tmp_path / "net.onnx", size=9, residual=True, maxpool=True)
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from bnviz.slices.onnx_import import load_onnx
        load_onnx(Path({str(path)!r}))
        print(sorted(m for m in ("torch._dynamo", "sympy") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _conv_op(w: np.ndarray, stride: int, pad: int, groups: int = 1) -> Op:
    return Op("conv", "c", ("x",), "y", {"weight": w, "bias": None, "stride": (stride, stride),
                                         "pads": (pad,) * 4, "dilation": (1, 1),
                                         "groups": groups})


@pytest.mark.parametrize(("c", "o", "k", "size", "stride", "pad", "groups"), [
    (6, 7, 1, 4, 1, 0, 1),   # 1x1: the product over channels
    (6, 7, 1, 9, 1, 0, 1),
    (6, 4, 1, 5, 2, 0, 1),   # 1x1 with a stride: conv2d
    (5, 8, 3, 4, 1, 1, 1),   # a 4x4 map: the dense matrix
    (4, 6, 5, 4, 1, 2, 1),
    (6, 6, 3, 6, 1, 1, 3),   # grouped: dense only where it pays
    (3, 5, 3, 12, 1, 1, 1),  # a 12x12 map: conv2d
    (4, 4, 3, 7, 2, 1, 1),
])
def test_the_convolution_s_fast_forms_equal_conv2d(c: int, o: int, k: int, size: int,
                                                   stride: int, pad: int, groups: int) -> None:
    rng = np.random.default_rng(c * 100 + size)
    w = rng.normal(size=(o, c // groups, k, k))
    x = torch.as_tensor(rng.normal(size=(13, c, size, size)))
    want = F.conv2d(x, torch.as_tensor(w), None, stride, pad, 1, groups)
    got = linear_part(_conv_op(w, stride, pad, groups), [x])
    assert got.shape == want.shape
    assert got.is_contiguous()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-12)
