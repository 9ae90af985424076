"""A small ONNX network to slice, written from a fresh clone: an untrained conv net for the 8x8
single-channel digits that ``bnviz slice --data digits`` reads.

    .venv/bin/python docs/examples/onnx_net.py out/net.onnx

Conv(3x3, 1 -> 4) -> BatchNormalization -> Relu -> Conv(3x3, stride 2, 4 -> 4) ->
BatchNormalization -> Relu -> MaxPool(2) -> Flatten -> Gemm (10 logits),
opset 17, written with onnx's own helpers (the ``onnx`` extra): seeded Gaussian weights, and
BN running statistics that are not the identity, so both ``--bn eval`` and ``--bn train``
change the partition.  It is a stand-in for a network of your own: export a trained PyTorch
model with ``torch.onnx.export`` (BN kept, in training mode's graph or eval's) and slice that.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_net(path: Path, channels: int = 4, classes: int = 10, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv_bn_relu(x: str, c_in: int, tag: str, stride: int) -> str:
        w = const(f"w{tag}", rng.normal(0, 1 / np.sqrt(9 * c_in), (channels, c_in, 3, 3)))
        nodes.append(helper.make_node("Conv", [x, w], [f"conv{tag}"], kernel_shape=[3, 3],
                                      pads=[1, 1, 1, 1], strides=[stride, stride]))
        stats = [const(f"{k}{tag}", v) for k, v in (
            ("gamma", rng.uniform(0.5, 1.5, channels)), ("beta", rng.normal(0, 0.2, channels)),
            ("mean", rng.normal(0, 0.3, channels)), ("var", rng.uniform(0.5, 2.0, channels)))]
        nodes.append(helper.make_node("BatchNormalization", [f"conv{tag}", *stats],
                                      [f"bn{tag}"], epsilon=1e-5))
        nodes.append(helper.make_node("Relu", [f"bn{tag}"], [f"relu{tag}"]))
        return f"relu{tag}"

    x = conv_bn_relu("image", 1, "1", stride=1)
    x = conv_bn_relu(x, channels, "2", stride=2)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("Flatten", ["pool"], ["flat"], axis=1))
    w = const("fc_w", rng.normal(0, 1, (classes, channels * 2 * 2)))
    b = const("fc_b", rng.normal(0, 0.1, classes))
    nodes.append(helper.make_node("Gemm", ["flat", w, b], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes, "digits-net",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: onnx_net.py OUT.onnx")
    print(conv_net(Path(sys.argv[1])))
