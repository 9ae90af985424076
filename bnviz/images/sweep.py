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


def lr_sweep(job_type: str, params: dict[str, Any], lrs: Sequence[float], device: Any,
             log: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Run ``job_type`` once per learning rate of ``lrs`` (every other parameter from
    ``params``, checked by the job's own model first, all rates before any work) and choose
    each arm's rate.

    Returns ``{"job_type", "params", "lrs", "per_lr": [{"lr", "arms": summary}],
    "arms": {arm: {"lr", "selected_by", "final", "std", "finals", "val", "epoch", "mean",
    "mean_std"}}}``: ``selected_by`` is ``"validation"`` when ``params["validation"] > 0``,
    else ``"test"`` (the rate with the best mean test accuracy: optimistic, said so).
    """
    if job_type not in SWEEP_TYPES:
        raise ParamError(f"sweep: {job_type} does not train (one of {', '.join(SWEEP_TYPES)})")
    lrs = sorted({float(lr) for lr in lrs})
    if not lrs:
        raise ParamError("sweep: give at least one learning rate")
    checked = [check_params(job_type, {**params, "lr": lr}) for lr in lrs]
    per_lr: list[dict[str, Any]] = []
    rows_by_lr: list[list[dict[str, Any]]] = []
    for lr, p in zip(lrs, checked, strict=True):
        ctx = RecordingContext(device=device)
        log(f"lr {lr:g}: {p['runs']} runs x {p['epochs']} epochs on {p['dataset']}")
        run_experiment(job_type, p, ctx)
        per_lr.append({"lr": lr, "arms": summarise(job_type, ctx.rows)["arms"]})
        rows_by_lr.append(ctx.rows)
    by = "validation" if checked[0].get("validation", 0.0) > 0 else "test"
    arms: dict[str, Any] = {}
    for arm in per_lr[0]["arms"]:
        score = [s["arms"][arm].get("final_val" if by == "validation" else "final") or 0.0
                 for s in per_lr]
        best = int(np.argmax(score))
        chosen = per_lr[best]["arms"][arm]
        arms[arm] = {"lr": lrs[best], "selected_by": by, "final": chosen["final"],
                     "std": chosen["std"][-1],
                     "finals": _finals(rows_by_lr[best], arm, chosen["epoch"][-1]),
                     "val": chosen.get("final_val"),
                     "epoch": chosen["epoch"], "mean": chosen["mean"],
                     "mean_std": chosen["std"]}
    shown = {k: v for k, v in checked[0].items() if k != "lr"}
    return {"job_type": job_type, "params": shown, "lrs": lrs, "per_lr": per_lr,
            "arms": arms}
