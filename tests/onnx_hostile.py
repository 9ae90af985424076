"""ONNX files whose tensors keep their data outside the file, in each place a protobuf can
hold a tensor: the hostile uploads of issue 42 (tests/slices/test_upload_limits.py in
process, tests/server/test_hostile_uploads.py over HTTP)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CANARY = b"BNVIZ-CANARY-77!"  # 16 bytes: two int64s, as a Reshape's shape would read them
CANARY_NUMBERS = [str(v) for v in np.frombuffer(CANARY, np.int64)]


def declared_only(name: str, dtype: int, dims) -> TensorProto:
    """A tensor's header without its data (what a crafted file may say)."""
    t = TensorProto(name=name, data_type=dtype)
    t.dims.extend(dims)
    return t


def external(name: str, location: str, dims=(2,), dtype=TensorProto.INT64) -> TensorProto:
    t = declared_only(name, dtype, dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "16")):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def reshape_net(shape_node: onnx.NodeProto | None, inits=(), extra_nodes=(), **model_kw):
    """x -> Relu -> Reshape(shape) -> Gemm: the issue's reader, whose refusal named the
    shape it was given."""
    w = numpy_helper.from_array(np.ones((3, 16), np.float32), "w")
    nodes = [*extra_nodes, *([shape_node] if shape_node is not None else []),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["f"]),
             helper.make_node("Gemm", ["f", "w"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], [*inits, w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], **model_kw)


def _branch(location: str) -> onnx.GraphProto:
    node = helper.make_node("Constant", [], ["c"], value=external("v", location))
    return helper.make_graph([node], "branch", [],
                             [helper.make_tensor_value_info("c", TensorProto.INT64, [2])])


def models(location: str) -> dict[str, onnx.ModelProto]:
    """The same reader with the external tensor in each place a protobuf can hold one."""
    const = helper.make_node("Constant", [], ["shape"], value=external("v", location))
    listed = helper.make_node("Constant", [], ["shape"],
                              value=numpy_helper.from_array(np.array([1, -1], np.int64)))
    listed.attribute.add().CopyFrom(helper.make_attribute(
        "extra", [external("v", location)]))
    cond = numpy_helper.from_array(np.array(True), "cond")
    if_node = helper.make_node("If", ["cond"], ["shape"], then_branch=_branch(location),
                               else_branch=_branch(location))
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in
         (("i", TensorProto.INT64, []), ("cond_in", TensorProto.BOOL, []),
          ("c_in", TensorProto.INT64, [2]))],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in
         (("cond_out", TensorProto.BOOL, []), ("c_out", TensorProto.INT64, [2]))],
        [external("hidden", location)])
    body.node.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    start = numpy_helper.from_array(np.array([1, -1], np.int64), "start")
    loop = helper.make_node("Loop", ["", "", "start"], ["shape"], body=body)
    plain = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    training = reshape_net(None, [plain])
    info = training.training_info.add()
    info.initialization.CopyFrom(helper.make_graph([], "init", [], [],
                                                   [external("t", location)]))
    function = reshape_net(None, [plain])
    function.functions.append(helper.make_function(
        "custom", "f", ["a"], ["b"],
        [helper.make_node("Constant", [], ["b"], value=external("v", location))],
        [helper.make_opsetid("", 17)]))
    return {"constant": reshape_net(const), "initializer": reshape_net(
                None, [external("shape", location)]),
            "tensors attribute": reshape_net(listed), "if branch": reshape_net(if_node, [cond]),
            "loop body": reshape_net(loop, [start]), "training graph": training,
            "function": function}
