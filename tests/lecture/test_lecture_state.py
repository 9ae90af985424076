"""The lecture page's state (callbacks/lecture/state.py): a URL query -> (step, sliders,
theme) and back, the explorer's state as step 0, tampered links that fall back with a message
and never raise; and the QR code of a state's link (bnviz.lecture.qr), read back by a real
decoder (zxing-cpp)."""

from __future__ import annotations

import io
import math
from urllib.parse import parse_qs, urlencode

import pytest
import zxingcpp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from bnviz.lecture.qr import MAX_URL_LENGTH, qr_data_url, qr_png
from bnviz.lecture.scenes import BATCH_ALL, BATCH_SLIDER, DEPTH_SLIDER, compute_scene, step_settings
from bnviz.lecture.tour import TOUR, step_by_key
from bnviz.params import PartitionParams
from bnviz.web.callbacks.lecture.state import (
    THEMES,
    LectureState,
    explorer_step,
    initial_state,
    lecture_query,
    slider_values,
    step_for,
)

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


pytestmark = pytest.mark.usefixtures("lecture_home")


def _one_line(message: str) -> None:
    assert message.strip() and "\n" not in message and "Traceback" not in message
    assert len(message) < 300


def _own_sliders(number: int) -> dict:
    return slider_values(TOUR[number - 1].settings)


# --------------------------------------------------------------------------- initial state

def test_empty_query_is_step_1_light():
    state = initial_state({})
    assert isinstance(state, LectureState)
    assert (state.step, state.theme, state.base, state.message) == (1, "light", None, "")
    assert state.sliders == _own_sliders(1)


@pytest.mark.parametrize("raw, number", [("7", 7), (["7"], 7), ("1", 1), (str(len(TOUR)),
                                                                           len(TOUR))])
def test_step_by_number(raw, number):
    state = initial_state({"step": raw})
    assert state.step == number and state.message == ""
    assert state.sliders == _own_sliders(number)


@pytest.mark.parametrize("step", TOUR, ids=[s.key for s in TOUR])
def test_step_by_key(step):
    state = initial_state({"step": step.key})
    assert state.step == step.number and state.message == ""
    assert state.sliders == slider_values(step.settings)


def test_fig9_by_key():
    state = initial_state({"step": "fig9"})
    assert TOUR[state.step - 1].key == "fig9"
    assert state.step == [s.key for s in TOUR].index("fig9") + 1


@pytest.mark.parametrize("raw", ["99", "abc", "-1", "", "1.5", " 3", str(len(TOUR) + 1), "FIG9",
                                 "0x3",
                                 "explorer", None, "None"])
def test_bad_step_falls_back_to_1_with_a_message(raw):
    state = initial_state({"step": raw})
    assert state.step == 1
    assert state.sliders == _own_sliders(1)
    _one_line(state.message)
    assert "step" in state.message


@pytest.mark.parametrize("raw", ["²", "٣", "1" * 5000])
def test_odd_digits_in_step_never_raise(raw):
    """str.isdigit() is True for '²' (int() refuses it) and for a 5000-digit number (int()
    refuses more than 4300 digits): a tampered link must still fall back, not raise."""
    state = initial_state({"step": raw})
    assert 1 <= state.step <= len(TOUR)
    if raw != "٣":  # an Arabic-Indic 3 may be read as 3
        assert state.step == 1 and state.message


@pytest.mark.parametrize("theme, expected", [("dark", "dark"), ("light", "light"),
                                             (["dark"], "dark"), ("purple", "light"),
                                             ("DARK", "light"), ("", "light")])
def test_theme(theme, expected):
    state = initial_state({"step": "3", "theme": theme})
    assert state.theme == expected and state.step == 3


def test_step_0_is_the_explorer_state():
    state = initial_state({"step": "0", "depth": "3", "width": "5", "view": "unit",
                           "theme": "dark", "preset": "fig1", "projector": "1"})
    assert state.step == 0 and state.theme == "dark" and state.message == ""
    assert state.base["view"] == "unit" and state.base["tls"] is False
    step = step_for(0, state.base)
    assert step.settings == PartitionParams(depth=3, width=5)
    assert step.scene == "unit" and set(step.live) == {"mu", "sigma", "batch", "depth"}
    assert state.sliders == slider_values(PartitionParams(depth=3, width=5))
    assert state.sliders["depth"] == 3


def test_step_0_brings_the_explorer_sliders():
    state = initial_state({"step": "0", "mu_t": "0.5", "sigma_s": "2", "batch_size": "16",
                           "tls": "1"})
    assert state.sliders == {"mu": 0.5, "sigma": 1.0, "batch": 4, "depth": 4}
    assert state.base["tls"] is True and step_for(0, state.base).tls is True


def test_step_0_with_bad_explorer_settings():
    state = initial_state({"step": "0", "width": "abc", "depth": "3"})
    assert state.step == 0
    _one_line(state.message)
    assert step_for(0, state.base).settings == PartitionParams()


@pytest.mark.parametrize("view", ["bogus", "", "density", None])
def test_step_0_with_a_bad_view_shows_the_space(view):
    assert explorer_step({"settings": {}, "view": view}).scene == "space"


@pytest.mark.parametrize("base", [None, "junk", 3, [], {"settings": "x"},
                                  {"settings": {"depth": "99"}}])
def test_explorer_step_never_raises(base):
    step = explorer_step(base)
    assert step.scene in ("space", "layers", "unit")
    assert isinstance(step.settings, PartitionParams)


@pytest.mark.parametrize("number", [-1, len(TOUR) + 1, "3", 2.0, True, None])
def test_step_for_refuses_anything_but_a_step(number):
    with pytest.raises(ValueError):
        step_for(number, None)


# --------------------------------------------------------------------------- tampered sliders

@pytest.mark.parametrize("key, value", [("mu_t", "abc"), ("mu_t", "9"), ("mu_t", "nan"),
                                        ("sigma_s", "0"), ("sigma_s", "inf"),
                                        ("batch_size", "1"), ("batch_size", "x"),
                                        ("depth", "99"), ("depth", "2.5"), ("mu_t", [])])
def test_tampered_slider_falls_back_with_a_message(key, value):
    state = initial_state({"step": "3", key: value})
    assert state.step == 3
    assert state.sliders == _own_sliders(3)
    _one_line(state.message)
    assert "slider" in state.message


def test_sliders_in_the_link_are_used():
    state = initial_state({"step": "2", "mu_t": "0.5", "sigma_s": "0.5", "batch_size": "32",
                           "depth": "6"})
    assert state.message == ""
    assert state.sliders == {"mu": 0.5, "sigma": -1.0, "batch": 5, "depth": 6}
    batch = str(step_by_key("batch").number)
    assert initial_state({"step": batch, "batch_size": "all"}).sliders["batch"] == BATCH_ALL


_JUNK = st.one_of(st.text(max_size=30), st.sampled_from(["nan", "inf", "-1", "1e999", "0",
                                                          "all", "3", "0.5", "9" * 30]),
                  st.lists(st.text(max_size=5), max_size=3))


@FUZZ
@given(step=st.one_of(st.integers(-3, 20).map(str), st.sampled_from([s.key for s in TOUR]),
                      st.from_regex(r"[a-z]{0,6}", fullmatch=True)),
       extra=st.dictionaries(st.sampled_from(["mu_t", "sigma_s", "batch_size", "depth",
                                              "theme", "view", "tls", "width", "dataset",
                                              "n_points", "zz"]), _JUNK, max_size=6))
def test_tampered_links_never_raise(step, extra):
    state = initial_state({"step": step, **extra})
    assert 0 <= state.step <= len(TOUR)
    assert state.theme in THEMES
    assert set(state.sliders) == {"mu", "sigma", "batch", "depth"}
    assert BATCH_SLIDER[0] <= state.sliders["batch"] <= BATCH_ALL
    assert DEPTH_SLIDER[0] <= state.sliders["depth"] <= DEPTH_SLIDER[1]
    assert math.isfinite(state.sliders["mu"]) and math.isfinite(state.sliders["sigma"])
    assert "\n" not in state.message
    step_for(state.step, state.base)  # the state names a step that exists


# --------------------------------------------------------------------------- round trips

def _round_trip(number, step, settings, theme, base=None):
    query = lecture_query(number, step, settings, theme, base)
    state = initial_state(parse_qs(query, keep_blank_values=True))
    return query, state


@pytest.mark.parametrize("key, sliders, theme", [
    ("fig1", {}, "light"),
    ("fig1", {"mu_t": 0.3, "sigma_log2": 1.0, "batch_log2": 4, "depth": 6}, "dark"),
    ("cor2", {"mu_t": 0.5}, "light"),
    ("cor2", {"mu_t": 1.0}, "dark"),  # 1.0 is PartitionParams' default, not the step's 0.0
    ("fig2a", {"mu_t": 0.96, "depth": 1}, "light"),
    ("fig2c", {"sigma_log2": -1.0}, "light"),
    ("fig2c", {"sigma_log2": 0.0}, "light"),  # back to the default sigma
    ("fig2c", {"sigma_log2": -0.3}, "dark"),
    ("batch", {"batch_log2": 5}, "light"),
    ("batch", {"batch_log2": BATCH_ALL}, "light"),  # 'all' where the step has a batch of 8
    ("batch", {"batch_log2": 7}, "light"),  # 128 of 100 points: all
    ("fig3", {"depth": 3}, "light"),
    ("fig3", {"depth": 4}, "dark"),  # PartitionParams' default depth
    ("fig6", {"batch_log2": 2, "depth": 8}, "light"),
    ("fig7", {"batch_log2": BATCH_ALL}, "light"),
    ("fig7", {"batch_log2": 6}, "light"),  # the step's own
    ("luo", {"batch_log2": 9}, "dark"),
    ("dannemann", {"mu_t": 0.1, "batch_log2": 3}, "light"),  # no slider acts
])
def test_lecture_query_round_trips(key, sliders, theme):
    step = step_by_key(key)
    settings, _ = step_settings(step, **sliders)
    query, state = _round_trip(step.number, step, settings, theme)
    assert state.message == "", query
    assert state.step == step.number and state.theme == theme
    assert state.sliders == slider_values(settings), query
    assert parse_qs(query)["step"] == [str(step.number)]
    assert ("theme" in parse_qs(query)) == (theme == "dark")


@pytest.mark.parametrize("step", TOUR, ids=[s.key for s in TOUR])
def test_a_step_at_its_own_settings_has_a_short_query(step):
    assert lecture_query(step.number, step, step.settings, "light", None) == \
        f"step={step.number}"
    assert lecture_query(step.number, step, step.settings, "dark", None) == \
        f"step={step.number}&theme=dark"


@FUZZ
@given(number=st.integers(1, len(TOUR)),
       mu=st.integers(0, 37).map(lambda i: round(i * 0.04, 2)),
       sigma=st.integers(-20, 20).map(lambda i: i / 10),
       batch=st.integers(BATCH_SLIDER[0], BATCH_ALL),
       depth=st.integers(*DEPTH_SLIDER),
       theme=st.sampled_from(THEMES))
def test_any_slider_state_round_trips(number, mu, sigma, batch, depth, theme):
    step = TOUR[number - 1]
    settings, _ = step_settings(step, mu, sigma, batch, depth)
    query, state = _round_trip(number, step, settings, theme)
    assert state.message == "", query
    assert (state.step, state.theme) == (number, theme)
    assert state.sliders == slider_values(settings), query
    # the live sliders land where they were moved
    if "mu" in step.live:
        assert state.sliders["mu"] == pytest.approx(mu)
    if "sigma" in step.live:
        assert state.sliders["sigma"] == pytest.approx(sigma, abs=1e-6)
    if "depth" in step.live:
        assert state.sliders["depth"] == depth
    if "batch" in step.live and not (step.scene in ("space", "unit", "layers", "split")
                                     and 2**batch >= step.settings.n_points):
        assert state.sliders["batch"] == batch


@pytest.mark.parametrize("base, sliders", [
    ({"settings": {"depth": "3", "width": "5"}, "view": "unit", "tls": False},
     {"mu_t": 0.7, "depth": 2}),
    ({"settings": {"dataset": "star", "n_points": "50"}, "view": "layers", "tls": True},
     {"sigma_log2": 1.0, "batch_log2": 4}),
    ({"settings": {}, "view": "space", "tls": False}, {}),
])
def test_step_0_round_trips(base, sliders):
    step = explorer_step(base)
    settings, _ = step_settings(step, **sliders)
    query, state = _round_trip(0, step, settings, "light", base)
    assert state.step == 0 and state.message == "", query
    again = explorer_step(state.base)
    assert again.settings == settings
    assert again.scene == step.scene and again.tls == step.tls
    assert state.sliders == slider_values(settings)


# --------------------------------------------------------------------------- QR code

def _decode(png: bytes) -> list[str]:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return [r.text for r in zxingcpp.read_barcodes(image)]


def _state_url(key, **sliders) -> str:
    step = step_by_key(key)
    settings, _ = step_settings(step, **sliders)
    return "http://127.0.0.1:8050/lecture?" + lecture_query(step.number, step, settings,
                                                             "dark", None)


@pytest.mark.parametrize("url", [
    "http://localhost:8050/lecture",
    "https://bnviz.example.org/lecture?step=3",
    "http://10.0.0.7:8050/lecture?step=fig9&theme=dark",
    "https://lecture-hall.example.org/bnviz/lecture?" + urlencode(
        {"step": 0, "depth": 6, "width": 12, "dataset": "star", "n_points": 300,
         "mu_t": 0.44, "sigma_s": 1.41421356237, "batch_size": 64, "view": "layers",
         "note": "ä ö ü μ σ " + "x" * 200}),
])
def test_qr_code_decodes_to_the_url(url):
    assert len(url) <= MAX_URL_LENGTH
    assert _decode(qr_png(url)) == [url]


def test_qr_code_of_a_lecture_state():
    url = _state_url("fig2c", sigma_log2=-1.0)
    assert _decode(qr_png(url)) == [url]
    query = url.split("?", 1)[1]
    state = initial_state(parse_qs(query))
    assert state.step == step_by_key("fig2c").number and state.theme == "dark"
    assert state.sliders["sigma"] == -1.0


def test_qr_code_of_the_longest_url():
    url = "https://example.org/lecture?step=1&q=" + "a" * (MAX_URL_LENGTH - 37)
    assert len(url) == MAX_URL_LENGTH
    assert _decode(qr_png(url)) == [url]


def test_qr_data_url():
    url = "http://localhost:8050/lecture?step=2"
    data = qr_data_url(url)
    assert data.startswith("data:image/png;base64,")
    import base64

    assert _decode(base64.b64decode(data.split(",", 1)[1])) == [url]


@pytest.mark.parametrize("url", ["", "h" * (MAX_URL_LENGTH + 1),
                                 "https://example.org/?" + "a" * MAX_URL_LENGTH, None, 42])
def test_qr_refuses_empty_or_long_urls(url):
    with pytest.raises(ValueError):
        qr_png(url)


def test_qr_scene_state_matches_compute_scene():
    """The URL of a computed scene (what the page puts in the QR code) opens that scene."""
    scene = compute_scene("cor2", mu_t=0.5)
    query = lecture_query(scene.step.number, scene.step, scene.settings, "light", None)
    state = initial_state(parse_qs(query))
    assert state.sliders == slider_values(scene.settings)
    assert state.sliders["mu"] == 0.5
