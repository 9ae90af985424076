"""The README's replication numbers are the stored outcomes' (issue 29): each sentence of its
"at the shipped outcomes" list that quotes our runs is formatted here from
bnviz/replication/outcomes.json, and must stand in the README as written, with the entry's
stored status; a rerun that moves a number, or a status, fails this until the README says so.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _outcomes() -> dict[str, dict]:
    data = json.loads((REPO / "bnviz/replication/outcomes.json").read_text())
    return {r["id"]: r for r in data["results"]}


def _readme() -> str:
    """The sentences' page: docs/papers.md, which the README links (issue 43 moved them)."""
    return " ".join((REPO / "docs/papers.md").read_text().split())  # lines joined, as read


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _quotes() -> list[tuple[str, str, list[str]]]:
    """(entry id, the status word the README gives it, the phrases it must contain)."""
    o = _outcomes()
    smart, noise, table = (o[k]["ours"] for k in ("bn-fig5-10-smart-init", "bn-sec5-noise",
                                                  "bn-table1-affine"))
    fig1 = o["bn-fig1-bn-vs-zero-bias"]["ours"]
    ics, fig9, virtual = (o[k]["ours"] for k in ("santurkar-ics", "bn-fig9-tls-colour",
                                                 "bn-sec5-virtual-batch"))

    return [
        ("bn-fig1-bn-vs-zero-bias",
         "Figure 1 (BN puts every layer's hyperplanes on the data): {status}", [
             "judged by concentration relative to uniform", f"over {fig1['seeds']} seeds",
             f"{fig1['concentration_bn']:.2f} times smaller from the data",
             f"against {fig1['concentration_zero_bias']:.2f} with zero bias and "
             f"{fig1['concentration_random_bias']:.2f} with random bias",
             f"above zero bias's by {fig1['log_bn_over_zero_bias']:.2f} ± "
             f"{fig1['log_bn_over_zero_bias_se']:.2f}",
             f"random bias's by {fig1['log_bn_over_random_bias']:.2f} ± "
             f"{fig1['log_bn_over_random_bias_se']:.2f}"]),
        ("bn-fig5-10-smart-init", "Smart initialisation (Figures 5, 10): {status}.", [
            f"{smart['runs']} seeds, {smart['epochs']} epochs",
            "chosen from " + ", ".join(f"{lr:g}" for lr in smart["lrs"]),
            f"reaches {_pct(smart['folded'])} ± {_pct(smart['folded_std'])} % test accuracy",
            f"zero bias {_pct(smart['zero_bias'])} ± {_pct(smart['zero_bias_std'])} %",
            f"a difference of {100 * smart['folded_minus_zero_bias']:+.1f} ± "
            f"{_pct(smart['folded_minus_zero_bias_se'])} points",
            f"detect a difference of {_pct(smart['folded_detectable'])} points",
            f"random bias {_pct(smart['random_bias'])} ± {_pct(smart['random_bias_std'])} %",
            f"scale only {_pct(smart['scale_only'])} ± {_pct(smart['scale_only_std'])} %",
            f"frozen statistics {_pct(smart['bn_init'])} ± {_pct(smart['bn_init_std'])} %",
            f"after one epoch: {_pct(smart['folded_epoch1'])} % against "
            f"{_pct(smart['zero_bias_epoch1'])} %"]),
        ("bn-sec5-noise", "Section 5's extra BN noise: {status}", [
            f"{_pct(noise['bn_noise'])} ± {_pct(noise['bn_noise_std'])} % with noise against "
            f"{_pct(noise['bn'])} ± {_pct(noise['bn_std'])} % without",
            f"a difference of {_pct(noise['difference'])} ± {_pct(noise['difference_se'])} points",
            f"detect (80 % power) is {_pct(noise['detectable'])} points"]),
        ("bn-table1-affine", "Table 1 (learnable γ, β): {status}.", [
            f"{_pct(table['affine'])} ± {_pct(table['affine_std'])} % with against "
            f"{_pct(table['no_affine'])} ± {_pct(table['no_affine_std'])} % without",
            "83.0 / 86.2 % on CIFAR-10", "50.0 / 54.8 % on CIFAR-100",
            f"a difference of {100 * table['difference']:+.1f} ± {_pct(table['difference_se'])} "
            "points", f"detect (80 % power) is {_pct(table['detectable'])} points",
            f"the median of its eight, {100 * table['paper_gap']:.2f} points"]),
        ("santurkar-ics", "Santurkar et al.'s internal covariate shift: {status}", [
            f"ℓ2 {ics['ics_l2_bn']:.2f} against {ics['ics_l2_no_bn']:.2f}",
            f"cosine {ics['ics_cos_bn']:.2f} against {ics['ics_cos_no_bn']:.2f}"]),
        ("bn-fig9-tls-colour", "Figure 9: {status}.", [
            f"median Spearman {fig9['median_spearman_layer4']:.2f} over 10 trained seeds"]),
        ("bn-sec5-virtual-batch", "Virtual batches (section 5): {status}.", [
            f"({virtual['statistics_matched'][0]:.2f} against {virtual['real_b_prime'][0]:.2f} "
            "at B′ = 4 in |B| = 16",
            f"{virtual['statistics_matched'][2]:.2f} against {virtual['real_b_prime'][2]:.2f} at "
            "32 in 64)"]),
    ]


@pytest.mark.parametrize(("entry", "heading", "phrases"), _quotes(),
                         ids=[q[0] for q in _quotes()])
def test_the_readme_quotes_the_stored_outcome(entry, heading, phrases):
    text = _readme()
    status = _outcomes()[entry]["status"]
    assert heading.format(status=status) in text, (entry, status)
    for phrase in phrases:
        assert phrase in text, phrase


def test_no_misattribution_to_dannemann_and_junike():
    """Their paper refutes Santurkar et al.'s Lemma 4.5 for one linear neuron; it says
    nothing about training from frozen BN statistics (issue 29)."""
    files = [REPO / "README.md", *REPO.glob("docs/*.md"),
             *REPO.glob("bnviz/**/*.py"), *REPO.glob("callbacks/**/*.py")]
    for path in files:
        text = " ".join(path.read_text().split())
        assert not re.search(r"Dannemann & Junike(?:'s paper)? predicts? (?:exactly this|that "
                             r"BN does not improve initiali[sz]ation)", text), path
