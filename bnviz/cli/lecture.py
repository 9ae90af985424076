"""``bnviz lecture``: the lecture view's guided tour from the command line: its steps
(titles, papers, captions), and ``--export DIR``: every step as a slide, PNG and SVG, with
the captions (``captions.md``) and an index (``slides.json``), as the page's "slides" button
downloads them."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bnviz.cli.commands import summary
from bnviz.cli.options import CLIError
from bnviz.cli.progress import add_quiet

__all__ = ["add_lecture", "run_lecture"]


def _folder(text: str) -> Path:
    """argparse type: a folder's path; an empty one is refused (Path("") is the current
    folder, where 32 files would land unasked)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("name a folder for the slides, got an empty path")
    return Path(text)


def add_lecture(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("lecture", help=summary("lecture"))
    add_quiet(c)
    c.add_argument("--export", type=_folder, metavar="DIR",
                   help="write every step's slide (PNG 1280x720 and SVG) and the captions")
    c.add_argument("--theme", choices=("light", "dark"), default="light")
    c.add_argument("--json", action="store_true", help="JSON output (default: text)")
    c.add_argument("--out", type=Path)


def run_lecture(args: argparse.Namespace) -> bytes:
    """Without --export: the steps; with it: the files written and the seconds taken."""
    from bnviz.lecture.tour import TOUR

    if args.export is None:
        steps = [{"step": i, "key": s.key, "title": s.title, "paper": s.paper,
                  "caption": s.caption, "sliders": sorted(s.live)}
                 for i, s in enumerate(TOUR, 1)]
        if args.json:
            return (json.dumps({"steps": steps}, ensure_ascii=False) + "\n").encode()
        return "".join(f"{s['step']:2d}. {s['title']} ({s['paper']})\n    {s['caption']}\n"
                       for s in steps).encode()
    if args.export.exists() and not args.export.is_dir():
        raise CLIError(f"--export: {args.export} is a file, not a folder")
    from bnviz.cli.progress import progress_bar
    from bnviz.lecture.slides import export_slides

    t0 = time.perf_counter()
    try:
        with progress_bar(args, "slides") as report:
            written = export_slides(args.export, args.theme, report)
    except OSError as exc:
        raise CLIError(f"--export: cannot write to {args.export}: "
                       f"{exc.strerror or exc}") from None
    seconds = time.perf_counter() - t0
    if args.json:
        return (json.dumps({"directory": str(args.export), "theme": args.theme,
                            "files": [p.name for p in written],
                            "seconds": round(seconds, 2)}) + "\n").encode()
    return (f"wrote {len(written)} files ({len(TOUR)} slides as PNG and SVG, captions.md, "
            f"slides.json) to {args.export} in {seconds:.1f} s\n").encode()
