"""Disk: how much is free where bnviz keeps its state, refusing new work before the disk is
full, and the quota and retention of kept files (the jitter page's uploaded networks).

A public server must not let its disk fill: with a full disk SQLite cannot write the job
store, result files come out truncated, and every job fails. So new work (a job submitted or
started, a network uploaded) is refused with :class:`DiskFull`, whose message the page, the
API and the command line show, while the file system of ``BNVIZ_HOME`` has less than
``BNVIZ_MIN_FREE_MB`` free; ``/healthz`` reports the same figure
(:mod:`bnviz.server.health`). Files kept for users (uploads) are bounded by
:func:`enforce_quota`: oldest use first out past the quota, and none kept past the
retention time.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bnviz.config import bnviz_home, setting

T = TypeVar("T")

__all__ = ["DiskFull", "Eviction", "check_free_disk", "enforce_quota", "free_megabytes",
           "touch"]


class DiskFull(ValueError):
    """Too little disk is free to take new work; the message says so."""


def free_megabytes(path: Path | None = None) -> float:
    """Megabytes free to this process on the file system of ``path`` (default BNVIZ_HOME;
    its nearest existing parent when it does not exist yet)."""
    path = Path(path or bnviz_home())
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free / 2**20


def check_free_disk(path: Path | None = None) -> None:
    """DiskFull while less than ``BNVIZ_MIN_FREE_MB`` is free where bnviz writes."""
    need, free = setting("BNVIZ_MIN_FREE_MB"), free_megabytes(path)
    if free < need:
        raise DiskFull(f"the server's disk is nearly full ({free:.0f} MB free, it keeps "
                       f"{need:.0f} MB spare): it takes no new work until space is freed")


def keep_checked(path: Path, data: bytes, check: Callable[[Path], T]) -> T:
    """Keep an uploaded file at ``path`` once ``check(file)`` accepts it: written beside
    ``path`` (same suffix), checked, then renamed into place; a refusal (any error of the
    check, as one ValueError line naming "the upload") keeps nothing.  DiskFull first when
    the disk is nearly full."""
    check_free_disk()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        # 0600 whatever the process's umask: an upload is its sender's, not every local user's
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "wb") as out:
            out.write(data)
        try:
            out = check(tmp)
        except Exception as exc:  # a loader's many errors on hostile bytes: one line
            text = (str(exc).replace(str(tmp), "the upload").replace(tmp.name, "the upload")
                    .strip() or type(exc).__name__)
            raise ValueError(text.splitlines()[0]) from None
        tmp.replace(path)
        return out
    finally:
        tmp.unlink(missing_ok=True)


def touch(path: Path) -> None:
    """Mark a kept file as used now (its retention and eviction count from its last use)."""
    try:
        os.utime(path)
    except OSError:
        pass


@dataclass(frozen=True)
class Eviction:
    """What :func:`enforce_quota` removed and what is left."""

    removed: tuple[str, ...]
    kept_bytes: int


def enforce_quota(directory: Path, quota_bytes: int, retention_seconds: float,
                  pattern: str = "*.npz", now: float | None = None) -> Eviction:
    """Remove the files of ``directory`` matching ``pattern`` not used (modified or
    :func:`touch`-ed) for ``retention_seconds``, then the least recently used ones until
    the rest fit in ``quota_bytes``. Files that vanish meanwhile (another process evicting)
    are skipped."""
    now = time.time() if now is None else now
    files = []
    for path in directory.glob(pattern):
        try:
            st = path.stat()
        except OSError:
            continue
        files.append((st.st_mtime, st.st_size, path))
    files.sort()  # oldest use first
    removed, total = [], sum(size for _, size, _ in files)
    for used, size, path in files:
        if now - used <= retention_seconds and total <= quota_bytes:
            break
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        removed.append(path.name)
        total -= size
    return Eviction(tuple(removed), total)
