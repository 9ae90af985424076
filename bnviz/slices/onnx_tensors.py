"""Every tensor an ONNX file holds, checked before any of them is read (issue 42).

An ONNX tensor may keep its bytes outside the file (``data_location = EXTERNAL`` with a
``location``): onnx's ``numpy_helper.to_array`` then reads that path, relative to the
process's working folder when no base folder is given. Refusing external data on the graph's
initializers alone left a ``Constant`` node's attribute free to read any file of the server
(its bytes came back in a later message). So the whole parsed protobuf is walked first:
the model's graph and its training graphs, each graph's initializers and sparse initializers,
every node's attributes (tensor, tensors, sparse tensor(s), graph, graphs: the bodies of If,
Loop and Scan), and the local functions' nodes, whatever type an attribute claims. Any tensor
with data outside the file, a sparse tensor, a segment, or an element type bnviz does not
read refuses the file in one line naming where it is; nothing is resolved against any folder.

The declared sizes (the product of the dims times the element's bytes, from the header alone)
are summed against ``BNVIZ_UPLOAD_MAX_MB`` before any tensor is materialised, as an uploaded
safetensors file's parameters are (:func:`bnviz.slices.torch_import.load_network`).

The messages name tensors, nodes, operators and shapes, never a tensor's values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bnviz.caps import SLICE_MAX_GRAPH_DEPTH
from bnviz.config import setting

__all__ = ["READ_TYPES", "check_tensors", "declared_bytes"]

#: Element types bnviz reads (TensorProto's codes): float, float16, bfloat16 and double for
#: weights, int32 and int64 for shapes and axes, bool, int8 and uint8 (a Dropout's
#: training_mode, say); their bytes per element. Strings, complex and float8 are refused.
READ_TYPES = {1: 4, 10: 2, 16: 2, 11: 8, 6: 4, 7: 8, 9: 1, 2: 1, 3: 1}
#: AttributeProto's types that hold tensors or graphs (onnx.AttributeProto.AttributeType).
_TENSOR, _GRAPH, _TENSORS, _GRAPHS, _SPARSE, _SPARSES = 4, 5, 9, 10, 11, 12


def _label(text: str) -> str:
    """A name from the file, for one line: printable, short."""
    text = "".join(c if c.isprintable() else "?" for c in str(text)[:40])
    return repr(text)


def _graphs(model: Any) -> Iterator[tuple[Any, str]]:
    """The model's graphs that are not node attributes: its main graph and its training
    graphs."""
    yield model.graph, "the graph"
    for k, info in enumerate(model.training_info):
        if info.HasField("initialization"):
            yield info.initialization, f"training graph {k}"
        if info.HasField("algorithm"):
            yield info.algorithm, f"training algorithm {k}"


def _node_tensors(node: Any, where: str, depth: int) -> Iterator[tuple[Any, str]]:
    """The tensors of one node's attributes, and those of the graphs they hold (recursive),
    whatever each attribute's declared type says."""
    what = f"node {_label(node.name or node.op_type)} ({_label(node.op_type)[1:-1]})"
    for attr in node.attribute:
        at = f"{what}, attribute {_label(attr.name)}"
        if attr.HasField("sparse_tensor") or len(attr.sparse_tensors) or \
                attr.type in (_SPARSE, _SPARSES):
            raise ValueError(f"{at}: sparse tensors are not read")
        if attr.HasField("t"):
            yield attr.t, at
        for t in attr.tensors:
            yield t, at
        subgraphs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
        for g in subgraphs:
            yield from _graph_tensors(g, f"{at}'s graph", depth + 1)


def _graph_tensors(graph: Any, where: str, depth: int = 0) -> Iterator[tuple[Any, str]]:
    if depth > SLICE_MAX_GRAPH_DEPTH:
        raise ValueError(f"{where}: graphs nested over {SLICE_MAX_GRAPH_DEPTH} deep")
    if len(graph.sparse_initializer):
        raise ValueError(f"{where}: sparse initializer "
                         f"{_label(graph.sparse_initializer[0].values.name)} is not read")
    for t in graph.initializer:
        yield t, f"{where}, initializer {_label(t.name)}"
    for node in graph.node:
        yield from _node_tensors(node, where, depth)


def _all_tensors(model: Any) -> Iterator[tuple[Any, str]]:
    for graph, where in _graphs(model):
        yield from _graph_tensors(graph, where)
    for function in model.functions:
        for node in function.node:
            yield from _node_tensors(node, f"function {_label(function.name)}", 1)


def declared_bytes(tensor: Any, where: str) -> int:
    """The bytes a tensor declares (its dims and element type), from the header alone;
    ValueError for what bnviz does not read (the module docstring)."""
    if tensor.data_location == 1 or len(tensor.external_data):  # 1: TensorProto.EXTERNAL
        raise ValueError(f"{where}: external data is not accepted for uploads (its data "
                         "would be read from another file): save the model with its weights "
                         "inside the file")
    if tensor.HasField("segment"):
        raise ValueError(f"{where}: a segmented tensor is not read")
    if tensor.data_type not in READ_TYPES:
        raise ValueError(f"{where}: element type {tensor.data_type} is not read (bnviz reads "
                         "floating point, integer and boolean tensors)")
    count = 1
    for d in tensor.dims:
        if d < 0:
            raise ValueError(f"{where}: a negative dimension")
        count *= d
    return count * READ_TYPES[tensor.data_type]


def check_tensors(model: Any) -> int:
    """Walk every tensor of a parsed ONNX model (module docstring) before any is read;
    return their declared bytes. ValueError (one line) for external data anywhere, a tensor
    bnviz does not read, or declared sizes over ``BNVIZ_UPLOAD_MAX_MB``."""
    cap = setting("BNVIZ_UPLOAD_MAX_MB") * 2**20
    total = 0
    for tensor, where in _all_tensors(model):
        total += declared_bytes(tensor, where)
        if total > cap:
            raise ValueError(f"its tensors declare over {total / 2**20:,.0f} MB, "
                             f"over the {cap / 2**20:,.0f} MB a network may hold "
                             "(BNVIZ_UPLOAD_MAX_MB)")
    return total
