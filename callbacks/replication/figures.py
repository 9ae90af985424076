"""The replication page's figures: the smart-initialisation entry's test accuracy per epoch,
each arm at its chosen learning rate, mean +- std over the seeds (the jobs page's figure of
the same experiment, :func:`callbacks.jobs.figures.job_figure`); and the slice concentration
entry's value of every network, a dot each (the status is a paired test across them)."""

from __future__ import annotations

from typing import Any

from bnviz.params.jobs import ARMS as JOB_ARMS
from bnviz.web.callbacks.jobs.figures import job_figure
from bnviz.web.callbacks.plotting import Figure

__all__ = ["ARMS", "SLICE_KINDS", "SLICE_PANELS", "slice_concentration_figure",
           "smart_init_figure", "smart_init_paired_figure"]

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


def smart_init_paired_figure(ours: dict[str, Any]) -> Figure:
    """The claim's arm minus each control, seed by seed, per epoch: the mean paired difference
    (points) with bars of two standard errors (about 95 %, uncorrected), a filled marker
    where Holm's correction finds it significant (the entry's rule)."""
    from bnviz.replication.smart_init import ALPHA, smart_init_arm

    epochs = list(range(1, int(ours["epochs"]) + 1))
    colours = {"zero_bias": "#2ca02c", "random_bias": "#9467bd"}
    traces = []
    for k, (control, v) in enumerate(ours["paired"].items()):
        half = [200 * s for s in v["se"]]
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": f"minus {control}",
            "x": [e + (k - 0.5) * 0.15 for e in epochs], "y": [100 * m for m in v["mean"]],
            "error_y": {"type": "data", "array": half, "visible": True, "thickness": 1},
            "line": {"color": colours.get(control, "#7f7f7f"), "width": 1},
            "marker": {"size": 8, "color": [colours.get(control, "#7f7f7f") if p < ALPHA
                                            else "white" for p in v["p_holm"]],
                       "line": {"color": colours.get(control, "#7f7f7f"), "width": 1.5}},
            "text": [f"epoch {e}: {100 * m:+.2f} ± {100 * s:.2f} points, Holm p {p:.3g}"
                     for e, m, s, p in zip(epochs, v["mean"], v["se"], v["p_holm"],
                                           strict=True)],
            "hoverinfo": "text"})
    return {"data": traces, "layout": {
        "title": {"text": f"{smart_init_arm(ours)} minus each control, paired by seed "
                          "(filled: significant after Holm's correction)", "x": 0.01,
                  "font": {"size": 13}},
        "xaxis": {"title": {"text": "epoch"}, "dtick": 1},
        "yaxis": {"title": {"text": "test accuracy difference (points)"}, "zeroline": True},
        "legend": {"orientation": "h", "y": -0.25},
        "margin": {"l": 60, "r": 10, "t": 40, "b": 40}}}


#: The off-data images of the slice entry, and their markers' colours.
SLICE_KINDS: dict[str, str] = {"gaussian": "#1f77b4", "shuffled": "#d62728"}


#: The slice entry's four measurements, one panel each: (when, BN's mode), in reading order.
SLICE_PANELS: tuple[tuple[str, str], ...] = (("init", "train"), ("init", "eval"),
                                             ("trained", "train"), ("trained", "eval"))


def slice_concentration_figure(ours: dict[str, Any]) -> Figure:
    """Every network's log(mean regions about test images / about off-data images), per arm
    and off-data kind (the networks of one seed side by side), in four panels: at
    initialisation and trained, BN cut in train mode (a mini-batch's statistics) and in eval
    mode (the running ones).  These are the values the entry's paired test compares, BN
    against random bias and scale only. 0: no more regions on the data."""
    arms, seeds = list(ours["arms"]), list(ours["seeds"])
    traces: list[dict[str, Any]] = []
    axes: dict[str, Any] = {}
    panels = [(w, m) for w, m in SLICE_PANELS if m in ours["per_network"].get(w, {})]
    for p, (when, mode) in enumerate(panels):
        values = ours["per_network"][when][mode]
        suffix = "" if p == 0 else str(p + 1)
        row, col = divmod(p, 2)
        axes[f"xaxis{suffix}"] = {
            "domain": [0.0, 0.47] if col == 0 else [0.53, 1.0], "anchor": f"y{suffix}",
            "tickvals": list(range(len(arms))), "ticktext": arms, "zeroline": False,
            "range": [-0.6, len(arms) - 0.4], "showticklabels": row == 1 or len(panels) <= 2}
        axes[f"yaxis{suffix}"] = {
            "domain": [0.56, 1.0] if row == 0 else [0.0, 0.44], "anchor": f"x{suffix}",
            "zeroline": True, "matches": "y" if p else None,
            "title": {"text": "log(on / off data)" if col == 0 else ""}}
        axes[f"yaxis{suffix}"] = {k: v for k, v in axes[f"yaxis{suffix}"].items()
                                  if v is not None}
        for k, (kind, colour) in enumerate(SLICE_KINDS.items()):
            xs, ys, texts = [], [], []
            for i, arm in enumerate(arms):
                for j, (seed, v) in enumerate(zip(seeds, values[arm][f"log_ratio_{kind}"],
                                                  strict=True)):
                    xs.append(i + (k - 0.5) * 0.36 + (j - (len(seeds) - 1) / 2) * 0.05)
                    ys.append(v)
                    texts.append(f"{when}, BN {mode}: {arm}, seed {seed}, {kind}: {v:+.3f}")
            traces.append({"type": "scatter", "mode": "markers", "x": xs, "y": ys,
                           "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                           "name": f"against {kind} images", "legendgroup": kind,
                           "showlegend": p == 0, "meta": [when, mode], "text": texts,
                           "hoverinfo": "text", "marker": {"color": colour, "size": 7}})
    notes = [{"text": f"{when}, BN in {mode} mode", "showarrow": False, "xref": "paper",
              "yref": "paper", "x": 0.0 if p % 2 == 0 else 0.53,
              "y": 1.0 if p < 2 else 0.44, "xanchor": "left", "yanchor": "bottom",
              "font": {"size": 12}} for p, (when, mode) in enumerate(panels)]
    return {"data": traces, "layout": {
        "title": {"text": f"{ours['dataset']}: every network, one dot each", "x": 0.01},
        **axes, "annotations": notes,
        "legend": {"orientation": "h", "y": -0.12},
        "margin": {"l": 60, "r": 10, "t": 50, "b": 40}}}
