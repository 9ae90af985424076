"""Decision-boundary jitter (Figure 6): JitterParams (the settings, also the engine's
JitterParams), TrainingParams (``bnviz jitter --train-steps``) and TrainingJobParams (the
page's training job), each side of each bound and the batch checks."""

from __future__ import annotations

from dataclasses import fields

import pytest
from bounds import check_bounds

from bnviz.params import InputError, JitterParams, TrainingJobParams, TrainingParams, parse
from bnviz.params.jitter import JitterNetwork

JITTER_BOUNDS = {
    "n_points": (8, 2000, True, {"batch_size": 8}),
    "depth": (1, 6, True, {}),
    "width": (2, 32, True, {}),
    "batch_size": (2, 512, True, {"n_points": 2000}),
    "realizations": (1, 128, True, {}),
    "virtual_batch_size": (2, 512, True, {"n_points": 2000, "batch_size": 512}),
    "weight_seed": (0, 2**63 - 1, True, {}),
    "data_seed": (0, 2**63 - 1, True, {}),
    "batch_seed": (0, 2**63 - 1, True, {}),
}


@pytest.mark.parametrize("name", sorted(JITTER_BOUNDS))
def test_jitter_bounds(name):
    lo, hi, whole, room = JITTER_BOUNDS[name]
    check_bounds(JitterParams, name, lo, hi, whole, room)


def test_jitter_extent():
    check_bounds(JitterParams, "extent", 0.0, 1e6, False, lo_open=True)


def test_the_engine_settings_are_these_params():
    assert JitterParams is JitterParams
    assert JitterParams() == JitterParams(n_points=200, depth=3, width=8, batch_size=16,
                                          realizations=16, weight_seed=0, data_seed=0,
                                          batch_seed=0)


def test_batches_fit_the_data():
    with pytest.raises(InputError, match=r"^batch size: 128 is larger than the data \(100 "
                                         r"points\)$"):
        JitterParams(n_points=100, batch_size=128)
    assert JitterParams(n_points=100, batch_size=100).batch_size == 100
    with pytest.raises(InputError, match=r"^virtual batch size: enter a whole number from 2 to "
                                         r"the batch size \(16\), got 17$"):
        JitterParams(virtual_batch_size=17)
    assert JitterParams(virtual_batch_size=16).virtual_batch_size == 16
    with pytest.raises(InputError, match=r"^--batch-size: 64 is larger"):
        parse(JitterParams, {"n_points": "40", "batch_size": "64"},
              {"batch_size": "--batch-size"})


def test_training_bounds():
    check_bounds(TrainingParams, "train_steps", 0, 5000, True)
    check_bounds(TrainingParams, "lr", 0.0, 10.0, False, lo_open=True)
    for bad in ("lbfgs", "", None, "ADAM"):
        with pytest.raises(InputError, match=r"^optimizer: choose one of sgd, adam, got "):
            parse(TrainingParams, {"optimizer": bad})


TRAINING_JOB_BOUNDS = {
    "n_points": (8, 2000, True, {"batch_size": 8}),
    "depth": (1, 6, True, {}),
    "width": (2, 32, True, {}),
    "train_steps": (1, 5000, True, {}),
    "batch_size": (2, 512, True, {"n_points": 2000}),
    "weight_seed": (0, 2**63 - 1, True, {}),
    "data_seed": (0, 2**63 - 1, True, {}),
}


@pytest.mark.parametrize("name", sorted(TRAINING_JOB_BOUNDS))
def test_training_job_bounds(name):
    lo, hi, whole, room = TRAINING_JOB_BOUNDS[name]
    check_bounds(TrainingJobParams, name, lo, hi, whole, room)


def test_training_job_trains_the_pages_network():
    """The job's network fields are the jitter settings' own (one description), its training
    fields have the CLI's bounds, and it needs a step and a batch within the data."""
    network = {f.name for f in fields(JitterNetwork)}
    assert network == {"dataset", "n_points", "data_seed", "depth", "width", "activation",
                       "alpha", "weight_seed"}
    assert issubclass(JitterParams, JitterNetwork) and issubclass(TrainingJobParams,
                                                                   JitterNetwork)
    check_bounds(TrainingJobParams, "lr", 0.0, 10.0, False, lo_open=True)
    with pytest.raises(InputError, match=r"^alpha: leaky_relu needs 0 < alpha < 1, got 1$"):
        TrainingJobParams(alpha=1.0)
    assert TrainingJobParams(activation="relu", alpha=1.0).alpha == 1.0  # relu ignores it
    with pytest.raises(InputError, match=r"^batch size: 64 is larger than the data \(20 "
                                         r"points\)$"):
        parse(TrainingJobParams, {"n_points": 20, "batch_size": "64"})
    with pytest.raises(InputError, match=r"^train steps: enter a whole number from 1 to 5000, "
                                         r"got 0"):
        TrainingJobParams(train_steps=0)
    with pytest.raises(InputError, match=r"^optimizer: choose one of sgd, adam, got 'lbfgs'$"):
        parse(TrainingJobParams, {"optimizer": "lbfgs"})
