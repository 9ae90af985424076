"""An image experiment run here, in the foreground (``bnviz jobs run``), and a learning-rate
sweep of a training one (``bnviz jobs run TYPE --lrs ...``).

The BN paper's Figures 5 and 10 compare initialisations at a learning rate chosen by cross
validation, over 10 runs.  A fair comparison chooses each arm's learning rate on held-out
data: here every learning rate of the sweep runs the job type's own code
(:func:`bnviz.images.experiments.run_experiment`, the same seeds for every rate), a fixed,
class-stratified part of the training images is held out (``validation``), and each arm
keeps the rate with the best mean validation accuracy after the last epoch.  Its test
accuracy at that rate, mean and standard deviation over the runs, is the arm's result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bnviz.caps import LEARNING_RATE, MAX_LR_EXTENSIONS
from bnviz.images.experiments import run_experiment, summarise
from bnviz.images.params import check_params
from bnviz.records.types import ParamError, RecordingContext

__all__ = ["SWEEP_TYPES", "lr_sweep", "run_here"]

#: The job types that train, and so have a learning rate to sweep.
SWEEP_TYPES: tuple[str, ...] = ("smart-init", "jitter-noise", "affine-ablation")


def _finals(rows: list[dict[str, Any]], arm: str, last: int) -> list[float]:
    """Each run's test accuracy after the last epoch (their mean and std are the summary's)."""
    return [float(r["test_accuracy"]) for r in rows if r["arm"] == arm and r["epoch"] == last]


def run_here(job_type: str, params: dict[str, Any], device: Any,
             log: Callable[[str], None] = lambda line: None,
             keep: Path | None = None) -> dict[str, Any]:
    """One run of ``job_type`` in this process, with the job's own code and checks; returns
    ``{"job_type", "params", "arms": summary}`` (:func:`bnviz.images.experiments.summarise`).
    ``keep``: a folder where the networks the job keeps are written (``<arm>-run<run>.
    safetensors``)."""
    checked = check_params(job_type, params)
    ctx = RecordingContext(device=device)
    log(f"{job_type}: {checked.get('runs', 1)} runs on {checked['dataset']}")
    run_experiment(job_type, checked, ctx)
    if keep is not None:
        for name, data in ctx.networks.items():
            (keep / f"{name}.safetensors").write_bytes(data)
    return {"job_type": job_type, "params": checked,
            "arms": summarise(job_type, ctx.rows)["arms"]}


def _curves(rows: list[dict[str, Any]], arm: str, epochs: list[int]) -> list[list[float]]:
    """Each run's test accuracy at every epoch, (runs, epochs) in run order: the arms share
    their runs' seeds, so run r of one arm is paired with run r of another."""
    by_run: dict[int, dict[int, float]] = {}
    for r in rows:
        if r["arm"] == arm and r.get("kind", "epoch") == "epoch":
            by_run.setdefault(int(r["run"]), {})[r["epoch"]] = float(r["test_accuracy"])
    return [[by_run[run][e] for e in epochs] for run in sorted(by_run)]


def _chosen(per_lr: list[dict[str, Any]], by: str) -> dict[str, int]:
    """Each arm's best rate's index on the (sorted) grid."""
    return {arm: int(np.argmax([s["arms"][arm].get("final_val" if by == "validation"
                                                   else "final") or 0.0 for s in per_lr]))
            for arm in per_lr[0]["arms"]}


def lr_sweep(job_type: str, params: dict[str, Any], lrs: Sequence[float], device: Any,
             log: Callable[[str], None] = lambda line: None,
             extend: bool = False) -> dict[str, Any]:
    """Run ``job_type`` once per learning rate of ``lrs`` (every other parameter from
    ``params``, checked by the job's own model first, all rates before any work) and choose
    each arm's rate.  With ``extend``, a grid whose best rate for some arm is its largest
    (smallest) gets twice that rate (half) added and run, until no arm's choice is at an
    edge, or :data:`~bnviz.caps.MAX_LR_EXTENSIONS` rates were added, or the next rate is out
    of bounds: a rate at the edge of the grid may not be the arm's best (issue 44's
    smart-init rule).

    Returns ``{"job_type", "params", "lrs", "per_lr": [{"lr", "arms": summary}],
    "at_edge": [arms whose rate is still the grid's largest or smallest],
    "arms": {arm: {"lr", "selected_by", "final", "std", "finals", "curves", "val", "epoch",
    "mean", "mean_std"}}}``: ``curves`` is each run's test accuracy per epoch (paired across
    arms by run); ``selected_by`` is ``"validation"`` when ``params["validation"] > 0``, else
    ``"test"`` (the rate with the best mean test accuracy: optimistic, said so).
    """
    if job_type not in SWEEP_TYPES:
        raise ParamError(f"sweep: {job_type} does not train (one of {', '.join(SWEEP_TYPES)})")
    lrs = sorted({float(lr) for lr in lrs})
    if not lrs:
        raise ParamError("sweep: give at least one learning rate")
    checked = {lr: check_params(job_type, {**params, "lr": lr}) for lr in lrs}
    by = "validation" if checked[lrs[0]].get("validation", 0.0) > 0 else "test"
    runs: dict[float, tuple[dict[str, Any], list[dict[str, Any]]]] = {}

    def run(lr: float) -> None:
        p = checked[lr]
        ctx = RecordingContext(device=device)
        log(f"lr {lr:g}: {p['runs']} runs x {p['epochs']} epochs on {p['dataset']}")
        run_experiment(job_type, p, ctx)
        runs[lr] = ({"lr": lr, "arms": summarise(job_type, ctx.rows)["arms"]}, ctx.rows)

    for lr in lrs:
        run(lr)
    for _ in range(MAX_LR_EXTENSIONS if extend and len(lrs) > 1 else 0):
        grid = sorted(runs)
        best = set(_chosen([runs[lr][0] for lr in grid], by).values())
        wider = ([grid[-1] * 2] if len(grid) - 1 in best else []) + (
            [grid[0] / 2] if 0 in best else [])
        wider = [lr for lr in wider if LEARNING_RATE[0] < lr <= LEARNING_RATE[1]]
        if not wider:
            break
        for lr in wider:
            checked[lr] = check_params(job_type, {**params, "lr": lr})
            log(f"lr {lr:g}: added, a rate was best at the edge of the grid")
            run(lr)
    lrs = sorted(runs)
    per_lr = [runs[lr][0] for lr in lrs]
    chosen = _chosen(per_lr, by)
    arms: dict[str, Any] = {}
    for arm, best in chosen.items():
        summary = per_lr[best]["arms"][arm]
        arms[arm] = {"lr": lrs[best], "selected_by": by, "final": summary["final"],
                     "std": summary["std"][-1],
                     "finals": _finals(runs[lrs[best]][1], arm, summary["epoch"][-1]),
                     "curves": _curves(runs[lrs[best]][1], arm, summary["epoch"]),
                     "val": summary.get("final_val"),
                     "epoch": summary["epoch"], "mean": summary["mean"],
                     "mean_std": summary["std"]}
    at_edge = sorted(arm for arm, best in chosen.items()
                     if len(lrs) > 1 and best in (0, len(lrs) - 1))
    shown = {k: v for k, v in checked[lrs[0]].items() if k != "lr"}
    return {"job_type": job_type, "params": shown, "lrs": lrs, "per_lr": per_lr,
            "at_edge": at_edge, "arms": arms}
