"""Distributions of the BN statistics (BN paper Figure 7, Proposition 2 / eq. 13): the
synthetic setup of ``bnviz bnstats``."""

from __future__ import annotations

from bnviz.caps import FIGURE7_LIMITS, MAX_ELEMENTS, MAX_UNITS, SEED_MAX
from bnviz.params.fields import InputError, reals, whole, whole_or_none
from bnviz.params.model import CheckInfo, field_check, model_check, params_dataclass

__all__ = ["BNStatsParams"]

_F = FIGURE7_LIMITS


@params_dataclass
class BNStatsParams:
    """Mini-batches of ``batch_size`` from a training set of ``train_size`` draws of
    W z ~ N(means, diag(variances)) (the paper's [1, 0, -1] and [1, 3, 0.1]), ``samples``
    times; noise-controlled BN targets a virtual batch of ``virtual_batch_size`` (default:
    half the batch, the paper's 64 -> 32).  The cost is capped at ``samples x batch_size``
    <= :data:`~bnviz.caps.MAX_ELEMENTS` (the mini-batches held at once).

    ``data_seed`` draws the training set, ``batch_seed`` the mini-batches and the noise (as
    the explorer's and the jitter page's seeds of those names); equal seeds are the one
    stream of the former ``seed`` (``bnviz bnstats --seed S`` computed what ``--data-seed S
    --batch-seed S`` computes).
    """

    batch_size: whole(*_F["batch_size"]) = 64
    train_size: whole(*_F["train_size"]) = 1000
    samples: whole(*_F["samples"]) = 2000
    virtual_batch_size: whole_or_none(*_F["virtual_batch_size"]) = None
    data_seed: whole(0, SEED_MAX) = 0
    batch_seed: whole(0, SEED_MAX) = 0
    #: One mean and one (positive) variance per unit.
    means: reals(count=(1, MAX_UNITS)) = (1.0, 0.0, -1.0)
    variances: reals(0.0, lo_open=True, count=(1, MAX_UNITS)) = (1.0, 3.0, 0.1)

    @field_check("virtual_batch_size", mode="after")
    @classmethod
    def _half_the_batch(cls, value: int | None, info: CheckInfo) -> int | None:
        batch = info.data.get("batch_size")
        return max(2, batch // 2) if value is None and batch is not None else value

    @model_check
    def _consistent(self) -> None:
        if self.batch_size > self.train_size:
            raise InputError(f"{self.batch_size} is larger than the training set "
                             f"({self.train_size})", "batch_size")
        if self.virtual_batch_size > self.batch_size:
            raise InputError(f"enter a whole number from 2 to the batch size "
                             f"({self.batch_size}), got {self.virtual_batch_size}",
                             "virtual_batch_size")
        if self.samples * self.batch_size > MAX_ELEMENTS:
            raise InputError(f"samples x batch size is {self.samples * self.batch_size}, over "
                             f"the cap of {MAX_ELEMENTS}: lower the samples or the batch size")
        if len(self.variances) != len(self.means):
            raise InputError(f"enter one variance per mean ({len(self.means)}), got "
                             f"{len(self.variances)}", "variances")
