"""The replication page's figure: the smart-initialisation entry's test accuracy per epoch,
each arm at its chosen learning rate, mean +- std over the seeds (the jobs page's figure of
the same experiment, :func:`callbacks.jobs.figures.job_figure`)."""

from __future__ import annotations

from typing import Any

from bnviz.params.jobs import ARMS as JOB_ARMS
from bnviz.web.callbacks.jobs.figures import job_figure
from bnviz.web.callbacks.plotting import Figure

__all__ = ["ARMS", "smart_init_figure"]

#: The smart-initialisation arms, in the jobs page's order.
ARMS: tuple[str, ...] = tuple(JOB_ARMS["smart-init"])


def smart_init_figure(ours: dict[str, Any]) -> Figure:
    """Test accuracy per epoch of the three initialisations (legend: arm and its lr)."""
    epochs = list(range(1, int(ours["epochs"]) + 1))
    summary = {"arms": {f"{arm} (lr {ours[arm + '_lr']:g})": {
        "epoch": epochs, "mean": ours[f"{arm}_curve"], "std": ours[f"{arm}_curve_std"]}
        for arm in ARMS if f"{arm}_curve" in ours}}  # (an outcome stored before an arm)
    title = (f"{ours['dataset']}: test accuracy, mean ± std over {ours['runs']} seeds")
    return job_figure([("", "smart-init", summary)], title)
