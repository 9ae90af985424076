"""Tests of training the 2D networks (bnviz.views.train.train_network): SGD is
reproducible, bad options and a network without a head are refused. Adam on moons, saving
and the trained network's jitter are tested with the jitter feature
(tests/views/test_jitter.py); the page's training job in tests/views/test_training_cache.py."""

from __future__ import annotations

import numpy as np
import pytest

from bnviz.core.network import random_network
from bnviz.views.jitter import binary_task
from bnviz.views.train import train_network


@pytest.fixture(scope="module")
def moons():
    return binary_task("moons", 200, 0)


def test_sgd_runs_and_is_reproducible(moons):
    net = random_network(2, 6, seed=1, head_outputs=2)
    a = train_network(net, moons.points, moons.labels, 40, optimizer="sgd", seed=3, device="cpu")
    b = train_network(net, moons.points, moons.labels, 40, optimizer="sgd", seed=3, device="cpu")
    assert np.all(np.isfinite(a.losses)) and a.losses[-10:].mean() < a.losses[:10].mean()
    np.testing.assert_array_equal(a.losses, b.losses)
    for wa, wb in zip(a.network.weights, b.network.weights, strict=True):
        np.testing.assert_array_equal(wa, wb)
    zero = train_network(net, moons.points, moons.labels, 0, device="cpu")
    assert zero.losses.shape == (0,)
    np.testing.assert_array_equal(zero.network.weights[0], net.weights[0])


@pytest.mark.parametrize("kwargs", [
    {"optimizer": "rmsprop"}, {"steps": -1}, {"steps": 1.5}, {"steps": 100_001},
    {"lr": 0.0}, {"lr": -0.1}, {"lr": float("nan")}, {"lr": 11.0},
    {"batch_size": 1}, {"batch_size": 201},
])
def test_training_rejects_bad_options(moons, kwargs):
    net = random_network(2, 4, seed=0, head_outputs=2)
    args = {"steps": 5} | kwargs
    with pytest.raises(ValueError):
        train_network(net, moons.points, moons.labels, device="cpu", **args)


def test_training_needs_a_head(moons):
    with pytest.raises(ValueError, match="head"):
        train_network(random_network(2, 4, seed=0), moons.points, moons.labels, 5,
                      device="cpu")
