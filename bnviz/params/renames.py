"""The names the jitter, density, Figure 9, Figure 7 (``bnviz bnstats``) and landscape-2d
computations had before issue 43 gave every parameter one name (the explorer's: ``n_points``,
``weight_seed``, ``data_seed``, ``batch_seed``; the jitter training's ``train_steps``, as
``bnviz jitter --train-steps``), read in this one place so that what was stored under them
still loads.

Nothing writes the old names. Two kinds of record carry them:

* a job's parameters in a job store (a finished ``density`` run, ``jitter-training`` or
  ``landscape-2d`` run, a queued one picked up after an upgrade, a rerun):
  :func:`current_params`, which :func:`bnviz.records.types.validate_params` applies before
  it checks them;
* a command line stored with a replication outcome (``bnviz density --n 50 --seed 0``):
  :func:`current_command`, which :mod:`bnviz.replication.store` applies as it reads.

Each old name maps to the new names that take its value. The old ``seed`` fed more than one
of today's seeds, so it maps to each of them: the record means what it computed then
(``bnviz jitter --seed 3`` seeded the data, the weights and the mini-batches; the density
run's ``seed`` its data and its networks; ``bnviz bnstats --seed`` one stream for the
training set and then the mini-batches, which equal data and batch seeds draw again). A new
name present in the record wins over an old one. Imports nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["OLD_FLAGS", "OLD_PARAMS", "current_command", "current_params"]

_N = {"n": ("n_points",)}

#: Model (its class name) -> old parameter name -> the current names that take its value.
OLD_PARAMS: dict[str, dict[str, tuple[str, ...]]] = {
    # the jitter page's network and its training job: data_seed was already its own; the
    # seed drew the weights and the training's batch order (today: the weight seed)
    "JitterParams": {**_N, "seed": ("weight_seed",)},
    "TrainingJobParams": {**_N, "seed": ("weight_seed",), "steps": ("train_steps",)},
    # Figure 3: one seed for the data and the networks
    "DensityParams": {**_N, "seed": ("weight_seed", "data_seed")},
    "DensityPageParams": {**_N, "seed": ("weight_seed", "data_seed")},
    # bnviz figure9: one seed for the data and the weights (and so the training's batches)
    "Figure9Params": {**_N, "seed": ("weight_seed", "data_seed")},
    # the debate page's landscape-2d run: its data_seed was already its own; the seed drew
    # the weights, the mini-batches' order and noisy BN's noise (today: the weight seed)
    "LandscapeParams": {**_N, "seed": ("weight_seed",)},
}

#: Command (``bnviz COMMAND``) -> old flag -> the current flags that take its value.
OLD_FLAGS: dict[str, dict[str, tuple[str, ...]]] = {
    "jitter": {"--n": ("--n-points",), "--seed": ("--weight-seed", "--data-seed",
                                                    "--batch-seed"),
               "--weights": ("--weights-file",)},
    "density": {"--n": ("--n-points",), "--seed": ("--weight-seed", "--data-seed")},
    "figure9": {"--n": ("--n-points",), "--seed": ("--weight-seed", "--data-seed")},
    # one seed for the training set and the mini-batches drawn from it (one stream)
    "bnstats": {"--seed": ("--data-seed", "--batch-seed")},
    # renamed before the others (one seed for the weights, the data and the batch)
    "partition": {"--n": ("--n-points",), "--seed": ("--weight-seed", "--data-seed",
                                                       "--batch-seed"),
                  "--mu-scale": ("--mu-t",), "--sigma-scale": ("--sigma-s",)},
}


def current_params(model: type | str, raw: Any) -> Any:
    """``raw`` (a stored record's parameters for ``model``, a class or its name) with every
    old name of :data:`OLD_PARAMS` replaced by the current names; anything else (another
    model, a value that is no mapping) is returned as it is, for the model's checks to
    judge."""
    renames = OLD_PARAMS.get(model if isinstance(model, str) else model.__name__)
    if not renames or not isinstance(raw, Mapping) or not renames.keys() & raw.keys():
        return raw
    out = {k: v for k, v in raw.items() if k not in renames}
    for old, new in renames.items():
        if old in raw:
            for name in new:
                out.setdefault(name, raw[old])
    return out


_FLAG = re.compile(r"^(--[a-z][a-z0-9-]*)(?:=(.*))?$")


def current_command(command: Any) -> Any:
    """A stored command line (``bnviz density --n 50 --seed 0 --json``, or several joined by
    ``&&``) with the old flags of :data:`OLD_FLAGS` written as the current ones (``--n-points
    50 --weight-seed 0 --data-seed 0``); what is no string is returned as it is."""
    if not isinstance(command, str):
        return command
    words = command.split(" ")
    out: list[str] = []
    current: str | None = None
    i = 0
    while i < len(words):
        word = words[i]
        if i > 0 and words[i - 1] == "bnviz":
            current = word
        found = _FLAG.match(word)
        new = OLD_FLAGS.get(current or "", {}).get(found[1]) if found else None
        if new is None:
            out.append(word)
            i += 1
            continue
        value, i = (found[2], i + 1) if found[2] is not None else (
            (words[i + 1], i + 2) if i + 1 < len(words) else (None, i + 1))
        for flag in new:
            out += [flag] if value is None else [flag, value]
    return " ".join(out)
