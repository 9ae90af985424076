"""Tests of the partition-explorer page (issue 3): settings, URL state, callbacks, views, presets.

Everything runs without a browser: the Dash callbacks are plain functions (dash's ``callback``
decorator returns the function itself), and those that read ``dash.ctx.triggered_id`` run in a
callback context built as dash builds it (``dash/_callback_context.py``: ``triggered_id`` is
the component id of ``triggered_inputs[0]["prop_id"]`` up to its last dot, JSON-decoded into a
dict when it starts with ``{``, as pattern-matching ids do).

Figures are plain dicts whose arrays are plotly typed-array specs; :func:`decode` reads them
back.  The science checks (central layer-1 arrangement, distance to the boundary, the TLS
parabola, the region fill) are computed independently with numpy / shapely.
"""

from __future__ import annotations

import base64
import json
import math
from contextvars import copy_context
from dataclasses import fields, replace
from urllib.parse import parse_qs

import numpy as np
import pytest
import shapely
from dash import html, no_update
from dash._callback_context import context_value
from dash._utils import AttributeDict
from hypothesis import given, settings
from hypothesis import strategies as st

import bnviz.views.explorer as bx
from bnviz.core.network import ACTIVATIONS, MODES, random_network
from bnviz.data.datasets import DATASETS
from bnviz.views.explorer import (
    EXPLORER_LIMITS,
    PRESETS,
    SCOPES,
    ExplorerSettings,
    InputError,
    explore,
    is_central,
    pattern_raster,
)
from bnviz.views.style import PARTITION, UNIT
from callbacks.explorer import callbacks as ce
from callbacks.explorer import ids
from callbacks.explorer import state as es
from layouts import explorer as lay

# --------------------------------------------------------------------------- helpers

INT_FIELDS = ("depth", "width", "weight_seed", "n_points", "data_seed", "batch_seed",
              "target_layer", "target_unit", "layer")
FLOAT_FIELDS = ("alpha", "mu_t", "sigma_s", "extent")
CHOICES = {"activation": ACTIVATIONS, "mode": MODES, "dataset": DATASETS, "scope": SCOPES}

#: A small network: every update_views call on it takes a few tens of milliseconds.
SMALL = ExplorerSettings(depth=3, width=5, n_points=60, layer=2)


def in_callback(fn, prop_id: str, *args):
    """Run ``fn(*args)`` as dash runs a callback triggered by ``prop_id``."""
    def inner():
        context_value.set(AttributeDict(
            **{"triggered_inputs": [{"prop_id": prop_id, "value": None}]}))
        return fn(*args)
    return copy_context().run(inner)


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


def views(s: ExplorerSettings, view: str = "space", tls: bool = False, projector: bool = False,
          extra: list | None = None, controls: dict | None = None) -> tuple:
    return ce.update_views(controls if controls is not None else es.control_values(s),
                           extra or [], view, tls, projector)


def flat_query(query: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}


def assert_same_settings(a: ExplorerSettings, b: ExplorerSettings) -> None:
    for f in fields(ExplorerSettings):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name in FLOAT_FIELDS:
            assert math.isclose(x, y, rel_tol=1e-11, abs_tol=1e-300), (f.name, x, y)
        else:
            assert x == y and type(x) is type(y), (f.name, x, y)


def line_traces(fig: dict, name: str) -> list[dict]:
    return [t for t in fig["data"] if t.get("name") == name and t.get("mode") == "lines"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Monkeypatched caps must not leak through the explorer's result cache."""
    yield
    ce._explore_cached.cache_clear()


# --------------------------------------------------------------------------- 1. settings

def test_parse_defaults_and_unknown_keys():
    assert ExplorerSettings.parse({}) == ExplorerSettings()
    s = ExplorerSettings.parse({"depth": "3", "bogus": "x", "view": "unit", "__class__": 1})
    assert s == replace(ExplorerSettings(), depth=3, layer=3)  # layer 4 clamped to depth
    assert type(s.depth) is int and type(s.mu_t) is float


def bad_numbers(name: str) -> list:
    lo, hi = EXPLORER_LIMITS[name]
    span = hi - lo
    bad = [lo - max(1, span * 1e-3), hi + max(1, span * 1e-3), math.nan, math.inf, -math.inf,
           "nan", "inf", "abc", "", "  ", None, True, False, [], {}]
    if name in INT_FIELDS:
        bad += [lo + 0.5, f"{lo + 0.5}"]
    return bad


@pytest.mark.parametrize("name", INT_FIELDS + FLOAT_FIELDS)
def test_parse_rejects_bad_numbers_naming_the_field(name):
    for raw in bad_numbers(name):
        with pytest.raises(InputError) as exc:
            ExplorerSettings.parse({name: raw})
        msg = str(exc.value)
        assert msg.startswith(name.replace("_", " ")), (raw, msg)
        assert "\n" not in msg and "Traceback" not in msg


@pytest.mark.parametrize("name", INT_FIELDS + FLOAT_FIELDS)
def test_parse_accepts_both_bounds(name):
    lo, hi = EXPLORER_LIMITS[name]
    room = {} if name in ("depth", "width") else {"depth": 12, "width": 64}
    for raw in (lo, hi, f"{lo:.12g}", f"{hi:.12g}"):
        value = getattr(ExplorerSettings.parse(room | {name: raw}), name)
        assert value == float(raw) and type(value) is (int if name in INT_FIELDS else float)


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_parse_rejects_bad_choices(name):
    for raw in ("evil", "", None, 1, CHOICES[name][0].upper(), [CHOICES[name][0]]):
        with pytest.raises(InputError, match=f"^{name}: choose one of"):
            ExplorerSettings.parse({name: raw})
    for ok in CHOICES[name]:
        assert getattr(ExplorerSettings.parse({name: ok}), name) == ok


def test_batch_size():
    for raw in ("all", "ALL", " all ", "", "none", None):
        assert ExplorerSettings.parse({"batch_size": raw}).batch_size is None
    for raw, want in (("2", 2), (2, 2), ("16", 16), (16.0, 16), ("1e3", 1000)):
        assert ExplorerSettings.parse({"batch_size": raw}).batch_size == want
    for raw in ("1", 1, 0, "-4", "2.5", 2.5, "abc", "inf", "nan", math.nan, True, [4]):
        with pytest.raises(InputError, match="^batch size"):
            ExplorerSettings.parse({"batch_size": raw})
    # larger than the data: refused when the data are known, with a message
    s = ExplorerSettings(depth=1, width=3, n_points=20, batch_size=21)
    with pytest.raises(InputError, match=r"batch size: at most the number of points \(20\)"):
        explore(s)
    # the added points count towards n
    assert explore(s, np.zeros((1, 2))).batch.shape == (21, 2)


def test_dependent_settings_are_clamped_not_refused():
    s = ExplorerSettings.parse({"depth": 2, "width": 3, "layer": 12, "target_layer": 9,
                                "target_unit": 63})
    assert (s.layer, s.target_layer, s.target_unit) == (2, 2, 2)
    s = ExplorerSettings.parse({"depth": "5", "width": "40", "layer": "5", "target_unit": 39})
    assert (s.layer, s.target_unit) == (5, 39)


def test_huge_int_gives_message():
    # 10**400 is what json.loads returns for a 400-digit number in a crafted request
    for name in ("depth", "mu_t", "weight_seed"):
        with pytest.raises(InputError, match=f"^{name.replace('_', ' ')}"):
            ExplorerSettings.parse({name: 10**400})
    for name, label in (("depth", "depth"), ("target_unit", "unit k")):
        controls = es.control_values(SMALL) | {name: 10**400}
        out = views(SMALL, controls=controls)
        assert out[5] is True and label in out[4]


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
valid_settings = raw_settings.map(ExplorerSettings.parse)


@settings(max_examples=40, deadline=None)
@given(valid_settings)
def test_to_query_parse_round_trip(s):
    q = s.to_query()
    assert all(isinstance(v, str) for v in q.values())
    assert set(q) <= {f.name for f in fields(ExplorerSettings)}
    back = ExplorerSettings.parse(q)
    assert_same_settings(back, s)
    assert ExplorerSettings.parse(back.to_query()) == back  # a second trip is exact
    # defaults are left out of the query
    assert all(getattr(s, k) != getattr(ExplorerSettings, k) for k in q)


@settings(max_examples=40, deadline=None)
@given(valid_settings)
def test_control_values_inverse_of_settings_from_controls(s):
    cv = es.control_values(s)
    assert set(cv) == set(es.CONTROLS)
    assert cv["target_unit"] == s.target_unit + 1 and math.isclose(2 ** cv["sigma_s"],
                                                                   s.sigma_s)
    back = es.settings_from_controls(cv | {"extent": s.extent})
    assert_same_settings(back, s)


def test_settings_from_controls_messages():
    cv = es.control_values(SMALL)
    for bad in (None, "abc", 1e6, [1]):
        with pytest.raises(InputError, match="σ slider"):
            es.settings_from_controls(cv | {"sigma_s": bad})
    for bad in (None, "abc", [1]):
        with pytest.raises(InputError, match="unit k"):
            es.settings_from_controls(cv | {"target_unit": bad})


# --------------------------------------------------------------------------- 2. URL state

def url_state(q: str) -> tuple:
    return es.initial_state(flat_query(q))


points_st = st.lists(st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(list), max_size=6)


@settings(max_examples=40, deadline=None)
@given(valid_settings, st.sampled_from(lay.VIEWS), st.booleans(), st.booleans(), points_st)
def test_url_round_trip(s, view, tls, projector, pts):
    q = es.query_string(s, view, tls, projector, pts)
    s2, view2, tls2, projector2, pts2, message, caption, preset = url_state(q)
    assert message == ""
    assert_same_settings(s2, s)
    assert (view2, tls2, projector2) == (view, tls, projector)
    assert len(pts2) == len(pts)
    for p, p2 in zip(pts, pts2, strict=True):
        assert np.allclose(p2, p, rtol=6e-4, atol=1e-300)  # 4 significant digits
    assert isinstance(caption, str) and caption


def test_url_keeps_points_up_to_the_link_cap():
    pts = [[0.1 * i, -0.1 * i] for i in range(es.MAX_URL_POINTS)]
    assert len(url_state(es.query_string(SMALL, "space", False, False, pts))[4]) == len(pts)
    q = es.query_string(SMALL, "space", False, False, pts + [[0.0, 0.0]])
    assert "pts" not in flat_query(q)  # too many for a link: kept in the page only


TAMPERED = {
    "depth=999": ("settings", True, False),
    "mu_t=abc&view=unit": ("settings", True, False),
    "batch_size=1": ("settings", True, False),
    "depth=3&pts=1,2;x,y": ("points", False, True),
    "pts=1e300,1": ("points", False, True),
    "pts=nan,1": ("points", False, True),
    "pts=1,2,3": ("points", False, True),
    "pts=1": ("points", False, True),
    "depth=&width=3": ("settings", True, False),
    "tls=yes&projector=2&depth=2": (None, False, False),
    "view=evil&depth=2": (None, False, False),
}


@pytest.mark.parametrize("query", sorted(TAMPERED))
def test_tampered_url_gives_defaults_and_a_message(query):
    what, settings_lost, points_lost = TAMPERED[query]
    raw = flat_query(query)
    s, view, tls, projector, pts, message, _, _ = es.initial_state(raw)
    if settings_lost:
        assert s == ExplorerSettings()
        assert "settings were not used" in message
    else:
        assert s == ExplorerSettings.parse({k: v for k, v in raw.items() if k != "pts"})
    if points_lost:
        assert pts == [] and "added points were not readable" in message
    if what is None:
        assert "settings" not in message and "points" not in message
        assert tls is False and projector is False
    assert view in lay.VIEWS
    assert view == ("unit" if "view=unit" in query else "space")
    page = es.page_layout(**raw)
    assert isinstance(page, html.Div)
    alert = find(page, ids.MESSAGE)
    assert alert.children == message and alert.is_open is bool(message)


def test_page_layout_places_the_state_in_the_controls():
    s = replace(SMALL, sigma_s=2.0, target_unit=3, batch_size=10, mu_t=0.25)
    q = es.query_string(s, "layers", True, True, [[1.5, -0.5]])
    page = es.page_layout(**flat_query(q) | {"preset": "fig9"})
    assert page.className == "projector"
    assert find(page, ids.DEPTH).value == 3 and find(page, ids.WIDTH).value == 5
    assert find(page, ids.SIGMA).value == pytest.approx(1.0)
    assert find(page, ids.TARGET_UNIT).value == 4  # 1-based in the page
    assert find(page, ids.BATCH_SIZE).value == "10"
    assert find(page, ids.MU).value == pytest.approx(0.25)
    assert find(page, ids.VIEW).active_tab == "layers"
    assert find(page, ids.TLS).value is True and find(page, ids.PROJECTOR).value is True
    assert find(page, ids.EXTRA_POINTS).data == [[1.5, -0.5]]
    assert find(page, ids.CAPTION).children == PRESETS["fig9"].caption
    assert find(page, ids.MESSAGE).is_open is False
    assert es.page_layout().__class__ is html.Div


def test_tampered_view_gets_a_message():
    assert es.initial_state({"view": "evil"})[5] != ""


@pytest.mark.parametrize("query", ["pts=1,2&pts=3,4", "preset=fig1&preset=fig2a"])
def test_repeated_query_keys_do_not_raise(query):
    from dash._pages import _parse_query_string

    page = es.page_layout(**_parse_query_string("?" + query))
    assert isinstance(page, html.Div)


# --------------------------------------------------------------------------- 3. update_views

def good(out: tuple) -> tuple:
    assert out[4] == "" and out[5] is False, out[4]
    return out


def space_fig(s: ExplorerSettings, **kw) -> dict:
    return good(views(s, **kw))[0]


def test_update_views_outputs_and_query():
    out = good(views(SMALL))
    space, layers, unit, summary, _, _, query = out
    assert isinstance(space, dict) and layers is no_update and unit is no_update
    layer_max, marks, _, tl_max, _, tu_max, _ = ce.sync_ranges(SMALL.depth, SMALL.width, 1, 1, 1)
    assert (layer_max, tl_max, tu_max) == (3, 3, 5) and marks == {1: "1", 2: "2", 3: "3"}
    assert es.initial_state(flat_query(query))[0] == SMALL
    assert [r[0] for r in summary_rows(summary)] == [1, 2, 3]
    assert space["layout"]["title"]["text"] == f"layer 2: {summary_rows(summary)[1][1]} regions"


CHANGES = [  # (name, from settings, control changes, what must differ)
    ("depth", SMALL, {"depth": 2}, "summary"),
    ("width", SMALL, {"width": 6}, "summary"),
    ("activation", SMALL, {"activation": "abs"}, "figure"),
    ("activation relu", SMALL, {"activation": "relu"}, "figure"),
    ("alpha leaky", SMALL, {"alpha": 0.3}, "figure"),
    ("mode", SMALL, {"mode": "random_bias"}, "figure"),
    ("mode zero", SMALL, {"mode": "zero_bias"}, "figure"),
    ("weight_seed", SMALL, {"weight_seed": 1}, "figure"),
    ("dataset", SMALL, {"dataset": "blobs"}, "figure"),
    ("n_points", SMALL, {"n_points": 80}, "figure"),
    ("data_seed", SMALL, {"data_seed": 5}, "figure"),
    ("batch_size", SMALL, {"batch_size": "10"}, "figure"),
    ("batch_seed", replace(SMALL, batch_size=10), {"batch_seed": 3}, "figure"),
    ("mu_t", SMALL, {"mu_t": 0.5}, "figure"),
    ("sigma_s all", SMALL, {"sigma_s": 1.0}, "figure"),
    ("layer", SMALL, {"layer": 3}, "figure"),
    ("target_unit", replace(SMALL, scope="unit"), {"target_unit": 3}, "figure"),
    ("target_layer", replace(SMALL, scope="unit"), {"target_layer": 2}, "figure"),
    ("scope", SMALL, {"scope": "unit"}, "figure"),
]
SAME = [  # control changes that must not change the picture
    ("alpha relu", replace(SMALL, activation="relu"), {"alpha": 0.3}),
    ("batch_seed all data", SMALL, {"batch_seed": 3}),
    ("target_unit scope all", SMALL, {"target_unit": 3}),
    ("sigma_s zero_bias", replace(SMALL, mode="zero_bias", layer=1), {"sigma_s": 1.0}),
]


@pytest.mark.parametrize("case", CHANGES, ids=[c[0] for c in CHANGES])
def test_each_control_changes_the_view(case):
    _, s, change, what = case
    a = good(views(s))
    controls = es.control_values(s) | change
    b = good(views(s, controls=controls))
    s2 = es.settings_from_controls(controls)
    assert s2 != s
    assert es.initial_state(flat_query(b[6]))[0] == s2  # the URL follows the controls
    assert a[6] != b[6]
    if what == "summary":  # (depth 3 -> 2 keeps the highlighted layer 2 as it was)
        assert summary_rows(a[3]) != summary_rows(b[3])
    else:
        assert fig_json(a[0]) != fig_json(b[0])


@pytest.mark.parametrize("case", SAME, ids=[c[0] for c in SAME])
def test_irrelevant_controls_keep_the_picture(case):
    _, s, change = case
    a = good(views(s))
    b = good(views(s, controls=es.control_values(s) | change))
    assert fig_json(a[0]) == fig_json(b[0])
    # region counts too (the TLS errors may change: sigma scales the later layers' inputs)
    assert [r[:2] for r in summary_rows(a[3])] == [r[:2] for r in summary_rows(b[3])]


def test_depth_and_width_in_the_summary():
    for depth, width in ((1, 3), (2, 4), (3, 5)):
        s = replace(SMALL, depth=depth, width=width, layer=depth)
        out = good(views(s))
        rows = summary_rows(out[3])
        assert [r[0] for r in rows] == list(range(1, depth + 1))
        assert rows[0][1] == 2 * width  # BN: central layer-1 arrangement (Corollary 2)
        ranges = ce.sync_ranges(depth, width, 12, 12, 64)
        assert ranges[0] == depth and list(ranges[1]) == list(range(1, depth + 1))
        assert ranges[2:] == (depth, depth, depth, width, width)


def test_n_points_and_batch_in_the_figure_and_summary():
    fig = space_fig(replace(SMALL, n_points=80))
    data = [t for t in fig["data"] if t.get("mode") == "markers" and t["name"] == "data"]
    assert len(data) == 1 and decode(data[0]["x"]).shape == (80,)
    s = replace(SMALL, batch_size=10)
    out = good(views(s))
    names = {t["name"]: t for t in out[0]["data"]}
    assert decode(names["mini-batch"]["x"]).shape == (10,)
    assert decode(names["other data"]["x"]).shape == (50,)
    assert "60 points, batch of 10" in summary_text(out[3])
    # another mini-batch: another set of black points
    other = {t["name"]: t for t in space_fig(replace(s, batch_seed=1))["data"]}
    assert fig_json(other["mini-batch"]) != fig_json(names["mini-batch"])


def test_sigma_of_layer_1_folds_layer_2_with_frozen_statistics():
    """Figure 2c: sigma_1 changes, layer 2's mu, sigma stay BN's: the layer-1 lines stay put
    (h_1 = 0 does not depend on sigma_1) and the layer-2 facets move."""
    s = replace(SMALL, depth=2, width=6, scope="layer", target_layer=1, layer=2)
    base = space_fig(s)
    for log2_s in (-2.0, -1.0, 1.0, 2.0):
        fig = space_fig(s, controls=es.control_values(s) | {"sigma_s": log2_s})
        earlier, = line_traces(fig, "earlier layers")
        current, = line_traces(fig, "layer 2")
        assert fig_json(earlier) == fig_json(line_traces(base, "earlier layers")[0])
        assert fig_json(current) != fig_json(line_traces(base, "layer 2")[0])
    # with recomputed (not frozen) statistics a sigma_1 change would cancel out in layer 2
    r = explore(replace(s, sigma_s=2.0))
    assert np.allclose(r.partition.layers[1].stats.mu, explore(s).partition.layers[1].stats.mu)


def test_mu_of_one_layer_moves_only_that_layer():
    s = replace(SMALL, depth=2, width=6, scope="layer", target_layer=2, layer=2, mu_t=0.4)
    fig, base = space_fig(s), space_fig(replace(s, mu_t=1.0))
    assert fig_json(line_traces(fig, "earlier layers")) == fig_json(
        line_traces(base, "earlier layers"))
    assert fig_json(line_traces(fig, "layer 2")) != fig_json(line_traces(base, "layer 2"))


def orange(fig: dict) -> list[dict]:
    return [t for t in fig["data"] if t.get("line", {}).get("color") == PARTITION.target]


def test_orange_unit_follows_scope_and_target():
    s = replace(SMALL, depth=2, width=6, layer=2)
    assert orange(space_fig(s)) == [] and orange(space_fig(replace(s, scope="layer"))) == []
    seen = set()
    for layer, unit in ((1, 0), (1, 3), (2, 0), (2, 5)):
        su = replace(s, scope="unit", target_layer=layer, target_unit=unit)
        tr, = orange(space_fig(su))
        assert tr["name"] == f"F({layer},{unit + 1})"
        r = explore(su)
        lp = r.partition.layers[layer - 1]
        want = lp.facets[lp.facet_units == unit]
        got = segments_of(tr)
        assert got.shape == want.shape and np.allclose(got, want, atol=1e-5)
        seen.add(fig_json(tr))
    assert len(seen) == 4


def test_highlighted_layer_changes_the_title_count():
    s = replace(SMALL, layer=1)
    out = good(views(s))
    rows = summary_rows(out[3])
    for layer in (1, 2, 3):
        fig = space_fig(replace(s, layer=layer))
        assert fig["layout"]["title"]["text"] == f"layer {layer}: {rows[layer - 1][1]} regions"
        assert len(line_traces(fig, f"layer {layer}")) == 1
        assert len(line_traces(fig, "earlier layers")) == layer - 1


def test_tls_colours_and_projector_mode():
    fig = space_fig(SMALL, tls=True)
    bars = [t for t in fig["data"] if t.get("marker", {}).get("showscale")]
    assert len(bars) == 1 and "colorbar" in bars[0]["marker"]
    assert not [t for t in space_fig(SMALL)["data"] if t.get("marker", {}).get("showscale")]
    # every facet of layers 1..l is drawn exactly once in the TLS bins
    r = explore(SMALL)
    n_facets = sum(len(lp.facets) for lp in r.partition.layers[:SMALL.layer])
    bins = [t for t in fig["data"] if str(t.get("name", "")).startswith("TLS bin")]
    assert sum(len(segments_of(t)) for t in bins) == n_facets
    plain, big = space_fig(SMALL), space_fig(SMALL, projector=True)
    assert big["layout"]["font"]["size"] > plain["layout"]["font"]["size"]
    assert (line_traces(big, "layer 2")[0]["line"]["width"]
            > line_traces(plain, "layer 2")[0]["line"]["width"])
    assert ce.projector_mode(True) == "projector" and ce.projector_mode(False) == ""
    assert ce.projector_mode(None) == ""


BAD_CONTROLS = [
    ("depth", 0, "depth"), ("depth", 13, "depth"), ("depth", None, "depth"),
    ("depth", 2.5, "depth"), ("width", 1, "width"), ("width", 65, "width"),
    ("width", "", "width"), ("activation", "tanh", "activation"), ("alpha", 0, "alpha"),
    ("alpha", 1.5, "alpha"), ("mode", None, "mode"), ("weight_seed", -1, "weight seed"),
    ("weight_seed", 2**31, "weight seed"), ("weight_seed", 1.5, "weight seed"),
    ("dataset", "mnist", "dataset"), ("n_points", 1, "n points"),
    ("n_points", 2001, "n points"), ("data_seed", -3, "data seed"),
    ("batch_size", "1", "batch size"), ("batch_size", "abc", "batch size"),
    ("batch_size", "61", "batch size: at most the number of points (60)"),
    ("batch_seed", None, "batch seed"), ("mu_t", 1.6, "mu t"), ("mu_t", -0.1, "mu t"),
    ("mu_t", None, "mu t"), ("sigma_s", 2.5, "sigma s"), ("sigma_s", None, "σ slider"),
    ("sigma_s", "x", "σ slider"), ("scope", "world", "scope"),
    ("target_layer", 0, "target layer"), ("target_unit", None, "unit k"),
    ("target_unit", 65, "unit k"), ("layer", 0, "layer"), ("layer", "two", "layer"),
]


@pytest.mark.parametrize("name,value,expect", BAD_CONTROLS,
                         ids=[f"{n}={v!r}" for n, v, _ in BAD_CONTROLS])
def test_bad_control_gives_message_and_keeps_everything(name, value, expect):
    out = views(SMALL, controls=es.control_values(SMALL) | {name: value})
    assert len(out) == 7
    assert all(o is no_update for o in out[:4]), "figures and summary are kept"
    assert out[6] is no_update, "the URL is kept"
    assert out[5] is True
    assert isinstance(out[4], str) and out[4].startswith(expect)
    assert "\n" not in out[4] and "Traceback" not in out[4]


def test_bad_added_points_in_the_store_give_a_message():
    out = views(SMALL, extra=[[math.nan, 0.0]])
    assert out[5] is True and out[0] is no_update
    out = views(SMALL, extra=[[0.0, 0.0]] * (bx.MAX_EXTRA_POINTS + 1))
    assert out[5] is True and str(bx.MAX_EXTRA_POINTS) in out[4]


def test_unit_message_speaks_the_pages_numbering():
    out = views(SMALL, controls=es.control_values(SMALL) | {"target_unit": 0})
    assert out[5] is True
    assert "-1" not in out[4] and "from 0" not in out[4]


def test_layers_view_over_the_cap_gives_a_message(monkeypatch):
    s = ExplorerSettings(depth=2, width=8, mode="zero_bias", layer=2)
    zero = max(len(lp.regions) for lp in explore(s).partition.layers)
    bn = max(len(lp.regions) for lp in explore(replace(s, mode="bn")).partition.layers)
    assert zero < bn
    ce._explore_cached.cache_clear()
    monkeypatch.setattr(bx, "EXPLORER_MAX_REGIONS", (zero + bn) // 2)
    good(views(s, view="space"))  # the view of the chosen mode fits under the cap
    out = views(s, view="layers")
    assert out[5] is True and "regions" in out[4]


# --------------------------------------------------------------------------- 4. views

@pytest.mark.parametrize("mode,other", [("bn", "random_bias"), ("zero_bias", "zero_bias"),
                                        ("random_bias", "random_bias")])
def test_small_multiples(mode, other):
    s = replace(SMALL, mode=mode)
    out = good(views(s, view="layers"))
    assert out[0] is no_update and out[2] is no_update
    fig = out[1]
    lay_ = fig["layout"]
    xaxes = [k for k in lay_ if k.startswith("xaxis")]
    yaxes = [k for k in lay_ if k.startswith("yaxis")]
    assert len(xaxes) == len(yaxes) == 2 * s.depth
    texts = [a["text"] for a in lay_["annotations"]]
    assert texts[:s.depth] == [f"layer {i}" for i in range(1, s.depth + 1)]
    assert f"without BN ({other.replace('_', ' ')})" in texts and "with BN" in texts
    # row 0 is the model without BN, with the same weights; row 1 is BN
    for row, row_mode in ((0, other), (1, "bn")):
        part = explore(replace(s, mode=row_mode)).partition
        for c in range(s.depth):
            k = row * s.depth + c + 1
            ax = "x" if k == 1 else f"x{k}"  # plotly.js names the first axis x, not x1
            lines = [t for t in fig["data"] if t["xaxis"] == ax and t.get("mode") == "lines"]
            assert len(lines) == c + 1
            for j, tr in enumerate(lines):
                want = part.layers[j].facets
                got = segments_of(tr) if len(want) else np.zeros((0, 4))
                assert got.shape == want.shape and np.allclose(got, want, atol=1e-5)


def bn_forward_stats(s: ExplorerSettings, layer: int, unit: int) -> tuple[float, float, float]:
    """(mean, biased std, ||w||) of <w_{l,k}, z_{l-1}> over all data, by plain numpy (BN)."""
    net = random_network(s.depth, s.width, s.activation, s.alpha, "bn", s.weight_seed)
    z = bx.explorer_data(s).points
    slope = s.alpha if s.activation == "leaky_relu" else 0.0
    for w in net.weights[:layer - 1]:
        u = z @ w.T
        h = (u - u.mean(0)) / u.std(0)
        z = np.where(h > 0, h, slope * h)
    w = net.weights[layer - 1][unit]
    p = z @ w
    return float(p.mean()), float(np.sqrt(((p - p.mean()) ** 2).mean())), float(
        np.linalg.norm(w))


def unit_fig(s: ExplorerSettings) -> dict:
    out = good(views(s, view="unit"))
    assert out[0] is no_update and out[1] is no_update
    return out[2]


@pytest.mark.parametrize("unit", [0, 5])
def test_unit_view_parabola_minimum_is_the_bn_mean(unit):
    s = replace(PRESETS["fig2a"].settings, target_unit=unit, n_points=80)
    mean, std, norm = bn_forward_stats(s, 2, unit)
    fig = unit_fig(s)
    hist, parabola, marker = fig["data"]
    proj = decode(hist["x"])
    assert proj.shape == (80,) and math.isclose(proj.mean(), mean, rel_tol=1e-9, abs_tol=1e-12)
    grid, loss = decode(parabola["x"]), decode(parabola["y"])
    spacing = np.diff(grid).max()
    assert abs(grid[np.argmin(loss)] - mean) <= spacing
    assert math.isclose(loss.min(), std**2 / norm**2, rel_tol=1e-9)
    # the whole curve is eq. 8: mean_B (<w,z> - mu)^2 / ||w||^2
    direct = ((proj[None, :] - grid[:, None]) ** 2).mean(1) / norm**2
    assert np.allclose(loss, direct, rtol=1e-9)
    # mu_t = 1: the orange hyperplane is at the BN mean, and so is the current-mu marker
    mu_line, mean_line = fig["layout"]["shapes"][:2]
    assert mu_line["line"]["color"] == UNIT.mu
    assert math.isclose(mu_line["x0"], mean, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(mean_line["x0"], mean, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(marker["y"][0], std**2 / norm**2, rel_tol=1e-9)


def test_unit_view_mu_slider_moves_the_hyperplane_only():
    s = replace(PRESETS["fig2a"].settings, mu_t=0.3)
    mean, std, norm = bn_forward_stats(s, 2, 0)
    fig = unit_fig(s)
    mu_line, mean_line = fig["layout"]["shapes"][:2]
    assert math.isclose(mu_line["x0"], 0.3 * mean, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(mean_line["x0"], mean, rel_tol=1e-9, abs_tol=1e-12)
    want = (std**2 + (0.7 * mean) ** 2) / norm**2
    assert math.isclose(fig["data"][2]["y"][0], want, rel_tol=1e-9)
    grid = decode(fig["data"][1]["x"])
    assert grid.min() <= 0.3 * mean <= grid.max()  # the current mu is on the plotted curve


# --------------------------------------------------------------------------- 5. science

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


def test_is_central_against_numpy():
    rng = np.random.default_rng(3)
    for _ in range(30):
        k = int(rng.integers(3, 12))  # two lines always meet in one point
        w = rng.normal(size=(k, 2))
        c = rng.normal(size=2) * 2
        mu = w @ c
        assert is_central(w, mu) and independent_central(w, mu)
        bad = mu.copy()
        bad[int(rng.integers(k))] += 0.05 + rng.random()
        assert not is_central(w, bad) and not independent_central(w, bad)
    assert is_central(np.ones((1, 2)), np.array([3.0]))


def test_bn_layer_1_is_central_with_2d_regions():
    for width in (3, 7):
        s = replace(SMALL, width=width, mu_t=1.0)
        out = good(views(s))
        assert central_flag(out[3]) == "yes"
        assert summary_rows(out[3])[0][1] == 2 * width
        r = explore(s)
        assert independent_central(r.network.weights[0], r.partition.layers[0].stats.mu)


OFF_CENTRE = [[2.0 + 0.01 * i, 1.5 - 0.01 * i] for i in range(60)]  # clicked points


def test_mu_slider_and_centrality():
    """mu = t * mu_BN = W (t c): on all layers every layer-1 line still passes through t c, so
    the arrangement stays central (2 D regions while t c is in the box); moving one unit's mu
    breaks it when the centroid c is away from the origin."""
    s = replace(SMALL, width=6, mu_t=0.5, scope="all")
    r = explore(s, np.array(OFF_CENTRE))
    c = r.batch.mean(0)
    assert np.linalg.norm(c) > 0.5
    out = good(views(s, extra=OFF_CENTRE))
    assert central_flag(out[3]) == "yes" and summary_rows(out[3])[0][1] == 12
    assert independent_central(r.network.weights[0], r.partition.layers[0].stats.mu)
    assert np.allclose(r.partition.layers[0].stats.mu, r.network.weights[0] @ (0.5 * c))
    for scope in ("unit", "layer"):
        su = replace(s, scope=scope, target_layer=1, target_unit=2)
        r = explore(su, np.array(OFF_CENTRE))
        out = good(views(su, extra=OFF_CENTRE))
        want = scope == "layer"  # one layer scaled as a whole stays central, one unit does not
        assert independent_central(r.network.weights[0], r.partition.layers[0].stats.mu) is want
        assert central_flag(out[3]) == ("yes" if want else "no")
    for mode, want in (("zero_bias", "yes"), ("random_bias", "no")):
        assert central_flag(good(views(replace(SMALL, mode=mode)))[3]) == want


def clipped_line(w: np.ndarray, mu: float, box) -> shapely.Geometry:
    x0, x1, y0, y1 = box
    d = np.array([-w[1], w[0]]) / np.linalg.norm(w)
    p = w * mu / (w @ w)
    far = 10 * (x1 - x0 + y1 - y0)
    return shapely.LineString([p - far * d, p + far * d]).intersection(
        shapely.box(x0, y0, x1, y1))


@pytest.mark.parametrize("mode", ["bn", "random_bias"])
def test_mean_distance_to_the_boundary_with_shapely(mode):
    s = ExplorerSettings(depth=1, width=3, mode=mode, n_points=40, dataset="circles", layer=1)
    r = explore(s)
    box = r.partition.box
    st_ = r.partition.layers[0].stats
    lines = shapely.union_all([clipped_line(w, mu, box)
                               for w, mu in zip(r.network.weights[0], st_.mu, strict=True)])
    want = shapely.distance(shapely.points(r.data.points), lines).mean()
    assert math.isclose(r.mean_boundary_distance, want, rel_tol=1e-9)
    text = summary_text(good(views(s))[3])
    assert f"{want:.4g}" in text
    # depth 2: the nearest boundary of the full partition (facets of every layer)
    s2 = replace(s, depth=2, width=4, layer=2)
    r2 = explore(s2)
    facets = np.concatenate([lp.facets for lp in r2.partition.layers])
    geom = shapely.union_all([shapely.LineString([f[:2], f[2:]]) for f in facets])
    want2 = shapely.distance(shapely.points(r2.data.points), geom).mean()
    assert math.isclose(r2.mean_boundary_distance, want2, rel_tol=1e-9)


# --------------------------------------------------------------------------- 6. region fill

def test_pattern_raster_agrees_with_the_exact_partition():
    s = ExplorerSettings(depth=3, width=4, n_points=50, layer=3, mu_t=0.7)
    r = explore(s)
    raster = r.raster
    assert raster.shape == (3, bx.RASTER, bx.RASTER) and raster.dtype == np.int64
    x0, x1, y0, y1 = r.partition.box
    res = bx.RASTER
    xs = x0 + (np.arange(res) + 0.5) * (x1 - x0) / res
    ys = y0 + (np.arange(res) + 0.5) * (y1 - y0) / res
    px, py = (a.reshape(-1) for a in np.meshgrid(xs, ys))  # row 0 at the bottom
    for li, lp in enumerate(r.partition.layers):
        polys = lp.regions
        owner = np.full(px.shape, -1)
        count = np.zeros(px.shape, dtype=int)
        for i in range(len(polys)):
            v = polys.polygon(i)
            e = np.roll(v, -1, 0) - v
            # signed distance of every pixel centre to every edge (CCW: inside is positive)
            d = (e[:, 0, None] * (py[None] - v[:, 1, None])
                 - e[:, 1, None] * (px[None] - v[:, 0, None])) / np.linalg.norm(e, axis=1)[:,
                                                                                       None]
            inside = d.min(0) > 1e-9
            owner[inside] = i
            count += inside
        assert count.max() <= 1, "regions overlap"
        assert (count == 1).mean() > 0.99, "regions do not cover the box"
        h = raster[li].reshape(-1)
        hashes = {}
        for i in np.unique(owner[owner >= 0]):
            vals = np.unique(h[owner == i])
            assert len(vals) == 1, f"layer {li + 1}: region {i} has {len(vals)} colours"
            hashes[i] = vals[0]
        codes = {i: polys.codes[i].tobytes() for i in hashes}
        assert len(set(codes.values())) == len(codes)  # distinct regions, distinct codes
        assert len(set(hashes.values())) == len(hashes), "two regions share a hash"
    # the raster is what the page shows: the figure's heatmap is the highlighted layer
    fig = space_fig(s)
    heat = fig["data"][0]
    assert heat["type"] == "heatmap" and decode(heat["z"]).shape == (res, res)
    assert math.isclose(heat["x0"], xs[0]) and math.isclose(heat["y0"], ys[0])
    z = decode(heat["z"])
    flat = raster[s.layer - 1]
    for v in np.unique(flat)[:50]:
        assert len(np.unique(z[flat == v])) == 1  # one colour per region


def test_pattern_raster_is_stable_under_the_sliders():
    """A region keeps its colour while sliders move: the hash depends on the pattern only."""
    s = ExplorerSettings(depth=2, width=4, n_points=50, layer=2)
    a = explore(s).raster
    # sigma scales h_1, so the layer-1 patterns (and colours) stay; layer 2 keeps BN's frozen
    # mu_2, sigma_2, so its facets move and some pixels change region
    b = explore(replace(s, sigma_s=1.5)).raster
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[1], b[1])
    # pixels whose region keeps its layer-1..2 pattern keep their colour: a pattern-only hash
    c = explore(replace(s, scope="unit", target_layer=2, target_unit=1, mu_t=0.5)).raster
    assert np.array_equal(a[0], c[0])
    assert 0.3 < np.mean(a[1] == c[1]) < 1.0
    net = random_network(2, 4, seed=0)
    from bnviz.core.network import layer_statistics

    stats = layer_statistics(net, bx.explorer_data(s).points)
    r1 = pattern_raster(net, stats, (-3, 3, -3, 3), 32)
    r2 = pattern_raster(net, stats, (-3, 3, -3, 3), 32)
    assert np.array_equal(r1, r2)


# --------------------------------------------------------------------------- 7. presets

@pytest.mark.parametrize("key", sorted(PRESETS))
def test_apply_preset(key):
    preset = PRESETS[key]
    clicks = [1 if k == key else None for k in PRESETS]
    out = in_callback(ce.apply_preset, preset_prop(key), clicks)
    controls = {k: out[k] for k in es.CONTROLS}
    assert controls == es.control_values(preset.settings)
    assert (out["view"], out["tls"], out["caption"], out["extra"], out["layer_max"]) == (
        preset.view, preset.tls, preset.caption, [], preset.settings.depth)
    s = es.settings_from_controls(controls)
    assert s == preset.settings
    res = good(ce.update_views(controls, out["extra"], out["view"], out["tls"], False))
    fig = res[{"space": 0, "layers": 1, "unit": 2}[preset.view]]
    assert isinstance(fig, dict)
    rows = summary_rows(res[3])
    assert len(rows) == preset.settings.depth
    if key == "fig1":
        assert (s.depth, s.width, s.activation) == (4, 6, "leaky_relu")
        assert len([k for k in fig["layout"] if k.startswith("xaxis")]) == 8
    elif key == "fig2a":
        assert (s.depth, s.width) == (2, 8)
        assert fig["data"][0]["type"] == "histogram" and "layer 2" in fig["layout"]["title"][
            "text"]
    elif key == "fig2b":
        assert [t["name"] for t in orange(fig)] == ["F(2,1)"]
    elif key == "fig2c":
        assert (s.scope, s.target_layer, s.sigma_s, s.layer) == ("layer", 1, 2.0, 2)
        plain = space_fig(replace(s, sigma_s=1.0))
        assert fig_json(line_traces(fig, "layer 2")) != fig_json(line_traces(plain, "layer 2"))
    elif key == "fig9":
        assert any(t.get("marker", {}).get("showscale") for t in fig["data"])
    # the URL names the state (and page_layout restores it)
    assert es.initial_state(flat_query(res[6]))[:4] == (s, preset.view, preset.tls, False)


def test_apply_preset_without_a_click_changes_nothing():
    out = in_callback(ce.apply_preset, preset_prop("fig1"), [None] * len(PRESETS))
    assert all(v is no_update for v in out.values())
    assert set(out) == {*es.CONTROLS, "view", "tls", "caption", "preset", "extra", "layer_max"}


def test_triggered_id_helper_matches_dash():
    from dash import ctx

    seen = in_callback(lambda: ctx.triggered_id, preset_prop("fig2a"))
    assert seen == {"key": "fig2a", "type": ids.PRESET} and seen["key"] == "fig2a"
    assert in_callback(lambda: ctx.triggered_id, ids.ANIMATE + ".n_clicks") == ids.ANIMATE


def test_layout_has_one_button_per_preset():
    page = es.page_layout()
    keys = [c.id["key"] for c in walk(page)
            if isinstance(getattr(c, "id", None), dict) and c.id.get("type") == ids.PRESET]
    assert keys == list(PRESETS)


# --------------------------------------------------------------------------- 8. buttons

def test_resample_and_new_batch_increment():
    for fn in (ce.resample_weights, ce.draw_another_batch):
        assert fn(1, 0) == 1 and fn(5, 41) == 42 and fn(None, 7.0) == 8
        for bad in (None, -1, -5.5, "x", math.nan, [3]):
            assert fn(1, bad) == 0
        for seed in (0, 1, 999):
            assert ExplorerSettings.parse({"weight_seed": fn(1, seed)}).weight_seed == seed + 1


def test_buttons_at_the_largest_seed_stay_valid():
    top = EXPLORER_LIMITS["weight_seed"][1]
    ExplorerSettings.parse({"weight_seed": ce.resample_weights(1, top),
                            "batch_seed": ce.draw_another_batch(1, top)})


ANIM_CLICK = ids.ANIMATE + ".n_clicks"
ANIM_TICK = ids.ANIMATE_TIMER + ".n_intervals"


def test_animate_mu():
    mu, disabled = in_callback(ce.animate_mu, ANIM_CLICK, 1, None, 0.73, True)
    assert (mu, disabled) == (0.0, False)
    seen = [mu]
    for tick in range(1, 100):
        mu, disabled = in_callback(ce.animate_mu, ANIM_TICK, 1, tick, mu, disabled)
        seen.append(mu)
        if disabled:
            break
    assert seen[-1] == 1.0 and disabled is True
    assert len(seen) == 21
    assert np.allclose(np.diff(seen), 0.05)
    assert seen == [round(0.05 * i, 2) for i in range(21)]
    # a tick after the end (or before any click) changes nothing
    assert in_callback(ce.animate_mu, ANIM_TICK, 1, 50, 1.0, True) == (no_update, True)
    assert in_callback(ce.animate_mu, ANIM_TICK, None, 3, 0.4, True) == (no_update, True)
    # a second click restarts from 0; every value is a valid mu
    assert in_callback(ce.animate_mu, ANIM_CLICK, 2, 50, 1.0, True) == (0.0, False)
    for v in seen:
        ExplorerSettings.parse({"mu_t": v})


# --------------------------------------------------------------------------- 9. added points

CLICK = ids.GRAPH_SPACE + ".clickData"
UPLOAD = ids.UPLOAD + ".contents"
CLEAR = ids.CLEAR_POINTS + ".n_clicks"


def data_url(text: bytes | str, mime: str = "text/csv") -> str:
    raw = text.encode() if isinstance(text, str) else text
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


def add(prop: str, click=None, contents=None, filename=None, extra=None):
    return in_callback(ce.add_points, prop, click, contents, None, filename, extra)


def test_click_adds_the_clicked_point_and_clear_empties():
    pts, msg = add(CLICK, click={"points": [{"x": 1.234567, "y": -0.5, "curveNumber": 0}]})
    assert pts == [[1.2346, -0.5]] and "1 added" in msg
    pts, msg = add(CLICK, click={"points": [{"x": 0.1, "y": 0.2}]}, extra=pts)
    assert pts == [[1.2346, -0.5], [0.1, 0.2]] and "2 added" in msg
    assert add(CLEAR, extra=pts) == ([], "")
    for bad in (None, {}, {"points": []}, {"points": [{"x": "a", "y": 1}]},
                {"points": [{"y": 1}]}):
        assert add(CLICK, click=bad, extra=pts) == (no_update, no_update)
    # the added point is part of the data the page shows
    out = good(views(SMALL, extra=[[1.2346, -0.5]]))
    data, = [t for t in out[0]["data"] if t.get("name") == "data"]
    assert decode(data["x"]).shape == (SMALL.n_points + 1,)
    assert "61 points" in summary_text(out[3])
    assert flat_query(out[6])["pts"] == "1.235,-0.5"


def test_click_cap():
    full = [[0.0, 0.0]] * bx.MAX_EXTRA_POINTS
    pts, msg = add(CLICK, click={"points": [{"x": 1, "y": 1}]}, extra=full)
    assert pts is no_update and str(bx.MAX_EXTRA_POINTS) in msg
    pts, _ = add(CLICK, click={"points": [{"x": 1, "y": 1}]}, extra=full[1:])
    assert len(pts) == bx.MAX_EXTRA_POINTS


GOOD_CSV = {
    "plain.csv": ("0.5,1\n-1,2.25\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "header.csv": ("x,y\n0.5,1\n-1,2.25\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "labels.CSV": ("X,Y,label\n0.5,1,0\n-1,2.25,1\n\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "nolabelheader.csv": ("0.5,1,3\n-1,2.25,0\n", [[0.5, 1.0], [-1.0, 2.25]]),
    "crlf.csv": ("\ufeffx,y\r\n1e-3,-2\r\n", [[0.001, -2.0]]),
}


@pytest.mark.parametrize("name", sorted(GOOD_CSV))
def test_upload_good_csv(name):
    text, want = GOOD_CSV[name]
    assert np.array_equal(es.upload_points(data_url(text), name), want)
    assert np.array_equal(es.upload_points(data_url(text, "application/vnd.ms-excel"), name),
                          want)
    pts, msg = add(UPLOAD, contents=data_url(text), filename=name, extra=[[9.0, 9.0]])
    assert pts == [[9.0, 9.0], *want]
    assert msg == f"added {len(want)} points from {name}"


BAD_UPLOADS = {
    "bad base64": (lambda: "data:text/csv;base64,@@@not base64@@@", "f.csv", "not readable"),
    "no comma": (lambda: "garbage", "f.csv", "empty upload"),
    "none": (lambda: None, "f.csv", "empty upload"),
    "not csv": (lambda: data_url("1,2\n"), "points.txt", "expected a .csv"),
    "no name": (lambda: data_url("1,2\n"), None, "upload: expected a .csv"),
    "empty": (lambda: data_url(""), "f.csv", "empty"),
    "blank lines": (lambda: data_url("\n\n  \n"), "f.csv", "empty"),
    "too big": (lambda: data_url("0.1,0.2\n" * 140_000), "f.csv", "larger than 1000 kB"),
    "nan": (lambda: data_url("x,y\n1,nan\n"), "f.csv", "non-finite"),
    "inf": (lambda: data_url("1,inf\n"), "f.csv", "non-finite"),
    "huge": (lambda: data_url("1,1e300\n"), "f.csv", "beyond"),
    "one column": (lambda: data_url("1\n2\n"), "f.csv", "expected 2 columns"),
    "four columns": (lambda: data_url("1,2,3,4\n"), "f.csv", "expected 2 columns"),
    "ragged": (lambda: data_url("1,2\n3\n"), "f.csv", "expected 2 columns, got 1"),
    "bad header": (lambda: data_url("a,b\n1,2\n"), "f.csv", "header must be"),
    "header only": (lambda: data_url("x,y\n"), "f.csv", "no data rows"),
    "text cell": (lambda: data_url("1,2\n3,abc\n"), "f.csv", "not a number"),
    "bad label": (lambda: data_url("1,2,-1\n"), "f.csv", "labels"),
    "binary": (lambda: data_url(bytes(range(256)) * 4), "f.csv", "not a text CSV"),
    "nul bytes": (lambda: data_url(b"1,2\x00\n"), "f.csv", "not a text CSV"),
}


@pytest.mark.parametrize("case", sorted(BAD_UPLOADS))
def test_upload_errors_are_one_line_messages(case):
    contents, name, expect = BAD_UPLOADS[case]
    contents = contents()
    with pytest.raises(ValueError) as exc:
        es.upload_points(contents, name)
    msg = str(exc.value)
    assert msg.startswith(name or "upload") and expect in msg and "\n" not in msg
    before = [[0.25, 0.5]]
    pts, status = add(UPLOAD, contents=contents, filename=name, extra=before)
    assert pts is no_update  # the previous points stay
    assert isinstance(status, html.Span) and status.children == msg
    assert "danger" in status.className


def test_upload_over_the_point_cap_keeps_the_points():
    text = "\n".join(f"{i * 1e-3},0" for i in range(50))
    before = [[0.0, 0.0]] * (bx.MAX_EXTRA_POINTS - 10)
    pts, status = add(UPLOAD, contents=data_url(text), filename="many.csv", extra=before)
    assert pts is no_update and str(bx.MAX_EXTRA_POINTS) in status.children


def test_sync_ranges_keeps_choices_inside_the_network():
    assert ce.sync_ranges(4, 8, 2, 3, 5)[2:] == (2, 4, 3, 8, 5)  # inside: unchanged
    assert ce.sync_ranges(2, 3, 4, 4, 8)[2:] == (2, 2, 2, 3, 3)  # clamped to depth/width
    assert all(v is no_update for v in ce.sync_ranges(0, 8, 2, 2, 2))  # bad depth: no change
    assert all(v is no_update for v in ce.sync_ranges(4, "abc", 2, 2, 2))


def test_preset_key_goes_into_the_url_and_restores_the_caption():
    preset = PRESETS["fig2c"]
    out = views(preset.settings, view=preset.view)
    assert "preset" not in flat_query(out[6])
    out = ce.update_views(es.control_values(preset.settings), [], preset.view, False, False,
                          preset="fig2c")
    state = es.initial_state(flat_query(out[6]))
    assert state[6] == preset.caption and state[7] == "fig2c"
    assert es.initial_state(flat_query(out[6]) | {"preset": "nope"})[7] is None
