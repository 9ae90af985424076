"""One name per parameter (issue 43, item 1), over every parameter model and every command:
the number of data points is ``n_points`` and a seed says what it draws (``weight_seed``,
``data_seed``, ``batch_seed``: the explorer's names) wherever a model or a flag has one; the
few seeds of another kind are named here with what they seed."""

from __future__ import annotations

import dataclasses

from bnviz.cli import build_parser
from bnviz.cli.commands import COMMANDS, JOB_COMMANDS
from bnviz.params import warm_validators
from bnviz.params.jobs import IMAGE_JOB_PARAMS

SEEDS = {"weight_seed", "data_seed", "batch_seed"}
#: Models with a ``seed`` of another meaning, and why.
OTHER_SEEDS = {
    # the image experiments' runs are seeded seed, seed + 1, ... (each run's weights, its
    # images' order): the first run's seed, with --runs
    **{model.__name__: "the first run's" for model in IMAGE_JOB_PARAMS.values()},
    "ImageJobParams": "the first run's",
    "DDPJobParams": "the first run's",
    # the /slice cut's mini-batches in BN train mode, and its plane's random directions
    # (bnviz/params/slice.py, which issue 45's work is changing: not renamed yet)
    "SliceParams": "the slice's mini-batches",
    "SlicePageParams": "the slice's mini-batches",
    "SliceSetup": "the slice's plane and mini-batches",
    "SliceJobParams": "the slice's plane and mini-batches",
}
#: Commands whose --seed is such a seed (their models above).
OTHER_SEED_FLAGS = {"jobs", "slice"}


def test_no_model_names_its_points_n_or_a_seed_by_nothing():
    for model in warm_validators():
        names = {f.name for f in dataclasses.fields(model)}
        assert "n" not in names, model.__name__
        seeds = {name for name in names if name == "seed" or name.endswith("_seed")}
        if model.__name__ in OTHER_SEEDS:
            seeds -= {"seed"}
        assert seeds <= SEEDS, (model.__name__, seeds - SEEDS)


def _flags(parser) -> set[str]:
    """Every option of a parser and of its subcommands."""
    found = set()
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action.choices, dict):  # a command's subcommands
            for sub in action.choices.values():
                found |= _flags(sub)
    return found


def test_no_command_has_n_or_a_lone_seed():
    for command in [*COMMANDS, *JOB_COMMANDS]:
        parser = build_parser(command)
        sub = next(a for a in parser._actions if isinstance(a.choices, dict)).choices[command]
        flags = _flags(sub)
        assert "--n" not in flags, command
        seeds = {f for f in flags if f.endswith("-seed")} - {"--seed"}
        assert seeds <= {"--weight-seed", "--data-seed", "--batch-seed"}, command
        if command not in OTHER_SEED_FLAGS:
            assert "--seed" not in flags, command
