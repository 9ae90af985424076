"""The embedded job backend: a local worker process with a pool of job processes.

``python -m bnviz worker`` (without ``BNVIZ_BROKER_URL``) runs :class:`LocalWorker`: it claims
queued jobs from the store and runs each in its own process (``python -m bnviz.jobs.runner``),
at most ``BNVIZ_LOCAL_WORKERS`` at a time (default: the number of cores, at least 2, so that a
page's short job, a density map or a training, does not wait behind a long image experiment).
Submitting a job (from the page or the CLI) starts this worker when none runs
(:func:`ensure_local_worker`), detached in its own session, so it outlives a restart of the
web server; it exits after ``BNVIZ_WORKER_IDLE_SECONDS`` (default 600) with nothing to do.

One local worker per ``BNVIZ_HOME``: it holds an exclusive lock on
``$BNVIZ_HOME/jobs/worker.lock`` for its life (the kernel drops the lock when the process
dies, so a crashed worker never blocks the next one).

No job is lost: a job process that dies, or is still running when the worker is stopped
(SIGTERM: it is asked to stop at its next progress report, and killed after
STOP_GRACE_SECONDS), goes back to the queue (:meth:`JobStore.requeue`) and resumes from its
last checkpoint, at most ``BNVIZ_JOB_ATTEMPTS`` times. A store that cannot be written for a
while (a lock held by another process, a full disk) does not stop the worker: it says so on
stderr and tries again, with growing pauses.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import bnviz
from bnviz.config import bnviz_home, setting
from bnviz.records.store import HOST, JobStore, StoreError, open_store, pid_alive

__all__ = ["CANCEL_GRACE_SECONDS", "LocalWorker", "WorkerRunning", "ensure_local_worker",
           "local_worker_pid"]

#: A running job asked to cancel is killed if it has not stopped after this long.
CANCEL_GRACE_SECONDS = 10.0
POLL_SECONDS = 0.5
#: The worker beats for each job process it runs (the process beats too, once started).
HEARTBEAT_SECONDS = 2.0
#: A stopping worker gives its job processes this long to reach a progress report and go
#: back to the queue on their own (after it, they are killed and queued again all the same).
STOP_GRACE_SECONDS = 10.0


class WorkerRunning(RuntimeError):
    """Another local worker holds the lock."""


def _lock_path() -> Path:
    path = bnviz_home() / "jobs" / "worker.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def local_worker_pid() -> int | None:
    """The pid of the running local worker, or None when there is none."""
    with open(_lock_path(), "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            text = f.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(f, fcntl.LOCK_UN)
        return None


def _child_env() -> dict[str, str]:
    """The environment of a spawned process: ours, with bnviz importable from anywhere."""
    env = dict(os.environ)
    root = str(Path(bnviz.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


#: Set (to 1) where a supervisor runs the local worker (``bnviz serve``): the other processes
#: then start none, and a job queued meanwhile waits for the supervisor's worker.
MANAGED_ENV = "BNVIZ_WORKER_MANAGED"


def ensure_local_worker() -> int:
    """Start a detached local worker unless one runs or is starting; returns its pid.

    A worker takes its lock only once it has imported torch (seconds); meanwhile the pid of
    the one just started, kept in ``worker.spawned``, stands for it, so that the page's polls
    and ``jobs wait`` do not start more. A lock on ``spawn.lock`` serialises the check and the
    start across processes."""
    pid = local_worker_pid()
    if pid is not None:
        return pid
    if os.environ.get(MANAGED_ENV) == "1":
        return -1  # the supervisor (re)starts it
    jobs_dir = _lock_path().parent
    with open(jobs_dir / "spawn.lock", "a+") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        spawned = jobs_dir / "worker.spawned"
        text = spawned.read_text().strip() if spawned.exists() else ""
        if text.isdigit() and pid_alive(int(text)):
            return int(text)
        pid = local_worker_pid()
        if pid is not None:
            return pid
        log = open(jobs_dir / "worker.log", "ab")  # noqa: SIM115 (the child keeps it)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bnviz", "worker"], stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env=_child_env())
        finally:
            log.close()
        spawned.write_text(str(proc.pid))
        return proc.pid


class LocalWorker:
    """Claims queued jobs and runs each in a child process (see the module docstring)."""

    def __init__(self, store: JobStore | None = None, concurrency: int | None = None,
                 idle_exit: float | None = None):
        self.store = store or open_store()
        self.concurrency = max(1, int(concurrency or setting("BNVIZ_LOCAL_WORKERS")))
        self.idle_exit = (setting("BNVIZ_WORKER_IDLE_SECONDS") if idle_exit is None
                          else idle_exit)
        self.children: dict[str, subprocess.Popen] = {}
        self.cancel_seen: dict[str, float] = {}
        self.stopping = False
        self.last_beat = 0.0

    def _stop(self, *_: object) -> None:
        self.stopping = True

    def serve(self) -> None:
        lock = open(_lock_path(), "a+")  # noqa: SIM115 (held for the worker's life)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise WorkerRunning("a local worker is already running for this BNVIZ_HOME") from None
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        idle_since, pause = time.monotonic(), POLL_SECONDS
        try:
            while not self.stopping:
                try:
                    self.step()
                    pause = POLL_SECONDS
                except StoreError as exc:  # a locked or full store: wait, then try again
                    print(f"bnviz worker: {exc}; trying again in {pause:.1f} s",
                          file=sys.stderr, flush=True)
                    pause = min(pause * 2, 30.0)
                if self.children:
                    idle_since = time.monotonic()
                elif self.idle_exit > 0 and time.monotonic() - idle_since > self.idle_exit:
                    break
                time.sleep(pause)
        finally:
            self._shutdown()
            lock.close()

    def step(self) -> None:
        """One round: collect ended job processes, enforce cancels, reap dead jobs, start
        queued ones."""
        for job_id, proc in list(self.children.items()):
            if proc.poll() is None:
                continue
            del self.children[job_id]
            self.cancel_seen.pop(job_id, None)
            job = self.store.get(job_id)
            if job is not None and job.status == "running" and job.pid == proc.pid:
                # killed, or crashed hard: queued again (cancelled, if a cancel was asked)
                self.store.requeue(job_id, f"the job process ended with code "
                                   f"{proc.returncode} (killed or out of memory?)")
        for job_id, proc in self.children.items():
            job = self.store.get(job_id)
            if job is not None and job.ended:  # failed by a reader: stop spending on it
                _kill_group(proc)
                continue
            if job is None or not job.cancel_requested:
                continue
            first = self.cancel_seen.setdefault(job_id, time.monotonic())
            if time.monotonic() - first > CANCEL_GRACE_SECONDS:
                _kill_group(proc)
        now = time.monotonic()
        if now - self.last_beat >= HEARTBEAT_SECONDS:  # a child importing torch is alive too
            self.last_beat = now
            for job_id in self.children:
                self.store.update(job_id, heartbeat=time.time())
            self.store.beat_worker(f"local@{HOST}:{os.getpid()}", {
                "backend": "local", "host": HOST, "pid": os.getpid(),
                "running": len(self.children), "concurrency": self.concurrency})
        self.store.reap()  # what it queues again, this worker claims below
        while len(self.children) < self.concurrency:
            job_id = self.store.claim_next(os.getpid())
            if job_id is None:
                break
            proc = subprocess.Popen([sys.executable, "-m", "bnviz.jobs.runner", job_id],
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=_child_env())
            self.store.update(job_id, pid=proc.pid)
            self.children[job_id] = proc

    def _shutdown(self) -> None:
        """SIGTERM each job process (it goes back to the queue at its next progress report),
        kill those still running after STOP_GRACE_SECONDS, and queue again any job left
        running."""
        for proc in self.children.values():
            _kill_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for job_id, proc in self.children.items():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                proc.wait()
            try:
                self.store.requeue(job_id, "the local worker was stopped while this job ran")
            except StoreError as exc:  # the next reader's reap queues it again
                print(f"bnviz worker: {exc}", file=sys.stderr, flush=True)
        self.children.clear()


def _kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
