"""Background runs whose results are kept on disk (training for Figure 6, density for Figure 3).

A run is identified by a kind (a folder) and a key (a hash of everything that determines
it).  Its result is written atomically to ``$BNVIZ_HOME/<kind>/<key>.npz`` (default
``~/.bnviz``), so a run is done once and reused, also after a restart.  While it runs, its
progress is kept in memory and in ``<key>.progress.json``, which every server process (each
gunicorn worker) can read; a progress file that stops moving means the process running it
died.  A run can be cancelled.

At most ``BNVIZ_MAX_RUNS`` runs (default: the number of cores, at least 2) go on at once on
one ``BNVIZ_HOME``, counted over every server process from the progress files: each run is
CPU-bound, so more would only slow every run and every page down.  Starting one more raises
:class:`ServerBusy`, whose message the page shows.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Cancelled", "RunStatus", "ServerBusy", "bnviz_home", "cancel_run", "is_run_key",
           "max_runs", "result_path", "run_key", "run_status", "running_runs", "start_run"]

#: A run whose progress file has not moved for this long is taken to have died (progress is
#: written at least every PROGRESS_SECONDS while a run reports steps).
STALE_SECONDS = 300.0
PROGRESS_SECONDS = 2.0


class Cancelled(Exception):
    """Raised inside a run's work when the run was cancelled."""


class ServerBusy(ValueError):
    """As many runs as the server allows are going on; the message says so and what to do."""


def max_runs() -> int:
    """Runs allowed at once: ``BNVIZ_MAX_RUNS``, else the number of cores (at least 2)."""
    default = max(2, os.cpu_count() or 1)
    try:
        return max(1, int(os.environ.get("BNVIZ_MAX_RUNS", default)))
    except ValueError:
        return default


def bnviz_home() -> Path:
    """Where local state lives: ``BNVIZ_HOME`` or ``~/.bnviz``."""
    return Path(os.environ.get("BNVIZ_HOME", Path.home() / ".bnviz"))


def run_key(params: dict) -> str:
    """A stable key for a run's parameters."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:24]


def is_run_key(key: object) -> bool:
    """Whether a value (from a page's store: the client can send anything) is a run key."""
    return isinstance(key, str) and len(key) == 24 and all(c in "0123456789abcdef"
                                                            for c in key)


def result_path(kind: str, key: str) -> Path:
    """The result file of a run; keys never come from a path a user typed."""
    if not is_run_key(key):
        raise ValueError("not a run key")
    if not kind.isidentifier():
        raise ValueError("not a run kind")
    return bnviz_home() / kind / f"{key}.npz"


@dataclass(frozen=True)
class RunStatus:
    """state: "none", "running", "done", "failed" or "cancelled"; step of steps; for
    training runs also the last loss and the final training accuracy."""

    state: str
    step: int = 0
    steps: int = 0
    loss: float | None = None
    accuracy: float | None = None
    error: str | None = None


_lock = threading.Lock()
_runs: dict[str, RunStatus] = {}  # "kind/key" -> status of runs started in this process
_cancel: dict[str, threading.Event] = {}
_generation: dict[str, int] = {}  # a run restarted after a cancel outranks its old thread


def _progress_path(kind: str, key: str) -> Path:
    return result_path(kind, key).with_suffix(".progress.json")


def _write_progress(kind: str, key: str, status: RunStatus) -> None:
    path = _progress_path(kind, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**asdict(status), "updated": time.time()}))
    tmp.replace(path)


def run_status(kind: str, key: str) -> RunStatus:
    """From this process, else from the progress file of another, else from the result."""
    name = f"{kind}/{key}"
    done = result_path(kind, key).exists()
    with _lock:
        status = _runs.get(name)
        if status is not None and status.state == "done" and not done:
            del _runs[name]  # its result was deleted: it can be computed again
            status = None
        cancelling = name in _cancel and _cancel[name].is_set()
    if status is not None:
        if status.state == "running" and cancelling:
            return RunStatus("cancelled", status.step, status.steps, error="cancelled")
        return status
    if done:
        return RunStatus("done")
    try:
        saved = json.loads(_progress_path(kind, key).read_text())
    except (OSError, ValueError):
        return RunStatus("none")
    updated = saved.pop("updated", 0.0)
    status = RunStatus(**saved)
    if status.state == "running" and time.time() - updated > STALE_SECONDS:
        return RunStatus("failed", status.step, status.steps,
                         error="the process running it stopped")
    return status


def running_runs() -> int:
    """Runs going on now on this ``BNVIZ_HOME``, in any process: progress files that say
    running and moved within ``STALE_SECONDS``."""
    now = time.time()
    count = 0
    for path in bnviz_home().glob("*/*.progress.json"):
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being replaced, or not ours
        if isinstance(saved, dict) and saved.get("state") == "running" and \
                now - float(saved.get("updated", 0.0)) <= STALE_SECONDS:
            count += 1
    return count


def start_run(kind: str, params: dict, steps: int,
              work: Callable[[Callable[..., None], Path], RunStatus]) -> str:
    """Start ``work(progress, tmp_path)`` in a thread unless the run is done or running
    (here or in another process); returns its key.  Raises :class:`ServerBusy` when
    :func:`max_runs` runs are going on already (two processes starting at the same instant
    may both pass: the cap is exact within a process, approximate across them).

    ``work`` writes its result to ``tmp_path`` (an .npz), calls ``progress(step, loss=None)``
    as it goes (which raises Cancelled once the run is cancelled) and returns its final
    status; the file is then moved into place atomically.
    """
    key = run_key(params)
    name = f"{kind}/{key}"
    path = result_path(kind, key)
    if run_status(kind, key).state in ("running", "done"):
        return key
    with _lock:
        if name in _runs and _runs[name].state == "running" and not _cancel[name].is_set():
            return key
        busy = running_runs()
        if busy >= max_runs():
            raise ServerBusy(f"the server is busy: {busy} background computations are "
                             "going on, the most it runs at once; try again when one ends")
        generation = _generation.get(name, 0) + 1
        _generation[name] = generation
        _runs[name] = RunStatus("running", 0, steps)
        _cancel[name] = cancelled = threading.Event()
        try:
            _write_progress(kind, key, _runs[name])  # counted by running_runs from now on
        except OSError as exc:
            del _runs[name], _cancel[name]
            raise ValueError(f"cannot write under BNVIZ_HOME ({exc.strerror})") from None
    last_write = [time.monotonic()]

    def current() -> bool:
        return _generation.get(name) == generation

    def progress(step: int, loss: float | None = None) -> None:
        if cancelled.is_set():
            raise Cancelled
        status = RunStatus("running", step, steps, loss)
        with _lock:
            if current():
                _runs[name] = status
        now = time.monotonic()
        if step == steps or now - last_write[0] >= PROGRESS_SECONDS:
            last_write[0] = now
            if current():
                _write_progress(kind, key, status)

    def run() -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{generation}.tmp.npz")
            final = work(progress, tmp)
            if cancelled.is_set():
                raise Cancelled
            tmp.replace(path)  # atomic: a half-written result is never read
        except Cancelled:
            final = RunStatus("cancelled", error="cancelled")
        except Exception as exc:  # reported in the page, never raised into the server
            final = RunStatus("failed", error=f"{type(exc).__name__}: {exc}")
        with _lock:
            if not current():  # a newer run of the same key took over
                return
            _runs[name] = final
            _cancel.pop(name, None)
        try:
            if final.state == "done":  # the result on disk now says so
                _progress_path(kind, key).unlink(missing_ok=True)
            else:  # other processes must see the failure too
                _write_progress(kind, key, final)
        except OSError:
            pass  # the in-memory status still reports it in this process

    threading.Thread(target=run, name=f"bnviz-{kind}-{key}", daemon=True).start()
    return key


def cancel_run(kind: str, key: str) -> bool:
    """Ask a run of this process to stop at its next progress report."""
    name = f"{kind}/{key}"
    with _lock:
        event = _cancel.get(name)
        status = _runs.get(name)
        running = status is not None and status.state == "running"
    if event is None or not running:
        return False
    event.set()  # the run stops at its next progress report, before writing any result
    try:  # other processes see the cancel at once
        _write_progress(kind, key, RunStatus("cancelled", status.step, status.steps,
                                             error="cancelled"))
    except OSError:
        pass
    return True
