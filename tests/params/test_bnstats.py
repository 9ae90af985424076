"""Figure 7's synthetic setup (BNStatsParams): each side of each bound, the default virtual
batch (half the batch, the paper's 64 -> 32), and the cap on samples x batch size."""

from __future__ import annotations

import pytest
from bounds import check_bounds

from bnviz.params import BNStatsParams, InputError

BNSTATS_BOUNDS = {
    "batch_size": (2, 100_000, True, {"train_size": 100_000, "samples": 10}),
    "train_size": (2, 100_000, True, {"batch_size": 2}),
    "samples": (10, 200_000, True, {"batch_size": 2}),
    "virtual_batch_size": (2, 100_000, True, {"train_size": 100_000, "batch_size": 100_000,
                                              "samples": 10}),
    "seed": (0, 2**63 - 1, True, {}),
}


@pytest.mark.parametrize("name", sorted(BNSTATS_BOUNDS))
def test_bnstats_bounds(name):
    lo, hi, whole, room = BNSTATS_BOUNDS[name]
    check_bounds(BNStatsParams, name, lo, hi, whole, room)


def test_default_virtual_batch_is_half_the_batch():
    assert BNStatsParams().virtual_batch_size == 32
    assert BNStatsParams(batch_size=3).virtual_batch_size == 2
    assert BNStatsParams(batch_size=2).virtual_batch_size == 2
    assert BNStatsParams(batch_size=16, virtual_batch_size=16).virtual_batch_size == 16


def test_cross_checks():
    with pytest.raises(InputError, match=r"^batch size: 2000 is larger than the training set "
                                         r"\(1000\)$"):
        BNStatsParams(batch_size=2000)
    with pytest.raises(InputError, match=r"^virtual batch size: enter a whole number from 2 to "
                                         r"the batch size \(64\), got 65$"):
        BNStatsParams(virtual_batch_size=65)
    # samples x batch size: 50,000,000 exactly is allowed, one more per batch is not
    assert BNStatsParams(train_size=100_000, batch_size=250, samples=200_000).samples == 200_000
    with pytest.raises(InputError, match=r"^samples x batch size is 50200000, over the cap of "
                                         r"50000000: lower the samples or the batch size$"):
        BNStatsParams(train_size=100_000, batch_size=251, samples=200_000)
