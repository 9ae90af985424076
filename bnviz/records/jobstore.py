"""The job store's interface and its status logic, written once for both stores.

:class:`JobStore` is what :mod:`bnviz.records.sqlite_store` and :mod:`bnviz.records.redis_store`
implement (a few primitives: insert, compare-and-set, read); everything that decides a job's
status is here: compare-and-set transitions (queued -> running -> succeeded | failed |
cancelled), claiming the oldest queued job, dedupe by key with the cap on queued and running
jobs (:meth:`JobStore.create_unless`), cancels, and :meth:`JobStore.reap` (a running job whose
process died or whose heartbeat stopped is queued again, at most ``BNVIZ_JOB_ATTEMPTS``
starts).  Which store a process uses is chosen in :mod:`bnviz.records.store`, the factory that
imports both; the stores import this module, never the factory (no import cycle).
"""

from __future__ import annotations

import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from bnviz.config import setting
from bnviz.records.job import (
    ENDED,
    HOST,
    ClientBusy,
    Job,
    QueueFull,
    job_key,
    pid_alive,
    stale_seconds,
)

__all__ = ["JobStore", "max_attempts"]


class JobStore(ABC):
    """The operations every store has; the status logic lives here once."""

    url: str

    # -- primitives a store implements
    @abstractmethod
    def _insert(self, job: Job) -> None: ...

    @abstractmethod
    def _insert_unless(self, job: Job, skip: tuple[str, ...], limit: int | None,
                       reuse: bool = True, client_limit: int | None = None
                       ) -> tuple[str, int, int]:
        """Atomically: when ``reuse``, the id of the newest job with ``job.key`` whose status
        is in REUSABLE, with no cancel asked and not in ``skip``, and -1, -1; else ("", the
        number of ACTIVE jobs, the number of ACTIVE jobs of ``job.client``) when the first is
        ``limit`` or more or the second ``client_limit`` or more (None: no limit; jobs without
        a client count for no client); else insert ``job`` and return (job.id, both counts)."""

    @abstractmethod
    def get(self, job_id: str) -> Job | None: ...

    @abstractmethod
    def list(self, limit: int = 200) -> list[Job]: ...

    @abstractmethod
    def find(self, key: str, limit: int = 20) -> list[Job]:
        """The jobs with this key, newest first."""

    @abstractmethod
    def with_status(self, status: str, limit: int | None = None) -> list[Job]:
        """The jobs of one status, oldest first, however many jobs the store holds."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """How many jobs have each status (every status of STATUSES is a key)."""

    @abstractmethod
    def _cas(self, job_id: str, allowed: tuple[str, ...], status: str,
             values: dict[str, Any]) -> bool:
        """Set status and values if the job's status is in ``allowed``; atomically."""

    @abstractmethod
    def update(self, job_id: str, **values: Any) -> None:
        """Set fields of an existing job (progress, heartbeat, device, pid, ...)."""

    @abstractmethod
    def add_metric(self, job_id: str, row: dict[str, Any]) -> None: ...

    @abstractmethod
    def metrics(self, job_id: str) -> list[dict[str, Any]]: ...

    @abstractmethod
    def truncate_metrics(self, job_id: str, keep: int) -> None:
        """Keep only the first ``keep`` metric rows (a job resumed from a checkpoint drops
        the rows written after it, which it writes again)."""

    @abstractmethod
    def add_log(self, job_id: str, line: str) -> None: ...

    @abstractmethod
    def logs(self, job_id: str, tail: int = 200) -> list[str]: ...

    @abstractmethod
    def ping(self) -> bool: ...

    @abstractmethod
    def beat_worker(self, name: str, info: dict[str, Any]) -> None:
        """A worker says it is alive (every few seconds): ``info`` with the time."""

    @abstractmethod
    def workers(self) -> dict[str, dict[str, Any]]:
        """Each worker's last beat: name -> its info, with ``time`` (Unix seconds)."""

    # -- the status logic
    @staticmethod
    def _new(job_type: str, params: dict[str, Any], backend: str, rerun_of: str | None,
             key: str | None, client: str | None = None) -> Job:
        return Job(uuid.uuid4().hex[:12], job_type, params, created=time.time(),
                   backend=backend, rerun_of=rerun_of, key=key, client=client)

    def create(self, job_type: str, params: dict[str, Any], backend: str = "local",
               rerun_of: str | None = None, key: str | None = None,
               client: str | None = None, client_limit: int | None = None) -> Job:
        """A new queued job; ClientBusy when ``client`` has ``client_limit`` jobs active."""
        job = self._new(job_type, params, backend, rerun_of, key, client)
        if client is None or client_limit is None:
            self._insert(job)
            return job
        found, _, mine = self._insert_unless(job, (), None, False, client_limit)
        if not found:
            raise ClientBusy(mine)
        return job

    def create_unless(self, job_type: str, params: dict[str, Any], backend: str = "local",
                      limit: int | None = None, skip: Iterable[str] = (),
                      client: str | None = None, client_limit: int | None = None
                      ) -> tuple[Job, bool]:
        """The live job of the same type and parameters (see :class:`JobStore._insert_unless`;
        ``skip``: jobs not to reuse, e.g. succeeded ones whose result file is gone) and False,
        or a new queued job and True; QueueFull when ``limit`` jobs are active already,
        ClientBusy when ``client`` has ``client_limit``."""
        job = self._new(job_type, params, backend, None, job_key(job_type, params), client)
        found, active, mine = self._insert_unless(job, tuple(skip), limit, True,
                                                  client_limit if client else None)
        if not found:
            if limit is not None and active >= limit:
                raise QueueFull(active)
            raise ClientBusy(mine)
        if found == job.id:
            return job, True
        existing = self.get(found)
        if existing is None:  # deleted in between (by hand): make a new one after all
            return self.create_unless(job_type, params, backend, limit, skip, client,
                                      client_limit)
        return existing, False

    def claim(self, job_id: str, pid: int) -> bool:
        """queued -> running, for the process ``pid`` of this host (one more attempt)."""
        job = self.get(job_id)
        if job is None or job.status != "queued":
            return False
        now = time.time()
        return self._cas(job_id, ("queued",), "running",
                         {"started": now, "heartbeat": now, "host": HOST, "pid": pid,
                          "attempts": job.attempts + 1})

    def claim_next(self, pid: int) -> str | None:
        """Claim the oldest queued job, if any (however many jobs the store holds)."""
        for job in self.with_status("queued", 50):
            if not job.cancel_requested and self.claim(job.id, pid):
                return job.id
        return None

    def finish(self, job_id: str, status: str, error: str | None = None,
               summary: dict[str, Any] | None = None) -> bool:
        """running (or queued) -> an ended status; an ended job is never changed."""
        if status not in ENDED:
            raise ValueError(f"not an end status: {status}")
        values: dict[str, Any] = {"finished": time.time(), "error": error}
        if status == "succeeded":
            values["progress"] = 1.0
        if summary is not None:
            values["summary"] = summary
        return self._cas(job_id, ("queued", "running"), status, values)

    def requeue(self, job_id: str, why: str) -> str | None:
        """A running job whose worker was lost or stopped goes back to the queue, to resume
        from its last checkpoint (at least once delivery), unless it has been started
        ``BNVIZ_JOB_ATTEMPTS`` times already (then it fails) or a cancel was asked (then it
        is cancelled). Returns the job's new status, or None when it was not running."""
        job = self.get(job_id)
        if job is None or job.status != "running":
            return None
        if job.cancel_requested:
            return "cancelled" if self.finish(job_id, "cancelled", "cancelled") else None
        if job.attempts >= max_attempts():
            times = "once" if job.attempts == 1 else f"{job.attempts} times"
            message = (f"{why}; the job was started {times} and lost its worker each time, "
                       "so it is not retried: re-run it")
            return "failed" if self.finish(job_id, "failed", message) else None
        if not self._cas(job_id, ("running",), "queued",
                         {"pid": None, "host": None, "heartbeat": None}):
            return None
        self.add_log(job_id, f"{why}: queued again (attempt {job.attempts} of "
                     f"{max_attempts()}), to resume from its last checkpoint")
        return "queued"

    def request_cancel(self, job_id: str) -> str:
        """Cancel: a queued job ends at once; a running job is asked to stop (its process
        checks between mini-batches) and is marked cancelled when it does. Returns the job's
        status after the request."""
        if self._cas(job_id, ("queued",), "cancelled",
                     {"finished": time.time(), "cancel_requested": True}):
            return "cancelled"
        job = self.get(job_id)
        if job is None:
            raise KeyError(job_id)
        if job.status == "running":
            self.update(job_id, cancel_requested=True)
        return job.status

    def reap(self, stale: float | None = None) -> list[str]:
        """Running jobs whose process is gone (same host) or whose heartbeat is older than
        ``stale`` seconds lost their worker: each is queued again (:meth:`requeue`; failed
        after its last attempt, cancelled if a cancel was asked). Returns the ids queued
        again, for the caller to hand to a worker."""
        stale = stale_seconds() if stale is None else stale
        now, requeued = time.time(), []
        for job in self.with_status("running"):
            dead = job.host == HOST and job.pid is not None and not pid_alive(job.pid)
            silent = now - (job.heartbeat or job.started or job.created) > stale
            if not (dead or silent):
                continue
            # the job's log is public (the jobs page, GET /api/jobs/<id>): no host, no pid
            why = ("its process ended" if dead else
                   f"no heartbeat for {now - (job.heartbeat or now):.0f} s")
            if self.requeue(job.id, f"the worker running this job stopped ({why})") == "queued":
                requeued.append(job.id)
        return requeued


def max_attempts() -> int:
    """``BNVIZ_JOB_ATTEMPTS``: how many times a job is started before a lost worker fails it."""
    return int(setting("BNVIZ_JOB_ATTEMPTS"))
