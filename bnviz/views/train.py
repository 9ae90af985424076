"""Training a small BN network on a 2D task, for Figure 6 "after training".

BN as in the BN paper's analysis (section 2.1): gamma = 1, beta = 0 (not learned), mu and
sigma from each training mini-batch (eq. 3, biased std).  Only the weights W_l and the
classifier head are learned, with SGD (momentum 0.9) or Adam on the cross-entropy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from bnviz.caps import OPTIMIZERS
from bnviz.core.network import Head, Network
from bnviz.device import pick_device
from bnviz.views.trainer import forward

__all__ = ["OPTIMIZERS", "TrainReport", "save_network", "train_network"]


@dataclass(frozen=True)
class TrainReport:
    network: Network
    losses: np.ndarray  # (steps,) training loss per step
    accuracy: float  # on the training data, with test-time (full-data) statistics


def train_network(net: Network, points: np.ndarray, labels: np.ndarray, steps: int,
                  batch_size: int = 32, lr: float = 0.05, optimizer: str = "adam",
                  seed: int = 0, progress: Callable[[int, float], None] | None = None,
                  device: torch.device | str | None = None) -> TrainReport:
    """Train W_1..W_L and the head on (points, labels in {0, 1}); returns the trained network.

    ``progress(step, loss)`` is called every step (for progress bars; it may raise to cancel).
    """
    if net.head is None:
        raise ValueError("training needs a network with a classifier head")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    if not (isinstance(steps, int) and 0 <= steps <= 100_000):
        raise ValueError(f"steps must be a whole number from 0 to 100000, got {steps!r}")
    if not (np.isfinite(lr) and 0 < lr <= 10):
        raise ValueError(f"learning rate must be in (0, 10], got {lr!r}")
    dev = torch.device(device) if device is not None else pick_device()
    x = torch.as_tensor(np.asarray(points, dtype=np.float64), device=dev)
    y = torch.as_tensor(np.asarray(labels, dtype=np.int64), device=dev)
    n = x.shape[0]
    if not 2 <= batch_size <= n:
        raise ValueError(f"batch size must be from 2 to the number of points ({n})")
    ws = [torch.tensor(w, device=dev, requires_grad=True) for w in net.weights]
    head_w = torch.tensor(net.head.weight, device=dev, requires_grad=True)
    head_b = torch.tensor(net.head.bias, device=dev, requires_grad=True)
    params = [*ws, head_w, head_b]
    opt = (torch.optim.SGD(params, lr=lr, momentum=0.9) if optimizer == "sgd"
           else torch.optim.Adam(params, lr=lr))
    gen = torch.Generator().manual_seed(int(seed))
    losses = np.zeros(steps)
    two = head_w.shape[0] == 2
    for step in range(steps):  # training steps are sequential by nature
        idx = torch.randperm(n, generator=gen)[:batch_size].to(dev)
        out = forward(ws, None, head_w, head_b, x[idx], net.negative_slope)
        loss = (F.cross_entropy(out, y[idx]) if two
                else F.binary_cross_entropy_with_logits(out[:, 0], y[idx].to(out.dtype)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[step] = float(loss.detach())
        if progress is not None:
            progress(step + 1, losses[step])
    trained = Network(tuple(w.detach().cpu().numpy() for w in ws), net.activation, net.alpha,
                      "bn", net.biases,
                      Head(head_w.detach().cpu().numpy(), head_b.detach().cpu().numpy()))
    with torch.no_grad():
        out = forward([w.detach() for w in ws], None, head_w.detach(), head_b.detach(), x,
                      net.negative_slope)
        pred = out.argmax(1) if two else (out[:, 0] > 0).long()
        accuracy = float((pred == y).to(torch.float64).mean())
    return TrainReport(trained, losses, accuracy)


def save_network(net: Network, path: str | Path) -> None:
    """Write W1..WL (and c1..cL, head_W, head_b) to an .npz readable by ``load_network``."""
    arrays = {f"W{i + 1}": w for i, w in enumerate(net.weights)}
    if net.biases is not None:
        arrays |= {f"c{i + 1}": c for i, c in enumerate(net.biases)}
    if net.head is not None:
        arrays |= {"head_W": net.head.weight, "head_b": net.head.bias}
    np.savez(path, **arrays)
