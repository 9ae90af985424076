"""The ``concentration`` image experiment (the BN paper's Figure 4): random weights; for each
initialisation, the number of units whose pre-activation changes sign inside an eps-ball
around training images vs around Gaussian images with the data's per-channel mean and
variance (eps-balls sampled uniformly: a folded hyperplane crosses the ball when a unit takes
both strict signs in it, the 2D views' rule)."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from bnviz.images.networks import build_model, calibrate_frozen, layer_preactivations
from bnviz.images.params import ARMS
from bnviz.images.training import ImageTensors, chunks
from bnviz.records.types import JobContext

__all__ = ["run_concentration", "sign_change_counts"]


def _ball_samples(center: torch.Tensor, samples: int, radius: float,
                  gen: torch.Generator) -> torch.Tensor:
    """``samples`` points uniform in the L2 ball of the given radius around each image:
    (N, S, ...) = center + r * u^(1/d) * g/||g|| (direction uniform on the sphere, radius with
    density ∝ r^(d-1))."""
    n, d = len(center), center[0].numel()
    g = torch.randn((n, samples, d), generator=gen, device="cpu").to(center.device)
    g = g / g.norm(dim=-1, keepdim=True)
    r = torch.rand((n, samples, 1), generator=gen, device="cpu").to(center.device) ** (1.0 / d)
    return center.reshape(n, 1, d) + radius * r * g


@torch.no_grad()
def sign_change_counts(model: nn.Module, centers: torch.Tensor, samples: int, radius: float,
                       gen: torch.Generator) -> torch.Tensor:
    """(N, layers): for each image, the number of units of each norm layer whose
    pre-activation takes both strict signs over the image and ``samples`` points uniform in the
    ball around it (a folded hyperplane of that unit crosses the ball; the 2D views' rule)."""
    model.eval()
    n, shape = len(centers), centers.shape[1:]
    points = torch.cat([centers.reshape(n, 1, -1),
                        _ball_samples(centers, samples, radius, gen)], 1)
    hs = layer_preactivations(model, points.reshape(n * (samples + 1), *shape))
    counts = [((h.view(n, samples + 1, -1) > 0).any(1) & (h.view(n, samples + 1, -1) < 0).any(1))
              .sum(-1) for h in hs]
    return torch.stack(counts, 1)


def run_concentration(params: dict, data: ImageTensors, shape: tuple[int, int, int],
                       ctx: JobContext) -> None:
    arms = ARMS["concentration"]
    pick = np.random.default_rng(params["seed"]).permutation(len(data.y_train))
    images = data.x_train[torch.as_tensor(pick[:params["images"]], device=data.x_train.device)]
    gen = torch.Generator().manual_seed(params["seed"])
    # Gaussian images with the data's per-channel mean and variance (standardised: N(0, 1))
    mean = data.x_train.mean((0, 2, 3), keepdim=True)
    std = data.x_train.std((0, 2, 3), keepdim=True, correction=0)
    gauss = (torch.randn(images.shape, generator=gen).to(images.device) * std + mean)
    d = images[0].numel()
    per_pass = max(1, 4096 // (params["samples"] + 1))
    total = params["runs"] * len(arms) * 2 * len(params["eps"]) * math.ceil(len(images) / per_pass)
    done = 0
    for run in range(params["runs"]):
        seed = params["seed"] + run
        for arm, (mode, _) in arms.items():
            model = build_model(params["arch"], shape[0], data.classes, shape[1], mode,
                                width=params["width"], seed=seed).to(images.device)
            if mode == "frozen":
                calibrate_frozen(model, lambda: chunks(data.x_train))
            units = [h.shape[1] for h in layer_preactivations(model.eval(), images[:1])]
            for kind, centers in (("data", images), ("gaussian", gauss)):
                for eps in params["eps"]:
                    counts = []
                    for chunk in chunks(centers, per_pass):
                        counts.append(sign_change_counts(model, chunk, params["samples"],
                                                         eps * math.sqrt(d), gen).cpu())
                        done += 1
                        ctx.progress(done / total)
                    c = torch.cat(counts).double()
                    for layer in range(c.shape[1]):
                        ctx.metric({"arm": arm, "run": run, "images": kind, "eps": eps,
                                    "layer": layer + 1, "units": units[layer],
                                    "mean": float(c[:, layer].mean()),
                                    "std": float(c[:, layer].std(correction=0))})
                    ctx.log(f"run {run}, {arm}, {kind} images, eps {eps:g}: "
                            f"{float(c.sum(1).mean()):.1f} units cross the ball on average")
