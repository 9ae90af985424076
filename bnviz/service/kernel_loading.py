"""The exact engine's compiled kernels, loaded in a background thread of a web process or a
job's process when it starts (:mod:`bnviz.core.kernels`: loaded from numba's cache, or
compiled once per machine); until they are ready every cut takes the vectorised path, so no
request and no job waits for the compiler.

Here, in the service layer, because both the web processes (``app.py``'s warm-up) and the
job runner (:mod:`bnviz.jobs.runner`) start it, and both sit above it.

A gunicorn master that imports the app before it forks its workers (``preload_app``,
``gunicorn.conf.py``) holds the start: a thread does not survive a fork, and one forked in the
middle of an import or a compile would leave the child a lock held for good.  The master calls
:func:`hold_until_fork` before it imports the app, and each worker :func:`release_after_fork`
once forked, which starts the loading there if the app asked for it.
"""

from __future__ import annotations

import threading

__all__ = ["hold_until_fork", "release_after_fork", "start_kernel_loading"]

_lock = threading.Lock()
_kernels: threading.Thread | None = None
#: Set in a process that forks its workers after importing the app: a start waits for the fork.
_held = False
#: Whether a start was asked for while held (a forked child inherits it).
_asked = False


def hold_until_fork() -> None:
    """From now on, in this process, :func:`start_kernel_loading` only notes that it was asked
    for; each forked child starts it with :func:`release_after_fork`."""
    global _held
    with _lock:
        _held = True


def release_after_fork() -> threading.Thread | None:
    """In a child forked after :func:`hold_until_fork`: start what was asked for before the
    fork (the thread, or None when nothing was asked), and start at once from now on."""
    global _held, _asked
    with _lock:
        asked, _held, _asked = _asked, False, False
    return start_kernel_loading() if asked else None


def start_kernel_loading() -> threading.Thread | None:
    """Load the compiled kernels in a background thread of this process; returns at once (the
    thread, or None when they are loaded or loading already, or when the start is held until
    a fork).  Call again after a fork."""
    global _kernels, _asked
    from bnviz.core import kernels

    with _lock:
        if _held:
            _asked = True
            return None
        if kernels.ready() is not None or (_kernels is not None and _kernels.is_alive()):
            return None
        _kernels = threading.Thread(target=kernels.load_quietly, name="bnviz-kernels",
                                    daemon=True)
        _kernels.start()
        return _kernels
