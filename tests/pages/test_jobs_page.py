"""The jobs page: its callbacks called directly (bad input, actions, figures), and a browser
test that submits a digits job from the tab and watches its progress bar reach 100%."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dash import no_update
from dash.testing.wait import until
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bnviz import jobs
from bnviz.images.params import JOB_TYPES
from bnviz.params.jobs import ARMS, JOB_OPTIONS
from bnviz.records.store import open_store
from bnviz.web.callbacks.jobs import callbacks as cj
from bnviz.web.callbacks.jobs import ids
from bnviz.web.callbacks.jobs.ids import progress_id

NAMES = [spec.name for spec in JOB_OPTIONS]


def _values(**given) -> list:
    """The form's values in JOB_OPTIONS order (None: left empty)."""
    return [given.get(name) for name in NAMES]


@pytest.fixture
def home(jobs_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BNVIZ_LOCAL_WORKERS", "1")
    return jobs_home


def test_type_params_are_shown_for_their_type_only():
    for job_type in JOB_TYPES:
        styles, explanation = cj.show_type_params(job_type)
        shown = {name for name, style in zip(NAMES, styles, strict=True) if style is None}
        assert shown == {s.name for s in JOB_OPTIONS if job_type in s.types}
        # what the experiment is, then a link to its entry in the replication report
        assert explanation[-1].href.startswith("/papers/replication#entry-")
    assert "noise" in {n for n, s in zip(NAMES, cj.show_type_params("jitter-noise")[0],
                                         strict=True) if s is None}
    assert "noise" not in {n for n, s in zip(NAMES, cj.show_type_params("smart-init")[0],
                                             strict=True) if s is None}
    assert "validation" in {n for n, s in zip(NAMES, cj.show_type_params("smart-init")[0],
                                              strict=True) if s is None}


@pytest.mark.parametrize(("given", "words"), [
    ({"epochs": 0}, "epochs: "), ({"lr": "nan"}, "lr: "), ({"width": 4.5}, "whole"),
    ({"dataset": "../etc"}, "unknown dataset"), ({"dataset": "folder:../etc"}, "no paths"),
    ({"dataset": "cifar10"}, "not found"),
    ({"runs": 10**9}, "runs: "), ({"batch_size": -1}, "batch_size: "),
])
def test_bad_form_values_give_a_message_and_store_nothing(home, given, words):
    text, colour, is_open, selected = cj.submit(1, "smart-init", _values(**given))
    assert colour == "danger" and is_open and words in text and selected is no_update
    assert "--" not in text  # the form's fields, not the command line's flags (issue 28)
    assert open_store().list() == []


def test_unknown_type_and_store_trouble_give_messages(home, monkeypatch):
    assert cj.submit(1, "nope", _values())[1] == "warning"

    def broken(*_a, **_k):
        raise jobs.StoreError("job store /x: disk I/O error")

    monkeypatch.setattr(jobs, "submit_job", broken)
    text, colour, _, _ = cj.submit(1, "smart-init", _values())
    assert colour == "danger" and "disk I/O error" in text


def test_submit_open_cancel_rerun_through_the_callbacks(home):
    text, colour, _, job_id = cj.submit(1, "smart-init", _values(
        epochs=1000, runs=1, width=4, max_train=200, noise=0.5))  # noise: not this type's
    assert colour == "success" and job_id in text
    job = open_store().get(job_id)
    assert job.params["epochs"] == 1000 and "noise" not in job.params
    table, options, overlay_options, backend = cj.refresh(1)
    assert job_id in str(table) and progress_id(job_id) in str(table)
    assert [o["value"] for o in options] == [job_id] and overlay_options == options
    assert "local worker pool" in backend
    info, figure, log, key = cj.show_job(1, job_id, None)
    assert job_id in str(info) and key[0] == job_id
    assert cj.show_job(2, job_id, key) == (no_update,) * 4 or key[1] != "queued"
    # cancel, then re-run: a new job with the same parameters
    text, colour, _, _ = cj.job_action("cancel", job_id)
    assert colour == "info" and job_id in text
    text, colour, _, new_id = cj.job_action("rerun", job_id)
    assert colour == "success" and new_id != job_id
    assert open_store().get(new_id).rerun_of == job_id
    assert open_store().get(new_id).params == job.params
    assert jobs.cancel_job(new_id) in ("cancelled", "running")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all(
            open_store().get(i).ended for i in (job_id, new_id)):
        time.sleep(0.3)
    assert {open_store().get(i).status for i in (job_id, new_id)} == {"cancelled"}


def test_the_url_opens_a_job_and_a_tampered_one_is_ignored():
    from bnviz.web.layouts.jobs import layout

    def selected(tree):
        found = []

        def walk(node):
            if isinstance(node, list | tuple):
                for child in node:
                    walk(child)
            elif hasattr(node, "to_plotly_json"):
                props = node.to_plotly_json()["props"]
                if props.get("id") == ids.SELECTED:
                    found.append((props.get("value"), props.get("options")))
                walk(props.get("children"))

        walk(tree)
        return found[0]

    value, options = selected(layout(job="0123456789AB"))
    assert value == "0123456789ab" and [o["value"] for o in options] == [value]
    for bad in ("../../etc", "x" * 5000, "<script>", "", None, ["a"]):
        assert selected(layout(job=bad)) == (None, [])


def test_actions_without_a_job_or_on_a_bad_id(home):
    assert cj.job_action("cancel", None)[1] == "warning"
    assert "no such job" in cj.job_action("rerun", "0123456789ab")[0]
    assert "no such job" in cj.job_action("cancel", "0123456789ab")[0]
    assert "not a job id" in cj.job_action("cancel", "../../x")[0]
    info, _, _, _ = cj.show_job(1, "not-an-id", None)
    assert "not a job id" in str(info)
    info, _, _, _ = cj.show_job(1, "0123456789ab", None)
    assert "no job" in str(info)


def test_figures_of_finished_jobs_and_the_overlay(home):
    store = open_store()
    a = store.create("smart-init", {"dataset": "digits"})
    b = store.create("concentration", {"dataset": "digits"})
    for run in range(2):
        for epoch in (1, 2):
            for arm, acc in (("zero_bias", 0.5), ("random_bias", 0.6), ("bn_init", 0.7)):
                store.add_metric(a.id, {"arm": arm, "run": run, "epoch": epoch,
                                        "test_accuracy": acc + 0.1 * run + 0.01 * epoch})
    for arm in ("zero_bias", "random_bias", "bn"):
        for kind in ("data", "gaussian"):
            store.add_metric(b.id, {"arm": arm, "run": 0, "images": kind, "eps": 0.1,
                                    "layer": 1, "units": 8, "mean": 3.0, "std": 1.0})
    _, figure, _, _ = cj.show_job(1, a.id, None)
    lines = [t for t in figure["data"] if t.get("mode") == "lines+markers"]
    assert [t["name"] for t in lines] == ["zero_bias", "random_bias", "bn_init"]
    assert lines[2]["x"] == [1, 2]
    assert lines[2]["y"] == pytest.approx([100 * (0.71 + 0.81) / 2, 100 * (0.72 + 0.82) / 2])
    _, figure, _, _ = cj.show_job(1, b.id, None)
    assert figure["layout"]["xaxis"]["type"] == "log"
    assert len([t for t in figure["data"] if t.get("mode")]) == 6  # 3 arms x data/gaussian
    overlay = cj.overlay([a.id, b.id], 1)  # mixed kinds: the training curves only
    assert {t["name"].split()[0] for t in overlay["data"] if t.get("mode")} == {a.id}
    assert cj.overlay(["bad id", a.id], 1)["data"]  # a bad id is skipped, not an error


def _text(dash_duo, id_: str) -> str:
    return dash_duo.driver.execute_script(
        f"const e = document.getElementById('{id_}'); return e ? e.textContent : '';")


def _submit_with(dash_duo, **values: str) -> None:
    """Type these values into the form's parameter fields, as a person does, and submit."""
    for name, value in values.items():
        box = dash_duo.driver.find_element(  # a pattern-matching id is a JSON string
            By.XPATH, f"""//*[@id='{{"name":"{name}","type":"{ids.PARAM}"}}']""")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.BACKSPACE)
        box.send_keys(value)
    dash_duo.find_element(f"#{ids.SUBMIT}").click()


@pytest.mark.browser
def test_submit_a_digits_job_and_watch_it_finish(dash_duo, home):
    from bnviz.web.app import app

    dash_duo.driver.set_window_size(1400, 1000)
    dash_duo.start_server(app)
    dash_duo.driver.execute_script("document.documentElement.style.scrollBehavior = 'auto';")
    dash_duo.driver.find_element(By.LINK_TEXT, "Jobs (Fig. 4, 5, 10)").click()
    until(lambda: dash_duo.driver.current_url.endswith("/jobs"), 20)

    def marked() -> list[str]:
        return [a.text for a in dash_duo.driver.find_elements(By.CSS_SELECTOR,
                                                               ".navbar a.nav-link.active")]

    until(lambda: marked() == ["Jobs (Fig. 4, 5, 10)"], 10,
          msg=f"the navbar marks {marked()}, not the jobs page")
    dash_duo.wait_for_text_to_equal(f"#{ids.TABLE} p", "No jobs yet: submit one on the left.",
                                    timeout=20)
    _submit_with(dash_duo, epochs="2", runs="1", width="4")
    dash_duo.wait_for_contains_text(f"#{ids.MESSAGE}", "submitted job", timeout=20)
    job_id = dash_duo.find_element(f"#{ids.MESSAGE}").text.split()[-1]
    job = open_store().get(job_id)
    assert job.params["epochs"] == 2 and job.params["runs"] == 1 and job.params["width"] == 4

    def bar() -> tuple[str | None, str]:
        """(aria-valuenow, label) read in one go: the table is redrawn every second."""
        found = dash_duo.driver.execute_script(
            f"const b = document.querySelector('#{progress_id(job_id)} .progress-bar');"
            "return b ? [b.getAttribute('aria-valuenow'), b.textContent] : null;")
        return tuple(found) if found else (None, "")

    seen = set()

    def finished() -> bool:
        value, _ = bar()
        seen.add(value)
        return value == "100"

    until(finished, 120, msg=f"the progress bar of {job_id} did not reach 100% ({bar()})")
    assert bar()[1] == "100%"
    assert len(seen - {None}) >= 2  # it moved: 0 or partial values were shown before 100
    until(lambda: "succeeded" in _text(dash_duo, ids.TABLE), 20,
          msg=f"the table does not say succeeded: {_text(dash_duo, ids.TABLE)}")
    # the job opened below the table: its curves (one per arm) and its log
    until(lambda: "done in" in _text(dash_duo, ids.LOG), 20,
          msg=f"the log does not end with done: {_text(dash_duo, ids.LOG)}")
    names = dash_duo.driver.execute_script(
        f"return document.querySelector('#{ids.GRAPH} .js-plotly-plot').data"
        ".filter(t => t.mode === 'lines+markers').map(t => t.name)")
    assert names == list(ARMS["smart-init"])
    assert dash_duo.get_logs() == []
    # a link to the job opens it after a reload (the URL carries it)
    dash_duo.driver.get(f"{dash_duo.server_url}/jobs?job={job_id}")
    until(lambda: "done in" in _text(dash_duo, ids.LOG) and job_id in
          _text(dash_duo, ids.DETAIL), 30, msg="?job=ID did not open the job")


@pytest.mark.browser
def test_a_refusal_is_seen_on_a_projector_screen(dash_duo, home):
    """At 1280x720 the form is taller than the window; a job over the hours cap is refused
    with its one line, and that line is on screen where the submit button was pressed (the
    message is pinned to the window's corner), and stored nothing."""
    from bnviz.web.app import app

    dash_duo.driver.set_window_size(1280, 720)
    dash_duo.start_server(app)
    dash_duo.driver.get(f"{dash_duo.server_url}/jobs")
    dash_duo.wait_for_element(f"#{ids.SUBMIT}", timeout=20)
    # Bootstrap scrolls smoothly: selenium would click while the page still moves
    dash_duo.driver.execute_script("document.documentElement.style.scrollBehavior = 'auto';")
    _submit_with(dash_duo, epochs="1000", runs="8", width="64")
    dash_duo.wait_for_contains_text(f"#{ids.MESSAGE}", "BNVIZ_JOB_MAX_HOURS", timeout=20)
    top, bottom, height = dash_duo.driver.execute_script(
        f"const r = document.getElementById('{ids.MESSAGE}').getBoundingClientRect();"
        "return [r.top, r.bottom, window.innerHeight];")
    assert 0 <= top < bottom <= height
    assert "this job would take about" in dash_duo.find_element(f"#{ids.MESSAGE}").text
    assert open_store().list() == []
    assert dash_duo.get_logs() == []
