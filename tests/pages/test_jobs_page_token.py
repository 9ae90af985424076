"""The jobs page with a jobs token (BNVIZ_JOBS_TOKEN) and per-client limits: the token field
is shown only when the server has a token; submit, cancel and re-run do nothing without the
right one and say so in the page's alert; a page's submissions and background runs count
against the client that made them (its address, as a request carries it).

The callbacks are called directly (as tests/pages/* do), inside a Flask request context when
the client matters; no job runs (``ensure_local_worker`` is a no-op)."""

from __future__ import annotations

import pytest
from dash import no_update

from bnviz import jobs
from bnviz.params.jobs import JOB_OPTIONS
from bnviz.records.store import open_store
from bnviz.service.clients import client_id
from bnviz.web import app as dashboard
from bnviz.web.callbacks.background import job_id_of
from bnviz.web.callbacks.density import callbacks as cd
from bnviz.web.callbacks.jobs import callbacks as cj
from bnviz.web.callbacks.jobs import ids

TOKEN = "page-token"
NAMES = [spec.name for spec in JOB_OPTIONS]
TINY = {"epochs": 1, "runs": 1, "width": 4}


def _values(**given) -> list:
    return [given.get(name) for name in NAMES]


@pytest.fixture
def home(jobs_home, monkeypatch):
    for name in ("BNVIZ_JOBS_TOKEN", "BNVIZ_JOBS_PER_CLIENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    return jobs_home


def _find(tree, id_):
    """The props of the component with this id in a layout tree."""
    if isinstance(tree, list | tuple):
        for child in tree:
            found = _find(child, id_)
            if found is not None:
                return found
        return None
    if not hasattr(tree, "to_plotly_json"):
        return None
    props = tree.to_plotly_json()["props"]
    if props.get("id") == id_:
        return props
    return _find(props.get("children"), id_)


def test_the_token_field_is_shown_only_when_the_server_has_a_token(monkeypatch):
    from bnviz.web.layouts.jobs import layout

    monkeypatch.delenv("BNVIZ_JOBS_TOKEN", raising=False)
    assert _find(layout(), ids.TOKEN_ROW)["style"] == {"display": "none"}
    assert _find(layout(), ids.TOKEN)["type"] == "password"  # there: the callbacks read it
    monkeypatch.setenv("BNVIZ_JOBS_TOKEN", TOKEN)
    row = _find(layout(), ids.TOKEN_ROW)
    assert row["style"] is None and "jobs token" in str(row["children"])
    field = _find(layout(), ids.TOKEN)
    assert field["type"] == "password" and not field.get("value")  # never sent to the page


@pytest.mark.parametrize("given", [None, "", "wrong", TOKEN + " x", 3, ["page-token"],
                                   {"token": TOKEN}])
def test_submit_without_the_right_token_does_nothing(home, monkeypatch, given):
    monkeypatch.setenv("BNVIZ_JOBS_TOKEN", TOKEN)
    text, colour, is_open, selected = cj.submit(1, "smart-init", _values(**TINY), given)
    typed = isinstance(given, str) and given.strip()
    assert text == (cj.TOKEN_WRONG if typed else cj.TOKEN_NEEDED)  # typed: a wrong one
    assert colour == "danger" and is_open
    assert selected is no_update and open_store().list() == []


def test_with_the_token_submit_cancel_and_rerun_work(home, monkeypatch):
    monkeypatch.setenv("BNVIZ_JOBS_TOKEN", TOKEN)
    text, colour, _, job_id = cj.submit(1, "smart-init", _values(**TINY), f" {TOKEN} ")
    assert colour == "success" and job_id in text
    for action in ("cancel", "rerun"):
        for wrong in (None, "", "nope"):
            text, colour, _, selected = cj.job_action(action, job_id, wrong)
            assert text == (cj.TOKEN_WRONG if wrong else cj.TOKEN_NEEDED)
            assert colour == "danger" and selected is no_update
    assert open_store().get(job_id).status == "queued" and len(open_store().list()) == 1
    text, colour, _, _ = cj.job_action("cancel", job_id, TOKEN)
    assert colour == "info" and open_store().get(job_id).status == "cancelled"
    text, colour, _, new_id = cj.job_action("rerun", job_id, TOKEN)
    assert colour == "success" and open_store().get(new_id).rerun_of == job_id
    # reading needs no token
    table, options, _, _ = cj.refresh(1)
    assert {o["value"] for o in options} == {job_id, new_id}
    info, _, _, _ = cj.show_job(1, job_id, None)
    assert job_id in str(info)


def test_without_a_token_the_page_is_as_before(home):
    text, colour, _, job_id = cj.submit(1, "smart-init", _values(**TINY))
    assert colour == "success"
    assert cj.job_action("cancel", job_id, "anything")[1] == "info"


def test_page_submissions_count_per_client(home, monkeypatch):
    monkeypatch.setenv("BNVIZ_JOBS_PER_CLIENT", "1")
    with dashboard.server.test_request_context(environ_base={"REMOTE_ADDR": "10.1.1.1"}):
        text, colour, _, job_id = cj.submit(1, "smart-init", _values(**TINY))
        assert colour == "success"
        text, colour, _, _ = cj.submit(1, "smart-init", _values(**TINY))
        assert colour == "danger" and "you have 1 jobs queued or running" in text
        text, colour, _, _ = cj.job_action("rerun", job_id)
        assert colour == "danger" and "you have 1 jobs" in text
    with dashboard.server.test_request_context(environ_base={"REMOTE_ADDR": "10.1.1.2"}):
        assert cj.submit(1, "smart-init", _values(**TINY))[1] == "success"
    assert {j.client for j in open_store().list()} == {client_id("10.1.1.1"),
                                                        client_id("10.1.1.2")}
    # outside a request (the command line, a direct call) no client limit applies
    assert cj.submit(1, "smart-init", _values(**TINY))[1] == "success"


def test_a_pages_background_run_counts_for_its_client(home, monkeypatch):
    monkeypatch.setenv("BNVIZ_JOBS_PER_CLIENT", "1")
    with dashboard.server.test_request_context(environ_base={"REMOTE_ADDR": "10.2.2.2"}):
        value, polling_off, _, _ = cd.compute(1, 3, "16", "star", 50, 0, 0, "48", 1)
        assert polling_off is False
        job_id = job_id_of(value)
        assert open_store().get(job_id).client == client_id("10.2.2.2")
        again = cd.compute(1, 3, "16", "star", 50, 0, 0, "48", 1)  # the same run: reused
        assert job_id_of(again[0]) == job_id
        _, _, message, is_open = cd.compute(1, 3, "16", "star", 50, 1, 0, "48", 1)
        assert is_open and "you have 1 jobs queued or running" in message
