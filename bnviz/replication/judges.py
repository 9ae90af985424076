"""How each figure entry of the replication report reads its commands' output (``ours``) and
judges it (``status``).  Every function takes the parsed JSON of the entry's commands, in
order, and returns plain numbers; every judge states its rule in its docstring, and the rule
is applied to the numbers it returns, so a stored outcome can be re-judged from ``ours``
alone (tests/replication/test_statuses.py does, for every entry).  Figure 1's entry is
:mod:`bnviz.replication.fig1`, the smart initialisation's :mod:`bnviz.replication.smart_init`.

Significance where runs are repeated: two means differ when they are more than twice the
standard error of their difference apart (sample standard deviations over the runs).  Where
the paper states an effect size, the interval of the difference (two standard errors each
side) decides (:func:`decided`): above 0, reproduced; below the paper's effect, not
reproduced (the test rules that effect out); holding both 0 and the effect, ``inconclusive``:
the runs cannot tell.  :func:`detectable` is the test's power: the smallest true difference
it finds 4 times in 5, ``POWER_Z`` = 2.84 standard errors of the difference (2 for the
two-sided test at about 5 %, plus 0.84 for 80 % power).  The entries judged from trained
image networks against a gap the paper prints (Table 1, section 5's noise) are
``inconclusive`` whenever that smallest detectable difference exceeds the paper's gap
(:func:`underpowered`), unless the runs find a difference that decides anyway (each judge
says which)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["decided", "detectable", "difference", "significant_difference",
           "underpowered"]

#: Standard errors each side of an interval (about 95 %), and that plus 0.84: a true
#: difference of POWER_Z standard errors is found 4 times in 5 (80 % power).
CI_Z = 2.0
POWER_Z = CI_Z + 0.84


def significant_difference(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float,
                           n_b: int) -> int:
    """+1 when mean_a is above mean_b by more than two standard errors of the difference,
    -1 when below by as much, 0 otherwise (``std``: the population std over the runs, as the
    jobs store it; corrected to the sample std here)."""
    diff, se = difference(mean_a, std_a, n_a, mean_b, std_b, n_b)
    bound = CI_Z * se
    return 1 if diff > bound else (-1 if diff < -bound else 0)


def difference(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float,
               n_b: int) -> tuple[float, float]:
    """(mean_a - mean_b, its standard error) from the runs' population stds (as the jobs
    store them), corrected to sample stds."""
    def se2(std: float, n: int) -> float:
        return (std ** 2) * n / max(n - 1, 1) / max(n, 1)

    return mean_a - mean_b, math.sqrt(se2(std_a, n_a) + se2(std_b, n_b))


def decided(diff: float, se: float, effect: float) -> str:
    """The verdict on a difference whose paper effect is ``effect`` (> 0): "reproduced" when
    its interval lies above 0, "not reproduced" when below the effect, else "inconclusive"."""
    if diff - CI_Z * se > 0:
        return "reproduced"
    if diff + CI_Z * se < effect:
        return "not reproduced"
    return "inconclusive"


def detectable(se: float) -> float:
    """The smallest true difference the test detects with 80 % power (two-sided, 95 %)."""
    return POWER_Z * se


def underpowered(se: float, gap: float) -> bool:
    """True when the runs cannot detect the paper's gap: :func:`detectable` exceeds it."""
    return detectable(se) > gap


# ------------------------------------------------------------------ Figure 3: concentration
def fig3_ours(bn: dict, zero: dict, rand: dict) -> dict[str, Any]:
    def ratios(run: dict) -> list[float]:
        return [float(layer["near_data_ratio"]) for layer in run["layers"]]

    return {"layers": [layer["layer"] for layer in bn["layers"]],
            "near_data_ratio_bn": ratios(bn), "near_data_ratio_zero_bias": ratios(zero),
            "near_data_ratio_random_bias": ratios(rand)}


def fig3_status(ours: dict) -> str:
    """Reproduced: beyond layer 1, BN's facets are denser near the data (near-data ratio)
    than zero bias's and random bias's at every layer shown; partly: at some."""
    deeper = range(1, len(ours["layers"]))
    wins = [ours["near_data_ratio_bn"][i] > max(ours["near_data_ratio_zero_bias"][i],
                                                 ours["near_data_ratio_random_bias"][i])
            for i in deeper]
    return "reproduced" if wins and all(wins) else ("partly" if any(wins) else "not reproduced")


# ------------------------------------------------------------------ Figure 4: images
def fig4_ours(run: dict) -> dict[str, Any]:
    out: dict[str, Any] = {"eps": run["arms"]["bn"]["data"]["eps"]}
    for arm, per in run["arms"].items():
        out[f"data_over_gaussian_{arm}"] = [d / g if g else None for d, g in
                                            zip(per["data"]["mean"], per["gaussian"]["mean"],
                                                strict=True)]
    out["dataset"] = run["params"]["dataset"]
    out["runs"] = run["params"]["runs"]
    return out


def fig4_status(ours: dict) -> str:
    """Reproduced: at every radius more units cut the balls around data images than around
    Gaussian images with BN (ratio > 1), and BN's ratio is the largest of the three arms;
    partly: at some radii."""
    bn = ours["data_over_gaussian_bn"]
    others = [ours[k] for k in ours if k.startswith("data_over_gaussian_") and
              not k.endswith("_bn")]
    wins = [b is not None and b > 1 and all(o[i] is None or b > o[i] for o in others)
            for i, b in enumerate(bn)]
    return "reproduced" if all(wins) else ("partly" if any(wins) else "not reproduced")


# ------------------------------------------------------------------ Figures 5, 10: smart init
# ------------------------------------------------------------------ Figure 6: jitter
def fig6_ours(init16: dict, init256: dict, trained16: dict, trained256: dict) -> dict[str, Any]:
    return {"disagreement_init_16": init16["disagreement_area"],
            "disagreement_init_256": init256["disagreement_area"],
            "disagreement_trained_16": trained16["disagreement_area"],
            "disagreement_trained_256": trained256["disagreement_area"],
            "realizations": init16["realizations"]}


def fig6_status(ours: dict) -> str:
    """Reproduced: the boundary disagreement across mini-batches is larger at |B| = 16 than
    at 256, at initialisation and after training; partly: in one of the two."""
    wins = [ours[f"disagreement_{k}_16"] > ours[f"disagreement_{k}_256"]
            for k in ("init", "trained")]
    return "reproduced" if all(wins) else ("partly" if any(wins) else "not reproduced")


# ------------------------------------------------------------------ Figure 7: noise control
def fig7_ours(run: dict) -> dict[str, Any]:
    b, vb = run["batch_size"], run["virtual_batch_size"]
    units = run["units"]
    return {"batch_size": b, "virtual_batch_size": vb,
            "mu_var_noise_controlled": [u["mu"]["noise_controlled_var"] for u in units],
            "mu_var_virtual_target": [u["var"] / vb for u in units],
            "sigma2_var_noise_controlled": [u["sigma2"]["noise_controlled_var"] for u in units],
            "sigma2_var_empirical": [u["sigma2"]["empirical_var"] for u in units]}


def fig7_status(ours: dict) -> str:
    """Reproduced: noise-controlled BN's var(mu) is within 10 % of a virtual batch's
    var / B' for every unit, and its var(sigma^2) is above the real batch's."""
    mu_ok = all(abs(v / t - 1) <= 0.10 for v, t in zip(ours["mu_var_noise_controlled"],
                                                     ours["mu_var_virtual_target"], strict=True))
    s_ok = all(v > e for v, e in zip(ours["sigma2_var_noise_controlled"],
                                     ours["sigma2_var_empirical"], strict=True))
    return "reproduced" if mu_ok and s_ok else ("partly" if mu_ok or s_ok else "not reproduced")


# ------------------------------------------------------------------ two-arm training jobs
def two_arms_ours(run: dict, first: str, second: str, gap: float) -> dict[str, Any]:
    """Both arms' final mean test accuracy and std over the runs, the difference (second -
    first) with its standard error, the smallest difference the runs detect (power:
    :func:`detectable`) and the paper's gap it is set against."""
    arms = run["arms"]
    n = run["params"]["runs"]
    diff, se = difference(arms[second]["final"], arms[second]["std"][-1], n,
                          arms[first]["final"], arms[first]["std"][-1], n)
    return {"dataset": run["params"]["dataset"], "runs": n, "epochs": run["params"]["epochs"],
            "lr": run["params"]["lr"], first: arms[first]["final"],
            f"{first}_std": arms[first]["std"][-1], second: arms[second]["final"],
            f"{second}_std": arms[second]["std"][-1], "difference": diff,
            "difference_se": se, "detectable": detectable(se), "paper_gap": gap}


#: The paper's Table 1, test accuracy without and with BN's learnable gamma, beta (%).
TABLE1 = {"ResNet": {"imagenette": [79.2, 78.8], "cifar10": [83.0, 86.2],
                     "cifar100": [50.0, 54.8], "svhn": [94.2, 95.3]},
          "CNN": {"imagenette": [77.7, 77.6], "cifar10": [87.5, 87.6], "cifar100": [54.0, 55.2],
                  "svhn": [96.0, 95.9]}}
#: The largest difference the paper's own table shows (CIFAR-100, ResNet), as a fraction.
TABLE1_LARGEST = max(abs(b - a) for arch in TABLE1.values() for a, b in arch.values()) / 100


#: The paper's typical gap: the median of its eight |with - without| differences (0.75
#: points), as a fraction; what "little impact" means in its own table.
TABLE1_GAP = float(np.median([abs(b - a) for arch in TABLE1.values()
                              for a, b in arch.values()])) / 100


def table1_status(ours: dict) -> str:
    """Not reproduced when learnable gamma, beta change our mean test accuracy significantly
    by more than the paper's largest difference (4.8 points: the interval of the difference,
    two standard errors each side, lies beyond it), whatever the runs' power.  Otherwise
    inconclusive when the smallest difference the runs detect (:func:`detectable`, 2.84
    standard errors) exceeds the paper's typical gap (``TABLE1_GAP``, 0.75 points): they could
    not see a difference of the size the paper reports.  Otherwise partly, at best: five
    epochs on the 8x8 digits cannot stand in for the paper's CIFAR, SVHN and imagenette."""
    n = ours["runs"]
    diff, se = difference(ours["affine"], ours["affine_std"], n, ours["no_affine"],
                          ours["no_affine_std"], n)
    if abs(diff) - CI_Z * se > TABLE1_LARGEST:
        return "not reproduced"
    return "inconclusive" if underpowered(se, TABLE1_GAP) else "partly"


#: Section 5's smallest gain from the extra noise (SVHN, 96.16 -> 96.41 %), as a fraction.
NOISE_EFFECT = 0.0025


def noise_status(ours: dict) -> str:
    """The noise's gain in mean test accuracy, against the paper's smallest gain (+0.25
    points).  A difference the runs find (its interval, two standard errors each side,
    excludes 0) decides whatever their power: above 0, reproduced; below, not reproduced.
    Otherwise inconclusive when the smallest difference the runs detect (:func:`detectable`,
    2.84 standard errors) exceeds the paper's gain; when it does not, :func:`decided`: not
    reproduced if the interval lies below the paper's gain (the gain is ruled out), else
    inconclusive."""
    n = ours["runs"]
    diff, se = difference(ours["bn_noise"], ours["bn_noise_std"], n, ours["bn"],
                          ours["bn_std"], n)
    if abs(diff) > CI_Z * se:
        return "reproduced" if diff > 0 else "not reproduced"
    return "inconclusive" if underpowered(se, NOISE_EFFECT) else decided(diff, se, NOISE_EFFECT)


# ------------------------------------------------------------------ Santurkar et al.
def landscape_ours(run: dict) -> dict[str, Any]:
    out: dict[str, Any] = {"dataset": run["params"]["dataset"], "runs": run["params"]["runs"]}
    for arm in ("no_bn", "bn"):
        land = run["arms"][arm]["landscape"]
        out[f"beta_eff_{arm}"] = float(np.mean(land["beta_eff"]))
        out[f"loss_range_{arm}"] = float(np.mean(land["loss_range"]))
        out[f"ics_l2_{arm}"] = float(np.mean(land["ics_l2"]))
        out[f"ics_cos_{arm}"] = float(np.mean(land["ics_cos"]))
    return out


def smoothness_ours(run: dict) -> dict[str, Any]:
    ours = landscape_ours(run)
    return {k: v for k, v in ours.items() if not k.startswith("ics_")}


def ics_ours(run: dict) -> dict[str, Any]:
    ours = landscape_ours(run)
    return {k: v for k, v in ours.items() if not k.startswith(("beta_eff_", "loss_range_"))}


def smoothness_status(ours: dict) -> str:
    """Reproduced: with BN both the effective beta-smoothness and the loss range along the
    gradient are smaller (means over the measured steps); partly: one of them."""
    wins = [ours["beta_eff_bn"] < ours["beta_eff_no_bn"],
            ours["loss_range_bn"] < ours["loss_range_no_bn"]]
    return "reproduced" if all(wins) else ("partly" if any(wins) else "not reproduced")


def ics_status(ours: dict) -> str:
    """Reproduced (their claim: BN does not reduce internal covariate shift): with BN the
    ICS (l2 difference of a layer's gradient) is not smaller than without, or the gradients'
    cosine is not higher; not reproduced when BN reduces both."""
    reduced = ours["ics_l2_bn"] < ours["ics_l2_no_bn"] and \
        ours["ics_cos_bn"] > ours["ics_cos_no_bn"]
    return "not reproduced" if reduced else "reproduced"


# ------------------------------------------------------------------ Figure 9: TLS colours
def fig9_ours(*runs: dict) -> dict[str, Any]:
    """Per seed: whether layer 1's colour is exactly sigma^2/||w||^2 and each layer's rank
    correlation of the colour with the mean input-space distance of the data to the unit's
    (folded) hyperplane; their medians over the seeds."""
    layers = [layer["layer"] for layer in runs[0]["layers"]]
    rho = {layer: [r["layers"][i]["spearman"] for r in runs] for i, layer in enumerate(layers)}
    return {"seeds": [r["settings"]["weight_seed"] for r in runs], "layers": layers,
            "exact": all(layer["exact"] for r in runs for layer in r["layers"]),
            "train_accuracy": [r["train_accuracy"] for r in runs],
            **{f"spearman_layer{k}": v for k, v in rho.items()},
            **{f"median_spearman_layer{k}": float(np.nanmedian(np.asarray(v, dtype=float)))
               for k, v in rho.items()}}


def fig9_status(ours: dict) -> str:
    """Reproduced: the colour is exactly sigma^2/||w||^2 (BN's statistics) and, in every
    layer shown, its median rank correlation with the input-space distance of the data is at
    least 0.7 (the colour reads as closeness); partly: positive medians, some below 0.7 (a
    rough reading); not reproduced: otherwise."""
    medians = [ours[f"median_spearman_layer{k}"] for k in ours["layers"]]
    if not ours["exact"] or any(not m > 0 for m in medians):
        return "not reproduced"
    return "reproduced" if all(m >= 0.7 for m in medians) else "partly"


# ------------------------------------------------------------------ section 5: virtual batches
def virtual_batch_ours(*runs: dict) -> dict[str, Any]:
    """Per (|B|, B') case, from ``bnviz jitter --virtual-batch-size``'s calibration: the
    boundary disagreement of real batches of B' (the target, with its standard error), of
    noise-controlled BN whose statistics have exactly B''s variances (the paper's model,
    strength 1), and the strength the calibration needed."""
    cal = [r["virtual_calibration"] for r in runs]
    return {"cases": [[r["batch_size"], r["virtual_batch_size"]] for r in runs],
            "real_b_prime": [c["target"] for c in cal],
            "real_b_prime_stderr": [c["target_stderr"] for c in cal],
            "statistics_matched": [c["statistics_matched"] for c in cal],
            "calibrated": [c["matched"] for c in cal],
            "strength": [c["strength"] for c in cal],
            "reachable": [c["reachable"] for c in cal]}


def virtual_batch_status(ours: dict) -> str:
    """Reproduced: noise that gives the statistics a batch of B''s variances (the paper's
    noise-controlled BN) makes the decision boundary disagree as much as real batches of B'
    (within three standard errors) in every case; partly: it does not, but a calibrated noise
    strength does; not reproduced: no strength does."""
    if not all(ours["reachable"]):
        return "not reproduced"
    close = [abs(m - t) <= 3 * e for m, t, e in zip(ours["statistics_matched"],
                                                    ours["real_b_prime"],
                                                    ours["real_b_prime_stderr"], strict=True)]
    return "reproduced" if all(close) else "partly"
