"""The command line's entry point (bnviz/cli/__init__.py): commands, one-line errors, the
real process as a shell sees it, and what is checked before any work (the parameter models
of bnviz.params): a fast ``--help``, and refusals at once of what the engine would refuse
only after long work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fuzzing import assert_one_error_line

from bnviz.cli import main

REPO = Path(__file__).resolve().parents[2]


def _python_m(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bnviz", *map(str, args)], cwd=REPO,
                          capture_output=True, timeout=timeout, check=False)


@pytest.mark.parametrize("argv", [["frobnicate"], [], ["--depth", "2"]],
                         ids=["unknown_subcommand", "no_subcommand", "option_without_command"])
def test_bad_command(capsysbinary, argv):
    capsysbinary.readouterr()
    rc = main(argv)
    captured = capsysbinary.readouterr()
    assert_one_error_line(rc, captured.out, captured.err.decode())


@pytest.mark.parametrize(
    "argv",
    [
        ["partition", "--width", "0"],
        ["partition", "--weights", "{tmp}/missing.npz"],
        ["frobnicate"],
        [],
    ],
    ids=["width_0", "missing_weights", "unknown_subcommand", "no_subcommand"],
)
def test_subprocess_error_is_one_line(tmp_path, argv):
    proc = _python_m(*(a.replace("{tmp}", str(tmp_path)) for a in argv))
    err = proc.stderr.decode()
    assert_one_error_line(proc.returncode, proc.stdout, err)
