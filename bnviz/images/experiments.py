"""The BN paper's image experiments, as job types (the jobs tab and ``python -m bnviz jobs``).

* ``smart-init`` (Figures 5, 10): the same random weights, no BN during training, initialised
  three ways: zero bias, random bias, or BN statistics computed once over the training set and
  then frozen (:func:`bnviz.images.networks.calibrate_frozen`); SGD; test accuracy per epoch, for
  several runs (seeds).
* ``concentration`` (Figure 4): random weights; for each initialisation, the number of units
  whose pre-activation changes sign inside an eps-ball around training images vs around
  Gaussian images with the data's per-channel mean and variance.
* ``jitter-noise`` (section 5): BN vs BN with extra noise raising the variance of mu_B and
  sigma_B^2 by ``noise`` (default 15%).
* ``affine-ablation`` (Table 1): BN without vs with learnable gamma, beta.
* ``landscape`` (Santurkar et al., sections 2-3): the same network trained by plain SGD with
  BN (learnable gamma, beta) and without; every ``measure_every`` steps, on that step's
  mini-batch, the loss range and the largest gradient change along -g for step sizes in
  [1/2, 4] x lr, the effective beta-smoothness, and Definition 2.1's internal covariate shift
  per weight tensor (in definition order), as in :mod:`bnviz.papers.landscape` for the 2D task.

A job reports through a :class:`JobContext`: ``progress`` (which raises
:class:`~bnviz.runs.Cancelled` when the job was cancelled), ``log`` and ``metric`` (one row per
arm, run and epoch). Everything here is plain torch and numpy, on ``ctx.device``; training
uses mixed precision (bfloat16 autocast) on cuda, and torch DDP when the job runs in several
processes (``dist``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bnviz.data.imagedata import MAX_FOLDER_IMAGES, ImageData, check_available, load_image_data
from bnviz.images.networks import ARCHS, build_model, calibrate_frozen, layer_preactivations
from bnviz.messages import brief

__all__ = ["ARMS", "JOB_TYPES", "PARAMS", "DistInfo", "JobContext", "ParamError", "ParamSpec",
           "RecordingContext", "check_params", "run_experiment", "summarise"]

JOB_TYPES: tuple[str, ...] = ("smart-init", "concentration", "jitter-noise", "affine-ablation",
                              "landscape")
#: arm name -> (norm mode, learnable gamma/beta), per job type, in the order they are shown.
ARMS: dict[str, dict[str, tuple[str, bool]]] = {
    "smart-init": {"zero_bias": ("zero_bias", False), "random_bias": ("random_bias", False),
                   "bn_init": ("frozen", False)},
    "concentration": {"zero_bias": ("zero_bias", False), "random_bias": ("random_bias", False),
                      "bn": ("frozen", False)},
    "jitter-noise": {"bn": ("bn", False), "bn_noise": ("noisy_bn", False)},
    "affine-ablation": {"no_affine": ("bn", False), "affine": ("bn", True)},
    "landscape": {"no_bn": ("zero_bias", False), "bn": ("bn", True)},
}


class ParamError(ValueError):
    """A bad job parameter: a message for the user."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str  # "int", "float", "text", "choice", "floats"
    default: Any
    help: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    types: tuple[str, ...] = JOB_TYPES  # the job types that use it

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("dataset", "text", "digits", "digits, cifar10, cifar100, svhn or folder:NAME"),
    ParamSpec("arch", "choice", "resnet9", "network", choices=ARCHS),
    ParamSpec("width", "int", 16, "base channel count (paper: 64 for resnet9/50, 96 for cnn)",
              1, 512),
    ParamSpec("epochs", "int", 5, "training epochs (concentration: unused, it measures the "
              "network at initialisation)", 1, 1000),
    ParamSpec("runs", "int", 2, "runs (seeds seed, seed+1, ...)", 1, 50),
    ParamSpec("batch_size", "int", 64, "mini-batch size", 2, 4096),
    ParamSpec("lr", "float", 0.05, "SGD learning rate, momentum 0.9 (concentration: unused)",
              1e-6, 10.0),
    ParamSpec("seed", "int", 0, "seed of the first run", 0, 2**31 - 1),
    ParamSpec("max_train", "int", 0, "use at most this many training images (0: all)", 0,
              10_000_000),
    ParamSpec("image_size", "int", 64, "side of image-folder images after resizing", 8, 512),
    ParamSpec("gpus", "int", 1, "processes for torch DDP training (GPUs on a cuda worker)", 1,
              64, types=("smart-init", "jitter-noise", "affine-ablation")),
    ParamSpec("noise", "float", 0.15, "extra variance of mu_B, sigma_B^2, as a fraction", 0.0,
              10.0, types=("jitter-noise",)),
    ParamSpec("images", "int", 100, "images (and Gaussian images) per kind", 1, 10_000,
              types=("concentration",)),
    ParamSpec("samples", "int", 32, "points sampled uniformly in each eps-ball", 2, 4096,
              types=("concentration",)),
    ParamSpec("eps", "floats", (0.01, 0.03, 0.1, 0.3),
              "ball radii, as RMS change per pixel in units of the data's std", 1e-6, 100.0,
              types=("concentration",)),
    ParamSpec("etas", "int", 4, "step sizes in [1/2, 4] x lr (log-spaced) at each measured "
              "step", 2, 16, types=("landscape",)),
    ParamSpec("measure_every", "int", 10, "measure the landscape and ICS every this many "
              "steps", 1, 10_000, types=("landscape",)),
)
_SPEC = {p.name: p for p in PARAMS}
#: A job's work is capped (epochs x runs x arms x training images; concentration: images x
#: samples x radii x runs x arms): one user cannot fill a worker for weeks by mistake.
MAX_TRAINING_IMAGES = 2e9
MAX_CONCENTRATION_PASSES = 2e8
_TRAIN_SIZES = {"digits": 1352, "cifar10": 50_000, "cifar100": 50_000, "svhn": 73_257}


def _coerce(spec: ParamSpec, value: Any) -> Any:
    name = spec.flag
    if spec.kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise ParamError(f"{name}: expected text")
        return value.strip()
    if spec.kind == "choice":
        if value not in spec.choices:
            raise ParamError(f"{name}: expected one of {', '.join(spec.choices)}, got "
                             f"{brief(value)}")
        return value
    if spec.kind == "floats":
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= 16:
            raise ParamError(f"{name}: expected 1 to 16 comma-separated numbers")
        out = tuple(_number(spec, v, float) for v in items)
        return tuple(sorted(set(out)))
    return _number(spec, value, int if spec.kind == "int" else float)


def _number(spec: ParamSpec, value: Any, kind: type) -> Any:
    name = spec.flag
    if isinstance(value, bool) or value is None:
        raise ParamError(f"{name}: expected a number, got {brief(value)}")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParamError(f"{name}: expected a number, got {brief(value)}") from None
    if not math.isfinite(number):
        raise ParamError(f"{name}: expected a finite number, got {brief(value)}")
    if kind is int:
        if number != int(number):
            raise ParamError(f"{name}: expected a whole number, got {brief(value)}")
        number = int(number)
    if (spec.lo is not None and number < spec.lo) or (spec.hi is not None and number > spec.hi):
        raise ParamError(f"{name}: must be from {spec.lo:g} to {spec.hi:g}, got {brief(value)}")
    return number


def check_params(job_type: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Validate and complete a job's parameters (strings from the CLI or the page are
    accepted); unknown names, wrong types, out-of-range values and over-cap work raise
    ParamError with one clear sentence. Returns every parameter the type uses."""
    if job_type not in JOB_TYPES:
        raise ParamError(f"unknown job type {brief(job_type)}: one of {', '.join(JOB_TYPES)}")
    if not isinstance(raw, dict):
        raise ParamError("parameters must be a mapping")
    unknown = sorted(str(k) for k in set(raw) - set(_SPEC))
    if unknown:
        raise ParamError(f"unknown parameter {brief(unknown[0])} (known: {', '.join(_SPEC)})")
    other = sorted(k for k in raw if job_type not in _SPEC[k].types and raw[k] not in (None, ""))
    if other:
        raise ParamError(f"{_SPEC[other[0]].flag} is not a parameter of {job_type} (it is one "
                         f"of {', '.join(_SPEC[other[0]].types)})")
    out: dict[str, Any] = {}
    for spec in PARAMS:
        if job_type not in spec.types:
            continue
        value = raw.get(spec.name)
        out[spec.name] = spec.default if value is None or value == "" else _coerce(spec, value)
    if out.get("max_train") == 1:
        raise ParamError("--max-train: 0 (all) or at least 2 images (BN needs a batch of two)")
    try:
        out["dataset"] = check_available(out["dataset"])
    except ValueError as exc:
        raise ParamError(f"--dataset: {exc}") from None
    arms = len(ARMS[job_type])
    if job_type == "concentration":
        work = out["images"] * out["samples"] * len(out["eps"]) * out["runs"] * arms * 2
        if work > MAX_CONCENTRATION_PASSES:
            raise ParamError(f"images x samples x eps values x runs x {arms * 2} = {work:.3g} "
                             f"forward passes is over the cap of {MAX_CONCENTRATION_PASSES:.0e}")
    else:
        n_train = out["max_train"] or _TRAIN_SIZES.get(out["dataset"], MAX_FOLDER_IMAGES)
        work = out["epochs"] * out["runs"] * arms * n_train
        if job_type == "landscape":  # each measurement: etas + ~12 layer hybrids passes
            work *= 1 + (out["etas"] + 12) / out["measure_every"]
        if work > MAX_TRAINING_IMAGES:
            raise ParamError(f"epochs x runs x {arms} arms x training images = {work:.3g} is "
                             f"over the cap of {MAX_TRAINING_IMAGES:.0e}: lower --epochs, "
                             "--runs or --max-train")
    return out


# --------------------------------------------------------------------------- context


class JobContext(Protocol):
    device: torch.device

    def progress(self, fraction: float) -> None: ...  # may raise Cancelled
    def log(self, line: str) -> None: ...
    def metric(self, row: dict[str, Any]) -> None: ...


@dataclass
class RecordingContext:
    """A context that keeps everything in memory (tests, scripts, and the DDP ranks > 0)."""

    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    fractions: list[float] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    cancel_at: float | None = None  # raise Cancelled once progress reaches this

    def progress(self, fraction: float) -> None:
        from bnviz.runs import Cancelled

        self.fractions.append(float(fraction))
        if self.cancel_at is not None and fraction >= self.cancel_at:
            raise Cancelled

    def log(self, line: str) -> None:
        self.lines.append(line)

    def metric(self, row: dict[str, Any]) -> None:
        self.rows.append(row)


@dataclass(frozen=True)
class DistInfo:
    """This process's place in a DDP job (rank 0 reports)."""

    rank: int = 0
    world: int = 1


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class _Tensors:
    x_train: torch.Tensor  # standardised float32, on the device
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int


def _standardise(data: ImageData, device: torch.device) -> _Tensors:
    """Pixels / white level, then per-channel standardisation with the training set's
    mean and std (what a network sees in every job)."""
    x = data.x_train.astype(np.float32) / data.scale
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = x.std(axis=(0, 2, 3), keepdims=True) + 1e-6

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor((a.astype(np.float32) / data.scale - mean) / std, device=device)

    return _Tensors(t(data.x_train), torch.as_tensor(data.y_train, device=device),
                    t(data.x_test), torch.as_tensor(data.y_test, device=device),
                    data.num_classes)


def _chunks(x: torch.Tensor, size: int = 512) -> Iterator[torch.Tensor]:
    for i in range(0, len(x), size):
        yield x[i:i + size]


# --------------------------------------------------------------------------- training


def _autocast(device: torch.device):
    if device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype)
    return torch.autocast("cpu", enabled=False)


@torch.no_grad()
def test_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = 0
    for xb, yb in zip(_chunks(x), _chunks(y), strict=True):
        with _autocast(x.device):
            correct += int((model(xb).argmax(1) == yb).sum())
    return correct / max(len(y), 1)


def _train_arm(model: nn.Module, data: _Tensors, params: dict, run_seed: int, ctx: JobContext,
               report: Callable[[int, float, float, float], None],
               step: Callable[[], None], dist: DistInfo) -> None:
    """SGD (momentum 0.9, gradient norm clipped at 5 so that unnormalised networks do not
    diverge) for ``epochs`` epochs; after each, ``report(epoch, loss, accuracy, seconds)``.
    Under DDP every rank takes its share of each global mini-batch."""
    device = data.x_train.device
    net = model  # evaluated unwrapped: only rank 0 evaluates, so no collective may run there
    if dist.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        # running BN statistics stay per process (no buffer sync on every forward)
        model = DistributedDataParallel(model, device_ids=[device] if device.type == "cuda"
                                        else None, forward_sync_buffers=False)
    opt = torch.optim.SGD(model.parameters(), lr=params["lr"], momentum=0.9)
    scaler = torch.amp.GradScaler(enabled=device.type == "cuda" and
                                  not torch.cuda.is_bf16_supported())
    gen = torch.Generator().manual_seed(run_seed)
    n, b = len(data.y_train), params["batch_size"]
    for epoch in range(1, params["epochs"] + 1):
        t0 = time.perf_counter()
        model.train()
        perm = torch.randperm(n, generator=gen).to(device)
        total, count = 0.0, 0
        for i in range(0, n - 1, b):
            idx = perm[i:i + b]
            if len(idx) < 2:  # BN needs two images
                continue
            idx = idx[dist.rank::dist.world]
            with _autocast(device):
                loss = F.cross_entropy(model(data.x_train[idx]), data.y_train[idx])
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            scaler.step(opt)
            scaler.update()
            total += float(loss.detach()) * len(idx)
            count += len(idx)
            step()
        accuracy = test_accuracy(net, data.x_test, data.y_test) if dist.rank == 0 else 0.0
        report(epoch, total / count if count else math.nan, accuracy, time.perf_counter() - t0)


def _run_training(job_type: str, params: dict, data: _Tensors, shape: tuple[int, int, int],
                  ctx: JobContext, dist: DistInfo) -> None:
    arms = ARMS[job_type]
    n_batches = math.ceil(len(data.y_train) / params["batch_size"])
    total_steps = params["runs"] * len(arms) * params["epochs"] * n_batches
    done = [0]

    def step() -> None:
        done[0] += 1
        if done[0] % 5 == 0 or done[0] == total_steps:
            ctx.progress(min(done[0] / total_steps, 1.0))

    for run in range(params["runs"]):
        seed = params["seed"] + run
        for arm, (mode, affine) in arms.items():
            model = build_model(params["arch"], shape[0], data.classes, shape[1], mode,
                                affine=affine, width=params["width"],
                                noise=params.get("noise", 0.15), seed=seed).to(data.x_train.device)
            if mode == "frozen":
                calibrate_frozen(model, lambda: _chunks(data.x_train))
                ctx.log(f"run {run}, {arm}: BN statistics computed over the "
                        f"{len(data.y_train)} training images, then frozen")
            if mode == "noisy_bn":
                for m in model.modules():
                    if hasattr(m, "generator"):
                        m.generator = torch.Generator(device=data.x_train.device).manual_seed(
                            seed)

            def report(epoch: int, loss: float, acc: float, seconds: float,
                       arm: str = arm, run: int = run) -> None:
                if dist.rank != 0:
                    return
                row = {"arm": arm, "run": run, "epoch": epoch,
                       "train_loss": loss if math.isfinite(loss) else None,
                       "test_accuracy": acc, "seconds": round(seconds, 4)}
                ctx.metric(row)
                ctx.log(f"run {run}, {arm}, epoch {epoch}: loss {loss:.4f}, "
                        f"test accuracy {100 * acc:.2f}% ({seconds:.1f} s)")

            _train_arm(model, data, params, seed, ctx, report, step, dist)


# --------------------------------------------------------------------------- landscape


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


def _run_landscape(params: dict, data: _Tensors, shape: tuple[int, int, int],
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


# --------------------------------------------------------------------------- concentration


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


def _run_concentration(params: dict, data: _Tensors, shape: tuple[int, int, int],
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
                calibrate_frozen(model, lambda: _chunks(data.x_train))
            units = [h.shape[1] for h in layer_preactivations(model.eval(), images[:1])]
            for kind, centers in (("data", images), ("gaussian", gauss)):
                for eps in params["eps"]:
                    counts = []
                    for chunk in _chunks(centers, per_pass):
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


# --------------------------------------------------------------------------- entry point


def run_experiment(job_type: str, params: dict, ctx: JobContext,
                   dist: DistInfo | None = None) -> dict[str, Any]:
    """Run one job (parameters already checked by :func:`check_params`); returns its summary."""
    dist = dist or DistInfo()
    t0 = time.perf_counter()
    data = load_image_data(params["dataset"], params.get("image_size", 64),
                           params.get("max_train", 0))
    shape = data.shape
    ctx.log(f"{data.name}: {len(data.y_train)} training and {len(data.y_test)} test images of "
            f"shape {shape}, {data.num_classes} classes; device {ctx.device}")
    tensors = _standardise(data, ctx.device)
    if job_type == "concentration":
        _run_concentration(params, tensors, shape, ctx)
    elif job_type == "landscape":
        _run_landscape(params, tensors, shape, ctx)
    else:
        _run_training(job_type, params, tensors, shape, ctx, dist)
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
