"""The dashboard's first page: callback logic without a browser, then in headless Chromium."""

from __future__ import annotations

import pytest

from callbacks.explorer import InputError, parse_settings, update_partition

DEFAULTS = dict(depth=4, width=6, activation="leaky_relu", mode="bn", dataset="moons",
                n_points=100, seed=0, batch_size="all", layer=4)


def _call(**changes):
    args = {**DEFAULTS, **changes}
    return update_partition(*args.values())


def _regions_in_title(fig) -> int:
    return int(fig.layout.title.text.split(":")[1].split()[0])


def test_default_settings_give_the_bn_picture():
    fig, summary, message, is_open, layer_max, _ = _call()
    assert not is_open and message == ""
    assert layer_max == 4
    assert _regions_in_title(fig) > 12
    # Corollary 2 as the person sees it: layer 1 with BN has exactly 2 * width regions
    fig1, *_ = _call(layer=1)
    assert _regions_in_title(fig1) == 12


def test_mode_changes_the_picture():
    bn, *_ = _call(layer=1)
    rb, *_ = _call(layer=1, mode="random_bias")
    assert _regions_in_title(rb) != _regions_in_title(bn)


@pytest.mark.parametrize(
    ("field", "value"),
    [("depth", 0), ("depth", 13), ("depth", "abc"), ("depth", None), ("width", 1),
     ("width", 65), ("width", 2.5), ("width", float("nan")), ("activation", "tanh"),
     ("mode", "bn2"), ("dataset", "mnist"), ("n_points", 1), ("n_points", 10**7),
     ("seed", -1), ("batch_size", "1"), ("batch_size", "101"), ("batch_size", "many")],
)
def test_bad_values_show_a_message_and_keep_the_figure(field, value):
    with pytest.raises(InputError):
        parse_settings(**{**DEFAULTS, field: value})
    fig, summary, message, is_open, *_ = _call(**{field: value})
    assert is_open and message
    assert fig is not None and not hasattr(fig, "layout")  # dash.no_update: picture kept


def test_layer_is_clamped_to_the_depth():
    s = parse_settings(**{**DEFAULTS, "depth": 2, "layer": 4})
    assert s.layer == 2


def test_page_loads_and_mode_changes_the_picture(dash_duo):
    from selenium.webdriver.support.ui import Select

    from app import app

    dash_duo.start_server(app)
    dash_duo.wait_for_contains_text("#explorer-graph .gtitle", "regions", timeout=20)
    before = dash_duo.find_element("#explorer-graph .gtitle").text
    Select(dash_duo.find_element("#explorer-mode")).select_by_value("zero_bias")
    from dash.testing.wait import until

    until(lambda: dash_duo.find_element("#explorer-graph .gtitle").text != before, timeout=20)
    # the summary table follows the same computation as the picture
    assert "layer 1" in dash_duo.find_element("#explorer-summary").text
    assert dash_duo.get_logs() == []


def test_figure_fills_every_region_once_and_draws_every_facet():
    import numpy as np

    from bnviz.network import random_network
    from bnviz.partition import compute_partition
    from callbacks.figures import partition_figure

    pts = np.random.default_rng(3).normal(size=(40, 2))
    part = compute_partition(random_network(3, 5, seed=2), pts)
    for highlight in (1, 2, 3):
        fig = partition_figure(part, pts, highlight)
        fills = [t for t in fig.data if t.fill == "toself"]
        regions = part.layers[highlight - 1].regions
        breaks = sum(int(np.isnan(np.asarray(t.x, dtype=float)).sum()) for t in fills)
        assert breaks == len(regions)
        # every region's first corner appears as the start of a closed path
        starts = {tuple(np.round(regions.polygon(i)[0], 12)) for i in range(len(regions))}
        drawn = set()
        for t in fills:
            x = np.asarray(t.x, dtype=float)
            y = np.asarray(t.y, dtype=float)
            heads = np.r_[0, np.flatnonzero(np.isnan(x))[:-1] + 1]
            drawn |= {(round(x[h], 12), round(y[h], 12)) for h in heads}
        assert starts == drawn
        lines = [t for t in fig.data if t.mode == "lines" and t.fill != "toself"]
        assert len(lines) == highlight
        n_segments = [int(np.isnan(np.asarray(t.x, dtype=float)).sum()) for t in lines]
        assert n_segments == [len(part.layers[j].facets) for j in range(highlight)]
