"""When the exact engine cuts with its compiled kernels (numba), and when with its vectorised
numpy cut: the same partition either way (tests/engine_cases.py compares them).

Measured on this project's 2-core machine (``bench/partition.py --engine compiled|numpy``, in
one process): the compiled cut takes 0.3 ms at 16x3 against the vectorised cut's 1.4 ms, and
the two are equal from 128x4 on (180 ms).  But a process pays to have the kernels at all:
0.2 s to import numba, 0.2-0.4 s to load the cached kernels, and on a machine where they were
never compiled, 25 s (here) to several minutes (a loaded machine) to compile them.  So:

* a process that serves many cuts (a web worker, a job's process) calls :func:`start_loading`
  when it starts (never before a fork: a forked child would inherit a half-held import): the
  kernels load, or compile once per machine, in a background thread, one process at a time
  (a lock file), and until they are :func:`ready` every cut takes the vectorised path.  No
  page waits for the compiler;
* a one-shot command (``bnviz partition``, ``figure9``) never imports numba: the vectorised
  cut is done long before numba would be;
* what has no vectorised path (an image slice's cut with given pre-activations, its max-pool
  cells) calls :func:`require`: loaded now, with a line on stderr when they must be compiled.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType

__all__ = ["ready", "require", "start_loading"]

_lock = threading.Lock()
_module: ModuleType | None = None
_thread: threading.Thread | None = None
_error: BaseException | None = None


def ready() -> ModuleType | None:
    """:mod:`bnviz.core.compiled_network` once its kernels are loaded in this process, else
    None (the caller takes the vectorised cut)."""
    return _module


def _lock_path() -> Path:
    return Path(tempfile.gettempdir()) / f"bnviz-kernels-{os.getuid()}.lock"


def _cached() -> bool:
    """Whether numba's cache holds the engine's kernels (their index files exist); False
    where it cannot tell."""
    try:
        from bnviz.core import clipping

        return all(Path(f._cache._cache_file._index_path).exists()  # noqa: SLF001
                   for f in (clipping.chords, clipping.clip_faces))
    except Exception:  # numba's private layout changed: say nothing
        return True


def _load(note: bool) -> ModuleType:
    """Import the kernels and run each once for the types the engine passes (compiling them
    where numba's cache does not have them), one process at a time."""
    global _module
    import fcntl

    with open(_lock_path(), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process compiling: wait, then load
        try:
            if note and not _cached():
                print("bnviz: compiling the exact engine's kernels, once per machine "
                      "(about 30 s to a few minutes)", file=sys.stderr, flush=True)
            from bnviz.core import compiled_network

            compiled_network.warm_up()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    _module = compiled_network
    return compiled_network


def _background() -> None:
    global _error
    try:
        _load(note=False)
    except BaseException as exc:  # the vectorised cut goes on; require() reports it
        _error = exc


def start_loading() -> None:
    """Load (or compile) the kernels in a background thread of this process; returns at once.
    Call again after a fork: threads do not survive it."""
    global _thread
    with _lock:
        if _module is not None or (_thread is not None and _thread.is_alive()):
            return
        _thread = threading.Thread(target=_background, name="bnviz-kernels", daemon=True)
        _thread.start()


def require() -> ModuleType:
    """The kernels, now: waits for a background load, else loads them here (saying so on
    stderr when they must be compiled first)."""
    with _lock:
        thread = _thread
    if thread is not None:
        thread.join()
    if _module is not None:
        return _module
    with _lock:
        return _module or _load(note=True)
