"""The explorer page's views (issue 3): update_views draws the input space (Figures 1, 2b,
2c, 9), the layers side by side (Figure 1) and one unit (Figure 2a); every control changes
what it should and nothing else, a bad value is one message that keeps the pictures, and
the numbers shown are checked against independent numpy / shapely computations."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from dash import no_update
from explorer_helpers import (
    SMALL,
    central_flag,
    decode,
    fig_json,
    flat_query,
    good,
    independent_central,
    line_traces,
    orange,
    segments_of,
    space_fig,
    summary_rows,
    summary_text,
    views,
)

import bnviz.views.explorer as bx
from bnviz.core.network import random_network
from bnviz.params import PartitionParams
from bnviz.views.explorer import PRESETS, explore
from bnviz.views.style import UNIT
from bnviz.web.callbacks.explorer import callbacks as ce
from bnviz.web.callbacks.explorer import state as es

# --------------------------------------------------------------------------- update_views

def test_update_views_outputs_and_query():
    out = good(views(SMALL))
    space, layers, unit, summary, _, _, query, marked, caption = out
    assert marked == ""  # a fresh picture is not marked stale
    assert caption == es.NO_PRESET  # the caption comes with the picture (no preset here)
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
    """TLS colours (Figure 9): layer 1 and the highlighted layer side by side, each with a
    colour bar of its own, every facet of those two layers drawn exactly once (one trace a
    unit); projector mode enlarges type and lines."""
    fig = space_fig(SMALL, tls=True)
    bars = [t for t in fig["data"] if t.get("marker", {}).get("showscale")]
    assert [b["xaxis"] for b in bars] == ["x", "x2"]
    assert all("colorbar" in b["marker"] for b in bars)
    assert not [t for t in space_fig(SMALL)["data"] if t.get("marker", {}).get("showscale")]
    r = explore(SMALL)
    for panel, layer in (("x", 1), ("x2", SMALL.layer)):
        units = [t for t in fig["data"] if t.get("mode") == "lines" and t["xaxis"] == panel]
        assert sum(len(segments_of(t)) for t in units) == len(r.partition.layers[layer - 1].facets)
        assert {t["name"] for t in units} == {f"layer {layer}, unit {k + 1}" for k in
                                              np.unique(r.partition.layers[layer - 1].facet_units)}
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
    assert len(out) == 9
    assert all(o is no_update for o in out[:4]), "figures and summary are kept"
    assert out[6] is no_update, "the URL is kept"
    assert out[7] == ce.STALE, "and marked stale"
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
    s = PartitionParams(depth=2, width=8, mode="zero_bias", layer=2)
    zero = max(len(lp.regions) for lp in explore(s).partition.layers)
    bn = max(len(lp.regions) for lp in explore(replace(s, mode="bn")).partition.layers)
    assert zero < bn
    ce._explore_cached.cache_clear()
    monkeypatch.setattr(bx, "EXPLORER_MAX_REGIONS", (zero + bn) // 2)
    good(views(s, view="space"))  # the view of the chosen mode fits under the cap
    out = views(s, view="layers")
    assert out[5] is True and "regions" in out[4]


# --------------------------------------------------------------------------- views

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
    # the row label on two lines (rotated on one, it overprinted the next row's at 1280x720)
    assert f"without BN<br>({other.replace('_', ' ')})" in texts and "with BN" in texts
    # row 0 is the model without BN, with the same weights; row 1 is BN
    for row, row_mode in ((0, other), (1, "bn")):
        part = explore(replace(s, mode=row_mode)).partition
        for c in range(s.depth):
            k = row * s.depth + c + 1
            ax = "x" if k == 1 else f"x{k}"  # plotly.js names the first axis x, not x1
            lines = [t for t in fig["data"] if t["xaxis"] == ax and t.get("mode") == "lines"]
            assert len(lines) == 1  # the panel's own layer as lines ...
            want = part.layers[c].facets
            got = segments_of(lines[0]) if len(want) else np.zeros((0, 4))
            assert got.shape == want.shape and np.allclose(got, want, atol=1e-5)
            # ... the earlier layers as one picture on the panel, that draws them
            pictures = [im for im in lay_.get("images", []) if im["xref"] == ax]
            assert len(pictures) == (1 if c else 0)
            if c:
                assert_picture_draws(pictures[0], np.concatenate(
                    [part.layers[j].facets for j in range(c)]), part.box)


def assert_picture_draws(image: dict, facets: np.ndarray, box) -> None:
    """The layout image covers ``box`` and its opaque pixels are the segments': every pixel
    lies within 1.5 pixels of a segment, and every segment's midpoint pixel is drawn."""
    import base64
    import io

    from PIL import Image

    x0, x1, y0, y1 = box
    assert (image["x"], image["y"], image["sizex"], image["sizey"]) == pytest.approx(
        (x0, y1, x1 - x0, y1 - y0)) and image["sizing"] == "stretch"
    png = Image.open(io.BytesIO(base64.b64decode(image["source"].split(",", 1)[1])))
    drawn = np.asarray(png.convert("RGBA"))[..., 3] > 0
    n = drawn.shape[0]
    step = np.array([(x1 - x0) / (n - 1), (y1 - y0) / (n - 1)])
    rows, cols = np.nonzero(drawn)
    centres = np.column_stack([x0 + cols * step[0], y0 + (n - 1 - rows) * step[1]])
    a, b = facets[:, :2], facets[:, 2:]
    ab = b - a
    t = np.clip(((centres[:, None] - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-300),
                0, 1)
    gap = np.linalg.norm(centres[:, None] - (a + t[..., None] * ab), axis=-1).min(axis=1)
    assert (gap <= 1.5 * step.max()).all()
    mid = np.rint(((a + b) / 2 - (x0, y0)) / step).astype(int)
    inside = ((mid >= 0) & (mid < n)).all(axis=1)
    assert drawn[n - 1 - mid[inside, 1], mid[inside, 0]].all()


def bn_forward_stats(s: PartitionParams, layer: int, unit: int) -> tuple[float, float, float]:
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


def unit_fig(s: PartitionParams) -> dict:
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


# --------------------------------------------------------------------------- science shown

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


@pytest.mark.parametrize("mode", ["bn", "random_bias"])
def test_summary_prints_the_mean_distance_to_the_boundary(mode):
    """The engine's distance (checked against shapely in tests/views/test_explorer.py) is the
    one the summary prints."""
    s = PartitionParams(depth=1, width=3, mode=mode, n_points=40, dataset="circles", layer=1)
    want = explore(s).mean_boundary_distance
    assert math.isfinite(want) and f"{want:.4g}" in summary_text(good(views(s))[3])


def test_region_fill_is_the_highlighted_layers_raster():
    """The figure's heatmap is the highlighted layer's pattern raster (checked against the
    exact partition in tests/views/test_explorer.py), one colour per region."""
    s = PartitionParams(depth=3, width=4, n_points=50, layer=3, mu_t=0.7)
    r = explore(s)
    raster = r.raster
    x0, x1, y0, y1 = r.partition.box
    res = bx.RASTER
    xs = x0 + (np.arange(res) + 0.5) * (x1 - x0) / res
    ys = y0 + (np.arange(res) + 0.5) * (y1 - y0) / res
    # the raster is what the page shows: the figure's heatmap is the highlighted layer
    fig = space_fig(s)
    heat = fig["data"][0]
    assert heat["type"] == "heatmap" and decode(heat["z"]).shape == (res, res)
    assert math.isclose(heat["x0"], xs[0]) and math.isclose(heat["y0"], ys[0])
    z = decode(heat["z"])
    flat = raster[s.layer - 1]
    for v in np.unique(flat)[:50]:
        assert len(np.unique(z[flat == v])) == 1  # one colour per region


def test_past_the_vector_budget_the_context_layers_are_pictures(monkeypatch):
    """issue 30: an answer's size is capped. Past MAX_VECTOR_SEGMENTS the space view's earlier
    layers, and the layers view's own layers too, are pictures that draw the same facets;
    the highlighted layer stays lines (it is what a person zooms into)."""
    import json

    from bnviz.web.callbacks.explorer import figures as cf

    s = replace(SMALL, depth=3, layer=3)
    result = explore(s)
    part = result.partition
    before = cf.partition_figure(part, result.raster, result.data.points, 3)
    monkeypatch.setattr(cf, "MAX_VECTOR_SEGMENTS", 10)
    after = cf.partition_figure(part, result.raster, result.data.points, 3)
    (picture,) = after["layout"]["images"]
    assert_picture_draws(picture, np.concatenate([lp.facets for lp in part.layers[:2]]),
                         part.box)
    lines = [t for t in after["data"] if t.get("mode") == "lines"]
    assert [len(segments_of(t)) if t["x"] else 0 for t in lines][:2] == [
        0, len(part.layers[2].facets)]
    assert not before["layout"]["images"]
    layers = cf.small_multiples_figure([("with BN", part)], result.data.points)
    assert not [t for t in layers["data"] if t.get("mode") == "lines"]
    assert len(layers["layout"]["images"]) == 2 * 3 - 1  # each panel's own + earlier ones
    # a picture's size is bounded whatever the facets: 1200 x 1200 at one bit a pixel
    assert len(picture["source"]) < 1200 * 1200 / 8 * 4 / 3 + 1000
    assert len(json.dumps(after)) < len(json.dumps(before)) + len(picture["source"])
