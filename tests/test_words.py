"""Words that say what was tested (issue 44, item 3).

The debate page, the lecture tour, the README and the hand-written guides say only what the
papers claim (as claims) and what our stored runs show (bnviz/replication/outcomes.json):

* that BN moves the partition onto the data is the BN paper's claim. Theorem 1 (mu is the
  total-least-squares fit of each layer's hyperplanes to the batch) is exact; whether a
  trained image network's partition concentrates on real images is what the entry
  ``bn-slice-concentration`` tests, and no text states it as settled unless that entry's
  stored status is "reproduced";
* Dannemann & Junike's three-point example refutes Santurkar et al.'s Lemma 4.5; no text
  turns it into "BN does not improve initialisation" (their paper's title, cited as a title,
  excepted);
* the smart-initialisation sentences say what the stored curves show, epoch by epoch, by the
  entry's own test (two standard errors of the difference).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from explorer_helpers import walk

REPO = Path(__file__).resolve().parents[1]
SLICE = "bn-slice-concentration"
SMART = "bn-fig5-10-smart-init"
#: Dannemann & Junike's title: a citation, not a finding of ours.
DJ_TITLE = "Batch normalization does not improve initialization"
#: The concentration claim, however it is worded.
CONCENTRATION = re.compile(r"(?:moves|puts|pulls|brings|draws) the partition onto the data"
                           r"|partition (?:ends up |is )?concentrated on "
                           r"(?:the|real) (?:data|images)", re.I)
#: Words that make a sentence report the claim instead of asserting it.
HEDGES = re.compile(r"\bclaims?\b|\bargues\b|\bwhether\b|\bdo(?:es)? not settle\b", re.I)
NO_BETTER_START = re.compile(r"(?:\bBN\b|batch normali[sz]ation) does not improve "
                             r"initiali[sz]ation|no better initiali[sz]ation", re.I)


@pytest.fixture
def outcomes(tmp_home):
    """The stored outcomes the page reads (the shipped ones: no reruns in a fresh home)."""
    from bnviz.replication.store import read_outcomes

    return read_outcomes()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;:!?])\s+", _flat(text)) if s]


def _page_texts() -> list[str]:
    """Every string of the debate page (its titles, the disagreements' Markdown)."""
    from bnviz.web.layouts.papers import layout

    out = []
    for c in walk(layout()):
        if isinstance(c, str):
            out.append(c)
    return out


def _tour_texts() -> list[str]:
    from bnviz.lecture.tour import TOUR

    return [t for step in TOUR for t in (step.title, step.caption)]


def _documents() -> dict[str, str]:
    """README.md and the hand-written guides (docs/cli.md and docs/REPLICATION.md are
    generated: the parser's help and the stored outcomes)."""
    paths = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return {p.name: p.read_text() for p in paths if p.name not in {"cli.md", "REPLICATION.md"}}


def _settled(texts) -> list[str]:
    return [s for t in texts for s in _sentences(t)
            if CONCENTRATION.search(s) and not HEDGES.search(s)]


# ---- BN moves the partition onto the data: a claim, tested by the slice entry ------------

def test_the_concentration_claim_is_not_stated_as_settled(outcomes):
    if outcomes[SLICE]["status"] == "reproduced":
        pytest.skip("the slice entry reproduces the claim: the texts may state it")
    texts = [*_page_texts(), *_tour_texts(), *_documents().values()]
    assert _settled(texts) == []


def test_the_check_catches_a_settled_sentence():
    """The check above can fail: today's words before issue 44 are caught, reported ones
    are not."""
    assert _settled(["The BN paper shows that mu is the fit (Theorem 1), so BN moves the "
                     "partition onto the data."])
    assert _settled(["Figure 1: BN moves the partition onto the data"])
    assert not _settled(["The BN paper claims that BN moves the partition onto the data."])


def test_the_debate_page_says_the_slice_entry_tests_it(outcomes):
    """The disagreement about BN's mean names Theorem 1 (exact) and the slice entry, shows
    both stored statuses, and says what the slice entry's status says."""
    from bnviz.web.layouts import papers

    rows = [(text, entries) for (_, text, _, _), entries in
            zip(papers.DISAGREEMENTS, papers.DISAGREEMENT_ENTRIES, strict=True)
            if "Theorem 1" in text]
    assert len(rows) == 1
    text, entries = rows[0]
    assert {"bn-thm1-tls-minimiser", SLICE} <= set(entries)
    assert outcomes["bn-thm1-tls-minimiser"]["status"] == "reproduced"
    assert "exact" in text and "slice entry" in text
    assert _says_the_status(text, outcomes[SLICE]["status"]), (outcomes[SLICE]["status"], text)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _says_the_status(text: str, status: str) -> bool:
    """A sentence on the slice entry says what its status says: found (reproduced), not
    found (not reproduced), or not settled (partly, inconclusive)."""
    not_found, open_ = "did not find" in text, "do not settle" in text
    if status == "reproduced":
        return not not_found and not open_
    if status == "not reproduced":
        return not_found and not open_
    return open_ and not not_found


def _interval(c: dict) -> str:
    return f"{c['mean']:+.2f} (95 % interval {c['lo']:.2f} to {c['hi']:.2f})"


def test_the_guide_quotes_the_slice_entry(outcomes):
    """docs/papers.md's sentence on the slices: the stored status, its paired differences
    and intervals, and what that status says."""
    o = outcomes[SLICE]
    ours = o["ours"]
    text = _flat((REPO / "docs/papers.md").read_text()).replace("−", "-")
    head = f"**Slices of a trained digits network (`{SLICE}`): {o['status']}.**"
    assert head in text
    sentence = text.split(head)[1].split("\n- ")[0]
    first = ours["bn_minus_random_bias_gaussian"]
    for phrase in (f"{first['mean']:+.2f} (95 % interval {first['lo']:.2f} to "
                   f"{first['hi']:.2f})", f"{ours['triples']} planes",
                   f"{len(ours['seeds'])} ResNet9", f"{ours['epochs']} epochs"):
        assert phrase in sentence, phrase
    for key in ("bn_minus_random_bias_shuffled", "bn_minus_scale_only_gaussian",
                "bn_minus_scale_only_shuffled"):
        c = ours[key]
        assert f"{c['mean']:+.2f}" in sentence and f"{c['lo']:.2f} to {c['hi']:.2f}" in sentence
    assert _says_the_status(sentence, o["status"])


def test_the_readme_points_to_the_slice_entry_and_the_lemma():
    text = _flat((REPO / "README.md").read_text())
    assert SLICE in text and "Lemma 4.5" in text


# ---- Dannemann & Junike refute a lemma, not BN initialisation ----------------------------

def _says_no_better_start(text: str) -> bool:
    return bool(NO_BETTER_START.search(_flat(text).replace(DJ_TITLE, "")))


def test_no_text_says_bn_does_not_improve_initialisation():
    texts = {"the debate page": " ".join(_page_texts()), "the tour": " ".join(_tour_texts()),
             **_documents()}
    assert [name for name, text in texts.items() if _says_no_better_start(text)] == []


def test_the_initialisation_check_can_fail():
    assert _says_no_better_start("Dannemann & Junike: BN does not improve initialisation")
    assert _says_no_better_start("Dannemann & Junike: no better initialisation")
    assert not _says_no_better_start(f"| *{DJ_TITLE}* | Joris Dannemann, Gero Junike |")


def test_the_page_and_the_tour_say_what_the_example_refutes():
    """Where the page and the tour tell the example, they name Lemma 4.5 as what it
    refutes, and our smart-initialisation runs as what tests a better start."""
    from bnviz.lecture.tour import step_by_key
    from bnviz.web.layouts import papers

    step = step_by_key("dannemann")
    dj = next((text, entries) for (_, text, _, _), entries in
              zip(papers.DISAGREEMENTS, papers.DISAGREEMENT_ENTRIES, strict=True)
              if "Dannemann" in text)
    for text in (step.caption, dj[0]):
        assert "Lemma 4.5" in text and "refute" in text and "smart-initialisation" in text
    assert SMART in dj[1]


# ---- smart initialisation: what the stored curves show ----------------------------------

def _epochs(numbers: list[int]) -> str:
    """[3, 4, 5, 9] -> "3 to 5 and 9"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    parts = [f"{r[0]} to {r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def test_epochs_are_written_as_ranges():
    assert _epochs([3, 4, 5, 9]) == "3 to 5 and 9"
    assert _epochs([1, 2, 3, 4, 5, 6, 7, 8, 9, 11]) == "1 to 9 and 11"
    assert _epochs([2, 5, 7, 8]) == "2, 5 and 7 to 8"


def _below(ours: dict, arm: str) -> list[int]:
    """The epochs (1-based) at which the arm's mean test accuracy is below zero bias's by
    more than two standard errors (the entry's own test)."""
    from bnviz.replication.judges import significant_difference

    n = int(ours["runs"])
    return [e + 1 for e in range(len(ours[f"{arm}_curve"]))
            if significant_difference(ours[f"{arm}_curve"][e], ours[f"{arm}_curve_std"][e], n,
                                      ours["zero_bias_curve"][e],
                                      ours["zero_bias_curve_std"][e], n) < 0]


def test_the_smart_init_sentence_says_what_the_curves_show(outcomes):
    ours = outcomes[SMART]["ours"]
    text = _flat((REPO / "docs/papers.md").read_text())
    folded, frozen = _below(ours, "folded"), _below(ours, "bn_init")
    if folded:  # slower, then: "does not learn faster" understates it
        assert "not learn faster" not in text
        gap = min(folded, key=lambda e: ours["folded_curve"][e - 1]
                  - ours["zero_bias_curve"][e - 1])
        i = gap - 1
        for phrase in (f"at epochs {_epochs(folded)} its mean test accuracy is below zero "
                       "bias's by more than two standard errors",
                       f"(the largest gap at epoch {gap}: {_pct(ours['folded_curve'][i])} ± "
                       f"{_pct(ours['folded_curve_std'][i])} % against "
                       f"{_pct(ours['zero_bias_curve'][i])} ± "
                       f"{_pct(ours['zero_bias_curve_std'][i])} %)"):
            assert phrase in text, phrase
        later = range(folded[-1] + 1, int(ours["epochs"]) + 1)
        if later and not set(later) & set(folded):
            assert f"from epoch {later[0]} on the two cannot be told apart" in text
    if frozen:
        when = f"epoch{'s' if len(frozen) > 1 else ''} {_epochs(frozen)}"
        assert (f"frozen statistics, is below zero bias by more than two standard errors"
                f"{' too,' if folded else ''} at {when}") in text
