"""Slides: every tour step as a 1280x720 PNG and an SVG, with its title and caption, for a
lecturer's own deck (issue 16). The page's "slides" button downloads them as one zip
(:func:`slides_zip`); ``bnviz lecture --export DIR`` writes the same files
(:func:`export_slides`).

Each slide is the step's scene at its own settings (as the tour opens it), drawn by
:func:`bnviz.lecture.pictures.draw_scene`, the step's title above and its caption below.
"""

from __future__ import annotations

import io
import json
import textwrap
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path

import matplotlib.style
from matplotlib.figure import Figure

from bnviz.lecture.pictures import draw_scene
from bnviz.lecture.scenes import Scene, compute_scene
from bnviz.lecture.tour import TOUR
from bnviz.service.cache import memoize

__all__ = ["FORMATS", "THEMES", "export_slides", "render_slide", "slide_files", "slides_zip"]

FORMATS = ("png", "svg")
THEMES = ("light", "dark")
#: matplotlib's rcParams are global: one slide is drawn at a time (a theme is an rc context).
_DRAWING = threading.Lock()


def slide_name(number: int, key: str) -> str:
    return f"{number:02d}-{key}"


def _slide(scene: Scene, number: int) -> Figure:
    fig = Figure(figsize=(12.8, 7.2), dpi=100, layout="constrained")
    picture, caption = fig.subfigures(2, 1, height_ratios=[5.7, 1.0])
    fig.suptitle(f"{number}. {scene.step.title}", x=0.01, ha="left", fontsize=20,
                 fontweight="bold")
    draw_scene(picture, scene)
    caption.text(0.01, 0.95, textwrap.fill(scene.step.caption, 118), va="top", ha="left",
                 fontsize=14, transform=caption.transSubfigure)
    return fig


def render_slide(scene: Scene, number: int, fmt: str = "png", theme: str = "light") -> bytes:
    """One slide as PNG (1280x720) or SVG bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be png or svg, got {fmt!r}")
    if theme not in THEMES:
        raise ValueError(f"theme must be light or dark, got {theme!r}")
    style = "dark_background" if theme == "dark" else "default"
    with _DRAWING, matplotlib.style.context(style):
        fig = _slide(scene, number)
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=100)
    return buf.getvalue()


def slide_files(theme: str = "light",
                progress: Callable[[float], None] = lambda fraction: None) -> dict[str, bytes]:
    """Every step's slide as PNG and SVG, a captions file (Markdown) and an index (JSON):
    file name -> bytes; ``progress`` hears the fraction of the steps done."""
    files: dict[str, bytes] = {}
    index = []
    lines = ["# bnviz lecture: the tour's captions", ""]
    for number, step in enumerate(TOUR, 1):
        scene = compute_scene(step)
        name = slide_name(number, step.key)
        for fmt in FORMATS:
            files[f"{name}.{fmt}"] = render_slide(scene, number, fmt, theme)
        index.append({"step": number, "key": step.key, "title": step.title,
                      "paper": step.paper, "caption": step.caption,
                      "files": [f"{name}.{fmt}" for fmt in FORMATS]})
        lines += [f"## {number}. {step.title}", "", f"*{step.paper}*", "", step.caption, ""]
        progress(number / len(TOUR))
    files["captions.md"] = "\n".join(lines).encode()
    files["slides.json"] = (json.dumps({"theme": theme, "slides": index}, indent=1,
                                       ensure_ascii=False) + "\n").encode()
    return files


def export_slides(directory: Path, theme: str = "light",
                  progress: Callable[[float], None] = lambda fraction: None) -> list[Path]:
    """Write :func:`slide_files` into ``directory`` (made if missing); the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in slide_files(theme, progress).items():
        path = directory / name
        path.write_bytes(data)
        written.append(path)
    return written


@memoize()
def slides_zip(theme: str = "light") -> bytes:
    """:func:`slide_files` as one zip (a folder ``bnviz-lecture/``), made once per theme in a
    process."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in slide_files(theme).items():
            zf.writestr(f"bnviz-lecture/{name}", data)
    return buf.getvalue()
