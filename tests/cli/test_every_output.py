"""Every module imports, and every ``--format`` of every command runs on a tiny input
(issue 43): ``bnviz slice --format png`` once crashed with an ImportError after its whole cut,
in a module no test had imported.

The commands and their formats are read from the parser itself, so a new command or a new
format with no tiny input here fails :func:`test_every_format_has_a_tiny_input`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil

import numpy as np
import pytest
from onnx_nets import conv_net

import bnviz
from bnviz.cli import build_parser, main
from bnviz.cli.commands import COMMANDS


def _modules() -> list[str]:
    """Every module of bnviz, the web layer (bnviz.web: app, layouts, callbacks) included."""
    return [m.name for m in pkgutil.walk_packages(bnviz.__path__, "bnviz.")
            if not m.name.endswith("__main__")]


@pytest.mark.parametrize("name", _modules())
def test_every_module_imports(name):
    importlib.import_module(name)


def _format_choices() -> dict[str, tuple[str, ...]]:
    """command -> the choices of its --format, from the parser."""
    found = {}
    for command in COMMANDS:
        parser = build_parser(command)
        subparsers = next(a for a in parser._actions
                          if isinstance(a, argparse._SubParsersAction))
        for action in subparsers.choices[command]._actions:
            if "--format" in action.option_strings:
                found[command] = tuple(action.choices)
    return found


#: A tiny input per command that has formats ({tmp}: the test's folder).
TINY = {
    "partition": ["--depth", "2", "--width", "4", "--n-points", "40"],
    "jitter": ["--depth", "2", "--width", "4", "--n-points", "40", "--realizations", "2",
               "--batch-size", "8"],
    "density": ["--depth", "2", "--width", "4", "--grid", "16", "--n-points", "20"],
    "slice": ["--model", "{tmp}/net.onnx", "--data", "{tmp}/images.npy"],
}
SIGNATURES = {"png": b"\x89PNG\r\n\x1a\n", "svg": b"<svg"}


def test_every_format_has_a_tiny_input():
    assert set(_format_choices()) == set(TINY)


@pytest.mark.parametrize("command, fmt", [(c, f) for c, fs in _format_choices().items()
                                         for f in fs])
def test_every_format_of_every_command_runs(command, fmt, tmp_path, capsysbinary):
    if command == "slice":
        conv_net(tmp_path / "net.onnx", size=6)
        np.save(tmp_path / "images.npy",
                np.random.default_rng(0).normal(0, 1, (12, 1, 6, 6)).astype(np.float32))
    out = tmp_path / f"out.{fmt}"
    argv = [command, *(a.format(tmp=tmp_path) for a in TINY[command]), "--format", fmt,
            "--out", str(out)]
    code = main(argv)
    err = capsysbinary.readouterr().err.decode()
    assert code == 0, err
    data = out.read_bytes()
    if fmt in SIGNATURES:
        assert SIGNATURES[fmt] in data[:400], data[:80]
    elif fmt == "summary":
        assert data.strip() and b"Traceback" not in data
    else:
        assert isinstance(json.loads(data), dict)


def test_a_long_command_without_a_terminal_says_it_is_working(tmp_path):
    """Issue 43: jitter, density and figure9 ran 25-49 s, lecture --export minutes, with
    nothing on stderr. Without a terminal a line comes every interval (0.5 s here, 10 s by
    default), from a timer, while the work reports nothing (progress_bar uses it when stderr
    is not a terminal, as in this subprocess)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import time
        from bnviz.cli.progress import progress_lines
        with progress_lines("work", every=0.5) as report:
            report(0.25)
            deadline = time.monotonic() + 1.8
            while time.monotonic() < deadline:  # a step that reports nothing
                sum(range(10_000))
        print("done")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0 and run.stdout == "done\n", run.stderr
    lines = run.stderr.splitlines()
    assert 2 <= len(lines) <= 4, lines
    assert all(line.startswith("bnviz work: 25% after ") for line in lines), lines


@pytest.mark.parametrize("command", ["jitter", "density", "figure9"])
def test_the_long_commands_report_progress(command):
    """Each command that can run over 2 s opens a progress report (and takes --quiet)."""
    parser = build_parser(command)
    assert parser.parse_args([command, "--quiet"]).quiet


def test_a_reader_that_goes_away_is_no_traceback():
    """``bnviz replicate | head -c 0``: the pipe closes before the output is written."""
    import subprocess
    import sys

    reader = subprocess.Popen(["head", "-c", "0"], stdin=subprocess.PIPE)
    run = subprocess.run([sys.executable, "-m", "bnviz", "replicate"], stdout=reader.stdin,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    reader.stdin.close()
    reader.wait(30)
    assert "Traceback" not in run.stderr and run.returncode in (0, 1), run.stderr
