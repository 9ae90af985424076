"""Networks within the file caps that asked for far more than their size before they were
checked (a hostile probe, 2026-11-30): a global max pool on huge images run before the size
check, a max pool whose windows read millions of inputs, a mini-batch whose maps outgrow
memory in train mode, a node past the output that crashed the cut, and numbers that cannot
be a network's (NaN, negative variance). Each is one line, before anything large is built,
or is read as the network it is."""

from __future__ import annotations

import tracemalloc

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx_nets import conv_net

from bnviz.slices.engine import cut_slice
from bnviz.slices.graph import batch_statistics
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.plane import plane_through_image

MB = 2**20


def _save(path, nodes, inits, shape, classes=3):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _head(x: str, channels: int, classes: int = 3):
    return ([helper.make_node("Flatten", [x], ["f"], axis=1),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)],
            {"fc": np.ones((classes, channels))})


def test_a_global_max_pool_on_huge_images_is_refused_before_anything_runs(tmp_path):
    # 753 bytes: a 1x1 conv to 32 channels of 2048 x 2048, then a global max pool; its
    # kernel came from a float64 forward before the size check (2.4 GB)
    head, fc = _head("p", 32)
    path = _save(tmp_path / "g.onnx", [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalMaxPool", ["r"], ["p"]), *head],
        {"w": np.ones((32, 1, 1, 1)), **fc}, (1, 1, 2048, 2048))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="larger than a slice reads") as err:
            load_onnx(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(err.value) and peak < 20 * MB, peak / MB


def test_a_max_pool_whose_windows_read_millions_of_inputs_is_refused(tmp_path):
    # 41 x 41 windows at stride 1 over (1, 192, 192): 62M inputs indexed by the cut
    # (a 0.4 MB file; it held 1.8 GB and ran for minutes on one region)
    head, fc = _head("p", 192 * 192)
    path = _save(tmp_path / "pool.onnx", [
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[41, 41], pads=[20] * 4), *head],
        fc, (1, 1, 192, 192))
    with pytest.raises(ValueError, match="its windows read 61,968,384 inputs, more than the "
                                         "4,194,304 a slice cuts"):
        load_onnx(path)


def test_a_node_past_the_output_is_left_out_not_a_crash(tmp_path):
    # a Relu reading the logits after the graph's output: the cut deleted the logits after
    # their last reader and died with KeyError
    path = conv_net(tmp_path / "net.onnx", channels=3)
    model = onnx.load(str(path))
    model.graph.node.append(helper.make_node("Relu", ["logits"], ["after"]))
    onnx.save(model, str(tmp_path / "after.onnx"))
    net = load_onnx(tmp_path / "after.onnx")
    assert net.ops[-1].output == net.output == "logits"
    assert [op.name for op in net.ops] == [op.name for op in load_onnx(path).ops]
    s = cut_slice(net, plane_through_image(np.ones(net.input_shape)), (-1, 1, -1, 1))
    assert s.counts[-1] >= 1


@pytest.mark.parametrize("what, value, message", [
    ("w1", np.nan, "its weight is not finite"),
    ("w1", np.inf, "its weight is not finite"),
    ("v1", -1.0, "a negative variance"),
    ("m1", np.nan, "its mean is not finite"),
    ("fc_b", np.inf, "its bias is not finite"),
])
def test_numbers_that_cannot_be_a_networks_are_refused_in_one_line(tmp_path, what, value,
                                                                  message):
    model = onnx.load(str(conv_net(tmp_path / "net.onnx", channels=3)))
    for init in model.graph.initializer:
        if init.name == what:
            a = numpy_helper.to_array(init).copy()
            a.flat[0] = value
            init.CopyFrom(numpy_helper.from_array(a, what))
    onnx.save(model, str(tmp_path / "bad.onnx"))
    with pytest.raises(ValueError, match=message) as err:
        load_onnx(tmp_path / "bad.onnx")
    assert "\n" not in str(err.value)


def test_a_leaky_relu_slope_that_is_not_a_number_is_refused(tmp_path):
    model = onnx.load(str(conv_net(tmp_path / "net.onnx", channels=3, leaky=True)))
    for node in model.graph.node:
        if node.op_type == "LeakyRelu":
            node.attribute[0].f = float("nan")
    onnx.save(model, str(tmp_path / "nan.onnx"))
    with pytest.raises(ValueError, match="its slope is not finite"):
        load_onnx(tmp_path / "nan.onnx")


def test_train_mode_refuses_a_mini_batch_whose_maps_outgrow_the_cap(tmp_path, monkeypatch):
    import bnviz.caps as caps

    net = load_onnx(conv_net(tmp_path / "net.onnx", channels=4, size=16))
    # the maps alive at once: the input (256 units) and the first conv's 4 x 16 x 16 (its
    # output and BN's), then smaller: 8 bytes a unit and an image
    monkeypatch.setattr(caps, "SLICE_MAX_BATCH_BYTES", 64 * 2**10)
    batch = torch.randn(64, 1, 16, 16, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"train mode's statistics of 64 images would hold "
                                         r"\d+ MB .* a mini-batch of at most (\d+) images") as err:
        batch_statistics(net, batch)
    most = int(str(err.value).rsplit("at most ", 1)[1].split()[0])
    assert 2 <= most < 64
    stats = batch_statistics(net, batch[:most])  # what the line says fits
    first = next(op for op in net.ops if op.kind == "bn")
    # its first BN's statistics against torch's own conv on the same images
    conv = next(op for op in net.ops if op.kind == "conv")
    u = torch.nn.functional.conv2d(batch[:most], torch.as_tensor(conv.attrs["weight"]),
                                   None if conv.attrs["bias"] is None else
                                   torch.as_tensor(conv.attrs["bias"]), 1, 1)
    assert np.allclose(stats[first.name][0], u.mean((0, 2, 3)).numpy(), rtol=1e-12, atol=1e-12)
    assert np.allclose(stats[first.name][1], u.var((0, 2, 3), unbiased=False).numpy(),
                       rtol=1e-10, atol=1e-12)


def test_a_max_pool_whose_windows_overlap_many_times_is_refused(tmp_path):
    # 15 x 15 windows at stride 1 on (1, 32, 32): 230 400 inputs read (under the inputs'
    # cap), each input by up to 225 windows; the cut marks a byte per window input and
    # region, so its chunks of regions would hold 225 / 24 times their maps
    head, fc = _head("p", 32 * 32)
    path = _save(tmp_path / "overlap.onnx", [
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[15, 15], pads=[7] * 4), *head],
        fc, (1, 1, 32, 32))
    with pytest.raises(ValueError, match="225 windows read an input, more than the 64 a slice"):
        load_onnx(path)
    # a 3x3 pool at stride 1 (9) and a global one (1) are read
    for k, pads in ((3, 1), (32, 0)):
        head, fc = _head("p", 32 * 32 if k == 3 else 1)
        net = load_onnx(_save(tmp_path / f"ok{k}.onnx", [
            helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[k, k], pads=[pads] * 4),
            *head], fc, (1, 1, 32, 32)))
        assert net.ops[0].kind == "maxpool"


def test_a_max_pool_window_of_more_than_64_by_64_inputs_is_refused(tmp_path):
    # one global window: a region's argmax cells cost superlinearly in its inputs (64 x 64:
    # 0.03 s a region; 128 x 128: 0.3 s, two regions 5.2 s; 256 x 256: 37 s)
    def pool(side):
        head, fc = _head("p", 1)
        return _save(tmp_path / f"global{side}.onnx", [
            helper.make_node("GlobalMaxPool", ["x"], ["p"]), *head], fc, (1, 1, side, side))

    with pytest.raises(ValueError, match="windows of 16,384 inputs, more than the 4,096"):
        load_onnx(pool(128))
    net = load_onnx(pool(64))
    assert net.ops[0].attrs["kernel"] == (64, 64)
