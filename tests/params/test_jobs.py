"""The image experiments' parameter models (bnviz.params.jobs): each side of each bound, each
side of each work cap, the data set names, messages that name the CLI flag, junk from
hypothesis, and the flags and form controls generated from the models (JOB_OPTIONS)."""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest
from bounds import check_bounds
from fuzzing import FUZZ, JUNK, assert_clear
from hypothesis import given
from hypothesis import strategies as st

from bnviz.cli.jobs import add_commands
from bnviz.params import IMAGE_JOB_PARAMS, InputError, parse
from bnviz.params.jobs import (
    JOB_FLAGS,
    JOB_OPTIONS,
    ConcentrationParams,
    JitterNoiseParams,
    LandscapeJobParams,
    SmartInitParams,
)
from bnviz.records.types import IMAGE_JOB_TYPES

#: name -> (lowest, highest, whole, the model that has it): the numbers a user sees in
#: ``bnviz jobs submit --help`` and on the jobs page (a changed bound fails here).
BOUNDS = {
    "width": (1, 512, True, SmartInitParams), "epochs": (1, 1000, True, SmartInitParams),
    "runs": (1, 50, True, SmartInitParams), "batch_size": (2, 4096, True, SmartInitParams),
    "lr": (1e-6, 10.0, False, SmartInitParams), "seed": (0, 2**31 - 1, True, SmartInitParams),
    "max_train": (0, 10_000_000, True, SmartInitParams),
    "image_size": (8, 512, True, SmartInitParams), "gpus": (1, 64, True, SmartInitParams),
    "noise": (0.0, 10.0, False, JitterNoiseParams),
    "images": (1, 10_000, True, ConcentrationParams),
    "samples": (2, 4096, True, ConcentrationParams),
    "etas": (2, 16, True, LandscapeJobParams),
    "measure_every": (1, 10_000, True, LandscapeJobParams),
}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_bounds(name):
    lo, hi, whole, model = BOUNDS[name]
    check_bounds(model, name, lo, hi, whole)


def test_each_type_has_its_model_and_arms():
    assert tuple(IMAGE_JOB_PARAMS) == IMAGE_JOB_TYPES == (
        "smart-init", "concentration", "jitter-noise", "affine-ablation", "landscape")
    shared = {"dataset", "arch", "width", "epochs", "runs", "batch_size", "lr", "seed",
              "max_train", "image_size"}
    own = {"smart-init": {"gpus", "validation"}, "concentration": {"images", "samples", "eps"},
           "jitter-noise": {"gpus", "noise"}, "affine-ablation": {"gpus"},
           "landscape": {"etas", "measure_every"}}
    for job_type, model in IMAGE_JOB_PARAMS.items():
        assert model.job_type == job_type
        assert {f.name for f in fields(model)} == shared | own[job_type]
        assert model().arms == {"smart-init": 5, "concentration": 3, "jitter-noise": 2,
                                "affine-ablation": 2, "landscape": 2}[job_type]


def test_max_train_is_all_or_a_batch_of_two():
    assert SmartInitParams(max_train=0).max_train == 0
    assert SmartInitParams(max_train=2).max_train == 2
    with pytest.raises(InputError, match=r"^--max-train: enter 0 \(all\) or a whole number "
                                         r"from 2 to 10000000 \(BN needs a batch of two\), got 1$"):
        parse(SmartInitParams, {"max_train": "1"}, JOB_FLAGS)


def test_eps_is_a_set_of_radii():
    eps = parse(ConcentrationParams, {"eps": " 0.3, 0.1 ,0.3"}).eps
    assert eps == (0.1, 0.3) and all(type(e) is float for e in eps)
    assert parse(ConcentrationParams, {"eps": 0.5}).eps == (0.5,)  # a lone number
    assert ConcentrationParams(eps=[1e-6, 100]).eps == (1e-6, 100.0)  # both ends
    assert len(ConcentrationParams(eps=[0.01 * k for k in range(1, 17)]).eps) == 16
    bad = ["1e-7", "100.0001", "0", "-0.1", "", ",", "0.1,,0.3", "x", [], [0.1, None],
           [True], [0.01 * k for k in range(1, 18)], "nan", "inf", None, {"a": 1}]
    for raw in bad:
        with pytest.raises(InputError) as info:
            parse(ConcentrationParams, {"eps": raw}, JOB_FLAGS)
        assert str(info.value).startswith("--eps: enter 1 to 16 comma-separated numbers (each "
                                          "from 1e-06 to 100), got "), raw
    with pytest.raises(InputError, match=r"^eps: enter 1 to 16 numbers"):
        ConcentrationParams(eps="0.1")  # code passes numbers, not a text


@pytest.mark.parametrize(("raw", "want"), [
    ("digits", "digits"), (" DIGITS ", "digits"), ("CIFAR100", "cifar100"),
    ("folder:imgs", "folder:imgs"), ("Folder:a.b-c_d", "folder:a.b-c_d")])
def test_data_set_names_are_normalised(raw, want):
    assert parse(SmartInitParams, {"dataset": raw}).dataset == want


@pytest.mark.parametrize(("raw", "words"), [
    (3, "enter a data set name (digits, glyphs, cifar10, cifar100, svhn or folder:NAME), got 3"),
    ("  ", "enter a data set name"), (None, "enter a data set name"),
    ("imagenet", "unknown dataset 'imagenet'"), ("../x", "unknown dataset"),
    ("folder:../x", "not a folder name"), ("folder:..", "not a folder name"),
    ("folder:", "not a folder name")])
def test_bad_data_set_names_are_refused(raw, words):
    with pytest.raises(InputError) as info:
        parse(SmartInitParams, {"dataset": raw}, JOB_FLAGS)
    assert str(info.value).startswith("--dataset: ") and words in str(info.value)


# --------------------------------------------------------------------------- work caps


def test_training_cap_each_side():
    # epochs x runs x 5 arms x 10^7 images <= 2e9
    big = {"max_train": 10_000_000, "runs": 1}
    assert SmartInitParams(**big, epochs=40).epochs == 40
    with pytest.raises(InputError, match=r"^epochs x runs x 5 arms x training images = "
                                         r"2\.05e\+09 is over the cap of 2e\+09: lower "
                                         r"epochs, runs or max_train$"):
        SmartInitParams(**big, epochs=41)
    # 2 arms: 100 epochs fit, 101 do not
    assert JitterNoiseParams(**big, epochs=100).epochs == 100
    with pytest.raises(InputError, match="over the cap"):
        JitterNoiseParams(**big, epochs=101)
    # without max_train the data set's own training images count (CIFAR-10: 50000)
    assert SmartInitParams(dataset="cifar10", epochs=1000, runs=8).train_size == 50_000
    with pytest.raises(InputError, match="over the cap"):
        SmartInitParams(dataset="cifar10", epochs=1000, runs=9)
    # an image folder counts as the most it may hold (200000)
    assert SmartInitParams(dataset="folder:x", epochs=400, runs=5).train_size == 200_000
    with pytest.raises(InputError, match="over the cap"):
        SmartInitParams(dataset="folder:x", epochs=401, runs=5)


def test_landscape_cap_counts_the_measurements():
    # 2 arms x 10^7 images x (1 + (4 + 12) / 16) = 4e7 per epoch: 50 epochs is the cap
    big = {"max_train": 10_000_000, "runs": 1, "etas": 4, "measure_every": 16}
    assert LandscapeJobParams(**big, epochs=50).epochs == 50
    with pytest.raises(InputError, match="over the cap"):
        LandscapeJobParams(**big, epochs=51)


def test_concentration_cap_each_side():
    # images x samples x radii x runs x 3 arms x 2 kinds <= 2e8
    big = {"images": 10_000, "runs": 1, "eps": (0.1,)}
    assert ConcentrationParams(**big, samples=3333).samples == 3333
    with pytest.raises(InputError, match=r"^images x samples x eps values x runs x 6 = "
                                         r"2e\+08 forward passes is over the cap of 2e\+08$"):
        ConcentrationParams(**big, samples=3334)
    with pytest.raises(InputError, match="over the cap"):  # each radius counts
        ConcentrationParams(images=10_000, runs=1, samples=1667, eps=(0.1, 0.2))
    # epochs do not count: concentration measures networks at initialisation
    assert ConcentrationParams(epochs=1000, runs=50, images=10, samples=2).epochs == 1000


# --------------------------------------------------------------------------- junk


@FUZZ
@given(job_type=st.sampled_from(IMAGE_JOB_TYPES),
       raw=st.dictionaries(st.sampled_from(sorted(JOB_FLAGS)), JUNK, max_size=4))
def test_junk_gives_a_model_or_one_line_naming_the_flag(job_type, raw):
    model = IMAGE_JOB_PARAMS[job_type]
    try:
        got = parse(model, raw, JOB_FLAGS)
    except InputError as exc:
        text = assert_clear(str(exc))
        assert text.split(":")[0] in JOB_FLAGS.values() or "over the cap" in text, text
        return
    assert type(got) is model
    for option in JOB_OPTIONS:
        value = getattr(got, option.name, None)
        if option.kind in ("int", "float") and value is not None:
            assert option.lo <= value <= option.hi


# --------------------------------------------------------------------------- flags, form


def test_options_are_the_models_fields():
    """Every field of every model once, with its model's default, help text and bounds."""
    by_name = {option.name: option for option in JOB_OPTIONS}
    assert len(by_name) == len(JOB_OPTIONS)
    for job_type, model in IMAGE_JOB_PARAMS.items():
        for f in fields(model):
            option = by_name[f.name]
            assert job_type in option.types and option.default == f.default and option.help
    for name, (lo, hi, whole, _model) in BOUNDS.items():
        option = by_name[name]
        assert (option.lo, option.hi, option.kind) == (lo, hi, "int" if whole else "float")
    assert by_name["eps"].kind == "floats" and (by_name["eps"].lo, by_name["eps"].hi) == (
        1e-6, 100.0)
    assert by_name["arch"].kind == "choice" and by_name["arch"].choices == (
        "resnet9", "cnn", "resnet50")
    assert by_name["dataset"].kind == "text" and by_name["dataset"].default == "digits"
    assert by_name["noise"].types == ("jitter-noise",)
    assert by_name["gpus"].types == ("smart-init", "jitter-noise", "affine-ablation")
    assert [o.flag for o in JOB_OPTIONS][:3] == ["--dataset", "--arch", "--width"]
    assert by_name["max_train"].flag == "--max-train"


def test_submit_flags_are_made_from_the_options(monkeypatch, capsys):
    parser = argparse.ArgumentParser(prog="bnviz")
    add_commands(parser.add_subparsers(dest="command"), argparse.ArgumentParser)
    args = parser.parse_args(["jobs", "submit", "smart-init"])
    assert {o.name for o in JOB_OPTIONS} <= set(vars(args))
    assert all(getattr(args, o.name) is None for o in JOB_OPTIONS)  # None: the default
    given = parser.parse_args(["jobs", "submit", "concentration", "--eps", "0.1,0.2",
                               "--max-train", "5"])
    assert (given.eps, given.max_train) == ("0.1,0.2", "5")  # the model reads the text
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping inside a help text
    with pytest.raises(SystemExit):
        parser.parse_args(["jobs", "submit", "--help"])
    entries: dict[str, str] = {}  # flag -> its help text (on its line or the next)
    for line in capsys.readouterr().out.splitlines():
        if line.strip().startswith("--"):
            flag, _, text = line.strip().partition(" ")
            entries[flag] = text.split("  ", 1)[1].strip() if "  " in text else ""
        elif line.startswith("    ") and entries:
            entries[flag] = (entries[flag] + " " + line.strip()).strip()
    for option in JOB_OPTIONS:
        assert entries[option.flag].startswith(option.help + " (default "), option.flag
    assert entries["--eps"].endswith("(default 0.01,0.03,0.1,0.3; concentration)")
    assert entries["--epochs"] == ("training epochs (concentration: unused, it measures the "
                                   "network at initialisation) (default 5)")
