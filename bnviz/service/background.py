"""The background threads of a web process, started in one place.

bnviz runs work in threads of its own only in :mod:`bnviz.service` (a server's needs) and
:mod:`bnviz.jobs` (the job workers); tests/test_architecture.py checks that no other module
starts one.  A web process starts two when it starts, each after gunicorn's fork (a thread
does not survive a fork), so that no request waits for what they prepare:

* :func:`start_kernel_loading`: the exact engine's compiled kernels, loaded from numba's cache
  or compiled once per machine (:mod:`bnviz.core.kernels`); until then every cut takes the
  vectorised path.  A job's process starts it too (:mod:`bnviz.jobs.runner`).
* :func:`start_tour_precompute`: every step of the lecture's guided tour
  (:func:`bnviz.lecture.scenes.precompute_tour`), so that each step answers from memory within
  the 300 ms a hall can wait (issue 16); ``BNVIZ_PRECOMPUTE_TOUR=0`` skips it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from bnviz.config import setting

__all__ = ["start_kernel_loading", "start_tour_precompute"]

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


def start_tour_precompute(report: Callable[[str], None] | None = None
                          ) -> threading.Thread | None:
    """Compute every lecture tour step in a background thread of this process (a few seconds;
    the papers' trained networks once per ``BNVIZ_HOME``); returns the thread, or None when
    ``BNVIZ_PRECOMPUTE_TOUR=0``.  A step that fails here is computed, and reported, when it is
    shown; ``report`` (default: this module's logger) hears why with its traceback."""
    if not setting("BNVIZ_PRECOMPUTE_TOUR"):
        return None
    log = report or logging.getLogger(__name__).exception

    def run() -> None:
        from bnviz.lecture.scenes import precompute_tour

        try:
            precompute_tour()
        except Exception:  # noqa: BLE001 - a failed step is computed (and reported) when shown
            log("precomputing the lecture tour failed")

    thread = threading.Thread(target=run, name="bnviz-tour", daemon=True)
    thread.start()
    return thread
