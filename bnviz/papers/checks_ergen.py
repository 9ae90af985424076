"""Ergen et al.'s closed-form optimum of a BN network's last layer, checked against training."""

from __future__ import annotations

import torch

from bnviz.papers.claim import PAPERS, Claim

__all__ = ["ergen_closed_form"]


def ergen_closed_form(device: torch.device, *, steps: int = 3000) -> Claim:
    """The closed-form optimum p* of the BN network's last layer, against training. A network
    trained too briefly (``steps``, a wrong input) is not at the optimum, and the check
    fails (tests)."""
    from bnviz.data.datasets import make_dataset
    from bnviz.papers.ergen import ergen_experiment

    data = make_dataset("blobs", 24, 0)
    r = ergen_experiment(data.points, data.labels, beta=0.7, steps=steps)
    holds = r.p_star * (1 - 1e-9) <= r.objective <= r.p_star * (1 + 1e-3) and \
        r.feature_rank == r.active_classes
    return Claim("ergen-closed-form", PAPERS["ergen"],
                 "With BN (l2 normalisation) and Range(A) = R^n, the regularised squared loss "
                 "has the optimum p* = sum_j (beta ||y_j|| - beta^2/2)_(||y_j|| > beta), at "
                 "gamma* = ||y_j - mean|| / ||y_j||, alpha* = 1^T y_j / (sqrt(n) ||y_j||); the "
                 "last hidden features have rank #{j: ||y_j|| > beta}",
                 {"p_star": r.p_star, "rank": r.active_classes},
                 {"objective": r.objective, "rank": r.feature_rank}, holds,
                 "full-batch Adam (3000 steps, float64) on 24 blobs in 3 classes, beta = 0.7; "
                 "within 0.1 % of p* (never below it), rank at 5 % of the largest singular "
                 "value", "/papers#ergen",
                 statement_tex=r"With BN ($\ell_2$ normalisation) and "
                 r"$\operatorname{Range}(A) = \mathbb{R}^n$, the regularised squared loss has "
                 r"the optimum $p^* = \sum_{j:\,\lVert y_j\rVert > \beta} (\beta\lVert y_j\rVert "
                 r"- \beta^2/2)$, at $\gamma^* = \lVert y_j - \bar y_j\rVert/\lVert y_j\rVert$, "
                 r"$\alpha^* = \mathbf{1}^\top y_j/(\sqrt{n}\,\lVert y_j\rVert)$; the last "
                 r"hidden features have rank $\#\{j : \lVert y_j\rVert > \beta\}$")
