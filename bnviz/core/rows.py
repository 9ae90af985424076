"""A growable array's one helper, in plain Python: the compiled kernels jit it
(:mod:`bnviz.core.clipping`), and the slice's max-pooling cells run it uncompiled on small
cuts (:mod:`bnviz.slices.maxcells`), so that this module never imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["grow_rows"]


def grow_rows(a: Any, n: int) -> Any:
    """``a`` with at least ``n`` rows (doubling), the old rows kept."""
    if n <= a.shape[0]:
        return a
    out = np.empty((max(n, 2 * a.shape[0]),) + a.shape[1:], a.dtype)
    out[: a.shape[0]] = a
    return out
