"""The exact engine's compiled kernels, loaded in a background thread of a web process or a
job's process when it starts (:mod:`bnviz.core.kernels`: loaded from numba's cache, or
compiled once per machine); until they are ready every cut takes the vectorised path, so no
request and no job waits for the compiler.

Here, in the service layer, because both the web processes (``app.py``'s warm-up) and the
job runner (:mod:`bnviz.jobs.runner`) start it, and both sit above it.
"""

from __future__ import annotations

import threading

__all__ = ["start_kernel_loading"]

_lock = threading.Lock()
_kernels: threading.Thread | None = None


def start_kernel_loading() -> threading.Thread | None:
    """Load the compiled kernels in a background thread of this process; returns at once (the
    thread, or None when they are loaded or loading already).  Call again after a fork."""
    global _kernels
    from bnviz.core import kernels

    with _lock:
        if kernels.ready() is not None or (_kernels is not None and _kernels.is_alive()):
            return None
        _kernels = threading.Thread(target=kernels.load_quietly, name="bnviz-kernels",
                                    daemon=True)
        _kernels.start()
        return _kernels
