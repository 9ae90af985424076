"""The image jobs' hours cap (issue 15, item 5; bnviz.params.jobcost): the cost model counts
what the real networks do (against forward hooks on bnviz.images.networks' models), the
estimate grows with every parameter that adds work, and a job over BNVIZ_JOB_MAX_HOURS is
refused with one line, before it is stored, by the parameter layer that the command line,
the jobs page and the HTTP API share."""

from __future__ import annotations

from dataclasses import asdict

import imagefiles
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from jobruns import LONG_PARAMS

from bnviz.data.imagedata import count_folder_images
from bnviz.images.networks import build_model, norm_layers
from bnviz.images.params import check_params
from bnviz.params import parse
from bnviz.params.jobcost import RATES, DataFacts, data_facts, job_seconds, network_cost
from bnviz.params.jobs import ARMS, IMAGE_JOB_PARAMS
from bnviz.records.types import ParamError

#: A job that passed the image-count caps and asks for days of a 2-core machine.
DAYS = {"dataset": "cifar100", "arch": "resnet9", "width": 64, "epochs": 100, "runs": 2}
#: A job over the default cap of 2 hours on data every machine has (about 5 hours).
OVER = {"dataset": "digits", "width": 64, "epochs": 1000, "runs": 8}


def _counted(arch: str, channels: int, size: int, width: int, classes: int):
    """(multiply-adds, conv output elements, conv layers, weight layers) of one image through
    the real model, counted by forward hooks."""
    model = build_model(arch, channels, classes, size, "zero_bias", width=width).eval()
    seen = {"macs": 0, "elements": 0, "convs": 0, "weights": 0, "peak": 0}

    def conv_hook(module, inputs, out) -> None:
        per_image = out[0].numel()
        k = module.kernel_size[0] * module.kernel_size[1]
        seen["macs"] += per_image * module.in_channels // module.groups * k
        seen["elements"] += per_image
        seen["peak"] = max(seen["peak"], per_image)
        seen["convs"] += 1
        seen["weights"] += 1

    def linear_hook(module, inputs, out) -> None:
        seen["macs"] += module.in_features * module.out_features
        seen["weights"] += 1

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(conv_hook)
        elif isinstance(m, torch.nn.Linear):
            m.register_forward_hook(linear_hook)
    with torch.no_grad():
        model(torch.zeros(1, channels, size, size))
    return seen, len(norm_layers(model))


@pytest.mark.parametrize(("arch", "channels", "size", "width", "classes"), [
    ("resnet9", 1, 8, 4, 10), ("resnet9", 3, 32, 16, 100), ("resnet9", 3, 9, 3, 7),
    ("resnet9", 3, 3, 2, 5), ("cnn", 1, 8, 24, 10), ("cnn", 3, 32, 96, 10),
    ("cnn", 3, 64, 8, 1000), ("cnn", 3, 37, 5, 3), ("resnet50", 3, 32, 4, 10),
    ("resnet50", 1, 8, 2, 10), ("resnet50", 3, 128, 2, 1000), ("resnet50", 3, 70, 3, 4),
])
def test_network_cost_counts_what_the_model_does(arch, channels, size, width, classes):
    seen, norms = _counted(arch, channels, size, width, classes)
    cost = network_cost(arch, channels, size, width, classes)
    assert cost.macs == seen["macs"]
    assert cost.elements == seen["elements"]
    assert cost.norms == norms == seen["convs"]
    assert cost.weights == seen["weights"]
    assert cost.prefix[-1][1] == seen["elements"]
    # the memory estimate's counts: every trainable entry of the model, and its largest layer
    model = build_model(arch, channels, classes, size, "zero_bias", width=width)
    assert cost.parameters == sum(p.numel() for p in model.parameters())
    assert cost.peak == seen["peak"]
    assert all(a < b for (a, _), (b, _) in zip(cost.prefix, cost.prefix[1:], strict=False))


@settings(max_examples=40, deadline=None)
@given(job_type=st.sampled_from(sorted(IMAGE_JOB_PARAMS)), field=st.sampled_from(
    ["epochs", "runs", "width", "images", "samples", "etas"]))
def test_more_work_costs_more(job_type, field):
    """Every parameter that adds work raises the estimate (and lowering measure_every or
    batch_size does not lower it)."""
    base = check_params(job_type, {"epochs": 2, "runs": 1, "width": 4, "max_train": 500})
    if field not in base or (job_type == "concentration" and field == "epochs"):
        return
    modes = [mode for mode, _ in ARMS[job_type].values()]
    more = {**base, field: base[field] * 2}
    assert job_seconds(job_type, more, modes) > job_seconds(job_type, base, modes)
    if "measure_every" in base:
        denser = {**base, "measure_every": 1}
        assert job_seconds(job_type, denser, modes) > job_seconds(job_type, base, modes)


def test_bigger_data_costs_more():
    small, big = data_facts("cifar10", max_train=1000), data_facts("cifar10")
    assert (small.train, big.train, big.test) == (1000, 50_000, 10_000)
    params = check_params("smart-init", {"dataset": "digits"})
    modes = [mode for mode, _ in ARMS["smart-init"].values()]
    assert job_seconds("smart-init", params, modes, big) > \
        job_seconds("smart-init", params, modes, small)
    # without the test set (evaluated every epoch), 50 times the training images is about
    # 50 times the seconds, less a job's start
    no_test = [DataFacts(3, 32, 10, n, 0) for n in (1000, 50_000)]
    ratio = job_seconds("smart-init", params, modes, no_test[1]) / \
        job_seconds("smart-init", params, modes, no_test[0])
    assert 25 < ratio <= 50


def test_a_job_of_days_is_estimated_so():
    modes = [mode for mode, _ in ARMS["smart-init"].values()]
    params = asdict(parse(IMAGE_JOB_PARAMS["smart-init"], DAYS))
    assert job_seconds("smart-init", params, modes) > 24 * 3600


def test_a_long_job_is_refused_with_one_line():
    with pytest.raises(ParamError) as info:
        check_params("smart-init", OVER)
    message = str(info.value)
    assert "\n" not in message
    assert "hours" in message and "BNVIZ_JOB_MAX_HOURS" in message and "lower epochs" in message
    hours = float(message.split("about ")[1].split(" hours")[0].replace(",", ""))
    assert hours > 2


@pytest.mark.parametrize("job_type", sorted(IMAGE_JOB_PARAMS))
def test_defaults_and_the_test_suites_long_job_pass(job_type):
    check_params(job_type, {})
    check_params("smart-init", dict(LONG_PARAMS))


def test_the_cap_is_the_setting(monkeypatch):
    """A lower cap refuses the default job; a higher one lets the long one through."""
    monkeypatch.setenv("BNVIZ_JOB_MAX_HOURS", "0.001")
    with pytest.raises(ParamError, match="over the cap of 0.001 hours"):
        check_params("smart-init", {})
    monkeypatch.setenv("BNVIZ_JOB_MAX_HOURS", "100")
    check_params("smart-init", OVER)


def test_an_image_folder_is_counted_by_its_files(tmp_path, monkeypatch):
    """A folder's estimate uses its own images (counted, not decoded), not the most a
    folder may hold: three times the images, more than twice the seconds (and at most three
    times: optimiser steps are per whole mini-batch)."""
    monkeypatch.setenv("BNVIZ_DATA", str(tmp_path))
    imagefiles.write_folder(tmp_path, "small", per_class=6)
    imagefiles.write_folder(tmp_path, "large", per_class=18)
    (tmp_path / "large" / "train" / "n01440764" / "notes.txt").write_text("not an image")
    assert count_folder_images("folder:small") == (18, 9, 3)
    assert count_folder_images("folder:large") == (54, 27, 3)
    modes = [mode for mode, _ in ARMS["smart-init"].values()]
    small = check_params("smart-init", {"dataset": "folder:small", "image_size": 16})
    seconds = [job_seconds("smart-init", small, modes,
                           data_facts(f"folder:{name}", 16, 0, count_folder_images(
                               f"folder:{name}"))) - RATES.start for name in ("small", "large")]
    assert 2 < seconds[1] / seconds[0] <= 3.0001  # less a job's start; steps are whole
    monkeypatch.setenv("BNVIZ_JOB_MAX_HOURS", "0.0001")
    with pytest.raises(ParamError, match="BNVIZ_JOB_MAX_HOURS"):
        check_params("smart-init", {"dataset": "folder:large", "image_size": 16})


def test_the_cli_refuses_before_storing(tmp_home, capsys):
    from bnviz.cli import main
    from bnviz.jobs import list_jobs

    args = ["jobs", "submit", "smart-init", "--dataset", "digits", "--width", "64",
            "--epochs", "1000", "--runs", "8"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "BNVIZ_JOB_MAX_HOURS" in err
    assert list_jobs() == []


# ---- memory (issue 30) ---------------------------------------------------------------------
#: The probe's job: 1.5 billion weights (resnet50 at width 512), about 19 GB to train.
HUGE = {"dataset": "digits", "arch": "resnet50", "width": 512, "epochs": 1, "runs": 1}


def test_a_job_over_the_memory_cap_is_refused_before_it_is_stored(tmp_home, monkeypatch,
                                                                   capsys):
    from bnviz.cli import main
    from bnviz.jobs import list_jobs

    monkeypatch.setenv("BNVIZ_JOB_MAX_GB", "16")
    with pytest.raises(ParamError, match=r"^this job would need about 19\.\d GB of memory "
                                         r"\(estimated before any work\), over the cap of 16 GB "
                                         r"\(BNVIZ_JOB_MAX_GB\): lower width"):
        check_params("smart-init", HUGE)
    args = ["jobs", "submit", "smart-init", *[f"--{k}={v}" for k, v in HUGE.items()]]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "BNVIZ_JOB_MAX_GB" in err
    assert list_jobs() == []
    # the same job at width 64 fits, and the cap is the setting's
    assert check_params("smart-init", dict(HUGE, width=64))["width"] == 64
    monkeypatch.setenv("BNVIZ_JOB_MAX_GB", "0.1")
    with pytest.raises(ParamError, match="BNVIZ_JOB_MAX_GB"):
        check_params("smart-init", {})


def test_the_api_refuses_it_with_the_estimate(jobs_home, monkeypatch):
    from bnviz.web import app as dashboard

    monkeypatch.setenv("BNVIZ_JOB_MAX_GB", "16")
    r = dashboard.server.test_client().post("/api/jobs", json={"type": "smart-init",
                                                               "params": HUGE})
    assert r.status_code in (400, 422) and "GB of memory" in r.get_json()["error"]


def test_memory_grows_with_what_a_job_holds():
    from bnviz.params.jobcost import job_memory_bytes

    base = {"dataset": "digits", "arch": "resnet9", "width": 16, "batch_size": 64}
    one = job_memory_bytes("smart-init", base)
    for more in ({"width": 64}, {"batch_size": 4096}, {"dataset": "glyphs"}, {"gpus": 2}):
        assert job_memory_bytes("smart-init", base | more) > one, more
    # two DDP processes hold twice one
    assert job_memory_bytes("smart-init", base | {"gpus": 2}) == pytest.approx(2 * one)

