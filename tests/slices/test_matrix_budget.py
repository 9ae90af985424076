"""One budget for a network's convolution matrices (bnviz.caps.SLICE_MATRIX_BYTES): planned
from the shapes before a forward or a cut, so that an upload of many convolutions that share
one weight (within every per-op cap) holds at most the budget, not one matrix an op; and
the cut's values do not depend on it (a convolution past it runs on conv2d)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_nets import conv_net

import bnviz.caps as caps
from bnviz.slices.activated_linear import _by_unit
from bnviz.slices.conv_dense import row_bands
from bnviz.slices.conv_products import plan_forms
from bnviz.slices.engine import cut_slice
from bnviz.slices.graph import Op, plan_matrices
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.plane import plane_through_image

MB = 2**20


def _shared_weight_net(path, convs: int, channels: int, size: int = 4, bn: bool = True):
    """``convs`` 3x3 convolutions (each with BN, then ReLU) on (channels, size, size) maps,
    every one reading the same initializer: a small file, many matrices."""
    rng = np.random.default_rng(0)
    c = channels
    inits = [numpy_helper.from_array(rng.normal(0, 1 / np.sqrt(9 * c), (c, c, 3, 3))
                                     .astype(np.float32), "w"),
             numpy_helper.from_array(rng.normal(0, 1, (3, c)).astype(np.float32), "fc")]
    for name, v in (("g", rng.uniform(0.5, 1.5, c)), ("b", rng.normal(0, 0.2, c)),
                    ("m", rng.normal(0, 0.3, c)), ("v", rng.uniform(0.5, 2.0, c))):
        inits.append(numpy_helper.from_array(v.astype(np.float32), name))
    nodes, x = [], "x"
    for i in range(convs):
        nodes.append(helper.make_node("Conv", [x, "w"], [f"c{i}"], pads=[1] * 4,
                                      kernel_shape=[3, 3]))
        y = f"c{i}"
        if bn:
            nodes.append(helper.make_node("BatchNormalization", [y, "g", "b", "m", "v"],
                                          [f"n{i}"]))
            y = f"n{i}"
        nodes.append(helper.make_node("Relu", [y], [f"r{i}"]))
        x = f"r{i}"
    nodes += [helper.make_node("GlobalAveragePool", [x], ["p"]),
              helper.make_node("Flatten", ["p"], ["f"], axis=1),
              helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _matrix_bytes(net) -> int:
    """Bytes of the matrices kept on the network's ops (dense, bands, by unit)."""
    total = 0
    for op in net.ops:
        for key, v in op.attrs.get("_dense", {}).items():
            if isinstance(v, np.ndarray):
                total += v.nbytes
            elif key[0] == "bands":
                total += sum(m.nbytes for m in v.matrices)
            elif key[0] == "by unit" and v is not None:
                total += v.data.nbytes + v.indices.nbytes + v.indptr.nbytes
    return total


def test_convolutions_sharing_one_weight_hold_one_budget_not_one_matrix_each(
        tmp_path, monkeypatch):
    # 40 convolutions on (32, 4, 4) maps: row bands of 1.25 MB each, 50 MB unplanned
    path = _shared_weight_net(tmp_path / "shared.onnx", convs=40, channels=32)
    budget = 8 * MB
    monkeypatch.setattr(caps, "SLICE_MATRIX_BYTES", budget)
    # what a first cut in a process loads (the compiled kernels, lazy imports) is not the
    # network's: a cut of a small network first
    small_net = load_onnx(conv_net(tmp_path / "small.onnx", channels=4, maxpool=True))
    cut_slice(small_net, plane_through_image(np.ones(small_net.input_shape)), (-2, 2, -2, 2))
    tracemalloc.start()
    try:
        net = load_onnx(path)  # its forward (the shapes' check) plans first
        loaded, _ = tracemalloc.get_traced_memory()
        forms = [op.attrs["_dense"].get(("form", (32, 4, 4), True)) for op in net.ops
                 if op.kind == "conv"]
        assert forms[:3] == ["bands"] * 3 and set(forms[3:]) == {None}, forms
        assert _matrix_bytes(net) <= budget // 2  # each form counted twice (the snap's)
        plane = plane_through_image(np.random.default_rng(1).normal(size=net.input_shape))
        tracemalloc.reset_peak()
        small = cut_slice(net, plane, (-0.5, 0.5, -0.5, 0.5))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the cut's folded copies (BN in the weights) and its snap's absolute values: the
    # budget, plus each op's weight twice (32 x 32 x 9 float64: 74 KB), plus its working
    # memory (228 regions here)
    weights = 40 * 32 * 32 * 9 * 8
    assert peak - loaded <= budget + 2 * weights + 6 * MB, (peak - loaded) / MB
    # the same cut with room for every matrix: the same partition
    monkeypatch.setattr(caps, "SLICE_MATRIX_BYTES", 1024 * MB)
    full = load_onnx(path)
    assert _matrix_bytes(full) > 40 * MB
    large = cut_slice(full, plane, (-0.5, 0.5, -0.5, 0.5))
    assert small.counts == large.counts and small.counts[-1] > 200
    assert np.array_equal(np.sort(small.predicted_class), np.sort(large.predicted_class))


def test_a_plan_counts_each_form_twice_and_keeps_a_form_already_chosen():
    def conv(channels):
        return Op("conv", "c", ("x",), "y", {
            "weight": np.zeros((channels, channels, 3, 3)), "bias": None, "stride": (1, 1),
            "pads": (1, 1, 1, 1), "dilation": (1, 1), "groups": 1}).attrs

    shape = (32, 4, 4)
    one = 8 * int(np.concatenate([m.ravel() for m in row_bands(conv(32), shape).matrices]).size)
    ops = [conv(32) for _ in range(5)]
    assert plan_forms([(a, shape) for a in ops], True, 5 * one) == 4 * one  # 2 forms, twice
    assert [a["_dense"][("form", shape, True)] for a in ops] == ["bands"] * 2 + [None] * 3
    # a second plan of the same ops (the next cut) finds them chosen and counts the same
    assert plan_forms([(a, shape) for a in ops], True, 10 * one) == 4 * one
    # on a GPU (no bands): the dense matrix, under the same budget
    dense = 8 * 512 * 512
    assert plan_forms([(a, shape) for a in ops], False, 2 * dense) == 2 * dense
    assert [a["_dense"][("form", shape, False)] for a in ops] == ["dense"] + [None] * 4


def test_a_forward_on_a_gpu_layout_plans_the_same_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(caps, "SLICE_MATRIX_BYTES", 1024 * MB)
    net = load_onnx(_shared_weight_net(tmp_path / "gpu.onnx", convs=6, channels=32,
                                       bn=False))
    dense = 2 * 8 * 512 * 512  # a dense form counted twice
    assert plan_matrices(net, False, budget=3 * dense) == 3 * dense
    assert [op.attrs["_dense"][("form", (32, 4, 4), False)] for op in net.ops
            if op.kind == "conv"] == ["dense"] * 3 + [None] * 3


@pytest.mark.parametrize("kind", ["conv", "linear"])
def test_a_by_unit_matrix_is_built_only_within_what_the_plan_left(kind):
    rng = np.random.default_rng(0)
    if kind == "conv":
        attrs = {"weight": rng.normal(size=(8, 8, 3, 3)), "bias": None, "stride": (1, 1),
                 "pads": (1, 1, 1, 1), "dilation": (1, 1), "groups": 1}
        shape, bound = (8, 6, 6), 12 * 8 * 8 * 9 * 36
    else:
        attrs = {"weight": rng.normal(size=(10, 50)), "bias": None}
        shape, bound = (50,), 12 * 500
    left = {"bytes": bound - 1}
    refused = Op(kind, "a", ("x",), "y", {**attrs, "_dense": {("left",): left}})
    assert _by_unit(refused, shape) is None and left["bytes"] == bound - 1
    left = {"bytes": bound}
    op = Op(kind, "b", ("x",), "y", {**attrs, "_dense": {("left",): left}})
    built = _by_unit(op, shape)
    assert built is not None
    assert left["bytes"] == bound - built.data.nbytes - built.indices.nbytes - \
        built.indptr.nbytes


def test_a_network_whose_ops_share_too_many_weights_is_refused_when_loaded(tmp_path):
    # one (256, 256, 3, 3) weight (2.4 MB as float32) read by 30 convolutions: 17.7M
    # weights over the ops (with the classifier's 768), each folded (BN) and snapped as
    # its own float64 copy
    path = _shared_weight_net(tmp_path / "many.onnx", convs=30, channels=256, size=2)
    assert path.stat().st_size < 3 * MB
    with pytest.raises(ValueError, match=r"17,695,488 weights over its ops, more than the "
                                         r"16,777,216 a slice reads"):
        load_onnx(path)


def test_by_unit_matrices_kept_from_an_earlier_cut_count_against_the_next(tmp_path,
                                                                          monkeypatch):
    # a tile worker cuts tile after tile on one folded network: what an earlier tile built
    # stays on its ops, so the next tile's plan leaves that much less
    from onnx_nets import conv_net

    from bnviz.slices.activated_linear import plan_cut_matrices
    from bnviz.slices.graph import fold_bn
    from bnviz.slices.slice_net import tensor_shapes

    monkeypatch.setattr(caps, "SLICE_MATRIX_BYTES", 4 * MB)
    net = fold_bn(load_onnx(conv_net(tmp_path / "net.onnx", channels=8, size=12)))
    plan_cut_matrices(net, True)
    convs = [op for op in net.ops if op.kind == "conv"]
    ledger = convs[0].attrs["_dense"][("left",)]
    forms = 4 * MB - ledger["bytes"]
    built = _by_unit(convs[1], tensor_shapes(net)[convs[1].inputs[0]])
    assert built is not None
    size = built.data.nbytes + built.indices.nbytes + built.indptr.nbytes
    assert ledger["bytes"] == 4 * MB - forms - size
    plan_cut_matrices(net, True)  # the next tile
    assert convs[0].attrs["_dense"][("left",)]["bytes"] == 4 * MB - forms - size
