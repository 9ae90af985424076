"""The interface of the exact engine's array operations (:mod:`bnviz.core.arrays`): what
numpy and torch spell differently.

Its own module so that both implementations build on it without importing each other:
:mod:`bnviz.core.arrays` (numpy, and the choice of library) loads
:mod:`bnviz.core.torch_ops` only when torch is asked for, and ``torch_ops`` needs only this.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Ops"]


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
