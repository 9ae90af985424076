"""Background runs whose results are kept on disk (training for Figure 6, density for Figure 3).

A run is identified by a kind (a folder) and a key (a hash of everything that determines
it).  Its result is written atomically to ``$BNVIZ_HOME/<kind>/<key>.npz`` (default
``~/.bnviz``), so a run is done once and reused, also after a restart.  While it runs, its
progress is kept in memory and in ``<key>.progress.json``, which every server process (each
gunicorn worker) can read; a progress file that stops moving means the process running it
died.  A run can be cancelled.
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

__all__ = ["Cancelled", "RunStatus", "bnviz_home", "cancel_run", "result_path", "run_key",
           "run_status", "start_run"]

#: A run whose progress file has not moved for this long is taken to have died.
STALE_SECONDS = 60.0


class Cancelled(Exception):
    """Raised inside a run's work when the run was cancelled."""


def bnviz_home() -> Path:
    """Where local state lives: ``BNVIZ_HOME`` or ``~/.bnviz``."""
    return Path(os.environ.get("BNVIZ_HOME", Path.home() / ".bnviz"))


def run_key(params: dict) -> str:
    """A stable key for a run's parameters."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:24]


def result_path(kind: str, key: str) -> Path:
    """The result file of a run; keys never come from a path a user typed."""
    if not (len(key) == 24 and all(c in "0123456789abcdef" for c in key)):
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
    with _lock:
        status = _runs.get(f"{kind}/{key}")
    if status is not None:
        return status
    if result_path(kind, key).exists():
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


def start_run(kind: str, params: dict, steps: int,
              work: Callable[[Callable[..., None], Path], RunStatus]) -> str:
    """Start ``work(progress, tmp_path)`` in a thread unless the run is done or running
    (here or in another process); returns its key.

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
        if name in _runs and _runs[name].state == "running":
            return key
        _runs[name] = RunStatus("running", 0, steps)
        _cancel[name] = threading.Event()
    cancelled = _cancel[name]

    def progress(step: int, loss: float | None = None) -> None:
        if cancelled.is_set():
            raise Cancelled
        status = RunStatus("running", step, steps, loss)
        with _lock:
            _runs[name] = status
        if step % 25 == 0 or step == steps:
            _write_progress(kind, key, status)

    def run() -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.npz")
            final = work(progress, tmp)
            tmp.replace(path)  # atomic: a half-written result is never read
        except Cancelled:
            final = RunStatus("cancelled", error="cancelled")
        except Exception as exc:  # reported in the page, never raised into the server
            final = RunStatus("failed", error=f"{type(exc).__name__}: {exc}")
        with _lock:
            _runs[name] = final
        try:
            if final.state == "done":  # the result on disk now says so
                _progress_path(kind, key).unlink(missing_ok=True)
            else:  # other processes must see the failure too
                _write_progress(kind, key, final)
        except OSError:
            pass  # the in-memory status still reports it in this process

    _write_progress(kind, key, _runs[name])
    threading.Thread(target=run, name=f"bnviz-{kind}-{key}", daemon=True).start()
    return key


def cancel_run(kind: str, key: str) -> bool:
    """Ask a run of this process to stop at its next progress report."""
    with _lock:
        event = _cancel.get(f"{kind}/{key}")
    if event is None:
        return False
    event.set()
    return True
