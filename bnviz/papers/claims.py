"""Every closed-form statement of the five papers, checked numerically: paper value beside
computed value.

Each claim is computed independently of the formula it checks (autograd against a closed
form, Monte Carlo against an expectation, a numerical minimiser against an argmin, the exact
partition engine against a region count), in float64, with a fixed seed and a stated
tolerance.  Where a paper's printed formula is wrong, the printed version is reported as not
holding, next to the corrected one (docs/conventions.md, "Pitfalls").

    python -m bnviz claims --json
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from bnviz.device import pick_device
from bnviz.papers.checks_bn import (
    bn_cor2_central_arrangement,
    bn_prop2_variance,
    bn_thm1_tls_minimiser,
)
from bnviz.papers.checks_ergen import ergen_closed_form
from bnviz.papers.checks_luo import (
    luo_gamma_decay_gap,
    luo_i2_printed,
    luo_sgd_generalisation,
    luo_sigma_variance_printed,
)
from bnviz.papers.checks_santurkar import (
    dannemann_gradient,
    dannemann_lemma45,
    santurkar_thm41,
    santurkar_thm41_printed,
)
from bnviz.papers.claim import Claim
from bnviz.params.cost import claims_seconds
from bnviz.service.cache import shared_memoize

__all__ = ["all_claims", "claim_ids", "run_claims"]


#: Every claim by its id, in the order the table shows them.
_CLAIMS: dict[str, Callable[[torch.device], Claim]] = {
    "bn-thm1-tls-minimiser": bn_thm1_tls_minimiser,
    "bn-cor2-central-arrangement": bn_cor2_central_arrangement,
    "bn-prop2-variance": bn_prop2_variance,
    "dannemann-gradient": dannemann_gradient,
    "dannemann-lemma45": dannemann_lemma45,
    "santurkar-thm41": santurkar_thm41,
    "santurkar-thm41-as-printed": santurkar_thm41_printed,
    "luo-gamma-decay-gap": luo_gamma_decay_gap,
    "luo-sgd-generalisation": luo_sgd_generalisation,
    "luo-sigma-b-variance-as-printed": luo_sigma_variance_printed,
    "luo-i2-as-printed": luo_i2_printed,
    "ergen-closed-form": ergen_closed_form,
}


def claim_ids() -> list[str]:
    return list(_CLAIMS)


def run_claims(ids: list[str] | None = None,
               device: torch.device | str | None = None,
               progress: Callable[[float], None] = lambda fraction: None) -> list[Claim]:
    """The claims (all, or those of ``ids``), each computed now; ``progress`` hears the
    fraction done after each."""
    dev = torch.device(device) if device is not None else pick_device()
    if ids:
        unknown = [i for i in ids if i not in _CLAIMS]
        if unknown:
            raise ValueError(f"unknown claim {unknown[0]!r}; known: {', '.join(_CLAIMS)}")
    chosen = list(ids or _CLAIMS)
    out = []
    for k, claim_id in enumerate(chosen, 1):
        out.append(_CLAIMS[claim_id](dev))
        progress(k / len(chosen))
    return out


def all_claims(device: torch.device | str | None = None) -> dict:
    """``{"claims": [...]}``, the JSON of ``python -m bnviz claims --json``."""
    return {"claims": [c.as_json() for c in run_claims(device=device)]}


# v2: Proposition 2 in full, Corollary 2 on the engine's statistics (issue 17); v3: each
# claim's statement_tex (issue 31)
@shared_memoize("papers-claims-v3", cost=claims_seconds)
def shared_claims() -> tuple[dict, ...]:
    """The claims' JSON (6 s to 18 s on 2 cores: :data:`bnviz.params.cost.CLAIMS_SECONDS`),
    computed once per ``BNVIZ_HOME`` and read from the disk cache by every web process after,
    also after a restart: the debate page's table. A web process computes it in the
    background when it starts (:mod:`bnviz.server.background`), so the page's first visitor
    does not wait; a request that finds it missing computes it under the heavy-work admission,
    and one that finds another computing it waits no longer than for a heavy slot
    (:func:`bnviz.service.cache.shared_memoize`: ServerBusy with a retry time). Seeded: the
    same every time; bump the name when a claim changes."""
    return tuple(all_claims()["claims"])
