"""The replication page's figures: the smart-initialisation entry's test accuracy per epoch,
each arm at its chosen learning rate, mean +- std over the seeds (the jobs page's figure of
the same experiment, :func:`callbacks.jobs.figures.job_figure`); and the slice concentration
entry's value of every network, a dot each (the status is a paired test across them)."""

from __future__ import annotations

from typing import Any

from bnviz.params.jobs import ARMS as JOB_ARMS
from bnviz.web.callbacks.jobs.figures import job_figure
from bnviz.web.callbacks.plotting import Figure

__all__ = ["ARMS", "SLICE_KINDS", "slice_concentration_figure", "smart_init_figure"]

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


#: The off-data images of the slice entry, and their markers' colours.
SLICE_KINDS: dict[str, str] = {"gaussian": "#1f77b4", "shuffled": "#d62728"}


def slice_concentration_figure(ours: dict[str, Any], when: str = "trained",
                               mode: str = "train") -> Figure:
    """Every network's log(mean regions about test images / about off-data images), per arm
    and off-data kind (the networks of one seed side by side): the values the entry's paired
    test compares, BN against random bias and scale only. 0: no more regions on the data."""
    values = ours["per_network"][when][mode]
    arms = [arm for arm in ours["arms"] if arm in values]
    seeds = list(ours["seeds"])
    traces = []
    for k, (kind, colour) in enumerate(SLICE_KINDS.items()):
        xs, ys, texts = [], [], []
        for i, arm in enumerate(arms):
            for j, (seed, v) in enumerate(zip(seeds, values[arm][f"log_ratio_{kind}"],
                                              strict=True)):
                xs.append(i + (k - 0.5) * 0.36 + (j - (len(seeds) - 1) / 2) * 0.05)
                ys.append(v)
                texts.append(f"{arm}, seed {seed}, {kind}: {v:+.3f}")
        traces.append({"type": "scatter", "mode": "markers", "x": xs, "y": ys,
                       "name": f"against {kind} images", "text": texts,
                       "hoverinfo": "text", "marker": {"color": colour, "size": 9}})
    return {"data": traces, "layout": {
        "title": {"text": f"{ours['dataset']}: every network, {when}, BN in {mode} mode",
                  "x": 0.01},
        "xaxis": {"tickvals": list(range(len(arms))), "ticktext": arms, "zeroline": False,
                  "range":
                  [-0.6, len(arms) - 0.4]},
        "yaxis": {"title": {"text": "log(regions on data / off data)"}, "zeroline": True},
        "legend": {"orientation": "h", "y": -0.15},
        "margin": {"l": 60, "r": 10, "t": 40, "b": 40}}}
