"""The job stores' semantics, against both stores: :class:`SQLiteStore` on a temporary file
and :class:`RedisStore` on the session's real redis-server (a unique key prefix per test):
creating and listing, exclusive claims (threads and processes), compare-and-set endings,
cancel requests, metrics and logs, the dedupe and the cap of the pages' starts
(:meth:`JobStore.create_unless`). What happens to jobs whose worker was lost, the queue's
order past 1000 jobs, per-client limits and a busy SQLite file: test_store_recovery.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from jobstores import open_store

from bnviz.records import job as job_module
from bnviz.records.sqlite_store import SQLiteStore
from bnviz.records.store import HOST, JobStore, QueueFull, job_key

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> JobStore:
    return open_store(request.param, request, tmp_path)


# --------------------------------------------------------------------------- store semantics


def test_create_get_and_list_newest_first(store: JobStore) -> None:
    ids = []
    for i in range(4):
        job = store.create("smart-init", {"width": 4, "seed": i, "eps": [0.1, 0.3]})
        ids.append(job.id)
        time.sleep(0.002)
    assert len(set(ids)) == 4
    got = store.get(ids[1])
    assert got is not None
    assert (got.id, got.type, got.status, got.params) == (
        ids[1], "smart-init", "queued", {"width": 4, "seed": 1, "eps": [0.1, 0.3]})
    assert got.progress == 0.0 and got.created > 0
    assert got.started is got.finished is got.pid is got.error is None
    assert got.cancel_requested is False and got.backend == "local" and got.rerun_of is None
    assert [j.id for j in store.list()] == ids[::-1]
    assert [j.id for j in store.list(2)] == ids[:1:-1]
    assert store.get("0123456789ab") is None
    rerun = store.create("smart-init", {}, backend="celery", rerun_of=ids[0])
    assert (store.get(rerun.id).backend, store.get(rerun.id).rerun_of) == ("celery", ids[0])


def test_claim_is_exclusive(store: JobStore) -> None:
    old = store.create("smart-init", {})
    time.sleep(0.002)
    new = store.create("smart-init", {})
    assert store.claim_next(111) == old.id  # the oldest queued job first
    assert store.claim(old.id, 222) is False
    job = store.get(old.id)
    assert (job.status, job.pid, job.host) == ("running", 111, HOST)
    assert job.started is not None and job.heartbeat is not None

    # many claimers at once on one queued job: exactly one wins
    barrier = threading.Barrier(8)
    wins: list[int] = []

    def claim(pid: int) -> None:
        barrier.wait()
        if store.claim(new.id, pid):
            wins.append(pid)

    threads = [threading.Thread(target=claim, args=(1000 + k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(wins) == 1
    assert store.get(new.id).pid == wins[0]
    assert store.claim_next(333) is None  # nothing queued is left


def test_finish_on_an_ended_job_does_nothing(store: JobStore) -> None:
    job = store.create("smart-init", {})
    assert store.claim(job.id, 1)
    store.update(job.id, progress=0.25)
    assert store.finish(job.id, "succeeded", summary={"arms": {"a": 1}})
    done = store.get(job.id)
    assert (done.status, done.progress, done.error, done.summary) == (
        "succeeded", 1.0, None, {"arms": {"a": 1}})
    assert done.finished is not None and done.finished >= done.started

    assert store.finish(job.id, "failed", "too late") is False
    assert store.finish(job.id, "cancelled") is False
    assert store.claim(job.id, 2) is False
    assert store.request_cancel(job.id) == "succeeded"
    assert store.get(job.id) == done  # not a field changed
    with pytest.raises(ValueError, match="end status"):
        store.finish(job.id, "running")

    queued = store.create("smart-init", {})  # a queued job may end directly (e.g. a bad broker)
    assert store.finish(queued.id, "failed", "cannot reach the broker")
    assert (store.get(queued.id).status, store.get(queued.id).error) == (
        "failed", "cannot reach the broker")
    assert store.claim(queued.id, 3) is False


def test_request_cancel(store: JobStore) -> None:
    queued = store.create("smart-init", {})
    assert store.request_cancel(queued.id) == "cancelled"  # a queued job ends at once
    job = store.get(queued.id)
    assert (job.status, job.cancel_requested, job.started) == ("cancelled", True, None)
    assert job.finished is not None
    assert store.claim(queued.id, 1) is False and store.claim_next(1) is None

    running = store.create("smart-init", {})
    assert store.claim(running.id, 2)
    assert store.request_cancel(running.id) == "running"  # its process is asked to stop
    job = store.get(running.id)
    assert (job.status, job.cancel_requested, job.finished) == ("running", True, None)
    assert store.finish(running.id, "cancelled", "cancelled by the user")
    assert store.get(running.id).status == "cancelled"

    with pytest.raises(KeyError):
        store.request_cancel("0123456789ab")


def test_metrics_and_logs_append_in_order(store: JobStore) -> None:
    job, other = store.create("smart-init", {}), store.create("smart-init", {})
    rows = [{"arm": arm, "epoch": e, "test_accuracy": e / 10, "train_loss": None}
            for e in range(1, 4) for arm in ("zero_bias", "bn_init")]
    for i, row in enumerate(rows):
        store.add_metric(job.id, row)
        store.add_log(job.id, f"line {i}")
    store.add_metric(other.id, {"arm": "x"})
    store.add_log(other.id, "other")
    assert store.metrics(job.id) == rows
    lines = [f"line {i}" for i in range(len(rows))]
    assert store.logs(job.id) == lines
    assert store.logs(job.id, tail=3) == lines[-3:]
    assert store.logs(job.id, tail=1) == lines[-1:]
    assert store.logs(job.id, tail=100) == lines
    assert store.logs(job.id, tail=0) == []
    assert store.metrics(other.id) == [{"arm": "x"}] and store.logs(other.id) == ["other"]
    assert store.metrics("0123456789ab") == [] and store.logs("0123456789ab") == []


@pytest.mark.parametrize("kind", [
    "sqlite", "redis"])
def test_logs_are_capped_at_max_log_lines(kind: str, request: pytest.FixtureRequest,
                                          tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_module, "MAX_LOG_LINES", 5)  # what both stores read
    store = open_store(kind, request, tmp_path)
    job = store.create("smart-init", {})
    for i in range(8):
        store.add_log(job.id, f"line {i}")
    assert store.logs(job.id, tail=1000) == [f"line {i}" for i in range(3, 8)]


def test_update_sets_fields_but_refuses_status_and_id(store: JobStore) -> None:
    job = store.create("smart-init", {})
    store.update(job.id, progress=0.5, device="cpu", pid=42, cancel_requested=True,
                 summary={"k": [1, 2]})
    got = store.get(job.id)
    assert (got.progress, got.device, got.pid, got.cancel_requested, got.summary) == (
        0.5, "cpu", 42, True, {"k": [1, 2]})
    for bad in ({"status": "succeeded"}, {"id": "0123456789ab"}, {"no_such_field": 1},
                {"status": "running", "progress": 0.9}):
        with pytest.raises(ValueError, match="cannot update"):
            store.update(job.id, **bad)
    assert store.get(job.id) == got
    assert [j.id for j in store.list()] == [job.id]


def test_create_unless_reuses_a_live_job_of_the_same_key(store: JobStore) -> None:
    """What the pages' starts rely on: the same type and parameters are one job while it is
    queued, running or succeeded (and no cancel was asked); otherwise a new one."""
    params = {"depth": 2, "eps": 1.0}
    first, new = store.create_unless("density", params)
    assert new and first.key == job_key("density", params) and first.status == "queued"
    assert store.get(first.id).key == first.key
    again, new = store.create_unless("density", dict(reversed(list(params.items()))))
    assert (again.id, new) == (first.id, False)
    other, new = store.create_unless("density", {**params, "depth": 3})
    assert new and other.id != first.id
    assert store.create_unless("landscape-2d", params)[0].id not in (first.id, other.id)
    assert store.claim(first.id, 1)
    assert store.create_unless("density", params) == (store.get(first.id), False)  # running
    assert store.finish(first.id, "succeeded")
    assert store.create_unless("density", params)[0].id == first.id  # succeeded
    # ... unless the caller says it is not to be reused (its result file is gone)
    redo, new = store.create_unless("density", params, skip=[first.id])
    assert new and redo.id != first.id
    assert store.create_unless("density", params)[0].id == redo.id  # the newest live one
    assert [j.id for j in store.find(first.key)] == [redo.id, first.id]
    # a job asked to stop, a failed and a cancelled one are never reused
    assert store.request_cancel(redo.id) == "cancelled"
    assert store.finish(store.create_unless("density", params, skip=[first.id])[0].id,
                        "failed", "boom")
    fresh, new = store.create_unless("density", params, skip=[first.id])
    assert new and fresh.id not in (first.id, redo.id)
    assert store.claim(fresh.id, 2)
    assert store.request_cancel(fresh.id) == "running"  # running, with a cancel asked
    assert store.create_unless("density", params, skip=[first.id])[0].id not in (
        first.id, redo.id, fresh.id)


def test_create_unless_refuses_past_the_limit(store: JobStore) -> None:
    """queued + running jobs of any type count; ended ones and reused ones do not."""
    a, _ = store.create_unless("density", {"seed": 1}, limit=2)
    b = store.create("smart-init", {})  # a CLI job counts too
    with pytest.raises(QueueFull, match="busy: 2 background computations") as info:
        store.create_unless("density", {"seed": 2}, limit=2)
    assert info.value.active == 2
    assert store.create_unless("density", {"seed": 1}, limit=2) == (a, False)  # reused
    assert len(store.list()) == 2  # a refusal stores nothing
    assert store.claim(a.id, 1)  # running still counts
    with pytest.raises(QueueFull):
        store.create_unless("density", {"seed": 2}, limit=2)
    assert store.finish(b.id, "cancelled")
    c, new = store.create_unless("density", {"seed": 2}, limit=2)
    assert new and c.status == "queued"
    assert store.create_unless("density", {"seed": 3})[1]  # no limit: never refused


def test_create_unless_from_8_threads_makes_one_job(store: JobStore) -> None:
    barrier = threading.Barrier(8)
    ids: list[str] = []

    def start() -> None:
        barrier.wait()
        ids.append(store.create_unless("density", {"seed": 5}, limit=8)[0].id)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(ids) == 8 and len(set(ids)) == 1
    assert [j.id for j in store.list()] == ids[:1]


def test_an_old_sqlite_store_gets_keys(tmp_path: Path) -> None:
    """A store written before jobs had keys is opened, and its jobs read, as before."""
    import sqlite3

    path = tmp_path / "jobs.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE jobs (
                id TEXT PRIMARY KEY, type TEXT NOT NULL, params TEXT NOT NULL,
                status TEXT NOT NULL, progress REAL NOT NULL DEFAULT 0, device TEXT,
                error TEXT, created REAL NOT NULL, started REAL, finished REAL,
                heartbeat REAL, host TEXT, pid INTEGER,
                cancel_requested INTEGER NOT NULL DEFAULT 0, backend TEXT NOT NULL,
                rerun_of TEXT, summary TEXT);
            INSERT INTO jobs (id, type, params, status, created, backend)
                VALUES ('0123456789ab', 'smart-init', '{}', 'succeeded', 1.0, 'local');""")
    db.close()
    store = SQLiteStore(path)
    old = store.get("0123456789ab")
    assert (old.status, old.key) == ("succeeded", None)
    assert store.create_unless("density", {})[1]


def test_claim_next_from_8_threads_claims_each_job_once(store: JobStore) -> None:
    ids = {store.create("smart-init", {"seed": i}).id for i in range(20)}
    barrier = threading.Barrier(8)
    claimed: dict[int, list[str]] = {k: [] for k in range(8)}
    errors: list[BaseException] = []

    def claimer(k: int) -> None:
        try:
            barrier.wait()
            while (job_id := store.claim_next(1000 + k)) is not None:
                claimed[k].append(job_id)
        except BaseException as exc:  # reported below, with the test's failure
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    got = [job_id for c in claimed.values() for job_id in c]
    assert sorted(got) == sorted(ids)  # every job, none twice
    for k, c in claimed.items():
        for job_id in c:
            job = store.get(job_id)
            assert (job.status, job.pid) == ("running", 1000 + k)


_CLAIMER = r"""
import json, os, sys, time
from bnviz.records.sqlite_store import SQLiteStore  # the store modules alone: no torch, fast
store = SQLiteStore(sys.argv[2])
print("ready", flush=True)
while not os.path.exists(sys.argv[3]):
    time.sleep(0.002)
got = []
while (job_id := store.claim_next(os.getpid())) is not None:
    got.append(job_id)
print(json.dumps(got), flush=True)
"""


def test_claim_next_from_4_processes_claims_each_sqlite_job_once(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    store = SQLiteStore(path)
    ids = {store.create("smart-init", {"seed": i}).id for i in range(20)}
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIMER, "-", str(path), str(go)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
             for _ in range(4)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        go.touch()
        results = {p.pid: json.loads(p.communicate(timeout=60)[0]) for p in procs}
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert all(p.returncode == 0 for p in procs)
    got = [job_id for c in results.values() for job_id in c]
    assert sorted(got) == sorted(ids)
    for pid, c in results.items():
        for job_id in c:
            assert (store.get(job_id).status, store.get(job_id).pid) == ("running", pid)
