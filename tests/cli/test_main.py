"""The command line's entry point (bnviz/cli/__init__.py): commands, one-line errors, the
real process as a shell sees it, and what is checked before any work (the parameter models
of bnviz.params): a fast ``--help``, and refusals at once of what the engine would refuse
only after long work."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
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
        ["partition", "--weights-file", "{tmp}/missing.npz"],
        ["frobnicate"],
        [],
    ],
    ids=["width_0", "missing_weights", "unknown_subcommand", "no_subcommand"],
)
def test_subprocess_error_is_one_line(tmp_path, argv):
    proc = _python_m(*(a.replace("{tmp}", str(tmp_path)) for a in argv))
    err = proc.stderr.decode()
    assert_one_error_line(proc.returncode, proc.stdout, err)


# --------------------------------------------------------------------------- checked first

#: A child Python that runs main(argv) and reports its exit code, stderr, whether torch was
#: imported, and how long main took.
_CHILD = """
import contextlib, io, json, sys, time
from bnviz.cli import main
err = io.StringIO()
t0 = time.perf_counter()
raw = io.BytesIO()
out = io.TextIOWrapper(raw)
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
    try:
        rc = main(json.loads(sys.argv[1]))
    except SystemExit as exc:
        rc = exc.code
print(json.dumps({"rc": rc, "err": err.getvalue(), "out": raw.getvalue().decode(errors="replace"),
                  "torch": "torch" in sys.modules, "numba": "numba" in sys.modules,
                  "pydantic": "pydantic" in sys.modules,
                  "models": "bnviz.params.model" in sys.modules,
                  "seconds": time.perf_counter() - t0}))
"""


def _child(argv: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(argv)], cwd=REPO,
                          capture_output=True, timeout=120, check=True)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("argv", [["--help"], ["partition", "--help"], ["density", "--help"],
                                  ["partition", "--depth", "x"], ["partition", "--width", "0"],
                                  ["jitter", "--batch-size", "999"], ["bogus"]])
def test_help_and_bad_options_do_not_load_torch(argv):
    """issue 18: ``bnviz --help`` is fast; the options are checked before torch loads."""
    got = _child(argv)
    assert got["rc"] in (0, 2) and got["torch"] is False, got


@pytest.mark.parametrize("argv", [["--help"], ["partition", "--help"], ["figure9", "--help"],
                                  ["replicate", "--help"], ["partition", "--depth", "x"],
                                  ["partition", "--geometry", "out.shp"], ["bogus"]])
def test_help_and_syntax_errors_load_no_parameter_models(argv):
    """issue 18, item 3: help and syntax errors need only argparse and the bounds
    (bnviz.caps), not the models (bnviz.params loads them on first use): measured by
    bench/cli.py, 0.14 s against 0.25 s before."""
    got = _child(argv)
    assert got["rc"] in (0, 2) and got["models"] is False and got["torch"] is False, got


@pytest.mark.parametrize("mode", ["bn", "random_bias"])
def test_a_cpu_partition_loads_neither_torch_nor_numba(mode):
    """issue 28: the command line's CPU cut is the vectorised numpy cut, in a process that
    never imports torch (1-3 s) nor numba (0.2 s, and its kernels 0.2-0.4 s, or a compile on a
    new machine), nor pydantic (its import and a model's schema: 0.09 s; the parameter layer
    is bnviz.params.model's dataclasses), with the counts the in-process compiled engine
    gives (this test process has the kernels loaded, as a server does)."""
    from bnviz.core import kernels
    from bnviz.core.network import layer_statistics, random_network
    from bnviz.core.partition import box_from_extent, compute_partition
    from bnviz.data.datasets import make_dataset
    from bnviz.device import gpu_driver_present

    # the default device is the CPU where no GPU driver is (CI), or asked for
    device = ["--device", "cpu"] if gpu_driver_present() else []
    got = _child(["partition", "--depth", "3", "--width", "16", "--mode", mode, *device])
    assert got["rc"] == 0 and got["torch"] is False and got["numba"] is False, got
    assert got["models"] is True and got["pydantic"] is False, got
    summary = json.loads(got["out"])
    net = random_network(3, 16, "leaky_relu", 0.1, mode, 0)
    batch = make_dataset("moons", 100, 0).points
    assert kernels.ready() is not None
    part = compute_partition(net, batch, box_from_extent(3.0),
                             stats=layer_statistics(net, batch), device="cpu")
    assert [lay["regions"] for lay in summary["layers"]] == [
        len(lay.regions) for lay in part.layers]
    assert summary["device"] == "cpu"


def test_figure9_of_random_weights_loads_no_torch_and_gives_the_in_process_numbers():
    """issue 28: Figure 9 at the random start (no training) is numpy on the CPU: its facet
    distances (bnviz.core.geometry, a numpy reduceat) and the explorer's pattern raster
    never import torch; the numbers equal those of this process, which has torch loaded."""
    from bnviz.device import gpu_driver_present
    from bnviz.params import parse
    from bnviz.params.partition import Figure9Params
    from bnviz.views.figure9 import figure9

    device = ["--device", "cpu"] if gpu_driver_present() else []
    got = _child(["figure9", "--weights", "random", "--json", *device])
    assert got["rc"] == 0 and got["torch"] is False, got
    p = parse(Figure9Params, {"weights": "random"})
    want = json.loads(json.dumps(figure9(p.explorer_settings(), p.layers,
                                         device="cpu").as_json()))
    # the same numbers to rounding (this process may cut with the compiled kernels), the same
    # everything else
    out = json.loads(got["out"])
    assert _numbers(out) == pytest.approx(_numbers(want), rel=1e-9, nan_ok=True)
    assert _skeleton(out) == _skeleton(want)


def _numbers(tree: object) -> list[float]:
    """Every number of a JSON tree, in order (None as nan)."""
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in _numbers(tree[k])]
    if isinstance(tree, list):
        return [x for item in tree for x in _numbers(item)]
    return [float("nan") if tree is None else float(tree)] if not isinstance(
        tree, str) else []


def _skeleton(tree: object) -> object:
    """A JSON tree with its numbers blanked out."""
    if isinstance(tree, dict):
        return {k: _skeleton(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_skeleton(v) for v in tree]
    return tree if isinstance(tree, str) else 0


def test_the_16_by_128_partition_is_refused_at_once_with_the_cap():
    """It used to cut for ~110 s before the engine's region cap refused it; the estimate
    (bnviz.params.cost.expected_regions) refuses it before any work, torch not even loaded.
    The time is printed, not asserted."""
    got = _child(["partition", "--depth", "16", "--width", "128"])
    print(f"16 x 128 partition refused in {got['seconds']:.3f} s (in a fresh process)")
    assert got["rc"] == 2 and got["torch"] is False
    line, = got["err"].splitlines()
    assert line.startswith("bnviz: error: layer ") and "regions (estimated before any work), " \
        "over the cap of 2000000: lower the width or the depth" in line


def test_a_batch_of_one_point_is_refused(capsysbinary, tmp_path):
    """A BN batch of 1 point has sigma 0 for every unit: it used to be accepted silently
    (sigma = the floor, ~1e-13)."""

    def refused(*argv):
        capsysbinary.readouterr()
        rc = main(["partition", "--depth", "2", "--width", "3", *map(str, argv)])
        captured = capsysbinary.readouterr()
        assert_one_error_line(rc, captured.out, captured.err.decode())
        return captured.err.decode()

    assert "--batch-size: enter 'all' or a whole number from 2" in refused("--batch-size", 1)
    assert "--n-points: a BN batch needs at least 2 points (sigma of 1 point is 0 for " \
           "every unit)" in refused("--n-points", 1)
    same = tmp_path / "same.npy"
    np.save(same, np.tile([[0.5, -1.0]], (10, 1)))
    assert "sigma would be 0 for every unit" in refused("--data", same)
    # spread, but none along the units: W1 reads x + y only, and the points have x + y = 1
    line = tmp_path / "line.npy"
    np.save(line, np.stack([np.linspace(-2, 3, 9), 1 - np.linspace(-2, 3, 9)], 1))
    weights = tmp_path / "w.npz"
    np.savez(weights, W1=np.array([[1.0, 1.0], [2.0, 2.0]]), W2=np.ones((2, 2)))
    assert "no spread along any unit" in refused("--data", line, "--weights-file", weights)
    # the same file without BN, or these points with weights that see them, are fine
    for argv in (["--data", same, "--mode", "zero_bias"], ["--data", line]):
        capsysbinary.readouterr()
        assert main(["partition", "--depth", "2", "--width", "3", *map(str, argv)]) == 0


# --------------------------------------------------------------------------- conventions

def _examples():
    from bnviz.cli.commands import COMMANDS, JOB_COMMANDS

    return [(name, line) for name, cmd in (COMMANDS | JOB_COMMANDS).items()
            for line in cmd.examples]


@pytest.mark.parametrize(("name", "line"), _examples())
def test_every_help_example_parses(name, line):
    """issue 28: each command's --help ends with examples; each is a valid command line
    (JOB_ID stands for a job's id; a leading VAR=value sets the environment)."""
    import shlex

    from bnviz.cli import build_parser

    words = [w for w in shlex.split(line) if "=" not in w.split("-")[0] or w.startswith("-")]
    assert words[0] == "bnviz" and words[1] == name
    args = build_parser(name).parse_args([w.replace("JOB_ID", "abc123") for w in words[1:]])
    assert args.command == name


def test_version_and_help_with_defaults_and_examples():
    from bnviz import __version__

    proc = subprocess.run([sys.executable, "-m", "bnviz", "--version"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f"bnviz {__version__}"
    proc = subprocess.run([sys.executable, "-m", "bnviz", "partition", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    text = " ".join(proc.stdout.split())
    assert "--depth DEPTH layers L (<= 16) (default: 4)" in text
    assert "--mode {bn,zero_bias,random_bias} default: bn" in text
    assert "examples: bnviz partition --depth 3" in text


@pytest.mark.parametrize(("argv", "meant"), [
    (["partiton"], "did you mean 'partition'?"), (["slcie", "--help"], "did you mean 'slice'?"),
    (["partition", "--mode", "bnn"], "did you mean 'bn'?"),
    (["partition", "--dataset", "moon"], "did you mean 'moons'?")])
def test_a_typo_gets_a_suggestion(argv, meant):
    got = _child(argv)
    assert got["rc"] == 2 and meant in got["err"] and got["torch"] is False, got
    assert len(got["err"].strip().splitlines()) == 1


@pytest.mark.parametrize(("argv", "words"), [
    (["partition", "--weights-file", "missing.npz"], "--weights-file: missing.npz: no such file"),
    (["partition", "--weights-file", "bnviz"], "--weights-file: bnviz: a directory, not a file"),
    (["partition", "--data", "none.npy"], "--data: none.npy: no such file"),
    (["partition", "--out", "no/such/dir/p.json"], "--out: no directory 'no/such/dir'"),
    (["partition", "--out", "bnviz"], "--out: bnviz is a directory"),
    (["train", "--movie", "nowhere/m.gif"], "--movie: no directory 'nowhere'"),
    (["slice", "--model", "absent.onnx"], "--model: absent.onnx: no such file")])
def test_paths_are_checked_before_any_work(argv, words):
    """A missing input or output directory is refused at once, before torch or numba loads
    (it took 6-15 s of work before)."""
    got = _child(argv)
    assert got["rc"] == 2 and words in got["err"], got
    assert got["torch"] is False and got["numba"] is False and got["seconds"] < 5


def test_binary_output_is_never_written_to_a_terminal():
    import pty

    main_fd, child_fd = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "bnviz", "partition", "--format", "png"],
                              cwd=REPO, stdout=child_fd, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(child_fd)
    os.close(main_fd)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == (
        "bnviz: error: --format png is binary: write it to a file with --out FILE (or pipe "
        "it), not to the terminal")
    piped = subprocess.run([sys.executable, "-m", "bnviz", "partition", "--format", "png",
                            "--depth", "1", "--width", "3"], cwd=REPO, capture_output=True,
                           timeout=120)
    assert piped.returncode == 0 and piped.stdout.startswith(b"\x89PNG")


def _stderr_on_a_terminal(argv: list[str]) -> tuple[int, bytes, str]:
    """(exit code, stdout, what a terminal on stderr saw) of one command."""
    import fcntl
    import pty
    import struct
    import termios

    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 cols
    proc = subprocess.Popen([sys.executable, "-m", "bnviz", *argv], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=child_fd)
    os.close(child_fd)
    seen = b""
    while True:
        try:
            chunk = os.read(main_fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out = proc.stdout.read()
    code = proc.wait(timeout=120)
    os.close(main_fd)
    return code, out, seen.decode(errors="replace")


def test_a_long_command_shows_progress_on_a_terminal_only():
    """issue 28: a bar on stderr where it is a terminal; none with --quiet; in a pipe (issue
    43) at most a plain line every 10 s ("bnviz training: 40% after 10 s": none when the run
    is shorter); stdout keeps only the output."""
    argv = ["train", "--steps", "400", "--frames", "20", "--json"]
    code, out, terminal = _stderr_on_a_terminal(argv)
    assert code == 0 and json.loads(out)["frames"]
    assert "training:" in terminal and "%|" in terminal, terminal
    code, out, terminal = _stderr_on_a_terminal([*argv, "--quiet"])
    assert code == 0 and json.loads(out)["frames"] and terminal.strip() == ""
    piped = subprocess.run([sys.executable, "-m", "bnviz", *argv], cwd=REPO,
                           capture_output=True, timeout=120)
    assert piped.returncode == 0 and json.loads(piped.stdout)["frames"]
    lines = piped.stderr.decode().splitlines()
    assert all(re.fullmatch(r"bnviz training: \d+% after \d+ s", line) for line in lines), lines
