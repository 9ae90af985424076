"""The exact cut's float64 matrix products on a CPU: numpy's BLAS (OpenBLAS), on the
threads torch is given.

The slices' affine maps are float64 matrix products (:mod:`bnviz.slices.graph`).  On this
project's 2-core AMD EPYC (family 1Ah, AVX-512) torch's MKL runs its AVX2 kernels, at 48-62
GFLOP/s a core, while numpy's OpenBLAS (0.3.31) detects the processor's AVX-512 and runs its
SkylakeX kernels at 88-96 GFLOP/s (products of 600-1 800 rows by 192-1 536 columns, one
thread): a ResNet9 cut takes 0.75 of its time.  Where OpenBLAS is told to run older kernels
(``OPENBLAS_CORETYPE=Haswell``, as this workplace sets it for older OpenBLAS builds) the two
are alike; ``bench/slice.py`` prints which kernels numpy runs.

numpy's BLAS is held to torch's intra-op thread count, the process's one thread setting
(one in a tile worker, a job's process and a web worker, so that processes of a core each
do not oversubscribe it)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = ["times_transposed"]

#: The BLAS thread count this process last set (None: OpenBLAS's default, every usable core).
_blas_threads: int | None = None


def times_transposed(x: torch.Tensor, w: np.ndarray) -> torch.Tensor:
    """``x`` (M, N) @ ``w``.T (N, K), ``w`` a numpy array: by numpy's BLAS for float64 on a
    CPU (the module docstring), by torch otherwise (a GPU)."""
    import numpy as np
    import torch

    if x.device.type == "cpu" and x.dtype == torch.float64 and w.dtype == np.float64:
        _follow_torch_threads(torch.get_num_threads())
        return torch.from_numpy(np.matmul(x.numpy(), w.T))
    return x @ torch.as_tensor(w, dtype=x.dtype, device=x.device).T


def _follow_torch_threads(threads: int) -> None:
    """Hold numpy's BLAS to ``threads`` (torch's intra-op count): set when it changes, and
    not at all while it is every usable core (OpenBLAS's own default)."""
    global _blas_threads
    if threads == _blas_threads:
        return
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if _blas_threads is None and threads >= (usable or 1):
        _blas_threads = threads
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads, user_api="blas")
    _blas_threads = threads
