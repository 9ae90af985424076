"""The learning-rate sweep (``bnviz jobs run TYPE --lrs ...``, issue 17 item 2): a fixed,
stratified validation split held out of the training images, validation accuracy in the
metric rows, each arm's rate chosen on it, and the arm's test accuracy at that rate."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from fuzzing import assert_one_error_line

from bnviz.caps import MAX_LR_EXTENSIONS
from bnviz.cli import main
from bnviz.data.imagedata import load_image_data
from bnviz.images import sweep
from bnviz.images.training import standardise, validation_split
from bnviz.records.types import ParamError


@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.5])
def test_validation_split_is_stratified_and_fixed(fraction):
    labels = np.repeat(np.arange(10), [30, 31, 29, 40, 12, 33, 35, 30, 28, 37])
    held = validation_split(labels, fraction)
    for c in range(10):
        n = int(np.sum(labels == c))
        assert np.sum(held[labels == c]) == min(max(int(n * fraction), 1), n - 1)
    assert np.array_equal(held, validation_split(labels, fraction))  # every run, every lr
    assert not validation_split(labels, 0.0).any()


def test_standardise_holds_out_the_validation_images():
    data = load_image_data("digits", max_train=300)
    full = standardise(data, torch.device("cpu"))
    split = standardise(data, torch.device("cpu"), 0.2)
    assert full.x_val is None and split.x_val is not None
    assert len(split.y_train) + len(split.y_val) == len(full.y_train) == 300
    assert torch.equal(split.y_test, full.y_test)
    # standardised with the mean and std of the images it trains on (not the held-out ones)
    assert abs(float(split.x_train.mean())) < 1e-4
    assert abs(float(split.x_train.std(unbiased=False)) - 1) < 1e-3
    rows = {tuple(r.ravel().tolist()) for r in split.x_val.numpy()}
    assert not rows & {tuple(r.ravel().tolist()) for r in split.x_train.numpy()}


def _fake_run(job_type, params, ctx):
    """A stand-in experiment whose accuracies are known: validation accuracy peaks at
    lr 0.01 for zero bias and 0.1 for the BN initialisation; test accuracy is another
    function (so choosing on test would pick differently)."""
    peak = {"zero_bias": 0.01, "random_bias": 0.03, "folded": 0.003, "scale_only": 0.03,
            "bn_init": 0.1}
    for run in range(params["runs"]):
        for arm, best in peak.items():
            gap = abs(np.log10(params["lr"] / best))
            for epoch in (1, 2):
                ctx.metric({"arm": arm, "run": run, "epoch": epoch,
                            "val_accuracy": 0.9 - 0.1 * gap,
                            "test_accuracy": 0.5 + 0.1 * np.log10(params["lr"]) + 0.01 * run})


def test_each_arm_keeps_the_rate_best_on_validation(monkeypatch):
    monkeypatch.setattr(sweep, "run_experiment", _fake_run)
    result = sweep.lr_sweep("smart-init", {"dataset": "digits", "runs": 3, "epochs": 2,
                                           "validation": 0.2}, [0.1, 0.003, 0.01, 0.03],
                            torch.device("cpu"))
    assert result["lrs"] == [0.003, 0.01, 0.03, 0.1]
    arms = result["arms"]
    assert {a: arms[a]["lr"] for a in arms} == {"zero_bias": 0.01, "random_bias": 0.03,
                                                "folded": 0.003, "scale_only": 0.03,
                                                "bn_init": 0.1}
    for a in arms.values():
        assert a["selected_by"] == "validation"
        expected = [0.5 + 0.1 * np.log10(a["lr"]) + 0.01 * r for r in range(3)]
        assert a["finals"] == pytest.approx(expected)
        assert a["final"] == pytest.approx(np.mean(expected))
        assert a["std"] == pytest.approx(np.std(expected))


def test_without_validation_the_choice_says_test(monkeypatch):
    monkeypatch.setattr(sweep, "run_experiment", _fake_run)
    result = sweep.lr_sweep("smart-init", {"dataset": "digits", "runs": 2, "epochs": 2},
                            [0.01, 0.1], torch.device("cpu"))
    assert all(a["selected_by"] == "test" and a["lr"] == 0.1 for a in result["arms"].values())


def test_an_extended_grid_grows_until_no_arm_is_at_its_edge(monkeypatch):
    """Issue 44: a rate best at the grid's edge may not be the arm's best.  From [0.01, 0.03]
    the fake arms' peaks (0.003 to 0.1) need the grid doubled up and halved down three times;
    then every arm's choice is inside it, and each keeps its per-seed curves."""
    monkeypatch.setattr(sweep, "run_experiment", _fake_run)
    fixed = sweep.lr_sweep("smart-init", {"dataset": "digits", "runs": 3, "epochs": 2,
                                          "validation": 0.2}, [0.01, 0.03],
                           torch.device("cpu"))
    assert fixed["at_edge"] == sorted(fixed["arms"])  # every arm is at one of two rates
    result = sweep.lr_sweep("smart-init", {"dataset": "digits", "runs": 3, "epochs": 2,
                                           "validation": 0.2}, [0.01, 0.03],
                            torch.device("cpu"), extend=True)
    assert result["lrs"] == pytest.approx([0.00125, 0.0025, 0.005, 0.01, 0.03, 0.06, 0.12,
                                           0.24])
    assert result["at_edge"] == []
    assert {a: v["lr"] for a, v in result["arms"].items()} == pytest.approx(
        {"zero_bias": 0.01, "random_bias": 0.03, "folded": 0.0025, "scale_only": 0.03,
         "bn_init": 0.12})
    for a in result["arms"].values():
        assert np.array(a["curves"]).shape == (3, 2)
        assert [c[-1] for c in a["curves"]] == pytest.approx(a["finals"])


def test_an_extension_stops_after_its_limit_and_says_the_edge(monkeypatch):
    def far(job_type, params, ctx):  # every arm's validation accuracy grows with the rate
        for run in range(params["runs"]):
            for arm in ("zero_bias", "random_bias", "folded", "scale_only", "bn_init"):
                ctx.metric({"arm": arm, "run": run, "epoch": 1, "test_accuracy": 0.5,
                            "val_accuracy": min(params["lr"], 1.0)})

    monkeypatch.setattr(sweep, "run_experiment", far)
    result = sweep.lr_sweep("smart-init", {"dataset": "digits", "runs": 2, "epochs": 1,
                                           "validation": 0.2}, [0.01, 0.02],
                            torch.device("cpu"), extend=True)
    assert len(result["lrs"]) == 2 + MAX_LR_EXTENSIONS
    assert result["lrs"][-1] == pytest.approx(0.32)
    assert result["at_edge"] == sorted(result["arms"])


def test_extend_without_a_sweep_is_refused_in_one_line(capsysbinary):
    capsysbinary.readouterr()
    rc = main(["jobs", "run", "smart-init", "--extend-lrs"])
    captured = capsysbinary.readouterr()
    assert_one_error_line(rc, captured.out, captured.err.decode())


def test_a_real_sweep_on_digits_records_validation_accuracy(capsysbinary):
    rc = main(["jobs", "run", "smart-init", "--dataset", "digits", "--max-train", "200",
               "--epochs", "1", "--runs", "2", "--validation", "0.25", "--width", "4",
               "--lrs", "0.01,0.05", "--json"])
    out = json.loads(capsysbinary.readouterr().out)
    assert rc == 0 and out["lrs"] == [0.01, 0.05]
    for arm, a in out["arms"].items():
        per_lr = {s["lr"]: s["arms"][arm]["final_val"] for s in out["per_lr"]}
        assert a["val"] == max(per_lr.values()) and per_lr[a["lr"]] == a["val"]
        assert len(a["finals"]) == 2


@pytest.mark.parametrize("argv", [
    ["jobs", "run", "smart-init", "--lrs", "0.1,x"],
    ["jobs", "run", "smart-init", "--lrs", "0.1", "--lr", "0.1"],
    ["jobs", "run", "concentration", "--lrs", "0.1"],
    ["jobs", "run", "smart-init", "--lrs", "0.1", "--validation", "0.9"],
    ["jobs", "run", "smart-init", "--lrs", "0.1,50"],
])
def test_bad_sweeps_are_refused_in_one_line(capsysbinary, argv):
    capsysbinary.readouterr()
    rc = main(argv)
    captured = capsysbinary.readouterr()
    assert_one_error_line(rc, captured.out, captured.err.decode())


def test_sweep_refuses_a_type_that_does_not_train():
    with pytest.raises(ParamError, match="does not train"):
        sweep.lr_sweep("concentration", {}, [0.1], torch.device("cpu"))


def test_the_same_protocol_runs_on_cifar100_format_files(data_home, capsysbinary):
    """The paper's data format (CIFAR-100 pickles, here small files written by the test):
    the sweep holds out a validation split of a subset and chooses a rate per arm."""
    rc = main(["jobs", "run", "smart-init", "--dataset", "cifar100", "--max-train", "40",
               "--epochs", "1", "--runs", "2", "--validation", "0.25", "--width", "4",
               "--batch-size", "8", "--lrs", "0.01,0.1", "--json"])
    out = json.loads(capsysbinary.readouterr().out)
    assert rc == 0 and out["params"]["dataset"] == "cifar100"
    assert set(out["arms"]) == {"zero_bias", "random_bias", "folded", "scale_only", "bn_init"}
    assert all(a["selected_by"] == "validation" and a["lr"] in (0.01, 0.1)
               for a in out["arms"].values())
