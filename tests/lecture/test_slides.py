"""Slides (bnviz.lecture.slides): every tour step as a 1280x720 PNG and an SVG with its title
and caption, the captions file, the index, the zip the page's button downloads; light and dark
themes. Rendering every slide takes a few seconds: once per module."""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import re
import zipfile

import numpy as np
import pytest
from PIL import Image

from bnviz.lecture import slides as slides_module
from bnviz.lecture.scenes import compute_scene
from bnviz.lecture.slides import FORMATS, export_slides, render_slide, slide_files, slide_name
from bnviz.lecture.tour import TOUR

KEYS = [s.key for s in TOUR]
SIZE = (1280, 720)


pytestmark = pytest.mark.usefixtures("lecture_home")


@pytest.fixture(scope="module")
def files(lecture_home):
    return slide_files("light")


def _png(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    image.load()
    return image


def _luminance(pixel) -> float:
    r, g, b = pixel[:3]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _corners(image: Image.Image) -> list:
    rgba = image.convert("RGBA")
    w, h = rgba.size
    return [rgba.getpixel(xy) for xy in ((0, 0), (w - 1, 0), (0, h - 1), (w - 1, h - 1))]


def test_figure_9_slide_has_a_colour_bar_a_layer():
    """The slide draws what the page draws: layer 1 and layer 4, each with a colour bar
    naming its quantity and layer."""
    from matplotlib.figure import Figure

    from bnviz.lecture.pictures import draw_scene

    fig = Figure(figsize=(12.8, 5))
    draw_scene(fig, compute_scene("fig9"))
    labels = [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert labels == ["σ²₁,ₖ/‖w₁,ₖ‖²\n(layer 1, eq. 8)", "σ²₄,ₖ/‖w₄,ₖ‖²\n(layer 4, eq. 8)"]
    titles = [ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert titles == ["layer 1: H₁,ₖ", "layer 4: F₄,ₖ"]


# --------------------------------------------------------------------------- one slide

@pytest.mark.parametrize("number, step", list(enumerate(TOUR, 1))[:3], ids=KEYS[:3])
def test_render_slide_png_and_svg(number, step):
    scene = compute_scene(step)
    png = render_slide(scene, number, "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert _png(png).size == SIZE
    svg = render_slide(scene, number, "svg")
    assert re.match(rb"\s*<(\?xml|svg)", svg)
    text = svg.decode("utf-8")
    assert "<svg" in text and text.rstrip().endswith("</svg>")
    assert html.escape(step.title, quote=False) in text
    assert f"{number}. " in text


@pytest.mark.parametrize("theme, dark", [("light", False), ("dark", True)])
def test_theme_background(theme, dark):
    image = _png(render_slide(compute_scene("cor2"), 2, "png", theme))
    assert image.size == SIZE
    for pixel in _corners(image):
        if len(pixel) == 4:
            assert pixel[3] == 255  # opaque: the theme's background, not the viewer's
        if dark:
            assert _luminance(pixel) < 60, pixel
        else:
            assert pixel[:3] == (255, 255, 255), pixel


def test_dark_svg_has_a_dark_background():
    light = render_slide(compute_scene("fig7"), 11, "svg", "light").decode()
    dark = render_slide(compute_scene("fig7"), 11, "svg", "dark").decode()
    assert light != dark

    def background(svg: str) -> str:
        """The figure's background patch's fill (SVG's default fill is black)."""
        patch = re.search(r'<g id="patch_1">\s*<path[^>]*>', svg)
        assert patch, svg[:500]
        fill = re.search(r"fill:\s*(#[0-9a-fA-F]{6})", patch.group(0))
        return fill.group(1).lower() if fill else "#000000"

    assert background(light) == "#ffffff"
    assert _luminance(tuple(int(background(dark)[i:i + 2], 16) for i in (1, 3, 5))) < 60


@pytest.mark.parametrize("fmt", ["gif", "pdf", "", "PNG", None])
def test_unknown_format_is_refused(fmt):
    with pytest.raises(ValueError):
        render_slide(compute_scene("fig1"), 1, fmt)


def test_unknown_theme_is_refused():
    with pytest.raises(ValueError):
        render_slide(compute_scene("fig1"), 1, "png", "purple")


def test_slide_name():
    assert slide_name(1, "fig1") == "01-fig1"
    assert slide_name(15, "ergen") == "15-ergen"


# --------------------------------------------------------------------------- every slide

def test_slide_files_names(files):
    expected = [f"{slide_name(n, s.key)}.{fmt}" for n, s in enumerate(TOUR, 1)
                for fmt in FORMATS]
    assert list(files) == expected + ["captions.md", "slides.json"]
    assert len(files) == 2 * len(TOUR) + 2
    assert set(FORMATS) == {"png", "svg"}


@pytest.mark.parametrize("number, step", list(enumerate(TOUR, 1)), ids=KEYS)
def test_every_slide(files, number, step):
    name = slide_name(number, step.key)
    image = _png(files[f"{name}.png"])
    assert image.size == SIZE
    assert all(p[:3] == (255, 255, 255) for p in _corners(image))
    # a picture, not a blank page: many colours
    assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or ()) > 20
    svg = files[f"{name}.svg"].decode("utf-8")
    assert re.match(r"\s*<(\?xml|svg)", svg)
    assert html.escape(step.title, quote=False) in svg


def test_index_matches_the_tour(files):
    index = json.loads(files["slides.json"])
    assert index["theme"] == "light"
    slides = index["slides"]
    assert [s["step"] for s in slides] == list(range(1, len(TOUR) + 1))
    assert [s["key"] for s in slides] == KEYS
    assert [s["title"] for s in slides] == [s.title for s in TOUR]
    assert [s["paper"] for s in slides] == [s.paper for s in TOUR]
    assert [s["caption"] for s in slides] == [s.caption for s in TOUR]
    for s in slides:
        assert all(f in files for f in s["files"])
        assert sorted(f.rsplit(".", 1)[1] for f in s["files"]) == ["png", "svg"]


def test_captions_file_has_every_caption(files):
    text = files["captions.md"].decode("utf-8")
    assert text.startswith("# ")
    headings = re.findall(r"^## (\d+)\. (.+)$", text, flags=re.MULTILINE)
    assert headings == [(str(n), s.title) for n, s in enumerate(TOUR, 1)]
    for step in TOUR:
        assert step.caption in text
        assert f"*{step.paper}*" in text
    # in the tour's order
    positions = [text.index(step.caption) for step in TOUR]
    assert positions == sorted(positions)


def test_slides_zip(files, monkeypatch):
    """The zip holds slide_files under bnviz-lecture/ (fed the module's files, so that no
    slide is drawn twice), and passes its progress on."""
    calls = []

    def fake(theme="light", progress=lambda fraction: None):
        calls.append(theme)
        progress(0.5)
        return files

    monkeypatch.setattr(slides_module, "slide_files", fake)
    heard = []
    data = slides_module.slides_zip("light", heard.append)
    assert calls == ["light"] and heard == [0.5]
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        assert names == [f"bnviz-lecture/{name}" for name in files]
        for name, content in files.items():
            assert zf.read(f"bnviz-lecture/{name}") == content


def test_export_slides_writes_the_files(files, tmp_path, monkeypatch):
    monkeypatch.setattr(slides_module, "slide_files", lambda theme="light", progress=None: files)
    target = tmp_path / "new" / "deck"
    written = export_slides(target, "light")
    assert [p.name for p in written] == list(files)
    assert all(p.parent == target for p in written)
    for path in written:
        assert path.read_bytes() == files[path.name]


def test_the_slides_job_keeps_the_zip_as_its_result(files, monkeypatch):
    """The page's zip is a job (issue 42): it reports each step, and its result is the zip's
    bytes; the CLI's files and the job's zip come from the one slide_files."""
    from bnviz.records.types import DistInfo, RecordingContext

    def fake(theme="light", progress=lambda fraction: None):
        for k in range(1, len(TOUR) + 1):
            progress(k / len(TOUR))
        return files

    monkeypatch.setattr(slides_module, "slide_files", fake)
    ctx = RecordingContext()
    params = slides_module.check_slides_params({"theme": "dark"})
    summary = slides_module.run_slides_job(params, ctx, DistInfo())
    data = ctx.result["zip"].tobytes()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:  # (not the bytes: a zip holds its time)
        assert {name: zf.read(name) for name in zf.namelist()} == {
            f"bnviz-lecture/{name}": content for name, content in files.items()}
    assert summary == {"steps": len(TOUR), "kB": len(data) // 1024}
    assert ctx.fractions[:len(TOUR)] == [k / len(TOUR) for k in range(1, len(TOUR) + 1)]
    assert ctx.fractions[-1] == 1.0


@pytest.mark.parametrize("raw, says", [
    ({"theme": "purple"}, "theme must be light or dark"),
    ({"theme": "light", "pages": 3}, "unknown parameter"),
    ({"theme": "light", "edition": "0" * 12}, "another edition"),
    (["light"], "must be a mapping"),
])
def test_the_slides_jobs_parameters_are_checked(raw, says):
    from bnviz.records.types import ParamError

    with pytest.raises(ParamError, match=says) as caught:
        slides_module.check_slides_params(raw)
    assert "\n" not in str(caught.value)


def test_the_slides_edition_follows_the_tour(monkeypatch):
    """A new caption makes a new edition: a job of the old one is not reused."""
    import dataclasses

    before = slides_module.slides_edition()
    assert before == slides_module.slides_edition()
    changed = (dataclasses.replace(TOUR[0], caption=TOUR[0].caption + " More."), *TOUR[1:])
    monkeypatch.setattr(slides_module, "TOUR", changed)
    assert slides_module.slides_edition() != before


def test_the_pages_export_all_button_runs_the_slides_job(files, inline_jobs, monkeypatch):
    """The lecture page's "export all" starts the slides' job (a theme a crafted request
    sends is taken as light) and, once it succeeded, answers the zip as a download at once;
    no click, no job."""
    from dash import no_update

    from bnviz import jobs
    from bnviz.web.callbacks.lecture import export

    themes = []

    def fake(theme="light", progress=None):
        themes.append(theme)
        return files

    monkeypatch.setattr(slides_module, "slide_files", fake)
    assert export.export_slides(None, "light") == (no_update,) * 5
    assert export.export_slides(0, "light") == (no_update,) * 5
    download, status, job_id, poll_off, button_off = export.export_slides(1, "purple")
    if job_id is not None:  # still running: the page polls, the button is disabled
        assert (download, poll_off, button_off) == (no_update, False, True)
        assert jobs.wait_job(job_id, timeout=120).status == "succeeded"
        download, status, job_id, poll_off, button_off = export.export_slides(1, "purple")
    assert themes == ["light"]
    assert (job_id, poll_off, button_off) == (None, True, False)
    assert download["filename"] == "bnviz-lecture-slides.zip"
    data = base64.b64decode(download["content"]) if download.get("base64") else \
        download["content"]
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert len(zf.namelist()) == 2 * len(TOUR) + 2
    assert f"{len(TOUR)} steps" in status


def test_figure_1_slide_draws_the_command_lines_columns():
    """Figure 1's slide and `bnviz partition`'s picture are one column renderer
    (render.draw_layer_panel, issue 32): panel (row, layer) of the slide holds the same
    facets, in the same colours, as that layer's column of the CLI picture of the row's
    partition."""
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from bnviz.lecture.pictures import draw_scene
    from bnviz.views.render import partition_picture

    scene = compute_scene("fig1")
    fig = Figure(figsize=(12.8, 5))
    draw_scene(fig, scene)
    n = len(scene.data[0][1].partition.layers)
    assert len(fig.axes) == len(scene.data) * n

    def lines(ax):
        return [(to_hex(c.get_edgecolor()[0]), np.round(np.reshape(c.get_segments(), (-1, 2)), 9),
                 c.get_linewidth()[0]) for c in ax.collections if isinstance(c, LineCollection)]

    for r, (_, result) in enumerate(scene.data):
        cli = partition_picture(result.partition, result.data.points).axes
        for c in range(n):
            slide, picture = lines(fig.axes[r * n + c]), lines(cli[c])[:c + 1]
            assert len(slide) == c + 1
            widths = set()
            for (colour, seg, width), (want_colour, want_seg, want_width) in zip(
                    slide, picture, strict=True):
                assert colour == want_colour
                np.testing.assert_array_equal(seg, want_seg)
                widths.add(round(width / want_width, 9))
            assert len(widths) == 1  # one scale: the slide's lines are the CLI's, enlarged


def test_figure_7_slide_has_even_columns():
    """Figure 7's panels are spread evenly over the slide (the exported slide had a gap
    between its first two columns, from an axes' legend wider than its column)."""
    fig = slides_module._slide(compute_scene("fig7"), 13)
    fig.savefig(io.BytesIO(), format="png", dpi=100)  # the layout engine places the panels
    top = sorted((ax.get_position() for ax in fig.axes), key=lambda b: (-b.y0, b.x0))[:3]
    gaps = [b.x0 - a.x1 for a, b in itertools.pairwise(top)]
    widths = [b.width for b in top]
    assert max(gaps) - min(gaps) < 0.02, gaps
    assert max(widths) - min(widths) < 0.02, widths
