"""An image network as the slice engine sees it: a list of operations in the order a forward
pass runs them (:class:`SliceNet`), built from an ONNX file (:mod:`bnviz.slices.onnx_import`)
or from bnviz's own architectures (:mod:`bnviz.slices.torch_import`), and its float64 forward.

The operations are the ones whose restriction to a plane keeps a network piecewise affine in
the plane's coordinates: the affine ones (``conv``, ``bn`` with fixed statistics, ``bias``,
``avgpool``, ``gap`` global average pooling, ``add`` for residual connections, ``flatten``,
``linear``) and the two whose switches are boundaries of the partition (``relu`` with its
negative slope: ReLU, leaky ReLU; ``maxpool``: its argmax).  Every affine operation is split
into its linear part and its bias (:func:`linear_part`, :func:`bias_of`), so that one function
applies it to images (the forward pass) and to the affine maps of a region (the slice engine:
the linear part to the three coefficient planes d/da, d/db, offset; the bias to the offset).

BN (BN paper eq. 3-4) runs in one of two modes: ``eval`` with the running statistics, ``train``
with the statistics of a given mini-batch, computed layer by layer with the earlier layers in
train mode too (:func:`batch_statistics`: the mean and the BIASED variance,
docs/conventions.md).  Either
way the network the slice cuts is affine in BN's input, h = gamma (u - mu) / sigma + beta with
sigma = sqrt(var + eps) (floored as :func:`bnviz.core.bn.floored_sigma` floors every sigma).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from bnviz.blas import times_transposed
from bnviz.core.bn import batch_moments, floored_sigma
from bnviz.slices.conv_dense import conv_out_shape, dense_matrix
from bnviz.slices.conv_products import banded_product, channel_product, dense_form, plan_forms

__all__ = ["AFFINE_KINDS", "BN_MODES", "NONLINEAR_KINDS", "Op", "SliceNet", "batch_statistics",
           "bias_of", "check_size", "conv_matrix", "fold_bn", "forward", "linear_part",
           "max_pool", "plan_matrices", "tensor_shapes"]

AFFINE_KINDS = ("conv", "bn", "bias", "avgpool", "gap", "add", "flatten", "linear")
NONLINEAR_KINDS = ("relu", "maxpool")
BN_MODES = ("eval", "train")

#: BN statistics of one mini-batch: the op's name -> (mean, biased variance), per channel.
Statistics = Mapping[str, tuple[np.ndarray, np.ndarray]]


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
        """Every tensor's per-image shape (one float64 forward of a zero image)."""
        return {k: tuple(v.shape[1:]) for k, v in
                forward(self, torch.zeros((1, *self.input_shape), dtype=torch.float64),
                        keep=True).items()}


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


def tensor_shapes(net: SliceNet, input_shape: tuple[int, ...] | None = None
                  ) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape per image, by name, from the input's (``input_shape``, by default
    the network's) by arithmetic alone: one line (ValueError) for an op its input does not
    fit."""
    shapes = {net.input: tuple(input_shape or net.input_shape)}
    for op in net.ops:
        y = _out_shape(op, [shapes[i] for i in op.inputs])
        if min(y, default=1) < 1:
            raise ValueError(f"{op.name}: an output of shape {y} from inputs "
                             f"{[shapes[i] for i in op.inputs]}")
        shapes[op.output] = y
    return shapes


def plan_matrices(net: SliceNet, bands: bool, input_shape: tuple[int, ...] | None = None,
                  budget: int | None = None) -> int:
    """Choose every convolution's form before any runs, its matrices under one budget for
    the network (:data:`bnviz.caps.SLICE_MATRIX_BYTES`, or ``budget``;
    :func:`bnviz.slices.conv_products.plan_forms`); the bytes counted.  Every forward and cut
    plans first, so that no upload's convolutions build more than the budget between them."""
    from bnviz.caps import SLICE_MATRIX_BYTES

    shapes = tensor_shapes(net, input_shape)
    return plan_forms([(op.attrs, shapes[op.inputs[0]]) for op in net.ops
                       if op.kind == "conv" and not _pointwise(op)], bands,
                      SLICE_MATRIX_BYTES if budget is None else budget)


def _out_shape(op: Op, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
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


def _bn_scale_shift(op: Op, stats: Statistics | None) -> tuple[np.ndarray, np.ndarray]:
    """BN as h = scale * u + shift, with the running or the given batch's statistics."""
    a = op.attrs
    mean, var = stats.get(op.name, (a["mean"], a["var"])) if stats is not None \
        else (a["mean"], a["var"])
    mean_t = torch.as_tensor(mean, dtype=torch.float64)
    sigma = floored_sigma(mean_t, torch.as_tensor(var, dtype=torch.float64) + a["eps"]).numpy()
    scale = a["gamma"] / sigma
    return scale, a["beta"] - scale * mean


def _channel(v: np.ndarray | torch.Tensor, ndim: int, like: torch.Tensor) -> torch.Tensor:
    """A per-channel vector shaped to broadcast over (N, C, ...) of ``ndim`` dims."""
    return torch.as_tensor(v, dtype=like.dtype, device=like.device).reshape(
        1, -1, *([1] * (ndim - 2)))


def max_pool(op: Op, x: torch.Tensor, return_indices: bool = False) -> Any:
    """Max pooling as torch counts its windows (padding never wins; asymmetric padding
    padded first with -inf); with ``return_indices`` also each output's argmax, as an index
    into the input's H x W (the padded one's when the padding is asymmetric)."""
    a = op.attrs
    t, left, b, r = a["pads"]
    if (t, left) != (b, r):
        x = F.pad(x, (left, r, t, b), value=-torch.inf)
        t = left = 0
    return F.max_pool2d(x, a["kernel"], a["stride"], (t, left), 1, a.get("ceil", False),
                        return_indices=return_indices)


def linear_part(op: Op, xs: list[torch.Tensor], stats: Statistics | None = None) -> torch.Tensor:
    """The linear part of an affine op applied to a batch (the first dim is the batch)."""
    a, x = op.attrs, xs[0]
    if op.kind == "conv" and _pointwise(op):
        # a 1x1 convolution is one product over the channels at every pixel: as one BLAS
        # product on the pixels' rows, 4-10x faster than conv2d's float64 path (issue 45)
        return channel_product(x, a["weight"][:, :, 0, 0])
    if op.kind == "conv":
        # small maps (ResNet9's 4x4, 2x2 and 1x1 stages): BLAS products (numpy's on a CPU:
        # bnviz.blas) beat conv2d's float64 path (bnviz.slices.conv_products)
        form = dense_form(a, tuple(x.shape[1:]), bands=x.device.type == "cpu")
        if form == "bands":
            return banded_product(x, a)
        if form == "dense":
            y = times_transposed(x.reshape(x.shape[0], -1), conv_matrix(op, tuple(x.shape[1:])))
            return y.reshape(x.shape[0], *conv_out_shape(a, tuple(x.shape[1:])))
        return _conv(op, x)
    if op.kind == "bn":
        return x * _channel(_bn_scale_shift(op, stats)[0], x.ndim, x)
    if op.kind == "bias":
        return x.clone()  # a new tensor: the engine adds the bias to the result in place
    if op.kind == "avgpool":
        t, left, b, r = a["pads"]
        if (t, left) != (b, r):
            raise ValueError(f"{op.name}: asymmetric average-pool padding is not supported")
        return F.avg_pool2d(x, a["kernel"], a["stride"], (t, left), a.get("ceil", False),
                            a["count_include_pad"])
    if op.kind == "gap":
        return x.mean(dim=(2, 3), keepdim=True)
    if op.kind == "add":
        return x + xs[1]
    if op.kind == "flatten":
        return x.reshape(x.shape[0], -1)
    if op.kind == "linear":
        return times_transposed(x, a["weight"])
    raise ValueError(f"{op.name}: {op.kind} is not affine")


def _pointwise(op: Op) -> bool:
    """Whether the conv ``op`` is a plain 1x1 convolution (stride 1, no padding, one group)."""
    a = op.attrs
    return a["weight"].shape[2:] == (1, 1) and tuple(a["stride"]) == (1, 1) and \
        not any(a["pads"]) and a["groups"] == 1


def _conv(op: Op, x: torch.Tensor) -> torch.Tensor:
    """The convolution without its bias (asymmetric padding padded first)."""
    a = op.attrs
    t, left, b, r = a["pads"]
    if (t, left) != (b, r):
        x = F.pad(x, (left, r, t, b))
        t = left = 0
    w = torch.as_tensor(a["weight"], dtype=x.dtype, device=x.device)
    return F.conv2d(x, w, None, a["stride"], (t, left), a["dilation"], a["groups"])


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


def conv_matrix(op: Op, shape: tuple[int, ...]) -> np.ndarray:
    """The convolution ``op`` on inputs of ``shape`` as one dense matrix, kept on the op
    (:func:`bnviz.slices.conv_dense.dense_matrix`)."""
    return dense_matrix(op.attrs, shape)


def bias_of(op: Op, shape: tuple[int, ...], stats: Statistics | None = None
            ) -> np.ndarray | None:
    """The constant an affine op adds, shaped to broadcast over one output of ``shape``
    (None: nothing)."""
    a = op.attrs
    if op.kind == "conv" and a.get("bias") is not None:
        return a["bias"].reshape(-1, 1, 1)
    if op.kind == "bn":
        return _bn_scale_shift(op, stats)[1].reshape(-1, *([1] * (len(shape) - 1)))
    if op.kind == "bias":
        b = a["bias"]
        if b.size not in (1, shape[0]):
            raise ValueError(f"{op.name} adds a constant of shape "
                             f"{a.get('raw_shape', b.shape)} to {shape}: not per channel")
        return b.reshape(-1, *([1] * (len(shape) - 1)))
    if op.kind == "linear" and a.get("bias") is not None:
        return a["bias"]
    return None


def _apply(op: Op, xs: list[torch.Tensor], stats: Statistics | None) -> torch.Tensor:
    """One op on a batch of images."""
    if op.kind == "relu":
        slope = op.attrs["slope"]
        return F.relu(xs[0]) if slope == 0 else F.leaky_relu(xs[0], slope)
    if op.kind == "maxpool":
        return max_pool(op, xs[0])
    y = linear_part(op, xs, stats)
    bias = bias_of(op, tuple(y.shape[1:]), stats)
    if bias is not None:
        y = y + torch.as_tensor(bias, dtype=y.dtype, device=y.device)
    return y


def forward(net: SliceNet, x: torch.Tensor, stats: Statistics | None = None,
            keep: bool = False) -> Any:
    """The network on images ``x`` (N, C, H, W) in ``x``'s dtype, BN with the running
    statistics or ``stats``: the logits, or (``keep``) every tensor by name."""
    plan_matrices(net, x.device.type == "cpu", tuple(x.shape[1:]))
    values = {net.input: x}
    for op in net.ops:
        values[op.output] = _apply(op, [values[i] for i in op.inputs], stats)
    return values if keep else values[net.output]


@torch.no_grad()
def batch_statistics(net: SliceNet, batch: torch.Tensor) -> dict[str, tuple[np.ndarray,
                                                                              np.ndarray]]:
    """Train mode's BN statistics for ``batch`` (N, C, H, W): each BN layer's mean and biased
    variance over the batch and its spatial positions (eq. 3), with every earlier BN layer
    normalising by its own batch statistics, as a network in train mode does."""
    if batch.shape[0] < 2:
        raise ValueError("train mode's BN statistics need a batch of at least 2 images")
    stats: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    plan_matrices(net, batch.device.type == "cpu", tuple(batch.shape[1:]))
    values = {net.input: batch.to(torch.float64)}
    for op in net.ops:
        xs = [values[i] for i in op.inputs]
        if op.kind == "bn" and not op.attrs.get("fixed", False):
            dims = [0, *range(2, xs[0].ndim)]
            mean, var = batch_moments(xs[0], dims)
            stats[op.name] = (mean.cpu().numpy(), var.cpu().numpy())
        values[op.output] = _apply(op, xs, stats)
    return stats


def fold_bn(net: SliceNet, stats: Statistics | None = None) -> SliceNet:
    """The same network with every BN whose input is a convolution's output (read by the BN
    alone) folded into that convolution (weight * gamma / sigma, bias shifted), BN with the
    running statistics or ``stats``: one pass over every region's maps less per BN layer.
    The function is the same; only float64 rounding differs."""
    readers: dict[str, int] = {}
    for op in net.ops:
        for name in op.inputs:
            readers[name] = readers.get(name, 0) + 1
    producer = {op.output: i for i, op in enumerate(net.ops)}
    ops: list[Op | None] = list(net.ops)
    for i, op in enumerate(net.ops):
        if op.kind != "bn":
            continue
        j = producer.get(op.inputs[0])
        conv = ops[j] if j is not None else None
        if conv is None or conv.kind != "conv" or readers.get(conv.output, 0) != 1 \
                or conv.attrs["groups"] != 1:
            continue
        scale, shift = _bn_scale_shift(op, stats)
        bias = conv.attrs.get("bias")
        attrs = {k: v for k, v in conv.attrs.items() if k != "_dense"}
        attrs["weight"] = conv.attrs["weight"] * scale[:, None, None, None]
        attrs["bias"] = shift + scale * (bias if bias is not None else 0.0)
        ops[j] = None
        ops[i] = Op("conv", op.name, conv.inputs, op.output, attrs)
    return SliceNet(tuple(o for o in ops if o is not None), net.input, net.output,
                    net.input_shape, net.source)
