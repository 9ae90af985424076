"""Helpers for tests that talk to a served dashboard over HTTP (gunicorn on loopback)."""

from __future__ import annotations

import json
import socket
import urllib.request

#: The jobs page's table callback, as the browser sends it: a cheap real callback.
JOBS_REFRESH = {
    "output": "..jobs-table.children...jobs-selected.options...jobs-overlay.options..."
              "jobs-backend.children..",
    "outputs": [{"id": "jobs-table", "property": "children"},
                {"id": "jobs-selected", "property": "options"},
                {"id": "jobs-overlay", "property": "options"},
                {"id": "jobs-backend", "property": "children"}],
    "inputs": [{"id": "jobs-poll", "property": "n_intervals", "value": 1}],
    "changedPropIds": ["jobs-poll.n_intervals"], "state": []}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post_callback(base: str, payload: dict, timeout: float = 60) -> dict:
    """POST a callback request to ``/_dash-update-component``; the decoded reply."""
    req = urllib.request.Request(base + "/_dash-update-component",
                                 json.dumps(payload).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.load(r)
