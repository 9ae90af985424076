"""The explorer's Figure 9 (issue 17, item 3): the preset shows a TRAINED network's layers 1
and 4 side by side, each on its own colour scale with a colour bar that names exactly what
it shows, the data as black dots, and each facet's layer, unit, value and input-space
distance on hover; the other controls keep working, and a moved mu or sigma renames the
colour (the distance at the moved mu is no longer sigma^2/||w||^2)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from explorer_helpers import flat_query, good, summary_text, views
from plotly.colors import sample_colorscale

from bnviz.views.explorer import PRESETS
from bnviz.views.figure9 import figure9
from bnviz.views.style import FIGURE9, PARTITION
from bnviz.web.callbacks.explorer import callbacks as ce
from bnviz.web.callbacks.explorer import state as es
from bnviz.web.callbacks.projector import projected

PRESET = PRESETS["fig9"]


@pytest.fixture(scope="module")
def shown():
    """The preset as the page draws it, and bnviz's numbers for the same settings."""
    out = good(views(PRESET.settings, view=PRESET.view, tls=PRESET.tls))
    return out, figure9(PRESET.settings)


def _bars(fig):
    return [t for t in fig["data"] if t.get("marker", {}).get("showscale")]


def _hover(fig, panel):
    return next(t for t in fig["data"] if t.get("hovertemplate") and t["xaxis"] == panel)


def test_two_colour_bars_name_the_quantity_and_the_layer(shown):
    (fig, *_), _ = shown
    titles = [b["marker"]["colorbar"]["title"]["text"] for b in _bars(fig)]
    assert titles == ["σ²₁,ₖ/‖w₁,ₖ‖²<br>(layer 1, eq. 8)", "σ²₄,ₖ/‖w₄,ₖ‖²<br>(layer 4, eq. 8)"]
    assert [fig["layout"][k]["title"]["text"] for k in ("xaxis", "xaxis2")] == [
        "layer 1: H₁,ₖ", "layer 4: F₄,ₖ"]


def test_each_layer_has_its_own_colour_scale(shown):
    """Each bar spans its own layer's values; the units at the ends of a layer's range take
    the ends of the colour scale (blue small, green large)."""
    (fig, *_), f9 = shown
    scale = [list(stop) for stop in FIGURE9.colourscale]
    for bar, t in zip(_bars(fig), f9.layers, strict=True):
        lo, hi = t.colour_range
        assert (bar["marker"]["cmin"], bar["marker"]["cmax"]) == (lo, hi)
        panel = bar["xaxis"]
        colours = {tr["name"]: tr["line"]["color"] for tr in fig["data"]
                   if tr.get("mode") == "lines" and tr["xaxis"] == panel}
        low, high = np.argmin(t.values), np.argmax(t.values)
        assert colours[f"layer {t.layer}, unit {low + 1}"] == sample_colorscale(scale, [0.0])[0]
        assert colours[f"layer {t.layer}, unit {high + 1}"] == sample_colorscale(scale, [1.0])[0]
    assert _bars(fig)[0]["marker"]["cmax"] != _bars(fig)[1]["marker"]["cmax"]


def test_hover_gives_layer_unit_value_and_distance(shown):
    (fig, *_), f9 = shown
    for panel, t in zip(("x", "x2"), f9.layers, strict=True):
        hover = _hover(fig, panel)
        assert f"layer {t.layer}, unit %{{customdata[0]}}" in hover["hovertemplate"]
        assert "σ²/‖w‖² (TLS error, eq. 8)" in hover["hovertemplate"]
        assert "mean input-space distance" in hover["hovertemplate"]
        custom = np.array(hover["customdata"])
        assert len(custom) == len(t.facets)
        units = custom[:, 0].astype(int) - 1
        np.testing.assert_array_equal(units, t.facet_units)
        np.testing.assert_allclose(custom[:, 1], t.values[units], rtol=1e-4)
        np.testing.assert_allclose(custom[:, 2], t.mean_distance[units], rtol=1e-4)


def test_data_are_black_dots_in_both_panels(shown):
    (fig, *_), f9 = shown
    dots = [t for t in fig["data"] if t.get("name") == PARTITION.data_name]
    assert [t["xaxis"] for t in dots] == ["x", "x2"]
    assert all(t["marker"]["color"] == PARTITION.data for t in dots)


def test_the_summary_reports_the_training_and_the_ranks(shown):
    (_, _, _, summary, *_), f9 = shown
    text = " ".join(summary_text(summary).split())
    assert "trained weights: 500 Adam steps" in text and "training accuracy 100 %" in text
    for t in f9.layers:
        assert f"layer {t.layer} {t.spearman:.3g}" in text


def test_a_moved_mu_or_sigma_renames_the_colour():
    """mu at 0.5 mu_BN, or sigma doubled: the colour is the mean squared distance at the mu
    in use, and the bars and the hover say so instead of sigma^2/||w||^2."""
    for moved in (replace(PRESET.settings, mu_t=0.5), replace(PRESET.settings, sigma_s=2.0)):
        fig = good(views(moved, tls=True))[0]
        titles = [b["marker"]["colorbar"]["title"]["text"] for b in _bars(fig)]
        assert titles == ["mean d² to H₁,ₖ at<br>current μ (layer 1)",
                          "mean d² to H₄,ₖ at<br>current μ (layer 4)"]
        assert all("σ²/‖w‖² at μ = batch mean" in _hover(fig, p)["hovertemplate"]
                   for p in ("x", "x2"))


def test_the_other_controls_keep_working():
    """The highlighted layer picks the right panel; random weights show the same view (with
    their own numbers); the side-by-side view still compares trained weights without and
    with BN; the URL keeps the weights."""
    fig = good(views(replace(PRESET.settings, layer=2), tls=True))[0]
    assert fig["layout"]["xaxis2"]["title"]["text"] == "layer 2: F₂,ₖ"
    one = good(views(replace(PRESET.settings, layer=1), tls=True))[0]
    assert len(_bars(one)) == 1
    random = good(views(replace(PRESET.settings, weights="random"), tls=True))[0]
    trained = good(views(PRESET.settings, tls=True))[0]
    assert _bars(random)[0]["marker"]["cmax"] != _bars(trained)[0]["marker"]["cmax"]
    out = good(views(PRESET.settings, view="layers"))
    assert out[1]["layout"]["annotations"]
    assert flat_query(out[6])["weights"] == "trained"
    assert es.initial_state(flat_query(out[6]))[0] == PRESET.settings


def test_projector_keeps_each_colour_bar_beside_its_panel():
    """projected() stacks colour bars in the right margin; Figure 9's go back beside their
    panels, outside every panel's domain, and not over each other."""
    fig = good(views(PRESET.settings, tls=True, projector=True))[0]
    bars = _bars(fig)
    domains = [fig["layout"][k]["domain"] for k in ("xaxis", "xaxis2")]
    xs = [b["marker"]["colorbar"]["x"] for b in bars]
    assert xs[0] == pytest.approx(domains[0][1] + 0.01) and xs[0] < domains[1][0]
    assert xs[1] == pytest.approx(domains[1][1] + 0.01)
    raw = good(views(PRESET.settings, tls=True))[0]
    assert [b["marker"]["colorbar"]["x"] for b in _bars(projected(raw))] == \
        [b["marker"]["colorbar"]["x"] for b in _bars(raw)]  # several bars: kept in place
    one_bar = {"data": [{"type": "heatmap", "z": [[1]], "colorbar": {"x": 0.5}}],
               "layout": {}}
    assert projected(one_bar)["data"][0]["colorbar"]["x"] == 1.02  # one: to the margin


def test_update_views_caches_figure9_by_settings():
    ce.run_figure9(PRESET.settings, [])
    hits = ce._figure9_cached.cache_info().hits
    ce.run_figure9(PRESET.settings, [])
    assert ce._figure9_cached.cache_info().hits == hits + 1
