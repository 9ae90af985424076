"""The replication report's entries: every figure, table and closed-form claim of the five
papers that bnviz shows, each with the bnviz command(s) whose output is ``ours``.

An entry runs its commands in this process (the command line's own runner,
:func:`bnviz.cli.execute`: exactly what the command line prints, handed in by ``bnviz
replicate``, so that this package does not import the command line that imports it), reads
``ours`` from their JSON and judges it
(:mod:`bnviz.replication.judges`; the closed-form claims by ``bnviz claims``' own check).
:func:`run_entry` returns the outcome that :mod:`bnviz.replication.store` keeps.
"""

from __future__ import annotations

import datetime
import json
import math
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bnviz.papers.titles import PAPERS
from bnviz.replication import judges as j
from bnviz.replication.fig1 import fig1_ours, fig1_status
from bnviz.replication.slice_concentration import (
    slice_concentration_ours,
    slice_concentration_status,
)
from bnviz.replication.smart_init import smart_init_ours, smart_init_status

__all__ = ["ENTRIES", "Entry", "entry_ids", "run_entry"]

#: The papers, by the key an entry names (the claims' titles, :mod:`bnviz.papers.titles`).
PAPER_TITLES: dict[str, str] = PAPERS


@dataclass(frozen=True)
class Entry:
    """One result of a paper: ``commands`` (bnviz command lines, each printing JSON)
    produce ``ours`` through ``read``; ``judge`` gives the status from ``ours``.  A claim
    entry (``claim`` set) takes its result and paper value from ``bnviz claims``."""

    id: str
    paper: str
    result: str | None
    paper_value: Any
    commands: tuple[str, ...]
    read: Callable[..., dict[str, Any]]
    judge: Callable[[dict[str, Any]], str]
    claim: str | None = None
    #: the commands as the report shows them, where they are many (one line with its loop)
    shown: str | None = None

    @property
    def command_line(self) -> str:
        """What the report shows as the entry's command."""
        return self.shown or " && ".join(self.commands)


_MOONS = ("--dataset moons --shift-x 1 --shift-y 1 --depth 4 --width 6 --n-points 200 "
          "--weight-seed 0 --data-seed 0")
#: Figure 1 judged over seeds (weights and data), each in the three modes (BN first), each
#: mode's summary (the data's distances) then its full JSON (the facets, for the uniform
#: points' distances): :mod:`bnviz.replication.fig1`.
FIG1_SEEDS = 10
FIG1_MODES = ("bn", "zero_bias", "random_bias")
_DENSITY = ("bnviz density --dataset star --n-points 50 --depth 11 --width 64 --layers 1,7,11 "
            "--weight-seed 0 --data-seed 0")
_JITTER = ("bnviz jitter --dataset moons --n-points 400 --depth 3 --width 8 --realizations 32 "
           "--weight-seed 0 --data-seed 0 --batch-seed 0")
_DIGITS = "--dataset digits --epochs 5"


def _claim_entry(claim_id: str, paper: str, expect_holds: bool = True,
                 result: str | None = None) -> Entry:
    """A closed-form claim: reproduced when ``bnviz claims`` finds what the paper says
    (``expect_holds``: False for a statement the paper makes about another paper's claim
    failing)."""
    def judge(ours: dict[str, Any]) -> str:
        """Reproduced when ``bnviz claims``' check of the claim against an independent
        computation (``holds``) finds what the paper says; else not reproduced."""
        return "reproduced" if ours["holds"] is expect_holds else "not reproduced"

    def read(out: dict[str, Any]) -> dict[str, Any]:
        c = out["claims"][0]
        return {"computed": c["computed"], "holds": c["holds"], "how": c["how"]}

    return Entry(claim_id, paper, result, None, (f"bnviz claims --id {claim_id} --json",),
                 read, judge, claim=claim_id)


ENTRIES: tuple[Entry, ...] = (
    _claim_entry("bn-thm1-tls-minimiser", "bn"),
    _claim_entry("bn-cor2-central-arrangement", "bn"),
    _claim_entry("bn-prop2-variance", "bn"),
    Entry("bn-fig1-bn-vs-zero-bias", "bn",
          "Figure 1: with BN the folded hyperplanes of every layer sit on the data; without "
          "BN (zero or random bias) they do not, and BN's layer-1 partition is central. "
          "Judged by concentration relative to uniform: per seed, the mean over the layers of "
          "log(mean distance from uniform points over the box to the layer's nearest facet / "
          "that from the data), about 0 for a partition as dense everywhere as on the data; "
          "reproduced when BN's is above both zero bias's and random bias's by more than two "
          "standard errors of the paired differences over the seeds and BN's layer 1 is "
          "central in every seed, partly when above one of them (or both without a central "
          "layer 1), else not reproduced",
          "a picture (4 layers of 6 units, leaky-ReLU, 2D data)",
          tuple(f"bnviz partition {_MOONS.replace('-seed 0', f'-seed {seed}')} --mode {mode} "
                f"--format {form}"
                for seed in range(FIG1_SEEDS) for mode in FIG1_MODES
                for form in ("json", "json-full")),
          lambda *runs: fig1_ours(runs, FIG1_MODES), fig1_status,
          shown=(f"bnviz partition {_MOONS.replace('-seed 0', '-seed S')} --mode M --format F, "
                 f"for S in 0..{FIG1_SEEDS - 1}, M in {', '.join(FIG1_MODES)} and F in json, "
                 "json-full")),
    Entry("bn-fig3-concentration", "bn",
          "Figure 3: only BN concentrates the facets of deep layers near the data (layers 1, "
          "7, 11 of width 1024, 50 points of a star)",
          "a picture: BN's facets cluster on the data at layers 7 and 11",
          tuple(f"{_DENSITY} --mode {m} --json" for m in ("bn", "zero_bias", "random_bias")),
          j.fig3_ours, j.fig3_status),
    Entry("bn-fig4-concentration-images", "bn",
          "Figure 4: with BN more units cut eps-balls around real images than around Gaussian "
          "images of the same mean and variance (ResNet9, random weights, CIFAR)",
          "a picture (100 CIFAR images each)",
          ("bnviz jobs run concentration --dataset digits --images 100 --samples 32 "
           "--runs 2 --json",), j.fig4_ours, j.fig4_status),
    Entry("bn-fig5-10-smart-init", "bn",
          "Figures 5 and 10: BN statistics used once as an initialisation learn faster and end "
          "with higher test accuracy than zero or random bias (ours: the statistics folded "
          "into a plain network's weights and biases, so every arm trains alike; the paper's "
          "frozen statistics, which also rescale each layer's learning rate, kept beside it)",
          "higher accuracy at every epoch, no number printed (ResNet9 CIFAR-100, 10 runs, "
          "cross-validated learning rate; ResNet50 ImageNet)",
          ("bnviz jobs run smart-init --dataset digits --epochs 20 --runs 10 --validation 0.2 "
           "--lrs 0.01,0.02,0.04,0.08 --extend-lrs --json",),
          smart_init_ours, smart_init_status),
    Entry("bn-fig6-jitter", "bn",
          "Figure 6: decision boundaries of different mini-batches jitter, less at |B| = 256 "
          "than at 16, at initialisation and after training",
          "a picture (2D binary task, |B| = 16 and 256)",
          (f"{_JITTER} --batch-size 16 --json", f"{_JITTER} --batch-size 256 --json",
           f"{_JITTER} --batch-size 16 --train-steps 300 --json",
           f"{_JITTER} --batch-size 256 --train-steps 300 --json"),
          j.fig6_ours, j.fig6_status),
    Entry("bn-fig7-noise-controlled", "bn",
          "Figure 7 (red): noise-controlled BN makes mu and sigma as variable as a virtual "
          "batch of 32 inside real batches of 64",
          "var(mu) of a batch of 32; a wider sigma distribution",
          ("bnviz bnstats --batch-size 64 --train-size 1000 --virtual-batch-size 32 --json",),
          j.fig7_ours, j.fig7_status),
    Entry("bn-fig9-tls-colour", "bn",
          "Figure 9: in a trained toy network, sigma^2/||w||^2 measures how close each "
          "layer-1 hyperplane and each layer-4 folded hyperplane is to the data (TLS error)",
          "a picture (4 layers, trained on 2D points): small values close to the data",
          tuple(f"bnviz figure9 --weight-seed {seed} --data-seed {seed} --json"
                for seed in range(10)),
          j.fig9_ours, j.fig9_status),
    Entry("bn-sec5-virtual-batch", "bn",
          "Section 5, Figure 7 (red): noise-controlled BN, whose mu and sigma vary as in a "
          "virtual batch B' < |B|, behaves like real batches of B' (more jitter)",
          "statistics of a batch of 32 inside batches of 64; jitter grows as B' shrinks",
          tuple(f"{_JITTER} --batch-size {b} --virtual-batch-size {v} --json"
                for b, v in ((16, 4), (64, 16), (64, 32))),
          j.virtual_batch_ours, j.virtual_batch_status),
    Entry("bn-slice-concentration", "bn",
          "Sections 3.3-4 (Figures 3, 4) on image networks: BN puts the partition on the data: "
          "exact region counts in small windows about test images, over those about matched "
          "images off the data (Gaussian with the data's mean and covariance; pixel-shuffled), "
          "are higher with BN than with random bias or with BN's scale alone (ours: ResNet9 of "
          "width 8 on the 8x8 digits, 5 networks an arm, 3 epochs; judged on the trained "
          "networks with BN in train mode by a paired t interval across networks)",
          "BN focuses the partition on the data and not around random images (Figure 4, a "
          "picture; its size taken as an on/off ratio 1.5 times a control's)",
          ("bnviz slice --concentration 30 --data digits --seeds 5 --train-epochs 3 "
           "--train-width 8 --half-width 0.03 --seed 0",),
          slice_concentration_ours, slice_concentration_status),
    Entry("bn-table1-affine", "bn",
          "Table 1: learnable gamma, beta make little difference to test accuracy (ours: five "
          "epochs on the 8x8 digits, which cannot stand in for CIFAR, SVHN or imagenette; "
          "inconclusive when the smallest difference our runs detect, 2.84 standard errors "
          "of the difference for 80 % power at about 5 %, exceeds the paper's typical gap, "
          "the median of its eight differences, 0.75 points)",
          {f"{arch} {data} (no / yes)": v for arch, rows in j.TABLE1.items()
           for data, v in rows.items()},
          (f"bnviz jobs run affine-ablation {_DIGITS} --runs 5 --lr 0.03 --json",),
          lambda run: j.two_arms_ours(run, "no_affine", "affine", j.TABLE1_GAP),
          j.table1_status),
    Entry("bn-sec5-noise", "bn",
          "Section 5: extra BN noise (+15 % variance of mu_B, sigma_B^2) lifts test accuracy "
          "(ours: inconclusive when the smallest difference our runs detect, 2.84 standard "
          "errors of the difference, exceeds the paper's smallest gain, 0.25 points, unless "
          "they find a difference)",
          {"cifar10": [93.34, 93.68], "cifar100": [72.22, 72.74], "svhn": [96.16, 96.41]},
          (f"bnviz jobs run jitter-noise {_DIGITS} --runs 5 --lr 0.03 --json",),
          lambda run: j.two_arms_ours(run, "bn", "bn_noise", j.NOISE_EFFECT),
          j.noise_status),
    _claim_entry("dannemann-gradient", "dannemann"),
    _claim_entry("dannemann-lemma45", "dannemann", expect_holds=False, result=(
        "Example 3.2: Santurkar et al.'s Lemma 4.5 fails at W0 = W* = (1, 3): the nearest BN "
        "optimum is 4.24 away (squared distance), not closer than W*")),
    _claim_entry("santurkar-thm41", "santurkar"),
    _claim_entry("santurkar-thm41-as-printed", "santurkar"),
    Entry("santurkar-smoothness", "santurkar",
          "Sections 3.1-3.2: BN makes the loss landscape smoother: smaller loss changes and "
          "smaller effective beta-smoothness along the gradient",
          "smaller loss range and beta-smoothness with BN (VGG, CIFAR-10)",
          (f"bnviz jobs run landscape {_DIGITS} --runs 2 --lr 0.05 --json",),
          j.smoothness_ours, j.smoothness_status),
    Entry("santurkar-ics", "santurkar",
          "Section 2.2: BN does not reduce internal covariate shift (Definition 2.1): the "
          "gradient change caused by the layers below is as large with BN or larger",
          "ICS with BN as large as without, or larger (VGG, CIFAR-10)",
          (f"bnviz jobs run landscape {_DIGITS} --runs 2 --lr 0.05 --json",),
          j.ics_ours, j.ics_status),
    _claim_entry("luo-gamma-decay-gap", "luo"),
    _claim_entry("luo-sgd-generalisation", "luo"),
    _claim_entry("luo-sigma-b-variance-as-printed", "luo"),
    _claim_entry("luo-i2-as-printed", "luo"),
    _claim_entry("ergen-closed-form", "ergen"),
)


def entry_ids() -> list[str]:
    return [e.id for e in ENTRIES]


def _entry(entry_id: str) -> Entry:
    for e in ENTRIES:
        if e.id == entry_id:
            return e
    raise ValueError(f"unknown entry {entry_id!r}; known: {', '.join(entry_ids())}")


def _finite(value: Any) -> Any:
    """Non-finite floats as null (strict JSON), recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def run_entry(entry_id: str, execute: Callable[[Sequence[str]], bytes],
              outputs_by_command: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run one entry's commands now with ``execute`` (:func:`bnviz.cli.execute`: a command's
    argv -> what it prints), on :func:`bnviz.device.pick_device`'s device (``BNVIZ_DEVICE``
    chooses), and return its outcome (``id, paper, result, paper_value, ours, status,
    command, ran_at, seconds, device``).  ``outputs_by_command`` keeps each command's output
    for the next entries of one rerun (two entries may read one run)."""
    from bnviz.device import pick_device

    entry = _entry(entry_id)
    seen = {} if outputs_by_command is None else outputs_by_command
    t0 = time.perf_counter()
    for command in entry.commands:
        if command not in seen:
            seen[command] = json.loads(execute(shlex.split(command)))
    outputs = [seen[c] for c in entry.commands]
    ours = _finite(entry.read(*outputs))
    result, paper_value = entry.result, entry.paper_value
    if entry.claim is not None:
        claim = outputs[0]["claims"][0]
        result = result or claim["statement"]
        paper_value = claim["paper_value"]
    return {"id": entry.id, "paper": PAPER_TITLES[entry.paper], "result": result,
            "paper_value": _finite(paper_value), "ours": ours, "status": entry.judge(ours),
            "command": entry.command_line,
            "ran_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "seconds": round(time.perf_counter() - t0, 2), "device": str(pick_device())}
