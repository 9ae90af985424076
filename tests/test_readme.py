"""The README's examples, run as written (issue 28).

Every ``.venv/bin/bnviz`` line of the README's ``sh`` blocks is parsed by the command line's
parser; every one that can run here runs, in order, in a fresh folder (with ``.venv`` linked
to this checkout's and ``BNVIZ_HOME`` of its own), with bash, as a user pastes it: the files
an example reads are made by the lines before it.  The few that cannot run here say why in
:data:`NOT_HERE` (a network or a job of the user's, data files not on this machine, minutes
of work that other tests cover); they are still parsed.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from bnviz.cli import build_parser

REPO = Path(__file__).resolve().parents[1]

#: What in an example line keeps it from running here, and why (it is parsed all the same).
NOT_HERE = {
    "bnviz slice ": "needs a network of the user's (an ONNX file, a job's id, a safetensors "
                    "file); tests/slices run every option on built networks",
    "jobs submit": "starts a background job (tests/jobs submit and run jobs)",
    "jobs show ID": "a job's id", "jobs wait ID": "a job's id",
    "jobs cancel ID": "a job's id", "jobs rerun ID": "a job's id",
    "lecture --export": "renders every slide, about a minute (tests/lecture/test_slides.py)",
    "--width 1024": "the paper's width: minutes (tests/views cover the density engine)",
    "bnviz claims            #": "every claim, about two minutes (tests/papers/test_claims.py)",
    "bnviz claims --json": "every claim, about two minutes (tests/papers/test_claims.py)",
}


def readme_lines() -> list[str]:
    """The shell lines of the README's ``sh`` blocks, continuations joined."""
    text = (REPO / "README.md").read_text()
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            if line.strip():
                lines.append(line.strip())
    return lines


def bnviz_lines() -> list[str]:
    return [line for line in readme_lines() if line.startswith(".venv/bin/bnviz ")]


def _argv(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    cut = next((i for i, w in enumerate(words) if w in (">", "|", "&&", ";")), len(words))
    return words[1:cut]


def test_the_readme_has_examples():
    assert len(bnviz_lines()) >= 30


@pytest.mark.parametrize("line", bnviz_lines())
def test_every_bnviz_example_parses(line):
    argv = _argv(line)
    args = build_parser(argv[0]).parse_args(argv)
    assert args.command == argv[0]


def test_the_examples_run_as_written(tmp_path):
    """In order, in a fresh folder, as a user pastes them; the output of each is not the
    point here (the command tests check it), its exit code and a traceback-free stderr are."""
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(REPO / ".venv")
    env = {**os.environ, "BNVIZ_HOME": str(tmp_path / "home"), "BNVIZ_DEVICE": "cpu"}
    ran, skipped = 0, 0
    for line in readme_lines():
        if not (line.startswith((".venv/bin/bnviz ", "mkdir ", ".venv/bin/python -c"))):
            continue  # make, docker, curl and the benches: not examples of the command line
        if any(key in line for key in NOT_HERE):
            skipped += 1
            continue
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=work, env=env,
                              capture_output=True, timeout=300)
        assert proc.returncode == 0, (line, proc.stderr.decode()[-500:])
        assert b"Traceback" not in proc.stderr, line
        ran += 1
    assert ran >= 20 and skipped <= 16, (ran, skipped)
    assert (work / "out" / "f.svg").read_bytes().lstrip().startswith((b"<?xml", b"<svg"))


def test_the_export_example_counts_what_the_export_writes():
    """issue 31: the README said 30 pictures while the export writes one PNG and one SVG a
    step (bnviz.lecture.slides.slide_files)."""
    from bnviz.lecture.slides import FORMATS
    from bnviz.lecture.tour import TOUR

    line = next(x for x in (REPO / "README.md").read_text().splitlines()
                if "lecture --export" in x and "pictures" in x)
    assert (f"# {len(TOUR) * len(FORMATS)} pictures ({len(TOUR)} steps, "
            f"{' and '.join(f.upper() for f in FORMATS)})") in line, line


def test_the_lecture_help_names_every_step_as_a_jump():
    from bnviz.lecture.tour import TOUR
    from layouts.lecture import KEYS, help_panel

    assert (f"1 … {len(TOUR)} (type the number)", "jump to that step") in KEYS
    steps = help_panel().children[1].children.children[1].children.children[0]
    assert steps.className == "lecture-steps" and len(steps.children) == len(TOUR)
