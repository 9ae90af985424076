"""Watch it learn: a 2D network trained step by step, with the exact partition of each frame.

The core paper's story is one of motion: with BN the partition starts on the data and follows it
while the network learns; without BN it has to migrate there.  :class:`Trainer` trains one
network a few steps at a time (so that a page can play, pause and step it), and
:meth:`Trainer.frame` records where it stands: loss, accuracy, the exact partition Omega_{1|l}
of every layer with its decision boundary, and the mean distance from the data to the nearest
boundary (eq. 12's d(x, F) over all facets).

Modes, as in the BN paper's analysis (section 2.1; :mod:`bnviz.views.train` for Figure 6):

* ``bn``: BN in training mode, mu and sigma from each mini-batch (eq. 3, biased std, gamma = 1,
  beta = 0, gradients through the statistics); W_l and the head are learned.  A frame shows
  the network with the statistics of the whole training set (the explorer's batch ``all``),
  which is also how its accuracy is measured;
* ``zero_bias`` and ``random_bias``: no BN, h_l = W_l z + c_l with the biases c_l learned too,
  from zero or from the seed's random c_l.  A frame's network is then a ``random_bias`` network
  with the learned c_l (``bnviz partition --mode random_bias`` reads it back).

Networks of one seed share their weights whatever the mode (:func:`bnviz.core.network.
random_network`), and trainers of one seed draw the same mini-batches, so a side-by-side run
trains the same initial weights on the same batches with and without BN.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from bnviz.caps import MODES, OPTIMIZERS
from bnviz.core.bn import batch_norm
from bnviz.core.geometry import nearest_segment_distances
from bnviz.core.network import Head, Network, random_network
from bnviz.core.partition import Partition, box_from_extent, compute_partition
from bnviz.data.datasets import make_dataset, shifted

if TYPE_CHECKING:
    from bnviz.params.live import LiveTrainingParams

__all__ = ["Frame", "Trainer", "forward", "frame_steps", "live_step", "new_trainer",
           "recorded_runs", "train_frames", "training_data"]


def forward(ws: list[torch.Tensor], cs: list[torch.Tensor] | None, head_w: torch.Tensor,
            head_b: torch.Tensor, x: torch.Tensor, slope: float) -> torch.Tensor:
    """The logits of x: each layer a(BN(W z)) with the batch's own statistics (eq. 3-4,
    gradients through mu and sigma) when ``cs`` is None, else a(W z + c)."""
    z = x
    for i, w in enumerate(ws):
        u = z @ w.T
        z = F.leaky_relu(batch_norm(u) if cs is None else u + cs[i], slope)
    return z @ head_w.T + head_b


@dataclass(frozen=True)
class Frame:
    """Where a training run stands after ``step`` steps (the BN statistics of the whole
    training set, for ``bn``)."""

    step: int
    loss: float  # the mean loss of the steps since the previous frame (at step 0: the loss
    #              of the whole training set)
    accuracy: float  # on the training set
    network: Network
    partition: Partition
    mean_distance: float  # mean over the data of the distance to the nearest facet

    @property
    def regions(self) -> list[int]:
        """Regions of Omega_{1|l}, layer by layer."""
        return [len(lay.regions) for lay in self.partition.layers]

    def summary(self) -> dict:
        """The frame as ``bnviz train --json`` prints it."""
        return {"step": self.step, "loss": self.loss, "accuracy": self.accuracy,
                "regions": self.regions, "mean_distance": self.mean_distance}


class Trainer:
    """One network of a 2D task trained step by step (see the module docstring).

    Not thread-safe: one thread steps it (a request, a command) and reads its frames.
    """

    def __init__(self, net: Network, points: np.ndarray, labels: np.ndarray, mode: str,
                 batch_size: int, lr: float, optimizer: str, seed: int,
                 box: tuple[float, float, float, float]) -> None:
        if net.head is None:
            raise ValueError("training needs a network with a classifier head")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
        n = len(points)
        if not 2 <= batch_size <= n:
            raise ValueError(f"batch size must be from 2 to the number of points ({n})")
        self.net, self.mode, self.box = net, mode, box
        self.points = np.asarray(points, dtype=np.float64)
        self.x = torch.as_tensor(self.points)
        self.y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        self.batch_size = int(batch_size)
        self.ws = [torch.tensor(w, requires_grad=True) for w in net.weights]
        self.cs = None
        if mode != "bn":
            start = net.biases if mode == "random_bias" else [np.zeros(w.shape[0])
                                                             for w in net.weights]
            self.cs = [torch.tensor(c, dtype=torch.float64, requires_grad=True)
                       for c in start]
        self.head_w = torch.tensor(net.head.weight, requires_grad=True)
        self.head_b = torch.tensor(net.head.bias, requires_grad=True)
        params = [*self.ws, *(self.cs or []), self.head_w, self.head_b]
        self.opt = (torch.optim.SGD(params, lr=lr, momentum=0.9) if optimizer == "sgd"
                    else torch.optim.Adam(params, lr=lr))
        self.params = params
        self.seed = int(seed)
        self.steps = 0
        self.recent_losses: list[float] = []
        self.last_batch: torch.Tensor | None = None  # the indices of the last step's batch

    def _loss(self, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if out.shape[1] == 2:
            return F.cross_entropy(out, y)
        return F.binary_cross_entropy_with_logits(out[:, 0], y.to(out.dtype))

    def batch(self, step: int) -> torch.Tensor:
        """The mini-batch of step ``step`` (0-based): drawn without replacement from a
        generator seeded by (seed, step), so every trainer of the seed draws the same batches
        whatever its mode, and a run restored at any step (:meth:`restore`) goes on exactly
        as it would have."""
        rng = np.random.default_rng([self.seed, step])
        return torch.as_tensor(rng.permutation(len(self.points))[: self.batch_size])

    def step(self, n: int = 1) -> None:
        """n optimiser steps, each on its mini-batch (:meth:`batch`); steps are sequential."""
        slope = self.net.negative_slope
        for _ in range(n):
            idx = self.batch(self.steps)
            self.last_batch = idx
            out = forward(self.ws, self.cs, self.head_w, self.head_b, self.x[idx], slope)
            loss = self._loss(out, self.y[idx])
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.recent_losses.append(float(loss.detach()))
            self.steps += 1

    def state(self) -> dict:
        """Everything a later request needs to go on, as JSON with each array a base64
        string of its float64 bytes (a few kB at the explorer's sizes; a page's store keeps
        strings more cheaply than nested lists): the step count, the parameters and the
        optimiser's moments."""
        opt = self.opt.state_dict()["state"]
        return {"steps": self.steps, "params": [_pack(p) for p in self.params],
                "opt": [{k: (_pack(v) if torch.is_tensor(v) and v.ndim else float(v))
                         for k, v in opt.get(i, {}).items()} for i in range(len(self.params))]}

    def restore(self, state: dict) -> None:
        """Go on from :meth:`state` (of a trainer built with the same settings); a state that
        is not one (it comes from a browser) raises ValueError."""
        try:
            self._restore(state)
        except (KeyError, TypeError, IndexError, AttributeError, OverflowError):
            raise ValueError("the training state is not readable") from None

    def _restore(self, state: dict) -> None:
        params = state["params"]
        if len(params) != len(self.params):
            raise ValueError("the training state does not match the network")
        with torch.no_grad():
            for p, v in zip(self.params, params, strict=True):
                p.copy_(_unpack(v, p.shape))
        steps = state["steps"]
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ValueError("the training state's step count is not a whole number >= 0")
        opt = self.opt.state_dict()
        opt["state"] = {i: {k: self._moment(k, v, i, steps) for k, v in entry.items()}
                        for i, entry in enumerate(state["opt"]) if entry}
        self.opt.load_state_dict(opt)
        self.steps = steps

    def _moment(self, key: str, value: object, index: int, steps: int) -> torch.Tensor:
        """One optimiser buffer of a browser's state, checked: Adam's step count is the
        trainer's (its bias correction divides by 1 - beta^step: a step of 0 or below with
        moments divides by zero), its second moment is not negative (its square root)."""
        if key == "step":
            if isinstance(value, bool) or not isinstance(value, int | float) or \
                    value != steps or steps < 1:
                raise ValueError("the training state's optimiser step does not match its "
                                 "steps")
            return torch.tensor(float(steps), dtype=torch.float32)
        moment = _unpack(value, self.params[index].shape)
        if key == "exp_avg_sq" and bool((moment < 0).any()):
            raise ValueError("the training state's second moments are negative")
        return moment

    def network(self) -> Network:
        """The current weights as a network: ``bn``, or ``random_bias`` with the learned
        biases (the form ``bnviz partition --weights-file`` reads back)."""
        ws = tuple(w.detach().numpy().copy() for w in self.ws)
        head = Head(self.head_w.detach().numpy().copy(), self.head_b.detach().numpy().copy())
        if self.cs is None:
            return Network(ws, self.net.activation, self.net.alpha, "bn", None, head)
        cs = tuple(c.detach().numpy().copy() for c in self.cs)
        return Network(ws, self.net.activation, self.net.alpha, "random_bias", cs, head)

    def frame(self, max_regions: int) -> Frame:
        """Where the run stands: its exact partition (BN statistics of the whole training
        set), accuracy and loss, and the mean distance of the data to the boundary."""
        net = self.network()
        with torch.no_grad():
            out = forward([w.detach() for w in self.ws],
                          None if self.cs is None else [c.detach() for c in self.cs],
                          self.head_w.detach(), self.head_b.detach(), self.x,
                          self.net.negative_slope)
            pred = out.argmax(1) if out.shape[1] == 2 else (out[:, 0] > 0).long()
            accuracy = float((pred == self.y).to(torch.float64).mean())
            loss = (float(np.mean(self.recent_losses)) if self.recent_losses
                    else float(self._loss(out, self.y)))
        self.recent_losses = []
        part = compute_partition(net, self.points, self.box, device="cpu",
                                 max_regions=max_regions)
        facets = np.concatenate([lay.facets for lay in part.layers])
        distance = float(nearest_segment_distances(self.points, facets, device="cpu").mean())
        return Frame(self.steps, loss, accuracy, net, part, distance)


def _pack(t: torch.Tensor) -> str:
    """A tensor's float64 values as base64 (little-endian bytes)."""
    return base64.b64encode(t.detach().to(torch.float64).numpy().astype("<f8").tobytes()
                            ).decode()


def _unpack(text: object, shape: torch.Size) -> torch.Tensor:
    """:func:`_pack`'s inverse, refusing what is not an array of ``shape`` (the state comes
    from a browser)."""
    try:
        values = np.frombuffer(base64.b64decode(str(text), validate=True), dtype="<f8")
    except (ValueError, TypeError):
        raise ValueError("the training state is not readable") from None
    if values.size != int(np.prod(shape)) or not np.isfinite(values).all():
        raise ValueError("the training state does not match the network")
    return torch.as_tensor(values.reshape(tuple(shape)).astype(np.float64))


def new_trainer(depth: int, width: int, activation: str, alpha: float, mode: str, seed: int,
                points: np.ndarray, labels: np.ndarray, batch_size: int, lr: float,
                optimizer: str, box: tuple[float, float, float, float]) -> Trainer:
    """A trainer of the seed's random network with a 2-logit head (weights shared by every
    mode of the seed) on (points, labels mod 2)."""
    net = random_network(depth, width, activation, alpha,
                         "random_bias" if mode == "random_bias" else "bn", seed,
                         head_outputs=2)
    return Trainer(net, points, np.asarray(labels) % 2, mode, batch_size, lr, optimizer,
                   seed, box)


def frame_steps(steps: int, frames: int) -> list[int]:
    """The steps at which ``frames`` frames are recorded: evenly spaced from the start (step
    0, the initialisation) to the last step."""
    if frames <= 1:
        return [steps]
    return sorted({int(round(s)) for s in np.linspace(0, steps, frames)})


def train_frames(trainer: Trainer, steps: int, frames: int, max_regions: int,
                 on_frame: Callable[[Frame], None] | None = None,
                 record: list[Frame] | None = None) -> tuple[list[Frame], float]:
    """Train ``steps`` steps recording ``frames`` frames (:func:`frame_steps`) into ``record``
    (a new list by default) as they are made, so that a run stopped half way (``on_frame``
    raising to cancel, or a frame over ``max_regions``: PartitionTooLarge) keeps them in the
    caller's list.  Returns (the frames, seconds)."""
    t0 = time.perf_counter()
    out = [] if record is None else record
    for target in frame_steps(steps, frames):
        trainer.step(target - trainer.steps)
        out.append(trainer.frame(max_regions))
        if on_frame is not None:
            on_frame(out[-1])
    return out, time.perf_counter() - t0


def training_data(params: LiveTrainingParams, data_seed: int, shift: tuple[float, float]):
    """The data a live training learns: ``params.n_points`` points of ``params.dataset`` drawn from
    ``data_seed`` and moved by ``shift`` (the explorer's data shift); the classes are taken
    mod 2 by the trainer."""
    return shifted(make_dataset(params.dataset, params.n_points, data_seed), *shift)


def live_step(params: LiveTrainingParams, data_seed: int, shift: tuple[float, float],
              modes: tuple[str, ...], states: Mapping[str, dict] | None,
              max_regions: int) -> tuple[dict[str, Frame], dict[str, dict]]:
    """One frame of the explorer's live training (its play button, a tick): for each of
    ``modes`` (one, or BN beside zero and random bias, the same initial weights and the same
    mini-batches), the trainer of ``params`` (the weight seed is ``params.weight_seed``; the
    data are ``params.dataset`` of ``params.n_points`` points from ``data_seed``, moved by
    ``shift``)
    restored from ``states`` (None: step 0), trained ``params.steps`` steps further, and its
    frame.  Returns (the frames, the states to go on from)."""
    data = training_data(params, data_seed, shift)
    box = box_from_extent(params.extent)
    frames, out = {}, {}
    for mode in modes:
        trainer = new_trainer(params.depth, params.width, params.activation, params.alpha,
                              mode, params.weight_seed, data.points, data.labels, params.batch_size,
                              params.lr, params.optimizer, box)
        if states and mode in states:
            trainer.restore(states[mode])
            trainer.step(params.steps)
        frames[mode] = trainer.frame(max_regions)
        out[mode] = trainer.state()
    return frames, out


def recorded_runs(params: LiveTrainingParams, data_seed: int, shift: tuple[float, float],
                  modes: tuple[str, ...], max_regions: int) -> dict[str, list[Frame]]:
    """The run of ``params`` in each of ``modes`` (the same initial weights and mini-batches),
    ``params.frames`` frames each (:func:`train_frames`): the lecture's training step, which
    plays them without a request a frame."""
    data = training_data(params, data_seed, shift)
    box = box_from_extent(params.extent)
    return {mode: train_frames(new_trainer(
        params.depth, params.width, params.activation, params.alpha, mode, params.weight_seed,
        data.points, data.labels, params.batch_size, params.lr, params.optimizer, box),
        params.steps, params.frames, max_regions)[0] for mode in modes}
