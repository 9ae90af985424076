"""What ``/healthz`` reports, and whether the service is healthy: the server is up, its version
and torch device; the job store (reachable, the queue's depth, the running jobs), the broker
when there is one, the workers' heartbeats, and the free disk of ``BNVIZ_HOME``.

``status`` is "ok" or "degraded", and the container's HEALTHCHECK takes only "ok" as
healthy. Degraded means the service cannot do all its work: the store or the broker cannot
be reached (in 2 s), the disk has less than ``BNVIZ_MIN_FREE_MB`` free (new work is refused,
:mod:`bnviz.service.disk`), or a job has waited in the queue for more than
``BNVIZ_JOB_STALE_SECONDS`` with no worker beating (the local worker starts on demand and
exits when idle, so no worker is fine while nothing waits). ``problems`` says which, one line
each. The answer is cheap (a count per status, one disk query): Docker polls it every 30 s.

Where the server has a jobs token (``BNVIZ_JOBS_TOKEN``), an anonymous reader gets only the
status, the queue's size and how many problems there are (:func:`for_reader`): the device,
the version, the workers' names (host and process) and the problems' text (a store's error
may name a path or a URL) need the token (``Authorization: Bearer <token>``).

Behind ``bnviz serve`` it is answered by a process of its own (:mod:`bnviz.server.health_app`),
so that it never waits behind the dashboard's busy threads; there it also reports whether
the dashboard's gunicorns accept connections (two, where the stack splits the workers: one
that does not, being started again, is a problem too, though the other serves) and how long
they take to answer a light request (``web``, :class:`LightProbe`): over
``LIGHT_GOAL_SECONDS`` the status is "degraded".
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any
from urllib.parse import urlparse

from bnviz import __version__
from bnviz.config import bnviz_home, setting

__all__ = ["STORE_TIMEOUT", "for_reader", "health"]

#: Seconds /healthz waits for the store's answer (a locked or unreachable store is reported,
#: not waited for).
STORE_TIMEOUT = 2.0
_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bnviz-health")
_pending: list[Future] = []
_pending_lock = threading.Lock()


def _fresh_pool_after_fork() -> None:
    """A forked child (a gunicorn worker of a master that imported the app, preload_app)
    inherits a pool that counts the parent's threads, which the fork left behind: its first
    /healthz would wait on them and say "degraded". The child gets a pool of its own."""
    global _pool, _pending_lock
    _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bnviz-health")
    _pending.clear()
    _pending_lock = threading.Lock()


os.register_at_fork(after_in_child=_fresh_pool_after_fork)


def _broker_reachable(url: str, timeout: float = 1.0) -> bool:
    """A TCP connect to the broker's host and port (no Celery round trip)."""
    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "localhost", parsed.port or 6379),
                                      timeout=timeout):
            return True
    except OSError:
        return False


def _store_state() -> dict[str, Any]:
    """The store's view: counts per status, the oldest queued job's wait, the workers."""
    from bnviz.records.store import open_store

    store = open_store()
    counts = store.counts()
    oldest = store.with_status("queued", 1)
    now = time.time()
    return {"counts": counts, "oldest_wait": now - oldest[0].created if oldest else 0.0,
            "workers": store.workers(), "now": now}


def _with_timeout(fn, timeout: float) -> Any:
    """``fn()`` in a helper thread, at most ``timeout`` s (TimeoutError); while an earlier
    call still hangs, a new one is not started (the store is slow: say so at once)."""
    with _pending_lock:
        _pending[:] = [f for f in _pending if not f.done()]
        if len(_pending) >= 2:
            raise FutureTimeout
        future = _pool.submit(fn)
        _pending.append(future)
    return future.result(timeout)


def _jobs_section(problems: list[str]) -> dict[str, Any]:
    from bnviz.jobs import backend
    from bnviz.jobs.celery_app import broker_url
    from bnviz.records.store import StoreError, stale_seconds, store_url

    url = store_url()
    jobs: dict[str, Any] = {"backend": backend(),
                            "store": url.split("@")[-1] if "redis" in url else "sqlite"}
    try:
        state = _with_timeout(_store_state, STORE_TIMEOUT)
        jobs["store_reachable"] = True
    except (StoreError, FutureTimeout, OSError) as exc:
        jobs["store_reachable"], state = False, None
        problems.append("the job store cannot be reached" +
                        (f": {exc}" if str(exc) else f" within {STORE_TIMEOUT:g} s"))
    broker = broker_url()
    if broker:
        jobs["broker_reachable"] = _broker_reachable(broker)
        if not jobs["broker_reachable"]:
            problems.append("the job broker cannot be reached")
    jobs["reachable"] = jobs["store_reachable"] and jobs.get("broker_reachable", True)
    if state is None:
        return jobs
    stale = stale_seconds()
    workers = [{"name": name, "backend": info.get("backend"), "running": info.get("running"),
                "seconds_since_beat": round(state["now"] - info.get("time", 0), 1)}
               for name, info in sorted(state["workers"].items())]
    alive = [w for w in workers if w["seconds_since_beat"] <= stale]
    jobs.update(queued=state["counts"]["queued"], running=state["counts"]["running"],
                oldest_queued_seconds=round(state["oldest_wait"], 1), workers_alive=len(alive),
                workers=alive)
    if state["counts"]["queued"] and not alive and state["oldest_wait"] > stale:
        problems.append(f"a job has waited {state['oldest_wait']:.0f} s and no worker is "
                        "running")
    return jobs


def _web_accepting(socket_path: str, timeout: float = 1.0) -> bool:
    """The dashboard's gunicorn accepts a connection on its unix socket (a busy one does: the
    kernel queues it; a dead one does not)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(timeout)
            probe.connect(socket_path)
        return True
    except OSError:
        return False


#: Seconds within which the dashboard must answer a light request (GET /_dash-layout), else
#: /healthz says "degraded" (issue 30: heavy work once stalled the site while it said "ok").
LIGHT_GOAL_SECONDS = 2.0
#: Seconds between two light requests of the monitor.
LIGHT_PROBE_EVERY = 2.0


class LightProbe:
    """Times a light request to the dashboard's gunicorns in a background thread, every
    LIGHT_PROBE_EVERY s (to each in turn, past one that does not take connections), so that
    /healthz answers at once from what it last saw: the last answer's seconds, or how long
    the request in flight has waited so far."""

    def __init__(self, socket_paths: Sequence[str]):
        self.socket_paths = tuple(socket_paths)
        self.turn = 0
        self.started: float | None = None  # the request in flight, since (monotonic)
        self.last: float | None = None  # the last answer's seconds (None: no answer yet)
        self.failed = False
        threading.Thread(target=self._run, name="bnviz-light-probe", daemon=True).start()

    def _connected(self) -> socket.socket | None:
        """A connection to the next gunicorn in turn that takes one, or None."""
        n = len(self.socket_paths)
        self.turn += 1
        for i in range(n):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(60)
            try:
                sock.connect(self.socket_paths[(self.turn + i) % n])
                return sock
            except OSError:
                sock.close()
        return None

    def _once(self) -> None:
        import http.client

        self.started = time.monotonic()
        sock = self._connected()
        conn = http.client.HTTPConnection("localhost", timeout=60)
        conn.sock = sock
        try:
            if sock is None:
                raise ConnectionRefusedError
            conn.request("GET", "/_dash-layout")
            response = conn.getresponse()
            response.read()
            self.failed = response.status >= 500
        except (OSError, http.client.HTTPException):
            self.failed = True
        finally:
            conn.close()
            self.last, self.started = time.monotonic() - self.started, None

    def _run(self) -> None:
        while True:
            self._once()
            time.sleep(LIGHT_PROBE_EVERY)

    def seconds(self) -> float | None:
        """The light request's latency as it now stands: the one in flight if it has waited
        longer than the last answer took, else the last answer's."""
        started = self.started
        waiting = time.monotonic() - started if started is not None else 0.0
        return max(waiting, self.last) if self.last is not None else (waiting or None)


_probes: dict[tuple[str, ...], LightProbe] = {}
_probes_lock = threading.Lock()


def _light_probe(socket_paths: tuple[str, ...]) -> LightProbe:
    with _probes_lock:
        if socket_paths not in _probes:
            _probes[socket_paths] = LightProbe(socket_paths)
        return _probes[socket_paths]


def _web_section(web_sockets: str | Sequence[str] | None,
                 problems: list[str]) -> dict[str, Any]:
    if web_sockets is None:
        return {"accepting": True}
    paths = tuple(web_sockets.split(os.pathsep) if isinstance(web_sockets, str)
                  else web_sockets)
    up = sum(_web_accepting(path) for path in paths)
    web: dict[str, Any] = {"accepting": up > 0, "servers": len(paths), "servers_accepting": up}
    if not up:
        problems.append("the dashboard's server does not accept connections")
        return web
    if up < len(paths):
        problems.append(f"{len(paths) - up} of the dashboard's {len(paths)} servers do not "
                        "accept connections (the stack starts a dead one again)")
    light = _light_probe(paths)
    seconds = light.seconds()
    web["light_request_seconds"] = None if seconds is None else round(seconds, 3)
    if seconds is not None and seconds > LIGHT_GOAL_SECONDS:
        problems.append(f"the dashboard took {seconds:.1f} s to answer a light request "
                        f"(more than {LIGHT_GOAL_SECONDS:g} s): it is overloaded")
    elif light.failed:
        problems.append("the dashboard failed a light request (GET /_dash-layout)")
    return web


def health(web_sockets: str | Sequence[str] | None = None) -> dict[str, Any]:
    """The JSON of ``/healthz`` (see the module docstring). ``web_sockets``: asked from
    another process (:mod:`bnviz.server.health_app`), the dashboard's gunicorn sockets (a
    sequence, or one string joined by os.pathsep), which must accept connections; without
    them the dashboard answers for itself."""
    from bnviz.device import pick_device
    from bnviz.service.disk import free_megabytes

    problems: list[str] = []
    try:
        device = str(pick_device())
    except ValueError as exc:
        device = f"error: {exc}"
        problems.append(f"the device setting: {exc}")
    jobs = _jobs_section(problems)
    need = setting("BNVIZ_MIN_FREE_MB")
    try:
        free = free_megabytes(bnviz_home())
    except OSError:
        free = 0.0
    disk = {"free_mb": round(free, 1), "min_free_mb": need, "ok": free >= need}
    if not disk["ok"]:
        problems.append(f"the disk is nearly full ({free:.0f} MB free, {need:.0f} MB kept "
                        "spare): new work is refused")
    web = _web_section(web_sockets, problems)
    return {"status": "degraded" if problems else "ok", "problems": problems,
            "version": __version__, "device": device, "web": web, "jobs": jobs, "disk": disk}


def for_reader(report: dict[str, Any], authorization: str | None) -> dict[str, Any]:
    """:func:`health`'s report as this reader may see it: whole without a jobs token on the
    server or with it in ``authorization`` (the request's header), else the public part."""
    from bnviz.service.clients import jobs_token, token_ok

    given = (authorization or "").strip()
    if jobs_token() is None or (given[:7].lower() == "bearer " and token_ok(given[7:])):
        return report
    jobs = report.get("jobs", {})
    return {"status": report["status"], "problems": len(report["problems"]),
            "jobs": {"queued": jobs.get("queued"), "running": jobs.get("running")},
            "details": "the server's jobs token (Authorization: Bearer) shows the details"}

