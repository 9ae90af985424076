"""The torch implementation of the exact engine's array operations (:mod:`bnviz.core.arrays`):
big meshes, and any mesh on a GPU.  Its own module so that the numpy path never imports torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from bnviz.core.ops import Ops

__all__ = ["TorchOps"]


class TorchOps(Ops):
    """torch on one device: big meshes, and the GPU."""

    name = "torch"
    float64, int64, int32, int8, bool = (torch.float64, torch.int64, torch.int32, torch.int8,
                                         torch.bool)

    #: the big passes run on whole arrays (a GPU wants few, large kernels)
    block: int | None = None

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def asarray(self, x: Any, dtype: Any = None) -> torch.Tensor:
        return torch.as_tensor(x, dtype=dtype, device=self.device)

    def numpy(self, x: torch.Tensor) -> np.ndarray:
        return x.cpu().numpy()

    matmul = staticmethod(torch.matmul)

    def arange(self, n: int) -> torch.Tensor:
        return torch.arange(n, device=self.device)

    def cumsum(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, 0)

    repeat = staticmethod(torch.repeat_interleave)
    where = staticmethod(torch.where)
    abs = staticmethod(torch.abs)
    sign = staticmethod(torch.sign)
    sqrt = staticmethod(torch.sqrt)
    atan2 = staticmethod(torch.atan2)
    cos = staticmethod(torch.cos)
    sin = staticmethod(torch.sin)

    def nonzero(self, mask: torch.Tensor) -> torch.Tensor:
        return torch.nonzero(mask, as_tuple=True)[0]

    def zeros(self, shape: Any, dtype: Any) -> torch.Tensor:
        return torch.zeros(shape, dtype=dtype, device=self.device)

    def full(self, n: int | tuple[int, ...], value: float, dtype: Any) -> torch.Tensor:
        shape = tuple(n) if isinstance(n, tuple) else (n,)
        return torch.full(shape, value, dtype=dtype, device=self.device)

    def cat(self, xs: list, axis: int = 0) -> torch.Tensor:
        return torch.cat(xs, axis)

    def take(self, x: torch.Tensor, index: torch.Tensor, axis: int) -> torch.Tensor:
        """x's slices ``index`` along ``axis``."""
        return x.index_select(axis, index)

    def stack(self, xs: list, axis: int = 0) -> torch.Tensor:
        return torch.stack(xs, axis)

    def nonzero2(self, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.nonzero(mask, as_tuple=True)

    def columns(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(N, 2) from two (N,) columns."""
        return torch.stack([x, y], 1)

    def to(self, x: torch.Tensor, dtype: Any) -> torch.Tensor:
        return x.to(dtype)

    def bincount(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return torch.bincount(x, minlength=n)

    def count(self, index: torch.Tensor, mask: torch.Tensor, n: int) -> torch.Tensor:
        """How many True entries of ``mask`` each of the n values of ``index`` has."""
        out = torch.zeros(n, dtype=torch.int32, device=index.device)
        return out.index_add_(0, index, mask.to(torch.int32))

    def amin(self, x: torch.Tensor, axis: int) -> torch.Tensor:
        return x.amin(axis)

    def amax(self, x: torch.Tensor, axis: int) -> torch.Tensor:
        return x.amax(axis)

    def argsort(self, x: torch.Tensor, stable: bool = True) -> torch.Tensor:
        """Argsort, stable unless told otherwise."""
        return torch.sort(x, stable=stable).indices

    def scatter_add(self, n: int, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """out[index[i]] += values[i] into zeros of length n (exact for integers)."""
        out = torch.zeros((n, *values.shape[1:]), dtype=values.dtype, device=values.device)
        return out.index_add_(0, index, values)

    def add_at(self, out: torch.Tensor, index: torch.Tensor, values: torch.Tensor) -> None:
        """out[index[i]] += values[i] in place, repeated indices accumulating."""
        out.index_add_(0, index, values)

    def segment_sum(self, values: torch.Tensor, ptr: torch.Tensor,
                    seg: torch.Tensor) -> torch.Tensor:
        return self.scatter_add(ptr.numel() - 1, seg, values)

    def segment_max(self, values: torch.Tensor, ptr: torch.Tensor,
                    seg: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(ptr.numel() - 1, dtype=values.dtype, device=values.device)
        return out.scatter_reduce_(0, seg, values, "amax")

    def maximum0(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp(min=0)
