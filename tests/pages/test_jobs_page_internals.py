"""The jobs page shows a job's error and log without the server's internals: no traceback, no
absolute path (issue 15, item 8); the CLI keeps everything."""

from __future__ import annotations

import pytest

from bnviz.messages import TRACEBACK_HINT, for_page, log_for_page


@pytest.mark.parametrize("text, shown", [
    ("OSError: [Errno 2] No such file or directory: '/data/cifar-10-batches-py/data_batch_1'",
     "OSError: [Errno 2] No such file or directory: '…/data_batch_1'"),
    ("missing /srv/bnviz/home/results/abc.npz, try again", "missing …/abc.npz, try again"),
    ("fetch https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz by hand",
     "fetch https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz by hand"),
    ("lr / batch size too large", "lr / batch size too large"),
    ("3/4 of each class", "3/4 of each class"),
])
def test_paths_are_cut_urls_and_prose_stay(text, shown):
    assert for_page(text) == shown


def test_a_traceback_in_the_log_becomes_a_hint():
    tb = ('Traceback (most recent call last):\n  File "/app/bnviz/jobs/runner.py", line 160, '
          'in run_job\nValueError: boom')
    shown = log_for_page(["epoch 1: 0.53", tb, "reading /data/svhn/train_32x32.mat"])
    assert shown == ["epoch 1: 0.53", TRACEBACK_HINT, "reading …/train_32x32.mat"]
    assert not any("/app/" in line or "File " in line for line in shown)


def test_the_jobs_page_shows_a_failed_job_without_internals(jobs_home, monkeypatch):
    """A failed job with a traceback in its log: the page's detail, log and table show no
    traceback and no server path, `jobs show` still has both."""
    from bnviz import jobs
    from bnviz.records.store import open_store
    from bnviz.web.callbacks.jobs import callbacks as cjobs

    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    job = jobs.submit_job("smart-init", {"dataset": "digits", "epochs": 1, "runs": 1})
    store = open_store()
    tb = ('Traceback (most recent call last):\n  File "/srv/bnviz/bnviz/images/training.py", '
          'line 9, in run\nOSError: /srv/bnviz/home/results/x.npz: disk full')
    store.add_log(job.id, tb)
    store.finish(job.id, "failed", "OSError: /srv/bnviz/home/results/x.npz: disk full")
    detail, _figure, log, _key = cjobs.show_job(1, job.id, None)
    page_text = str(detail) + log + str(cjobs.refresh(1)[0])
    assert "/srv/" not in page_text and "Traceback" not in page_text
    assert "…/x.npz: disk full" in str(detail) and TRACEBACK_HINT in log
    details = jobs.job_details(job.id)
    assert "/srv/bnviz/home/results/x.npz" in details["error"]  # the CLI keeps it all
    assert details["log"][-1].startswith("Traceback")
