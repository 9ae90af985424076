"""One name per parameter (issue 43, item 1) for ``bnviz jitter``, ``bnviz density``,
``bnviz bnstats`` and ``bnviz figure9``, as tests/cli/test_partition_route.py holds ``bnviz
partition``: each command is a thin parser over the model its page uses, one flag per field of
the field's name and default; the old ``--n`` and ``--seed`` are refused in one line that says
what they are called now; the page and the command build the same settings and compute the
same (the jitter page's training job names its steps as ``--train-steps``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fuzzing import assert_one_error_line, strict_json

from bnviz.cli import build_parser, main
from bnviz.cli.figures import density_settings, figure9_settings, jitter_settings
from bnviz.data.datasets import make_dataset
from bnviz.params import (
    BNStatsParams,
    DensityPageParams,
    DensityParams,
    JitterParams,
    PartitionParams,
    TrainingJobParams,
    TrainingParams,
)
from bnviz.params.jitter import JitterNetwork
from bnviz.params.partition import Figure9Params
from bnviz.records.types import DistInfo, RecordingContext
from bnviz.views.density import run_density_job
from bnviz.views.figure9 import FIGURE9_SETTINGS

#: Each command's models, and its options that are no model field (files and output).
COMMANDS = {
    "jitter": ((JitterParams, TrainingParams),
               {"weights_file", "save", "json", "format", "out", "device", "quiet"}),
    "density": ((DensityParams,), {"json", "format", "out", "device", "quiet"}),
    "bnstats": ((BNStatsParams,), {"json", "out"}),
    "figure9": ((Figure9Params,), {"json", "out", "device", "quiet"}),
}
#: The names the explorer's model gives the network and data (bnviz partition's flags).
SHARED = {"dataset", "n_points", "weight_seed", "data_seed", "batch_seed", "depth", "width",
          "activation", "alpha", "extent"}


def _parser(command: str):
    parser = build_parser(command)
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices[command]


def _defaults(command: str, *argv: str):
    return build_parser(command).parse_args([command, *argv])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_field_is_a_flag_of_the_same_name_and_default(command):
    models, others = COMMANDS[command]
    flags = {a.dest: a for a in _parser(command)._actions if a.dest != "help"}
    names = set()
    for model in models:
        for field in dataclasses.fields(model):
            names.add(field.name)
            action = flags[field.name]
            assert action.option_strings == ["--" + field.name.replace("_", "-")], field.name
            assert action.default == field.default, field.name
    # and nothing the models lack, but the files and the output
    assert set(flags) - names == others
    # the settings the explorer names too are named as it does: no n, no lone seed
    assert not names & {"n", "seed", "steps"}
    if command != "bnstats":  # (Figure 7 has no network)
        assert names & SHARED >= {"dataset", "n_points", "weight_seed", "data_seed", "depth",
                                  "width", "activation"}


@pytest.mark.parametrize(("command", "old", "now"), [
    ("jitter", ["--n", "40"], "--n is now --n-points"),
    ("jitter", ["--n=40"], "--n is now --n-points"),
    ("jitter", ["--seed", "1"], "--seed is now --weight-seed, --data-seed and --batch-seed"),
    ("jitter", ["--weights", "net.npz"], "--weights is now --weights-file"),
    ("density", ["--n", "40"], "--n is now --n-points"),
    ("density", ["--seed", "1"], "--seed is now --weight-seed and --data-seed"),
    ("figure9", ["--n", "40"], "--n is now --n-points"),
    ("figure9", ["--seed", "1"], "--seed is now --weight-seed and --data-seed"),
    ("figure9", ["--seed", "1", "--n", "30"], "--n is now --n-points; --seed is now "
                                              "--weight-seed and --data-seed"),
    ("bnstats", ["--seed", "1"], "--seed is now --data-seed and --batch-seed"),
    ("bnstats", ["--seed=1"], "--seed is now --data-seed and --batch-seed"),
])
def test_the_old_names_are_refused_in_one_line(capsysbinary, command, old, now):
    """``--n`` is no abbreviation of ``--n-points`` (it would silently pass for it)."""
    capsysbinary.readouterr()
    rc = main([command, *old])
    captured = capsysbinary.readouterr()
    err = captured.err.decode()
    assert_one_error_line(rc, captured.out, err)
    assert "unrecognized arguments" in err and f"({now})" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_abbreviations(capsysbinary, command):
    capsysbinary.readouterr()
    rc = main([command, "--n-poi" if command != "bnstats" else "--data", "40"])
    captured = capsysbinary.readouterr()
    assert_one_error_line(rc, captured.out, captured.err.decode())


# --------------------------------------------------------------------------- jitter


def _page_controls(layout) -> dict:
    """The starting value of every control of a page's layout, by its id."""
    found = {}

    def walk(node):
        if isinstance(node, list | tuple):
            for child in node:
                walk(child)
            return
        if getattr(node, "id", None) is not None and hasattr(node, "value"):
            found[node.id] = node.value
        children = getattr(node, "children", None)  # (a component's len counts descendants)
        if children is not None:
            walk(children)

    walk(layout)
    return found


def test_jitter_page_and_command_build_the_same_settings():
    """The page's controls at their starting values are the command's defaults: one model,
    JitterParams, and the training job's network is its network."""
    from bnviz.web.callbacks.jitter import callbacks as cj
    from bnviz.web.callbacks.jitter import ids
    from bnviz.web.layouts import jitter as page

    start = _page_controls(page.layout())
    page_settings = cj.parse_settings(*(start[i] for i in cj.NETWORK), start[ids.BATCH_SEED],
                                      start[ids.BATCH], start[ids.REALIZATIONS],
                                      start[ids.VIRTUAL])
    settings, training = jitter_settings(_defaults("jitter"))
    assert type(page_settings) is type(settings) is JitterParams
    assert page_settings == settings == JitterParams()
    # each seed goes to its own field, from the page as from the command
    assert cj.parse_settings("moons", 100, 2, 6, 3, 5, 7, 4, 8, None) == jitter_settings(
        _defaults("jitter", "--n-points", "100", "--depth", "2", "--width", "6",
                  "--weight-seed", "3", "--data-seed", "5", "--batch-seed", "7",
                  "--realizations", "8"))[0]
    # the training job: the page's network, with the command's optimizer and rate
    job = cj.training_params(*(start[i] for i in cj.NETWORK), start[ids.BATCH],
                             start[ids.TRAIN_STEPS], start[ids.OPTIMIZER], start[ids.LR])
    network = {f.name for f in dataclasses.fields(JitterNetwork)}
    assert {k: v for k, v in job.items() if k in network} == {
        k: getattr(settings, k) for k in network}
    assert TrainingJobParams(**job).lr == training.lr
    assert TrainingJobParams(**job).optimizer == training.optimizer
    assert TrainingJobParams(**job).train_steps == start[ids.TRAIN_STEPS] == 500


def test_the_training_job_names_its_fields_as_the_command():
    """The page's training job and ``bnviz jitter``'s training are one training: each field of
    the job is a flag of jitter of its name, with its default, but the steps: the command's 0
    (untrained: the page before its train button) against the 500 the button trains (their
    bounds: tests/params/test_jitter.py)."""
    flags = {a.dest: a for a in _parser("jitter")._actions}
    for field in dataclasses.fields(TrainingJobParams):
        assert field.name in flags, field.name
        if field.name != "train_steps":
            assert flags[field.name].default == field.default, field.name
    assert flags["train_steps"].default == 0 == TrainingParams().train_steps


def test_jitter_seeds_reach_the_data_the_weights_and_the_batches(capsysbinary):
    """The command's numbers for three different seeds are the view's for those seeds."""
    from bnviz.views.jitter import run_jitter

    argv = ["--n-points", "40", "--depth", "2", "--width", "4", "--batch-size", "8",
            "--realizations", "3", "--weight-seed", "2", "--data-seed", "3", "--batch-seed",
            "4", "--device", "cpu"]
    capsysbinary.readouterr()
    assert main(["jitter", *argv]) == 0
    doc = strict_json(capsysbinary.readouterr().out)
    want = run_jitter(JitterParams(n_points=40, depth=2, width=4, batch_size=8, realizations=3,
                                   weight_seed=2, data_seed=3, batch_seed=4), device="cpu")
    assert doc["disagreement_area"] == want.disagreement_area
    assert doc["test_boundary"] == want.test_boundary.tolist()
    for seed in ("--weight-seed", "--data-seed", "--batch-seed"):
        other = [*argv]
        other[other.index(seed) + 1] = "9"
        assert main(["jitter", *other]) == 0
        changed = strict_json(capsysbinary.readouterr().out)
        assert changed["boundaries"] != doc["boundaries"], seed


# --------------------------------------------------------------------------- density


def test_density_page_and_command_build_the_same_settings():
    """The page's model has the command's names and defaults (its bounds are tighter), and
    its controls start at them."""
    from bnviz.web.callbacks.density import callbacks as cd
    from bnviz.web.callbacks.density import ids
    from bnviz.web.layouts import density as page

    command = {f.name: f.default for f in dataclasses.fields(DensityParams)}
    for field in dataclasses.fields(DensityPageParams):
        assert command[field.name] == field.default, field.name
    start = _page_controls(page.layout())
    raw = cd.parse_params(*(start[i] for i in (ids.DEPTH, ids.WIDTH, ids.DATASET,
                                               ids.N_POINTS, ids.WEIGHT_SEED, ids.DATA_SEED,
                                               ids.GRID, ids.EPS)))
    settings = density_settings(_defaults("density"))
    assert raw == {name: getattr(settings, name) for name in raw}
    assert raw == dataclasses.asdict(DensityPageParams())
    assert start[ids.LAYERS] == ",".join(map(str, settings.layers))


def test_density_page_run_is_the_commands_computation(capsysbinary):
    """The page's job (three modes) and the command (one mode) count the same facets, with
    the weight seed and the data seed each where it belongs."""
    from bnviz.web.callbacks.density import callbacks as cd

    params = cd.parse_params(2, "16", "moons", 20, 3, 5, "16", 1)
    ctx = RecordingContext()
    run_density_job(params, ctx, DistInfo())
    modes = [str(m) for m in ctx.result["modes"]]
    base = ["--depth", "2", "--width", "16", "--dataset", "moons", "--n-points", "20",
            "--grid", "16", "--layers", "1,2", "--device", "cpu"]
    for mode in ("bn", "zero_bias"):
        capsysbinary.readouterr()
        assert main(["density", *base, "--weight-seed", "3", "--data-seed", "5", "--mode",
                     mode]) == 0
        doc = strict_json(capsysbinary.readouterr().out)
        counts = ctx.result["counts"][modes.index(mode)]
        assert [e["max_concentration"] for e in doc["layers"]] == [
            int(c.max()) for c in counts]
    np.testing.assert_array_equal(ctx.result["data"], make_dataset("moons", 20, 5).points)


# --------------------------------------------------------------------------- figure9


def test_figure9_command_is_the_explorers_preset():
    """Figure 9's model names its fields as the explorer's (the page), and its defaults are
    the explorer's Figure 9 preset; each seed goes to the explorer's field of its name."""
    page = {f.name for f in dataclasses.fields(PartitionParams)}
    assert {f.name for f in dataclasses.fields(Figure9Params)} - page == {"layers"}
    p = figure9_settings(_defaults("figure9"))
    assert p.explorer_settings() == FIGURE9_SETTINGS
    for field in dataclasses.fields(Figure9Params):
        if field.name != "layers":
            assert getattr(FIGURE9_SETTINGS, field.name) == field.default, field.name
    seeded = figure9_settings(_defaults("figure9", "--weight-seed", "2", "--data-seed", "5",
                                        "--n-points", "60"))
    assert seeded.explorer_settings() == dataclasses.replace(
        FIGURE9_SETTINGS, weight_seed=2, data_seed=5, n_points=60)


# --------------------------------------------------------------------------- bnstats


def _one_stream(seed: int, batch: int, train: int, samples: int, virtual: int) -> dict:
    """Figure 7's numbers as the former ``bnviz bnstats --seed`` drew them: one generator for
    the training set, then the mini-batches, then the noise."""
    import torch

    from bnviz.core.bn import batch_moments
    from bnviz.views.bnsampling import noise_controlled, sample_batch_statistics

    gen = torch.Generator().manual_seed(seed)
    m = torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64)
    s2 = torch.tensor([1.0, 3.0, 0.1], dtype=torch.float64)
    data = m + s2.sqrt() * torch.randn((train, 3), generator=gen, dtype=torch.float64)
    mu, sigma2 = sample_batch_statistics(data, batch, samples, gen)
    mean, var = batch_moments(data)
    m4 = (data - mean).pow(4).mean(dim=0)
    mu_n, _ = noise_controlled(mu, sigma2, batch, virtual, var, m4, gen, population_size=train)
    return {"mu": mu.numpy(), "mu_noise": mu_n.numpy()}


def test_bnstats_seeds_reach_the_training_set_and_the_batches(capsysbinary):
    """``--data-seed`` draws the training set, ``--batch-seed`` the mini-batches and the
    noise; equal seeds are the one stream of the former ``--seed`` (so that an outcome stored
    under it means what it computed)."""
    from bnviz.views.bnstats import figure7_samples

    small = ["--batch-size", "8", "--train-size", "50", "--samples", "40",
             "--virtual-batch-size", "4"]
    runs = {}
    for data_seed, batch_seed in ((3, 3), (3, 5), (4, 3)):
        capsysbinary.readouterr()
        assert main(["bnstats", *small, "--data-seed", str(data_seed), "--batch-seed",
                     str(batch_seed)]) == 0
        doc = strict_json(capsysbinary.readouterr().out)
        assert (doc["data_seed"], doc["batch_seed"]) == (data_seed, batch_seed)
        runs[data_seed, batch_seed] = figure7_samples(
            batch_size=8, train_size=50, samples=40, virtual_batch_size=4, data_seed=data_seed,
            batch_seed=batch_seed, device="cpu")
        assert doc["units"][0]["mu"]["empirical_mean"] == pytest.approx(
            runs[data_seed, batch_seed]["mu"][:, 0].mean())
    np.testing.assert_array_equal(runs[3, 3]["train"], runs[3, 5]["train"])
    assert not np.array_equal(runs[3, 3]["mu"], runs[3, 5]["mu"])
    assert not np.array_equal(runs[3, 3]["train"], runs[4, 3]["train"])
    old = _one_stream(3, 8, 50, 40, 4)
    np.testing.assert_array_equal(runs[3, 3]["mu"], old["mu"])
    np.testing.assert_array_equal(runs[3, 3]["mu_noise"], old["mu_noise"])
