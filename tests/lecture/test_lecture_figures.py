"""The lecture view's figures (callbacks/lecture/figures.py) set for a projector: type of at
least 18 px everywhere, the legend beside the plot, the light and dark themes' colours, valid
plotly JSON; and the page's callbacks (callbacks/lecture/callbacks.py) called as dash calls
them: the step chosen sets the sliders to its own settings and grays the ones that do not
act; a crafted value keeps the picture, marked stale, with a message."""

from __future__ import annotations

import json
from contextvars import copy_context
from urllib.parse import parse_qs

import numpy as np
import plotly.io as pio
import plotly.utils
import pytest
from dash import no_update
from dash._callback_context import context_value
from dash._utils import AttributeDict

from bnviz.lecture.qr import MAX_URL_LENGTH
from bnviz.lecture.scenes import BATCH_ALL, compute_scene
from bnviz.lecture.tour import SLIDERS, TOUR, step_by_key
from bnviz.web.callbacks.lecture import callbacks as cl
from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.figures import FONT_PX, THEME_COLOURS, projected, scene_figure
from bnviz.web.callbacks.lecture.state import initial_state, slider_values

KEYS = [s.key for s in TOUR]
BLACK = {"#000000", "#000", "black", "rgb(0,0,0)", "rgba(0,0,0,1)"}
THEMES = ("light", "dark")


pytestmark = pytest.mark.usefixtures("lecture_home")


@pytest.fixture(scope="module")
def figures(lecture_home):
    """Every step's figure, before and after projected(), in both themes."""
    out = {}
    for step in TOUR:
        raw = scene_figure(compute_scene(step))
        out[step.key] = {"raw": raw, **{theme: projected(raw, theme) for theme in THEMES}}
    return out


def _walk(obj, path=""):
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            yield from _walk(value, f"{path}[{i}]")
    else:
        yield path, obj


def _is_black(colour) -> bool:
    return isinstance(colour, str) and colour.replace(" ", "").lower() in BLACK


def _trace_colours(trace):
    """Every colour of a trace's markers and lines (single colours and per-point lists)."""
    for part in ("marker", "line"):
        holder = trace.get(part)
        if not isinstance(holder, dict):
            continue
        for colour in (holder.get("color"), (holder.get("line") or {}).get("color")):
            if isinstance(colour, list | tuple):
                yield from colour
            else:
                yield colour


# --------------------------------------------------------------------------- projected()

@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("key", KEYS)
def test_type_is_projector_size(figures, key, theme):
    fig = figures[key][theme]
    lay = fig["layout"]
    assert lay["font"]["size"] >= FONT_PX >= 18
    for a in lay.get("annotations", []):
        assert a["font"]["size"] >= 18, a.get("text")
    axes = [k for k in lay if k.startswith(("xaxis", "yaxis"))]
    assert axes, key  # every scene has axes
    for k in axes:
        assert lay[k]["tickfont"]["size"] >= 18, k
        title = lay[k].get("title")
        if isinstance(title, dict) and title.get("font"):
            assert title["font"]["size"] >= 18, k
    if isinstance(lay.get("title"), dict) and lay["title"].get("font"):
        assert lay["title"]["font"]["size"] >= 18
    assert lay["legend"]["font"]["size"] >= 18
    # any font anywhere (traces' colour bars, text fonts, ...) that names a size
    small = [(path, v) for path, v in _walk(fig)
             if "font" in path and path.endswith(".size") and isinstance(v, int | float)
             and v < 18]
    assert not small, small


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("key", KEYS)
def test_legend_and_colour_bars_are_outside_the_plot(figures, key, theme):
    """The legend in the right margin; a colour bar there too, or, where each panel has a
    scale of its own (Figure 9's two layers), in the gap right of its panel: never over a
    panel."""
    lay = figures[key][theme]["layout"]
    assert lay["legend"]["x"] >= 1 and lay["legend"].get("xanchor") == "left"
    domains = []
    for k, axis in lay.items():
        if k.startswith("xaxis") and "domain" in axis:
            assert max(axis["domain"]) <= 1, k
            domains.append(axis["domain"])
    for trace in figures[key][theme]["data"]:
        for holder in (trace, trace.get("marker")):
            if isinstance(holder, dict) and isinstance(holder.get("colorbar"), dict):
                x = holder["colorbar"]["x"]
                assert holder["colorbar"].get("xanchor") == "left"
                assert x >= 1 or not any(lo <= x <= hi for lo, hi in domains), (key, x)


@pytest.mark.parametrize("theme", THEMES)
def test_figure_9_has_a_colour_bar_a_layer_beside_its_panel(figures, theme):
    """Two panels (layer 1, layer 4), each with its own colour bar right of it, titled with
    the quantity and the layer; projected() would stack them in the margin."""
    fig = figures["fig9"][theme]
    bars = [t for t in fig["data"] if (t.get("marker") or {}).get("showscale")]
    assert [b["marker"]["colorbar"]["title"]["text"] for b in bars] == [
        "σ²₁,ₖ/‖w₁,ₖ‖²<br>(layer 1, eq. 8)", "σ²₄,ₖ/‖w₄,ₖ‖²<br>(layer 4, eq. 8)"]
    lay = fig["layout"]
    for bar, key in zip(bars, ("xaxis", "xaxis2"), strict=True):
        assert bar["marker"]["colorbar"]["x"] == pytest.approx(lay[key]["domain"][1] + 0.01)
    assert bars[0]["marker"]["cmax"] != bars[1]["marker"]["cmax"]
    assert all("hovertemplate" in t for t in fig["data"] if t.get("name", "").endswith(
        "facets"))


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("key", KEYS)
def test_theme_colours(figures, key, theme):
    lay = figures[key][theme]["layout"]
    colours = THEME_COLOURS[theme]
    assert lay["paper_bgcolor"] == colours["paper"]
    assert lay["plot_bgcolor"] == colours["plot"]
    assert lay["font"]["color"] == colours["text"]
    for a in lay.get("annotations", []):
        assert a["font"]["color"] == colours["text"]


@pytest.mark.parametrize("key", KEYS)
def test_dark_theme_has_no_black_marks(figures, key):
    dark = figures[key]["dark"]
    assert THEME_COLOURS["dark"]["paper"] != "#ffffff"
    # an animation's frames (the training step) are drawn as its first picture
    for trace in [*dark["data"], *(t for f in dark.get("frames", []) for t in f["data"])]:
        blacks = [c for c in _trace_colours(trace) if _is_black(c)]
        assert not blacks, (trace.get("name"), blacks)
    for shape in dark["layout"].get("shapes", []):
        assert not _is_black((shape.get("line") or {}).get("color"))


def test_the_training_step_animates_its_recorded_frames(figures):
    """One plotly frame a recorded frame, each with the first picture's traces (plotly.js
    animates trace by trace) and its step under the legend; the light theme keeps the data's
    black outlines that the dark theme swapped."""
    from bnviz.lecture.scenes import TRAINING_RUN

    for theme in THEMES:
        fig = figures["train"][theme]
        frames = fig["frames"]
        assert len(frames) == TRAINING_RUN["frames"]
        steps = [f["layout"]["annotations"][-1]["text"] for f in frames]
        assert steps[0] == "step 0 of 300" and steps[-1] == "step 300 of 300"
        for frame in frames:
            assert [(t["name"], t["type"], t["xaxis"]) for t in frame["data"]] == [
                (t["name"], t["type"], t["xaxis"]) for t in fig["data"]]
    light = [c for f in figures["train"]["light"]["frames"] for t in f["data"]
             for c in _trace_colours(t)]
    assert any(_is_black(c) for c in light)


def test_dark_theme_swaps_the_black_marks_that_light_keeps(figures):
    """The light theme keeps the pages' black (the test-time boundary, the mini-batch's
    points...): the dark theme's check above is not vacuous."""
    light_blacks = [key for key in KEYS for t in figures[key]["light"]["data"]
                    if any(_is_black(c) for c in _trace_colours(t))]
    assert light_blacks
    raw_blacks = [key for key in KEYS for t in figures[key]["raw"]["data"]
                  if any(_is_black(c) for c in _trace_colours(t))]
    assert set(raw_blacks) == set(light_blacks)


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("key", KEYS)
def test_figure_is_valid_plotly_json(figures, key, theme):
    fig = figures[key][theme]
    text = pio.to_json(fig, validate=True)  # validate: a plotly Figure accepts every key
    again = json.loads(text)
    assert len(again["data"]) == len(fig["data"]) > 0
    json.loads(json.dumps(fig, cls=plotly.utils.PlotlyJSONEncoder))


def test_projected_does_not_change_its_input(figures):
    raw = scene_figure(compute_scene("batch"))
    before = pio.to_json(raw, validate=False)
    projected(raw, "dark")
    assert pio.to_json(raw, validate=False) == before


def test_unknown_theme_is_light(figures):
    fig = projected(figures["cor2"]["raw"], "purple")
    assert fig["layout"]["paper_bgcolor"] == THEME_COLOURS["light"]["paper"]


def test_split_has_two_panels_with_region_counts(figures):
    fig = figures["split"]["light"]
    lay = fig["layout"]
    assert "xaxis2" in lay and "yaxis2" in lay
    texts = [a["text"] for a in lay["annotations"]]
    assert len(texts) == 2 and all("regions" in t for t in texts)
    scene = compute_scene("split")
    for text, (_, result) in zip(texts, scene.data, strict=True):
        layer = scene.settings.layer
        assert f"{len(result.partition.layers[layer - 1].regions)} regions" in text
    assert {t.get("xaxis", "x") for t in fig["data"]} == {"x", "x2"}


def test_cor2_title_names_2_d1_regions(figures):
    title = figures["cor2"]["light"]["layout"]["title"]["text"]
    assert f"{2 * step_by_key('cor2').settings.width} regions" in title


# --------------------------------------------------------------------------- show()

def _in_callback(fn, prop_id, *args):
    def inner():
        context_value.set(AttributeDict(triggered_inputs=[{"prop_id": prop_id,
                                                           "value": None}]))
        return fn(*args)
    return copy_context().run(inner)


def _json(fig) -> str:
    return json.dumps(fig, cls=plotly.utils.PlotlyJSONEncoder, sort_keys=True)


NO_SLIDERS = {name: None for name in SLIDERS}
(FIGURE, TITLE, COUNTER, CAPTION, MESSAGE, QUERY, PLOT, ANIMATION, PLAY_OFF, SPLIT_OFF,
 TIMER_OFF, INFO, READOUT, MAIN, VALUES, DISABLED, DRAWN) = range(17)


def _show_step(number, theme="light", base=None, trigger=ids.STEP):
    return _in_callback(cl.show, f"{trigger}.data", number, None, NO_SLIDERS, theme, False,
                        base)


def _show_sliders(number, sliders, which="mu", theme="light", base=None):
    return _in_callback(cl.show, f"{ids.SLIDERS[which]}.value", number, None, sliders, theme,
                        False, base)


@pytest.mark.parametrize("step", TOUR, ids=KEYS)
def test_choosing_a_step_sets_its_sliders(step):
    out = _show_step(step.number)
    assert len(out) == 17 and out[DRAWN] is None  # the prefetch's mark, emptied
    # two panels side by side, or the layers view's rows: the dock goes under the figure
    assert (out[MAIN] == "lecture-main lecture-wide") == (
        step.scene in ("layers", "split", "training", "unit", "ergen", "luo")
        or bool(step.tls)), out[MAIN]
    if step.scene == "space":  # the readout: the shown layer's regions, as the engine cut
        from bnviz.lecture.scenes import compute_scene

        part = compute_scene(step).data.partition
        regions = len(part.layers[step.settings.layer - 1].regions)
        assert f"layer {step.settings.layer}: {regions} regions" in out[READOUT]
        assert "data to nearest boundary" in out[READOUT] and "μ = " in out[READOUT]
    assert not out[FIGURE]["layout"]["title"]["text"]  # the title went to the readout
    assert out[INFO] == ""  # a new picture clears what a click found on the old one
    assert out[SPLIT_OFF] == (step.scene != "space" or step.tls)
    assert out[PLOT] == "lecture-plot"
    assert out[TITLE] == step.title and out[CAPTION] == step.caption
    assert out[COUNTER] == f"{step.number} / {len(TOUR)}"
    assert out[VALUES] == slider_values(step.settings)
    assert out[DISABLED] == {name: name not in step.live for name in SLIDERS}
    assert out[TIMER_OFF] is True  # a new step stops the animation
    assert (out[ANIMATION] is None) == (step.animate is None) == out[PLAY_OFF]
    if step.animate == "frames":  # plotly.js plays the figure's own recorded frames
        assert out[ANIMATION]["frames"] is True
        from bnviz.lecture.scenes import TRAINING_RUN

        assert len(out[FIGURE]["frames"]) == TRAINING_RUN["frames"]
    elif step.animate:
        assert out[ANIMATION]["slider"] == ids.SLIDERS[step.animate]
    assert ("gray sliders" in out[MESSAGE]) == (set(step.live) != set(SLIDERS))
    assert out[QUERY] == f"step={step.number}"
    assert initial_state(parse_qs(out[QUERY])).step == step.number
    fig = out[FIGURE]
    assert fig["layout"]["font"]["size"] >= 18
    assert fig["layout"]["paper_bgcolor"] == THEME_COLOURS["light"]["paper"]


def test_reset_sets_the_sliders_too():
    step = step_by_key("fig2c")
    out = _in_callback(cl.show, f"{ids.RESET}.data", step.number, 3,
                       {"mu": 0.2, "sigma": 1.5, "batch": 4, "depth": 7}, "dark", False,
                       None)
    assert out[VALUES] == slider_values(step.settings)
    assert out[FIGURE]["layout"]["paper_bgcolor"] == THEME_COLOURS["dark"]["paper"]
    assert parse_qs(out[QUERY]) == {"step": [str(step.number)], "theme": ["dark"]}


def test_moving_a_slider_draws_it_and_keeps_the_sliders():
    step = step_by_key("cor2")
    sliders = {"mu": 0.5, "sigma": 0.0, "batch": BATCH_ALL, "depth": 4}
    out = _show_sliders(step.number, sliders, "mu", theme="dark")
    assert out[PLOT] == "lecture-plot"
    assert out[MESSAGE] == "gray sliders do not act on this step"  # depth, on layer 1
    assert all(v is no_update for v in out[VALUES].values())
    assert out[TIMER_OFF] is no_update  # the play button's own moves keep it playing
    state = initial_state(parse_qs(out[QUERY]))
    assert state.step == step.number and state.theme == "dark"
    assert state.sliders == sliders
    own = _show_step(step.number)
    assert _json(out[FIGURE]) != _json(own[FIGURE])


def test_moving_a_gray_slider_changes_nothing():
    step = step_by_key("fig7")
    own = _show_step(step.number)
    sliders = {**slider_values(step.settings), "mu": 0.3, "depth": 2}
    out = _show_sliders(step.number, sliders, "mu")
    assert out[QUERY] == own[QUERY] == f"step={step.number}"
    assert _json(out[FIGURE]) == _json(own[FIGURE])


def test_a_batch_larger_than_the_data_is_said():
    step = step_by_key("batch")
    sliders = {**slider_values(step.settings), "batch": 7}
    out = _show_sliders(step.number, sliders, "batch")
    assert out[PLOT] == "lecture-plot"
    assert "128" in out[MESSAGE] and str(step.settings.n_points) in out[MESSAGE]


@pytest.mark.parametrize("number, sliders, which", [
    (step_by_key("batch").number, {"mu": 1.0, "sigma": 0.0, "batch": 3.5, "depth": 4},
     "batch"),
    (step_by_key("batch").number, {"mu": 1.0, "sigma": 0.0, "batch": "x", "depth": 4},
     "batch"),
    (5, {"mu": 1.0, "sigma": "x", "batch": 9, "depth": 2}, "sigma"),
    (5, {"mu": 1.0, "sigma": 1e6, "batch": 9, "depth": 2}, "sigma"),
    (2, {"mu": "abc", "sigma": 0.0, "batch": 9, "depth": 4}, "mu"),
    (2, {"mu": 99, "sigma": 0.0, "batch": 9, "depth": 4}, "mu"),
    (1, {"mu": 0.5, "sigma": 0.0, "batch": 9, "depth": -3}, "depth"),
])
def test_a_crafted_value_keeps_the_picture_stale(number, sliders, which):
    out = _show_sliders(number, sliders, which)
    assert out[PLOT] == cl.STALE
    assert isinstance(out[MESSAGE], str) and out[MESSAGE].strip()
    assert "\n" not in out[MESSAGE] and "Traceback" not in out[MESSAGE]
    assert out[FIGURE] is no_update and out[QUERY] is no_update
    assert all(v is no_update for v in out[VALUES].values())
    assert all(v is no_update for v in out[DISABLED].values())


@pytest.mark.parametrize("number", [99, -1, "3", None, True, 2.5])
def test_a_crafted_step_keeps_the_picture_stale(number):
    out = _show_step(number)
    assert out[PLOT] == cl.STALE and out[FIGURE] is no_update
    assert isinstance(out[MESSAGE], str) and out[MESSAGE].strip()


def test_step_0_shows_the_explorer_state():
    base = {"settings": {"depth": "3", "width": "5"}, "view": "unit", "tls": False}
    out = _show_step(0, base=base)
    assert out[PLOT] == "lecture-plot" and out[COUNTER] == "explorer"
    assert out[VALUES]["depth"] == 3
    assert out[DISABLED] == {name: False for name in SLIDERS}
    state = initial_state(parse_qs(out[QUERY]))
    assert state.step == 0 and state.base["view"] == "unit"


def test_unknown_theme_draws_light():
    out = _show_step(3, theme="purple")
    assert out[FIGURE]["layout"]["paper_bgcolor"] == THEME_COLOURS["light"]["paper"]
    assert "theme" not in parse_qs(out[QUERY])


# --------------------------------------------------------------------------- show_qr()

def test_qr_callback():
    import base64
    import io

    import zxingcpp
    from PIL import Image

    assert cl.show_qr(False, "http://x/lecture?step=2") == (no_update, no_update)
    assert cl.show_qr(True, None)[1] == "no link yet"
    assert cl.show_qr(True, "javascript:alert(1)")[1] == "no link yet"
    src, text = cl.show_qr(True, "http://x/" + "a" * MAX_URL_LENGTH)
    assert src is no_update and "600" in text
    url = "http://192.168.1.20:8050/lecture?step=2&mu_t=0.5"
    src, text = cl.show_qr(True, url)
    assert text == url
    # the laptop's own address: the code is made, with a warning that students cannot use it
    local = "http://127.0.0.1:8050/lecture?step=2"
    local_src, local_text = cl.show_qr(True, local)
    assert local_src.startswith("data:image/png") and local_text[0] == local
    assert "cannot open it" in local_text[1].children
    png = base64.b64decode(src.split(",", 1)[1])
    assert [r.text for r in zxingcpp.read_barcodes(Image.open(io.BytesIO(png)))] == [url]


@pytest.mark.parametrize("split,panel", [(False, None), (True, "x"), (True, "x2")])
def test_a_click_marks_its_point_and_nearest_folded_hyperplane(split, panel):
    """issue 31: the click's point and the nearest folded hyperplane F_{j,k} are marked on
    the plot, on the panel clicked, and the split's panel is named; the marked facets are
    F_{j,k}'s own, at the distance the dock prints."""

    step = step_by_key("fig2b")
    sliders = slider_values(step.settings)
    click = {"points": [{"x": 0.4, "y": -0.7}], **({"panel": panel} if panel else {})}
    info, mark = cl.inspect(click, step.number, sliders, None, split)
    text = str(info)
    scene = compute_scene(cl.step_for(step.number, None, split), sliders["mu"],
                          sliders["sigma"], sliders["batch"], sliders["depth"])
    right = panel == "x2"
    result = scene.data if not split else scene.data[int(right)][1]
    if split:
        assert f"{'right' if right else 'left'} panel: " in text
    assert (mark["xaxis"], mark["yaxis"]) == (("x2", "y2") if right else ("x", "y"))
    assert mark["point"] == [0.4, -0.7]
    j, k = (int(v) for v in mark["name"][1:].split(" ")[0].split(","))
    assert f"nearest folded hyperplane: layer {j}, unit {k}" in text
    lp = result.partition.layers[j - 1]
    want = lp.facets[lp.facet_units == k - 1]
    xs, ys = np.array(mark["x"], dtype=float), np.array(mark["y"], dtype=float)
    got = np.column_stack([xs[0::3], ys[0::3], xs[1::3], ys[1::3]])
    assert np.allclose(got, want, atol=1e-5) and np.isnan(xs[2::3]).all()
    # the nearest facet of all: no other unit's folded hyperplane (layers 1..l) is closer
    a, b = want[:, :2], want[:, 2:]
    p = np.array([0.4, -0.7])
    t = np.clip(((p - a) * (b - a)).sum(1) / ((b - a) ** 2).sum(1), 0, 1)
    nearest = np.linalg.norm(p - (a + t[:, None] * (b - a)), axis=1).min()
    for other in result.partition.layers[:step.settings.layer]:
        a2, b2 = other.facets[:, :2], other.facets[:, 2:]
        t2 = np.clip(((p - a2) * (b2 - a2)).sum(1) / np.maximum(((b2 - a2) ** 2).sum(1),
                                                               1e-300), 0, 1)
        assert np.linalg.norm(p - (a2 + t2[:, None] * (b2 - a2)), axis=1).min() >= \
            nearest - 1e-9


def test_numbers_in_the_dock_read_as_a_hall_reads_them():
    assert cl._number(5.0e-16) == "0" and cl._number(-3e-12) == "0"
    assert cl._number(0.251234) == "0.251" and cl._number(1234.5) == "1.23e+03"
    assert cl._minus(-0.251) == " + 0.251" and cl._minus(0.251) == " − 0.251"
    assert cl._minus(-1e-17) == " − 0"


def _luminance(colour: str) -> float:
    """WCAG 2 relative luminance of a #rrggbb colour."""
    h = colour.lstrip("#")
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.parametrize("step", TOUR, ids=lambda s: s.key)
def test_the_dark_theme_keeps_lines_markers_and_text_at_4_5_to_1(figures, step):
    """issue 31: the dark theme is designed, not inverted: every line and marker colour
    (#rrggbb) of every trace, and the text, stand at >= 4.5:1 on the plot's background.
    Exempt: the ghost (faint on purpose), and colours from a colour scale."""
    fig = figures[step.key]["dark"]
    background = fig["layout"]["plot_bgcolor"]
    assert _contrast(fig["layout"]["font"]["color"], background) >= 4.5
    low = []
    for trace in fig["data"]:
        if trace.get("meta") == "ghost" or trace.get("type") in ("heatmap", "contour"):
            continue
        marker = trace.get("marker") or {}
        edge = marker.get("line") or {}
        for part in ("line", "marker"):
            # a marker shows by its fill or, hollow (filled with the background), its outline
            colours = [(trace.get(part) or {}).get("color")] + (
                [edge.get("color")] if part == "marker" and edge.get("width", 1) else [])
            colours = [c for c in colours if isinstance(c, str) and len(c) == 7
                       and c.startswith("#")]
            if colours and max(_contrast(c, background) for c in colours) < 4.5:
                low.append((trace.get("name"), part, colours))
    assert low == [], low
