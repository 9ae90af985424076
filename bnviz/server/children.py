"""The stack's children as processes (:mod:`bnviz.server.stack`): each ends with the stack,
the stack reaps its descendants' orphans, and a gunicorn is ready once it answers on its
unix socket. Linux's prctl where there is one; elsewhere these do nothing."""

from __future__ import annotations

import ctypes
import http.client
import os
import signal
import socket
import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = ["answers", "become_subreaper", "end_with_parent", "reap", "send"]


def _prctl():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # Linux's C library
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def end_with_parent() -> None:
    """In a child, before it runs: SIGTERM it when this supervisor dies, even by SIGKILL or
    the OOM killer, so that a dead supervisor never leaves nginx or gunicorn serving
    unsupervised (Linux's PR_SET_PDEATHSIG; elsewhere nothing)."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux's
    PR_SET_CHILD_SUBREAPER): a job process whose worker was killed, or the workers of a
    gunicorn master killed with SIGKILL, are handed to the stack, which collects them when
    they end, instead of staying zombies under a PID 1 that reaps nothing. Returns whether it
    took effect."""
    return _PRCTL is not None and _PRCTL(36, 1, 0, 0, 0) == 0  # 36: PR_SET_CHILD_SUBREAPER


def reap(children: Iterable[subprocess.Popen]) -> None:
    """Collect every ended child of this process: ``children`` (their exit codes, which
    their ``poll`` then reports) and, as a container's PID 1 or a subreaper, the orphans the
    kernel hands to us (or they would stay zombies)."""
    ours = {proc.pid: proc for proc in children}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in ours:
            ours[pid].returncode = os.waitstatus_to_exitcode(status)


def send(proc: subprocess.Popen, sig: int) -> None:
    """Signal ``proc`` unless it has ended already."""
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def answers(socket_path: Path, timeout: float = 5.0) -> bool:
    """gunicorn answers /healthz on its socket with a 200 (a worker has imported and warmed
    the app): what the stack waits for before nginx may send it requests."""
    conn = _UnixHTTPConnection(str(socket_path), timeout=timeout)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
