"""The two array libraries the exact engine runs on, behind one small interface.

The cut of a layer (:mod:`bnviz.core.crossings`, :mod:`bnviz.core.cut`, :mod:`bnviz.core.mesh`)
is written once against :class:`Ops`, whose two implementations are numpy and torch.  Why two:
a small partition (tens to a few thousand regions) is a few hundred array operations per layer
on small arrays, where each torch call costs 3-10 us of dispatch (and, on a loaded machine,
waits on its thread pool: medians 5x the best times were measured) against ~1 us for numpy, so
small meshes run on numpy; big meshes, and any mesh on a GPU, run on torch on the device that
:func:`bnviz.device.pick_device` chose.  :func:`ops_for` makes that choice per layer from the
size of the mesh about to be cut.  Both implementations do the same float64 arithmetic with
the same tolerances, so they make the same partition (tests/core/test_arrays.py checks it).

Only what the two libraries spell differently is here; arithmetic, comparisons, indexing,
``reshape``, ``sum``, ``any``, ``@`` and ``tolist`` are written directly on the arrays.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np
import torch

__all__ = ["NUMPY", "NUMPY_MAX_WORK", "NumpyOps", "Ops", "TorchOps", "ops_for", "ops_of",
           "single_thread_matmul", "torch_ops"]

#: Largest (regions x units) product of a layer cut with numpy rather than torch, by device
#: type.  On the CPU numpy at every size: bench/partition.py --engine numpy|torch measured it
#: faster at every size from 8x2 to 128x6 (64x6: 0.1 s against 2.6 s on a loaded 2-core
#: machine, where torch's thread pool waits; 128x6 on one torch thread: 0.5-1.4 s against
#: 1.4 s).  On a GPU, torch once a layer's cut is big enough to pay for the GPU's per-call
#: latency (a guess, untested here: no GPU).
NUMPY_MAX_WORK: dict[str, float] = {"cpu": float("inf"), "cuda": 50_000}


class Ops:
    """The operations the engine needs whose spelling differs between numpy and torch."""

    name: str
    block: int | None
    float64: Any
    int64: Any
    int32: Any
    int8: Any
    bool: Any

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        raise NotImplementedError

    def numpy(self, x: Any) -> np.ndarray:
        raise NotImplementedError


#: GEMMs below this many multiply-adds run as they are (OpenBLAS keeps them on one thread).
_SMALL_GEMM = 1 << 18
_BLAS_LOCK = threading.Lock()


@functools.lru_cache(maxsize=1)
def _blas_controller() -> Any:
    """threadpoolctl's view of numpy's BLAS, or None without threadpoolctl (it comes with
    scikit-learn)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - scikit-learn brings it
        return None
    return ThreadpoolController().select(user_api="blas")


def single_thread_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` with BLAS on one thread.  Why: OpenBLAS's threads spin and wait for each
    other, and on a machine whose cores are busy a GEMM of a few MFLOP took 5-8 ms on two
    threads against 0.2 ms on one (bench/partition.py, 32x4: 16 ms -> 7 ms); the engine runs
    beside other requests, so one thread is also the fair share.  The lock keeps concurrent
    calls from restoring each other's thread counts out of order."""
    if a.shape[0] * a.shape[1] * b.shape[1] < _SMALL_GEMM or _blas_controller() is None:
        return a @ b
    with _BLAS_LOCK, _blas_controller().limit(limits=1):
        return a @ b


class NumpyOps(Ops):
    """numpy on the CPU: the fast path for small meshes (no dispatch cost)."""

    name = "numpy"
    float64, int64, int32, int8, bool = np.float64, np.int64, np.int32, np.int8, np.bool_
    device = torch.device("cpu")
    #: elements per block of the big (R, D) passes (:mod:`bnviz.core.crossings`): 512 KB of
    #: float64, which stays in the cache between the passes
    block: int | None = 1 << 16

    def asarray(self, x: Any, dtype: Any = None) -> np.ndarray:
        if type(x) is np.ndarray and (dtype is None or x.dtype == dtype):
            return x
        if isinstance(x, torch.Tensor):
            x = x.detach().cpu().numpy()
        return np.asarray(x, dtype=dtype)

    def numpy(self, x: np.ndarray) -> np.ndarray:
        return x

    matmul = staticmethod(single_thread_matmul)
    arange = staticmethod(np.arange)
    cumsum = staticmethod(np.cumsum)
    repeat = staticmethod(np.repeat)
    where = staticmethod(np.where)
    abs = staticmethod(np.abs)
    sign = staticmethod(np.sign)
    sqrt = staticmethod(np.sqrt)
    atan2 = staticmethod(np.arctan2)
    cos = staticmethod(np.cos)
    sin = staticmethod(np.sin)
    nonzero = staticmethod(np.flatnonzero)

    def zeros(self, shape: Any, dtype: Any) -> np.ndarray:
        return np.zeros(shape, dtype)

    def full(self, n: int | tuple[int, ...], value: float, dtype: Any) -> np.ndarray:
        return np.full(n, value, dtype)

    def cat(self, xs: list, axis: int = 0) -> np.ndarray:
        return np.concatenate(xs, axis)

    def take(self, x: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
        """x's slices ``index`` along ``axis``, contiguous (x[:, index] is not, in numpy)."""
        return x.take(index, axis)

    def stack(self, xs: list, axis: int = 0) -> np.ndarray:
        return np.stack(xs, axis)

    def nonzero2(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.nonzero(mask)

    def columns(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """(N, 2) from two (N,) columns (np.stack costs ~4x more on small arrays)."""
        out = np.empty((len(x), 2), x.dtype)
        out[:, 0] = x
        out[:, 1] = y
        return out

    def to(self, x: np.ndarray, dtype: Any) -> np.ndarray:
        return x.astype(dtype)

    def bincount(self, x: np.ndarray, n: int) -> np.ndarray:
        return np.bincount(x, minlength=n)

    def count(self, index: np.ndarray, mask: np.ndarray, n: int) -> np.ndarray:
        """How many True entries of ``mask`` each of the n values of ``index`` has."""
        return np.bincount(index, weights=mask, minlength=n)

    def amin(self, x: np.ndarray, axis: int) -> np.ndarray:
        return x.min(axis)

    def amax(self, x: np.ndarray, axis: int) -> np.ndarray:
        return x.max(axis)

    def argsort(self, x: np.ndarray, stable: bool = True) -> np.ndarray:
        """Argsort, stable unless told otherwise.  numpy's unstable sort is a SIMD quicksort,
        several times faster than its stable timsort; integers in [0, 2^16) are sorted stably
        by radix sort, also fast (20,000 int64 keys: 1 ms timsort, 0.05 ms radix)."""
        if not stable:
            return np.argsort(x)
        if x.dtype.kind in "iu" and len(x) > 64 and x.min() >= 0 and x.max() < 1 << 16:
            x = x.astype(np.uint16)
        return np.argsort(x, kind="stable")

    def scatter_add(self, n: int, index: np.ndarray, values: np.ndarray) -> np.ndarray:
        """out[index[i]] += values[i] into zeros of length n (exact for integers; floats are
        summed in index order, as torch's index_add on the CPU)."""
        if values.dtype.kind == "f" and values.ndim <= 2:  # bincount: ~7x np.add.at's speed
            if values.ndim == 1:
                return np.bincount(index, values, n)
            return np.stack([np.bincount(index, values[:, j], n)
                             for j in range(values.shape[1])], 1)
        out = np.zeros((n, *values.shape[1:]), values.dtype)
        np.add.at(out, index, values)
        return out

    def add_at(self, out: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
        """out[index[i]] += values[i] in place, repeated indices accumulating."""
        np.add.at(out, index, values)

    def segment_sum(self, values: np.ndarray, ptr: np.ndarray, seg: np.ndarray) -> np.ndarray:
        """Sums over the non-empty CSR segments ``ptr`` (``seg``: each row's segment)."""
        return np.add.reduceat(values, ptr[:-1], axis=0)

    def segment_max(self, values: np.ndarray, ptr: np.ndarray, seg: np.ndarray) -> np.ndarray:
        """Maxima over the non-empty CSR segments ``ptr`` of non-negative values."""
        return np.maximum.reduceat(values, ptr[:-1])

    def maximum0(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, 0)


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


#: The one numpy implementation (stateless).
NUMPY = NumpyOps()


@functools.lru_cache(maxsize=16)
def torch_ops(device: torch.device) -> TorchOps:
    """The torch implementation on ``device`` (one per device)."""
    return TorchOps(device)


def ops_of(x: Any) -> Ops:
    """The implementation that holds the array ``x``."""
    if isinstance(x, np.ndarray):
        return NUMPY
    return torch_ops(x.device)


def ops_for(device: torch.device, work: int) -> Ops:
    """Where to cut a layer of ``work`` = regions x units on ``device``: numpy on the CPU, and
    on a GPU until the mesh is big enough to pay for the GPU's per-call latency."""
    if work <= NUMPY_MAX_WORK.get(device.type, 0):
        return NUMPY
    return torch_ops(device)
