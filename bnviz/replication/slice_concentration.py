"""The slice concentration entry (``bn-slice-concentration``; the BN paper's sections 3.3-4,
Figures 3 and 4, on exact slices of image networks): how it reads ``bnviz slice
--concentration`` (:mod:`bnviz.slices.concentration`) and judges it.

``ours`` keeps every network's numbers (``per_network``: per stage, BN mode, arm, one entry
per seed in ``seeds``' order: the mean region count of a window on the data and off it, and
the value), so that :func:`slice_concentration_status` recomputes the verdict from them
alone; the intervals shown beside (``comparisons``) are made by the same functions.

The value of a network: v = ln(mean count on the data / mean count off the data), one per
off-data kind (``gaussian``, ``shuffled``).  BN against a control: the paired differences
d_s = v_bn(s) - v_control(s) over the seeds s (the same initial weights, triples and
windows), their mean and its two-sided 95 % Student t interval (n - 1 degrees of freedom;
with 5 networks a sign-flip permutation interval cannot exclude 0 at 95 %: its smallest
p-value is 2/32).  The smallest detectable difference is (t_0.975 + t_0.80) standard errors
(80 % power).

The rule (:func:`slice_concentration_status`), on the trained networks with BN in train mode
(the mini-batch statistics that place BN's hyperplanes, BN paper eq. 3 and Theorem 1; the
initialised networks and eval mode are reported beside, not judged):

* fewer than :data:`MIN_SEEDS` networks per arm or :data:`MIN_TRIPLES` triples: the run
  is too small to decide, "inconclusive";
* "reproduced": BN's interval lies above 0 against random bias and against scale-only, for
  both off-data kinds (all four must hold: no correction for multiple tests is needed);
* "not reproduced": in one of those four the interval lies below :data:`EFFECT` (it excludes
  the paper's direction, or rules out an effect of the paper's size);
* otherwise "inconclusive", with the smallest detectable difference beside it.

The paper's size: its Figure 4 prints no numbers; its text says BN "clearly" focuses the
partition on the data "and not around the random ones", unlike zero and random bias.  We
take the least that reads as clear in a bar chart: BN's on/off ratio half as large again as
a control's, EFFECT = ln 1.5 = 0.405 (stored in ``ours``; a reader may judge with another).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["CONTROLS", "DECIDING", "EFFECT", "MIN_SEEDS", "MIN_TRIPLES", "OFF_KINDS",
           "network_values", "paired_interval", "slice_concentration_ours",
           "slice_concentration_status", "verdict"]

#: The paper's effect on the log ratio (module docstring: BN's on/off ratio 1.5 times a
#: control's).
EFFECT = math.log(1.5)
#: The least run that can decide (issue 44): networks per arm, triples of images.
MIN_SEEDS, MIN_TRIPLES = 5, 10
#: The controls BN must beat, the off-data kinds, and the (stage, BN mode) judged.
CONTROLS: tuple[str, ...] = ("random_bias", "scale_only")
OFF_KINDS: tuple[str, ...] = ("gaussian", "shuffled")
DECIDING: tuple[str, str] = ("trained", "train")
#: Two-sided 95 % and one-sided 80 % quantiles of Student's t (1 to 30 degrees of freedom,
#: then the normal's): t_0.975 and t_0.80.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
_T80 = (1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883, 0.879, 0.876, 0.873,
        0.870, 0.868, 0.866, 0.865, 0.863, 0.862, 0.861, 0.860, 0.859, 0.858, 0.858, 0.857,
        0.856, 0.856, 0.855, 0.855, 0.854, 0.854)


def _t(table: tuple[float, ...], df: int, normal: float) -> float:
    return table[df - 1] if df <= len(table) else normal


def network_values(counts: dict[str, list[int]]) -> dict[str, float]:
    """One network's numbers from its window counts (``{kind: counts}``): the mean count on
    the data and off it, and ln(on / off) per off-data kind."""
    mean = {k: sum(v) / len(v) for k, v in counts.items()}
    out = {"on": mean["data"]} | {k: mean[k] for k in OFF_KINDS}
    out |= {f"log_ratio_{k}": math.log(mean["data"] / mean[k]) for k in OFF_KINDS}
    return out


def paired_interval(a: Sequence[float | None], b: Sequence[float | None]) -> dict[str, Any]:
    """The mean of the paired differences a_s - b_s (pairs with a missing value left out),
    its standard error, 95 % t interval and smallest detectable difference (80 % power);
    with fewer than 2 pairs, no interval (None)."""
    d = [x - y for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n = len(d)
    if n < 2:
        return {"n": n, "mean": d[0] if d else None, "se": None, "lo": None, "hi": None,
                "detectable": None}
    mean = sum(d) / n
    se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n)
    t = _t(_T975, n - 1, 1.960)
    return {"n": n, "mean": mean, "se": se, "lo": mean - t * se, "hi": mean + t * se,
            "detectable": (t + _t(_T80, n - 1, 0.842)) * se}


def verdict(intervals: Sequence[dict[str, Any]], effect: float) -> str:
    """The rule's last three branches on the deciding intervals (module docstring)."""
    if any(i["lo"] is None for i in intervals):
        return "inconclusive"
    if all(i["lo"] > 0 for i in intervals):
        return "reproduced"
    if any(i["hi"] < effect for i in intervals):
        return "not reproduced"
    return "inconclusive"


def _comparisons(per_network: dict[str, Any]) -> dict[str, Any]:
    """BN against every other arm, per stage, mode and off-data kind."""
    out: dict[str, Any] = {}
    for stage, modes in per_network.items():
        for mode, arms in modes.items():
            for arm in arms:
                if arm == "bn":
                    continue
                for k in OFF_KINDS:
                    key = f"log_ratio_{k}"
                    out.setdefault(stage, {}).setdefault(mode, {}).setdefault(arm, {})[k] = \
                        paired_interval(arms["bn"][key], arms[arm][key])
    return out


def slice_concentration_ours(run: dict) -> dict[str, Any]:
    """From ``bnviz slice --concentration``'s JSON: what the run was, the deciding intervals
    first, every network's numbers (``per_network[stage][mode][arm][field]``: a list in
    ``seeds``' order), every comparison's interval and the accuracies."""
    seeds = list(run["seeds"])
    per: dict[str, Any] = {}
    accuracy: dict[str, list[float | None]] = {arm: [None] * len(seeds) for arm in run["arms"]}
    for net in run["networks"]:
        s = seeds.index(net["seed"])
        if net["stage"] == "trained":
            accuracy[net["arm"]][s] = net["accuracy"]
        for mode, counts in net["counts"].items():
            fields = per.setdefault(net["stage"], {}).setdefault(mode, {}).setdefault(
                net["arm"], {})
            for name, value in network_values(counts).items():
                fields.setdefault(name, [None] * len(seeds))[s] = value
    comparisons = _comparisons(per)
    stage, mode = DECIDING
    deciding = {f"bn_minus_{c}_{k}": comparisons[stage][mode][c][k]
                for c in CONTROLS for k in OFF_KINDS}
    return {**deciding, "effect": EFFECT,
            "how": "a network's value: ln(mean exact region count of a window on the data / "
                   f"off it); judged: the {stage} networks, BN in {mode} mode, BN minus each "
                   "control paired by seed, 95 % t interval (bn_minus_<control>_<off kind>)",
            "seeds": seeds, "triples": run["triples"], "half_width": run["half_width"],
            "dataset": run["dataset"], "arch": run["arch"], "width": run["width"],
            "epochs": run["epochs"], "arms": list(run["arms"]),
            "accuracy": accuracy, "per_network": per, "comparisons": comparisons,
            "seconds": run["seconds"]}


def slice_concentration_status(ours: dict) -> str:
    """The rule, recomputed from ``ours["per_network"]`` (the stored intervals are not read):
    on the trained networks with BN in train mode, BN's value minus each control's, paired by
    seed, 95 % t interval, for random bias and scale-only on both off-data kinds (Gaussian,
    shuffled).  Fewer than 5 networks an arm or 10 triples: "inconclusive".  All four
    intervals above 0: "reproduced".  Any one below the paper's effect (``ours["effect"]``,
    ln 1.5: it excludes the paper's direction or its size): "not reproduced".  Otherwise
    "inconclusive" (the smallest detectable difference is stored beside each interval)."""
    if len(ours["seeds"]) < MIN_SEEDS or ours["triples"] < MIN_TRIPLES:
        return "inconclusive"
    stage, mode = DECIDING
    arms = ours["per_network"][stage][mode]
    intervals = [paired_interval(arms["bn"][f"log_ratio_{k}"], arms[c][f"log_ratio_{k}"])
                 for c in CONTROLS for k in OFF_KINDS]
    return verdict(intervals, ours.get("effect", EFFECT))
