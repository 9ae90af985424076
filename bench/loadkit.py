"""What the load benchmarks share (``bench/load.py``, ``bench/load_stack.py``,
``bench/heavy_views.py``): a free port, the explorer page's default control values and its
figure request as the browser sends it.  A module of its own so that the scripts import it,
not each other (no import cycle between the scenarios and the script that starts them).
"""

from __future__ import annotations

import json
import socket
import sys
import urllib.request
from pathlib import Path

__all__ = ["ROOT", "figure_request", "free_port", "layout_values"]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def layout_values() -> dict[str, dict]:
    """id -> {prop: value} of the explorer page's components (its default state)."""
    from bnviz.web.layouts.explorer import page_layout

    found: dict[str, dict] = {}

    def walk(node) -> None:
        if isinstance(node, list | tuple):
            for child in node:
                walk(child)
            return
        if not hasattr(node, "to_plotly_json"):
            return
        props = node.to_plotly_json()["props"]
        if isinstance(props.get("id"), str):
            found[props["id"]] = props
        walk(props.get("children"))

    walk(page_layout())
    return found


def figure_request(base: str) -> tuple[dict, int, int]:
    """The explorer's figure callback as the browser sends it, with default values; returns
    (payload, index of the mu input, index of the sigma input)."""
    from bnviz.web.callbacks.explorer import ids

    with urllib.request.urlopen(base + "/_dash-dependencies", timeout=30) as r:
        deps = json.load(r)
    dep = next(d for d in deps if f"{ids.GRAPH_SPACE}.figure" in d["output"])
    values = layout_values()

    def item(spec: dict) -> dict:
        return {"id": spec["id"], "property": spec["property"],
                "value": values.get(spec["id"], {}).get(spec["property"])}

    outputs = [{"id": o.split(".")[0], "property": o.split(".")[1]}
               for o in dep["output"].strip(".").split("...")]
    payload = {"output": dep["output"], "outputs": outputs,
               "inputs": [item(i) for i in dep["inputs"]],
               "state": [item(s) for s in dep["state"]], "changedPropIds": []}
    ids_in = [i["id"] for i in dep["inputs"]]
    return payload, ids_in.index(ids.MU), ids_in.index(ids.SIGMA)
