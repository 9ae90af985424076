"""What was stored under the names of before issue 43 still loads (bnviz.params.renames):
a job store's density runs, jitter trainings and landscape-2d runs (queued, finished, rerun),
and the replication outcomes' commands; they read as today's names, mean what they computed
then, and are written back under today's names."""

from __future__ import annotations

import dataclasses
import json
import shlex

import numpy as np
import pytest

from bnviz import jobs
from bnviz.cli import build_parser
from bnviz.jobs.runner import run_job
from bnviz.papers.landscape import check_landscape_params
from bnviz.params import warm_validators
from bnviz.params.renames import OLD_FLAGS, OLD_PARAMS, current_command, current_params
from bnviz.records.results import load_result
from bnviz.records.store import open_store
from bnviz.records.types import ParamError
from bnviz.replication.store import SHIPPED, read_outcomes, write_outcomes
from bnviz.views.density import check_density_params
from bnviz.views.training_cache import check_training_params

#: A density run and a jitter training as the pages stored them before the rename.
OLD_DENSITY = {"depth": 2, "width": 8, "activation": "leaky_relu", "dataset": "star", "n": 20,
               "seed": 3, "grid": 16, "eps": 1.0}
OLD_TRAINING = {"dataset": "moons", "n": 60, "data_seed": 4, "depth": 2, "width": 5,
                "activation": "leaky_relu", "alpha": 0.1, "seed": 3, "steps": 20,
                "batch_size": 16, "lr": 0.05, "optimizer": "adam"}
NEW_DENSITY = {"depth": 2, "width": 8, "activation": "leaky_relu", "dataset": "star",
               "n_points": 20, "weight_seed": 3, "data_seed": 3, "grid": 16, "eps": 1.0}
NEW_TRAINING = {"dataset": "moons", "n_points": 60, "data_seed": 4, "depth": 2, "width": 5,
                "activation": "leaky_relu", "alpha": 0.1, "weight_seed": 3, "train_steps": 20,
                "batch_size": 16, "lr": 0.05, "optimizer": "adam"}
#: The debate page's landscape run as stored before (a small one).
OLD_LANDSCAPE = {"dataset": "moons", "n": 64, "data_seed": 1, "depth": 2, "width": 6,
                 "seed": 2, "steps": 4, "batch_size": 16, "lr": 0.2, "eta_lo": 0.5,
                 "eta_hi": 4.0, "etas": 3, "noisy": None}
NEW_LANDSCAPE = {**{k: v for k, v in OLD_LANDSCAPE.items() if k not in ("n", "seed")},
                 "n_points": 64, "weight_seed": 2}


def test_old_parameters_read_as_the_new_ones():
    assert check_density_params(OLD_DENSITY) == check_density_params(NEW_DENSITY) == \
        NEW_DENSITY
    assert check_training_params(OLD_TRAINING) == check_training_params(NEW_TRAINING) == \
        NEW_TRAINING
    assert check_landscape_params(OLD_LANDSCAPE) == check_landscape_params(NEW_LANDSCAPE) == \
        NEW_LANDSCAPE
    # a new name present wins; anything else is the model's to judge, as before
    assert current_params("DensityPageParams", {"seed": 1, "data_seed": 2}) == {
        "weight_seed": 1, "data_seed": 2}
    assert current_params("SlicePageParams", {"seed": 1}) == {"seed": 1}
    assert current_params("DensityPageParams", [1]) == [1]
    with pytest.raises(ParamError, match=r"^density: unknown parameter 'sed'"):
        check_density_params({**OLD_DENSITY, "sed": 1})
    with pytest.raises(ParamError, match=r"^density: points|^density: n points"):
        check_density_params({**OLD_DENSITY, "n": 1})
    # every model the mapping names exists, with each new name a field
    models = {m.__name__: m for m in warm_validators()}
    for name, renames in OLD_PARAMS.items():
        fields = {f.name for f in dataclasses.fields(models[name])}
        for old, new in renames.items():
            assert old not in fields and set(new) <= fields, (name, old)


def _stored(job_type: str, params: dict, status: str = "queued"):
    """A job as an older version stored it (its parameters written as they were)."""
    store = open_store()
    job = store.create(job_type, params)
    if status != "queued":
        store.finish(job.id, status, summary={})
    return store.get(job.id)


def test_a_density_run_queued_under_the_old_names_runs(jobs_home):
    """The worker reads the old record and computes what it meant: the same counts as the
    run of today's names (one seed for the data and the networks)."""
    old = _stored("density", OLD_DENSITY)
    new = _stored("density", NEW_DENSITY)
    assert run_job(old.id) == run_job(new.id) == "succeeded"
    a, b = load_result(old.id), load_result(new.id)
    np.testing.assert_array_equal(a["counts"], b["counts"])
    np.testing.assert_array_equal(a["data"], b["data"])


def test_a_training_queued_under_the_old_names_trains_the_same_network(jobs_home):
    old = _stored("jitter-training", OLD_TRAINING)
    new = _stored("jitter-training", NEW_TRAINING)
    assert run_job(old.id) == run_job(new.id) == "succeeded"
    a, b = load_result(old.id), load_result(new.id)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_a_landscape_run_queued_under_the_old_names_runs_the_same(jobs_home):
    """The old seed drew the weights, the batches' order and the noise: the weight seed."""
    old = _stored("landscape-2d", OLD_LANDSCAPE)
    new = _stored("landscape-2d", NEW_LANDSCAPE)
    assert run_job(old.id) == run_job(new.id) == "succeeded"
    a, b = load_result(old.id), load_result(new.id)
    assert a.keys() == b.keys()
    for key in a.keys() - {"seconds"}:
        np.testing.assert_array_equal(a[key], b[key])


def test_a_finished_old_job_is_shown_and_rerun_under_the_new_names(jobs_home, monkeypatch):
    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)  # nothing runs
    old = _stored("density", OLD_DENSITY, "succeeded")
    assert jobs.job_details(old.id)["params"] == OLD_DENSITY  # the record as it was
    again = jobs.rerun_job(old.id)
    assert again.params == NEW_DENSITY and again.rerun_of == old.id


# --------------------------------------------------------------------------- commands


def test_old_command_lines_read_as_the_new_flags():
    assert current_command("bnviz density --dataset star --n 50 --seed 0 --mode bn --json") \
        == ("bnviz density --dataset star --n-points 50 --weight-seed 0 --data-seed 0 "
            "--mode bn --json")
    assert current_command("bnviz jitter --n=40 --seed 2 --weights net.npz --json && "
                           "bnviz figure9 --seed S --json, for S in 0..9") == (
        "bnviz jitter --n-points 40 --weight-seed 2 --data-seed 2 --batch-seed 2 "
        "--weights-file net.npz --json && bnviz figure9 --weight-seed S --data-seed S "
        "--json, for S in 0..9")
    # other commands' flags of the same spelling are theirs
    same = "bnviz slice --concentration 30 --seed 0 && bnviz train --steps 5"
    assert current_command(same) == same
    assert current_command("bnviz bnstats --seed 1 --json") == (
        "bnviz bnstats --data-seed 1 --batch-seed 1 --json")
    assert current_command(None) is None
    # every command the mapping names has each new flag, and none of the old
    for command, renames in OLD_FLAGS.items():
        sub = next(a for a in build_parser(command)._actions
                   if a.__class__.__name__ == "_SubParsersAction").choices[command]
        flags = {s for a in sub._actions for s in a.option_strings}
        for old, new in renames.items():
            assert old not in flags and set(new) <= flags, (command, old)


def _runnable(command: str) -> None:
    for part in command.split(" && "):
        argv = shlex.split(part)
        assert argv[0] == "bnviz"
        build_parser(argv[1]).parse_args(argv[1:])  # CLIError on an unknown flag


def test_shipped_outcomes_load_with_commands_that_run_today():
    """outcomes.json was written with --n and --seed (until its entries are rerun): read, every
    command parses now and is its entry's command."""
    from bnviz.replication.entries import ENTRIES

    shipped = read_outcomes(SHIPPED)
    for o in shipped.values():
        if ", for " not in o["command"]:  # a loop shown in words
            _runnable(o["command"])
    for entry in ENTRIES:
        if entry.id in ("bn-fig3-concentration", "bn-fig6-jitter", "bn-fig9-tls-colour",
                        "bn-sec5-virtual-batch"):
            assert shipped[entry.id]["command"] == entry.command_line, entry.id


def test_an_old_outcome_is_written_back_under_the_new_flags(tmp_path):
    path = tmp_path / "outcomes.json"
    old = {"id": "bn-fig6-jitter", "status": "reproduced",
           "command": "bnviz jitter --n 400 --seed 0 --batch-size 16 --json"}
    path.write_text(json.dumps({"results": [old]}))
    read = read_outcomes(path)["bn-fig6-jitter"]
    assert read["command"] == ("bnviz jitter --n-points 400 --weight-seed 0 --data-seed 0 "
                               "--batch-seed 0 --batch-size 16 --json")
    _runnable(read["command"])
    write_outcomes([{"id": "other", "command": "bnviz slice --seed 1"}], path)
    text = path.read_text()
    assert "--n-points 400" in text and "--n 400" not in text
    assert "bnviz slice --seed 1" in text
