"""ONNX files (opset >= 13) as slice networks: read with onnx's protobuf parser, never
executed and never unpickled.

Supported operators: Conv, BatchNormalization, Relu, LeakyRelu, MaxPool, AveragePool,
GlobalAveragePool, GlobalMaxPool, Add, Gemm, MatMul (with a constant matrix), Flatten,
Reshape (to a constant (N, -1) shape), Identity and Dropout (inference: the identity), and
Softmax or LogSoftmax as the output (the same argmax and the same regions: read as the
logits).  Every
weight must be an initializer or a Constant, with its data inside the file: every tensor is
checked before any is read (:mod:`bnviz.slices.onnx_tensors`: external data anywhere is
refused, and so are declared sizes over ``BNVIZ_UPLOAD_MAX_MB``).  Anything else is refused
in one line naming the operator; nothing of the file is kept then, and no message quotes a
tensor's values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from bnviz.caps import SLICE_MAX_FILE_BYTES
from bnviz.slices.graph import Op, SliceNet, forward
from bnviz.slices.onnx_tensors import check_tensors
from bnviz.slices.slice_net import check_size, tensor_shapes

__all__ = ["MIN_OPSET", "SUPPORTED", "load_onnx"]

MIN_OPSET = 13
SUPPORTED = ("Conv", "BatchNormalization", "Relu", "LeakyRelu", "MaxPool", "AveragePool",
             "GlobalAveragePool", "GlobalMaxPool", "Add", "Gemm", "MatMul", "Flatten",
             "Reshape", "Identity", "Dropout", "Constant", "Softmax", "LogSoftmax")


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ValueError("reading ONNX files needs the onnx package: pip install "
                         "'bnviz[onnx]'") from None
    return onnx


def _pads(attrs: dict[str, Any], name: str) -> tuple[int, int, int, int]:
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET", b"VALID", "VALID"):
        raise ValueError(f"{name}: auto_pad {attrs['auto_pad']!r} is not supported; export "
                         "with explicit pads")
    p = list(attrs.get("pads", [0, 0, 0, 0]))
    if len(p) != 4:
        raise ValueError(f"{name}: only 2D images are supported")
    return (int(p[0]), int(p[1]), int(p[2]), int(p[3]))


def _pair(v: Any, default: int) -> tuple[int, int]:
    v = list(v) if v is not None else [default, default]
    if len(v) != 2:
        raise ValueError("only 2D images are supported")
    return (int(v[0]), int(v[1]))


def _load(path: Path) -> SliceNet:
    onnx = _onnx()
    from onnx import numpy_helper

    try:
        size = Path(path).stat().st_size
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    if size > SLICE_MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size / 2**20:.0f} MB, over the "
                         f"{SLICE_MAX_FILE_BYTES // 2**20} MB read for a slice")
    try:
        model = onnx.load_model(str(path), load_external_data=False)
    except Exception as exc:  # the parser's many errors: one line
        raise ValueError(f"{path}: not an ONNX model ({str(exc).splitlines()[0][:100]})"
                         ) from None
    try:  # every tensor, before any is read: none may name another file (issue 42)
        check_tensors(model)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    try:
        onnx.checker.check_model(model)
    except Exception as exc:  # the checker's many errors: one line
        raise ValueError(f"{path}: not an ONNX model ({str(exc).splitlines()[0][:100]})"
                         ) from None
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                default=0)
    if opset < MIN_OPSET:
        raise ValueError(f"{path}: opset {opset}; bnviz reads ONNX opset >= {MIN_OPSET}")
    g = model.graph
    unsupported = sorted({n.op_type for n in g.node if n.op_type not in SUPPORTED
                          or n.domain not in ("", "ai.onnx")})
    if unsupported:
        raise ValueError(f"{path}: operator {', '.join(unsupported)} is not supported (bnviz "
                         f"slices {', '.join(s for s in SUPPORTED if s != 'Constant')})")
    consts = {t.name: numpy_helper.to_array(t).astype(np.float64)
              if t.data_type in (1, 10, 11) else numpy_helper.to_array(t)
              for t in g.initializer}
    inputs = [i for i in g.input if i.name not in consts]
    if len(inputs) != 1 or len(g.output) != 1:
        raise ValueError(f"{path}: the network must have one image input and one output")
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) != 4 or not all(d > 0 for d in dims[1:]):
        raise ValueError(f"{path}: the input must be an image (N, C, H, W) of fixed C, H, W")
    ops: list[Op] = []
    alias: dict[str, str] = {}

    def src(name: str) -> str:
        return alias.get(name, name)

    for k, node in enumerate(g.node):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        name = node.name or node.output[0] or f"{node.op_type.lower()}{k}"
        ins = [src(i) for i in node.input if i]
        out = node.output[0]

        def const(i: int, ins: list[str] = ins, name: str = name) -> np.ndarray:
            key = ins[i]
            if key not in consts:
                raise ValueError(f"{path}: {name} needs a constant input {i} (an "
                                 "initializer), not a computed one")
            return consts[key]

        kind = node.op_type
        if kind == "Constant":
            consts[out] = numpy_helper.to_array(attrs["value"]).astype(np.float64)
            continue
        if kind in ("Identity", "Dropout"):
            alias[out] = ins[0]
            continue
        if kind in ("Softmax", "LogSoftmax"):
            # strictly increasing in each logit given the others' order: the same argmax, and
            # after the last affine layer, so no region changes; only as the output itself
            if out != g.output[0].name or int(attrs.get("axis", -1)) not in (-1, 1):
                raise ValueError(f"{path}: {name}: {kind} is read only at the output, over "
                                 "the classes")
            alias[out] = ins[0]
            continue
        if kind == "Conv":
            w = const(1)
            ops.append(Op("conv", name, (ins[0],), out, {
                "weight": w, "bias": const(2) if len(ins) > 2 else None,
                "stride": _pair(attrs.get("strides"), 1), "pads": _pads(attrs, name),
                "dilation": _pair(attrs.get("dilations"), 1),
                "groups": int(attrs.get("group", 1))}))
        elif kind == "BatchNormalization":
            if attrs.get("training_mode", 0):
                raise ValueError(f"{path}: {name} is exported in training mode; export the "
                                 "network in eval mode")
            ops.append(Op("bn", name, (ins[0],), out, {
                "gamma": const(1), "beta": const(2), "mean": const(3), "var": const(4),
                "eps": float(attrs.get("epsilon", 1e-5))}))
        elif kind in ("Relu", "LeakyRelu"):
            slope = 0.0 if kind == "Relu" else float(attrs.get("alpha", 0.01))
            ops.append(Op("relu", name, (ins[0],), out, {"slope": slope}))
        elif kind in ("MaxPool", "AveragePool"):
            if len(node.output) > 1 and node.output[1]:
                raise ValueError(f"{path}: {name}: max pooling's indices output is not supported")
            kernel = _pair(attrs.get("kernel_shape"), 1)
            if kind == "MaxPool" and _pair(attrs.get("dilations"), 1) != (1, 1):
                raise ValueError(f"{path}: {name}: dilated max pooling is not supported")
            a = {"kernel": kernel, "stride": _pair(attrs.get("strides"), 1),
                 "pads": _pads(attrs, name), "ceil": bool(attrs.get("ceil_mode", 0))}
            if kind == "AveragePool":
                a["count_include_pad"] = bool(attrs.get("count_include_pad", 0))
            ops.append(Op("maxpool" if kind == "MaxPool" else "avgpool", name, (ins[0],), out,
                          a))
        elif kind == "GlobalAveragePool":
            ops.append(Op("gap", name, (ins[0],), out))
        elif kind == "GlobalMaxPool":
            ops.append(Op("maxpool", name, (ins[0],), out, {"global": True}))
        elif kind == "Add":
            if any(i in consts for i in ins):
                b = const(1) if ins[1] in consts else const(0)
                x = ins[0] if ins[1] in consts else ins[1]
                ops.append(Op("bias", name, (x,), out, {"bias": b.reshape(-1),
                                                        "raw_shape": tuple(b.shape)}))
            else:
                ops.append(Op("add", name, (ins[0], ins[1]), out))
        elif kind in ("Flatten", "Reshape"):
            if kind == "Flatten" and int(attrs.get("axis", 1)) != 1:
                raise ValueError(f"{path}: {name}: only Flatten with axis 1 is supported")
            features = None
            if kind == "Reshape":
                shape = const(1).astype(np.int64).tolist()
                batch_first = len(shape) == 2 and shape[0] in (-1, 0, 1)
                if not batch_first or not (shape[1] == -1 or shape[1] > 0):
                    raise ValueError(f"{path}: {name}: only a Reshape to (N, -1) is supported")
                features = shape[1] if shape[1] > 0 else None
            ops.append(Op("flatten", name, (ins[0],), out, {"features": features}))
        elif kind in ("Gemm", "MatMul"):
            w = const(1)
            if kind == "Gemm":
                if attrs.get("transA", 0):
                    raise ValueError(f"{path}: {name}: Gemm with transA is not supported")
                w = w if attrs.get("transB", 0) else w.T
                w = w * float(attrs.get("alpha", 1.0))
                b = const(2) * float(attrs.get("beta", 1.0)) if len(ins) > 2 else None
            else:
                w, b = w.T, None
            ops.append(Op("linear", name, (ins[0],), out, {
                "weight": np.ascontiguousarray(w), "bias": None if b is None else b.reshape(-1)}))
    net = SliceNet(tuple(ops), inputs[0].name, src(g.output[0].name), tuple(dims[1:]),
                   str(path))
    return _resolved(net, path)


def load_onnx(path: Path) -> SliceNet:
    """The slice network of the ONNX file at ``path`` (module docstring); ValueError with one
    line for a file that is not ONNX, holds an operator bnviz does not support, or does not
    fit (nothing of it is kept)."""
    try:
        return _load(path)
    except ValueError:
        raise
    except Exception as exc:  # a malformed attribute, tensor type, ...: one line
        raise ValueError(f"{path}: the network cannot be read ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:80] if str(exc) else 'malformed'})"
                         ) from None


def _resolved(net: SliceNet, path: Path) -> SliceNet:
    """Only the ops the output reads (a node past the output, or beside it, is left out);
    global max pools get their kernel (the input's H, W, by arithmetic); the sizes checked
    (:func:`bnviz.slices.slice_net.check_size`) before one float64 forward checks the rest (a
    bias of the wrong length: one line)."""
    needed, kept = {net.output}, []
    for op in reversed(net.ops):
        if op.output in needed:
            kept.append(op)
            needed.update(op.inputs)
    ops = kept[::-1]
    try:
        for i, op in enumerate(ops):
            if op.kind == "maxpool" and op.attrs.get("global"):
                hw = tensor_shapes(SliceNet(tuple(ops[:i]), net.input, op.inputs[0],
                                            net.input_shape))[op.inputs[0]][1:]
                ops[i] = Op("maxpool", op.name, op.inputs, op.output,
                            {"kernel": hw, "stride": hw, "pads": (0, 0, 0, 0)})
        out = SliceNet(tuple(ops), net.input, net.output, net.input_shape, net.source)
        check_size(out)
    except ValueError as exc:  # too large, or its numbers cannot be a network's: one line
        raise ValueError(f"{path}: {str(exc).splitlines()[0][:160]}") from None
    try:
        zero = torch.zeros((1, *net.input_shape), dtype=torch.float64)
        shapes = {k: tuple(v.shape[1:]) for k, v in forward(out, zero, keep=True).items()}
    except (RuntimeError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"{path}: the network does not run on {net.input_shape} images "
                         f"({str(exc).splitlines()[0][:100]})") from None
    if len(shapes[out.output]) != 1:
        raise ValueError(f"{path}: the output must be a vector of logits per image")
    for op in out.ops:
        given = shapes[op.inputs[0]]
        if op.kind == "bias" and not _per_channel(op.attrs["raw_shape"], given):
            raise ValueError(f"{path}: {op.name} adds a constant of shape "
                             f"{op.attrs['raw_shape']} to {given}: only a constant per "
                             "channel (or one number) is supported")
        if op.kind == "flatten" and op.attrs.get("features") not in (None, int(np.prod(given))):
            raise ValueError(f"{path}: {op.name} reshapes {given} to another number of "
                             "features")
    return out


def _per_channel(raw: tuple[int, ...], given: tuple[int, ...]) -> bool:
    """A constant added to a tensor of per-image shape ``given`` is a bias per channel: one
    number, or (C, 1, 1) / (C,) for a vector, leading 1s aside."""
    shape = list(raw)
    while shape and shape[0] == 1 and len(shape) > len(given):
        shape.pop(0)
    if int(np.prod(raw)) == 1:
        return True
    return tuple(shape) == (given[0], *([1] * (len(given) - 1)))
