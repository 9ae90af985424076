"""What each image experiment is, what its paper claims, and what our stored runs show: the
jobs page's explanation, shown when the page opens and again whenever the type changes."""

from __future__ import annotations

from dash import html

EXPLAIN = {
    "smart-init": "The same random weights, no BN during training, initialised with zero "
                  "bias, random bias, BN statistics over the training set folded into the "
                  "weights and biases (folded) or the weights only (scale_only), or those "
                  "statistics frozen in place as the paper does (bn_init, which also "
                  "rescales each layer's learning rate by 1/sigma^2). The paper: the BN "
                  "initialisation learns faster and ends higher, because its partition "
                  "already sits on the data (section 4). Set validation to hold out images: "
                  "each arm then gets its own learning rate.",
    "concentration": "Random weights. For each initialisation, the number of units whose "
                     "pre-activation changes sign inside an ε-ball around training images "
                     "(solid) and around Gaussian images of the same mean and variance "
                     "(dashed). The paper: only BN concentrates the partition near the data.",
    "jitter-noise": "BN, and BN with extra noise that raises the variance of μ_B and σ_B² "
                    "across mini-batches (default +15%). The paper: the extra jitter widens "
                    "margins and lifts test accuracy slightly (section 5).",
    "affine-ablation": "BN without and with learnable γ, β. The paper: little difference "
                       "(appendix D, Table 1).",
    "landscape": "Santurkar et al.: the same network trained by plain SGD with and without BN. "
                 "Every few steps, on that step's mini-batch: the loss and the gradient "
                 "change along −g for step sizes in [½, 4] × lr, the effective β-smoothness "
                 "(plotted), and the internal covariate shift of Definition 2.1. Their claim: "
                 "BN makes the landscape smoother, not the covariate shift smaller.",
}


#: The replication report's entry of each experiment (what our stored runs show).
REPLICATION_ENTRY = {"smart-init": "bn-fig5-10-smart-init",
                     "concentration": "bn-fig4-concentration-images",
                     "jitter-noise": "bn-sec5-noise", "affine-ablation": "bn-table1-affine",
                     "landscape": "santurkar-smoothness"}


def experiment_explanation(job_type: str) -> list:
    """What the experiment is and what the paper claims, then what our stored runs show
    (smart initialisation: the numbers, from the stored outcome; the others: the status),
    with a link to the entry in the replication report."""
    from bnviz.replication.report import format_ours, smart_init_sentence
    from bnviz.replication.store import OutcomesError, read_outcomes

    if not isinstance(job_type, str) or job_type not in EXPLAIN:
        return []
    entry = REPLICATION_ENTRY[job_type]
    try:
        outcome = read_outcomes().get(entry)
    except OutcomesError:
        outcome = None
    if job_type == "smart-init":
        ours = smart_init_sentence(outcome)
    elif outcome is None:
        ours = "none stored yet."
    else:
        ours = f"{outcome['status']} ({format_ours(outcome['ours'])})."
    return [EXPLAIN[job_type], " ", html.B("Our runs: " if job_type != "smart-init" else ""),
            ours, " ", html.A("See the replication report.",
                              href=f"/papers/replication#entry-{entry}")]
