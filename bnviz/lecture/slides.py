"""Slides: every tour step as a 1280x720 PNG and an SVG, with its title and caption, for a
lecturer's own deck (issue 16). ``bnviz lecture --export DIR`` writes them
(:func:`export_slides`); the page's "export all" button downloads them as one zip
(:func:`slides_zip`), both from :func:`slide_files`: one route.

Each slide is the step's scene at its own settings (as the tour opens it), drawn by
:func:`bnviz.lecture.pictures.draw_scene`, the step's title above and its caption below.

The page's zip is a job (:data:`SLIDES_JOB`, ``lecture-slides``; issue 42): drawing every
slide takes 20 s to 80 s of CPU (:data:`bnviz.params.cost.SLIDE_SECONDS`), which in a
request held a web thread past the proxy's timeout (three at once: three 504s after 70 s),
once per web process. As a job it runs on the job worker with its progress in the page, once
per theme and edition of the slides: every caller of every web process, also after a
restart, reuses the job and reads its result file (:func:`load_slides_zip`).
"""

from __future__ import annotations

import hashlib
import io
import json
import textwrap
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.style
import numpy as np
from matplotlib.figure import Figure

from bnviz import __version__
from bnviz.lecture.pictures import draw_scene
from bnviz.lecture.scenes import Scene, compute_scene
from bnviz.lecture.tour import TOUR
from bnviz.messages import brief
from bnviz.records.results import load_result
from bnviz.records.types import DistInfo, JobContext, JobType, ParamError

__all__ = ["FORMATS", "SLIDES_JOB", "SLIDES_JOB_TYPE", "THEMES", "export_slides",
           "load_slides_zip", "render_slide", "slide_files", "slides_edition", "slides_zip"]

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


def slides_zip(theme: str = "light",
               progress: Callable[[float], None] = lambda fraction: None) -> bytes:
    """:func:`slide_files` as one zip (a folder ``bnviz-lecture/``)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in slide_files(theme, progress).items():
            zf.writestr(f"bnviz-lecture/{name}", data)
    return buf.getvalue()


# ---- the page's zip as a job (module docstring) ------------------------------------------

SLIDES_JOB_TYPE = "lecture-slides"


def slides_edition() -> str:
    """What the slides are drawn from: bnviz's version and the tour (its steps' settings,
    titles and captions). A job of another edition is not reused: a new tour or caption is
    exported again, not served from an older result file."""
    steps = "".join(f"{s.key}|{s.title}|{s.paper}|{s.caption}|{s.scene}|{s.settings!r}|"
                    f"{s.tls}\n" for s in TOUR)  # (not repr(TOUR): its sets' order varies)
    return hashlib.sha256(f"{__version__}\n{steps}".encode()).hexdigest()[:12]


def check_slides_params(raw: object) -> dict[str, Any]:
    """The job's parameters: the theme (light or dark) and the edition (this code's, by
    default); ParamError, one line, for anything else."""
    if not isinstance(raw, dict):
        raise ParamError(f"{SLIDES_JOB_TYPE}: the parameters must be a mapping, got "
                         f"{brief(raw)}")
    unknown = sorted(str(k) for k in raw if k not in ("theme", "edition"))
    if unknown:
        raise ParamError(f"{SLIDES_JOB_TYPE}: unknown parameter {brief(unknown[0])} (known: "
                         "edition, theme)")
    theme = raw.get("theme", "light")
    if theme not in THEMES:
        raise ParamError(f"{SLIDES_JOB_TYPE}: theme must be light or dark, got {brief(theme)}")
    edition = raw.get("edition", slides_edition())
    if edition != slides_edition():
        raise ParamError(f"{SLIDES_JOB_TYPE}: these slides are of another edition of bnviz "
                         f"({brief(edition)}): export them again")
    return {"theme": theme, "edition": edition}


def run_slides_job(params: dict[str, Any], ctx: JobContext, dist: DistInfo) -> dict[str, Any]:
    """Draw the zip, reporting each step done; its bytes are the job's result."""
    data = slides_zip(params["theme"], ctx.progress)
    ctx.save_result(lambda path: np.savez(path, zip=np.frombuffer(data, dtype=np.uint8)))
    ctx.progress(1.0)
    return {"steps": len(TOUR), "kB": len(data) // 1024}


def load_slides_zip(job_id: str) -> bytes:
    """The zip a succeeded slides job left (OSError when its result file is gone)."""
    return load_result(job_id)["zip"].tobytes()


SLIDES_JOB = JobType(SLIDES_JOB_TYPE, check_slides_params, run_slides_job, result=True)
