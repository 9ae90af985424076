"""bnviz's own image networks (:mod:`bnviz.images.networks`) as slice networks, and their
files: weights plus BN's running statistics in safetensors (never pickle), with the
arguments that rebuild the architecture in the file's metadata.

A job keeps each arm's final network this way (:func:`bnviz.images.saved.save_network`);
``bnviz slice --job``
and the /slice page open it (:func:`load_network`), as does ``--weights F --arch ARCH`` for a
file written elsewhere from the same architecture (the metadata is then read from the
tensors' shapes where it is missing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bnviz.images.networks import BIAS_MODES, Bottleneck, ModeNorm, Residual, build_model
from bnviz.images.saved import BUILD_KEYS
from bnviz.service.guard import strict_json
from bnviz.slices.graph import Op, SliceNet

__all__ = ["load_network", "slice_net"]


#: safetensors' element types by torch's, and which are floating point (a weight of any
#: floating type loads into the module's float32; the other types must match exactly).
_DTYPE_NAMES = {torch.float16: "F16", torch.bfloat16: "BF16", torch.float32: "F32",
                torch.float64: "F64", torch.int64: "I64", torch.int32: "I32", torch.bool: "BOOL"}
_FLOAT_NAMES = frozenset({"F16", "BF16", "F32", "F64"})


def _header(path: Path) -> tuple[dict[str, tuple[tuple[int, ...], str]], dict[str, str]]:
    """The file's tensors (name: shape, element type) and metadata, read from its header
    alone: no tensor's data is read (safetensors maps the file; nothing is touched)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            header = {}
            for k in f.keys():
                part = f.get_slice(k)
                header[k] = (tuple(int(d) for d in part.get_shape()), str(part.get_dtype()))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a safetensors file ({str(exc).splitlines()[0][:80]})"
                         ) from None
    return header, meta


def _read(path: Path, names: list[str]) -> dict[str, torch.Tensor]:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in names}


def _inferred(header: dict[str, tuple[tuple[int, ...], str]], arch: str | None,
              size: int | None) -> dict[str, Any]:
    """Build arguments read from the tensors' shapes, for a file without bnviz's metadata."""
    convs = [v for k, (v, _) in header.items() if len(v) == 4 and k.endswith("weight")]
    linears = [v for k, (v, _) in header.items() if len(v) == 2 and k.endswith("weight")]
    if not convs or not linears or arch is None:
        raise ValueError("the file does not say which network it holds: give --arch and use "
                         "a file of bnviz's architectures")
    norm_keys = {k.rsplit(".", 1)[0] for k in header if k.endswith("running_mean")}
    has_bias = any(f"{n}.bias" in header for n in norm_keys)
    has_weight = any(f"{n}.weight" in header for n in norm_keys)
    mode = "bn" if has_weight or not has_bias else "zero_bias"
    return {"arch": arch, "in_ch": int(convs[0][1]), "classes": int(linears[-1][0]),
            "size": size or 32, "mode": mode, "affine": has_weight,
            "width": int(convs[0][0]) * (1 if arch != "cnn" else 3)}


def load_network(path: Path, arch: str | None = None, size: int | None = None
                 ) -> tuple[nn.Module, dict[str, Any]]:
    """The network in ``path`` (eval mode) and its build arguments; one-line ValueError for a
    file that is not one. Nothing is allocated before the file is known to fit (issue 42: a
    1 KB file declaring a resnet50 of width 256 made a worker allocate gigabytes): its header
    is read, its build arguments checked, the network's parameters costed by the image jobs'
    own count (:func:`bnviz.params.jobcost.network_cost`) against ``BNVIZ_UPLOAD_MAX_MB``,
    the architecture built on the meta device (shapes, no memory) and its names, shapes and
    element types compared with the header's; only then is any tensor read, and the module
    takes the file's tensors as its own (no second copy)."""
    header, meta = _header(path)
    if all(k in meta for k in BUILD_KEYS):
        try:  # an uploaded file's metadata: bnviz's one reader of outside JSON (deep too)
            build = {k: strict_json(meta[k]) for k in BUILD_KEYS}
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}: unreadable metadata ({exc})") from None
    else:
        build = _inferred(header, arch, size)
    if arch is not None and build["arch"] != arch:
        raise ValueError(f"{path} holds a {build['arch']}, not a {arch}")
    _check_build(build, path)
    _check_cost(build, path)
    try:
        with torch.device("meta"):
            shape_only = _build(build)
        state = shape_only.state_dict()
        _check_header(header, state, build, path)
        tensors = _read(path, list(header))
        tensors.update({k: torch.zeros(v.shape, dtype=v.dtype) for k, v in state.items()
                        if k not in tensors})  # (the bool flags a file need not keep)
        tensors = {k: v.to(state[k].dtype) if v.dtype != state[k].dtype else v
                   for k, v in tensors.items()}
        shape_only.load_state_dict(tensors, strict=True, assign=True)
        model = shape_only
        for m in model.modules():
            if isinstance(m, ModeNorm) and m.mode == "frozen":
                m.calibrated.fill_(True)
    except (RuntimeError, ValueError, KeyError) as exc:
        raise ValueError(str(exc).splitlines()[0]) from None
    return model.eval(), build


def _build(build: dict[str, Any]) -> nn.Module:
    return build_model(build["arch"], int(build["in_ch"]), int(build["classes"]),
                       int(build["size"]), str(build["mode"]), affine=bool(build["affine"]),
                       width=int(build["width"]))


def _check_cost(build: dict[str, Any], path: Path) -> None:
    """Refuse (one line, with the estimate) a network whose parameters are over
    ``BNVIZ_UPLOAD_MAX_MB`` as float32, or whose largest feature map is over what a slice
    reads, counted from the build arguments before anything exists."""
    from bnviz.caps import SLICE_MAX_TENSOR_UNITS
    from bnviz.config import setting
    from bnviz.params.jobcost import network_cost

    cost = network_cost(str(build["arch"]), int(build["in_ch"]), int(build["size"]),
                        int(build["width"]), int(build["classes"]))
    need, cap = 4 * cost.parameters / 2**20, setting("BNVIZ_UPLOAD_MAX_MB")
    if need > cap:
        raise ValueError(f"{path}: a {build['arch']} of width {build['width']} has about "
                         f"{cost.parameters / 1e6:,.0f} million parameters ({need:,.0f} MB), "
                         f"over the {cap:,.0f} MB a network may hold (BNVIZ_UPLOAD_MAX_MB)")
    if cost.peak > SLICE_MAX_TENSOR_UNITS:
        raise ValueError(f"{path}: a {build['arch']} of width {build['width']} on "
                         f"{build['size']}-pixel images has {cost.peak:,.0f} units in a layer, "
                         f"more than the {SLICE_MAX_TENSOR_UNITS:,} a slice reads")


def _check_header(header: dict[str, tuple[tuple[int, ...], str]],
                  state: dict[str, torch.Tensor], build: dict[str, Any], path: Path) -> None:
    """The file's tensors are the architecture's: the same names (a bool flag may be
    absent), shapes, and element types (any floating type for a floating tensor)."""
    net = f"a {build['arch']} of width {build['width']}"
    missing = sorted(set(state) - set(header) - {k for k, v in state.items()
                                                   if v.dtype == torch.bool})
    extra = sorted(set(header) - set(state))
    if missing or extra:
        raise ValueError(f"{path} does not fit {net}: " + (
            f"missing {missing[0]}" if missing else f"unexpected {extra[0]}"))
    for k, (shape, dtype) in header.items():
        want = state[k]
        if shape != tuple(want.shape):
            raise ValueError(f"{path}: {k} has shape {shape}, {net} needs "
                             f"{tuple(want.shape)}")
        wanted = _DTYPE_NAMES.get(want.dtype)
        if dtype != wanted and not (want.is_floating_point() and dtype in _FLOAT_NAMES):
            raise ValueError(f"{path}: {k} holds {dtype} values, {net} needs {wanted}")


#: What the build arguments of a file may say (checked before anything is built).
BUILD_BOUNDS = {"in_ch": (1, 16), "classes": (1, 10_000), "size": (1, 512), "width": (1, 1024)}


def _check_build(build: dict[str, Any], path: Path) -> None:
    from bnviz.caps import ARCHS
    from bnviz.images.networks import NORM_MODES

    bad = [k for k, (lo, hi) in BUILD_BOUNDS.items()
           if not (isinstance(build.get(k), int) and not isinstance(build.get(k), bool)
                   and lo <= build[k] <= hi)]
    if build.get("arch") not in ARCHS or build.get("mode") not in NORM_MODES \
            or not isinstance(build.get("affine"), bool) or bad:
        what = bad[0] if bad else "arch, mode or affine"
        raise ValueError(f"{path}: the file's metadata is not a bnviz network ({what})")


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().to(torch.float64).numpy()


class _Builder:
    """Walks a bnviz image network in forward order, writing one Op per leaf module."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def op(self, kind: str, inputs: tuple[str, ...], **attrs: Any) -> str:
        name = f"{kind}{len(self.ops)}"
        self.ops.append(Op(kind, name, inputs, name, attrs))
        return name

    def visit(self, m: nn.Module, x: str, ex: torch.Tensor) -> tuple[str, torch.Tensor]:
        if isinstance(m, Residual):
            y, ey = self.visit(m.body, x, ex)
            return self.op("add", (x, y)), ex + ey
        if isinstance(m, Bottleneck):
            y, ey = self.visit(m.body, x, ex)
            s, es = self.visit(m.shortcut, x, ex)
            z = self.op("add", (y, s))
            return self.visit(m.act, z, ey + es)
        if isinstance(m, nn.Sequential):
            for child in m:
                x, ex = self.visit(child, x, ex)
            return x, ex
        out = ex if isinstance(m, ModeNorm) else m(ex)  # (a norm keeps the shape)
        if isinstance(m, (nn.Identity, nn.Dropout)):
            return x, out
        if isinstance(m, nn.Conv2d):
            if m.padding_mode != "zeros" or isinstance(m.padding, str):
                raise ValueError("only zero-padded convolutions with explicit padding")
            ph, pw = m.padding
            return self.op("conv", (x,), weight=_np(m.weight),
                           bias=None if m.bias is None else _np(m.bias), stride=m.stride,
                           pads=(ph, pw, ph, pw), dilation=m.dilation, groups=m.groups), out
        if isinstance(m, ModeNorm):
            return self._norm(m, x), out
        if isinstance(m, (nn.LeakyReLU, nn.ReLU)):
            slope = float(getattr(m, "negative_slope", 0.0))
            return self.op("relu", (x,), slope=slope), out
        if isinstance(m, nn.MaxPool2d):
            k, s, p = (_pair(v) for v in (m.kernel_size, m.stride, m.padding))
            if _pair(m.dilation) != (1, 1):
                raise ValueError("dilated max pooling is not supported")
            return self.op("maxpool", (x,), kernel=k, stride=s, pads=(*p, *p),
                           ceil=m.ceil_mode), out
        if isinstance(m, nn.AdaptiveMaxPool2d) and _pair(m.output_size) == (1, 1):
            hw = tuple(ex.shape[2:])
            return self.op("maxpool", (x,), kernel=hw, stride=hw, pads=(0, 0, 0, 0)), out
        if isinstance(m, nn.AvgPool2d):
            k, s, p = (_pair(v) for v in (m.kernel_size, m.stride, m.padding))
            return self.op("avgpool", (x,), kernel=k, stride=s, pads=(*p, *p),
                           count_include_pad=m.count_include_pad, ceil=m.ceil_mode), out
        if isinstance(m, nn.AdaptiveAvgPool2d) and _pair(m.output_size) == (1, 1):
            return self.op("gap", (x,)), out
        if isinstance(m, nn.Flatten):
            return self.op("flatten", (x,)), out
        if isinstance(m, nn.Linear):
            return self.op("linear", (x,), weight=_np(m.weight),
                           bias=None if m.bias is None else _np(m.bias)), out
        raise ValueError(f"the slice engine does not support {type(m).__name__}")

    def _norm(self, m: ModeNorm, x: str) -> str:
        c = m.channels
        if m.mode in BIAS_MODES:
            return self.op("bias", (x,), bias=_np(m.bias))
        gamma = _np(m.weight) if m.affine else np.ones(c)
        beta = _np(m.bias) if (m.affine or m.mode == "frozen") else np.zeros(c)
        return self.op("bn", (x,), mean=_np(m.running_mean), var=_np(m.running_var), eps=0.0,
                       gamma=gamma, beta=beta, fixed=m.mode == "frozen")


def _pair(v: Any) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


@torch.no_grad()
def slice_net(model: nn.Module, input_shape: tuple[int, int, int], source: str = "") -> SliceNet:
    """The slice network of a bnviz image network (eval-mode modules; its norm layers' modes
    say which are BN: ``bn``/``noisy_bn`` BN, ``frozen`` BN with fixed statistics, the bias
    modes a per-channel bias)."""
    was = model.training
    model.eval()
    try:
        b = _Builder()
        ex = torch.zeros((1, *input_shape), dtype=next(model.parameters()).dtype)
        out, _ = b.visit(model, "input", ex)
    finally:
        model.train(was)
    return SliceNet(tuple(b.ops), "input", out, tuple(input_shape), source)
