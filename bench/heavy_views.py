"""The heaviest requests each page allows, as Dash's client sends them: the callbacks' bodies
built from ``/_dash-dependencies`` with the values at the caps (``bnviz/caps.py``,
bench/caps.py's rows), each with a fresh random seed so that no cache answers it. Used by
``bench/load.py --scenario heavy`` (``bench/load_stack.py``)."""

from __future__ import annotations

import gzip
import http.client
import json
import random
import threading
import time
import urllib.request
from collections import Counter

from loadkit import layout_values

MESSAGES: Counter = Counter()  # the messages (a cap refused) the heavy views answered
SIZES: Counter = Counter()  # the largest answer (bytes on the wire) of each outcome


def _payload(deps: list, output: str, values: dict, layout: dict | None = None) -> dict:
    """The callback whose outputs include ``output`` ("id.prop") as Dash's client sends it:
    inputs and state from ``values`` (id -> value), else from the page's layout."""
    def outs(dep):
        return dep["output"].strip(".").split("...")
    dep = next(d for d in deps if output in outs(d))
    layout = layout or {}

    def item(spec: dict) -> dict:
        value = values.get(spec["id"], layout.get(spec["id"], {}).get(spec["property"]))
        return {"id": spec["id"], "property": spec["property"], "value": value}

    return {"output": dep["output"],
            "outputs": [{"id": o.split(".")[0], "property": o.split(".")[1]} for o in outs(dep)],
            "inputs": [item(i) for i in dep["inputs"]],
            "state": [item(s) for s in dep["state"]], "changedPropIds": []}


def heavy_requests(base: str) -> dict:
    """name -> function(rng) -> callback body: each page's heaviest request at its caps
    (bench/caps.py's rows), with a fresh random seed each time so no cache answers it."""
    from bnviz.web.callbacks.explorer import ids as ex
    from bnviz.web.callbacks.jitter import ids as ji
    from bnviz.web.callbacks.papers import ids as pa

    with urllib.request.urlopen(base + "/_dash-dependencies", timeout=30) as r:
        deps = json.load(r)
    layout = layout_values()
    seed = lambda rng: rng.randrange(2**31 - 1)  # noqa: E731

    def explorer(rng, **over):
        values = {ex.DEPTH: 12, ex.WIDTH: 48, ex.ACTIVATION: "leaky_relu", ex.ALPHA: 0.1,
                  ex.MODE: "bn", ex.WEIGHT_SEED: seed(rng), ex.DATASET: "gaussian",
                  ex.N_POINTS: 2000, ex.DATA_SEED: 0, ex.BATCH_SIZE: "64", ex.MU: 0.5,
                  ex.SIGMA: 1.0, ex.SCOPE: "all", ex.LAYER: 12, ex.VIEW: "space"} | over
        return _payload(deps, f"{ex.GRAPH_SPACE}.figure", values, layout)

    def jitter(rng):
        return _payload(deps, f"{ji.GRAPH}.figure", {
            ji.DATASET: "moons", ji.N: 2000, ji.DEPTH: 3, ji.WIDTH: 16, ji.SEED: seed(rng),
            ji.BATCH: 4, ji.REALIZATIONS: 128, ji.VIRTUAL: None, ji.TRAINED: None})

    def figure7(rng):
        return _payload(deps, f"{ji.F7_GRAPH}.figure", {
            ji.F7_SOURCE: "6", ji.F7_BATCH: 9, ji.F7_TRAIN: 3, ji.F7_VIRTUAL: 8,
            ji.DATASET: "moons", ji.N: 2000, ji.DEPTH: 6, ji.WIDTH: 32, ji.SEED: seed(rng),
            ji.TRAINED: None})

    def ergen(rng):
        return _payload(deps, f"{pa.EG_WHITEN}.figure", {
            pa.EG_DATASET: rng.choice(("blobs", "moons", "circles", "spiral")), pa.EG_N: 60,
            pa.EG_BETA: round(rng.uniform(0.01, 10), 6)})

    return {"explorer d12 w48 |B|=64": explorer,
            "explorer layers d12 w64": lambda rng: explorer(
                rng, **{ex.WIDTH: 64, ex.DATASET: "blobs", ex.BATCH_SIZE: "8", ex.MU: 1.5,
                        ex.VIEW: "layers"}),
            "jitter d3 w16 K=128": jitter,
            "figure 7 d6 w32 |B|=512": figure7,
            "Ergen n=60 (training)": ergen}


def post(conn: http.client.HTTPConnection, body: dict) -> str:
    """POST one callback; its outcome: "figure", "message" (a cap refused it: the page shows
    a message), "HTTP nnn" or the exception's name."""
    conn.request("POST", "/_dash-update-component", json.dumps(body).encode(),
                 {"Content-Type": "application/json", "Accept-Encoding": "gzip"})
    response = conn.getresponse()
    text = response.read()
    if response.status != 200:
        return f"HTTP {response.status}"
    key = str(body.get("output", "?"))[:40]
    SIZES[key] = max(SIZES[key], len(text))
    if response.getheader("Content-Encoding") == "gzip":  # nginx compresses, as for browsers
        text = gzip.decompress(text)
    shown = [str(p.get("children"))[:70] for p in json.loads(text)["response"].values()
             if p.get("is_open") is True]
    MESSAGES.update(shown[:1])
    return "message" if shown else "figure"


def heavy_client(host: str, port: int, kinds: dict, first: int, seed: int, stop: float,
                 out: list, halt: threading.Event) -> None:
    """POST the heavy views one after another, no pause, from view ``first`` on, until
    ``stop`` (or ``halt``); appends (view, outcome, seconds)."""
    rng = random.Random(seed)
    names = list(kinds)
    conn = http.client.HTTPConnection(host, port, timeout=120)
    i = first
    while time.monotonic() < stop and not halt.is_set():
        name = names[i % len(names)]
        i += 1
        body = kinds[name](rng)
        t0 = time.perf_counter()
        try:
            outcome = post(conn, body)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            outcome = type(exc).__name__
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=120)
        out.append((name, outcome, time.perf_counter() - t0))
        if outcome == "HTTP 429":
            time.sleep(1.0)  # nginx's Retry-After
    conn.close()
