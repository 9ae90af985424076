"""The scaled-out backend against a real Redis server and a real Celery worker process, and
the DDP training path (gloo, CPU processes) that GPU workers run with NCCL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery_workers import celery_env as celery_worker_env
from celery_workers import start_worker, stop_worker

from bnviz.jobs.runner import run_job
from bnviz.params.jobs import ARMS
from bnviz.records.redis_store import RedisStore
from bnviz.records.sqlite_store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--epochs", "1", "--runs", "1", "--width", "4"]
LONG = ["--epochs", "300", "--runs", "1", "--width", "4", "--max-train", "600"]


def _cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bnviz", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def celery_env(jobs_home: Path, redis_server: str) -> dict:
    return celery_worker_env(redis_server, 1)  # a database of its own


@pytest.fixture
def celery_worker(celery_env: dict, jobs_home: Path):
    procs = [start_worker(celery_env, jobs_home / "celery.log")]
    yield procs[0]
    for proc in procs:
        stop_worker(proc)


@pytest.fixture
def next_worker(celery_env: dict, jobs_home: Path):
    """Starts a second worker when called (what a restart or another machine brings)."""
    started: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        started.append(start_worker(celery_env, jobs_home / "celery-next.log"))
        return started[-1]

    yield start
    for proc in started:
        stop_worker(proc)


def _submit(env: dict, *args: str) -> str:
    out = _cli(env, "jobs", "submit", *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["id"]


def _wait_status(store, job_id: str, statuses: set[str], timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        store.reap()
        job = store.get(job_id)
        if job is not None and job.status in statuses:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} never reached {statuses}: {store.get(job_id)}")


def test_celery_worker_runs_a_job_stored_in_redis(celery_env, celery_worker, jobs_home):
    job_id = _submit(celery_env, "smart-init", *TINY)
    waited = _cli(celery_env, "jobs", "wait", job_id, "--timeout", "120")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert "succeeded" in waited.stdout
    shown = json.loads(_cli(celery_env, "jobs", "show", job_id, "--json").stdout)
    assert shown["status"] == "succeeded" and shown["backend"] == "celery"
    assert shown["device"] == "cpu" and shown["error"] is None
    assert {r["arm"] for r in shown["metrics"]} == set(ARMS["smart-init"])
    # the shared store is Redis (the broker's URL), not the SQLite file under BNVIZ_HOME
    store = RedisStore(celery_env["BNVIZ_BROKER_URL"])
    assert store.get(job_id).status == "succeeded"
    assert len(store.metrics(job_id)) == len(ARMS["smart-init"])  # one epoch, every arm
    assert not (jobs_home / "jobs" / "jobs.sqlite").exists() or \
        SQLiteStore(jobs_home / "jobs" / "jobs.sqlite").get(job_id) is None
    log = (jobs_home / "celery.log").read_text()
    assert f"bnviz.run_job[{job_id}]" in log


def test_celery_cancel_a_queued_and_a_running_job(celery_env, celery_worker):
    store = RedisStore(celery_env["BNVIZ_BROKER_URL"])
    job_id = _submit(celery_env, "smart-init", *LONG)
    job = _wait_status(store, job_id, {"running"})
    queued = _submit(celery_env, "smart-init", *TINY)  # waits behind it (solo pool)
    assert _cli(celery_env, "jobs", "cancel", queued).returncode == 0
    assert store.get(queued).status == "cancelled"
    cancel = _cli(celery_env, "jobs", "cancel", job_id)
    assert cancel.returncode == 0 and "asked to stop" in cancel.stdout
    job = _wait_status(store, job_id, {"cancelled", "failed", "succeeded"}, 30)
    assert job.status == "cancelled"


def _running_with_a_checkpoint(env: dict, store: RedisStore, home: Path) -> str:
    """A long job, running, that has saved its first checkpoint (after its first epoch)."""
    job_id = _submit(env, "smart-init", *LONG)
    _wait_status(store, job_id, {"running"})
    deadline = time.monotonic() + 60
    while not (home / "checkpoints" / f"{job_id}.pt").is_file():
        assert time.monotonic() < deadline, "no checkpoint after 60 s"
        time.sleep(0.2)
    return job_id


def _resumed_then_cancelled(env: dict, store: RedisStore, job_id: str) -> None:
    deadline = time.monotonic() + 90
    while not any("resumed from the checkpoint" in line for line in store.logs(job_id)):
        assert time.monotonic() < deadline, store.logs(job_id)[-5:]
        time.sleep(0.3)
    job = store.get(job_id)
    assert job.status == "running" and job.attempts == 2, job
    assert _cli(env, "jobs", "cancel", job_id).returncode == 0
    assert _wait_status(store, job_id, {"cancelled"}, 30).status == "cancelled"


def test_a_killed_workers_job_is_resumed_by_the_next_worker(celery_env, celery_worker,
                                                             next_worker, jobs_home):
    """SIGKILL (a crash, the OOM killer): the next worker's reaper sees the job's process
    is gone, queues the job again, sends it to the broker, and a worker resumes it."""
    store = RedisStore(celery_env["BNVIZ_BROKER_URL"])
    job_id = _running_with_a_checkpoint(celery_env, store, jobs_home)
    os.killpg(celery_worker.pid, signal.SIGKILL)
    celery_worker.wait(10)
    next_worker()
    _resumed_then_cancelled(celery_env, store, job_id)
    assert any("its process ended" in line and "queued again" in line
               for line in store.logs(job_id))


def test_a_warm_shutdown_queues_the_job_again_for_the_next_worker(celery_env, celery_worker,
                                                                   next_worker, jobs_home):
    """SIGTERM (a deploy): the job stops at its next progress report, goes back to the
    queue and to the broker; the worker exits at once; the next one resumes the job."""
    store = RedisStore(celery_env["BNVIZ_BROKER_URL"])
    job_id = _running_with_a_checkpoint(celery_env, store, jobs_home)
    os.killpg(celery_worker.pid, signal.SIGTERM)
    celery_worker.wait(30)  # no waiting for 300 epochs
    job = store.get(job_id)
    assert job.status == "queued" and job.attempts == 1, job
    assert any("the worker was stopped" in line for line in store.logs(job_id))
    next_worker()
    _resumed_then_cancelled(celery_env, store, job_id)


def test_bad_parameters_never_reach_the_broker(celery_env):
    out = _cli(celery_env, "jobs", "submit", "smart-init", "--epochs", "-3")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--epochs" in out.stderr
    assert RedisStore(celery_env["BNVIZ_BROKER_URL"]).list() == []


def test_ddp_training_in_two_gloo_processes(jobs_home, monkeypatch):
    """The DDP path (one process per GPU with NCCL on a GPU worker) with gloo on the CPU."""
    monkeypatch.setenv("BNVIZ_DDP_CPU", "1")
    store = SQLiteStore(jobs_home / "jobs" / "jobs.sqlite")
    job = store.create("affine-ablation", {"epochs": 2, "runs": 1, "width": 4, "gpus": 2,
                                           "max_train": 256, "batch_size": 32})
    assert run_job(job.id, store) == "succeeded", store.logs(job.id)
    done = store.get(job.id)
    assert done.summary["world_size"] == 2
    rows = store.metrics(job.id)  # only rank 0 reports
    assert sorted((r["arm"], r["epoch"]) for r in rows) == [
        ("affine", 1), ("affine", 2), ("no_affine", 1), ("no_affine", 2)]
    assert all(0 <= r["test_accuracy"] <= 1 for r in rows)
    assert any("DDP: 2 processes" in line for line in store.logs(job.id))


def test_ddp_needs_gpus_or_the_cpu_opt_in(jobs_home, monkeypatch):
    monkeypatch.delenv("BNVIZ_DDP_CPU", raising=False)
    monkeypatch.setenv("BNVIZ_DEVICE", "cpu")
    store = SQLiteStore(jobs_home / "jobs" / "jobs.sqlite")
    job = store.create("smart-init", {"epochs": 1, "runs": 1, "width": 4, "gpus": 2})
    assert run_job(job.id, store) == "failed"
    assert "needs a cuda worker with 2 GPUs" in store.get(job.id).error
