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

from bnviz.jobs.redis_store import RedisStore
from bnviz.jobs.runner import run_job
from bnviz.jobs.sqlite_store import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--epochs", "1", "--runs", "1", "--width", "4"]


def _cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bnviz", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def celery_env(jobs_home: Path, redis_server: str) -> dict:
    url = redis_server.rsplit("/", 1)[0] + "/1"  # a database of its own
    import redis

    redis.Redis.from_url(url).flushdb()
    env = dict(os.environ, BNVIZ_BROKER_URL=url, PYTHONPATH=str(ROOT))
    env.pop("BNVIZ_STORE_URL", None)
    return env


@pytest.fixture
def celery_worker(celery_env: dict, jobs_home: Path):
    log = open(jobs_home / "celery.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "bnviz", "worker"], env=celery_env,
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while b"ready." not in (jobs_home / "celery.log").read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("celery worker did not start:\n" +
                        (jobs_home / "celery.log").read_text()[-2000:])
        time.sleep(0.2)
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    log.close()


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
    assert {r["arm"] for r in shown["metrics"]} == {"zero_bias", "random_bias", "bn_init"}
    # the shared store is Redis (the broker's URL), not the SQLite file under BNVIZ_HOME
    store = RedisStore(celery_env["BNVIZ_BROKER_URL"])
    assert store.get(job_id).status == "succeeded"
    assert len(store.metrics(job_id)) == 3
    assert not (jobs_home / "jobs" / "jobs.sqlite").exists() or \
        SQLiteStore(jobs_home / "jobs" / "jobs.sqlite").get(job_id) is None
    log = (jobs_home / "celery.log").read_text()
    assert f"bnviz.run_job[{job_id}]" in log


def test_celery_cancel_and_killed_worker(celery_env, celery_worker):
    store = RedisStore(celery_env["BNVIZ_BROKER_URL"])
    long = ["--epochs", "300", "--runs", "1", "--width", "4", "--max-train", "600"]
    job_id = _submit(celery_env, "smart-init", *long)
    job = _wait_status(store, job_id, {"running"})
    queued = _submit(celery_env, "smart-init", *TINY)  # waits behind it (solo pool)
    assert _cli(celery_env, "jobs", "cancel", queued).returncode == 0
    assert store.get(queued).status == "cancelled"
    cancel = _cli(celery_env, "jobs", "cancel", job_id)
    assert cancel.returncode == 0 and "asked to stop" in cancel.stdout
    job = _wait_status(store, job_id, {"cancelled", "failed", "succeeded"}, 30)
    assert job.status == "cancelled"
    # the worker goes on, skips the cancelled one, and dies mid-job: the job is marked failed
    job_id = _submit(celery_env, "smart-init", *long)
    job = _wait_status(store, job_id, {"running"})
    time.sleep(1.0)
    os.killpg(celery_worker.pid, signal.SIGKILL)
    celery_worker.wait(10)
    job = _wait_status(store, job_id, {"failed"}, 10)
    assert "stopped" in job.error and str(job.pid) in job.error


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
