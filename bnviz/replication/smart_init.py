"""The smart-initialisation entry (BN paper section 4, Figures 5 and 10): how it reads
``bnviz jobs run smart-init --lrs ... --extend-lrs`` (each arm at the learning rate chosen on
held-out images) and judges it.

The claim is that BN's statistics used once as an initialisation "learn faster and end with
higher test accuracy" than zero or random bias, i.e. higher at every epoch.  The arms share
their seeds (run r of every arm starts from the same weights and sees the same batches), so
the test is paired: at each epoch, the claim's arm minus a control, one difference per seed.
The rule is :func:`smart_init_status`; :func:`paired_epochs` is its statistics (a two-sided
paired t test per epoch and control, Holm's correction over all of them together)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from bnviz.replication.judges import detectable, difference

__all__ = ["ALPHA", "CONTROLS", "paired_epochs", "smart_init_arm", "smart_init_ours",
           "smart_init_status"]

#: The family-wise error rate of the per-epoch tests (Holm's correction keeps it).
ALPHA = 0.05
#: The arms the claim's arm must beat.
CONTROLS: tuple[str, ...] = ("zero_bias", "random_bias")


def smart_init_ours(sweep: dict) -> dict[str, Any]:
    """Per arm its final accuracy, learning rate, curve (mean and std over the seeds, per
    epoch) and every seed's curve (``{arm}_runs``: seeds x epochs, paired across arms); the
    sweep's grid and the arms whose chosen rate is still at its edge; then the claim's arm
    against each control at every epoch (:func:`paired_epochs`) and, for the final epoch
    against zero bias, the unpaired summary kept from before (difference, standard error,
    smallest detectable difference)."""
    arms = sweep["arms"]
    out: dict[str, Any] = {"dataset": sweep["params"]["dataset"],
                           "runs": sweep["params"]["runs"], "epochs": sweep["params"]["epochs"],
                           "lrs": sweep["lrs"], "at_edge": sweep.get("at_edge", []),
                           "selected_by": next(iter(arms.values()))["selected_by"]}
    for arm, a in arms.items():
        out[arm] = a["final"]
        out[f"{arm}_std"] = a["std"]
        out[f"{arm}_lr"] = a["lr"]
        out[f"{arm}_epoch1"] = a["mean"][0]
        out[f"{arm}_epoch1_std"] = a["mean_std"][0]
        out[f"{arm}_curve"] = a["mean"]
        out[f"{arm}_curve_std"] = a["mean_std"]
        out[f"{arm}_by_lr"] = [s["arms"][arm]["final"] for s in sweep["per_lr"]]
        if "curves" in a:
            out[f"{arm}_runs"] = a["curves"]
    n = int(out["runs"])
    for arm in arms:
        if arm != "zero_bias":
            diff, se = difference(out[arm], out[f"{arm}_std"], n, out["zero_bias"],
                                  out["zero_bias_std"], n)
            out[f"{arm}_minus_zero_bias"] = diff
            out[f"{arm}_minus_zero_bias_se"] = se
            out[f"{arm}_detectable"] = detectable(se)
    arm = smart_init_arm(out)
    if f"{arm}_runs" in out:
        out["paired"] = paired_epochs(out)
    return out


def smart_init_arm(ours: dict) -> str:
    """The arm that tests the claim: BN's statistics folded into a plain network, trained as
    the zero-bias arm is (:mod:`bnviz.images.folding`); outcomes stored before it existed
    have only the frozen arm (bn_init)."""
    return "folded" if "folded" in ours or "folded_runs" in ours else "bn_init"


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error rate), same shape as ``p``."""
    flat = p.ravel()
    order = np.argsort(flat, kind="stable")
    m = len(flat)
    stepped = np.maximum.accumulate((m - np.arange(m)) * flat[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted.reshape(p.shape)


def paired_epochs(ours: dict) -> dict[str, dict[str, list[float]]]:
    """The claim's arm against each control (:data:`CONTROLS`), from every seed's stored
    curve: per epoch the mean paired difference, its standard error (sample std / sqrt n),
    the two-sided paired t test's p-value, Holm's adjusted p-value over all epochs and
    controls together, and the smallest difference the test detects with 80 % power at
    level :data:`ALPHA` (per epoch, uncorrected). A difference that is the same for every
    seed has no spread: p = 1 when it is 0, else 0."""
    arm = smart_init_arm(ours)
    mine = np.asarray(ours[f"{arm}_runs"], dtype=float)
    n = len(mine)
    t_crit = stats.t.ppf(1 - ALPHA / 2, max(n - 1, 1)) + stats.t.ppf(0.8, max(n - 1, 1))
    means, ses, ps = [], [], []
    for control in CONTROLS:
        d = mine - np.asarray(ours[f"{control}_runs"], dtype=float)  # (seeds, epochs)
        mean = d.mean(0)
        se = d.std(0, ddof=1) / np.sqrt(n) if n > 1 else np.full(d.shape[1], np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = mean / se
        p = np.where(se > 0, 2 * stats.t.sf(np.abs(t), max(n - 1, 1)),
                     np.where(mean == 0, 1.0, 0.0))
        means.append(mean)
        ses.append(se)
        ps.append(p)
    holm = _holm(np.array(ps))
    return {control: {"mean": means[i].tolist(), "se": ses[i].tolist(), "p": ps[i].tolist(),
                      "p_holm": holm[i].tolist(),
                      "detectable": (t_crit * ses[i]).tolist()}
            for i, control in enumerate(CONTROLS)}


def smart_init_status(ours: dict) -> str:
    """Recomputed from every seed's curve (:func:`paired_epochs`; the claim's arm is
    :func:`smart_init_arm`, each arm at the rate chosen on held-out images):

    - inconclusive when an arm's chosen rate is at the edge of the sweep's grid (its best
      rate may lie beyond, so the comparison is not at every arm's best), or when the
      outcome has no per-seed curves (stored before they were kept);
    - not reproduced when the arm is significantly below either control at any epoch
      (Holm-adjusted p < :data:`ALPHA`): that rules out "higher at every epoch";
    - reproduced when it is significantly above both controls at the last epoch, with no
      deficit anywhere;
    - partly when it is significantly above a control at some epoch, with no deficit;
    - otherwise inconclusive: the smallest difference the test detects is stored per epoch.
    """
    arm = smart_init_arm(ours)
    if ours.get("at_edge") or f"{arm}_runs" not in ours:
        return "inconclusive"
    paired = paired_epochs(ours)
    below = [any(m < 0 and p < ALPHA for m, p in zip(v["mean"], v["p_holm"], strict=True))
             for v in paired.values()]
    above = [[m > 0 and p < ALPHA for m, p in zip(v["mean"], v["p_holm"], strict=True)]
             for v in paired.values()]
    if any(below):
        return "not reproduced"
    if all(a[-1] for a in above):
        return "reproduced"
    return "partly" if any(any(a) for a in above) else "inconclusive"
