"""Santurkar et al.'s measurements of training with and without BN, on a 2D task.

A fully connected network (ReLU, a two-logit head, cross-entropy) is trained by SGD from the
same initial weights with BN (train-mode batch mean and BIASED std, learnable gamma and
beta, placed before the non-linearity as in the paper) and without (a bias instead).  At
every step t, on that step's mini-batch, with parameters theta_t and gradient g_t:

* loss landscape (section 3.1, App. A.2.2): the range over eta of L(theta_t - eta g_t) for
  step sizes eta in [eta_lo, eta_hi] x lr (the paper: [1/2, 4] x lr for VGG);
* gradient predictiveness: the range over eta of ||g_t - grad L(theta_t - eta g_t)||;
* effective beta-smoothness: max over eta of ||g_t - grad L(theta_t - eta g_t)|| / ||eta g_t||
  (Fig. 4: "the maximum difference in gradient over distance moved in that direction");
* internal covariate shift, Definition 2.1, per layer i: ||G_ti - G'_ti|| and the cosine of
  G_ti and G'_ti, where G' is the gradient for W_i after layers 1..i-1 took this step's update
  and layers i..k did not, on the same batch.

"Noisy BN" (Algorithm 1) adds, after each BN, a ← s a + m with per-step, per-unit mu_j ~
U(-n_mu, n_mu), sigma_j ~ U(1, n_sigma) and per-element m ~ U(mu_j - r_mu, mu_j + r_mu),
s ~ N(sigma_j, r_sigma) (defaults 0.5, 1.25, 0.1, 0.1; r_sigma taken as a std); the noise of a
step is drawn once and used for all of that step's measurements.

The eta evaluations and the layer hybrids of Definition 2.1 are batched with torch.func (vmap
over stacked parameter sets): no Python loop over step sizes or layers.  Float64 throughout.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.func import grad_and_value, vmap

from bnviz.core.bn import batch_statistics, bn_forward
from bnviz.device import pick_device
from bnviz.params.landscape import LandscapeParams, NoisyBN
from bnviz.records.results import load_result
from bnviz.records.types import DistInfo, JobContext, JobType, validate_params

__all__ = ["LANDSCAPE_2D_JOB", "LandscapeResult", "NoisyBN",
           "check_landscape_params", "init_params", "load_landscape", "run_landscape",
           "run_landscape_job", "square_grid"]



@dataclass(frozen=True)
class LandscapeResult:
    """Per arm ("bn", "no_bn"): arrays over steps."""

    settings: LandscapeParams
    arms: dict[str, dict[str, np.ndarray]]
    decision: dict[str, np.ndarray]  # arm -> (R, R) predicted class on a grid of the box
    box: tuple[float, float, float, float]
    points: np.ndarray
    labels: np.ndarray
    seconds: float
    device: str


def init_params(depth: int, width: int, seed: int, bn: bool,
                device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """A ReLU MLP on 2D inputs with a two-logit head, the same W for every arm (He-normal,
    seeded): with BN, gamma = 1 and beta = 0 per layer, else a zero bias."""
    gen = torch.Generator().manual_seed(int(seed))
    params: dict[str, torch.Tensor] = {}
    d_in = 2
    for i in range(depth):
        w = torch.randn(width, d_in, generator=gen, dtype=torch.float64)
        params[f"W{i + 1}"] = w * math.sqrt(2.0 / d_in)
        if bn:
            params[f"gamma{i + 1}"] = torch.ones(width, dtype=torch.float64)
            params[f"beta{i + 1}"] = torch.zeros(width, dtype=torch.float64)
        else:
            params[f"b{i + 1}"] = torch.zeros(width, dtype=torch.float64)
        d_in = width
    head = torch.randn(2, d_in, generator=gen, dtype=torch.float64) * math.sqrt(1.0 / d_in)
    params["head_W"] = head
    params["head_b"] = torch.zeros(2, dtype=torch.float64)
    return {k: v.to(device) for k, v in params.items()}


def square_grid(points: np.ndarray, res: int = 96, device: torch.device | str = "cpu"
                ) -> tuple[tuple[float, float, float, float], torch.Tensor]:
    """A square box around the data (15 % margin) and the (res^2, 2) centres of a res x res
    grid in it, row by row: where the decision maps are drawn."""
    e = float(np.abs(points).max()) * 1.15 + 0.1
    g1 = torch.linspace(-e, e, res, dtype=torch.float64, device=device)
    return (-e, e, -e, e), torch.stack([g1.repeat(res), g1.repeat_interleave(res)], 1)


def _logits(params: dict[str, torch.Tensor], x: torch.Tensor, depth: int, bn: bool,
            noise: list[tuple[torch.Tensor, torch.Tensor]] | None) -> torch.Tensor:
    z = x
    for i in range(1, depth + 1):
        u = z @ params[f"W{i}"].T
        if bn:
            a = bn_forward(u, *batch_statistics(u))  # biased sigma (eq. 3)
            if noise is not None:  # Algorithm 1: a <- s a + m, after the normalisation
                s, m = noise[i - 1]
                a = s * a + m
            u = params[f"gamma{i}"] * a + params[f"beta{i}"]
        else:
            u = u + params[f"b{i}"]
        z = torch.relu(u)
    return z @ params["head_W"].T + params["head_b"]


def _draw_noise(spec: NoisyBN, b: int, width: int, depth: int, gen: torch.Generator,
                dev: torch.device) -> list[tuple[torch.Tensor, torch.Tensor]]:
    out = []
    for _ in range(depth):
        mu_j = (torch.rand(width, generator=gen, dtype=torch.float64) * 2 - 1) * spec.n_mu
        sigma_j = 1 + torch.rand(width, generator=gen, dtype=torch.float64) * (spec.n_sigma - 1)
        m = mu_j + (torch.rand(b, width, generator=gen, dtype=torch.float64) * 2 - 1) * spec.r_mu
        s = sigma_j + torch.randn(b, width, generator=gen, dtype=torch.float64) * spec.r_sigma
        out.append((s.to(dev), m.to(dev)))
    return out


def run_landscape(settings: LandscapeParams, device: torch.device | str | None = None,
                  progress: Callable[[int], None] | None = None) -> LandscapeResult:
    """Train both arms and measure, at every step, the landscape and Definition 2.1."""
    from bnviz.views.jitter import binary_task

    t0 = time.perf_counter()
    dev = torch.device(device) if device is not None else pick_device()
    data = binary_task(settings.dataset, settings.n_points, settings.data_seed)
    x_all = torch.as_tensor(data.points, dtype=torch.float64, device=dev)
    y_all = torch.as_tensor(data.labels, dtype=torch.int64, device=dev)
    etas = torch.logspace(math.log10(settings.eta_lo), math.log10(settings.eta_hi),
                          settings.etas, dtype=torch.float64, device=dev) * settings.lr
    arms: dict[str, dict[str, np.ndarray]] = {}
    decision: dict[str, np.ndarray] = {}
    res = 96
    box, grid = square_grid(data.points, res, dev)
    depth = settings.depth
    for arm_index, arm in enumerate(("bn", "no_bn")):
        bn = arm == "bn"
        params = init_params(depth, settings.width, settings.weight_seed, bn, dev)
        names = list(params)
        weights = [f"W{i}" for i in range(1, depth + 1)]
        batch_gen = torch.Generator().manual_seed(int(settings.weight_seed) + 17)
        noise_gen = torch.Generator().manual_seed(int(settings.weight_seed) + 29)
        rows: dict[str, list] = {k: [] for k in (
            "loss", "accuracy", "loss_min", "loss_max", "grad_change_min", "grad_change_max",
            "beta_eff", "ics_l2", "ics_cos")}
        for step in range(settings.steps):
            idx = torch.randperm(settings.n_points, generator=batch_gen)[:settings.batch_size]
            idx = idx.to(dev)
            x, y = x_all[idx], y_all[idx]
            noise = (_draw_noise(settings.noisy, settings.batch_size, settings.width, depth,
                                 noise_gen, dev) if bn and settings.noisy else None)

            def loss_fn(p: dict[str, torch.Tensor], x=x, y=y, noise=noise, bn=bn
                        ) -> torch.Tensor:
                return torch.nn.functional.cross_entropy(_logits(p, x, depth, bn, noise), y)

            grads, loss = grad_and_value(loss_fn)(params)
            g = torch.cat([grads[k].flatten() for k in names])
            # ---- the landscape along -g: all step sizes at once ----------------------------
            moved = {k: params[k][None] - etas.view(-1, *[1] * params[k].ndim) * grads[k][None]
                     for k in names}
            g_eta, l_eta = vmap(grad_and_value(loss_fn))(moved)
            g_eta_flat = torch.cat([g_eta[k].flatten(1) for k in names], 1)
            change = (g_eta_flat - g).norm(dim=1)
            beta = change / (etas * g.norm()).clamp_min(1e-300)
            # ---- Definition 2.1: hybrids (layers < i updated, >= i not), all i at once ------
            stepped = {k: params[k] - settings.lr * grads[k] for k in names}
            hybrid = {}
            for k in names:  # a few parameter names; each stacked over the depth hybrids
                found = re.search(r"(\d+)$", k)
                layer = int(found.group(1)) if found else depth + 1  # the head: never new
                use_new = torch.arange(1, depth + 1, device=dev) > layer  # hybrid i: l < i
                hybrid[k] = torch.where(use_new.view(-1, *[1] * params[k].ndim),
                                        stepped[k][None], params[k][None])
            g_hyb, _ = vmap(grad_and_value(loss_fn))(hybrid)
            ics_l2, ics_cos = [], []
            for i, w in enumerate(weights):  # at most 8 layers, of different sizes
                a, b = grads[w].flatten(), g_hyb[w][i].flatten()
                ics_l2.append(float((a - b).norm()))
                ics_cos.append(float(a @ b / (a.norm() * b.norm()).clamp_min(1e-300)))
            with torch.no_grad():
                acc = (_logits(params, x, depth, bn, noise).argmax(1) == y).double().mean()
            rows["loss"].append(float(loss))
            rows["accuracy"].append(float(acc))
            rows["loss_min"].append(float(l_eta.min()))
            rows["loss_max"].append(float(l_eta.max()))
            rows["grad_change_min"].append(float(change.min()))
            rows["grad_change_max"].append(float(change.max()))
            rows["beta_eff"].append(float(beta.max()))
            rows["ics_l2"].append(ics_l2)
            rows["ics_cos"].append(ics_cos)
            params = stepped
            if progress is not None:
                progress(arm_index * settings.steps + step + 1)
        arms[arm] = {k: np.asarray(v, dtype=np.float64) for k, v in rows.items()}
        with torch.no_grad():  # BN at test time: the statistics of all the data
            logits = (_logits_with_population(params, x_all, grid, depth) if bn else
                      _logits(params, grid, depth, False, None))
        decision[arm] = logits.argmax(1).view(res, res).cpu().numpy().astype(np.int8)
    return LandscapeResult(settings, arms, decision, box, data.points, data.labels,
                           time.perf_counter() - t0, str(dev))


def _logits_with_population(params: dict[str, torch.Tensor], x_all: torch.Tensor,
                            x: torch.Tensor, depth: int) -> torch.Tensor:
    """The BN network at test time: each layer normalised by the statistics of all the data."""
    z_all, z = x_all, x
    for i in range(1, depth + 1):
        u_all, u = z_all @ params[f"W{i}"].T, z @ params[f"W{i}"].T
        mu, sigma = batch_statistics(u_all)
        gamma, beta = params[f"gamma{i}"], params[f"beta{i}"]
        z_all = torch.relu(bn_forward(u_all, mu, sigma, gamma, beta))
        z = torch.relu(bn_forward(u, mu, sigma, gamma, beta))
    return z @ params["head_W"].T + params["head_b"]


def check_landscape_params(raw: dict) -> dict:
    """A run's stored parameters (:meth:`LandscapeParams.as_params`) checked (ParamError)."""
    return validate_params(LandscapeParams, raw, "landscape-2d").as_params()


def run_landscape_job(params: dict, ctx: JobContext, dist: DistInfo) -> dict:
    """Both arms, on the job's device; the curves and decision maps are its result."""
    settings = validate_params(LandscapeParams, params, "landscape-2d")
    total = 2 * settings.steps
    r = run_landscape(settings, ctx.device, progress=lambda k: ctx.progress(k / total))
    arrays = {f"{arm}__{k}": v for arm, rows in r.arms.items() for k, v in rows.items()}
    ctx.save_result(lambda path: np.savez_compressed(
        path, **arrays, **{f"decision__{k}": v for k, v in r.decision.items()},
        box=np.array(r.box), points=r.points, labels=r.labels, seconds=r.seconds))
    return {"seconds": r.seconds, "device": r.device}


#: The debate page's run, a job of type ``landscape-2d`` (``landscape`` is the image one).
LANDSCAPE_2D_JOB = JobType("landscape-2d", check_landscape_params, run_landscape_job,
                           result=True)


def load_landscape(job_id: str) -> dict:
    """A run's result: {"arms": {arm: {measure: array}}, "decision": {arm: map}, "box",
    "points", "labels", "seconds"} (OSError when it is gone)."""
    out: dict = {"arms": {}, "decision": {}}
    for name, value in load_result(job_id).items():
        if "__" in name:
            group, measure = name.split("__", 1)
            if group == "decision":
                out["decision"][measure] = value
            else:
                out["arms"].setdefault(group, {})[measure] = value
        else:
            out[name] = value
    return out
