"""Figure 7's synthetic setup (BNStatsParams): each side of each bound, the default virtual
batch (half the batch, the paper's 64 -> 32), the cap on samples x batch size, and the units'
means and variances."""

from __future__ import annotations

import pytest
from bounds import check_bounds

from bnviz.params import BNStatsParams, InputError, parse

BNSTATS_BOUNDS = {
    "batch_size": (2, 100_000, True, {"train_size": 100_000, "samples": 10}),
    "train_size": (2, 100_000, True, {"batch_size": 2}),
    "samples": (10, 200_000, True, {"batch_size": 2}),
    "virtual_batch_size": (2, 100_000, True, {"train_size": 100_000, "batch_size": 100_000,
                                              "samples": 10}),
    "data_seed": (0, 2**63 - 1, True, {}),
    "batch_seed": (0, 2**63 - 1, True, {}),
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


def test_unit_means_and_variances():
    """One mean and one positive variance per unit, 1 to MAX_UNITS (16) units; the paper's
    three units by default."""
    p = BNStatsParams()
    assert (p.means, p.variances) == ((1.0, 0.0, -1.0), (1.0, 3.0, 0.1))
    assert parse(BNStatsParams, {"means": "2", "variances": "0.5"}).variances == (0.5,)
    sixteen = tuple(float(k) for k in range(16))
    assert BNStatsParams(means=sixteen, variances=(1.0,) * 16).means == sixteen  # order kept
    assert BNStatsParams(means=(1.0, 1.0), variances=(2.0, 2.0)).means == (1.0, 1.0)
    for name, raw in (("means", ()), ("means", (0.0,) * 17), ("means", (1.0, float("nan"))),
                      ("variances", (1.0, 0.0, 0.1)), ("variances", (1.0, -3.0, 0.1)),
                      ("variances", "1,3,0.1")):
        with pytest.raises(InputError, match=rf"^{name}: enter 1 to 16 numbers"):
            BNStatsParams(**{name: raw})
    with pytest.raises(InputError, match=r"^variances: enter one variance per mean \(2\), got "
                                         r"3$"):
        BNStatsParams(means=(1.0, 2.0))
