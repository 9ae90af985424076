"""One route per computation (issue 43), the slice's part: ``bnviz slice`` and the /slice
page's ``slice`` job fill one model (:class:`bnviz.params.slice.SliceSetup`), with one name
and one default per setting, and cut through one function
(:func:`bnviz.slices.setup.slice_networks`): the same values give the same partitions."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from kept_jobs import kept_job

from bnviz.cli import build_parser, main
from bnviz.params.slice import SlicePageParams, SliceSetup
from bnviz.records.types import RecordingContext
from bnviz.slices import setup
from bnviz.slices.job import SLICE_JOB


def test_every_flag_is_a_field_of_the_one_model_with_its_default():
    """Each setting of the model is the command's flag of the same name, with the same
    default; the page's model is the same model (its fields, its names, its defaults), but
    for its own region cap."""
    parser = build_parser("slice")
    sub = next(a for a in parser._actions if hasattr(a, "choices") and a.choices
               and "slice" in a.choices).choices["slice"]
    flags = {a.dest: a for a in sub._actions}
    model = {f.name: f.default for f in dataclasses.fields(SliceSetup)}
    for name, default in model.items():
        assert name in flags, f"no flag --{name.replace('_', '-')}"
        assert flags[name].option_strings == ["--" + name.replace("_", "-")]
        # the network's source, and --data (a job's network is cut on its own data set), are
        # given or not (None): the model's default
        assert flags[name].default == (None if name in ("job", "data") else default), name
    page = {f.name: f.default for f in dataclasses.fields(SlicePageParams)}
    assert set(page) == set(model) and issubclass(SlicePageParams, SliceSetup)
    assert {n for n in model if page[n] != model[n]} == {"max_regions"}
    args = parser.parse_args(["slice", "--model", "net.onnx"])
    from bnviz.cli.slice import slice_setup

    assert slice_setup(args) == SliceSetup(model="net.onnx")


@pytest.mark.parametrize("bn", ["eval", "train"])
def test_the_command_and_the_job_cut_through_one_function_alike(jobs_home, tmp_path, capsys,
                                                                monkeypatch, bn):
    """The same values, once as flags and once as the page's job: both reach
    ``slice_networks`` with a SliceSetup of those values, and the partitions (every layer's
    regions, vertices and codes, the decision boundary, the plane) are the same arrays."""
    job_id = kept_job()
    seen: list[SliceSetup] = []
    original = setup.slice_networks

    def spy(params, *args, **kwargs):
        seen.append(params)
        return original(params, *args, **kwargs)

    monkeypatch.setattr(setup, "slice_networks", spy)
    values = {"job": job_id, "arms": "bn_init", "images": "3,4,5", "extent": 0.1, "bn": bn,
              "batches": 2 if bn == "train" else 1, "batch_size": 16, "seed": 3}
    flags = [w for name, value in values.items()
             for w in ("--" + name.replace("_", "-"), str(value))]
    geometry = tmp_path / "g.npz"
    code = main(["slice", *flags, "--geometry", str(geometry), "--json", "--device", "cpu"])
    out = capsys.readouterr()
    assert code == 0, out.err
    command = json.loads(out.out)
    params = SLICE_JOB.check(values)
    ctx = RecordingContext()
    summary = SLICE_JOB.run(params, ctx, None)
    job = ctx.result

    assert [type(p) for p in seen] == [SliceSetup, SlicePageParams]
    shared = {f.name for f in dataclasses.fields(SliceSetup)} - {"max_regions"}
    assert {n: getattr(seen[0], n) for n in shared} == {n: getattr(seen[1], n) for n in shared}
    assert command["regions"] == summary["regions"][0] and min(command["regions"]) > 1
    assert list(job["arms"]) == ["bn_init"] and command["labels"] == list(job["labels"])
    assert np.allclose(command["window"], job["window"])
    with np.load(geometry) as g:
        assert np.array_equal(g["plane_origin"], job["origin"])
        assert np.array_equal(g["plane_u"], job["u"]) and np.array_equal(g["plane_v"], job["v"])
        assert np.array_equal(g["decision_boundary"], job["a0_boundary0"])
        for k in range(len(command["regions"])):
            for part in ("ptr", "vertices", "codes", "parents", "facets"):
                assert np.array_equal(g[f"layer{k}_{part}"], job[f"a0_l{k}_{part}"]), (k, part)
    if bn == "train":
        assert "a0_boundary1" in job and len(command["regions_per_batch"]) == 2


@pytest.mark.parametrize(("argv", "words"), [
    (["--arms", "bn_init,zero_bias"], "--arms: one arm"),
    (["--data", "digits"], "--data: a job's network is cut on its job's own data set"),
    (["--images", "0,1"], "--images: three different test image indices"),
    (["--images", "0,-1,2"], "--images: three different test image indices"),
    (["--run", "-1"], "--run: enter a whole number from 0 to 1000")])
def test_the_commands_refusals_name_the_flag_in_one_line(argv, words, capsys):
    code = main(["slice", "--job", "0123456789ab", *argv])
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.count("\n") == 1, err


def test_the_page_reads_no_file_of_the_server(jobs_home, tmp_path):
    """The page's model is the one model, whose files are the command line's: a request
    naming one is refused before anything is read."""
    from bnviz.records.types import ParamError

    for name in ("model", "weights", "plane", "batch"):
        with pytest.raises(ParamError, match=f"{name}: the page slices a job's or an uploaded"):
            SLICE_JOB.check({"job": "0123456789ab", "arms": "bn_init",
                             name: str(tmp_path / "x")})
    with pytest.raises(ParamError, match="data: letters, digits"):
        SLICE_JOB.check({"job": "up-0123456789abcdef01234567", "data": str(tmp_path / "x.npy")})
