"""The cost estimate checked before any work (bnviz.params.cost): the expected regions
against the engine's real counts on random nets it was not calibrated on (other seeds,
another data set), both sides of the cap on sizes whose real answer is known, and the BN
batch checks."""

from __future__ import annotations

import numpy as np
import pytest

from bnviz.caps import MAX_REGIONS
from bnviz.core.network import random_network
from bnviz.core.partition import compute_partition
from bnviz.data.datasets import make_dataset
from bnviz.params import InputError, PartitionParams
from bnviz.params.cost import (
    check_bn_batch,
    check_partition_size,
    density_work,
    expected_regions,
)

#: (depth, width, activation, mode, extent, dataset, largest estimate / measured allowed):
#: small nets (each cut in well under a second), seeds 2 and 3 (the calibration used 0, 1).
#: The stated factors: the calibration's largest (bn 3.9, others up to 8.6) times its margin.
NETS = [
    (6, 16, "leaky_relu", "bn", 3.0, "moons", 6.0),
    (5, 16, "relu", "bn", 3.0, "moons", 6.0),
    (3, 64, "leaky_relu", "bn", 3.0, "moons", 6.0),
    (6, 16, "leaky_relu", "bn", 20.0, "gaussian", 6.0),
    (5, 8, "abs", "bn", 3.0, "moons", 6.0),
    (4, 16, "abs", "bn", 3.0, "star", 6.0),
    (6, 16, "leaky_relu", "random_bias", 3.0, "moons", 15.0),
    (4, 32, "abs", "random_bias", 50.0, "moons", 15.0),
    (6, 32, "relu", "zero_bias", 3.0, "moons", 15.0),
]


@pytest.mark.parametrize("seed", [2, 3])
@pytest.mark.parametrize("net", NETS, ids=lambda n: f"{n[3]}-{n[2]}-{n[0]}x{n[1]}-E{n[4]:g}")
def test_estimate_is_an_upper_bound_within_its_factor(net, seed):
    depth, width, activation, mode, extent, dataset, factor = net
    data = make_dataset(dataset, 100, seed).points
    part = compute_partition(random_network(depth, width, activation, 0.1, mode, seed), data,
                             (-extent, extent, -extent, extent), device="cpu")
    measured = [len(lp.regions) for lp in part.layers]
    estimate = expected_regions([width] * depth, activation, mode, extent)
    assert all(e >= m for e, m in zip(estimate, measured, strict=True)), (measured, estimate)
    assert estimate[-1] <= factor * measured[-1], (measured, estimate)


def test_layer_one_is_exact_for_central_arrangements():
    """Corollary 2: with BN the layer-1 lines meet at the batch centroid (2 D_1 regions), and
    without bias at the origin."""
    for mode in ("bn", "zero_bias"):
        assert expected_regions([7], "relu", mode) == [14.0]
    assert expected_regions([5], "relu", "random_bias", 1e6) == [1 + 5 + 10]


# sizes whose real answer at the engine's cap of 2,000,000 regions is known (CALIBRATION)
ACCEPTED = [  # (depth, width, activation, mode, extent): completes, in seconds
    (4, 6, "leaky_relu", "bn", 3.0),  # the CLI's default
    (12, 16, "leaky_relu", "bn", 3.0),  # 205,974 regions in 1.2 s
    (8, 32, "leaky_relu", "bn", 3.0),  # ~210,000 regions
    (9, 8, "abs", "bn", 3.0),  # 1,206,454 regions in 12 s
    (10, 4, "abs", "bn", 3.0),  # 374,866 regions in 1.5 s
    (16, 256, "relu", "zero_bias", 3.0),  # 8,160 regions
    (12, 16, "relu", "random_bias", 1000.0),  # 8,482 regions
]
REFUSED = [  # the engine refuses them, after long work
    (16, 128, "leaky_relu", "bn", 3.0, 7),  # after ~110 s
    (10, 8, "abs", "bn", 3.0, 10),  # after cutting 9 layers
    (16, 64, "relu", "bn", 3.0, 9),  # 374,801 regions at layer 6 already
    (16, 256, "relu", "random_bias", 3.0, 7),  # 845,041 regions at layer 7 after 200 s
]


@pytest.mark.parametrize("size", ACCEPTED, ids=str)
def test_requests_the_engine_completes_are_accepted(size):
    depth, width, activation, mode, extent = size
    check_partition_size([width] * depth, activation, mode, extent, MAX_REGIONS)
    PartitionParams(depth=depth, width=width, activation=activation, mode=mode,
                    extent=extent).check_cost()


@pytest.mark.parametrize("size", REFUSED, ids=str)
def test_requests_the_engine_refuses_are_refused_at_once(size):
    depth, width, activation, mode, extent, layer = size
    with pytest.raises(InputError, match=rf"^layer {layer} would have about [0-9.e+]+ regions "
                                         r"\(estimated before any work\), over the cap of "
                                         r"2000000: lower the width or the depth"):
        PartitionParams(depth=depth, width=width, activation=activation, mode=mode,
                        extent=extent).check_cost()


def test_the_cap_is_the_callers():
    """The same estimate, against the explorer's or the jitter page's smaller caps."""
    widths = [16] * 12
    check_partition_size(widths, "leaky_relu", "bn", 3.0, 1_000_000)
    with pytest.raises(InputError, match="over the cap of 60000"):
        check_partition_size(widths, "leaky_relu", "bn", 3.0, 60_000)


# --------------------------------------------------------------------------- BN batches


def test_a_batch_without_spread_along_every_unit_is_refused():
    w = np.array([[1.0, 0.0], [0.6, -0.8], [-0.3, 1.1]])
    same = np.tile([[0.25, -2.0]], (5, 1))
    with pytest.raises(InputError, match=r"sigma would be 0 for every unit"):
        check_bn_batch(same, w, "bn")
    with pytest.raises(InputError, match=r"^a BN batch needs at least 2 points"):
        check_bn_batch(same[:1], w, "bn")
    check_bn_batch(same, w, "zero_bias")  # no statistics, nothing to divide by
    # points spread along x + y = 1 only: a layer that reads x + y sees no spread
    t = np.linspace(-1.0, 2.0, 7)
    line = np.stack([t, 1.0 - t], 1)
    with pytest.raises(InputError, match=r"no spread along any unit of layer 1"):
        check_bn_batch(line, np.array([[1.0, 1.0], [-2.0, -2.0]]), "bn")
    check_bn_batch(line, w, "bn")  # other units see it
    # one unit with spread is enough (sigma > 0 somewhere: the layer is defined)
    check_bn_batch(line, np.array([[1.0, 1.0], [1.0, 0.0]]), "bn")


def test_density_work_counts_multiply_adds():
    assert density_work(512, 11, 1024) == 512 * 512 * 11 * 1024 * 1024
    assert density_work(2, 1, 1) == 4.0
