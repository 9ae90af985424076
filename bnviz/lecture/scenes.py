"""What each tour step shows, for a state of the lecture's four sliders.

:func:`step_settings` applies the sliders (mu, sigma, batch size, depth) to a step's settings,
through the one parameter layer (``PartitionParams``), keeping only the sliders that act on the
step's scene; :func:`compute_scene` calls the one bnviz function behind the scene (the
explorer's ``explore``, Figure 3's ``concentration`` (and on an image plane, the
slices' ``facet_density``), Figure 6's ``run_jitter``, Figure 7's
``figure7``, the four papers' computations) and returns a :class:`Scene` of plain arrays and
dataclasses, memoised so that a step seen once (or precomputed by :func:`precompute_tour`
when the server starts) answers from memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bnviz.lecture.tour import TOUR, TourStep, step_by_key
from bnviz.params import InputError, JitterParams, PartitionParams
from bnviz.params.cost import SCENE_SECONDS, scene_seconds
from bnviz.service.cache import memoize, shared_memoize

__all__ = ["BATCH_ALL", "BATCH_SLIDER", "Scene", "compute_scene", "precompute_tour",
           "step_settings"]

#: The batch-size slider's positions are log2 of the batch; this last position is "all".
BATCH_SLIDER = (2, 9)
BATCH_ALL = BATCH_SLIDER[1]
DEPTH_SLIDER = (1, 12)  # the explorer's depths, so that the Lecture link keeps its network
#: The largest batch a scene that needs a number takes for "all" (Figure 7, Luo et al.).
_BATCH_FOR_ALL = {"bnstats": 512, "luo": 256}
#: Dannemann & Junike's initialisation W0 = W* = (1, 3), the least-squares optimum of their
#: Example 3.2 (bnviz.papers.checks_santurkar.dannemann_example), where their counterexample
#: to Lemma 4.5 starts.
DANNEMANN_W0 = np.array([1.0, 3.0])
#: Figure 3's three rows: the same weights without BN (two ways) and with BN.
DENSITY_MODES = ("zero_bias", "random_bias", "bn")
#: The training step: the same weights and mini-batches without BN (biases learned from
#: zero) and with it, and the run both are trained for (bnviz train's defaults).
TRAINING_MODES = ("zero_bias", "bn")
TRAINING_RUN = {"steps": 300, "frames": 31, "batch_size": 32, "lr": 0.05, "optimizer": "adam"}


@dataclass(frozen=True)
class Scene:
    step: TourStep
    settings: PartitionParams  # the step's settings with the sliders applied
    data: Any  # what the scene's figure needs (see compute_scene)
    note: str = ""  # what the sliders could not do here, said plainly
    #: Figure 9's colours (a step with ``tls``): the two layers' values and distances
    #: (:class:`bnviz.views.figure9.Figure9`), drawn instead of the plain partition
    tls: Any = None


def step_settings(step: TourStep, mu_t: float | None = None, sigma_log2: float | None = None,
                  batch_log2: float | None = None, depth: int | None = None
                  ) -> tuple[PartitionParams, str]:
    """The step's settings with the live sliders applied (None: the step's own value), and a
    note for a batch larger than the data (taken as all the data). InputError names a bad
    slider value (only a crafted request sends one)."""
    raw = {k: v for k, v in step.settings.to_query().items()}
    note = ""
    if "mu" in step.live and mu_t is not None:
        raw["mu_t"] = mu_t
    if "sigma" in step.live and sigma_log2 is not None:
        try:
            raw["sigma_s"] = 2.0 ** float(sigma_log2)
        except (TypeError, ValueError, OverflowError):
            raise InputError("σ slider: move it to a value from ¼ to 4") from None
    if "depth" in step.live and depth is not None:
        raw["depth"] = depth
        raw["layer"] = depth if step.settings.layer == step.settings.depth else \
            step.settings.layer
    if "batch" in step.live and batch_log2 is not None:
        try:
            b = float(batch_log2)
        except (TypeError, ValueError, OverflowError):
            b = math.nan
        if not (math.isfinite(b) and b == int(b) and BATCH_SLIDER[0] <= b <= BATCH_SLIDER[1]):
            raise InputError("batch size: move the slider to 4 ... all")
        raw["batch_size"] = "all" if b == BATCH_ALL else str(2 ** int(b))
    if step.scene in ("space", "unit", "layers", "split") and raw.get("batch_size", "all") \
            != "all" and int(raw["batch_size"]) >= step.settings.n_points:
        note = f"a batch of {raw['batch_size']} is all {step.settings.n_points} points"
        raw["batch_size"] = "all"
    raw.setdefault("batch_size", "all" if step.settings.batch_size is None
                   else str(step.settings.batch_size))
    return PartitionParams.from_page(raw), note


def _explore(settings: PartitionParams):
    from bnviz.views.explorer import explore

    return explore(settings)


def _without_and_with_bn(settings: PartitionParams) -> tuple:
    """The same weights without BN (random biases, or the settings' own mode) and with it."""
    from bnviz.views.explorer import comparison_modes

    return tuple((mode, _explore(replace(settings, mode=mode)))
                 for mode in comparison_modes(settings.mode))


def _density(settings: PartitionParams) -> dict:
    """Figure 3: every layer's facet counts near each grid point, for each mode."""
    from bnviz.core.network import random_network
    from bnviz.data.datasets import make_dataset
    from bnviz.views.density import concentration

    data = make_dataset(settings.dataset, settings.n_points, settings.data_seed)
    layers = tuple(range(1, settings.depth + 1))
    e = settings.extent
    counts = np.stack([concentration(
        random_network(settings.depth, settings.width, settings.activation, settings.alpha,
                       mode, settings.weight_seed), data.points, layers,
        box=(-e, e, -e, e)).counts for mode in DENSITY_MODES])
    shown = sorted({1, (settings.depth + 1) // 2, settings.depth})
    return {"counts": counts, "modes": list(DENSITY_MODES), "layers": shown,
            "points": data.points, "box": (-e, e, -e, e)}


def _jitter(settings: PartitionParams):
    from bnviz.views.jitter import run_jitter

    n = settings.n_points
    batch = n if settings.batch_size is None else min(settings.batch_size, n)
    return run_jitter(JitterParams(dataset=settings.dataset, n_points=n,
                                   data_seed=settings.data_seed, depth=settings.depth,
                                   width=settings.width, weight_seed=settings.weight_seed,
                                   batch_size=batch, batch_seed=settings.batch_seed,
                                   realizations=16))


def _training(settings: PartitionParams) -> dict:
    """The recorded runs of the settings' network on their data, without BN and with it
    (:func:`bnviz.views.trainer.recorded_runs`), a frame every 10 steps."""
    from bnviz.caps import EXPLORER_MAX_REGIONS
    from bnviz.params import LiveTrainingParams
    from bnviz.views.trainer import recorded_runs, training_data

    s = settings
    p = LiveTrainingParams(dataset=s.dataset, n_points=s.n_points, weight_seed=s.weight_seed,
                           data_seed=s.data_seed, depth=s.depth, width=s.width,
                           activation=s.activation, alpha=s.alpha, mode="bn", extent=s.extent,
                           **TRAINING_RUN)
    shift = (s.shift_x, s.shift_y)
    data = training_data(p, s.data_seed, shift)
    return {"runs": recorded_runs(p, s.data_seed, shift, TRAINING_MODES, EXPLORER_MAX_REGIONS),
            "points": data.points, "labels": np.asarray(data.labels) % 2}


#: The slice step (issue 27): Figure 3 on a plane through three test digits, cut through
#: the appendix CNN as an image job starts it (random weights, the arms' norm modes), BN
#: with the statistics of one mini-batch of training digits (train mode).
SLICE_SCENE = {"arch": "cnn", "dataset": "digits", "images": (0, 1, 2), "batch_size": 64,
               "seed": 0, "grid": 64}


@shared_memoize("lecture-slice-v1")
def _slices() -> dict:
    """Each mode's facet density on the plane, every nonlinear layer (estimate.facet_density),
    and its near/far region density (concentration.near_far: near the three images over far
    from them, on this one plane; the replication entry counts regions in windows against
    images off the data), about 5 s on 2 cores: once per ``BNVIZ_HOME``."""
    import torch

    from bnviz.images.networks import build_model
    from bnviz.slices.concentration import near_far
    from bnviz.slices.estimate import facet_density
    from bnviz.slices.graph import batch_statistics
    from bnviz.slices.plane import plane_through_images
    from bnviz.slices.sources import load_images
    from bnviz.slices.torch_import import slice_net

    c = SLICE_SCENE
    images = load_images(c["dataset"])
    shape = tuple(images.test.shape[1:])
    plane = plane_through_images(images.test[list(c["images"])])
    batch = images.train[np.random.default_rng(c["seed"]).choice(
        len(images.train), c["batch_size"], replace=False)]
    counts, ratios = [], {}
    for mode in DENSITY_MODES:
        model = build_model(c["arch"], shape[0], 10, shape[-1], mode, seed=c["seed"]).eval()
        net = slice_net(model, shape, f"{c['arch']} ({mode})")
        stats = (batch_statistics(net, torch.as_tensor(batch)) if mode == "bn" else None)
        counts.append(facet_density(net, plane, plane.default_window(), stats, grid=c["grid"]))
        ratios[mode] = near_far(net, plane, stats)
    n_layers = len(counts[0])
    return {"counts": np.stack(counts), "modes": list(DENSITY_MODES),
            "layers": sorted({1, (n_layers + 1) // 2, n_layers}), "points": plane.anchors,
            "box": plane.default_window(), "ratios": ratios,
            "labels": [int(images.labels[i]) for i in c["images"]]}


def _bnstats(batch: int) -> tuple[dict, dict]:
    from bnviz.views.bnstats import figure7

    return figure7(batch_size=batch, train_size=1000, samples=3000,
                   virtual_batch_size=max(2, batch // 2), data_seed=0, batch_seed=0)


@shared_memoize("lecture-santurkar-v2")  # v1: LandscapeParams of n, seed
def _santurkar():
    """Santurkar et al.'s measurements at the papers page's defaults (about 2 s): once per
    ``BNVIZ_HOME``."""
    from bnviz.papers.landscape import run_landscape
    from bnviz.params import LandscapeParams

    return run_landscape(LandscapeParams())


@shared_memoize("lecture-ergen-v1")
def _ergen():
    """Ergen et al.'s training on 30 points of the moons (about a second)."""
    from bnviz.data.datasets import make_dataset
    from bnviz.papers.ergen import ergen_experiment

    data = make_dataset("moons", 30, 0)
    return ergen_experiment(data.points, data.labels, beta=0.5)


def _luo(batch: int):
    from bnviz.papers import luo

    return luo.statistics_samples("gaussian", batch, 20_000, seed=0)


def _dannemann():
    from bnviz.papers.checks_santurkar import dannemann_example
    from bnviz.papers.dannemann import weight_plane

    return weight_plane(*dannemann_example(), DANNEMANN_W0, False, False)


@memoize(cost=lambda settings: SCENE_SECONDS["figure9"])
def _figure9(settings: PartitionParams):
    """Figure 9's numbers for the input-space scene of these settings (layer 1 and the
    highlighted layer)."""
    from bnviz.views.figure9 import tls_layers

    return tls_layers(_scene_data("space", settings)[0])


# a slider's new value computes under the web's admission (a busy server answers one line,
# which the lecture shows where it shows a bad value), a precomputed step never waits
@memoize(cost=scene_seconds)
def _scene_data(scene: str, settings: PartitionParams) -> tuple[Any, str]:
    if scene in ("space", "unit"):
        return _explore(settings), ""
    if scene in ("layers", "split"):
        return _without_and_with_bn(settings), ""
    if scene == "density":
        return _density(settings), ""
    if scene == "jitter":
        return _jitter(settings), ""
    if scene == "slice":
        return _slices(), ""
    if scene in ("bnstats", "luo"):
        batch = settings.batch_size or _BATCH_FOR_ALL[scene]
        batch = min(batch, _BATCH_FOR_ALL[scene])
        note = "" if settings.batch_size == batch else f"“all” is taken as a batch of {batch}"
        return (_bnstats(batch) if scene == "bnstats" else _luo(batch)), note
    if scene == "training":
        return _training(settings), ""
    if scene == "dannemann":
        return _dannemann(), ""
    if scene == "santurkar":
        return _santurkar(), ""
    if scene == "ergen":
        return _ergen(), ""
    raise ValueError(f"unknown scene {scene!r}")


def compute_scene(step: TourStep | str, mu_t: float | None = None,
                  sigma_log2: float | None = None, batch_log2: float | None = None,
                  depth: int | None = None) -> Scene:
    """What ``step`` shows with the sliders at these values (None: the step's own).

    ``data`` is, by scene: ``space``, ``unit``: an ExplorerResult; ``layers``, ``split``:
    ((mode, ExplorerResult) without BN, ("bn", ExplorerResult)); ``density``: a dict of
    facet counts (modes, layers, grid, grid), the modes, the layers shown, the points and the
    box; ``slice``: the same on a plane through three test digits (the points are the
    digits' plane coordinates, ``labels`` their classes, ``ratios`` each mode's near/far
    region density); ``jitter``: a JitterResult; ``bnstats``: Figure 7's (report, samples);
    ``dannemann``: a WeightPlane; ``santurkar``: a LandscapeResult; ``luo``:
    StatisticsSamples; ``ergen``: an
    ErgenResult. A ``space`` step with ``tls`` (Figure 9) has its two layers' numbers in
    ``tls``. Raises InputError (a bad slider value) or PartitionTooLarge."""
    step = step_by_key(step) if isinstance(step, str) else step
    settings, note = step_settings(step, mu_t, sigma_log2, batch_log2, depth)
    data, scene_note = _scene_data(step.scene, settings)
    tls = _figure9(settings) if step.tls and step.scene == "space" else None
    return Scene(step, settings, data, "; ".join(filter(None, (note, scene_note))), tls)


def precompute_tour() -> None:
    """Compute every step at its own settings (a few seconds, once per process; the papers'
    trained networks once per ``BNVIZ_HOME``), so that each step answers from memory."""
    for step in TOUR:
        compute_scene(step)
