"""The replication page (/papers/replication), the debate page's link to it and the jobs page's
smart-initialisation text: they say what the stored outcomes say, whichever way they fall
(a stored outcome changed here changes the pages), at 1280x720 without scrolling sideways."""

from __future__ import annotations

import copy
import json

import pytest
from dash.testing.wait import until
from explorer_helpers import find, walk

from bnviz.params.jobs import ARMS as JOB_ARMS
from bnviz.replication.entries import entry_ids
from bnviz.replication.report import smart_init_sentence
from bnviz.replication.store import SHIPPED, read_outcomes, write_outcomes
from bnviz.web.app import app
from bnviz.web.callbacks.jobs import ids as job_ids
from bnviz.web.callbacks.replication import ids
from bnviz.web.layouts import jobs as jobs_layout
from bnviz.web.layouts import papers as papers_layout
from bnviz.web.layouts import replication as replication_layout

TIMEOUT = 20
SMART = "bn-fig5-10-smart-init"


def _text(tree) -> str:
    """Every string in a component tree, in order."""
    return " ".join(str(c) for c in walk(tree) if isinstance(c, str | int | float))


def test_every_entry_has_a_row_with_its_status():
    tree = replication_layout.layout()
    outcomes = read_outcomes()
    for entry in entry_ids():
        row = _text(find(tree, ids.row(entry)))
        assert outcomes[entry]["status"] in row and entry in row


def _flipped(outcome: dict) -> dict:
    """The smart-initialisation outcome with its two arms' numbers swapped (and judged)."""
    from bnviz.replication.smart_init import smart_init_status

    o = copy.deepcopy(outcome)
    ours = o["ours"]
    for key in ("", "_std", "_lr", "_epoch1", "_epoch1_std", "_curve", "_curve_std", "_by_lr"):
        ours["bn_init" + key], ours["zero_bias" + key] = \
            ours["zero_bias" + key], ours["bn_init" + key]
    o["status"] = smart_init_status(ours)
    return o


def test_the_pages_follow_the_stored_smart_init_numbers(tmp_home):
    """Whatever is stored is what the replication page and the jobs page say: the shipped
    numbers first, then the arms swapped in this machine's store."""
    shipped = read_outcomes(SHIPPED)[SMART]
    for outcome in (shipped, _flipped(shipped)):
        write_outcomes([outcome])
        sentence = smart_init_sentence(outcome)
        bn = f"{100 * outcome['ours']['bn_init']:.1f}"
        assert bn in sentence and outcome["status"].split()[-1] in sentence
        page = _text(find(replication_layout.layout(), ids.SMART_INIT_TEXT))
        assert sentence in page and outcome["status"] in page
        jobs_text = _text(find(jobs_layout.layout(), job_ids.EXPLAIN))
        assert sentence in jobs_text


@pytest.mark.parametrize("where", ["replication", "slice"])
def test_every_network_of_the_slice_entry_is_a_dot(where):
    """The slice entry's status is a paired test across networks: the replication page and
    /slice show each network's stored value, not only a mean, at initialisation and trained,
    BN in train and eval mode (issue 44)."""
    from bnviz.web.callbacks.replication.figures import SLICE_PANELS
    from bnviz.web.callbacks.slice import ids as slice_ids
    from bnviz.web.layouts import slice as slice_layout

    outcome = read_outcomes(SHIPPED)["bn-slice-concentration"]
    ours = outcome["ours"]
    tree, graph_id, box_id = ((replication_layout.layout(), ids.SLICE_GRAPH, ids.SLICE)
                              if where == "replication" else
                              (slice_layout.layout(), slice_ids.EXPERIMENT_GRAPH,
                               slice_ids.EXPERIMENT))
    traces = find(tree, graph_id).figure["data"]
    assert len(traces) == 2 * len(SLICE_PANELS)
    for p, (when, mode) in enumerate(SLICE_PANELS):
        values = ours["per_network"][when][mode]
        for trace, kind in zip(traces[2 * p:2 * p + 2], ("gaussian", "shuffled"), strict=True):
            assert trace["name"] == f"against {kind} images" and trace["meta"] == [when, mode]
            stored = [v for arm in ours["arms"] for v in values[arm][f"log_ratio_{kind}"]]
            assert len(trace["y"]) == len(ours["arms"]) * len(ours["seeds"]) >= 20
            assert trace["y"] == stored
    text = _text(find(tree, box_id))
    assert outcome["status"] in text and f"{len(ours['seeds'])} networks an arm" in text


def test_the_debate_page_counts_what_reproduces():
    results = read_outcomes()
    link = _text(find(papers_layout.layout(), "papers-replication-link"))
    n = sum(o["status"] == "not reproduced" for o in results.values())
    assert f"{len(entry_ids())} results" in papers_layout.replication_link(results).children[1]
    assert "replication report" in link
    assert (f"{n} not reproduced" in papers_layout.replication_link(results).children[1]) == (n > 0)


def test_a_damaged_shipped_store_is_said_not_raised(tmp_path, monkeypatch):
    bad = tmp_path / "outcomes.json"
    bad.write_text("[1, 2")
    monkeypatch.setattr("bnviz.replication.store.SHIPPED", bad)
    text = json.dumps(replication_layout.layout().to_plotly_json(), default=str)
    assert "cannot read the stored outcomes" in text and "not run" in text


@pytest.mark.browser
@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_the_page_at_projector_sizes(dash_duo, size):
    dash_duo.driver.set_window_size(*size)
    dash_duo.start_server(app)
    dash_duo.wait_for_page(dash_duo.server_url + "/papers", timeout=TIMEOUT)
    dash_duo.find_element("#papers-replication-link").click()
    until(lambda: dash_duo.driver.execute_script("return location.pathname") ==
          "/papers/replication", TIMEOUT)
    dash_duo.wait_for_element(f"#{ids.SMART_INIT_GRAPH} .main-svg", timeout=TIMEOUT)
    dash_duo.wait_for_element(f"#{ids.SLICE_GRAPH} .main-svg", timeout=TIMEOUT)
    dots = dash_duo.driver.execute_script(
        f"return document.querySelectorAll('#{ids.SLICE_GRAPH} .scatterlayer .point').length")
    assert dots >= 160  # 4 arms x 5 networks x 2 kinds of off-data images x 4 panels
    rows = dash_duo.driver.execute_script(
        "return [...document.querySelectorAll('tr[id^=entry-]')].map(r => r.id)")
    assert rows == [ids.row(e) for e in entry_ids()]
    overflow, summary = dash_duo.driver.execute_script(
        "return [document.documentElement.scrollWidth - innerWidth, "
        f"document.getElementById('{ids.SUMMARY}').innerText]")
    assert overflow <= 0 and "reproduced" in summary
    legend = dash_duo.driver.execute_script(
        f"return [...document.querySelectorAll('#{ids.SMART_INIT_GRAPH} .legendtext')]"
        ".map(t => t.textContent)")
    assert sorted(t.split(" (")[0] for t in legend) == sorted(JOB_ARMS["smart-init"])
    # the navbar marks the debate page as the one this page belongs to
    active = dash_duo.driver.execute_script(
        "return document.querySelector('.navbar .nav-link.active').textContent")
    assert active.startswith("The debate")
    assert dash_duo.get_logs() == []


def test_each_disagreement_says_what_our_runs_found():
    outcomes = read_outcomes()
    assert {e for pair in papers_layout.DISAGREEMENT_ENTRIES for e in pair} <= set(entry_ids())
    section = papers_layout._disagreements_section(outcomes)
    items = [c for c in walk(section)
             if getattr(c, "href", "").startswith("/papers/replication#entry-")]
    assert len(items) == sum(map(len, papers_layout.DISAGREEMENT_ENTRIES))
    text = _text(papers_layout._disagreements_section(outcomes))
    assert f"bn-fig5-10-smart-init {outcomes['bn-fig5-10-smart-init']['status']}" in text \
        .replace("bn-fig5-10-smart-init  ", "bn-fig5-10-smart-init ")
