"""Tests of ``bnviz density`` (Figure 3) and ``bnviz bnstats`` (Figure 7):
bnviz/cli/figures.py (``bnviz jitter`` is tested with its view, tests/views/test_jitter.py)."""

from __future__ import annotations

import pytest
from fuzzing import assert_one_error_line, strict_json

from bnviz.cli import main

# --------------------------------------------------------------------------- density (Fig. 3)


def density_cli(capsysbinary, *args):
    capsysbinary.readouterr()
    rc = main(["density", *map(str, args)])
    captured = capsysbinary.readouterr()
    return rc, captured.out, captured.err.decode()


def test_density_json_schema_and_central_layer_one(capsysbinary):
    rc, out, err = density_cli(capsysbinary, "--depth", 3, "--width", 32, "--grid", 48,
                               "--layers", "1,3", "--mode", "bn", "--json")
    assert rc == 0, err
    doc = strict_json(out)
    assert {"mode", "grid", "layers", "seconds", "device"} <= set(doc)
    assert doc["mode"] == "bn" and doc["grid"] == 48
    assert [entry["layer"] for entry in doc["layers"]] == [1, 3]
    # BN layer 1 is a central arrangement: all 32 lines meet in one grid cell's ball
    assert doc["layers"][0]["max_concentration"] == 32
    assert all(isinstance(e["near_data_ratio"], float) for e in doc["layers"])


def test_density_modes_differ_and_png(capsysbinary, tmp_path):
    maxima = {}
    for mode in ("bn", "random_bias"):
        rc, out, err = density_cli(capsysbinary, "--depth", 2, "--width", 24, "--grid", 40,
                                   "--layers", "1", "--mode", mode)
        assert rc == 0, err
        maxima[mode] = strict_json(out)["layers"][0]["max_concentration"]
    assert maxima["bn"] == 24 and maxima["random_bias"] < 24
    png = tmp_path / "d.png"
    rc, out, err = density_cli(capsysbinary, "--depth", 2, "--width", 16, "--grid", 32,
                               "--layers", "1,2", "--format", "png", "--out", png)
    assert rc == 0 and png.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("args", [
    ["--layers", "0"], ["--layers", "1,x"], ["--layers", "5", "--depth", "3"],
    ["--grid", "1"], ["--eps", "0"], ["--eps", "0.5"], ["--width", "1024", "--depth", "16",
                                                        "--grid", "512"],
    ["--radius", "0"], ["--mode", "nope"], ["--width", "0"],
])
def test_density_bad_input(capsysbinary, args):
    rc, out, err = density_cli(capsysbinary, "--depth", 3, "--width", 8, "--grid", 16, *args)
    assert_one_error_line(rc, out, err)


def test_density_default_layers_follow_the_depth(capsysbinary):
    rc, out, err = density_cli(capsysbinary, "--depth", 2, "--width", 4, "--grid", 9)
    assert rc == 0, err
    assert [e["layer"] for e in strict_json(out)["layers"]] == [1, 2]
    rc, out, err = density_cli(capsysbinary, "--depth", 11, "--width", 4, "--grid", 9)
    assert [e["layer"] for e in strict_json(out)["layers"]] == [1, 7, 11]


def test_bnstats_default_virtual_batch_is_half_the_batch(capsysbinary):
    capsysbinary.readouterr()
    rc = main(["bnstats", "--batch-size", "16", "--train-size", "100", "--samples", "50"])
    out = capsysbinary.readouterr().out
    assert rc == 0 and strict_json(out)["virtual_batch_size"] == 8


@pytest.mark.parametrize(("args", "words"), [
    (["--batch-size", "2000"], "--batch-size: 2000 is larger than the training set (1000)"),
    (["--batch-size", "1"], "--batch-size: enter a whole number from 2 to 100000, got 1"),
    (["--virtual-batch-size", "65"], "--virtual-batch-size: enter a whole number from 2 to "
                                     "the batch size (64), got 65"),
    (["--samples", "9"], "--samples: enter a whole number from 10 to 200000, got 9"),
    (["--train-size", "100000", "--batch-size", "1000", "--samples", "60000"],
     "samples x batch size is 60000000, over the cap of 50000000"),
])
def test_bnstats_options_are_checked_before_any_work(capsysbinary, args, words):
    capsysbinary.readouterr()
    rc = main(["bnstats", *args])
    captured = capsysbinary.readouterr()
    assert_one_error_line(rc, captured.out, captured.err.decode())
    assert words in captured.err.decode()


def test_density_messages_name_the_option(capsysbinary):
    for args, words in ((["--layers", "5"], "--layers: comma-separated layer numbers from 1 to "
                                            "the depth (3), got '5'"),
                        (["--eps", "0.5"], "--eps: enter a number from 1 to 16, got 0.5"),
                        (["--width", "1024", "--depth", "16", "--grid", "512"],
                         "grid^2 x depth x width^2 is over the cap")):
        rc, out, err = density_cli(capsysbinary, "--depth", 3, "--width", 8, "--grid", 16,
                                   *args)
        assert_one_error_line(rc, out, err)
        assert words in err, err
