"""Admission control for the pages' heavy computations: one address cannot stall the site.

A web process answers a page's request in one of gunicorn's few threads, on a machine of a
few cores. Measured before this module (``bench/load.py --scenario heavy``, 10 clients of one
address on the heaviest views, 2 cores): ``GET /`` and a default explorer step, 10 ms alone,
took a p90 of 5.8 s and 6.0 s, because every thread and both cores computed heavy views.

So the cost of a computation is estimated from its parameters before it starts
(:mod:`bnviz.params.cost`, as the caps are), and one from ``BNVIZ_HEAVY_SECONDS`` on runs
under :func:`admitted`:

* **a global bound**: at most ``BNVIZ_HEAVY_SLOTS`` heavy computations run at once across
  every web process of this server (default: the usable cores but one, at least 1), so a
  core always stays for light requests;
* **a bound per process**: at most ``BNVIZ_WEB_THREADS - 2`` of a process's threads (at least
  1) hold heavy requests, running or waiting, so two threads of every process always answer
  light requests at once;
* **a bound per client** (the address, :func:`bnviz.service.clients.request_client`): at most
  ``BNVIZ_HEAVY_PER_CLIENT`` of its heavy computations run at once and twice as many more
  wait; its excess is refused at once.

A heavy computation that cannot run waits for its turn (up to ``BNVIZ_HEAVY_WAIT_SECONDS``).
One refused, or that waited in vain, raises :class:`ServerBusy`: an InputError whose one line
says when to try again, so a page shows it where it shows a bad value's (nothing is lost;
the controls stay), and a route that does not catch it answers ``429`` with ``Retry-After``
(app.py).

The slots are ``flock`` locks on files in a private directory of this server (0700, under the
system's temporary directory, named for the user and ``BNVIZ_HOME``): shared by every
process, released by the kernel when a process dies, so a killed worker leaks no slot. Work
outside a web request (the command line, tests calling a function, a background thread)
is not bounded here. Nested calls in one thread (a memoised computation calling another)
are admitted once, by the outermost.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from bnviz.config import bnviz_home, setting
from bnviz.messages import InputError

__all__ = ["LIGHT_THREADS", "RETRY_SECONDS", "ServerBusy", "admitted", "ahead_of_time",
           "heavy_in_process", "slot_directory"]

#: Threads of each web process kept for light requests.
LIGHT_THREADS = 2
#: The retry time (seconds) a busy answer gives, in its words and as its Retry-After.
RETRY_SECONDS = 5
#: How often a waiting heavy computation tries the slots again (seconds).
POLL_SECONDS = 0.05

_local = threading.local()
_process_lock = threading.Lock()
_process_heavy = 0  # this process's heavy requests, running or waiting


class ServerBusy(InputError):
    """The server is busy with heavy work: this computation was not started. ``retry_after``
    is the seconds after which trying again makes sense."""

    def __init__(self, text: str, retry_after: int = 5):
        super().__init__(text)
        self.retry_after = retry_after


def slot_directory() -> Path:
    """The private directory of this server's slot files (made 0700 on first use)."""
    home = str(bnviz_home().resolve())
    name = f"bnviz-admission-{os.getuid()}-{hashlib.sha256(home.encode()).hexdigest()[:12]}"
    path = Path(tempfile.gettempdir()) / name
    path.mkdir(mode=0o700, exist_ok=True)
    if path.stat().st_uid != os.getuid():  # someone else's directory of that name
        raise ServerBusy("the server cannot bound its heavy work (a foreign slot directory "
                         f"{name})", 60)
    return path


def _try_slot(path: Path) -> int | None:
    """The descriptor of ``path`` locked (flock, exclusive), or None when another holds it.
    Two descriptors of one file conflict within one process too, so threads count apart."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _first_free(directory: Path, prefix: str, count: int) -> int | None:
    for i in random.sample(range(count), count):  # no slot favoured
        fd = _try_slot(directory / f"{prefix}{i}")
        if fd is not None:
            return fd
    return None


def _release(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)  # closing the last descriptor releases its flock
    fds.clear()


def heavy_in_process() -> int:
    """This process's heavy requests, running or waiting (the per-process bound's count)."""
    return _process_heavy


@contextlib.contextmanager
def _process_share() -> Iterator[None]:
    global _process_heavy
    limit = max(1, int(setting("BNVIZ_WEB_THREADS")) - LIGHT_THREADS)
    with _process_lock:
        if _process_heavy >= limit:
            raise ServerBusy("the server is busy with other heavy views: try again in "
                             f"{RETRY_SECONDS} s", RETRY_SECONDS)
        _process_heavy += 1
    try:
        yield
    finally:
        with _process_lock:
            _process_heavy -= 1


@contextlib.contextmanager
def ahead_of_time() -> Iterator[None]:
    """Heavy work in this block was not asked for by a person yet (the lecture's next step,
    prepared while the lecturer talks): it runs only if a slot is free at once, and never
    waits in the queue ahead of a person's request (:class:`ServerBusy` at once instead)."""
    before = getattr(_local, "ahead", False)
    _local.ahead = True
    try:
        yield
    finally:
        _local.ahead = before


@contextlib.contextmanager
def admitted(seconds: float, client: str | None = None) -> Iterator[None]:
    """Run the block now if its estimated ``seconds`` are light, else once it holds a heavy
    slot (module docstring); :class:`ServerBusy` when it may not wait or waited in vain.
    ``client``: the requester (default: the Flask request's; none outside a request, and
    then nothing is bounded)."""
    if client is None:
        from bnviz.service.clients import request_client

        client = request_client()
    if (client is None or getattr(_local, "admitted", False)
            or seconds < setting("BNVIZ_HEAVY_SECONDS")):
        yield
        return
    directory = slot_directory()
    per_client = int(setting("BNVIZ_HEAVY_PER_CLIENT"))
    held: list[int] = []
    with _process_share():
        ticket = _first_free(directory, f"client-{client}-ticket-", 3 * per_client)
        if ticket is None:
            raise ServerBusy(f"you already have {3 * per_client} heavy views in progress: "
                             f"try again in {RETRY_SECONDS} s, once they are done",
                             RETRY_SECONDS)
        held.append(ticket)
        try:
            ahead = getattr(_local, "ahead", False)
            deadline = time.monotonic() + setting("BNVIZ_HEAVY_WAIT_SECONDS")
            slots = int(setting("BNVIZ_HEAVY_SLOTS"))
            while True:
                mine = _first_free(directory, f"client-{client}-run-", per_client)
                if mine is not None:
                    shared = _first_free(directory, "slot-", slots)
                    if shared is not None:
                        held += [mine, shared]
                        break
                    os.close(mine)
                if ahead:
                    raise ServerBusy("no heavy slot is free now for work prepared ahead",
                                     RETRY_SECONDS)
                if time.monotonic() >= deadline:
                    waited = setting("BNVIZ_HEAVY_WAIT_SECONDS")
                    raise ServerBusy(f"the server is busy with other heavy views: this one "
                                     f"waited {waited:g} s for its turn; try again in "
                                     f"{2 * RETRY_SECONDS} s", 2 * RETRY_SECONDS)
                time.sleep(POLL_SECONDS * random.uniform(0.5, 1.5))
            _local.admitted = True
            try:
                yield
            finally:
                _local.admitted = False
        finally:
            _release(held)
