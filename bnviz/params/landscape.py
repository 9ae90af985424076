"""Santurkar et al.'s 2D landscape run (the debate page's ``landscape-2d`` job): a ReLU
network trained with and without BN, the loss landscape and the internal covariate shift
measured at every step (:mod:`bnviz.papers.landscape`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from bnviz.caps import DATASETS, LANDSCAPE_LIMITS, PAGE_SEED_MAX
from bnviz.params.cost import check_landscape_work, landscape_work
from bnviz.params.fields import InputError, choice, real, whole
from bnviz.params.model import model_check, params_dataclass, parse

__all__ = ["LANDSCAPE_PAGE_LABELS", "LandscapeParams", "NoisyBN", "landscape_from_page"]

_L = LANDSCAPE_LIMITS


def _int(name: str) -> Any:
    lo, hi = _L[name]
    return whole(int(lo), int(hi))


@params_dataclass
class NoisyBN:
    """"Noisy BN" (Santurkar et al., Algorithm 1): after each BN, a <- s a + m with per-step,
    per-unit mu_j ~ U(-n_mu, n_mu), sigma_j ~ U(1, n_sigma) and per-element
    m ~ U(mu_j - r_mu, mu_j + r_mu), s ~ N(sigma_j, r_sigma).  The defaults are the paper's;
    the bounds keep the noise of the order of the normalised activations."""

    n_mu: real(0.0, 10.0) = 0.5
    n_sigma: real(1.0, 10.0) = 1.25
    r_mu: real(0.0, 10.0) = 0.1
    r_sigma: real(0.0, 10.0) = 0.1


@params_dataclass
class LandscapeParams:
    """One run: ``steps`` SGD steps of a ``depth`` x ``width`` ReLU network on ``n_points``
    points of a 2D binary task (from ``data_seed``), both arms (BN, no BN) from the same
    weights (from ``weight_seed``, which also orders the mini-batches and draws noisy BN's
    noise), with ``etas`` step sizes from ``eta_lo`` to ``eta_hi`` times ``lr`` (the paper:
    [1/2, 4] x lr, section 3.1). The explorer's names for the data and the seeds.

    Its cost is capped before any work (:func:`bnviz.params.cost.landscape_work`)."""

    dataset: choice(DATASETS) = "moons"
    n_points: _int("n_points") = 400
    data_seed: whole(0, PAGE_SEED_MAX) = 0
    depth: _int("depth") = 3
    width: _int("width") = 16
    weight_seed: whole(0, PAGE_SEED_MAX) = 0
    steps: _int("steps") = 200
    batch_size: _int("batch_size") = 32
    lr: real(*_L["lr"]) = 0.1
    eta_lo: real(*_L["eta"], lo_open=True) = 0.5  # step sizes, in multiples of lr
    eta_hi: real(*_L["eta"], lo_open=True) = 4.0
    etas: _int("etas") = 8
    noisy: NoisyBN | None = None  # Algorithm 1 on the BN arm

    @model_check
    def _consistent(self) -> None:
        if self.eta_hi <= self.eta_lo:
            raise InputError(f"enter a step size (a multiple of lr) above eta lo "
                             f"({self.eta_lo:g}), got {self.eta_hi:g}", "eta_hi")
        if self.batch_size > self.n_points:
            raise InputError(f"{self.batch_size} is larger than the data ({self.n_points} "
                             "points)", "batch_size")
        check_landscape_work(self.steps, self.etas, self.depth, self.batch_size, self.width)

    def work(self) -> float:
        """Forward-backward work of the run (:func:`~bnviz.params.cost.landscape_work`)."""
        return landscape_work(self.steps, self.etas, self.depth, self.batch_size, self.width)

    def as_params(self) -> dict[str, Any]:
        """Plain values (the job's stored parameters and its key); ``noisy`` as a dict."""
        return asdict(self)


#: What the debate page calls its controls.
LANDSCAPE_PAGE_LABELS: dict[str, str] = {"lr": "learning rate"}


def landscape_from_page(depth: object, width: object, steps: object, lr: object,
                        noisy: object) -> LandscapeParams:
    """The debate page's controls (depth, width, steps, learning rate, the noisy-BN switch)
    as a run's parameters; InputError (one line naming the control) for a bad value."""
    raw: Mapping[str, object] = {"depth": depth, "width": width, "steps": steps, "lr": lr,
                                 "noisy": asdict(NoisyBN()) if noisy is True else None}
    return parse(LandscapeParams, raw, LANDSCAPE_PAGE_LABELS)
