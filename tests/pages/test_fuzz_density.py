"""Property-based fuzzing of the density page's inputs (issue 7): run requests and their
cost cap, and the stored result's display, progress and cancel.

The properties every page fuzz test checks, and how a bug it finds is kept, are in
tests/pagefuzz.py."""

from __future__ import annotations

import pytest
from dash import html, no_update
from fuzzing import (
    FUZZ,
    HEX12,
    HEX24,
    JUNK,
    TOO_BIG,
    _number,
    _whole_in,
    assert_clear,
    good,
    mixed,
)
from hypothesis import event, given
from hypothesis import strategies as st
from pagefuzz import (
    STUB_ID,
)

from bnviz import jobs
from bnviz.data.datasets import DATASETS
from bnviz.views.density import MAX_DENSITY_WORK, density_work
from bnviz.web.callbacks.background import job_id_of
from bnviz.web.callbacks.density import callbacks as cd


@FUZZ
@given(c=mixed({"depth": good(st.integers(1, 16)), "width": good(st.integers(2, 1024)),
                "dataset": st.sampled_from(DATASETS), "n_points": good(st.integers(2, 2000)),
                "weight_seed": good(st.integers(0, 2**31 - 1)),
                "data_seed": good(st.integers(0, 2**31 - 1)), "grid": good(st.integers(16, 512)),
                "eps": good(st.floats(1, 8))},
               {"depth": JUNK, "width": JUNK, "dataset": JUNK, "n_points": JUNK,
                "weight_seed": JUNK, "data_seed": JUNK, "grid": JUNK, "eps": JUNK}))
def test_density_requests_are_checked_and_capped(density_stub, c):
    density_stub.clear()
    out = cd.compute(1, c["depth"], c["width"], c["dataset"], c["n_points"], c["weight_seed"],
                     c["data_seed"], c["grid"], c["eps"])
    sizes = (c["grid"], c["depth"], c["width"])
    over_cap = (_whole_in(c["grid"], 16, 512) and _whole_in(c["depth"], 1, 16)
                and _whole_in(c["width"], 2, 1024)
                and density_work(*(int(_number(v)) for v in sizes)) > MAX_DENSITY_WORK)
    event("refused" if out[3] else "started")
    if over_cap:
        event("over the cap")
    if out[3]:
        assert_clear(out[2])
        assert out[0] is no_update and not density_stub
    else:
        p, = density_stub
        assert (job_id_of(out[0]), *out[1:]) == (STUB_ID, False, "", False)
        assert density_work(p["grid"], p["depth"], p["width"]) <= MAX_DENSITY_WORK
    if over_cap:  # refused with a message, before computing anything
        assert out[3] and not density_stub
        eps = _number(c["eps"])
        if (eps is not None and 1 <= eps <= 8 and c["dataset"] in DATASETS
                and _whole_in(c["n_points"], 2, 2000)
                and _whole_in(c["weight_seed"], 0, 2**31 - 1)
                and _whole_in(c["data_seed"], 0, 2**31 - 1)):
            assert "cap" in out[2]


def test_density_request_at_the_cost_cap(density_stub):
    # the paper's scale (11 x 1024) at grid 512 is accepted; 16 layers is over the cap
    assert cd.compute(1, 11, 1024, "star", 50, 0, 0, 512, 1)[3] is False and density_stub
    density_stub.clear()
    out = cd.compute(1, 16, 1024, "star", 50, 0, 0, 512, 1)
    assert out[3] is True and "cap" in assert_clear(out[2]) and not density_stub


@pytest.fixture
def density_result(inline_jobs) -> str:
    """A real (tiny) density job and its result; returns its id."""
    job = jobs.start_job("density", {"depth": 2, "width": 4, "activation": "leaky_relu",
                                     "dataset": "star", "n_points": 20, "weight_seed": 0,
                                     "data_seed": 0, "grid": 16, "eps": 1.0})
    assert jobs.wait_job(job.id, timeout=60, poll=0.05).status == "succeeded"
    return job.id


@FUZZ
@given(result=st.one_of(st.just("stored"), HEX12, HEX24, JUNK),
       layers=st.one_of(st.sampled_from(["1", "1,2", "2,1", " 1 , 2 ", "0", "3", "1,,2", ",",
                                         "1,2,1,2,1,2,1", "-1", "1.5", "9" * 30]), JUNK),
       radius=st.one_of(good(st.floats(0.01, 3)), JUNK))
def test_density_results_are_shown_or_refused(density_result, result, layers, radius):
    result = density_result if result == "stored" else result
    out = cd.show(result, layers, radius)
    assert len(out) == 4
    if out[3] is True:
        event("refused")
        assert_clear(out[2])
        assert out[0] is no_update and out[1] is no_update
    elif all(o is no_update for o in out):  # no result to show
        event("nothing")
        assert result != density_result
    else:
        event("drawn")
        assert out[2] == "" and isinstance(out[0], dict) and isinstance(out[1], dict)


@FUZZ
@given(job=st.one_of(st.just("stored"), HEX12, HEX24, JUNK))
def test_density_progress_of_any_job_id(density_result, job):
    job = density_result if job == "stored" else job
    out = cd.poll(1, job)
    assert len(out) == 4
    if isinstance(out[1], html.Span):
        assert_clear(out[1])
    if job == density_result:
        assert out[:3] == (100, "done", job)


@FUZZ
@given(job=JUNK)
def test_density_cancel_of_anything(tmp_home, job):
    assert cd.cancel(1, job) in ("cancelling...", "nothing to cancel")


# =========================================================================== found, fixed
# Bugs this fuzzing found, fixed while it was written: each test is a bug's reproducers,
# kept as a regression test (the fuzz tests above feed these inputs too).

@pytest.mark.parametrize("call", [
    lambda: cd.compute(1, 2, 2, "moons", 16, 0, 16, TOO_BIG),
    lambda: cd.show("0" * 24, "1", TOO_BIG),
], ids=["density-eps", "density-radius"])
def test_b5_integer_beyond_float_range(density_stub, call):
    """B5: float() of an integer beyond float range raised OverflowError, which these
    callbacks did not catch (JSON integers are parsed exactly: a request can send 10**400)."""
    call()


@pytest.mark.parametrize("call", [
    lambda: cd.poll(1, "abc"),
    lambda: cd.show(5, "1", 0.1),
], ids=["density-poll-key", "density-result-int"])
def test_b6_wrong_type_in_client_state(density_stub, call):
    """B6: a value of the wrong type, or a malformed key, in client-side state (a
    dcc.Store, an Upload, a multi Dropdown, a Slider) raised instead of being refused."""
    call()
