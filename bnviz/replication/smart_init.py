"""The smart-initialisation entry (BN paper section 4, Figures 5 and 10): how it reads
``bnviz jobs run smart-init --lrs ...`` (each arm at its chosen learning rate) and judges it.
The rule is stated in :func:`smart_init_status`; the statistics are
:mod:`bnviz.replication.judges`' (two standard errors of the difference, 80 % power)."""

from __future__ import annotations

from typing import Any

from bnviz.replication.judges import detectable, difference, significant_difference

__all__ = ["smart_init_arm", "smart_init_ours", "smart_init_status"]


def smart_init_ours(sweep: dict) -> dict[str, Any]:
    """Per arm its final accuracy, learning rate, curve (mean and std over the seeds, per
    epoch); then each arm against zero bias (the difference of final means, its standard
    error, and the smallest difference the test detects: :func:`detectable`)."""
    arms = sweep["arms"]
    out: dict[str, Any] = {"dataset": sweep["params"]["dataset"],
                           "runs": sweep["params"]["runs"], "epochs": sweep["params"]["epochs"],
                           "lrs": sweep["lrs"],
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
    n = int(out["runs"])
    for arm in arms:
        if arm != "zero_bias":
            diff, se = difference(out[arm], out[f"{arm}_std"], n, out["zero_bias"],
                                  out["zero_bias_std"], n)
            out[f"{arm}_minus_zero_bias"] = diff
            out[f"{arm}_minus_zero_bias_se"] = se
            out[f"{arm}_detectable"] = detectable(se)
    return out


def smart_init_arm(ours: dict) -> str:
    """The arm that tests the claim: BN's statistics folded into a plain network, trained as
    the zero-bias arm is (:mod:`bnviz.images.folding`); outcomes stored before it existed
    have only the frozen arm (bn_init)."""
    return "folded" if "folded" in ours else "bn_init"


def smart_init_status(ours: dict) -> str:
    """The claim's arm (:func:`smart_init_arm`: BN's statistics folded into the weights, each
    arm at the learning rate chosen on held-out images) against zero bias, on the final mean
    test accuracy over the seeds. The paper prints no effect size (Figures 5 and 10 are
    pictures), so the interval of the difference (two standard errors each side) decides
    against 0: above, reproduced; below, not reproduced (BN's start is worse); holding 0:
    partly when it learns faster (significantly higher after the first epoch), else
    inconclusive, with the smallest difference the runs could detect stated beside it."""
    arm, n = smart_init_arm(ours), int(ours["runs"])
    final = significant_difference(ours[arm], ours[f"{arm}_std"], n,
                                   ours["zero_bias"], ours["zero_bias_std"], n)
    first = significant_difference(ours[f"{arm}_epoch1"], ours[f"{arm}_epoch1_std"], n,
                                   ours["zero_bias_epoch1"], ours["zero_bias_epoch1_std"], n)
    if final > 0:
        return "reproduced"
    if final < 0:
        return "not reproduced"
    return "partly" if first > 0 else "inconclusive"
