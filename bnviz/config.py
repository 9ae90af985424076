"""bnviz's settings: environment variables, each read and checked in one place.

``BNVIZ_HOME`` (default ``~/.bnviz``) holds all state: the job store, results, uploads and
the shared cache. The numeric settings are described in :data:`SETTINGS` with their defaults
and bounds; :func:`setting` reads one, and a value that is not of its kind or out of its
bounds raises :class:`SettingError` naming the variable. :func:`check_settings` checks them
all, so a server or a worker with a bad setting stops at its start with one line
(:func:`exit_on_bad_settings`) rather than with a traceback, or later, in a request.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PRIVATE_UMASK", "SETTINGS", "Setting", "SettingError", "bnviz_home",
           "check_settings", "exit_on_bad_settings", "private_home", "setting"]

#: The service's processes create files 0600 and folders 0700 (``bnviz serve``, gunicorn's
#: config, and what they start inherit it): the job store, results, uploads and caches are
#: the service's, not every local user's.
PRIVATE_UMASK = 0o077


def bnviz_home() -> Path:
    """``BNVIZ_HOME`` or ``~/.bnviz``."""
    return Path(os.environ.get("BNVIZ_HOME", Path.home() / ".bnviz"))


def private_home() -> Path:
    """:func:`bnviz_home`, created 0700, or made 0700 where it exists and is this user's (a
    home made before, 0755 by a usual umask, exposed the files it holds to every local user
    through their own modes). Another user's folder is left as it is."""
    home = bnviz_home()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if home.stat().st_uid == os.geteuid():
            home.chmod(0o700)
    except OSError:  # a read-only mount, say: its own modes stand
        pass
    return home


class SettingError(ValueError):
    """An environment setting bnviz cannot use; the message names it."""


def _cores() -> int:
    return max(2, os.cpu_count() or 1)


def _cores_but_one() -> int:
    """The cores this process may use, but one (at least 1): heavy page computations take
    these, and the last core stays for light requests (bnviz.service.admission)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return max(1, usable - 1)


def _half_memory_gb() -> float:
    """Half of this machine's memory in GB (8 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30 / 2
    except (ValueError, OSError, AttributeError):
        return 8.0


@dataclass(frozen=True)
class Setting:
    """One numeric setting: its kind ("int" or "float"), its default (a value or a function
    of the machine) and its bounds."""

    name: str
    kind: str
    default: float | Callable[[], float]
    lo: float
    hi: float
    meaning: str

    def read(self) -> float:
        raw = os.environ.get(self.name, "").strip()
        if not raw:
            return self.default() if callable(self.default) else self.default
        kind = "a whole number" if self.kind == "int" else "a number"
        try:
            value = float(raw) if self.kind == "float" else int(raw)
        except ValueError:
            value = None
        if value is None or value != value or not self.lo <= value <= self.hi:
            shown = raw if len(raw) <= 30 else raw[:29] + "…"
            raise SettingError(f"{self.name} ({self.meaning}) must be {kind} from {self.lo:g} "
                               f"to {self.hi:g}, got {shown!r}")
        return value


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("BNVIZ_PORT", "int", 8050, 1, 65535, "the port make run and bnviz serve serve on"),
    Setting("BNVIZ_TORCH_THREADS", "int", 1, 1, 1024,
            "torch threads per web process, and of `bnviz train`"),
    Setting("BNVIZ_MAX_RUNS", "int", _cores, 1, 100_000, "jobs queued or running at once"),
    Setting("BNVIZ_LOCAL_WORKERS", "int", _cores, 1, 1024, "jobs the local worker runs"),
    Setting("BNVIZ_WORKER_IDLE_SECONDS", "float", 600.0, 0, 10**9,
            "seconds before an idle local worker exits"),
    Setting("BNVIZ_JOB_STALE_SECONDS", "float", 60.0, 1, 10**9,
            "seconds of silence before a running job is failed"),
    Setting("BNVIZ_CACHE_MB", "float", 256.0, 1, 10**7, "memory cache per process"),
    Setting("BNVIZ_PRECOMPUTE_TOUR", "int", 1, 0, 1,
            "1: a web process computes the lecture tour's steps when it starts"),
    Setting("BNVIZ_DISK_CACHE_MB", "float", 1024.0, 1, 10**9, "shared disk cache"),
    Setting("BNVIZ_WEB_WORKERS", "int", _cores, 1, 1024, "gunicorn worker processes"),
    Setting("BNVIZ_WEB_THREADS", "int", 4, 1, 1024, "threads per gunicorn worker"),
    Setting("BNVIZ_WEB_TIMEOUT", "int", 60, 1, 86_400, "seconds before a hung worker restarts"),
    Setting("BNVIZ_JOB_MAX_HOURS", "float", 2.0, 0.001, 10**6,
            "estimated hours of work one job may ask for"),
    Setting("BNVIZ_JOB_MAX_GB", "float", _half_memory_gb, 0.01, 10**6,
            "estimated GB of memory one job may use"),
    Setting("BNVIZ_JOBS_PER_CLIENT", "int", 3, 1, 100_000,
            "jobs one client may have queued or running"),
    Setting("BNVIZ_JOB_ATTEMPTS", "int", 3, 1, 100,
            "times a job is started before a lost worker fails it"),
    Setting("BNVIZ_UPLOAD_MAX_MB", "float", 512.0, 0.001, 10**7,
            "MB of parameters an uploaded network may declare (estimated before any load)"),
    Setting("BNVIZ_UPLOAD_QUOTA_MB", "float", 200.0, 0.001, 10**7,
            "disk the uploaded networks may take"),
    Setting("BNVIZ_UPLOAD_RETENTION_DAYS", "float", 30.0, 0.001, 10**5,
            "days an uploaded network is kept after its last use"),
    Setting("BNVIZ_STORE_BUSY_SECONDS", "float", 120.0, 0.1, 86_400,
            "seconds a locked job store is retried before an error"),
    Setting("BNVIZ_MIN_FREE_MB", "float", 500.0, 0, 10**9,
            "free disk below which new work is refused"),
    Setting("BNVIZ_RATE_PER_ADDRESS", "int", 300, 1, 1_000_000,
            "requests a second from one client address (bnviz serve's nginx)"),
    Setting("BNVIZ_JOBS_RATE_PER_ADDRESS", "int", 20, 1, 1_000_000,
            "job submissions and cancels a minute from one client address"),
    Setting("BNVIZ_CONNECTIONS_PER_ADDRESS", "int", 1000, 1, 1_000_000,
            "open connections from one client address"),
    Setting("BNVIZ_HEAVY_SECONDS", "float", 0.5, 0, 10**6,
            "estimated seconds from which a page's computation is heavy"),
    Setting("BNVIZ_HEAVY_SLOTS", "int", _cores_but_one, 1, 1024,
            "heavy computations the web processes run at once"),
    Setting("BNVIZ_HEAVY_PER_CLIENT", "int", 1, 1, 1024,
            "heavy computations one client address may run at once"),
    Setting("BNVIZ_HEAVY_WAIT_SECONDS", "float", 20.0, 0, 3600,
            "seconds a heavy computation waits for its turn before 'busy'"),
)}


def setting(name: str) -> float:
    """The value of a setting of :data:`SETTINGS` (SettingError for a bad one)."""
    return SETTINGS[name].read()


def check_settings() -> None:
    """Check every setting of :data:`SETTINGS` and ``BNVIZ_DEVICE``; SettingError for the
    first bad one."""
    for s in SETTINGS.values():
        s.read()
    from bnviz.device import pick_device  # imports torch: only where a server starts

    try:
        pick_device()
    except ValueError as exc:
        raise SettingError(str(exc)) from None


def exit_on_bad_settings() -> None:
    """Stop the process with one line on stderr (exit code 2) when a setting is bad."""
    try:
        check_settings()
    except SettingError as exc:
        print(f"bnviz: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
