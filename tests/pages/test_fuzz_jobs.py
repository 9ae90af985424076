"""Property-based fuzzing of the jobs page's inputs (issue 7): submissions and their caps,
forms of any shape, and cancel, re-run, details and overlay of any job id.

The properties every page fuzz test checks, and how a bug it finds is kept, are in
tests/pagefuzz.py."""

from __future__ import annotations

import math
import re

import dash_bootstrap_components as dbc
import pytest
from dash import no_update
from fuzzing import (
    FUZZ,
    HEX12,
    JUNK,
    NUMBERS,
    assert_clear,
    in_callback,
    mixed,
)
from hypothesis import event, given
from hypothesis import strategies as st
from pagefuzz import (
    JOB_VALID,
)

import bnviz.images.params as bx
from bnviz import jobs
from bnviz.images.params import JOB_TYPES
from bnviz.params.jobs import JOB_OPTIONS
from bnviz.web.callbacks.jobs import callbacks as cjobs
from bnviz.web.callbacks.jobs import ids as JIDS

JOB_BAD = {name: st.one_of(JUNK, st.just(None), st.just("")) for name in JOB_VALID}
JOB_BAD["dataset"] = st.one_of(JUNK, st.sampled_from(["folder:../x", "folder:", "imagenet",
                                                      "folder:a/b", "folder:a\n", "folder:."]))
JOB_BAD["eps"] = st.one_of(JUNK, st.lists(NUMBERS, max_size=20), st.just(",,"))


def _work(job_type: str, p: dict) -> float:
    arms = len(bx.ARMS[job_type])
    if job_type == "concentration":
        return p["images"] * p["samples"] * len(p["eps"]) * p["runs"] * arms * 2
    work = p["epochs"] * p["runs"] * arms * (p["max_train"] or bx.TRAIN_SIZES[p["dataset"]])
    if job_type == "landscape":
        work *= 1 + (p["etas"] + 12) / p["measure_every"]
    return work


@FUZZ
@given(job_type=st.one_of(st.sampled_from(JOB_TYPES), JUNK),
       values=mixed(JOB_VALID, JOB_BAD))
def test_job_submissions_are_checked_and_capped(jobs_home, job_id, job_type, values):
    names = [spec.name for spec in JOB_OPTIONS]
    form = [values[name] for name in names]  # as dash sends the pattern-matched inputs
    out = cjobs.submit_and_open(1, job_type, form)
    assert len(out) == 5
    message, colour, is_open, opened, _options = out
    assert is_open is True
    event(colour)
    if colour == "success":
        assert re.fullmatch(r"submitted job [0-9a-f]{12}", message) and opened in message
        job = jobs.get_job(opened)
        assert jobs.cancel_job(opened) == "cancelled"
        assert _work(job.type, job.params) <= (bx.MAX_CONCENTRATION_PASSES
                                               if job.type == "concentration" else
                                               bx.MAX_TRAINING_IMAGES)
        for spec in JOB_OPTIONS:
            v = job.params.get(spec.name)
            if spec.kind in ("int", "float") and v is not None:
                assert spec.lo <= v <= spec.hi and math.isfinite(v)
    else:
        assert colour in ("danger", "warning") and opened is no_update
        assert_clear(message, jobs_home)


@FUZZ
@given(job_type=st.one_of(st.sampled_from(JOB_TYPES), JUNK),
       form=st.one_of(JUNK, st.lists(JUNK, max_size=len(JOB_OPTIONS) + 3)))
def test_job_form_of_any_shape(jobs_home, job_id, job_type, form):
    message, colour, is_open, opened, _options = cjobs.submit_and_open(1, job_type, form)
    if colour == "success":
        assert jobs.cancel_job(opened) == "cancelled"
    else:
        assert colour in ("danger", "warning") and assert_clear(message, jobs_home)


@FUZZ
@given(trigger=st.sampled_from([JIDS.CANCEL, JIDS.RERUN]),
       target=st.one_of(st.sampled_from(["real", "REAL", " real "]), HEX12, JUNK))
def test_cancel_and_rerun_of_any_job_id(job_id, trigger, target):
    target = {"real": job_id, "REAL": job_id.upper(), " real ": f" {job_id} "}.get(
        target, target) if isinstance(target, str) else target
    out = in_callback(cjobs.act, trigger + ".n_clicks", 1, 1, target)
    message, colour, is_open, opened, _options = out
    assert is_open is True
    if colour == "success":
        assert trigger == JIDS.RERUN and opened in message
        assert jobs.cancel_job(opened) == "cancelled"
    elif colour in ("danger", "warning"):
        assert_clear(message)
    else:
        assert colour == "info" and trigger == JIDS.CANCEL  # the real job: cancelled already
        assert message == f"job {target}: cancelled"


@FUZZ
@given(target=st.one_of(st.just("real"), HEX12, JUNK), shown=JUNK)
def test_job_details_of_any_job_id(job_id, target, shown):
    target = job_id if target == "real" else target
    info, figure, log, key = cjobs.show_job(1, target, shown)
    if isinstance(info, dbc.Alert):
        assert info.color in ("danger", "warning") and key is None
        assert_clear(info.children)
    elif target == job_id:
        assert key[0] == job_id and isinstance(figure, dict) and isinstance(log, str)


@FUZZ
@given(targets=st.one_of(st.none(), st.lists(st.one_of(st.just("real"), HEX12, JUNK),
                                             max_size=10), JUNK), n=JUNK)
def test_overlay_of_any_job_ids(job_id, targets, n):
    if isinstance(targets, list):
        targets = [job_id if t == "real" else t for t in targets]
    assert isinstance(cjobs.overlay(targets, n), dict)


@FUZZ
@given(n=JUNK, job_type=JUNK)
def test_jobs_table_and_form_with_any_value(job_id, n, job_type):
    table, options, overlay_options, backend = cjobs.refresh(n)
    assert options == overlay_options and any(o["value"] == job_id for o in options)
    styles, explanation = cjobs.show_type_params(job_type)
    assert len(styles) == len(JOB_OPTIONS) and isinstance(explanation, list)


# =========================================================================== found, fixed
# Bugs this fuzzing found, fixed while it was written: each test is a bug's reproducers,
# kept as a regression test (the fuzz tests above feed these inputs too).

@pytest.mark.parametrize("call", [
    lambda: cjobs.overlay(5, 1),
    lambda: cjobs.submit(1, "smart-init", None),
], ids=["jobs-overlay-int", "jobs-form-none"])
def test_b6_wrong_type_in_client_state(tmp_home, call):
    """B6: a value of the wrong type, or a malformed key, in client-side state (a
    dcc.Store, an Upload, a multi Dropdown, a Slider) raised instead of being refused."""
    call()


LONG = "x" * 2000


@pytest.mark.parametrize("shown", [
    lambda: cjobs.show_job(1, LONG, None)[0].children,
    lambda: cjobs.submit(1, "smart-init", ["digits", "resnet9", LONG]
                         + [None] * (len(JOB_OPTIONS) - 3))[0],
], ids=["job-id", "job-parameter"])
def test_b4_long_value_gives_a_short_message(jobs_home, shown):
    """B4: messages echoed the user's whole value (its repr, untruncated), so a long value
    made a message of any length (a 2000-character value gave a >2000-character alert)."""
    assert_clear(shown())
