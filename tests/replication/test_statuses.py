"""Every stored status is its entry's stated rule applied to the stored values (issue 44,
item 3): each entry's judge (whose docstring states the rule) is run on the ``ours`` stored in
bnviz/replication/outcomes.json, and any status that differs fails here, all of them named at
once.  A status edited by hand, or a rule changed without a rerun (or a re-judgement), fails.

An entry whose stored values cannot give its status goes in :data:`KNOWN_EXCEPTIONS` with the
reason; the list must stay short and true: an exception whose status can in fact be
recomputed fails too.  The closed-form claims are recomputed from their stored ``holds``, the
check's own verdict (the check itself is rerun by test_report.py's fast entries)."""

from __future__ import annotations

import copy
import inspect
import math

import pytest

from bnviz.replication import judges
from bnviz.replication.entries import ENTRIES, entry_ids
from bnviz.replication.fig1 import fig1_comparisons
from bnviz.replication.store import SHIPPED, STATUSES, read_outcomes

#: entry id -> why its stored values cannot give its status (none at present).
KNOWN_EXCEPTIONS: dict[str, str] = {}


@pytest.fixture(scope="module")
def stored() -> dict[str, dict]:
    return read_outcomes(SHIPPED)


def _recomputed(entry, outcome: dict) -> str:
    """The entry's rule on a copy of the stored values (a judge cannot change the store), or
    why it could not be applied."""
    try:
        return entry.judge(copy.deepcopy(outcome["ours"]))
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
        return f"cannot be recomputed from the stored values ({type(exc).__name__}: {exc})"


def test_every_stored_status_is_its_rule_on_the_stored_values(stored):
    assert set(stored) == set(entry_ids())
    differ = {}
    for entry in ENTRIES:
        if entry.id in KNOWN_EXCEPTIONS:
            continue
        status = stored[entry.id]["status"]
        got = _recomputed(entry, stored[entry.id])
        if got != status:
            differ[entry.id] = f"stored {status!r}, its rule says {got!r}"
    assert not differ, differ


def test_the_known_exceptions_are_still_exceptions(stored):
    for entry_id, reason in KNOWN_EXCEPTIONS.items():
        assert reason and entry_id in stored, entry_id
        entry = next(e for e in ENTRIES if e.id == entry_id)
        assert _recomputed(entry, stored[entry_id]) != stored[entry_id]["status"], \
            f"{entry_id} can be recomputed: remove it from KNOWN_EXCEPTIONS"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_rule_is_stated_and_gives_a_status(entry, stored):
    doc = inspect.getdoc(entry.judge)
    assert doc and len(doc) > 40, f"{entry.id}: its judge states no rule"
    assert stored[entry.id]["status"] in STATUSES


def test_the_derived_numbers_stored_beside_the_values_agree_with_them(stored):
    """What the report shows beside the judge's inputs (Figure 1's concentrations and paired
    differences; the two-arm entries' difference, standard error and smallest detectable
    difference) is what the stored inputs give now."""
    fig1 = stored["bn-fig1-bn-vs-zero-bias"]["ours"]
    for key, value in fig1_comparisons(fig1).items():
        assert fig1[key] == pytest.approx(value, rel=1e-9), key
    for entry_id, (first, second, gap) in {
            "bn-table1-affine": ("no_affine", "affine", judges.TABLE1_GAP),
            "bn-sec5-noise": ("bn", "bn_noise", judges.NOISE_EFFECT)}.items():
        o = stored[entry_id]["ours"]
        diff, se = judges.difference(o[second], o[f"{second}_std"], o["runs"], o[first],
                                     o[f"{first}_std"], o["runs"])
        assert o["difference"] == pytest.approx(diff) and o["difference_se"] == pytest.approx(se)
        assert o["detectable"] == pytest.approx(2.84 * se)
        assert o["paper_gap"] == pytest.approx(gap) and math.isfinite(gap)
