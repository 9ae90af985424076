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
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from bnviz.blas import times_transposed
from bnviz.core.bn import batch_moments, floored_sigma
from bnviz.slices.conv_dense import conv_out_shape, dense_matrix
from bnviz.slices.conv_products import banded_product, channel_product, dense_form, plan_forms
from bnviz.slices.slice_net import NONLINEAR_KINDS, Op, SliceNet, tensor_shapes

__all__ = ["AFFINE_KINDS", "BN_MODES", "NONLINEAR_KINDS", "Op", "SliceNet", "batch_statistics",
           "bias_of", "conv2d_part", "conv_matrix", "fold_bn", "forward", "linear_part", "max_pool",
           "plan_matrices"]

AFFINE_KINDS = ("conv", "bn", "bias", "avgpool", "gap", "add", "flatten", "linear")
BN_MODES = ("eval", "train")

#: BN statistics of one mini-batch: the op's name -> (mean, biased variance), per channel.
Statistics = Mapping[str, tuple[np.ndarray, np.ndarray]]


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
        return conv2d_part(op, x)
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


def conv2d_part(op: Op, x: torch.Tensor) -> torch.Tensor:
    """The convolution without its bias, by torch's conv2d whatever form the op was planned
    in (asymmetric padding padded first)."""
    a = op.attrs
    t, left, b, r = a["pads"]
    if (t, left) != (b, r):
        x = F.pad(x, (left, r, t, b))
        t = left = 0
    w = torch.as_tensor(a["weight"], dtype=x.dtype, device=x.device)
    return F.conv2d(x, w, None, a["stride"], (t, left), a["dilation"], a["groups"])


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
    normalising by its own batch statistics, as a network in train mode does.  Refused (one
    line) where its maps alive at once would pass :data:`bnviz.caps.SLICE_MAX_BATCH_BYTES`."""
    from bnviz.caps import SLICE_MAX_BATCH_BYTES

    if batch.shape[0] < 2:
        raise ValueError("train mode's BN statistics need a batch of at least 2 images")
    shapes = tensor_shapes(net, tuple(batch.shape[1:]))
    last = {name: i for i, op in enumerate(net.ops) for name in op.inputs}
    live, held = {net.input: int(np.prod(shapes[net.input]))}, 0
    for i, op in enumerate(net.ops):  # the units of the maps alive at once, at the most
        live[op.output] = int(np.prod(shapes[op.output]))
        held = max(held, sum(live.values()))
        live = {k: v for k, v in live.items() if last.get(k, len(net.ops)) > i}
    if 8 * held * batch.shape[0] > SLICE_MAX_BATCH_BYTES:
        raise ValueError(f"train mode's statistics of {batch.shape[0]} images would hold "
                         f"{8 * held * batch.shape[0] / 2**20:,.0f} MB of this network's maps, "
                         f"over the {SLICE_MAX_BATCH_BYTES // 2**20} MB a slice holds: a "
                         f"mini-batch of at most {SLICE_MAX_BATCH_BYTES // (8 * held)} images")
    stats: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    plan_matrices(net, batch.device.type == "cpu", tuple(batch.shape[1:]))
    values = {net.input: batch.to(torch.float64)}
    for i, op in enumerate(net.ops):
        xs = [values[name] for name in op.inputs]
        if op.kind == "bn" and not op.attrs.get("fixed", False):
            dims = [0, *range(2, xs[0].ndim)]
            mean, var = batch_moments(xs[0], dims)
            stats[op.name] = (mean.cpu().numpy(), var.cpu().numpy())
        values[op.output] = _apply(op, xs, stats)
        for name in op.inputs:  # each map freed after its last reader
            if last[name] == i:
                values.pop(name, None)
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
