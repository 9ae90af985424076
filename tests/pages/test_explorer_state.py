"""The explorer page's state (issue 3): control values <-> settings, the URL query that
holds the whole page (a shared link restores it; a tampered one falls back with a message),
the layout built from it, and the ranges that follow depth and width."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from dash import html, no_update
from explorer_helpers import (
    SMALL,
    assert_same_settings,
    find,
    flat_query,
    valid_settings,
    views,
    walk,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from bnviz.params import PartitionParams
from bnviz.views.explorer import PRESETS, InputError
from bnviz.web.callbacks.explorer import callbacks as ce
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.explorer import state as es
from bnviz.web.layouts.explorer import page_layout

# --------------------------------------------------------------------------- controls

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


def test_huge_int_in_a_control_gives_message():
    # 10**400 is what json.loads returns for a 400-digit number in a crafted request
    for name, label in (("depth", "depth"), ("target_unit", "unit k")):
        controls = es.control_values(SMALL) | {name: 10**400}
        out = views(SMALL, controls=controls)
        assert out[5] is True and label in out[4]


# --------------------------------------------------------------------------- URL state

def url_state(q: str) -> tuple:
    return es.initial_state(flat_query(q))


points_st = st.lists(st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(list), max_size=6)


@settings(max_examples=40, deadline=None)
@given(valid_settings, st.sampled_from(es.VIEWS), st.booleans(), st.booleans(), points_st)
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
    pts = [[0.1 * i, -0.1 * i] for i in range(es.EXPLORER_MAX_URL_POINTS)]
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
        assert s == PartitionParams()
        assert "settings were not used" in message
    else:
        assert s == PartitionParams.from_page({k: v for k, v in raw.items() if k != "pts"})
    if points_lost:
        assert pts == [] and "added points were not readable" in message
    if what is None:
        assert "settings" not in message and "points" not in message
        assert tls is False and projector is False
    assert view in es.VIEWS
    assert view == ("unit" if "view=unit" in query else "space")
    page = page_layout(**raw)
    assert isinstance(page, html.Div)
    alert = find(page, ids.MESSAGE)
    assert alert.children == message and alert.is_open is bool(message)


def test_page_layout_places_the_state_in_the_controls():
    s = replace(SMALL, sigma_s=2.0, target_unit=3, batch_size=10, mu_t=0.25)
    q = es.query_string(s, "layers", True, True, [[1.5, -0.5]])
    page = page_layout(**flat_query(q) | {"preset": "fig9"})
    assert page.className == "projector"
    assert find(page, ids.DEPTH).value == 3 and find(page, ids.WIDTH).value == 5
    assert find(page, ids.SIGMA).value == pytest.approx(1.0)
    assert find(page, ids.TARGET_UNIT).value == 4  # 1-based in the page
    assert find(page, ids.BATCH_SIZE).value == "10"
    assert find(page, ids.MU).value == pytest.approx(0.25)
    assert find(page, ids.VIEW).active_tab == "layers"
    assert find(page, ids.TLS).value is True and find(page, ids.PROJECTOR).value is True
    assert find(page, ids.EXTRA_POINTS).data == [[1.5, -0.5]]
    # the link's settings are not Figure 9's: its caption says what differs
    caption = find(page, ids.CAPTION).children
    assert caption.startswith(PRESETS["fig9"].caption) and "Changed since: depth, width" in caption
    assert find(page, ids.MESSAGE).is_open is False
    assert page_layout().__class__ is html.Div


def test_tampered_view_gets_a_message():
    assert es.initial_state({"view": "evil"})[5] != ""


@pytest.mark.parametrize("query", ["pts=1,2&pts=3,4", "preset=fig1&preset=fig2a"])
def test_repeated_query_keys_do_not_raise(query):
    from dash._pages import _parse_query_string

    page = page_layout(**_parse_query_string("?" + query))
    assert isinstance(page, html.Div)


def test_preset_key_goes_into_the_url_and_restores_the_caption():
    preset = PRESETS["fig2c"]
    out = views(preset.settings, view=preset.view)
    assert "preset" not in flat_query(out[6])
    out = ce.update_views(es.control_values(preset.settings), [], preset.view, False, False,
                          preset="fig2c")
    state = es.initial_state(flat_query(out[6]))
    assert state[6] == preset.caption and state[7] == "fig2c"
    assert es.initial_state(flat_query(out[6]) | {"preset": "nope"})[7] is None


@pytest.mark.parametrize("key", sorted(PRESETS))
def test_the_caption_follows_the_preset(key):
    """The preset's caption while the controls and view are its figure's; once a setting
    moves, the caption says which (the explanation no longer describes what is shown);
    a bad value leaves the caption alone; no preset, the invitation to pick one."""
    preset = PRESETS[key]
    controls = es.control_values(preset.settings)
    assert es.preset_caption(key, controls, preset.view) == preset.caption
    assert ce.caption_follows(controls, preset.view, key) == preset.caption
    wider = {**controls, "width": preset.settings.width + 1}
    caption = es.preset_caption(key, wider, preset.view)
    assert caption.startswith(preset.caption)
    assert caption.endswith(f"Changed since: width (the {preset.label} button puts the "
                            "figure back).")
    moved = {**controls, "mu_t": 0.25 if preset.settings.mu_t != 0.25 else 0.5}
    assert "Changed since: μ (" in es.preset_caption(key, moved, "unit" if preset.view !=
                                                      "unit" else "space").replace(
        ", the view", "")
    assert ce.caption_follows({**controls, "width": "wide"}, preset.view, key) is no_update
    assert es.preset_caption(None, controls, preset.view) == es.NO_PRESET
    assert es.preset_caption("nope", controls, preset.view) == es.NO_PRESET
    # a link to a changed preset opens with the changed caption
    link = es.initial_state({**replace(preset.settings, width=preset.settings.width + 1)
                            .to_query(), "view": preset.view, "preset": key})
    assert link[6] == caption


def test_layout_has_one_button_per_preset():
    page = page_layout()
    keys = [c.id["key"] for c in walk(page)
            if isinstance(getattr(c, "id", None), dict) and c.id.get("type") == ids.PRESET]
    assert keys == list(PRESETS)


def test_sync_ranges_keeps_choices_inside_the_network():
    assert ce.sync_ranges(4, 8, 2, 3, 5)[2:] == (2, 4, 3, 8, 5)  # inside: unchanged
    assert ce.sync_ranges(2, 3, 4, 4, 8)[2:] == (2, 2, 2, 3, 3)  # clamped to depth/width
    assert all(v is no_update for v in ce.sync_ranges(0, 8, 2, 2, 2))  # bad depth: no change
    assert all(v is no_update for v in ce.sync_ranges(4, "abc", 2, 2, 2))
