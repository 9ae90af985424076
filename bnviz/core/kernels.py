"""Whether this process has the exact engine's compiled kernels (numba), and loading them:
the engine cuts with them, rather than with its vectorised numpy cut, only once they are
loaded (the one choice: :func:`bnviz.core.cut.compiled_kernels`); the same partition either
way (tests/engine_cases.py compares them).

Measured on this project's 2-core machine (``bench/partition.py --engine compiled|numpy``, in
one process): the compiled cut takes 0.3 ms at 16x3 against the vectorised cut's 1.4 ms, and
the two are equal from 128x4 on (180 ms).  But a process pays to have the kernels at all:
0.2 s to import numba, 0.2-0.4 s to load the cached kernels, and on a machine where they were
never compiled, 25 s (here) to several minutes (a loaded machine) to compile them.  So:

* a process that serves many cuts (a web worker, a job's process) loads them in a background
  thread when it starts (:func:`bnviz.service.kernel_loading.start_kernel_loading`, which runs
  :func:`load_quietly`; never before a fork: a forked child would inherit a half-held
  import): the kernels load, or compile once per machine, one process at a time (a lock
  file), and until they are :func:`ready` every cut takes the vectorised path.  No page
  waits for the compiler;
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

__all__ = ["load_quietly", "ready", "require"]

#: Held while this process loads the kernels: :func:`require` waits on a background load.
_lock = threading.Lock()
_module: ModuleType | None = None
_error: BaseException | None = None


def ready() -> ModuleType | None:
    """:mod:`bnviz.core.compiled_network` once its kernels are loaded in this process, else
    None (the caller takes the vectorised cut)."""
    return _module


def _lock_path() -> Path:
    return Path(tempfile.gettempdir()) / f"bnviz-kernels-{os.getuid()}.lock"


def _cached() -> bool:
    """Whether numba's cache holds the engine's kernels: the index file of every entry point
    that :func:`bnviz.core.compiled_network.warm_up` compiles (two of them alone let a
    process compile the others silently, or say "compiling" when it would not); True where
    it cannot tell."""
    try:
        from bnviz.core import clipping
        from bnviz.core import compiled_network as cn

        return all(Path(f._cache._cache_file._index_path).exists()  # noqa: SLF001
                   for f in (clipping.chords, clipping.clip_faces, cn.cut_layer,
                             cn.cut_network, cn.activated_maps, cn.common_codes,
                             cn.add_unit_steps, cn.swap_middle_axes, cn.rows_under_bound))
    except Exception:  # numba's private layout changed: say nothing
        return True


def _load(note: bool) -> ModuleType:
    """Import the kernels and run each once for the types the engine passes (compiling them
    where numba's cache does not have them), one process at a time; the caller holds
    ``_lock``."""
    global _module
    import fcntl

    if _module is not None:
        return _module
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


def load_quietly() -> None:
    """Load (or compile) the kernels here, saying nothing: what a background thread runs
    (:func:`bnviz.service.kernel_loading.start_kernel_loading`).  A failure is kept, not raised:
    the vectorised cut goes on, and :func:`require` reports it."""
    global _error
    try:
        with _lock:
            _load(note=False)
    except BaseException as exc:  # noqa: BLE001 - kept for require(); cuts go on vectorised
        _error = exc


def require() -> ModuleType:
    """The kernels, now: waits for a background load (it holds the lock), else loads them
    here (saying so on stderr when they must be compiled first)."""
    if _module is not None:
        return _module
    with _lock:
        return _load(note=True)
