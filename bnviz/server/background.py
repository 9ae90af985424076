"""A web process's precompute thread: the lecture tour and the debate page's claims.

bnviz runs work in threads of its own only in :mod:`bnviz.server` (this module; the health
report's probes), :mod:`bnviz.service` (the kernels' loader, nginx's access log) and
:mod:`bnviz.jobs` (the job workers); tests/test_architecture.py checks that no other module
starts one.  A web process starts two when it starts (``app.py``: ``warm_up``,
``precompute_tour``), each after gunicorn's fork (a thread does not survive a fork), so that
no request waits for what they prepare:

* :func:`bnviz.service.kernel_loading.start_kernel_loading`: the exact engine's compiled
  kernels (a job's process starts it too);
* :func:`start_tour_precompute`: every step of the lecture's guided tour
  (:func:`bnviz.lecture.scenes.precompute_tour`), so that each step answers from memory within
  the 300 ms a hall can wait (issue 16), then the debate page's claims table
  (:func:`bnviz.papers.claims.shared_claims`); ``BNVIZ_PRECOMPUTE_TOUR=0`` skips both.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from bnviz.config import setting

__all__ = ["start_tour_precompute"]


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
        from bnviz.papers.claims import shared_claims

        try:
            precompute_tour()
        except Exception:  # noqa: BLE001 - a failed step is computed (and reported) when shown
            log("precomputing the lecture tour failed")
        try:
            shared_claims()  # the debate page's table (once per BNVIZ_HOME)
        except Exception:  # noqa: BLE001 - computed (and reported) when the page asks
            log("precomputing the papers' claims failed")

    thread = threading.Thread(target=run, name="bnviz-tour", daemon=True)
    thread.start()
    return thread
