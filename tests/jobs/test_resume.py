"""A job interrupted (its worker stopped or lost) resumes from its last checkpoint and ends
with exactly the rows an uninterrupted run writes (BN paper Figures 5, 10 and Table 1's
training jobs, on the CPU, where training is deterministic)."""

from __future__ import annotations

import pytest

from bnviz.images.experiments import run_experiment
from bnviz.images.params import check_params
from bnviz.records.types import Interrupted, RecordingContext


def _params(job_type: str) -> dict:
    return check_params(job_type, {"dataset": "digits", "width": 2, "runs": 2, "max_train": 40,
                                   "batch_size": 8, "epochs": 3, "lr": 0.05, "seed": 5})


def _rows(ctx: RecordingContext) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in ctx.rows]


@pytest.mark.parametrize(("job_type", "at"), [("smart-init", 0.2), ("smart-init", 0.7),
                                                ("jitter-noise", 0.55)])
def test_a_resumed_job_writes_what_an_uninterrupted_one_does(jobs_home, job_type, at):
    params = _params(job_type)
    whole = RecordingContext()
    run_experiment(job_type, params, whole)

    ctx = RecordingContext(interrupt_at=at)
    with pytest.raises(Interrupted):
        run_experiment(job_type, params, ctx)
    assert ctx.saved is not None  # at least one epoch was checkpointed
    before = len(ctx.rows)
    assert 0 < len(_rows(ctx)) < len(_rows(whole))
    run_experiment(job_type, params, ctx)  # the next attempt: restores, then goes on
    assert _rows(ctx) == _rows(whole)
    assert len(ctx.rows) >= before  # nothing recorded before the checkpoint is lost
