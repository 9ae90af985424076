"""The ``landscape`` image experiment (Santurkar et al., sections 2-3, on image networks): the
same network trained by plain SGD with BN (learnable gamma, beta) and without; every
``measure_every`` steps, on that step's mini-batch, the loss range and the largest gradient
change along -g for step sizes in [1/2, 4] x lr, the effective beta-smoothness, and
Definition 2.1's internal covariate shift per weight tensor (in definition order), as
:mod:`bnviz.papers.landscape` measures them for the 2D task."""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bnviz.images.networks import build_model
from bnviz.images.params import ARMS
from bnviz.images.training import ImageTensors, test_accuracy
from bnviz.records.types import JobContext

__all__ = ["landscape_measures", "run_landscape"]


def landscape_measures(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float,
                       etas: int) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """Santurkar et al.'s measures at the model's current parameters on one mini-batch
    (float32 as the network trains; BN in train mode): returns (measures, gradient).

    Step sizes and the Definition 2.1 hybrids are a handful each: one forward-backward pass
    per step size and per weight tensor (batched passes would hold several copies of an image
    network's activations)."""
    from torch.func import functional_call

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def grad_and_value(p: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], float]:
        """Plain autograd on a copy of the buffers: a measurement never moves the model's
        running statistics (torch.func transforms refuse BN's in-place buffer updates)."""
        q = {k: v.detach().requires_grad_() for k, v in p.items()}
        out = functional_call(model, {**q, **{k: v.clone() for k, v in buffers.items()}},
                              (x,))
        loss = F.cross_entropy(out, y)
        grads = torch.autograd.grad(loss, list(q.values()))
        return dict(zip(q, grads, strict=True)), float(loss.detach())

    grads, loss = grad_and_value(params)
    g = torch.cat([t.flatten() for t in grads.values()])
    g_norm = float(g.norm())
    losses, changes, betas = [], [], []
    for eta in np.geomspace(0.5, 4.0, etas) * lr:
        ge, le = grad_and_value({k: params[k] - eta * grads[k] for k in params})
        change = float((torch.cat([t.flatten() for t in ge.values()]) - g).norm())
        losses.append(le)
        changes.append(change)
        betas.append(change / max(eta * g_norm, 1e-30))
    names = list(params)
    weights = [i for i, k in enumerate(names) if k.endswith("weight") and params[k].ndim > 1]
    stepped = {k: params[k] - lr * grads[k] for k in names}
    l2, cos = [], []
    for i in weights:  # Definition 2.1: tensors defined before W_i take this step first
        gh, _ = grad_and_value({k: stepped[k] if j < i else params[k]
                                for j, k in enumerate(names)})
        a, b = grads[names[i]].flatten(), gh[names[i]].flatten()
        l2.append(float((a - b).norm()))
        cos.append(float(a @ b / (a.norm() * b.norm()).clamp_min(1e-30)))
    measures = {"train_loss": loss, "loss_min": min(losses), "loss_max": max(losses),
                "grad_change_max": max(changes), "beta_eff": max(betas),
                "ics_l2": float(np.mean(l2[1:])) if len(l2) > 1 else 0.0,
                "ics_cos": float(np.mean(cos[1:])) if len(cos) > 1 else 1.0}
    return measures, grads


def run_landscape(params: dict, data: ImageTensors, shape: tuple[int, int, int],
                   ctx: JobContext) -> None:
    """Plain SGD (the measures are about the gradient step) for both arms; a metric row per
    measured step (kind "step") and per epoch (kind "epoch": test accuracy)."""
    arms = ARMS["landscape"]
    n, b = len(data.y_train), params["batch_size"]
    total = params["runs"] * len(arms) * params["epochs"] * math.ceil(n / b)
    done = 0
    for run in range(params["runs"]):
        seed = params["seed"] + run
        for arm, (mode, affine) in arms.items():
            model = build_model(params["arch"], shape[0], data.classes, shape[1], mode,
                                affine=affine, width=params["width"],
                                seed=seed).to(data.x_train.device)
            opt = torch.optim.SGD(model.parameters(), lr=params["lr"])
            gen = torch.Generator().manual_seed(seed)
            step = 0
            for epoch in range(1, params["epochs"] + 1):
                t0 = time.perf_counter()
                total_loss, count = 0.0, 0
                model.train()
                perm = torch.randperm(n, generator=gen).to(data.x_train.device)
                for i in range(0, n - 1, b):
                    idx = perm[i:i + b]
                    if len(idx) < 2:  # BN needs two images
                        continue
                    x, y = data.x_train[idx], data.y_train[idx]
                    if step % params["measure_every"] == 0:
                        measures, _ = landscape_measures(model, x, y, params["lr"],
                                                         params["etas"])
                        ctx.metric({"kind": "step", "arm": arm, "run": run, "epoch": epoch,
                                    "step": step, **measures})
                    loss = F.cross_entropy(model(x), y)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    total_loss += float(loss.detach()) * len(idx)
                    count += len(idx)
                    step += 1
                    done += 1
                    if done % 5 == 0:
                        ctx.progress(min(done / total, 1.0))
                acc = test_accuracy(model, data.x_test, data.y_test)
                mean_loss = total_loss / count if count else math.nan
                ctx.metric({"kind": "epoch", "arm": arm, "run": run, "epoch": epoch,
                            "train_loss": mean_loss if math.isfinite(mean_loss) else None,
                            "test_accuracy": acc,
                            "seconds": round(time.perf_counter() - t0, 4)})
                ctx.log(f"run {run}, {arm}, epoch {epoch}: test accuracy {100 * acc:.2f}%")
