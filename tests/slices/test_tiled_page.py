"""The /slice page's "run as a job" (issue 45, item 3): a window over the page's cap is refused
by the page's cut in one line that offers a slice job, the page then shows the job's control,
and the control runs the same controls as a slice job (cut as tiles, stored tile by tile),
whose counts per layer the page's status line gives."""

from __future__ import annotations

import pytest
from kept_jobs import kept_job

from bnviz import jobs
from bnviz.params.slice import AS_A_JOB
from bnviz.records.types import ParamError
from bnviz.slices.job import SLICE_JOB
from bnviz.web.callbacks.slice import callbacks as cs


def test_a_refusal_over_the_pages_cap_offers_the_job(jobs_home):
    job_id = kept_job()
    with pytest.raises(ParamError) as refused:  # the default window: over the page's cap
        SLICE_JOB.check(cs.parse_params(job_id, "bn_init", "zero_bias", "0,1,2", "eval", 1, 0))
    line = str(refused.value)
    assert "over the cap of 150,000" in line and AS_A_JOB in line and "\n" not in line
    assert cs.offer_job(line, None) is False  # shown
    assert cs.offer_job("images: three different test image indices", None) is True
    assert cs.offer_job(None, None) is True and cs.offer_job("", "") is True
    assert cs.offer_job("", "0123456789ab.key") is False  # this tab's job: still shown


def test_run_as_a_job_cuts_the_tiles_and_reports_the_counts(inline_jobs):
    """The control's start, poll and status: the page's controls become a slice job of the
    two networks, which the page polls to its counts per layer."""
    job_id = kept_job()
    controls = (job_id, "bn_init", "zero_bias", "0,1,2", "eval", 1, 0.2, "digits")
    value, polling_off, message, shown = cs.tiled_compute(1, *controls)
    assert message == "" and shown is False and polling_off is False
    job = jobs.wait_job(value.split(".")[0], timeout=180, poll=0.05)
    assert job.status == "succeeded", job.error
    assert job.type == "slice-tiles" and job.params["max_regions"] == 20_000_000
    progress, status, result, stop = cs.tiled_poll(1, value)
    assert progress == 100 and stop is True and result == job.id
    regions = job.summary["regions"]
    assert job.summary["arms"] == ["bn_init", "zero_bias"] and len(regions) == 2
    assert status.startswith("done: regions per layer bn_init: ")
    assert f"{regions[1][-1]:,}" in status and f"{job.summary['tiles']} tiles" in status
