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


def page_values(tree) -> dict[str, dict]:
    """id -> props of every component of a layout (the page's values when it loads)."""
    from explorer_helpers import walk

    return {c.id: c.to_plotly_json()["props"] for c in walk(tree)
            if isinstance(getattr(c, "id", None), str)}


def callback_request(dependencies: list[dict], output_start: str, values: dict[str, dict]) -> dict:
    """The request the browser sends for the callback whose output starts so (among a
    /_dash-dependencies answer), with the page's values."""
    dep = next(d for d in dependencies if d["output"].startswith(output_start))
    outs = dep["output"].strip(".").split("...") if dep["output"].startswith("..") \
        else [dep["output"]]
    outputs = [{"id": o.rsplit(".", 1)[0], "property": o.rsplit(".", 1)[1]} for o in outs]

    def item(spec: dict) -> dict:
        return {"id": spec["id"], "property": spec["property"],
                "value": values.get(spec["id"], {}).get(spec["property"])}

    return {"output": dep["output"], "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": [item(i) for i in dep["inputs"]], "state": [item(s) for s in dep["state"]],
            "changedPropIds": []}
