"""``bnviz lecture``: the guided tour's steps as text and JSON, ``--export DIR`` (every step
as PNG and SVG slides, the captions and an index), and its one-line errors."""

from __future__ import annotations

import io
import json
import re

import pytest
from fuzzing import assert_one_error_line
from PIL import Image

from bnviz.cli import main
from bnviz.lecture.tour import TOUR

SLIDER_NAMES = {"mu", "sigma", "batch", "depth"}


pytestmark = pytest.mark.usefixtures("lecture_home")


def _run(capsysbinary, argv):
    capsysbinary.readouterr()
    rc = main(argv)
    captured = capsysbinary.readouterr()
    return rc, captured.out.decode("utf-8"), captured.err.decode("utf-8")


def _expected_files():
    names = [f"{n:02d}-{s.key}.{fmt}" for n, s in enumerate(TOUR, 1) for fmt in ("png", "svg")]
    return names + ["captions.md", "slides.json"]


def test_lists_the_numbered_steps(capsysbinary):
    rc, out, err = _run(capsysbinary, ["lecture"])
    assert rc == 0 and err == ""
    numbered = re.findall(r"^ ?(\d+)\. (.+) \((.+)\)$", out, flags=re.MULTILINE)
    assert len(numbered) == len(TOUR) == 17  # issue 16's 15, issue 19's training, issue 27's slice
    assert [int(n) for n, _, _ in numbered] == list(range(1, len(TOUR) + 1))
    assert [(t, p) for _, t, p in numbered] == [(s.title, s.paper) for s in TOUR]
    for step in TOUR:
        assert f"    {step.caption}\n" in out
    assert len(out.splitlines()) == 2 * len(TOUR)


def test_json_lists_the_steps(capsysbinary):
    rc, out, err = _run(capsysbinary, ["lecture", "--json"])
    assert rc == 0 and err == ""
    doc = json.loads(out)
    assert list(doc) == ["steps"]
    steps = doc["steps"]
    assert len(steps) == len(TOUR)
    for i, (row, step) in enumerate(zip(steps, TOUR, strict=True), 1):
        assert set(row) == {"step", "key", "title", "paper", "caption", "sliders"}
        assert row == {"step": i, "key": step.key, "title": step.title, "paper": step.paper,
                       "caption": step.caption, "sliders": sorted(step.live)}
        assert set(row["sliders"]) <= SLIDER_NAMES
    assert [r["key"] for r in steps][-4:] == ["dannemann", "santurkar", "luo", "ergen"]


def test_out_writes_the_listing(capsysbinary, tmp_path):
    target = tmp_path / "steps.json"
    rc, out, err = _run(capsysbinary, ["lecture", "--json", "--out", str(target)])
    assert rc == 0 and out == "" and err == ""
    assert len(json.loads(target.read_text("utf-8"))["steps"]) == len(TOUR)


def test_export_json(capsysbinary, tmp_path):
    target = tmp_path / "slides" / "deck"  # made with its parents
    rc, out, err = _run(capsysbinary, ["lecture", "--export", str(target), "--json"])
    # without a terminal: nothing but a progress line every 10 s (bnviz.cli.progress)
    assert rc == 0 and all(line.startswith("bnviz slides: ") for line in err.splitlines())
    report = json.loads(out)
    assert report["directory"] == str(target) and report["theme"] == "light"
    assert report["files"] == _expected_files()
    assert isinstance(report["seconds"], int | float) and report["seconds"] >= 0
    assert sorted(p.name for p in target.iterdir()) == sorted(report["files"])
    first = Image.open(target / "01-fig1.png")
    assert first.format == "PNG" and first.size == (1280, 720)
    assert (target / "02-cor2.svg").read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
    index = json.loads((target / "slides.json").read_text("utf-8"))
    assert index["theme"] == "light"
    assert [s["caption"] for s in index["slides"]] == [s.caption for s in TOUR]
    captions = (target / "captions.md").read_text("utf-8")
    assert all(s.caption in captions for s in TOUR)


def test_export_text_dark_into_an_existing_folder(capsysbinary, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    rc, out, err = _run(capsysbinary, ["lecture", "--export", str(tmp_path), "--theme",
                                       "dark"])
    assert rc == 0 and all(line.startswith("bnviz slides: ") for line in err.splitlines())
    n = 2 * len(TOUR) + 2
    assert re.fullmatch(rf"wrote {n} files \({len(TOUR)} slides as PNG and SVG, captions\.md, "
                        rf"slides\.json\) to {re.escape(str(tmp_path))} in \d+\.\d s\n", out), out
    assert (tmp_path / "keep.txt").read_text() == "mine"
    assert json.loads((tmp_path / "slides.json").read_text("utf-8"))["theme"] == "dark"
    image = Image.open(io.BytesIO((tmp_path / "01-fig1.png").read_bytes())).convert("RGB")
    assert max(image.getpixel((0, 0))) < 60  # the dark theme's background


def test_export_to_a_file_is_one_error_line(capsysbinary, tmp_path):
    target = tmp_path / "a-file.txt"
    target.write_text("not a folder")
    rc, out, err = _run(capsysbinary, ["lecture", "--export", str(target)])
    assert_one_error_line(rc, out, err)
    assert "--export" in err and str(target) in err
    assert target.read_text() == "not a folder"


def test_export_below_a_file_is_one_error_line(capsysbinary, tmp_path):
    target = tmp_path / "a-file.txt"
    target.write_text("x")
    rc, out, err = _run(capsysbinary, ["lecture", "--export", str(target / "deck")])
    assert_one_error_line(rc, out, err)
    assert "--export" in err


@pytest.mark.parametrize("argv", [
    ["lecture", "--theme", "purple"],
    ["lecture", "--theme"],
    ["lecture", "--export"],
    ["lecture", "--bogus"],
    ["lecture", "extra"],
])
def test_bad_options_are_one_error_line(capsysbinary, argv):
    rc, out, err = _run(capsysbinary, argv)
    assert_one_error_line(rc, out, err)
    if "purple" in argv:
        assert "purple" in err and "--theme" in err
