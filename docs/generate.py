"""The generated parts of bnviz's documentation, made by running bnviz itself.

* ``docs/cli.md``: every command's ``--help``, exactly as ``bnviz ... --help`` prints it at
  100 columns (the parser is :func:`bnviz.cli.build_parser`; the commands and their examples
  are :data:`bnviz.cli.commands.COMMANDS` and ``JOB_COMMANDS``).
* The sample outputs in ``README.md`` and ``docs/*.md``: every block between
  ``<!-- sample:NAME -->`` and ``<!-- /sample -->`` is a transcript of :data:`SAMPLES`\\[NAME],
  run in a fresh folder (``.venv`` and ``docs`` linked from this checkout, a ``BNVIZ_HOME``
  of its own, ``BNVIZ_DEVICE=cpu``).  What a command prints is shown as printed, except:
  numbers printed with five or more decimals are shown to four significant digits, lines
  over :data:`WIDTH` columns are wrapped at a space, a sample may keep only its first lines
  (the rest counted on a ``…`` line), and each sample's masks replace what changes from run
  to run (seconds, rounding errors) with ``…``.

Usage, from the repository root::

    .venv/bin/python docs/generate.py            # rewrite docs/cli.md and every sample
    .venv/bin/python docs/generate.py --check    # rewrite nothing; exit 1 naming what differs
    .venv/bin/python docs/generate.py train cli  # only these (sample names, or "cli")

``tests/test_docs.py`` runs the same functions in a temporary folder and fails when a file
differs from what the commands print now.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI_MD = REPO / "docs" / "cli.md"
#: Help is formatted at this width (argparse reads COLUMNS), samples wrapped at WIDTH.
COLUMNS = 100
WIDTH = 92
MARKER = re.compile(r"(<!-- sample:([\w-]+) -->\n)(.*?)(<!-- /sample -->)", re.S)

#: Masks for what changes between runs of the same command.
SECONDS = (r'"seconds": [0-9.e-]+', '"seconds": …')
TIME_IN = (r"in [0-9.]+ s\b", "in … s")
ROUNDING = (r"\b\d\.\de-1[0-9]\b", "…")
#: A number printed with five or more decimals is shown to four significant digits.
LONG_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d{5,}(?:e[-+]?\d+)?")


@dataclass(frozen=True)
class Step:
    """One command of a sample, shown after ``$ `` as a user types it in the repository root."""

    command: str
    lines: int | None = None  # keep the first lines of the (wrapped) output
    stderr: bool = False  # show what it prints on stderr (an error) instead of stdout
    code: int = 0  # its exit code
    mask: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Sample:
    steps: tuple[Step, ...]
    note: str = field(default="", compare=False)  # why this sample (for the reader of this file)


def _steps(*steps: Step | str) -> tuple[Step, ...]:
    return tuple(Step(s) if isinstance(s, str) else s for s in steps)


#: Every sample the documentation shows: a few seconds each, on the machine of the README.
SAMPLES: dict[str, Sample] = {
    "partition": Sample(_steps(Step(
        ".venv/bin/bnviz partition --depth 4 --width 6 --mode bn --dataset star --n-points 50 "
        "--extent 3", lines=6)), "the summary's first lines: Omega_{1|L}'s regions, layer 1"),
    "partition-small": Sample(_steps(Step(
        ".venv/bin/bnviz partition --depth 2 --width 3 --mode bn --dataset star --n-points 50 "
        "--extent 3 --head 2", mask=(SECONDS,))), "a whole summary, two layers of three"),
    "train": Sample(_steps(Step(".venv/bin/bnviz train --steps 100 --frames 5",
                                mask=(TIME_IN,)))),
    "claims": Sample(_steps(Step(".venv/bin/bnviz claims --id bn-cor2-central-arrangement",
                                 mask=(ROUNDING,)))),
    "replicate": Sample(_steps(Step(".venv/bin/bnviz replicate", lines=9))),
    "replicate-count": Sample(_steps(Step(".venv/bin/bnviz replicate", lines=1))),
    "slice": Sample(_steps(
        "mkdir -p out",
        ".venv/bin/python docs/examples/onnx_net.py out/net.onnx",
        Step(".venv/bin/bnviz slice --model out/net.onnx --data digits --extent 2 --json",
             lines=6, mask=(SECONDS,)))),
    "job-hours": Sample(_steps(Step(
        ".venv/bin/bnviz jobs submit smart-init --width 64 --epochs 1000 --runs 8",
        stderr=True, code=2))),
    "job-memory": Sample(_steps(Step(
        ".venv/bin/bnviz jobs submit smart-init --arch resnet50 --width 512", stderr=True,
        code=2, mask=((r"cap of [0-9.]+ GB", "cap of … GB"),))),
        "the cap is half this machine's memory"),
}


# ---- docs/cli.md ---------------------------------------------------------------------------

def _parsers() -> Iterator[argparse.ArgumentParser]:
    """The top-level parser, then every command's and sub-command's, in the table's order."""
    os.environ["COLUMNS"] = str(COLUMNS)
    from bnviz.cli import build_parser
    from bnviz.cli.commands import COMMANDS, JOB_COMMANDS

    def walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
        yield parser
        for action in parser._actions:  # argparse keeps its sub-parsers only here
            if isinstance(action, argparse._SubParsersAction):
                for sub in dict.fromkeys(action.choices.values()):
                    yield from walk(sub)

    yield build_parser()
    seen = {"bnviz"}
    for name in (*COMMANDS, *JOB_COMMANDS):
        root = build_parser(name)
        for parser in walk(root):
            if parser.prog not in seen and parser.prog.split()[1:2] == [name]:
                seen.add(parser.prog)
                yield parser


def _anchor(prog: str) -> str:
    return prog.replace(" ", "-")


def cli_markdown() -> str:
    """docs/cli.md's text."""
    parsers = list(_parsers())
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    head = [
        "# The command line: `bnviz`",
        "",
        "<!-- Generated by `.venv/bin/python docs/generate.py` from the parser "
        f"(Python {version}'s argparse, {COLUMNS} columns); never edit by hand. -->",
        "",
        "Every command and option, as `bnviz COMMAND --help` prints it. Installed by `make run` "
        "or `make test` as `.venv/bin/bnviz` (the same as `.venv/bin/python -m bnviz`). "
        "A bad option or file prints one line on stderr (`bnviz: error: ...`) and exits with "
        "code 2; the options are checked by the same parameter models as the pages' controls "
        "(`bnviz/params/`), before torch is loaded. What each command computes, with worked "
        "examples, is in the guide of its page: [README](../README.md#where-each-thing-is).",
        "",
        " · ".join(f"[`{p.prog}`](#{_anchor(p.prog)})" for p in parsers),
        "",
    ]
    body = []
    for parser in parsers:
        text = parser.format_help().rstrip()
        body += [f"## {parser.prog}", "", "```text", text, "```", ""]
    return "\n".join(head + body)


# ---- samples -------------------------------------------------------------------------------

def _wrap(text: str) -> list[str]:
    out: list[str] = []
    for line in text.rstrip().splitlines():
        line = line.rstrip()
        if len(line) <= WIDTH:
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip())
        out += textwrap.wrap(line, WIDTH, initial_indent="", subsequent_indent=" " * (lead + 2),
                             break_long_words=False, break_on_hyphens=False,
                             drop_whitespace=True) or [line]
    return out


def _shown(step: Step, stdout: bytes, stderr: bytes) -> list[str]:
    text = (stderr if step.stderr else stdout).decode("utf-8", "replace")
    for pattern, repl in step.mask:
        text = re.sub(pattern, repl, text)
    text = LONG_FLOAT.sub(lambda m: f"{float(m.group(0)):.4g}", text)
    lines = _wrap(text)
    if step.lines is not None and len(lines) > step.lines:
        lines = lines[:step.lines] + [f"… ({len(lines) - step.lines} more lines)"]
    return lines


class SampleError(RuntimeError):
    """A sample's command exited with another code than its step says."""


def run_sample(name: str, work: Path, env: dict[str, str]) -> str:
    """The transcript of SAMPLES[name], run in ``work`` (the block's text, markers excluded)."""
    lines = ["```text"]
    for step in SAMPLES[name].steps:
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", step.command], cwd=work,
                              env=env, capture_output=True, timeout=600)
        if proc.returncode != step.code:
            raise SampleError(f"sample {name}: `{step.command}` exited with "
                              f"{proc.returncode}, not {step.code}: "
                              f"{proc.stderr.decode(errors='replace')[-600:]}")
        lines.append(f"$ {step.command}")
        lines += _shown(step, proc.stdout, proc.stderr)
    lines.append("```")
    return "\n".join(lines) + "\n"


def sample_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BNVIZ_")}
    return {**env, "BNVIZ_HOME": str(home), "BNVIZ_DEVICE": "cpu", "COLUMNS": str(COLUMNS),
            "BNVIZ_WORKER_IDLE_SECONDS": "5"}


def sample_workdir(root: Path) -> tuple[Path, dict[str, str]]:
    """A fresh folder as a clone's root (``.venv`` and ``docs`` linked), and its env."""
    work = root / "work"
    work.mkdir()
    (work / ".venv").symlink_to(REPO / ".venv")
    (work / "docs").symlink_to(REPO / "docs")
    return work, sample_env(root / "home")


def documents() -> list[Path]:
    """The files that may hold samples: README.md and docs/*.md but the generated ones."""
    return [REPO / "README.md"] + sorted(
        p for p in (REPO / "docs").glob("*.md") if p.name not in ("cli.md", "REPLICATION.md"))


def markers(text: str) -> list[str]:
    """The sample names a document shows, in order."""
    return [m.group(2) for m in MARKER.finditer(text)]


def fill(text: str, blocks: dict[str, str]) -> str:
    """``text`` with each sample block named in ``blocks`` replaced by its new content."""
    def repl(m: re.Match[str]) -> str:
        name = m.group(2)
        return m.group(1) + blocks[name] + m.group(4) if name in blocks else m.group(0)
    return MARKER.sub(repl, text)


def render(names: Sequence[str] | None = None) -> dict[Path, str]:
    """Every generated file's new text (only those that hold one of ``names``, if given)."""
    want = set(names) if names else None
    out: dict[Path, str] = {}
    if want is None or "cli" in want:
        out[CLI_MD] = cli_markdown()
    docs = {path: path.read_text() for path in documents()}
    shown = {name for text in docs.values() for name in markers(text)}
    todo = [n for n in SAMPLES if n in shown and (want is None or n in want)]
    if not todo:
        return out
    with tempfile.TemporaryDirectory(prefix="bnviz-docs-") as tmp:
        work, env = sample_workdir(Path(tmp))
        blocks = {name: run_sample(name, work, env) for name in todo}
    for path, text in docs.items():
        new = fill(text, blocks)
        if new != text or any(n in markers(text) for n in blocks):
            out[path] = new
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="'cli' or sample names (default: all)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a "
                        "difference")
    args = parser.parse_args(argv)
    unknown = set(args.names) - set(SAMPLES) - {"cli"}
    if unknown:
        parser.error(f"unknown: {', '.join(sorted(unknown))} (samples: {', '.join(SAMPLES)})")
    changed = []
    for path, text in render(args.names).items():
        if path.exists() and path.read_text() == text:
            continue
        changed.append(path.relative_to(REPO))
        if not args.check:
            path.write_text(text)
    for path in changed:
        print(f"{'differs' if args.check else 'wrote'}: {path}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
