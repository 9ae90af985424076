"""A network as the slice engine reads it (:class:`Op`, :class:`SliceNet`: its forward and
its linear parts are :mod:`bnviz.slices.graph`'s), its shapes by arithmetic alone
(:func:`tensor_shapes`), and what it may be (:func:`check_size`: bnviz.caps), checked when
it is loaded, before anything runs: shape inference on torch's meta device imports
torch._dynamo and sympy, 2-10 s of a one-shot command, and a forward on an image of a
hostile network's size allocates before any check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bnviz.slices.conv_dense import conv_out_shape

__all__ = ["NONLINEAR_KINDS", "Op", "SliceNet", "check_size", "multiply_adds", "op_out_shape",
           "pool_out_shape", "pool_output_size", "tensor_shapes"]

NONLINEAR_KINDS = ("relu", "maxpool")


@dataclass(frozen=True)
class Op:
    """One operation: its kind, the tensors it reads and the one it writes, its attributes
    (arrays float64; ints as tuples).  ``bn``: mean, var, eps, gamma, beta, fixed
    (statistics that train mode keeps: BN frozen as an initialisation); ``conv``: weight
    (O, I/groups, kh, kw), bias or None, stride, pads (top, left, bottom, right), dilation,
    groups; ``linear``: weight (O, I), bias; ``relu``: slope; ``maxpool`` and ``avgpool``:
    kernel, stride, pads, (avgpool) count_include_pad; ``bias``: bias (C,)."""

    kind: str
    name: str
    inputs: tuple[str, ...]
    output: str
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SliceNet:
    """A classifier of images of ``input_shape`` (C, H, W): ``ops`` in forward order from the
    tensor ``input`` to the logits ``output``."""

    ops: tuple[Op, ...]
    input: str
    output: str
    input_shape: tuple[int, int, int]
    source: str = ""

    @property
    def nonlinear(self) -> list[Op]:
        """The layers whose switches cut the plane, in forward order."""
        return [op for op in self.ops if op.kind in NONLINEAR_KINDS]

    @property
    def bn_ops(self) -> list[Op]:
        return [op for op in self.ops if op.kind == "bn"]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor's per-image shape, by name (:func:`tensor_shapes`)."""
        return tensor_shapes(self)


def check_size(net: SliceNet) -> None:
    """Refuse (one line) a network too large to slice here (bnviz.caps: units of a tensor,
    of all tensors, ops, weights) or with nothing to cut, from the shapes alone: the input's
    and each op's output, propagated without running anything heavy."""
    from bnviz import caps

    if len(net.ops) > caps.SLICE_MAX_OPS:
        raise ValueError(f"{len(net.ops)} operations, over the {caps.SLICE_MAX_OPS} a slice reads")
    if int(np.prod(net.input_shape)) > caps.SLICE_MAX_TENSOR_UNITS:
        raise ValueError(f"images of {net.input_shape} are larger than a slice reads "
                         f"({caps.SLICE_MAX_TENSOR_UNITS} values)")
    for op in net.ops:
        w = op.attrs.get("weight")
        if w is not None and w.shape[0] > caps.SLICE_MAX_TENSOR_UNITS:
            raise ValueError(f"{op.name}: {w.shape[0]} outputs, more than a slice reads")
    weights = sum(op.attrs["weight"].size for op in net.ops if "weight" in op.attrs)
    if weights > caps.SLICE_MAX_WEIGHT_VALUES:
        raise ValueError(f"{weights:,} weights over its ops, more than the "
                         f"{caps.SLICE_MAX_WEIGHT_VALUES:,} a slice reads")
    _check_values(net)
    if not net.nonlinear:
        raise ValueError("the network has no ReLU or max pooling layer: nothing to cut")
    total = 0
    shapes = tensor_shapes(net)
    for op in net.ops:
        y = shapes[op.output]
        n = int(np.prod(y))
        if n > caps.SLICE_MAX_TENSOR_UNITS:
            raise ValueError(f"{op.name}: {n} units per image, more than the "
                             f"{caps.SLICE_MAX_TENSOR_UNITS} a slice reads")
        total += n
        if total > caps.SLICE_MAX_TOTAL_UNITS:
            raise ValueError(f"the network has more than {caps.SLICE_MAX_TOTAL_UNITS} units "
                             "per image: more than a slice reads")
        if op.kind == "maxpool":  # (the cut's windows: bnviz.slices.maxcells.pool_windows)
            kernel = int(np.prod(op.attrs.get("kernel") or shapes[op.inputs[0]][1:]))
            if kernel > caps.SLICE_MAX_POOL_KERNEL:  # (a region's cells: superlinear in it)
                raise ValueError(f"{op.name}: windows of {kernel:,} inputs, more than the "
                                 f"{caps.SLICE_MAX_POOL_KERNEL:,} a slice cuts")
            inputs = n * kernel
            if inputs > caps.SLICE_MAX_POOL_INPUTS:
                raise ValueError(f"{op.name}: its windows read {inputs:,} inputs, more than "
                                 f"the {caps.SLICE_MAX_POOL_INPUTS:,} a slice cuts")
            overlap = inputs / int(np.prod(shapes[op.inputs[0]]))
            if overlap > caps.SLICE_MAX_POOL_OVERLAP:  # (each a byte a region in the cut)
                raise ValueError(f"{op.name}: {overlap:.0f} windows read an input, more than "
                                 f"the {caps.SLICE_MAX_POOL_OVERLAP} a slice cuts")


def tensor_shapes(net: SliceNet, input_shape: tuple[int, ...] | None = None
                  ) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape per image, by name, from the input's (``input_shape``, by default
    the network's) by arithmetic alone: one line (ValueError) for an op its input does not
    fit."""
    shapes = {net.input: tuple(input_shape or net.input_shape)}
    for op in net.ops:
        y = op_out_shape(op, [shapes[i] for i in op.inputs])
        if min(y, default=1) < 1:
            raise ValueError(f"{op.name}: an output of shape {y} from inputs "
                             f"{[shapes[i] for i in op.inputs]}")
        shapes[op.output] = y
    return shapes


def multiply_adds(net: SliceNet) -> int:
    """The multiply-adds of one image's forward through the convolutions and linear layers,
    by the shapes: a region's cut applies them to its three coefficient planes."""
    shapes, total = tensor_shapes(net), 0
    for op in net.ops:
        if op.kind == "conv":
            total += int(np.prod(shapes[op.output])) * int(np.prod(op.attrs["weight"].shape[1:]))
        elif op.kind == "linear":
            total += int(op.attrs["weight"].size)
    return total


def op_out_shape(op: Op, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """One op's output shape (one image's) from its inputs', by arithmetic alone: shape
    inference on torch's meta device imports torch._dynamo and sympy (relu, mean, max_pool2d's
    checks), 2-10 s of a one-shot command (issue 45's fixed cost)."""
    x, w = shapes[0], op.attrs.get("weight")
    if op.kind == "add" and shapes[1] != x:
        raise ValueError(f"{op.name}: adds {shapes[1]} to {x}")
    if op.kind in ("bn", "bias", "relu", "add"):
        return x
    if op.kind == "linear":
        if x != (w.shape[1],):
            raise ValueError(f"{op.name}: {w.shape[1]} inputs, given {x}")
        return (w.shape[0],)
    if op.kind == "conv":
        if len(x) != 3 or x[0] != w.shape[1] * op.attrs["groups"]:
            raise ValueError(f"{op.name}: a convolution of {w.shape[1] * op.attrs['groups']} "
                             f"channels, given {x}")
        return conv_out_shape(op.attrs, x)
    if op.kind in ("maxpool", "avgpool"):
        return pool_out_shape(op, x)
    if op.kind == "gap":
        return (x[0], 1, 1)
    if op.kind == "flatten":
        return (int(np.prod(x)),)
    raise ValueError(f"{op.name}: {op.kind} has no shape rule")


def pool_output_size(n: int, k: int, s: int, p0: int, p1: int, ceil: bool) -> int:
    """Outputs of a pooling along one axis, as torch and ONNX count them: with ``ceil`` a
    last window that would start in the padding is dropped."""
    span = n + p0 + p1 - k
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= n + p0:
        out -= 1
    return out


def pool_out_shape(op: Op, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """The output shape (C, Ho, Wo) of a max or average pooling on inputs (C, H, W), as torch
    and ONNX count windows (asymmetric padding padded first, as :func:`max_pool` does)."""
    c, h, w = shape
    (kh, kw), (sh, sw) = op.attrs["kernel"], op.attrs["stride"]
    top, left, bottom, right = op.attrs["pads"]
    ceil = op.attrs.get("ceil", False)
    if (top, left) != (bottom, right):
        return (c, pool_output_size(h + top + bottom, kh, sh, 0, 0, ceil),
                pool_output_size(w + left + right, kw, sw, 0, 0, ceil))
    return (c, pool_output_size(h, kh, sh, top, bottom, ceil),
            pool_output_size(w, kw, sw, left, right, ceil))


def _check_values(net: SliceNet) -> None:
    """Refuse (one line) a network whose numbers cannot describe one: a weight, bias or BN
    statistic not finite (a diverged training), a negative variance or epsilon, or a leaky
    ReLU's slope not finite; else its cut would draw regions of NaN maps without a word."""
    for op in net.ops:
        for key, v in op.attrs.items():
            if key.startswith("_") or key == "raw_shape" or not isinstance(v, np.ndarray | float):
                continue
            if not np.all(np.isfinite(v)):
                raise ValueError(f"{op.name}: its {key} is not finite")
            if key in ("var", "eps") and np.any(np.asarray(v) < 0):
                raise ValueError(f"{op.name}: a negative {'variance' if key == 'var' else key}")
