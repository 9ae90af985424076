"""What every image experiment shares (the data as standardised tensors, mixed precision,
test accuracy) and the training experiments ``smart-init``, ``jitter-noise`` and
``affine-ablation``: for each run (seed) and arm, the same random weights with the arm's BN
mode, SGD for ``epochs`` epochs, a metric row per epoch (test accuracy, mean loss).

Each arm's final network (weights and BN's running statistics) is kept in safetensors beside
the job's result (``ctx.save_network``, :func:`bnviz.records.results.network_path`), named
``<arm>-run<run>``: the slice views open it by job id (:mod:`bnviz.slices`).

After every epoch the job saves a checkpoint (``ctx.checkpoint``: where it is, the model, the
optimiser, the gradient scaler and the random generators); a job queued again after its
worker was lost or stopped resumes from it, and, on the CPU, ends with exactly the metric
rows an uninterrupted run writes."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from bnviz.data.imagedata import ImageData
from bnviz.images.folding import FOLDED_MODES, fold_statistics
from bnviz.images.networks import build_model, calibrate_frozen
from bnviz.images.params import ARMS
from bnviz.images.saved import save_network
from bnviz.records.types import DistInfo, JobContext

__all__ = ["ImageTensors", "autocast_for", "chunks", "run_training", "standardise",
           "test_accuracy", "validation_split"]


@dataclass(frozen=True)
class ImageTensors:
    x_train: torch.Tensor  # standardised float32, on the device
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: int
    x_val: torch.Tensor | None = None  # held out of the training images (smart-init's
    y_val: torch.Tensor | None = None  # ``validation``): where a learning rate is chosen


def validation_split(labels: np.ndarray, fraction: float, seed: int = 0) -> np.ndarray:
    """A boolean mask of the images held out for validation: ``fraction`` of each class
    (rounded down, at least one where the fraction is positive and the class has two),
    drawn with a fixed seed, so every run and every learning rate sees the same split."""
    held = np.zeros(len(labels), bool)
    if fraction <= 0:
        return held
    rng = np.random.default_rng(seed)
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        take = min(max(int(len(idx) * fraction), 1), len(idx) - 1)
        held[rng.permutation(idx)[:take]] = True
    return held


def standardise(data: ImageData, device: torch.device, validation: float = 0.0) -> ImageTensors:
    """Pixels / white level, then per-channel standardisation with the training set's
    mean and std (what a network sees in every job). With ``validation`` > 0 that fraction
    of the training images (per class, :func:`validation_split`) is held out as a
    validation set, and the mean and std are those of the rest."""
    held = validation_split(data.y_train, validation)
    x_train, y_train = data.x_train[~held], data.y_train[~held]
    x = x_train.astype(np.float32) / data.scale
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = x.std(axis=(0, 2, 3), keepdims=True) + 1e-6

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor((a.astype(np.float32) / data.scale - mean) / std, device=device)

    def labels(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(a, device=device)

    val = (t(data.x_train[held]), labels(data.y_train[held])) if held.any() else (None, None)
    return ImageTensors(t(x_train), labels(y_train), t(data.x_test), labels(data.y_test),
                        data.num_classes, *val)


def chunks(x: torch.Tensor, size: int = 512) -> Iterator[torch.Tensor]:
    for i in range(0, len(x), size):
        yield x[i:i + size]


def autocast_for(device: torch.device):
    if device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype)
    return torch.autocast("cpu", enabled=False)


@torch.no_grad()
def test_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = 0
    for xb, yb in zip(chunks(x), chunks(y), strict=True):
        with autocast_for(x.device):
            correct += int((model(xb).argmax(1) == yb).sum())
    return correct / max(len(y), 1)


def _noise_generators(model: nn.Module) -> list[torch.Generator]:
    return [m.generator for m in model.modules() if isinstance(getattr(m, "generator", None),
                                                               torch.Generator)]


def _train_arm(model: nn.Module, data: ImageTensors, params: dict, run_seed: int, ctx: JobContext,
               report: Callable[[int, float, float, float], None],
               step: Callable[[], None], dist: DistInfo,
               save: Callable[[dict], None] = lambda state: None,
               resume: dict | None = None) -> None:
    """SGD (momentum 0.9, gradient norm clipped at 5 so that unnormalised networks do not
    diverge) for ``epochs`` epochs; after each, ``report(epoch, loss, accuracy, seconds)``
    and ``save(state)`` (this arm's training state after that epoch), from which ``resume``
    goes on. Under DDP every rank takes its share of each global mini-batch."""
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
    first = 1
    if resume is not None:
        net.load_state_dict(resume["model"])
        opt.load_state_dict(resume["opt"])
        scaler.load_state_dict(resume["scaler"])
        gen.set_state(resume["gen"].cpu())
        for g, state in zip(_noise_generators(net), resume["noise"], strict=True):
            g.set_state(state.cpu())
        first = resume["epoch"] + 1
    n, b = len(data.y_train), params["batch_size"]
    for epoch in range(first, params["epochs"] + 1):
        t0 = time.perf_counter()
        model.train()
        perm = torch.randperm(n, generator=gen).to(device)
        total, count = 0.0, 0
        for i in range(0, n - 1, b):
            idx = perm[i:i + b]
            if len(idx) < 2:  # BN needs two images
                continue
            idx = idx[dist.rank::dist.world]
            with autocast_for(device):
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
        if data.x_val is not None and dist.rank == 0:
            accuracy = (accuracy, test_accuracy(net, data.x_val, data.y_val))
        report(epoch, total / count if count else math.nan, accuracy, time.perf_counter() - t0)
        save({"epoch": epoch, "model": net.state_dict(), "opt": opt.state_dict(),
              "scaler": scaler.state_dict(), "gen": gen.get_state(),
              "noise": [g.get_state() for g in _noise_generators(net)]})


def run_training(job_type: str, params: dict, data: ImageTensors, shape: tuple[int, int, int],
                  ctx: JobContext, dist: DistInfo) -> None:
    arms = ARMS[job_type]
    n_batches = math.ceil(len(data.y_train) / params["batch_size"])
    total_steps = params["runs"] * len(arms) * params["epochs"] * n_batches
    done = [0]
    resumed = ctx.restore()  # None, or where a lost or stopped worker left this job
    if resumed is not None:
        done[0] = resumed["done"]

    def step() -> None:
        done[0] += 1
        if done[0] % 5 == 0 or done[0] == total_steps:
            ctx.progress(min(done[0] / total_steps, 1.0))

    for run in range(params["runs"]):
        seed = params["seed"] + run
        for index, (arm, (mode, affine)) in enumerate(arms.items()):
            where = (run, index)
            if resumed is not None and where < (resumed["run"], resumed["arm"]):
                continue  # trained before the checkpoint: its rows are in the store
            resume = resumed["arm_state"] if resumed is not None and \
                where == (resumed["run"], resumed["arm"]) else None
            model = build_model(params["arch"], shape[0], data.classes, shape[1], mode,
                                affine=affine, width=params["width"],
                                noise=params.get("noise", 0.15), seed=seed).to(data.x_train.device)
            if mode == "frozen" and resume is None:  # resumed: the state has the statistics
                calibrate_frozen(model, lambda: chunks(data.x_train))
                ctx.log(f"run {run}, {arm}: BN statistics computed over the "
                        f"{len(data.y_train)} training images, then frozen")
            elif mode in FOLDED_MODES and resume is None:  # resumed: the weights are folded
                fold_statistics(model, lambda: chunks(data.x_train))
                ctx.log(f"run {run}, {arm}: BN statistics computed over the "
                        f"{len(data.y_train)} training images, folded into the weights"
                        + (" and biases" if mode == "folded" else " (scale only)"))
            if mode == "noisy_bn":
                for m in model.modules():
                    if hasattr(m, "generator"):
                        m.generator = torch.Generator(device=data.x_train.device).manual_seed(
                            seed)

            def report(epoch: int, loss: float, acc: float | tuple[float, float],
                       seconds: float, arm: str = arm, run: int = run) -> None:
                if dist.rank != 0:
                    return
                acc, val = acc if isinstance(acc, tuple) else (acc, None)
                row = {"arm": arm, "run": run, "epoch": epoch,
                       "train_loss": loss if math.isfinite(loss) else None,
                       "test_accuracy": acc, "seconds": round(seconds, 4)}
                if val is not None:
                    row["val_accuracy"] = val
                ctx.metric(row)
                ctx.log(f"run {run}, {arm}, epoch {epoch}: loss {loss:.4f}, "
                        f"test accuracy {100 * acc:.2f}% ({seconds:.1f} s)")

            def save(state: dict, where: tuple[int, int] = where) -> None:
                ctx.checkpoint({"run": where[0], "arm": where[1], "done": done[0],
                                "arm_state": state})

            _train_arm(model, data, params, seed, ctx, report, step, dist, save, resume)
            build = {"arch": params["arch"], "in_ch": shape[0], "classes": data.classes,
                     "size": shape[1], "mode": mode, "affine": affine,
                     "width": params["width"]}
            ctx.save_network(f"{arm}-run{run}", lambda path, model=model, build=build:
                             save_network(model, path, build))
