"""The parameters of the image experiments (bnviz.images.params.check_params, through the
models of bnviz.params.jobs): defaults for each type, strings from the CLI and the page
converted, bad values refused with one line naming the flag, data sets that are missing said
where they were looked for, and work over the caps refused; a property test of check_params
on random values."""

from __future__ import annotations

import imagefiles
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from imagefiles import FOLDER

from bnviz.data.imagedata import STANDARD_DATASETS
from bnviz.images.networks import ARCHS
from bnviz.images.params import ARMS, JOB_TYPES, check_params
from bnviz.params.jobs import JOB_OPTIONS
from bnviz.records.types import ParamError

SPECS = {p.name: p for p in JOB_OPTIONS}
DIGITS_TRAIN, _ = imagefiles.digits_sizes()


def test_defaults_filled_for_each_type():
    for job_type in JOB_TYPES:
        out = check_params(job_type, {})
        assert set(out) == {p.name for p in JOB_OPTIONS if job_type in p.types}
        for name, value in out.items():
            assert value == SPECS[name].default
        # the shared parameters are every type's (concentration keeps, not uses, them)
        assert {"dataset", "arch", "epochs", "runs", "batch_size", "lr", "seed"} <= set(out)
        assert ("gpus" in out) == (job_type not in ("concentration", "landscape"))
        assert ("etas" in out) == ("measure_every" in out) == (job_type == "landscape")
        assert ("noise" in out) == (job_type == "jitter-noise")
        assert ("eps" in out) == (job_type == "concentration")


def test_cli_strings_are_converted(jobs_home):
    out = check_params("concentration", {"width": "5", "runs": " 3 ", "eps": "0.3,0.1,0.3",
                                         "images": "1e2", "samples": "8.0",
                                         "arch": "cnn", "dataset": " DIGITS "})
    assert out["width"] == 5 and type(out["width"]) is int
    assert out["runs"] == 3 and out["images"] == 100 and type(out["images"]) is int
    assert out["samples"] == 8 and type(out["samples"]) is int
    assert out["eps"] == (0.1, 0.3) and all(type(e) is float for e in out["eps"])
    assert out["arch"] == "cnn" and out["dataset"] == "digits"
    out = check_params("jitter-noise", {"lr": "0.01", "noise": "0", "epochs": 3.0,
                                        "eps": None, "seed": ""})
    assert out["lr"] == 0.01 and out["noise"] == 0.0 and type(out["noise"]) is float
    assert out["epochs"] == 3 and type(out["epochs"]) is int
    assert out["seed"] == 0  # empty means the default
    # None is "not given" (argparse's default for a flag left out): the default is used
    assert check_params("smart-init", {"runs": None, "dataset": None}) == \
        check_params("smart-init", {})
    assert check_params("concentration", {"eps": [0.5, 0.05]})["eps"] == (0.05, 0.5)


REJECTED = [
    ("smart-init", {"epochs": "2.5"}, "--epochs", "enter a whole number from 1 to 1000"),
    ("smart-init", {"epochs": 2.5}, "--epochs", "enter a whole number from 1 to 1000"),
    ("smart-init", {"lr": float("nan")}, "--lr", "enter a number from 1e-06 to 10, got nan"),
    ("smart-init", {"lr": "nan"}, "--lr", "enter a number from 1e-06 to 10, got 'nan'"),
    ("smart-init", {"lr": float("inf")}, "--lr", "enter a number from 1e-06 to 10, got inf"),
    ("smart-init", {"max_train": "-inf"}, "--max-train", "from 0 to 10000000, got '-inf'"),
    ("smart-init", {"lr": -0.1}, "--lr", "enter a number from 1e-06 to 10, got -0.1"),
    ("smart-init", {"seed": -1}, "--seed", "from 0 to 2147483647, got -1"),
    ("jitter-noise", {"noise": "-0.1"}, "--noise", "enter a number from 0 to 10"),
    ("smart-init", {"max_train": -5}, "--max-train", "from 0 to 10000000, got -5"),
    ("smart-init", {"width": 513}, "--width", "from 1 to 512, got 513"),
    ("smart-init", {"epochs": 1001}, "--epochs", "from 1 to 1000, got 1001"),
    ("smart-init", {"runs": 51}, "--runs", "from 1 to 50, got 51"),
    ("smart-init", {"runs": 0}, "--runs", "from 1 to 50, got 0"),
    ("concentration", {"images": 10_001}, "--images", "from 1 to 10000"),
    ("concentration", {"samples": 1}, "--samples", "from 2 to 4096"),
    ("concentration", {"eps": "0.1,101"}, "--eps", "numbers (each from 1e-06 to 100)"),
    ("concentration", {"eps": "0.1,0"}, "--eps", "numbers (each from 1e-06 to 100)"),
    ("concentration", {"eps": "0.1,,0.3"}, "--eps", "comma-separated numbers"),
    ("concentration", {"eps": [0.1, None]}, "--eps", "comma-separated numbers"),
    ("concentration", {"eps": ",".join(["0.1"] * 17)}, "--eps", "1 to 16"),
    ("concentration", {"eps": []}, "--eps", "1 to 16"),
    ("smart-init", {"epochs": True}, "--epochs", "whole number from 1 to 1000, got True"),
    ("smart-init", {"lr": False}, "--lr", "enter a number from 1e-06 to 10, got False"),
    ("concentration", {"eps": [True]}, "--eps", "comma-separated numbers"),
    ("smart-init", {"width": "five"}, "--width", "whole number from 1 to 512, got 'five'"),
    ("smart-init", {"width": [4]}, "--width", "whole number from 1 to 512, got [4]"),
    ("smart-init", {"width": 10**400}, "--width", "whole number from 1 to 512"),
    ("smart-init", {"arch": "vgg"}, "--arch", "choose one of resnet9, cnn, resnet50"),
    ("smart-init", {"dataset": 3}, "--dataset", "enter a data set name"),
    ("smart-init", {"dataset": "   "}, "--dataset", "enter a data set name"),
    ("smart-init", {"dataset": "../x"}, "--dataset", "unknown dataset"),
    ("smart-init", {"dataset": "/etc/passwd"}, "--dataset", "unknown dataset"),
    ("smart-init", {"dataset": "folder:../x"}, "--dataset", "not a folder name"),
    ("smart-init", {"dataset": "folder:a/b"}, "--dataset", "not a folder name"),
    ("smart-init", {"dataset": "folder:.."}, "--dataset", "not a folder name"),
    ("smart-init", {"dataset": "imagenet"}, "--dataset", "unknown dataset"),
    ("smart-init", {"max_train": 1}, "--max-train", "BN needs a batch of two"),
]


@pytest.mark.parametrize("job_type,raw,flag,words", REJECTED)
def test_bad_values_are_refused_naming_the_field(jobs_home, job_type, raw, flag, words):
    """The API's and the page's field name (the command line puts its flag there instead:
    bnviz.cli.jobs.flag_message, tests/jobs/test_jobs.py)."""
    with pytest.raises(ParamError) as info:
        check_params(job_type, raw)
    message = str(info.value)
    assert message.startswith(flag.removeprefix("--").replace("-", "_") + ":"), message
    assert words in message
    assert "\n" not in message


def test_unknown_names_and_types_are_refused():
    with pytest.raises(ParamError, match=r"unknown parameter 'learning_rate'.*known: .*lr"):
        check_params("smart-init", {"learning_rate": 0.1})
    with pytest.raises(ParamError, match=r"unknown job type 'smart_init'.*smart-init"):
        check_params("smart_init", {})
    with pytest.raises(ParamError, match="mapping"):
        check_params("smart-init", [("epochs", 2)])


def test_unknown_names_of_mixed_types_are_refused():
    with pytest.raises(ParamError):
        check_params("smart-init", {1: 2, "x": 3})


def test_missing_data_sets_say_where_they_looked(jobs_home):
    data = jobs_home / "data"
    for name, folder in (("cifar10", "cifar-10-batches-py"), ("cifar100", "cifar-100-python"),
                         ("svhn", "svhn")):
        with pytest.raises(ParamError) as info:
            check_params("smart-init", {"dataset": name})
        message = str(info.value)
        assert message.startswith("dataset:") and "not found" in message
        assert str(data / folder) in message and "download" in message
    with pytest.raises(ParamError) as info:
        check_params("concentration", {"dataset": "folder:nothere"})
    assert str(data / "nothere" / "train") in str(info.value)
    # one file short is still missing
    imagefiles.write_cifar10(data)
    (data / "cifar-10-batches-py" / "data_batch_4").unlink()
    with pytest.raises(ParamError, match="CIFAR-10 not found"):
        check_params("smart-init", {"dataset": "cifar10"})


def test_present_data_sets_are_accepted(data_home):
    for name, normalised in (("cifar10", "cifar10"), ("CIFAR100", "cifar100"),
                             (" svhn", "svhn"), (f"folder:{FOLDER}", f"folder:{FOLDER}")):
        assert check_params("affine-ablation", {"dataset": name})["dataset"] == normalised


def test_work_over_the_cap_is_refused(data_home, monkeypatch):
    # the image-count caps, whatever the hours (their cap: tests/params/test_jobcost.py)
    monkeypatch.setenv("BNVIZ_JOB_MAX_HOURS", str(10**6))
    # training: epochs x runs x arms x training images <= 2e9 (max_train 1e7, 5 arms)
    ok = {"max_train": 10_000_000, "runs": 1}
    assert check_params("smart-init", ok | {"epochs": 40})["epochs"] == 40
    with pytest.raises(ParamError, match=r"over the cap.*epochs, runs or max_train"):
        check_params("smart-init", ok | {"epochs": 41})
    # 2 arms: 2.5 times as many epochs fit
    assert check_params("jitter-noise", ok | {"epochs": 100})["epochs"] == 100
    with pytest.raises(ParamError, match="over the cap"):
        check_params("jitter-noise", ok | {"epochs": 101})
    # without max_train, the full size of the data set counts (CIFAR-10: 50000 images)
    assert check_params("smart-init", {"dataset": "cifar10", "epochs": 1000, "runs": 8})
    with pytest.raises(ParamError, match="over the cap"):
        check_params("smart-init", {"dataset": "cifar10", "epochs": 1000, "runs": 9})
    # concentration: images x samples x radii x runs x 6 <= 2e8
    big = {"images": 10_000, "runs": 1, "eps": "0.1"}
    assert check_params("concentration", big | {"samples": 3333})["samples"] == 3333
    with pytest.raises(ParamError, match=r"forward passes is over the cap"):
        check_params("concentration", big | {"samples": 3334})


def _finite_numbers():
    return st.one_of(st.integers(-10, 10**8), st.floats(-1e3, 1e8),
                     st.sampled_from([0, 1, 2, 5, 64, 0.05, 0.15, 1e-7, 2**31, 10**7]))


VALUES = st.one_of(
    st.none(), st.just(""), st.booleans(), _finite_numbers(),
    st.floats(allow_nan=True, allow_infinity=True),
    _finite_numbers().map(str), st.text(max_size=8),
    st.lists(st.one_of(_finite_numbers(), st.none(), st.text(max_size=3)), max_size=18),
    st.lists(st.floats(1e-6, 100.0), min_size=1, max_size=5).map(
        lambda v: ",".join(map(repr, v))),
    st.sampled_from(ARCHS + STANDARD_DATASETS + ("folder:x", "../x", "Digits", "resnet", "5")),
)


@pytest.fixture(scope="module")
def cifar_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("bnviz-data")
    imagefiles.write_cifar10(root)
    return root


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_type=st.sampled_from(JOB_TYPES),
       raw=st.dictionaries(st.sampled_from([p.name for p in JOB_OPTIONS]), VALUES, max_size=8))
def test_check_params_accepts_in_range_or_refuses_clearly(cifar_data, job_type, raw):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BNVIZ_DATA", str(cifar_data))
        try:
            out = check_params(job_type, raw)
        except ParamError as exc:
            assert str(exc) and "\n" not in str(exc)
            return
        assert check_params(job_type, out) == out  # a checked set stays as it is
    used = [p for p in JOB_OPTIONS if job_type in p.types]
    assert set(out) == {p.name for p in used}
    for spec in used:
        value = out[spec.name]
        if raw.get(spec.name) is None or raw.get(spec.name) == "":
            assert value == spec.default
        if spec.kind == "int":
            assert type(value) is int and spec.lo <= value <= spec.hi
        elif spec.kind == "float":
            assert type(value) is float and spec.lo <= value <= spec.hi
        elif spec.kind == "floats":
            assert 1 <= len(value) <= 16 and list(value) == sorted(set(value))
            assert all(type(v) is float and spec.lo <= v <= spec.hi for v in value)
        elif spec.kind == "choice":
            assert value in spec.choices
    assert out["dataset"] in ("digits", "cifar10")
    arms = len(ARMS[job_type])
    if job_type == "concentration":
        assert out["images"] * out["samples"] * len(out["eps"]) * out["runs"] * arms * 2 <= 2e8
    else:
        n = out["max_train"] or {"digits": DIGITS_TRAIN, "cifar10": 50_000}[out["dataset"]]
        assert out["epochs"] * out["runs"] * arms * n <= 2e9


def test_a_parameter_of_another_type_is_refused():
    with pytest.raises(ParamError, match=r"^noise is not a parameter of smart-init"):
        check_params("smart-init", {"noise": 0.2})
    with pytest.raises(ParamError, match=r"^gpus is not a parameter of concentration"):
        check_params("concentration", {"gpus": 2})
    assert check_params("concentration", {"epochs": 3})["epochs"] == 3  # shared: kept
