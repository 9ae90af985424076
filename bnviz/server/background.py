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

gunicorn imports the app once, in its master, before it listens and forks the workers
(``preload_app``, ``gunicorn.conf.py``), so that a worker answers as soon as it is forked.
The master calls :func:`hold_until_fork` before the import, and each worker
:func:`start_held` once forked (gunicorn's ``post_worker_init``), before its first request.
What the master holds:

* both starts above only note that they were asked for; the worker starts them. A thread
  does not survive a fork, and a child forked while one was inside an import, numba or torch
  would find that lock held for good;
* torch's intra-op threads: the master imports the app with one (``BNVIZ_TORCH_THREADS=1``
  while it imports; app.py's ``configure_torch`` reads it), the worker takes the setting. A
  child forked after torch's OpenMP pool ran in its parent hangs at its first parallel
  operation (measured with torch 2.13 and 2 threads);
* /healthz's helper threads (:mod:`bnviz.server.health`): the warm-up asks /healthz in the
  master, whose helper pool then counts an idle thread that a child does not have, so a
  worker's first /healthz waited 2 s for nothing and said the job store could not be reached.
  The worker makes the pool anew.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable

from bnviz.config import setting
from bnviz.service import kernel_loading

__all__ = ["hold_until_fork", "start_held", "start_tour_precompute"]

#: Set in a process that forks its workers after importing the app (a preloading gunicorn
#: master), cleared in each forked child by :func:`start_held`.
_held = False
#: The reporter a held start was asked with, in a one-item list; empty when none was asked.
_asked: list[Callable[[str], None] | None] = []
#: ``BNVIZ_TORCH_THREADS`` as the environment had it before :func:`hold_until_fork` (None:
#: unset), which each forked child restores.
_torch_threads: str | None = None


def hold_until_fork() -> None:
    """From now on, in this process, :func:`start_tour_precompute` and
    :func:`~bnviz.service.kernel_loading.start_kernel_loading` only note that they were asked
    for, and torch is configured with one thread: a process that imports the app and then
    forks (a preloading gunicorn master) calls this before the import, and each child
    :func:`start_held`. Calling it again (gunicorn reads its configuration again on HUP)
    changes nothing."""
    global _held, _torch_threads
    if not _held:
        _torch_threads = os.environ.get("BNVIZ_TORCH_THREADS")
        os.environ["BNVIZ_TORCH_THREADS"] = "1"
    _held = True
    kernel_loading.hold_until_fork()


def start_held() -> list[threading.Thread]:
    """In a child forked after :func:`hold_until_fork`: torch's threads as
    ``BNVIZ_TORCH_THREADS`` says, /healthz's helper pool anew, then the threads asked for
    before the fork (the kernels' loading, the tour's precompute); from now on they start at
    once. Returns the threads started."""
    global _held
    if not _held:
        return []
    asked = list(_asked)
    _held = False
    _asked.clear()
    if _torch_threads is None:
        os.environ.pop("BNVIZ_TORCH_THREADS", None)
    else:
        os.environ["BNVIZ_TORCH_THREADS"] = _torch_threads
    torch = sys.modules.get("torch")  # imported by the app; not imported here
    if torch is not None:
        torch.set_num_threads(int(setting("BNVIZ_TORCH_THREADS")))
    started = [kernel_loading.release_after_fork()]
    if asked:
        started.append(start_tour_precompute(asked[0]))
    return [t for t in started if t is not None]


def start_tour_precompute(report: Callable[[str], None] | None = None
                          ) -> threading.Thread | None:
    """Compute every lecture tour step in a background thread of this process (a few seconds;
    the papers' trained networks once per ``BNVIZ_HOME``); returns the thread, or None when
    ``BNVIZ_PRECOMPUTE_TOUR=0``, or when the start is held until a fork (:func:`start_held`
    starts it then).  A step that fails here is computed, and reported, when it is shown;
    ``report`` (default: this module's logger) hears why with its traceback."""
    if not setting("BNVIZ_PRECOMPUTE_TOUR"):
        return None
    if _held:
        _asked[:] = [report]
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
