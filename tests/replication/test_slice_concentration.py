"""The slice concentration entry's judge (:mod:`bnviz.replication.slice_concentration`): the
status is recomputed from the stored per-network values, each branch of the rule on
synthetic values, and the intervals against scipy's."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bnviz.replication.slice_concentration import (
    _T80,
    _T975,
    CONTROLS,
    DECIDING,
    EFFECT,
    MIN_SEEDS,
    MIN_TRIPLES,
    OFF_KINDS,
    network_values,
    paired_interval,
    slice_concentration_ours,
    slice_concentration_status,
)
from bnviz.replication.store import SHIPPED, read_outcomes

ARMS = ("bn", "zero_bias", "random_bias", "scale_only")


def test_the_t_quantiles_are_students():
    for df in range(1, len(_T975) + 1):
        assert _T975[df - 1] == pytest.approx(stats.t.ppf(0.975, df), abs=6e-4)
        assert _T80[df - 1] == pytest.approx(stats.t.ppf(0.80, df), abs=6e-4)


def test_the_paired_interval_is_the_t_interval():
    a, b = [1.2, 0.9, 1.4, 1.1, 1.3], [0.2, 0.3, 0.1, 0.4, 0.2]
    i = paired_interval(a, b)
    d = np.subtract(a, b)
    lo, hi = stats.t.interval(0.95, len(d) - 1, d.mean(), stats.sem(d))
    assert i["n"] == 5 and i["mean"] == pytest.approx(d.mean())
    assert (i["lo"], i["hi"]) == (pytest.approx(lo, rel=1e-3), pytest.approx(hi, rel=1e-3))
    assert i["detectable"] == pytest.approx((2.776 + 0.941) * stats.sem(d), rel=1e-3)
    # a missing value drops its pair; one pair gives no interval
    assert paired_interval([1.0, None, 2.0], [0.0, 1.0, 0.5])["n"] == 2
    assert paired_interval([1.0, None], [0.0, 1.0])["lo"] is None


def test_a_networks_value_is_the_log_of_the_mean_counts():
    v = network_values({"data": [4, 8], "gaussian": [2, 4], "shuffled": [6, 6]})
    assert v["on"] == 6 and v["gaussian"] == 3 and v["shuffled"] == 6
    assert v["log_ratio_gaussian"] == pytest.approx(math.log(2))
    assert v["log_ratio_shuffled"] == pytest.approx(0.0)


def _ours(bn: list[float | None], controls: dict[str, list[float]] | None = None, triples: int = 10,
          kinds: dict[str, float] | None = None) -> dict:
    """Synthetic ours: BN's log ratios ``bn`` per seed (the same for both off-data kinds,
    shifted by ``kinds[k]``), each control's ``controls[arm]`` (default 0)."""
    seeds = list(range(len(bn)))
    controls = controls or {}
    kinds = kinds or {}
    arms = {}
    for arm in ARMS:
        values = bn if arm == "bn" else controls.get(arm, [0.0] * len(bn))
        shift = {k: kinds.get(k, 0.0) if arm == "bn" else 0.0 for k in OFF_KINDS}
        arms[arm] = {f"log_ratio_{k}": [None if v is None else v + shift[k] for v in values]
                     for k in OFF_KINDS}
    stage, mode = DECIDING
    return {"seeds": seeds, "triples": triples, "effect": EFFECT,
            "per_network": {stage: {mode: arms}}}


def test_reproduced_when_bn_beats_both_controls_on_both_kinds():
    assert slice_concentration_status(_ours([0.50, 0.60, 0.55, 0.45, 0.52])) == "reproduced"
    # above 0, below the paper's size, still the paper's direction beyond doubt: reproduced
    assert slice_concentration_status(_ours([0.10, 0.12, 0.11, 0.09, 0.10])) == "reproduced"


def test_not_reproduced_when_the_interval_excludes_the_direction_or_the_size():
    below = _ours([-0.30, -0.25, -0.35, -0.28, -0.31])
    assert slice_concentration_status(below) == "not reproduced"
    # BN beats random bias, but scale-only is as concentrated (|d| < the paper's size)
    scale = _ours([0.5, 0.6, 0.55, 0.45, 0.52],
                  {"scale_only": [0.45, 0.62, 0.50, 0.47, 0.50]})
    assert slice_concentration_status(scale) == "not reproduced"
    # one off-data kind alone failing is enough
    kind = _ours([0.5, 0.6, 0.55, 0.45, 0.52], kinds={"shuffled": -0.6})
    assert slice_concentration_status(kind) == "not reproduced"


def test_inconclusive_when_the_interval_holds_0_and_the_size():
    wide = _ours([1.2, -0.6, 0.9, -0.4, 0.8])
    assert slice_concentration_status(wide) == "inconclusive"


def test_inconclusive_when_the_run_is_too_small_whatever_its_numbers():
    strong = [0.50, 0.60, 0.55, 0.45, 0.52, 0.51]
    assert slice_concentration_status(_ours(strong[:MIN_SEEDS - 1])) == "inconclusive"
    assert slice_concentration_status(_ours(strong, triples=MIN_TRIPLES - 1)) == \
        "inconclusive"
    assert slice_concentration_status(_ours([0.5, None, None, None, None])) == "inconclusive"


def _run(values: dict[str, dict[int, float]], seeds=(0, 1, 2, 3, 4)) -> dict:
    """A synthetic command output: every network's counts (10 windows) with the on/off
    ratio exp(values[arm][seed]) for both kinds, at both stages and modes."""
    nets = []
    for arm in ARMS:
        for s in seeds:
            r = math.exp(values[arm][s])
            counts = {"data": [round(100 * r)] * 10, "gaussian": [100] * 10,
                      "shuffled": [100] * 10}
            for stage in ("init", "trained"):
                nets.append({"arm": arm, "seed": s, "stage": stage, "bn": arm == "bn",
                             "accuracy": 0.9 if stage == "trained" else None,
                             "counts": {"eval": counts, "train": counts}})
    return {"seeds": list(seeds), "arms": list(ARMS), "networks": nets[::-1], "triples": 10,
            "half_width": 0.03, "dataset": "digits", "arch": "resnet9", "width": 8,
            "epochs": 3, "seconds": {"total": 1.0}}


def test_ours_keeps_every_network_by_seed_and_judges_from_them():
    values = {arm: {s: 0.1 * s for s in range(5)} for arm in ARMS}
    values["bn"] = {s: 0.6 + 0.01 * s for s in range(5)}
    ours = slice_concentration_ours(_run(values))
    per = ours["per_network"]
    assert set(per) == {"init", "trained"} and set(per["trained"]) == {"eval", "train"}
    got = per["trained"]["train"]["random_bias"]["log_ratio_gaussian"]
    assert got == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4], abs=0.01)  # seeds' order
    assert ours["accuracy"]["bn"] == [0.9] * 5
    d = ours["bn_minus_scale_only_shuffled"]
    assert d == ours["comparisons"]["trained"]["train"]["scale_only"]["shuffled"]
    assert set(ours["comparisons"]["init"]["eval"]) == set(ARMS) - {"bn"}
    assert slice_concentration_status(ours) == "reproduced"


def test_the_shipped_status_is_recomputed_from_the_stored_values():
    o = read_outcomes(SHIPPED).get("bn-slice-concentration")
    if o is None or "per_network" not in (o.get("ours") or {}):
        pytest.skip("the shipped outcome predates the per-network measure (issue 44)")
    check_recomputed(o)


def check_recomputed(o: dict) -> None:
    """A stored outcome, read back: its status from its per-network values (the judge's
    rule, and scipy's t interval independently), its deciding intervals from the same."""
    ours = o["ours"]
    assert slice_concentration_status(ours) == o["status"]
    stage, mode = DECIDING
    arms = ours["per_network"][stage][mode]
    assert len(ours["seeds"]) >= MIN_SEEDS and ours["triples"] >= MIN_TRIPLES
    branches = []
    for c in CONTROLS:
        for k in OFF_KINDS:
            d = np.subtract(arms["bn"][f"log_ratio_{k}"], arms[c][f"log_ratio_{k}"])
            lo, hi = stats.t.interval(0.95, len(d) - 1, d.mean(), stats.sem(d))
            stored = ours[f"bn_minus_{c}_{k}"]
            assert (stored["lo"], stored["hi"]) == (pytest.approx(lo, abs=1e-3),
                                                    pytest.approx(hi, abs=1e-3))
            branches.append((lo, hi))
    if o["status"] == "reproduced":
        assert all(lo > 0 for lo, _ in branches)
    elif o["status"] == "not reproduced":
        assert any(hi < ours["effect"] for _, hi in branches)
    else:
        assert not all(lo > 0 for lo, _ in branches)
        assert all(hi >= ours["effect"] for _, hi in branches)
