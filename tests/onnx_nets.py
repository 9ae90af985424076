"""Small ONNX conv nets written with onnx.helper (no exporter): the test networks of the
slice engine.  Weights are seeded Gaussians, BN running statistics random, so every op
matters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_net(path: Path, *, channels: int = 4, size: int = 6, residual: bool = False,
             maxpool: bool = False, leaky: bool = False, stride2: bool = True,
             classes: int = 3, seed: int = 0, extra_op: str | None = None,
             pool: tuple[int, int, int, bool] = (2, 2, 0, False),
             bn_after_act: bool = False) -> Path:
    """Conv(3x3) -> BN -> act [-> Conv(3x3, stride 2) -> BN -> act] [-> residual block]
    [-> BN] [-> MaxPool (kernel, stride, pads, ceil_mode)] -> GlobalAveragePool -> Flatten ->
    Gemm, on (1, size, size) images."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(name: str, a: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(a.astype(np.float32), name))
        return name

    def act(x: str, name: str) -> str:
        if leaky:
            nodes.append(helper.make_node("LeakyRelu", [x], [name], alpha=0.1))
        else:
            nodes.append(helper.make_node("Relu", [x], [name]))
        return name

    def conv_bn(x: str, c_in: int, c_out: int, tag: str, stride: int = 1) -> str:
        w = const(f"w{tag}", rng.normal(0, 1 / np.sqrt(9 * c_in), (c_out, c_in, 3, 3)))
        nodes.append(helper.make_node("Conv", [x, w], [f"c{tag}"], pads=[1, 1, 1, 1],
                                      strides=[stride, stride], kernel_shape=[3, 3]))
        bn = [const(f"{k}{tag}", v) for k, v in (
            ("g", rng.uniform(0.5, 1.5, c_out)), ("b", rng.normal(0, 0.2, c_out)),
            ("m", rng.normal(0, 0.3, c_out)), ("v", rng.uniform(0.5, 2.0, c_out)))]
        nodes.append(helper.make_node("BatchNormalization", [f"c{tag}", *bn], [f"n{tag}"],
                                      epsilon=1e-5))
        return f"n{tag}"

    x = act(conv_bn("image", 1, channels, "1"), "a1")
    if stride2:
        x = act(conv_bn(x, channels, channels, "2", stride=2), "a2")
    if residual:
        y = act(conv_bn(x, channels, channels, "r1"), "ar1")
        y = conv_bn(y, channels, channels, "r2")
        nodes.append(helper.make_node("Add", [x, y], ["sum"]))
        x = act("sum", "ares")
    if bn_after_act:  # a BN that no convolution precedes (not folded)
        bn = [const(f"{k}post", v) for k, v in (
            ("g", rng.uniform(0.5, 1.5, channels)), ("b", rng.normal(0, 0.2, channels)),
            ("m", rng.normal(0.5, 0.3, channels)), ("v", rng.uniform(0.5, 2.0, channels)))]
        nodes.append(helper.make_node("BatchNormalization", [x, *bn], ["post"], epsilon=1e-5))
        x = act("post", "apost")
    if maxpool:
        k, st, p, ceil = pool
        nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[k, k],
                                      strides=[st, st], pads=[p] * 4, ceil_mode=int(ceil)))
        x = "pool"
    if extra_op:
        nodes.append(helper.make_node(extra_op, [x], ["extra"]))
        x = "extra"
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], axis=1))
    w = const("fc_w", rng.normal(0, 1, (classes, channels)))
    b = const("fc_b", rng.normal(0, 0.1, classes))
    nodes.append(helper.make_node("Gemm", ["flat", w, b], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                     ["N", 1, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path
