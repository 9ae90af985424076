"""Shared pieces of the pages' fuzz tests (tests/pages/test_fuzz_*.py; the strategies for
junk values and the message checks are in tests/fuzzing.py).

Property-based fuzzing of every user-controlled input (issue 7). Hypothesis feeds random
values (valid ones, boundaries, None, NaN, +-inf, huge integers, negative numbers, empty and
random text, lists and dicts where a scalar is expected, booleans) to the page callbacks,
which are called directly (a dash ``@callback`` returns the function itself), and to the
command line (``bnviz.cli.main``, in-process). The properties:

* nothing raises;
* a rejection is one clear line for the user: not empty, no newline, no traceback, no
  exception repr, at most MAX_MESSAGE characters; and a refused request keeps the page's
  state (``no_update``);
* a request over a cost cap is refused with a message before anything is computed;
* the CLI exits with 0 or 2 (1 only for ``jobs wait`` of a job that did not succeed), and
  on 2 it prints exactly one ``bnviz: error: ...`` line on stderr.

Valid values are kept small, so accepted requests are cheap. Nothing starts a background
computation: training, density runs and the job worker are replaced by stubs that record
what they were given (:func:`recording_starts`; the fixtures ``training_stub``,
``density_stub`` and ``job_id`` are in tests/pages/conftest.py), and every job submitted is
cancelled.

The bugs this fuzzing found (B1-B10) were fixed while it was written; each one's minimal
reproducers are kept at the end of the page's fuzz file as regression tests, and the
strategies feed their triggers too. A bug found later: keep its reproducer there marked
``xfail(strict=True, reason="BUG: ...")``, and leave its trigger out of the strategies
(saying so) until it is fixed.
"""

from __future__ import annotations

import io

import numpy as np
from fuzzing import good
from hypothesis import strategies as st

from bnviz import jobs
from bnviz.images.networks import ARCHS
from bnviz.jobs.registry import get_job_type
from bnviz.records.store import Job

#: The job id the stubs answer with.
STUB_ID = "5" * 12

#: A CSV with classic Mac line endings (B2).
MAC_CSV = b"x,y\r1,2\r3,4\r"


def recording_starts(monkeypatch, job_type: str) -> list[dict]:
    """The pages' background starts of ``job_type`` are recorded instead of started (the
    job type's own parameter check still runs, as in bnviz.jobs.start_job)."""
    calls: list[dict] = []

    def start_job(started_type: str, params: dict, client: str | None = None) -> Job:
        assert started_type == job_type
        calls.append(get_job_type(started_type).check(params))
        return Job(STUB_ID, started_type, calls[-1])

    monkeypatch.setattr(jobs, "start_job", start_job)
    return calls


def end_open_jobs() -> None:
    """Cancel every queued or running job (what a test submitted never runs)."""
    for job in jobs.list_jobs(1000):
        if job.status in ("queued", "running"):
            jobs.cancel_job(job.id)


def npz_bytes(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


_rng = np.random.default_rng(0)
#: A small trained-network file's arrays (the jitter page's uploads, the CLI's --weights).
NET = {"W1": _rng.normal(size=(4, 2)), "W2": _rng.normal(size=(4, 4)),
       "head_W": _rng.normal(size=(2, 4)), "head_b": np.zeros(2)}

#: Valid values of the image jobs' parameters (the jobs page's form, ``bnviz jobs submit``).
JOB_VALID = {
    "dataset": st.sampled_from(["digits", "digits", " DIGITS ", "cifar10", "svhn",
                                "folder:imgs"]),
    "arch": st.sampled_from(ARCHS), "width": good(st.integers(1, 64)),
    "epochs": good(st.integers(1, 1000)), "runs": good(st.integers(1, 50)),
    "batch_size": good(st.integers(2, 4096)), "lr": good(st.floats(1e-6, 10)),
    "seed": good(st.integers(0, 5)),
    "max_train": st.one_of(st.just(0), good(st.integers(2, 10_000_000))),
    "image_size": good(st.integers(8, 512)), "gpus": good(st.integers(1, 64)),
    "noise": good(st.floats(0, 10)), "validation": good(st.floats(0, 0.5)),
    "images": good(st.integers(1, 10_000)),
    "samples": good(st.integers(2, 4096)),
    "eps": st.one_of(st.sampled_from(["0.01,0.1", "0.3", " 1 , 2 ", "1e-6,100"]),
                     st.lists(st.floats(1e-6, 100), min_size=1, max_size=16)),
    "etas": good(st.integers(2, 16)), "measure_every": good(st.integers(1, 10_000)),
}
