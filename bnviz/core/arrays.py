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

torch is imported only when a torch implementation is asked for (:mod:`bnviz.core.torch_ops`):
the CPU cut of ``bnviz partition`` never loads it.  Only what the two libraries spell
differently is here; arithmetic, comparisons, indexing,
``reshape``, ``sum``, ``any``, ``@`` and ``tolist`` are written directly on the arrays.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from bnviz.core.ops import Ops

if TYPE_CHECKING:
    import torch

    from bnviz.core.torch_ops import TorchOps

__all__ = ["NUMPY", "NUMPY_MAX_WORK", "NumpyOps", "Ops", "TorchOps", "device_type", "is_tensor",
           "ops_for", "ops_of", "single_thread_matmul", "torch_ops"]

#: Largest (regions x units) product of a layer cut with numpy rather than torch, by device
#: type.  On the CPU numpy at every size: bench/partition.py --engine numpy|torch measured it
#: faster at every size from 8x2 to 128x6 (64x6: 0.1 s against 2.6 s on a loaded 2-core
#: machine, where torch's thread pool waits; 128x6 on one torch thread: 0.5-1.4 s against
#: 1.4 s).  On a GPU, torch once a layer's cut is big enough to pay for the GPU's per-call
#: latency (a guess, untested here: no GPU).
NUMPY_MAX_WORK: dict[str, float] = {"cpu": float("inf"), "cuda": 50_000}


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
    device = "cpu"
    #: elements per block of the big (R, D) passes (:mod:`bnviz.core.crossings`): 512 KB of
    #: float64, which stays in the cache between the passes
    block: int | None = 1 << 16

    def asarray(self, x: Any, dtype: Any = None) -> np.ndarray:
        if type(x) is np.ndarray and (dtype is None or x.dtype == dtype):
            return x
        if is_tensor(x):
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


#: The one numpy implementation (stateless).
NUMPY = NumpyOps()


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a torch tensor, without importing torch (none exists before it is)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def device_type(device: Any) -> str:
    """"cpu" or "cuda" of a torch.device or a device string, without importing torch."""
    return device.type if hasattr(device, "type") else str(device).split(":")[0]


@functools.lru_cache(maxsize=16)
def torch_ops(device: torch.device) -> TorchOps:
    """The torch implementation on ``device`` (one per device; torch is imported here)."""
    from bnviz.core.torch_ops import TorchOps

    return TorchOps(device)


def ops_of(x: Any) -> Ops:
    """The implementation that holds the array ``x``."""
    if isinstance(x, np.ndarray):
        return NUMPY
    return torch_ops(x.device)


def ops_for(device: torch.device | str, work: int) -> Ops:
    """Where to cut a layer of ``work`` = regions x units on ``device``: numpy on the CPU, and
    on a GPU until the mesh is big enough to pay for the GPU's per-call latency."""
    kind = device_type(device)
    if work <= NUMPY_MAX_WORK.get(kind, 0):
        return NUMPY
    import torch

    return torch_ops(torch.device(device))


def __getattr__(name: str) -> Any:
    if name == "TorchOps":  # torch only when asked for
        from bnviz.core.torch_ops import TorchOps

        return TorchOps
    raise AttributeError(name)
