"""BN paper Figure 9 (bnviz/views/figure9.py): each unit's sigma^2/||w||^2 on two layers of a
trained network, against independent numpy and shapely computations.

What must hold: in layer 1 the value IS the data's mean squared distance to the line (eq. 7-8,
with the BIASED variance: the unbiased one misses by 1 %), and also to the line's segment in
the box when every foot of perpendicular lies in it; with mu moved off the batch mean the
value is the distance at the moved mu, larger than sigma^2/||w||^2 (Theorem 1), and it is
named so; each layer has its own colour range; the input-space distances to a unit's facets
are exact (shapely); training is deterministic and reaches its data. What was measured, not
assumed: training does NOT make layer 1's TLS error smaller in general (6 of 20 seeds);
every layer-1 value lies between the extreme eigenvalues of the data's covariance (a
directional variance), trained or not.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import shapely

from bnviz.views.explorer import PRESETS, explore, trained_network
from bnviz.views.figure9 import FIGURE9_SETTINGS, figure9, figure9_layers, tls_layers
from bnviz.views.style import colour_bar_title


@pytest.fixture(scope="module")
def result():
    return explore(FIGURE9_SETTINGS)


@pytest.fixture(scope="module")
def fig9(result):
    return tls_layers(result)


def _line_distances(points: np.ndarray, w: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """(N, D) distances |<w_k, x> - mu_k| / ||w_k|| (eq. 7), numpy only."""
    return np.abs(points @ w.T - mu) / np.linalg.norm(w, axis=1)


def test_the_preset_is_the_papers_setup(fig9):
    s = fig9.settings
    assert s == PRESETS["fig9"].settings
    assert (s.depth, s.width, s.mode, s.weights, s.batch_size) == (4, 6, "bn", "trained", None)
    assert [t.layer for t in fig9.layers] == [1, 4] == list(figure9_layers(s))
    assert all(t.exact for t in fig9.layers)  # BN's own statistics: the value is sigma^2/||w||^2


def test_layer_one_value_is_the_mean_squared_distance_to_the_line(result, fig9):
    """Eq. 8 in layer 1, computed independently: the batch mean (eq. 3) puts the line, the
    mean squared point-to-line distance is the value, and it equals the biased variance of
    <w, x> over ||w||^2 (the unbiased variance, n / (n - 1) larger, would fail)."""
    x = result.data.points
    w = result.network.weights[0]
    proj = x @ w.T
    mu = proj.mean(0)
    d2 = (_line_distances(x, w, mu) ** 2).mean(0)
    t = fig9.layer(1)
    np.testing.assert_allclose(t.values, d2, rtol=1e-9, atol=0)
    np.testing.assert_allclose(t.values, proj.var(0, ddof=0) / (w**2).sum(1), rtol=1e-9)
    np.testing.assert_allclose(t.sigma2_over_w2, t.values, rtol=1e-9)
    assert np.all(np.abs(proj.var(0, ddof=1) / (w**2).sum(1) / t.values - 1) > 1e-3)


def test_layer_one_segments_in_the_box_give_the_same_distances(result, fig9):
    """The input-space distance to the unit's facets (its line clipped to the box) is the
    line distance wherever the foot of the perpendicular lies in the box: here every foot
    does, so the mean squared facet distance is eq. 8's value and ranks it exactly."""
    x = result.data.points
    w = result.network.weights[0]
    mu = (x @ w.T).mean(0)
    n = w / np.linalg.norm(w, axis=1, keepdims=True)
    signed = (x @ w.T - mu) / np.linalg.norm(w, axis=1)
    feet = x[:, None, :] - signed[:, :, None] * n[None]  # (N, D, 2)
    x0, x1, y0, y1 = fig9.box
    assert np.all((feet[..., 0] >= x0) & (feet[..., 0] <= x1) & (feet[..., 1] >= y0) &
                  (feet[..., 1] <= y1))
    t = fig9.layer(1)
    np.testing.assert_allclose(t.mean_sq_distance, t.values, rtol=1e-9)
    np.testing.assert_allclose(t.mean_distance, np.abs(signed).mean(0), rtol=1e-9)
    assert t.spearman_sq == pytest.approx(1.0)


def test_facet_distances_against_shapely(result, fig9):
    """Layer 4: the mean distance of the batch to each unit's folded hyperplane F_{4,k} (the
    union of its facets), by GEOS in float64."""
    t = fig9.layer(4)
    pts = shapely.points(result.batch)
    for k in range(len(t.values)):
        segs = t.facets[t.facet_units == k].reshape(-1, 2, 2)
        if len(segs) == 0:
            assert np.isinf(t.mean_distance[k])
            continue
        folded = shapely.multilinestrings(list(segs))
        dist = shapely.distance(pts, folded)
        assert t.mean_distance[k] == pytest.approx(dist.mean(), rel=1e-9)
        assert t.mean_sq_distance[k] == pytest.approx((dist**2).mean(), rel=1e-9)


def test_rank_correlations_against_their_definition(fig9):
    """Spearman's rho over the units with facets: Pearson's correlation of the ranks."""
    for t in fig9.layers:
        ok = np.isfinite(t.mean_distance)
        ranks = [np.argsort(np.argsort(v[ok])) for v in (t.values, t.mean_distance)]
        assert t.spearman == pytest.approx(np.corrcoef(*ranks)[0, 1], abs=1e-12)
        assert -1 <= t.spearman_sq <= 1


def test_each_layer_has_its_own_colour_range(fig9):
    ranges = {}
    for t in fig9.layers:
        drawn = np.unique(t.facet_units)
        assert np.array_equal(np.flatnonzero(t.drawn), drawn)
        ranges[t.layer] = t.colour_range
        assert ranges[t.layer] == (t.values[drawn].min(), t.values[drawn].max())
        np.testing.assert_array_equal(t.facet_values, t.values[t.facet_units])
    assert ranges[1] != ranges[4]
    # the layers' values live on different scales (input space vs layer 4's input space)
    assert ranges[1][1] > ranges[4][1]


def test_a_moved_mu_is_the_distance_at_that_mu_and_says_so():
    """mu = 0.5 mu_BN: the colour is mean_B d(x, H)^2 at the moved mu (numpy), larger than
    sigma^2/||w||^2 for every unit (the batch mean is the unique minimiser, Theorem 1), and
    the colour bar names the distance, not sigma^2/||w||^2."""
    moved = replace(FIGURE9_SETTINGS, mu_t=0.5)
    res = explore(moved)
    t = tls_layers(res).layer(1)
    assert not t.exact
    x, w = res.data.points, res.network.weights[0]
    mu = 0.5 * (x @ w.T).mean(0)
    np.testing.assert_allclose(t.values, (_line_distances(x, w, mu) ** 2).mean(0), rtol=1e-9)
    assert np.all(t.values > (x @ w.T).var(0) / (w**2).sum(1))
    assert "current μ" in colour_bar_title(1, t.exact)
    assert colour_bar_title(1, True).startswith("σ²₁,ₖ/‖w₁,ₖ‖²")
    assert "layer 4" in colour_bar_title(4, True) and "σ²₄,ₖ" in colour_bar_title(4, True)


def test_layer_one_values_are_directional_variances_trained_or_not():
    """sigma^2/||w||^2 in layer 1 is the data's variance along the unit's normal: between
    the smallest and largest eigenvalue of the (biased) covariance, whatever the weights."""
    for weights in ("random", "trained"):
        f = figure9(replace(FIGURE9_SETTINGS, weights=weights), layers=(1,))
        cov = np.cov(f.points.T, bias=True)
        lo, hi = np.linalg.eigvalsh(cov)
        assert np.all(f.layers[0].values >= lo * (1 - 1e-9))
        assert np.all(f.layers[0].values <= hi * (1 + 1e-9))


def test_training_is_deterministic_fits_the_data_and_moves_the_lines():
    """The trained network is the random start trained (same seed: the same start); it
    classifies the moons, and a fresh training (cache cleared) gives the same weights. What
    training does to layer 1's TLS error was measured, not assumed: it changes, and for this
    seed it is slightly smaller (4.17 vs 4.22), but over seeds 0-19 it was smaller in only
    6 of 20 (mean 3.18 trained vs 3.03 random), so no direction is asserted."""
    s = FIGURE9_SETTINGS
    args = (s.depth, s.width, s.activation, s.alpha, s.weight_seed, s.dataset, s.n_points,
            s.data_seed, s.shift_x, s.shift_y)
    first = trained_network(*args)
    trained_network.cache_clear()
    again = trained_network(*args)
    assert first is not again
    for a, b in zip(first.network.weights, again.network.weights, strict=True):
        np.testing.assert_array_equal(a, b)
    assert first.accuracy == 1.0 and first.loss < 0.1
    trained = figure9(s)
    random = figure9(replace(s, weights="random"))
    assert trained.train_accuracy == 1.0 and random.train_accuracy is None
    for t, r in zip(trained.layers, random.layers, strict=True):
        assert not np.allclose(t.values, r.values, rtol=1e-3)
    # measured for this seed (see the docstring): recorded so that a change is noticed
    assert trained.layer(1).values.sum() == pytest.approx(4.174, abs=5e-3)
    assert random.layer(1).values.sum() == pytest.approx(4.215, abs=5e-3)


def test_figure9_json_is_plain_numbers(fig9):
    doc = fig9.as_json()
    assert [entry["layer"] for entry in doc["layers"]] == [1, 4]
    for entry in doc["layers"]:
        assert entry["quantity"] == "sigma^2/||w||^2" and entry["exact"] is True
        assert len(entry["values"]) == len(entry["mean_distance"]) == 6
        assert sum(entry["facets"]) > 0
        assert -1 <= entry["spearman"] <= 1
    assert doc["settings"]["weights"] == "trained" and doc["train_accuracy"] == 1.0
