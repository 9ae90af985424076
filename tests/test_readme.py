"""The examples of the README and of docs/*.md, run as written (issues 28 and 43).

Every ``.venv/bin/bnviz`` command of their ``sh`` blocks is parsed by the command line's
parser; every line that can run here runs, in order, in a fresh folder per document (with
``.venv`` and ``docs`` linked to this checkout's and ``BNVIZ_HOME`` of its own), in one bash
session, as a user pastes them: the files and the shell variables an example reads are made
by the lines before it (a slice's network, a job's id).  The few that cannot run here say why
in :data:`NOT_HERE` (data files not on this machine, minutes of work that other tests cover,
a placeholder for a job's id); they are still parsed.
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
BNVIZ = ".venv/bin/bnviz "

#: What in an example line keeps it from running here, and why (it is parsed all the same).
NOT_HERE = {
    "jobs submit smart-init --dataset digits --epochs 5": "a job of minutes (tests/jobs "
                                                          "submit and run jobs)",
    "--dataset cifar10": "CIFAR-10 is not on this machine",
    "jobs submit landscape": "a job of minutes (tests/jobs, tests/papers)",
    "jobs show ID": "ID stands for a job's id", "jobs wait ID": "ID stands for a job's id",
    "jobs cancel ID": "ID stands for a job's id", "jobs rerun ID": "ID stands for a job's id",
    "lecture --export": "renders every slide, minutes the first time "
                        "(tests/lecture/test_slides.py)",
    "--width 1024": "the paper's width: minutes (tests/views cover the density engine)",
    "bnviz claims            #": "every claim, minutes the first time "
                                 "(tests/papers/test_claims.py)",
    "bnviz claims --json": "every claim, minutes the first time (tests/papers/test_claims.py)",
}

#: How a line that runs starts (make, docker, curl and the benches are not examples of the
#: command line: they are not run here).
RUNS = (BNVIZ, "mkdir ", ".venv/bin/python -c", ".venv/bin/python docs/", "ID=$(")


def documents() -> list[Path]:
    """The README and the guides in docs/ (not the generated cli.md and REPLICATION.md)."""
    return [REPO / "README.md"] + sorted(
        p for p in (REPO / "docs").glob("*.md") if p.name not in ("cli.md", "REPLICATION.md"))


def shell_lines(path: Path) -> list[str]:
    """The shell lines of a document's ``sh`` blocks, continuations joined."""
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", path.read_text(), re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            if line.strip():
                lines.append(line.strip())
    return lines


def readme_lines() -> list[str]:
    return shell_lines(REPO / "README.md")


def bnviz_lines() -> list[str]:
    """Every bnviz command of every document, from ``.venv/bin/bnviz`` on (also inside
    ``$(...)``)."""
    return [line[line.index(BNVIZ):] for path in documents() for line in shell_lines(path)
            if BNVIZ in line]


def _argv(line: str) -> list[str]:
    words = shlex.split(line, comments=True)
    cut = next((i for i, w in enumerate(words) if w in (">", "|", "&&", ";")), len(words))
    return words[1:cut]


def runnable(path: Path) -> tuple[list[str], int]:
    """The lines of ``path`` that run here, and how many were left out (NOT_HERE)."""
    lines, skipped = [], 0
    for line in shell_lines(path):
        if not line.startswith(RUNS):
            continue
        if any(key in line for key in NOT_HERE):
            skipped += 1
            continue
        lines.append(line)
    return lines, skipped


def test_the_docs_have_examples():
    assert len(bnviz_lines()) >= 30
    assert len(runnable(REPO / "README.md")[0]) >= 4


@pytest.mark.parametrize("line", bnviz_lines())
def test_every_bnviz_example_parses(line):
    argv = _argv(line)
    args = build_parser(argv[0]).parse_args(argv)
    assert args.command == argv[0]


def run_in_order(lines: list[str], work: Path, env: dict[str, str],
                 timeout: float = 1500) -> list[tuple[str, int, str]]:
    """Run ``lines`` in one bash session in ``work`` (assignments carry over): each line's
    (text, exit code, stderr)."""
    record = work / ".examples"
    record.mkdir()
    script = ["set -o pipefail"]
    for i, line in enumerate(lines):
        script += ["{ " + line, f"}} 2> .examples/{i}.err", f"echo $? > .examples/{i}.rc"]
    subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, timeout=timeout,
                   stdout=subprocess.DEVNULL, check=False)
    out = []
    for i, line in enumerate(lines):
        rc = record / f"{i}.rc"
        code = int(rc.read_text()) if rc.exists() else -1
        out.append((line, code, (record / f"{i}.err").read_text(errors="replace")))
    return out


def _workdir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(REPO / ".venv")
    (work / "docs").symlink_to(REPO / "docs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BNVIZ_")}
    env.update(BNVIZ_HOME=str(tmp_path / "home"), BNVIZ_DEVICE="cpu",
               BNVIZ_WORKER_IDLE_SECONDS="5")
    return work, env


@pytest.mark.parametrize("doc", [p for p in documents() if runnable(p)[0]],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_the_examples_run_as_written(doc, tmp_path):
    """In order, in a fresh folder, as a user pastes them; the output of each is not the
    point here (the command tests check it, and tests/test_docs.py the samples), its exit
    code and a traceback-free stderr are."""
    work, env = _workdir(tmp_path)
    lines, skipped = runnable(doc)
    for line, code, err in run_in_order(lines, work, env):
        assert code == 0, (line, err[-500:])
        assert "Traceback" not in err, (line, err[-500:])
    assert skipped <= 6, skipped
    if doc.name == "README.md":
        assert (work / "out" / "f.svg").read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
    if doc.name == "slices.md":  # every network and file a slice reads was made first
        assert {"net.onnx", "images.npy", "plane.npz", "slice.png"} <= {
            p.name for p in (work / "out").iterdir()}


def test_a_failing_line_is_reported(tmp_path):
    """The runner itself: a line that fails is seen, a variable set by one line is read by
    the next."""
    work, env = _workdir(tmp_path)
    result = run_in_order(["X=$(echo 7)", "test $X = 7", "false | true", "exit_code_3() "
                           "{ return 3; }; exit_code_3"], work, env, timeout=30)
    assert [code for _, code, _ in result] == [0, 0, 1, 3]


def test_the_export_example_counts_what_the_export_writes():
    """issue 31: the README said 30 pictures while the export writes one PNG and one SVG a
    step (bnviz.lecture.slides.slide_files)."""
    from bnviz.lecture.slides import FORMATS
    from bnviz.lecture.tour import TOUR

    line = next(x for x in (REPO / "docs" / "lecture.md").read_text().splitlines()
                if "lecture --export" in x and "pictures" in x)
    assert (f"# {len(TOUR) * len(FORMATS)} pictures ({len(TOUR)} steps, "
            f"{' and '.join(f.upper() for f in FORMATS)})") in line, line


def test_the_lecture_help_names_every_step_as_a_jump():
    from bnviz.lecture.tour import TOUR
    from bnviz.web.layouts.lecture import KEYS, help_panel

    assert (f"1 … {len(TOUR)} (type the number)", "jump to that step") in KEYS
    steps = help_panel().children[1].children.children[1].children.children[0]
    assert steps.className == "lecture-steps" and len(steps.children) == len(TOUR)


def test_the_lecture_help_lists_every_letter_key_the_page_binds():
    """The ? panel is the lecturer's only manual in the hall: a letter key the lecture's scripts
    act on (assets/lecture*.js, hall.js) and the panel does not name is a key nobody finds."""
    import re

    from bnviz.web.layouts.lecture import KEYS

    scripts = sorted((REPO / "assets").glob("lecture*.js")) + [REPO / "assets" / "hall.js"]
    bound = {m for path in scripts
             for m in re.findall(r'\b(?:k|e\.key)\s*[!=]==\s*"([a-z])"', path.read_text())}
    listed = {token for keys, _ in KEYS for token in re.split(r"[ ,]+", keys)}
    assert {"a", "c", "p", "q"} <= bound, bound  # the pattern still finds the scripts' keys
    assert bound <= listed, sorted(bound - listed)
