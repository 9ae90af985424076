"""Tests of the jitter page's trained networks (bnviz.views.training_cache) and the page's
train / poll / save / load callbacks: a training is a ``jitter-training`` job whose network is
its result file; an upload is a file kept by its hash, not a job; the page refers to either by
``job:<id>`` or ``upload:<hash>``.

One training runs on the real local worker (a job process); the others run in a thread of
the test process (``inline_jobs``). Trainings are a few hundred steps of a 2 x 6 network.
"""

from __future__ import annotations

import base64
import io
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from dash import html, no_update

from bnviz import jobs
from bnviz.core.network import Network, random_network
from bnviz.records import store as store_module
from bnviz.records.results import result_path
from bnviz.records.store import Job, job_key, open_store
from bnviz.records.types import ParamError
from bnviz.views import training_cache as tc
from bnviz.web.callbacks.background import job_id_of
from bnviz.web.callbacks.jitter import callbacks as cj

TRAIN_TIMEOUT = 90.0  # seconds for a training of a few hundred steps (and a job process start)


# --------------------------------------------------------------------------- helpers


def train_params(**over) -> dict:
    params = {"dataset": "moons", "n_points": 120, "data_seed": 0, "depth": 2, "width": 6,
              "activation": "leaky_relu", "alpha": 0.1, "weight_seed": 0, "train_steps": 120,
              "batch_size": 16, "lr": 0.05, "optimizer": "adam"}
    return params | over


def wait_done(job_id: str, timeout: float = TRAIN_TIMEOUT) -> Job:
    """The job once it has ended (fail after ``timeout`` seconds)."""
    try:
        return jobs.wait_job(job_id, timeout, poll=0.05)
    except TimeoutError as exc:
        pytest.fail(f"training {job_id}: {exc}")


def npz_bytes(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def network_arrays(net: Network) -> dict[str, np.ndarray]:
    arrays = {f"W{i + 1}": w for i, w in enumerate(net.weights)}
    arrays |= {"head_W": net.head.weight, "head_b": net.head.bias}
    return arrays


def stored_files(home: Path) -> list[Path]:
    """Every file of the trained and uploaded networks."""
    return sorted(p for d in ("results", "uploads") if (home / d).exists()
                  for p in (home / d).iterdir())


def _upload(raw: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(raw).decode()


#: One intra-op thread, as the server runs (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --------------------------------------------------------------------------- the job


def test_training_parameters_are_checked_and_keyed():
    p = train_params()
    checked = tc.check_training_params(p)
    assert checked == p
    key = job_key("jitter-training", checked)
    assert len(key) == 24 and all(c in "0123456789abcdef" for c in key)
    reordered = tc.check_training_params(dict(reversed(list(p.items()))))
    assert job_key("jitter-training", reordered) == key
    for other in (train_params(train_steps=121), train_params(optimizer="sgd")):
        assert job_key("jitter-training", tc.check_training_params(other)) != key
    for bad, words in (({"train_steps": 0}, "train steps"), ({"train_steps": 5001}, "train steps"),
                       ({"width": 33}, "width"), ({"lr": math.nan}, "lr"),
                       ({"optimizer": "lbfgs"}, "optimizer"), ({"extra": 1}, "extra")):
        with pytest.raises(ParamError, match=words):
            tc.check_training_params(train_params(**bad))


def test_training_runs_on_the_worker_and_is_reused(jobs_home):
    """On the real local worker; the same parameters again are the same job, also after a
    restart."""
    params = train_params()
    job = jobs.start_job("jitter-training", params)
    done = wait_done(job.id)
    assert done.status == "succeeded", done.error
    assert done.pid != os.getpid()  # a job process trained it
    assert done.summary["steps"] == params["train_steps"]
    assert math.isfinite(done.summary["loss"]) and done.summary["accuracy"] > 0.8
    losses = open_store().metrics(job.id)
    assert [r["step"] for r in losses][-1] == params["train_steps"] and len(losses) <= 60
    path = jobs_home / "results" / f"{job.id}.npz"
    assert tc.trained_path(tc.training_reference(job.id)) == path and path.exists()
    assert stored_files(jobs_home) == [path]  # no temporary file left
    net = tc.load_trained(tc.training_reference(job.id))
    assert net.head is not None and net.widths == (6, 6)
    # the same parameters again: the same job, done at once
    t0 = time.perf_counter()
    assert jobs.start_job("jitter-training", dict(params)).id == job.id
    assert time.perf_counter() - t0 < 5
    # after a restart (new store objects) the store says done; nothing is started
    store_module._STORES.clear()
    assert jobs.start_job("jitter-training", params).id == job.id
    assert [j.id for j in open_store().list()] == [job.id]


def test_a_batch_larger_than_the_data_is_refused_before_any_work(inline_jobs):
    with pytest.raises(ParamError, match=r"^training: batch size: 64 is larger than the data "
                                         r"\(20 points\)$"):
        jobs.start_job("jitter-training", train_params(n_points=20, batch_size=64))
    assert open_store().list() == []


def test_failed_training_is_reported(inline_jobs, monkeypatch):
    def diverged(*_args, **_kwargs):
        raise ValueError("the loss is not finite")

    monkeypatch.setattr(tc, "train_network", diverged)
    job = jobs.start_job("jitter-training", train_params())
    done = wait_done(job.id)
    assert done.status == "failed" and "the loss is not finite" in done.error
    assert not result_path(job.id).exists()
    value, label, status, trained, poll_off = cj.poll(1, job.id)
    assert (value, label, trained, poll_off) == (0, "", no_update, True)
    assert isinstance(status, html.Span) and status.children.startswith(
        "training failed: ValueError: the loss is not finite")


@pytest.mark.parametrize("reference", [
    None, 5, "", "0" * 24, "0" * 12, "job:", "job:../../etc/passwd", "job:" + "0" * 11,
    "upload:", "upload:" + "0" * 23, "upload:" + "0" * 25, "upload:" + "ABCDEF" * 4,
    "upload:../" + "0" * 21, "upload:" + "0" * 20 + ".npz", "upload:" + "0" * 23 + "\n",
    "uploads:" + "0" * 24, "trained/" + "0" * 24,
])
def test_trained_path_rejects_what_is_not_a_reference(tmp_home, reference):
    with pytest.raises(ValueError):
        tc.trained_path(reference)


def test_references_say_which_network_it_is(tmp_home):
    assert tc.trained_path("job:0123456789ab") == tmp_home / "results" / "0123456789ab.npz"
    assert tc.trained_path("upload:" + "ab" * 12) == tmp_home / "uploads" / f"{'ab' * 12}.npz"


# --------------------------------------------------------------------------- uploads


def test_save_uploaded_stores_a_valid_network(jobs_home):
    net = random_network(2, 5, seed=2, head_outputs=2)
    raw = npz_bytes(**network_arrays(net))
    reference = tc.save_uploaded(raw)
    assert reference.startswith("upload:")
    path = tc.trained_path(reference)
    assert path.parent == jobs_home / "uploads" and path.read_bytes() == raw
    assert tc.save_uploaded(raw) == reference  # content-addressed
    assert stored_files(jobs_home) == [path]
    back = tc.load_trained(reference)
    np.testing.assert_array_equal(back.weights[1], net.weights[1])
    assert open_store().list() == []  # an upload is not a job


def _too_large() -> bytes:
    rng = np.random.default_rng(0)
    arrays = {"W1": rng.normal(size=(33, 2)), "head_W": rng.normal(size=(2, 33))}
    return npz_bytes(**arrays)


def _too_deep() -> bytes:
    rng = np.random.default_rng(0)
    arrays = {"W1": rng.normal(size=(4, 2))}
    arrays |= {f"W{i}": rng.normal(size=(4, 4)) for i in range(2, 8)}
    return npz_bytes(**arrays, head_W=rng.normal(size=(2, 4)))


@pytest.mark.parametrize(("raw", "words"), [
    (b"this is not an npz file at all", "the upload"),
    (b"", "the upload"),
    (b"PK\x03\x04" + b"\x00" * 64, "the upload"),  # a broken zip
    (npz_bytes(W1=np.ones((3, 2)), W2=np.ones((2, 3))), "head"),
    (npz_bytes(W1=np.ones((3, 2)), head_W=np.ones((2, 3)),
               extra=np.array([{"a": 1}], dtype=object)), "the upload"),
    (npz_bytes(W1=np.array([[{"a": 1}, 2]], dtype=object), head_W=np.ones((2, 1))),
     "the upload"),
    (npz_bytes(W1=np.ones((3, 3)), head_W=np.ones((2, 3))), "W1"),  # wrong shape
    (_too_large(), "32"),
    (_too_deep(), "6 layers"),
], ids=["garbage", "empty", "broken-zip", "no-head", "pickled-extra", "pickled-W1",
        "bad-shape", "too-wide", "too-deep"])
def test_save_uploaded_rejects_bad_files(tmp_home, raw, words):
    with pytest.raises(ValueError, match=words) as info:
        tc.save_uploaded(raw)
    assert str(tmp_home) not in str(info.value)  # no server path in the message
    assert stored_files(tmp_home) == []  # nothing left behind


def test_save_uploaded_rejects_an_npy_file(tmp_home):
    buf = io.BytesIO()
    np.save(buf, np.ones((3, 2)))
    try:
        with pytest.raises(ValueError):
            tc.save_uploaded(buf.getvalue())
    finally:
        assert stored_files(tmp_home) == []


# --------------------------------------------------------------------------- callbacks


def test_start_poll_and_trained_picture(inline_jobs):
    args = ("moons", 100, 2, 6, 0, 0, 4, "80", "adam", "0.05")
    value, disabled, msg, is_open = cj.start(1, *args)
    job_id = job_id_of(value)  # the tab's store: the id and its key to cancel (issue 30)
    assert disabled is False and msg is no_update and is_open is no_update
    assert len(job_id) == 12 and jobs.get_job(job_id).type == "jitter-training"
    assert wait_done(job_id).status == "succeeded"
    value, label, status, trained, poll_off = cj.poll(3, value)
    assert (value, label, trained, poll_off) == (100, "100%", f"job:{job_id}", True)
    assert status.startswith("trained, training accuracy")
    # the same training again: the same job, done at once
    assert job_id_of(cj.start(2, *args)[0]) == job_id
    fig = cj.update_jitter("moons", 100, 2, 6, 0, 0, 0, 4, 8, None, trained)[0]
    assert fig["layout"]["title"]["text"] == "|B| = 16, 8 mini-batches, after training"
    # save sends the job's result file
    sent, message, shown = cj.save(1, trained)
    assert sent["filename"] == "bnviz-trained.npz" and message is no_update
    assert base64.b64decode(sent["content"]) == result_path(job_id).read_bytes()
    sent, message, shown = cj.save(1, None)
    assert sent is no_update and shown is True and message.startswith("nothing to save")
    assert cj.back_to_initialisation(1) == (None, "at initialisation", 0)


@pytest.mark.parametrize(("steps", "optimizer", "lr", "words"), [
    (0, "adam", 0.01, "train steps"), (5001, "adam", 0.01, "train steps"),
    ("x", "adam", 0.01, "train steps"), (10, "lbfgs", 0.01, "optimizer"),
    (10, "adam", 0, "learning rate"), (10, "adam", None, ""), (10, "adam", "nan", "learning"),
])
def test_start_rejects_bad_values(inline_jobs, steps, optimizer, lr, words):
    job_id, disabled, msg, is_open = cj.start(1, "moons", 100, 2, 6, 0, 0, 4, steps, optimizer,
                                              lr)
    assert job_id is no_update and disabled is no_update
    assert words in msg and is_open is True
    assert open_store().list() == []  # nothing started


def _running(pid: int, progress: float, steps: int = 20) -> str:
    """A training job as the job process ``pid`` runs it."""
    store = open_store()
    job = store.create("jitter-training", tc.check_training_params(train_params(train_steps=steps)))
    assert store.claim(job.id, pid)
    store.update(job.id, progress=progress)
    return job.id


def test_poll_states(jobs_home):
    assert cj.poll(1, None) == (no_update,) * 4 + (True,)
    job_id = _running(os.getpid(), 0.25)
    value, label, status, trained, poll_off = cj.poll(1, job_id)
    assert (value, label, status, trained, poll_off) == (
        25, "25%", "training: step 5 of 20", no_update, False)
    open_store().add_metric(job_id, {"step": 5, "loss": 0.5})
    assert cj.poll(1, job_id)[2] == "training: step 5 of 20, loss 0.500"
    assert open_store().finish(job_id, "failed", "ValueError: boom")
    value, label, status, trained, poll_off = cj.poll(2, job_id)
    assert value == 0 and trained is no_update and poll_off is True
    assert isinstance(status, html.Span) and status.children == "training failed: ValueError: boom"
    # a job that succeeded but whose network file is gone
    done = _running(os.getpid(), 0.9)
    assert open_store().finish(done, "succeeded", summary={"accuracy": 0.9})
    status = cj.poll(1, done)[2]
    assert status.children == "training not found (its files were removed?)"


def test_poll_of_a_job_in_another_process_is_not_a_failure(jobs_home, monkeypatch):
    """A job run by another process is seen through the store; once that process died and
    the job has no attempt left (BNVIZ_JOB_ATTEMPTS=1; with more, it is queued again:
    tests/jobs/test_no_job_lost.py) the reader says so; an id with no job at all is
    reported as unknown."""
    monkeypatch.setenv("BNVIZ_JOB_ATTEMPTS", "1")
    assert cj.poll(1, "0" * 12)[2].children == "training not found (its files were removed?)"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        job_id = _running(other.pid, 100 / 999, steps=999)
        value, label, status, trained, poll_off = cj.poll(1, job_id)
        assert "failed" not in str(status) and "100 of 999" in str(status)
        assert poll_off is False and trained is no_update
        os.kill(other.pid, signal.SIGKILL)
        other.wait(10)
        *_, status, _, poll_off = cj.poll(1, job_id)
        assert "stopped" in str(status) and poll_off is True
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()


def test_load_callback(tmp_home):
    net = random_network(2, 5, seed=2, head_outputs=2)
    raw = npz_bytes(**network_arrays(net))
    reference, status = cj.load(_upload(raw), "mine.npz")
    assert status == "loaded mine.npz" and reference.startswith("upload:")
    assert tc.trained_path(reference).read_bytes() == raw
    fig = cj.update_jitter("moons", 100, 2, 6, 0, 0, 0, 4, 8, None, reference)[0]
    assert fig["layout"]["title"]["text"].endswith("after training")
    for contents, name in [(_upload(raw), "mine.csv"), (_upload(b"garbage"), "bad.npz"),
                           ("data:application/octet-stream;base64,@@@", "bad.npz"),
                           (None, "x.npz"), ("no comma", "x.npz"),
                           (_upload(npz_bytes(W1=np.ones((3, 2)))), "nohead.npz")]:
        trained, status = cj.load(contents, name)
        assert trained is no_update
        assert isinstance(status, html.Span) and status.children.startswith(f"{name}: ")
        assert "text-danger" in status.className
    assert stored_files(tmp_home) == [tc.trained_path(reference)]


def test_load_callback_rejects_an_npy_file(tmp_home):
    buf = io.BytesIO()
    np.save(buf, np.ones((3, 2)))
    trained, status = cj.load(_upload(buf.getvalue()), "net.npz")
    assert trained is no_update and isinstance(status, html.Span)
