"""Helpers of the explorer's tests (tests/views/test_explorer.py: the engine;
tests/pages/test_explorer_*.py: the page's callbacks): settings strategies, the callbacks
called as Dash calls them, and readers of what they return.

Figures are plain dicts whose arrays are plotly typed-array specs; :func:`decode` reads them
back.  The callbacks are plain functions (dash's ``callback`` decorator returns the function
itself); those that read ``dash.ctx.triggered_id`` run in a callback context built as dash
builds it (:func:`fuzzing.in_callback`).
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import fields
from urllib.parse import parse_qs

import numpy as np
from dash import html
from hypothesis import strategies as st

from bnviz.core.network import ACTIVATIONS, MODES
from bnviz.data.datasets import DATASETS
from bnviz.params import PartitionParams
from bnviz.views.explorer import SCOPES
from bnviz.views.style import PARTITION
from bnviz.web.callbacks.explorer import callbacks as ce
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer import state as es

INT_FIELDS = ("depth", "width", "weight_seed", "n_points", "data_seed", "batch_seed",
              "target_layer", "target_unit", "layer")
FLOAT_FIELDS = ("alpha", "mu_t", "sigma_s", "extent")

#: A small network: every update_views call on it takes a few tens of milliseconds.
SMALL = PartitionParams(depth=3, width=5, n_points=60, layer=2)


raw_settings = st.fixed_dictionaries({
    "depth": st.integers(1, 12), "width": st.integers(2, 64),
    "activation": st.sampled_from(ACTIVATIONS), "alpha": st.floats(0.01, 0.99),
    "mode": st.sampled_from(MODES), "weight_seed": st.integers(0, 2**31 - 1),
    "dataset": st.sampled_from(DATASETS), "n_points": st.integers(2, 2000),
    "data_seed": st.integers(0, 2**31 - 1),
    "batch_size": st.one_of(st.none(), st.integers(2, 2000)),
    "batch_seed": st.integers(0, 2**31 - 1), "mu_t": st.floats(0.0, 1.5),
    "sigma_s": st.floats(0.25, 4.0), "scope": st.sampled_from(SCOPES),
    "target_layer": st.integers(1, 12), "target_unit": st.integers(0, 63),
    "layer": st.integers(1, 12), "extent": st.floats(0.5, 20.0)})
valid_settings = raw_settings.map(PartitionParams.from_page)


def assert_same_settings(a: PartitionParams, b: PartitionParams) -> None:
    for f in fields(PartitionParams):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in FLOAT_FIELDS:
            assert math.isclose(x, y, rel_tol=1e-11, abs_tol=1e-300), (f.name, x, y)
        else:
            assert x == y and type(x) is type(y), (f.name, x, y)


def preset_prop(key: str) -> str:
    """The prop_id dash sends for a click on a preset button (pattern-matching id)."""
    return json.dumps({"key": key, "type": ids.PRESET}, separators=(",", ":")) + ".n_clicks"


def decode(a) -> np.ndarray:
    """A plotly typed-array spec {dtype, bdata (base64), shape?} (or a plain list) as numpy."""
    if isinstance(a, dict) and "bdata" in a:
        arr = np.frombuffer(base64.b64decode(a["bdata"]), dtype=np.dtype("<" + a["dtype"]))
        if "shape" in a:
            arr = arr.reshape([int(s) for s in str(a["shape"]).split(",")])
        return arr.astype(np.float64)
    return np.asarray(a, dtype=np.float64)


def segments_of(trace: dict) -> np.ndarray:
    """A NaN-broken polyline trace back to segments (x0, y0, x1, y1)."""
    xs, ys = decode(trace["x"]), decode(trace["y"])
    return np.stack([xs[0::3], ys[0::3], xs[1::3], ys[1::3]], 1)


def fig_json(fig) -> str:
    return json.dumps(fig, sort_keys=True, default=lambda o: np.asarray(o).tolist())


def walk(component):
    """Every component and string in a Dash component tree."""
    yield component
    children = getattr(component, "children", None)
    if isinstance(children, list | tuple):
        for c in children:
            yield from walk(c)
    elif children is not None:
        yield from walk(children)


def find(component, id_):
    return next(c for c in walk(component) if getattr(c, "id", None) == id_)


def summary_rows(summary) -> list[tuple[int, int, float]]:
    """(layer, regions, TLS error) rows of the summary table."""
    body = next(c for c in walk(summary) if isinstance(c, html.Tbody))
    return [tuple(f(td.children) for f, td in zip((int, int, float), tr.children, strict=True))
            for tr in body.children]


def summary_text(summary) -> str:
    return " ".join(c for c in walk(summary) if isinstance(c, str))


def views(s: PartitionParams, view: str = "space", tls: bool = False, projector: bool = False,
          extra: list | None = None, controls: dict | None = None) -> tuple:
    return ce.update_views(controls if controls is not None else es.control_values(s),
                           extra or [], view, tls, projector)


def good(out: tuple) -> tuple:
    assert out[4] == "" and out[5] is False and out[7] == "", out[4]
    return out


def space_fig(s: PartitionParams, **kw) -> dict:
    return good(views(s, **kw))[0]


def flat_query(query: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}


def line_traces(fig: dict, name: str) -> list[dict]:
    return [t for t in fig["data"] if t.get("name") == name and t.get("mode") == "lines"]


def orange(fig: dict) -> list[dict]:
    return [t for t in fig["data"] if t.get("line", {}).get("color") == PARTITION.target]


def independent_central(w: np.ndarray, mu: np.ndarray, tol: float = 1e-7) -> bool:
    """All lines w_k . x = mu_k through one point: intersect the two most transversal lines,
    then measure every line's distance to that point relative to the box scale."""
    w, mu = np.asarray(w, float), np.asarray(mu, float)
    n = w / np.linalg.norm(w, axis=1, keepdims=True)
    c = mu / np.linalg.norm(w, axis=1)
    dets = np.abs(n[:, None, 0] * n[None, :, 1] - n[:, None, 1] * n[None, :, 0])
    i, j = np.unravel_index(np.argmax(dets), dets.shape)
    p = np.linalg.solve(np.stack([n[i], n[j]]), np.array([c[i], c[j]]))
    return bool(np.max(np.abs(n @ p - c)) <= tol * (1 + np.abs(p).max()))


def central_flag(summary) -> str:
    return find(summary, "explorer-central").children
