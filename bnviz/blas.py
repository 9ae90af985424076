"""The exact cut's float64 matrix products on a CPU: numpy's BLAS (OpenBLAS) where torch
runs on one thread.

The slices' affine maps are float64 matrix products (:mod:`bnviz.slices.graph`).  On this
project's 2-core AMD EPYC (family 1Ah, AVX-512) torch's MKL runs its AVX2 kernels, at 48-62
GFLOP/s a core, while numpy's OpenBLAS (0.3.31) detects the processor's AVX-512 and runs its
SkylakeX kernels at 88-96 GFLOP/s (products of 600-1 800 rows by 192-1 536 columns, one
thread): a ResNet9 cut takes 0.77 of its time.  Where OpenBLAS is told to run older kernels
(``OPENBLAS_CORETYPE=Haswell``, as this workplace sets it for older OpenBLAS builds) the two
are alike; ``bench/slice.py`` prints which kernels numpy runs.

They are numpy's only where torch runs on one thread (a tile worker, a job's process, a web
worker, the per-core bench), with OpenBLAS held to one thread too, so that processes of a
core each do not oversubscribe it.  On more threads torch's own product runs: OpenBLAS's
threads and torch's OpenMP threads, both spinning while they wait, made a ResNet9 cut on
2 threads of this 2-core machine 4x slower (9.7-10.3 s against 2.5 s with MKL alone).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = ["hold_to_one_thread", "on_numpy_blas", "times_transposed"]

#: Whether this process has held numpy's BLAS to one thread.
_held_to_one = False


def times_transposed(x: torch.Tensor, w: np.ndarray) -> torch.Tensor:
    """``x`` (M, N) @ ``w``.T (N, K), ``w`` a numpy array: by numpy's BLAS for float64 on a
    CPU where torch runs on one thread (the module docstring), by torch otherwise."""
    import numpy as np
    import torch

    if w.dtype == np.float64 and on_numpy_blas(x):
        return torch.from_numpy(np.matmul(x.numpy(), w.T))
    return x @ torch.as_tensor(w, dtype=x.dtype, device=x.device).T


def on_numpy_blas(x: torch.Tensor) -> bool:
    """Whether products with ``x`` run on numpy's BLAS (float64 on a CPU where torch runs on
    one thread: the module docstring), its BLAS then held to one thread."""
    import torch

    if x.device.type == "cpu" and x.dtype == torch.float64 and torch.get_num_threads() == 1:
        hold_to_one_thread()
        return True
    return False


def hold_to_one_thread() -> None:
    """numpy's BLAS on one thread in this process, from now on (once: threadpoolctl finds
    the loaded BLAS libraries, some milliseconds)."""
    global _held_to_one
    if _held_to_one:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")
    _held_to_one = True
