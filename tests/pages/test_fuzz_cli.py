"""Property-based fuzzing of the command line (issue 7), in-process (``bnviz.cli.main``):
the CLI exits with 0 or 2 (1 only for ``jobs wait`` of a job that did not succeed), and on
2 it prints exactly one ``bnviz: error: ...`` line on stderr.

The properties every page fuzz test checks, and how a bug it finds is kept, are in
tests/pagefuzz.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fuzzing import (
    FEW,
    FUZZ,
    HEX12,
    HUGE,
    assert_cli_outcome,
    run_cli,
)
from hypothesis import given
from hypothesis import strategies as st
from pagefuzz import (
    JOB_VALID,
    MAC_CSV,
    NET,
    end_open_jobs,
    npz_bytes,
)

from bnviz.core.network import ACTIVATIONS, MODES
from bnviz.data.datasets import DATASETS
from bnviz.images.params import JOB_TYPES
from bnviz.params.jobs import JOB_OPTIONS
from bnviz.views.explorer import (
    SCOPES,
)

BAD_VALUES = ["-1", "0", "1.5", "abc", "", " ", "nan", "inf", "-inf", "1e400", "1e30",
              str(HUGE), "0x10", "--", "\u0663", "1_0"]


UNKNOWN_TOKENS = ["--bogus", "--depthx", "-z", "extra", "--", "-", "--json=1", "=", "%s"]


DEVICES = ["cpu", "cuda", "", "foo", "cpu:0", "cuda:9", "gpu", "CPU", " cpu", "meta", "xla",
           "mps", "vulkan", "hpu", "cuda:-1"]


def num(lo: int, hi: int, *bad: str):
    return st.one_of(st.integers(lo, hi).map(str), st.sampled_from([*BAD_VALUES, *bad]))


def real(lo: float, hi: float, *bad: str):
    return st.one_of(st.floats(lo, hi).map(lambda v: f"{v:.6g}"),
                     st.sampled_from([*BAD_VALUES, *bad]))


def choice(options):
    return st.one_of(st.sampled_from(list(options)), st.sampled_from(["", "x", "BN", "none"]))


CLI_FILES = {
    "good.csv": b"x,y,label\n0.1,0.2,0\n-1,1,1\n0.5,-0.5,0\n1,1,1\n",
    "nan.csv": b"x,y\nnan,1\n2,3\n",
    "text.csv": b"a,b\nhello,world\n",
    "wide.csv": b"1,2,3,4\n5,6,7,8\n",
    "empty.csv": b"",
    "crlf.csv": b"x,y\r\n1,2\r\n3,4\r\n",
    "mac.csv": b"x,y\r1,2\r3,4\r",
    "junk.npy": b"\x93NUMPY junk",
    "net.npz": npz_bytes(**NET),
    "nohead.npz": npz_bytes(W1=NET["W1"], W2=NET["W2"]),
    "huge.npz": npz_bytes(W1=np.ones((300, 2)), head_W=np.ones((2, 300))),
    "nan.npz": npz_bytes(W1=np.full((4, 2), np.nan), head_W=np.ones((2, 4))),
    "three.npz": npz_bytes(W1=np.ones((4, 3)), head_W=np.ones((2, 4))),
    "junk.npz": b"PK\x03\x04 junk",
    "notes.txt": b"hello",
}


@pytest.fixture
def cli_dir(tmp_path) -> Path:
    for name, raw in CLI_FILES.items():
        (tmp_path / name).write_bytes(raw)
    good = np.random.default_rng(1).normal(size=(30, 2))
    np.save(tmp_path / "good.npy", good)
    np.save(tmp_path / "three.npy", np.ones((5, 3)))
    (tmp_path / "folder.csv").mkdir()
    return tmp_path


IN_FILES = st.sampled_from([*CLI_FILES, "good.npy", "three.npy", "folder.csv", "missing.csv",
                            "missing.npz", "."])


OUT_FILES = st.sampled_from(["out.json", "out.png", "out.svg", "out.npz", ".",
                             "missing/out.json", "good.csv"])


PATH_FLAGS = {"--weights", "--weights-file", "--data", "--out", "--save"}


def options(flags: dict):
    """Lists of [flag, value] (value None: a switch) plus unknown tokens and a dangling flag."""
    pair = st.sampled_from(sorted(flags)).flatmap(
        lambda f: st.just([f]) if flags[f] is None else flags[f].map(lambda v: [f, v]))
    # a flag without its value takes the next token (never a path: nothing is written here)
    dangling = st.sampled_from(sorted(set(flags) - PATH_FLAGS)).map(lambda f: [f])
    return st.lists(st.one_of(pair, pair, pair, st.sampled_from(UNKNOWN_TOKENS).map(
        lambda t: [t]), dangling), max_size=6)


def resolve(tokens: list[list[str]], folder: Path) -> list[str]:
    """Flatten, with file names turned into paths inside the test's folder."""
    argv = []
    for group in tokens:
        if len(group) == 2 and group[0] in PATH_FLAGS:
            group = [group[0], str(folder / group[1])]
        argv += group
    return argv


SMALL_PARTITION = ["--depth", "2", "--width", "3", "--n-points", "30"]


PARTITION_FLAGS = {
    "--depth": num(1, 3, "17"), "--width": num(2, 5, "257"),
    "--activation": choice(ACTIVATIONS), "--alpha": real(0.01, 0.99, "1", "-0.5"),
    "--mode": choice(MODES), "--dataset": choice(DATASETS),
    "--n-points": num(2, 60, "1000001"), "--weight-seed": num(0, 5), "--data-seed": num(0, 5),
    "--batch-seed": num(0, 5),
    "--batch-size": st.one_of(st.sampled_from(["all", "None", "FULL"]), num(1, 80)),
    "--extent": real(0.5, 5, "1e7"), "--head": num(0, 2, "3"),
    "--weights": choice(["random", "trained", "npz"]),
    "--weights-file": st.sampled_from(["net.npz", "nohead.npz", "huge.npz", "nan.npz",
                                       "three.npz", "junk.npz", "good.csv", "missing.npz", "."]),
    "--data": IN_FILES, "--mu-t": real(0, 1.5, "1.6"), "--sigma-s": real(0.25, 4, "5"),
    "--scope": choice(SCOPES), "--target-layer": num(1, 4), "--target-unit": num(0, 6),
    "--recompute-statistics": None, "--format": choice(["json", "svg", "png"]),
    "--out": OUT_FILES, "--device": st.sampled_from(DEVICES),
}


@FEW
@given(tokens=options(PARTITION_FLAGS))
def test_cli_partition(capsysbinary, cli_dir, tokens):
    argv = ["partition", *SMALL_PARTITION, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


SMALL_JITTER = ["--n-points", "32", "--depth", "1", "--width", "3", "--batch-size", "4",
                "--realizations", "2"]


JITTER_FLAGS = {
    "--dataset": choice(DATASETS), "--n-points": num(8, 40, "2001"),
    "--data-seed": num(0, 5), "--depth": num(1, 2, "7"), "--width": num(2, 4, "33"),
    "--activation": choice(ACTIVATIONS), "--alpha": real(0.01, 0.99, "1", "-0.5"),
    "--weight-seed": num(0, 5), "--batch-size": num(2, 8, "513"),
    "--realizations": num(1, 3, "129"), "--virtual-batch-size": num(2, 8, "1"),
    "--batch-seed": num(0, 5), "--train-steps": num(0, 3, "5001"),
    "--optimizer": choice(["sgd", "adam"]), "--lr": real(1e-4, 1),
    "--weights-file": st.sampled_from(["net.npz", "nohead.npz", "huge.npz", "nan.npz",
                                       "three.npz", "junk.npz", "missing.npz"]),
    "--save": OUT_FILES, "--extent": real(0.5, 5, "1e7"), "--json": None,
    "--format": choice(["json", "png", "svg"]), "--out": OUT_FILES,
    "--device": st.sampled_from(DEVICES),
}


@FEW
@given(tokens=options(JITTER_FLAGS))
def test_cli_jitter(capsysbinary, cli_dir, tokens):
    argv = ["jitter", *SMALL_JITTER, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


SMALL_DENSITY = ["--depth", "2", "--width", "6", "--grid", "16", "--n-points", "20"]


DENSITY_FLAGS = {
    "--depth": num(1, 3, "17"), "--width": num(2, 8, "4097"),
    "--activation": choice(ACTIVATIONS), "--dataset": choice(DATASETS),
    "--n-points": num(2, 30), "--weight-seed": num(0, 5), "--data-seed": num(0, 5),
    "--mode": choice(MODES),
    "--layers": st.one_of(st.sampled_from(["1", "1,2", "2,1", "0", "99", "a", "", ",", "1,,2",
                                           "-1", " 1 , 2", "1.5", "9" * 5000]),
                          st.text("0123456789,- x", max_size=10)),
    "--grid": num(16, 24, "1", "3000"), "--eps": real(1, 2, "0.5", "20"),
    "--radius": real(0.01, 1), "--extent": real(0.5, 5, "1e7"), "--json": None,
    "--format": choice(["json", "png", "svg"]), "--out": OUT_FILES,
    "--device": st.sampled_from(DEVICES),
}


@FEW
@given(tokens=options(DENSITY_FLAGS))
def test_cli_density(capsysbinary, cli_dir, tokens):
    argv = ["density", *SMALL_DENSITY, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


SMALL_FIGURE9 = ["--depth", "2", "--width", "3", "--n-points", "20"]


FIGURE9_FLAGS = {
    "--dataset": choice(DATASETS), "--n-points": num(2, 30, "2001"),
    "--weight-seed": num(0, 3), "--data-seed": num(0, 3),
    "--depth": num(1, 3, "13"), "--width": num(2, 4, "65"),
    "--activation": choice(ACTIVATIONS), "--weights": choice(["random", "trained"]),
    "--layers": st.one_of(st.sampled_from(["1", "1,2", "2,1", "0", "99", "1,1", "1,2,3", "a",
                                           "", ",", "-1", " 1 , 2", "1.5", "9" * 5000]),
                          st.text("0123456789,- x", max_size=10)),
    "--shift-x": real(-2, 2, "3"), "--shift-y": real(-2, 2, "-3"),
    "--extent": real(0.5, 5, "1e7"), "--json": None, "--out": OUT_FILES,
    "--device": st.sampled_from(DEVICES),
}


@FEW
@given(tokens=options(FIGURE9_FLAGS))
def test_cli_figure9(capsysbinary, cli_dir, tokens):
    argv = ["figure9", *SMALL_FIGURE9, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


def test_cli_density_over_the_cost_cap_is_refused(capsysbinary):
    for sizes in (["--depth", "16", "--width", "4096", "--grid", "2048"],
                  ["--depth", "11", "--width", "1024", "--grid", "2048"]):
        rc, out, err = run_cli(capsysbinary, ["density", *sizes])
        assert_cli_outcome(rc, out, err)
        assert rc == 2 and "cap" in err
    # beyond the grid's own range, the range is what the message names
    rc, out, err = run_cli(capsysbinary, ["density", "--depth", "11", "--grid", "100000"])
    assert_cli_outcome(rc, out, err)
    assert rc == 2 and "--grid: enter a whole number from 2 to 2048" in err
    rc, out, err = run_cli(capsysbinary, ["density", "--grid", str(HUGE)])
    assert_cli_outcome(rc, out, err)
    assert rc == 2


SMALL_BNSTATS = ["--batch-size", "4", "--train-size", "100", "--samples", "50"]


BNSTATS_FLAGS = {
    "--batch-size": num(2, 8, "100001"), "--train-size": num(10, 200, "100001"),
    "--samples": num(10, 200, "9", "200001"), "--virtual-batch-size": num(2, 8),
    "--data-seed": num(0, 5), "--batch-seed": num(0, 5),
    "--means": st.sampled_from(["1,0,-1", "0.5,2,1", "1,2", "nan,0,1"]), "--json": None,
    "--out": OUT_FILES,
}


@FEW
@given(tokens=options(BNSTATS_FLAGS))
def test_cli_bnstats(capsysbinary, cli_dir, tokens):
    argv = ["bnstats", *SMALL_BNSTATS, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


JOB_FLAG_VALUES = {
    spec.flag: st.one_of(JOB_VALID[spec.name].map(
        lambda v: ",".join(map(str, v)) if isinstance(v, list) else str(v)),
        st.sampled_from(BAD_VALUES))
    for spec in JOB_OPTIONS}


JOB_IDS = st.one_of(st.sampled_from(["real", "REAL", "000000000000", "abc", "", "../x", " "]),
                    HEX12, st.text("0123456789abcdefXYZ", max_size=14))


@st.composite
def jobs_argv(draw) -> list[str]:
    cmd = draw(st.sampled_from(["submit", "submit", "list", "show", "wait", "cancel", "rerun",
                                "bogus", None]))
    argv = ["jobs"] + ([cmd] if cmd else [])
    if cmd == "submit":
        argv.append(draw(st.sampled_from([*JOB_TYPES, "nope", ""])))
        argv += draw(options({**JOB_FLAG_VALUES, "--json": None}).map(
            lambda groups: [t for g in groups for t in g]))
    elif cmd == "list":
        argv += draw(options({"--json": None, "--limit": num(-5, 5)}).map(
            lambda groups: [t for g in groups for t in g]))
    elif cmd in ("show", "wait", "cancel", "rerun"):
        if draw(st.integers(0, 9)):  # sometimes the id is missing
            argv.append(draw(JOB_IDS))
        flags = {"--json": None}
        if cmd == "wait":
            flags["--timeout"] = st.sampled_from(["0", "0.05", "-1", "nan", "inf", "abc", ""])
        argv += draw(options(flags).map(lambda groups: [t for g in groups for t in g]))
    return argv


@FUZZ
@given(argv=jobs_argv())
def test_cli_jobs(capsysbinary, job_id, argv):
    argv = [{"real": job_id, "REAL": job_id.upper()}.get(t, t) for t in argv]
    rc, out, err = run_cli(capsysbinary, argv)
    end_open_jobs()  # what was submitted or re-run never runs
    is_wait = len(argv) > 1 and argv[1] == "wait"
    assert_cli_outcome(rc, out, err, allowed=(0, 1, 2) if is_wait else (0, 2))
    if rc == 1:  # the job ended without succeeding (the real one was cancelled)
        assert job_id.encode() in out


@FUZZ
@given(argv=st.lists(st.sampled_from(["", "nope", "--bogus", "-x", "jobs", "PARTITION",
                                      "--depth", "1", "data", "-"]), max_size=3))
def test_cli_top_level(capsysbinary, argv):
    assert_cli_outcome(*run_cli(capsysbinary, argv))


# =========================================================================== found, fixed
# Bugs this fuzzing found, fixed while it was written: each test is a bug's reproducers,
# kept as a regression test (the fuzz tests above feed these inputs too).

def test_b2_cli_data_with_cr_line_endings(capsysbinary, tmp_path):
    """B2: `partition --data mac.csv` printed a traceback."""
    path = tmp_path / "mac.csv"
    path.write_bytes(MAC_CSV)
    rc, out, err = run_cli(capsysbinary, ["partition", *SMALL_PARTITION, "--data", str(path),
                                          "--device", "cpu"])
    assert_cli_outcome(rc, out, err)
    assert rc == 0


@pytest.mark.parametrize("argv", [
    ["partition", "--depth", "1", "--width", "2", "--device", "meta"],
    ["partition", "--depth", "1", "--width", "2", "--device", "xla"],
    ["jitter", *SMALL_JITTER, "--device", "meta"],
    ["density", *SMALL_DENSITY, "--device", "meta"],
    ["figure9", *SMALL_FIGURE9, "--device", "meta"],
], ids=["partition-meta", "partition-xla", "jitter-meta", "density-meta", "figure9-meta"])
def test_b3_cli_device_without_a_backend(capsysbinary, argv):
    """B3: a device type torch knows but bnviz cannot use (meta, xla, mps, ...) failed deep
    in torch with a traceback and exit code 1."""
    rc, out, err = run_cli(capsysbinary, argv)
    assert_cli_outcome(rc, out, err)
    assert rc == 2


def test_b8_cli_jitter_huge_seed(capsysbinary):
    """B8: `jitter --seed 10**30` was refused with torch's 'Overflow when unpacking long
    long', which did not say which option was wrong (the seeds are three flags now)."""
    for flag in ("--weight-seed", "--data-seed", "--batch-seed"):
        rc, out, err = run_cli(capsysbinary, ["jitter", *SMALL_JITTER, flag, str(HUGE)])
        assert_cli_outcome(rc, out, err)
        assert rc == 2 and flag in err


def test_b10_partition_breakdown_in_the_cli(capsysbinary):
    """B10: the same breakdown printed a traceback with exit code 1 in the CLI."""
    assert_cli_outcome(*run_cli(capsysbinary, [
        "partition", "--depth", "1", "--width", "4", "--activation", "relu", "--mode",
        "random_bias", "--weight-seed", "1", "--data-seed", "1", "--mu-t", "1e-9", "--device",
        "cpu"]))
