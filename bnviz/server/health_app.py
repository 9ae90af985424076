"""``/healthz`` served by a process of its own: ``bnviz serve`` runs this WSGI app as a small
gunicorn (one worker, two threads) on a second unix socket, and nginx sends ``/healthz`` there.

Served by the dashboard's gunicorn, /healthz waited in the same few threads' queue as the
callbacks: with 20 clients requesting heavy views it took a median of 13 s (max 18.5 s,
``bench/load.py --scenario heavy``), and Docker's HEALTHCHECK would have restarted a
container that was busy, not broken. Here it answers in milliseconds whatever the dashboard
does, and reports what the dashboard's own route cannot: whether the dashboard's gunicorn
still accept connections (``BNVIZ_WEB_SOCKET``, :func:`bnviz.server.health.health`). A
dashboard that hangs is gunicorn's to restart (its worker time-out), one that dies is the
supervisor's (:mod:`bnviz.server.stack`).

Only ``GET /healthz`` (and ``HEAD``) is served; anything else is a one-line JSON 404 or 405.
Every answer carries the browser security headers of nginx's own answers
(:data:`bnviz.service.headers.NGINX_ERROR_HEADERS`: JSON, nothing to run), as the dashboard's
answers carry its own: nginx passes them through.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

from bnviz.server.health import for_reader, health
from bnviz.service.headers import NGINX_ERROR_HEADERS

__all__ = ["WEB_SOCKET_ENV", "app"]

#: The dashboard gunicorns' unix sockets, joined by os.pathsep, set by bnviz serve.
WEB_SOCKET_ENV = "BNVIZ_WEB_SOCKET"


def _answer(start_response: Callable, status: str, body: dict[str, Any],
            extra: list[tuple[str, str]] | None = None) -> list[bytes]:
    data = json.dumps(body).encode() + b"\n"
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data))), *(extra or []),
                            *NGINX_ERROR_HEADERS.items()])
    return [data]


def app(environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
    """The WSGI app: ``GET /healthz`` answers :func:`~bnviz.server.health.health` with the
    dashboard's socket checked."""
    if environ.get("PATH_INFO") != "/healthz":
        return _answer(start_response, "404 NOT FOUND", {"error": "not found"})
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
        return _answer(start_response, "405 METHOD NOT ALLOWED",
                       {"error": "only GET /healthz"}, [("Allow", "GET, HEAD")])
    report = for_reader(health(os.environ.get(WEB_SOCKET_ENV) or None),
                        environ.get("HTTP_AUTHORIZATION"))
    body = _answer(start_response, "200 OK", report)
    return [] if environ["REQUEST_METHOD"] == "HEAD" else body
