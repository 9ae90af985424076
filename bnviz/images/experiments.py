"""The BN paper's image experiments, as job types (the jobs tab and ``bnviz jobs``).

* ``smart-init`` (Figures 5, 10): the same random weights, no BN during training, initialised
  three ways: zero bias, random bias, or BN statistics computed once over the training set and
  then frozen (:func:`bnviz.images.networks.calibrate_frozen`); SGD; test accuracy per epoch, for
  several runs (seeds).
* ``concentration`` (Figure 4, :mod:`bnviz.images.concentration`): random weights; for each
  initialisation, the number of units whose pre-activation changes sign inside an eps-ball
  around training images vs around Gaussian images with the data's per-channel mean and
  variance.
* ``jitter-noise`` (section 5): BN vs BN with extra noise raising the variance of mu_B and
  sigma_B^2 by ``noise`` (default 15%).
* ``affine-ablation`` (Table 1): BN without vs with learnable gamma, beta.
* ``landscape`` (Santurkar et al., sections 2-3, :mod:`bnviz.images.landscape`): plain SGD
  with and without BN, and their loss landscape and internal covariate shift.

The three training types are :mod:`bnviz.images.training`; the parameters are described by
:mod:`bnviz.params.jobs` (one model per type) and checked by :mod:`bnviz.images.params`.
A job reports through a :class:`~bnviz.records.types.JobContext`: ``progress`` (which raises
:class:`~bnviz.records.types.Cancelled` when the job was cancelled), ``log`` and ``metric`` (one
row per arm, run and epoch). Everything is plain torch and numpy, on ``ctx.device``; training
uses mixed precision (bfloat16 autocast) on cuda, and torch DDP when the job runs in several
processes (``dist``).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import numpy as np

from bnviz.data.imagedata import load_image_data
from bnviz.images.concentration import run_concentration
from bnviz.images.landscape import run_landscape
from bnviz.images.params import ARMS, check_params
from bnviz.images.training import run_training, standardise
from bnviz.records.types import DistInfo, JobContext, JobType

__all__ = ["image_job_type", "run_experiment", "summarise"]


def image_job_type(name: str) -> JobType:
    """The job type of one image experiment (its parameters:
    :data:`bnviz.params.jobs.IMAGE_JOB_PARAMS`)."""
    return JobType(name, partial(check_params, name), partial(run_experiment, name),
                   partial(summarise, name))


def run_experiment(job_type: str, params: dict, ctx: JobContext,
                   dist: DistInfo | None = None) -> dict[str, Any]:
    """Run one job (parameters already checked by
    :func:`~bnviz.images.params.check_params`); returns values for its summary."""
    dist = dist or DistInfo()
    t0 = time.perf_counter()
    data = load_image_data(params["dataset"], params.get("image_size", 64),
                           params.get("max_train", 0))
    shape = data.shape
    ctx.log(f"{data.name}: {len(data.y_train)} training and {len(data.y_test)} test images of "
            f"shape {shape}, {data.num_classes} classes; device {ctx.device}")
    tensors = standardise(data, ctx.device, params.get("validation", 0.0))
    if job_type == "concentration":
        run_concentration(params, tensors, shape, ctx)
    elif job_type == "landscape":
        run_landscape(params, tensors, shape, ctx)
    else:
        run_training(job_type, params, tensors, shape, ctx, dist)
    ctx.progress(1.0)
    ctx.log(f"done in {time.perf_counter() - t0:.1f} s")
    return {"seconds": time.perf_counter() - t0}


def summarise(job_type: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and spread over runs. Training types: per arm, the test accuracy per epoch
    (mean, std, runs) and the final accuracy. Concentration: per arm, kind and eps, the mean
    number of units crossing the ball summed over layers (mean, std over runs)."""
    out: dict[str, Any] = {"arms": {}}
    arms = list(ARMS.get(job_type, {}))
    if job_type == "concentration":
        for arm in arms:
            per: dict[str, Any] = {}
            for kind in ("data", "gaussian"):
                eps_values = sorted({r["eps"] for r in rows if r["arm"] == arm
                                     and r["images"] == kind})
                means, stds = [], []
                for eps in eps_values:
                    runs: dict[int, float] = {}
                    for r in rows:
                        if r["arm"] == arm and r["images"] == kind and r["eps"] == eps:
                            runs[r["run"]] = runs.get(r["run"], 0.0) + r["mean"]
                    v = np.array(list(runs.values()))
                    means.append(float(v.mean()))
                    stds.append(float(v.std()))
                per[kind] = {"eps": eps_values, "mean": means, "std": stds}
            out["arms"][arm] = per
        return out
    for arm in arms:
        by_epoch: dict[int, list[float]] = {}
        for r in rows:
            if r["arm"] == arm and r.get("kind", "epoch") == "epoch":
                by_epoch.setdefault(r["epoch"], []).append(r["test_accuracy"])
        epochs = sorted(by_epoch)
        acc = [np.array(by_epoch[e]) for e in epochs]
        out["arms"][arm] = {
            "epoch": epochs, "mean": [float(a.mean()) for a in acc],
            "std": [float(a.std()) for a in acc], "runs": [len(a) for a in acc],
            "final": float(acc[-1].mean()) if acc else None}
        val = [r["val_accuracy"] for r in rows if r["arm"] == arm and "val_accuracy" in r
               and r.get("epoch") == (epochs[-1] if epochs else None)]
        if val:  # smart-init with a validation split: where its learning rate is chosen
            out["arms"][arm]["final_val"] = float(np.mean(val))
        if job_type == "landscape":  # the measures per measured step, mean and std over runs
            by_step: dict[int, list[dict]] = {}
            for r in rows:
                if r["arm"] == arm and r.get("kind") == "step":
                    by_step.setdefault(r["step"], []).append(r)
            steps = sorted(by_step)
            land: dict[str, Any] = {"step": steps}
            for key in ("beta_eff", "grad_change_max", "ics_l2", "ics_cos", "train_loss"):
                vals = [np.array([r[key] for r in by_step[s]], dtype=float) for s in steps]
                land[key] = [float(v.mean()) for v in vals]
                land[key + "_std"] = [float(v.std()) for v in vals]
            land["loss_range"] = [float(np.mean([r["loss_max"] - r["loss_min"]
                                                 for r in by_step[s]])) for s in steps]
            out["arms"][arm]["landscape"] = land
    return out
