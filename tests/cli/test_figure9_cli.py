"""``bnviz figure9`` (bnviz/cli/figures.py): Figure 9's numbers from the command line, the
same as the explorer's preset computes; options checked by bnviz.params before torch loads."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fuzzing import assert_one_error_line, strict_json

from bnviz.cli import main
from bnviz.views.figure9 import FIGURE9_SETTINGS, figure9

REPO = Path(__file__).resolve().parents[2]


def figure9_cli(capsysbinary, *args):
    capsysbinary.readouterr()
    rc = main(["figure9", *map(str, args)])
    captured = capsysbinary.readouterr()
    return rc, captured.out, captured.err.decode()


def test_json_is_the_presets_numbers(capsysbinary):
    rc, out, err = figure9_cli(capsysbinary, "--json")
    assert rc == 0, err
    doc = strict_json(out)
    f9 = figure9(FIGURE9_SETTINGS)
    assert [e["layer"] for e in doc["layers"]] == [1, 4]
    for entry, t in zip(doc["layers"], f9.layers, strict=True):
        np.testing.assert_array_equal(entry["values"], t.values)
        np.testing.assert_array_equal(entry["mean_distance"], t.mean_distance)
        assert entry["spearman"] == t.spearman and entry["exact"] is True
    assert doc["settings"]["weights"] == "trained" and doc["train_accuracy"] == 1.0


def test_table_prints_every_unit_and_the_rank_correlation(capsysbinary):
    rc, out, err = figure9_cli(capsysbinary, "--layers", "1,3", "--weight-seed", "2",
                               "--data-seed", "2")
    assert rc == 0, err
    text = out.decode()
    f9 = figure9(replace(FIGURE9_SETTINGS, weight_seed=2, data_seed=2, layer=3), layers=(1, 3))
    assert "weight seed 2, data seed 2" in text
    assert "layer 1: value = sigma^2/||w||^2" in text
    assert "layer 3: value = sigma^2/||w||^2" in text
    for t in f9.layers:
        assert f"Spearman rank correlation of the value with the mean distance " \
               f"{t.spearman:.3f}" in text
        for k, v in enumerate(t.values):
            assert f"{k + 1:>6} {v:>10.4g}" in text


def test_random_weights_and_other_data(capsysbinary):
    rc, out, err = figure9_cli(capsysbinary, "--json", "--weights", "random", "--dataset",
                               "circles", "--shift-x", "0", "--shift-y", "0")
    assert rc == 0, err
    doc = strict_json(out)
    assert doc["train_accuracy"] is None and doc["settings"]["dataset"] == "circles"


@pytest.mark.parametrize("args, flag", [
    (["--layers", "5"], "--layers"), (["--layers", "1,1"], "--layers"),
    (["--layers", "1,2,3"], "--layers"), (["--depth", "40"], "--depth"),
    (["--weight-seed", "-1"], "--weight-seed"), (["--data-seed", "-1"], "--data-seed"),
    (["--weights", "pretrained"], "--weights"), (["--shift-x", "9"], "--shift-x"),
    (["--n-points", "1"], "--n-points")])
def test_bad_options_are_one_line(capsysbinary, args, flag):
    rc, out, err = figure9_cli(capsysbinary, *args)
    assert_one_error_line(rc, out, err)
    assert flag in err


_CHILD = """
import contextlib, io, json, sys
from bnviz.cli import main
err = io.StringIO()
with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
    rc = main(json.loads(sys.argv[1]))
print(json.dumps({"rc": rc, "torch": "torch" in sys.modules}))
"""


def test_bad_options_do_not_load_torch():
    proc = subprocess.run([sys.executable, "-c", _CHILD,
                           json.dumps(["figure9", "--layers", "9"])], cwd=REPO,
                          capture_output=True, timeout=120, check=True)
    assert json.loads(proc.stdout) == {"rc": 2, "torch": False}
