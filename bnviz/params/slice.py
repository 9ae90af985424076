"""A slice of an image network (``bnviz slice``): its settings and their caps.

Bounded before any work: the BN mode, the mini-batches of train mode (:data:`~bnviz.params.
caps.SLICE_LIMITS`), and the regions, estimated for the very network, plane and window by
:func:`bnviz.slices.estimate.estimate_regions` (a forward pass on a grid; the caller checks
the estimate with :func:`check_slice_regions` before the cut) against
:data:`~bnviz.caps.SLICE_MAX_REGIONS`.
"""

from __future__ import annotations

from bnviz.caps import (
    BN_SLICE_MODES,
    MAX_EXTENT,
    SEED_MAX,
    SLICE_LIMITS,
    SLICE_MAX_REGIONS,
    SLICE_MAX_TOTAL_REGIONS,
    SLICE_PAGE_MAX_REGIONS,
)
from bnviz.params.fields import InputError, choice, real, text, whole
from bnviz.params.model import model_check, params_dataclass

__all__ = ["SlicePageParams", "SliceParams", "check_slice_regions"]

_S = SLICE_LIMITS


@params_dataclass
class SliceParams:
    """How a slice is cut: BN with its running statistics (``eval``) or with the statistics
    of ``batches`` mini-batches of ``batch_size`` images (``train``), the window's half-width
    (``extent``; 0: the default window about the images) and the region cap."""

    bn: choice(BN_SLICE_MODES) = "eval"
    batches: whole(*_S["batches"]) = 1
    batch_size: whole(*_S["batch_size"]) = 64
    seed: whole(0, SEED_MAX) = 0
    extent: real(0.0, MAX_EXTENT) = 0.0
    max_regions: whole(1, SLICE_MAX_REGIONS) = SLICE_MAX_REGIONS

    @model_check
    def _consistent(self) -> None:
        if self.batches > 1 and self.bn != "train":
            raise InputError("several mini-batches need BN in train mode (--bn train): eval "
                             "mode's running statistics are one", "batches")


def check_slice_regions(estimate: int, params: SliceParams) -> None:
    """Refuse a slice whose estimated regions (all K partitions together) are over the cap,
    before any cut; the message gives the estimate."""
    total = estimate * params.batches
    cap = min(params.max_regions * params.batches, SLICE_MAX_TOTAL_REGIONS)
    if total > cap:
        what = (f"about {estimate:,} regions" if params.batches == 1 else
                f"about {estimate:,} regions a mini-batch, {total:,} for {params.batches}")
        raise InputError(f"this window would have {what}, over the cap of {cap:,}: use a "
                         "smaller window (--extent) or fewer mini-batches", "extent")


@params_dataclass
class SlicePageParams(SliceParams):
    """The /slice page's job: ``arms`` (one or two, comma-separated) of the networks job
    ``job`` kept (run ``run``), or an uploaded network (``job`` = ``up-<hash>``, through the
    data set ``data``), through test images ``images`` ("i,j,k"), with the slice settings
    of :class:`SliceParams` and a page's region cap."""

    job: text(64) = ""  # a job's id, or an upload's reference (up-<hash>)
    arms: text(80) = ""
    data: text(40) = "digits"  # an upload's images (a job's are its own)
    run: whole(0, 1000) = 0
    images: text(64) = "0,1,2"
    max_regions: whole(1, SLICE_PAGE_MAX_REGIONS) = SLICE_PAGE_MAX_REGIONS

    @model_check
    def _page(self) -> None:
        if not self.job:
            raise InputError("choose a job whose networks to slice", "job")
        arms = ["upload"] if self.job.startswith("up-") else [
            a for a in self.arms.split(",") if a]
        if not 1 <= len(arms) <= 2 or not all(a.replace("_", "").isalnum() for a in arms):
            raise InputError("choose one or two arms", "arms")
        try:
            idx = [int(v) for v in self.images.split(",")]
        except ValueError:
            idx = []
        if len(idx) != 3 or min(idx) < 0 or len(set(idx)) != 3:
            raise InputError("three different test image indices, e.g. 0,1,2", "images")
