"""Captions that are true (issue 46, item 4): every tour step's caption and presenter notes
name only colours and layers that the step's figure draws, as the page draws it (the lecture
callback's own :func:`drawn`, light and dark, split on and off where the step allows it) and
as the slides draw it; a darkness word agrees with the colour scale against the theme's
background; an arrow's colour word is an arrow's colour. The words are mapped to hue and
lightness ranges once for all steps, and the figure's colours are read from its traces,
shapes and annotations: nothing here knows what a step should say. Besides: captions of at
most 35 words, split panels that say when they are one picture, a step that opens where its
caption says, and a blank density panel that says why."""

from __future__ import annotations

import re
from dataclasses import replace

import matplotlib.style
import numpy as np
import pytest
from explorer_helpers import decode, segments_of
from figure_colours import (
    colour_words,
    luminance,
    page_arrows,
    page_colours,
    rgba,
    scale_ends,
    slide_colours,
)
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

from bnviz.lecture.notes import NOTES
from bnviz.lecture.pictures import draw_scene
from bnviz.lecture.scenes import compute_scene
from bnviz.lecture.tour import TOUR, step_by_key
from bnviz.web.callbacks.lecture.callbacks import drawn
from bnviz.web.callbacks.lecture.state import splittable, step_for

THEMES = ("light", "dark")
MAX_WORDS = 35
#: Every way the page shows a step: (step number, split).
SHOWN = [(n, split) for n, step in enumerate(TOUR, 1)
         for split in ((False, True) if splittable(step) else (False,))]
SPLITTABLE = [s.key for s in TOUR if splittable(s)]

COLOUR_WORD = re.compile(r"\b(red|vermill?ion|orange|yellow|green|blue|purple|gr[ae]y|black|"
                         r"white)\b", re.I)
ARROW = re.compile(r"\b(red|vermill?ion|orange|yellow|green|blue|purple|gr[ae]y|black|"
                   r"white) arrow", re.I)
DARKNESS = re.compile(r"\b(darker|brighter|lighter)\b", re.I)
STANDS_OUT = re.compile(r"\bstands? out\b[^.;]*\bbackground\b", re.I)
LAYER = re.compile(r"\blayers?[- ](\d+)(?:\s+and\s+(\d+))?", re.I)


pytestmark = pytest.mark.usefixtures("lecture_home")


def _word(word: str) -> str:
    word = word.lower()
    return {"grey": "gray", "vermilion": "vermillion"}.get(word, word)


def test_colour_words_of_the_palette():
    """The ranges name the palette as the style module does (bnviz.views.style)."""
    from bnviz.views.style import BLUE, DARK_GRAY, GRAY, GREEN, ORANGE, SKY_BLUE, VERMILLION
    from bnviz.web.callbacks.projector import DARK_THEME_BLUE, DARK_THEME_VERMILLION

    def words(c):
        return colour_words(to_rgba(c)[:3])

    assert words(VERMILLION) == words(DARK_THEME_VERMILLION) == {"vermillion"}
    assert words(ORANGE) == {"orange"} and words(GREEN) == {"green"}
    assert words(BLUE) == words(SKY_BLUE) == words(DARK_THEME_BLUE) == {"blue"}
    assert words(GRAY) == words(DARK_GRAY) == {"gray"}
    assert words("#ff0000") == {"red"} and words("black") == {"black"}


# --------------------------------------------------------------------------- colours drawn


# --------------------------------------------------------------------------- the checks

def wrong_colour_words(text: str, colours, arrows) -> list[str]:
    """The colour words of ``text`` that no drawn colour answers to, and the "<colour>
    arrow"s whose colour is no arrow's."""
    drawn_words = set().union(*(colour_words(c[:3]) for c in colours)) if colours else set()
    arrow_words = set().union(*(colour_words(rgba(c)[:3] if isinstance(c, str) else c[:3])
                                for c in arrows)) if arrows else set()
    wrong = [w for w in COLOUR_WORD.findall(text) if _word(w) not in drawn_words]
    wrong += [f"{w} arrow" for w in ARROW.findall(text) if _word(w) not in arrow_words]
    return wrong


def wrong_darkness_words(text: str, scales: list[tuple], background) -> list[str]:
    """The darkness words of ``text`` that the colour scales (low, high) contradict: "darker"
    (or "brighter") where more is not darker (brighter) than less, "stands out from the
    background" where the largest values are not further from the background's luminance
    than the smallest; and any such word in a figure without a colour scale."""
    wrong = []
    bg = luminance(background)
    for word in DARKNESS.findall(text):
        darker = word.lower() == "darker"
        if not scales or any(bool(luminance(hi) < luminance(lo)) is not darker
                             for lo, hi in scales):
            wrong.append(word)
    if STANDS_OUT.search(text) and (not scales or any(
            abs(luminance(hi) - bg) <= abs(luminance(lo) - bg) for lo, hi in scales)):
        wrong.append("stands out from the background")
    return wrong


def named_layers(text: str) -> set[int]:
    return {int(n) for m in LAYER.findall(text) for n in m if n}


def drawn_layers(texts: list[str]) -> set[int]:
    """The layers a figure names (traces, panel titles, its title); "earlier layers" are
    every layer below the highest one named."""
    layers = {int(n) for t in texts for n in re.findall(r"\blayer (\d+)", t)}
    if any("earlier layers" in t for t in texts) and layers:
        layers |= set(range(1, max(layers)))
    return layers


def _texts(step) -> dict[str, str]:
    notes = NOTES[step.key]
    return {"caption": step.caption, "notes": f"{notes.say} {notes.point}"}


@pytest.fixture(scope="module")
def page(lecture_home):
    """Each way the page shows a step, in both themes: (figure, title) as the lecture's
    callback draws it."""
    out = {}
    for number, split in SHOWN:
        scene = compute_scene(step_for(number, None, split))
        for theme in THEMES:
            out[number, split, theme] = drawn(scene, number, theme, "")
    return out


def _page_scales(fig: dict) -> list[tuple]:
    return [scale_ends(t) for t in fig["data"]
            if t.get("type") in ("heatmap", "contour") and t.get("colorscale")
            and t.get("name") != "regions"]


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("number, split", SHOWN,
                         ids=[f"{TOUR[n - 1].key}{'-split' if s else ''}" for n, s in SHOWN])
def test_the_words_name_what_the_page_draws(page, number, split, theme):
    """Colour words, arrows, darkness words and layers of the caption and the notes, against
    the figure the page shows."""
    fig, title = page[number, split, theme]
    step = TOUR[number - 1]
    colours, arrows = page_colours(fig), page_arrows(fig)
    background = rgba(fig["layout"]["plot_bgcolor"])
    texts = [title, *(t.get("name") or "" for t in fig["data"]),
             *(a.get("text") or "" for a in fig["layout"].get("annotations", []))]
    for what, text in _texts(step).items():
        assert wrong_colour_words(text, colours, arrows) == [], (what, text)
        assert wrong_darkness_words(text, _page_scales(fig), background) == [], (what, text)
        assert named_layers(text) <= drawn_layers(texts), (what, text, drawn_layers(texts))


@pytest.fixture(scope="module")
def slides(lecture_home):
    """Each step's picture as its slide draws it, in both themes."""
    out = {}
    for step in TOUR:
        scene = compute_scene(step)
        for theme in THEMES:
            with matplotlib.style.context("dark_background" if theme == "dark" else "default"):
                fig = Figure(figsize=(12.8, 5.7))
                draw_scene(fig, scene)
                out[step.key, theme] = (fig, slide_colours(fig))
    return out


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("key", [s.key for s in TOUR])
def test_the_words_name_what_the_slide_draws(slides, key, theme):
    fig, (colours, arrows) = slides[key, theme]
    scales = [(im.cmap(0.0), im.cmap(1.0)) for ax in fig.axes for im in ax.get_images()
              if isinstance(im, AxesImage) and im.get_array().ndim == 2
              and not hasattr(im.cmap, "colors")]  # region fills are a listed palette
    background = to_rgba(fig.axes[0].get_facecolor())
    for what, text in _texts(step_by_key(key)).items():
        assert wrong_colour_words(text, colours, arrows) == [], (what, text)
        assert wrong_darkness_words(text, scales, background) == [], (what, text)


def test_the_checks_catch_a_caption_the_picture_contradicts(page):
    """The checks can fail: step 10's caption before issue 46 in the dark theme ("Darker
    means more facets", where more facets are brighter), and step 14's "red arrow"."""
    fig3, dannemann = step_by_key("fig3").number, step_by_key("dannemann").number
    dark = page[fig3, False, "dark"][0]
    background = rgba(dark["layout"]["plot_bgcolor"])
    before = "Darker means more facets pass near a point."
    assert wrong_darkness_words(before, _page_scales(dark), background) == ["Darker"]
    light = page[fig3, False, "light"][0]
    assert wrong_darkness_words(before, _page_scales(light), background) == []
    assert wrong_darkness_words("it stands out from the background", [], background)
    fig = page[dannemann, False, "light"][0]
    assert "red arrow" in wrong_colour_words("a gradient (red arrow)", page_colours(fig),
                                             page_arrows(fig))
    fig7 = page[step_by_key("fig7").number, False, "light"][0]
    assert wrong_colour_words("the analytical law (green)", page_colours(fig7), []) == ["green"]


# --------------------------------------------------------------------------- length

@pytest.mark.parametrize("step", TOUR, ids=[s.key for s in TOUR])
def test_a_caption_has_at_most_35_words(step):
    assert len(step.caption.split()) <= MAX_WORDS, (len(step.caption.split()), step.caption)


# --------------------------------------------------------------------------- the split

def _panel_segments(fig: dict, axis: str) -> dict[str, np.ndarray]:
    """The split panel's line traces (facets) by name, as sorted, rounded segments."""
    out = {}
    for t in fig["data"]:
        if t.get("mode") == "lines" and t.get("xaxis", "x") == axis:
            s = np.round(segments_of(t), 6)
            swap = (s[:, 0] > s[:, 2]) | ((s[:, 0] == s[:, 2]) & (s[:, 1] > s[:, 3]))
            s[swap] = s[swap][:, [2, 3, 0, 1]]
            out[t.get("name") or ""] = s[np.lexsort(s.T[::-1])]
    return out


def _one_picture(fig: dict) -> bool:
    left, right = _panel_segments(fig, "x"), _panel_segments(fig, "x2")
    return set(left) == set(right) and all(
        left[k].shape == right[k].shape and np.allclose(left[k], right[k], atol=1e-5)
        for k in left)


@pytest.mark.parametrize("mu_t", [None, 0.0, 0.5])
@pytest.mark.parametrize("key", SPLITTABLE)
def test_split_panels_say_what_they_show(key, mu_t):
    """Each panel's title names its network as drawn: at μ = 0 on every layer the
    random-bias network has no bias left (its layers' shifts are all 0) and says "zero
    bias"; where the two panels draw the same facets, both titles say so, on the page and
    on the slide."""
    step = step_by_key(key)
    scene = compute_scene(step_for(step.number, None, True), mu_t=mu_t)
    fig, _ = drawn(scene, step.number, "light", "")
    titles = [a["text"] for a in fig["layout"]["annotations"]
              if str(a.get("xref", "")).endswith("domain")]
    (_, without), _ = scene.data
    unbiased = all(np.all(layer.stats.mu == 0) for layer in without.partition.layers)
    assert ("zero bias" in titles[0]) is unbiased, titles
    same = _one_picture(fig)
    assert [("the same as" in t) for t in titles] == [same, same], titles
    picture = Figure(figsize=(12.8, 5.7))
    draw_scene(picture, scene)
    slide_titles = [ax.get_title() for ax in picture.axes]
    assert [("the same as" in t) for t in slide_titles] == [same, same], slide_titles
    if key == "cor2" and mu_t == 0.0:  # the step's opening state: one picture, said so
        assert same and unbiased


# --------------------------------------------------------------------------- opening state

@pytest.mark.parametrize("step", [s for s in TOUR if s.animate == "mu"], ids=lambda s: s.key)
def test_a_caption_names_the_mu_its_step_opens_at(step):
    """A caption's "At μ = x" is the μ the step opens at (the μ slider's own position)."""
    for value in re.findall(r"\bAt μ = ([\d.]+)", step.caption):
        assert float(value) == step.settings.mu_t, (value, step.caption)


def test_corollary_2_opens_where_its_caption_puts_the_lines():
    """The first sentence of step 2 says where the layer-1 lines meet as the step opens:
    there they meet, in 2·D₁ regions."""
    step = step_by_key("cor2")
    result = compute_scene(step).data
    w = np.asarray(result.network.weights[0], dtype=np.float64)
    mu = np.asarray(result.partition.layers[0].stats.mu, dtype=np.float64)
    point, *_ = np.linalg.lstsq(w, mu, rcond=None)
    assert np.abs(w @ point - mu).max() < 1e-9  # they do meet at one point
    first = re.split(r"[.;] ", step.caption)[0]
    places = {"origin": np.zeros(2), "centroid": result.data.points.mean(axis=0)}
    said = [name for name in places if name in first]
    assert said, first
    for name in said:
        np.testing.assert_allclose(point, places[name], atol=1e-9, err_msg=first)
    assert len(result.partition.layers[0].regions) == 2 * step.settings.width


# --------------------------------------------------------------------------- empty panels

def _heatmap_panels(fig: dict):
    for t in fig["data"]:
        if t.get("type") == "heatmap":
            yield t.get("xaxis", "x"), decode(t["z"])


@pytest.mark.parametrize("theme", THEMES)
def test_an_empty_density_panel_says_why(page, slides, theme):
    """A Figure 3 panel (the plane of Figure 3 or of the digits) that counts no facet carries
    words inside it, on the page and on the slide; at least one of the two steps has one (the
    digits' random-bias CNN, layer 24), so this is not vacuous."""
    empty = 0
    for key in ("fig3", "slice"):
        fig, _ = page[step_by_key(key).number, False, theme]
        inside = {a["xref"].split()[0]: a["text"] for a in fig["layout"]["annotations"]
                  if str(a.get("xref", "")).endswith("domain")}
        for axis, z in _heatmap_panels(fig):
            if z.max() == 0:
                empty += 1
                assert inside.get(axis), (key, axis)
        picture, _ = slides[key, theme]
        for ax in picture.axes:
            images = ax.get_images()
            if images and np.max(images[0].get_array()) == 0:
                assert [t.get_text() for t in ax.texts if t.get_text()], (key, ax.get_title())
    assert empty > 0


def test_a_split_label_follows_the_sliders():
    """The BN panel names μ and σ off BN's own; without BN the biases' factor."""
    from bnviz.lecture.panels import split_label

    s = replace(step_by_key("fig2b").settings, mu_t=0.3)
    assert split_label("bn", s) == "with BN, μ of F(2,1) = 0.3·μ_BN"
    assert split_label("random_bias", s) == "without BN (random bias of F(2,1) × 0.3)"
    assert split_label("random_bias", replace(s, scope="all", mu_t=0.0)) == \
        "without BN (random bias × 0 = zero bias)"
    assert split_label("bn", replace(s, mu_t=1.0)) == "with BN"
    layer = step_by_key("fig2c").settings
    assert split_label("bn", layer) == "with BN, σ of layer 1 = 2·σ_BN"
