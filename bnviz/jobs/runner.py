"""Run one job in this process, reporting to the store.

``python -m bnviz.jobs.runner JOB_ID`` is what the local worker starts for each job (a process
per job: cancelling or a crash never takes the worker down); a Celery task calls
:func:`run_job` directly. While the job runs, a thread writes a heartbeat every
:data:`HEARTBEAT_SECONDS`, so a reader can tell a long epoch from a dead process.

A job with ``gpus`` > 1 trains with torch DDP: one process per GPU started here the way
torchrun does (meeting through a file of their own, NCCL on cuda), each taking its share of every
mini-batch; rank 0 evaluates and reports. ``BNVIZ_DDP_CPU=1`` runs the same code in CPU
processes with the gloo backend (how the DDP path is tested on machines without GPUs).

No job is lost to a stopped or lost worker: SIGTERM (a deploy, ``docker stop``, the local
worker stopping) makes the job's next progress report raise
:class:`~bnviz.records.types.Interrupted`, and the job goes back to the queue
(:meth:`JobStore.requeue`); a job whose process died is queued again by the reaper. Either
way the next worker resumes it from its last checkpoint (``ctx.checkpoint``, a torch file in
``$BNVIZ_HOME/checkpoints``; the metric rows written after it are dropped and written
again). A process that finds its job claimed by a later attempt (its heartbeat had stopped
and the reaper gave the job away) stops without touching it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from bnviz.data.imagedata import DataError
from bnviz.device import pick_device
from bnviz.jobs.celery_app import PART_TASK_NAME, broker_url, celery_app
from bnviz.jobs.registry import get_job_type
from bnviz.records.results import checkpoint_path, write_network, write_result
from bnviz.records.store import HOST, JobStore, StoreError, open_store
from bnviz.records.types import Cancelled, DistInfo, Interrupted, ParamError

__all__ = ["CANCEL_CHECK_SECONDS", "HEARTBEAT_SECONDS", "PROGRESS_SECONDS", "STOPPING",
           "StoreContext", "run_job"]

HEARTBEAT_SECONDS = 2.0
#: A job's progress is written at most this often (and at 100 %).
PROGRESS_SECONDS = 0.5
#: A job looks at its cancel flag at most this often (a store read).
CANCEL_CHECK_SECONDS = 1.0
#: Set when this process is asked to stop (SIGTERM; Celery's warm shutdown): the job's next
#: progress report raises Interrupted.
STOPPING = threading.Event()


class Superseded(Exception):
    """The store gave this job to a later attempt (this process's heartbeat had stopped)."""


class StoreContext:
    """A :class:`~bnviz.records.types.JobContext` that writes to the store: progress at most every
    PROGRESS_SECONDS, a look at the cancel flag at most every CANCEL_CHECK_SECONDS (or at every
    call, for DDP ranks, which must stop at the same step), the result to the job's file."""

    def __init__(self, store: JobStore, job_id: str, device: torch.device, report: bool = True,
                 check_every: float | None = None, attempt: int | None = None):
        self.store, self.job_id, self.device, self.report = store, job_id, device, report
        self.check_every = CANCEL_CHECK_SECONDS if check_every is None else check_every
        self.attempt = attempt
        self._last_progress = self._last_check = -float("inf")

    def progress(self, fraction: float) -> None:
        if STOPPING.is_set():
            raise Interrupted
        now = time.monotonic()
        if now - self._last_check >= self.check_every:
            self._last_check = now
            job = self.store.get(self.job_id)
            if job is None or job.cancel_requested or job.ended:  # ended: failed by a reaper
                raise Cancelled
            if self.attempt is not None and (job.status != "running" or
                                             job.attempts != self.attempt):
                raise Superseded
        if self.report and (now - self._last_progress >= PROGRESS_SECONDS or fraction >= 1.0):
            self.store.update(self.job_id, progress=float(min(max(fraction, 0.0), 1.0)))
            self._last_progress = now

    def checkpoint(self, state: dict[str, Any]) -> None:
        """Save ``state`` and the number of metric rows written so far, atomically (rank 0)."""
        if not self.report:
            return
        path = checkpoint_path(self.job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        try:
            torch.save({"rows": len(self.store.metrics(self.job_id)), "state": state}, tmp)
            tmp.replace(path)
        finally:
            tmp.unlink(missing_ok=True)

    def restore(self) -> dict[str, Any] | None:
        """The last checkpoint's state (None: start afresh); drops the metric rows written
        after it (rank 0), which the resumed job writes again."""
        path = checkpoint_path(self.job_id)
        try:
            saved = torch.load(path, map_location=self.device, weights_only=True)
        except FileNotFoundError:
            return None
        except Exception as exc:  # a torn or foreign file: start afresh, and say so
            self.log(f"the checkpoint could not be read ({type(exc).__name__}): starting afresh")
            return None
        if self.report:
            self.store.truncate_metrics(self.job_id, int(saved["rows"]))
            self.log(f"resumed from the checkpoint of {time.ctime(path.stat().st_mtime)}")
        return saved["state"]

    def log(self, line: str) -> None:
        if self.report:
            self.store.add_log(self.job_id, line)

    def metric(self, row: dict[str, Any]) -> None:
        if self.report:
            self.store.add_metric(self.job_id, row)

    def save_result(self, write: Callable[[Any], None]) -> None:
        if self.report:
            write_result(self.job_id, write)

    def save_network(self, name: str, write: Callable[[Any], None]) -> None:
        if self.report:
            write_network(self.job_id, name, write)

    def fan_out(self, parts: list[str]) -> bool:
        """Hand ``parts`` of this job to the other workers, one task each (the job type's
        part runner: :data:`bnviz.jobs.registry.PART_RUNNERS`), where the job runs on
        Celery; False on the local backend (the job does its parts itself)."""
        job = self.store.get(self.job_id)
        url = broker_url()
        if job is None or job.backend != "celery" or url is None:
            return False
        app = celery_app(url)
        for part in parts:
            app.send_task(PART_TASK_NAME, args=[self.job_id, part], queue="bnviz")
        self.log(f"{len(parts)} parts handed to the workers")
        return True


class _Heartbeat(threading.Thread):
    def __init__(self, store: JobStore, job_id: str):
        super().__init__(daemon=True, name=f"heartbeat-{job_id}")
        self.store, self.job_id, self.stop = store, job_id, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(HEARTBEAT_SECONDS):
            try:
                self.store.update(self.job_id, heartbeat=time.time())
            except StoreError:
                pass  # a store hiccup: the next beat tries again


def _ddp_rank(rank: int, world: int, rendezvous: str, job_id: str, url: str, job_type: str,
              params: dict, device_type: str) -> None:
    """One DDP process. The processes meet through a file of their own (``rendezvous``),
    not a TCP port: a port found free and released before rank 0 bound it could be taken by
    another process meanwhile (a test of the suite failed so, once in four runs)."""
    import torch.distributed as dist

    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1 if device_type == "cpu" else torch.get_num_threads())
    device = torch.device(f"cuda:{rank}") if device_type == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    try:
        ctx = StoreContext(open_store(url), job_id, device, report=rank == 0, check_every=0.0)
        get_job_type(job_type).run(params, ctx, DistInfo(rank, world))
    finally:
        dist.destroy_process_group()


def _run_ddp(store: JobStore, job_id: str, job_type: str, params: dict,
             device: torch.device) -> dict[str, Any]:
    world = params["gpus"]
    if device.type == "cuda":
        have = torch.cuda.device_count()
        if have < world:
            raise ValueError(f"--gpus {world}: this worker has {have} GPU(s)")
    elif os.environ.get("BNVIZ_DDP_CPU") != "1":
        raise ValueError(f"--gpus {world} needs a cuda worker with {world} GPUs (this one runs "
                         "on the CPU; BNVIZ_DDP_CPU=1 runs CPU processes with gloo instead)")
    import torch.multiprocessing as mp

    store.add_log(job_id, f"DDP: {world} processes ({device.type})")
    t0 = time.perf_counter()
    meeting = tempfile.mkdtemp(prefix="bnviz-ddp-")
    try:
        mp.spawn(_ddp_rank, args=(world, os.path.join(meeting, "rendezvous"), job_id,
                                  store.url, job_type, params, device.type),
                 nprocs=world, join=True)
    except mp.ProcessRaisedException as exc:
        job = store.get(job_id)
        if job is not None and job.cancel_requested:
            raise Cancelled from None
        last = str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
        raise RuntimeError(f"a DDP process failed: {last}") from None
    finally:
        shutil.rmtree(meeting, ignore_errors=True)
    return {"seconds": time.perf_counter() - t0, "world_size": world}


def _remove_checkpoint(job_id: str) -> None:
    Path(checkpoint_path(job_id)).unlink(missing_ok=True)


def run_job(job_id: str, store: JobStore | None = None, claim: bool = True) -> str:
    """Run a job to its end in this process; returns its final status ("queued" when the
    worker is stopping and the job went back to the queue). ``claim=False`` when the
    caller (the local worker) has already claimed it."""
    from bnviz.service.kernel_loading import start_kernel_loading

    # in the process that computes (a runner process, a Celery pool child: after any fork),
    # the partitions a job draws cut with the vectorised path until the kernels are loaded
    start_kernel_loading()
    store = store or open_store()
    job = store.get(job_id)
    if job is None:
        raise KeyError(f"no job {job_id}")
    if claim and not store.claim(job_id, os.getpid()):
        return job.status  # cancelled before it started, or another worker has it
    job = store.get(job_id)
    if job is None or job.status != "running":
        return job.status if job else "failed"
    store.update(job_id, pid=os.getpid(), host=HOST, heartbeat=time.time())
    beat = _Heartbeat(store, job_id)
    beat.start()
    try:
        spec = get_job_type(job.type)
        params = spec.check(job.params)
        device = pick_device()
        store.update(job_id, device=str(device))
        if params.get("gpus", 1) > 1:
            extra = _run_ddp(store, job_id, job.type, params, device)
        else:
            extra = spec.run(params, StoreContext(store, job_id, device, attempt=job.attempts),
                             DistInfo())
        summary = {**spec.summarise(store.metrics(job_id)), **extra}
        store.finish(job_id, "succeeded", summary=summary)
    except Superseded:
        return "superseded"  # a later attempt owns the job now: touch nothing
    except Interrupted:
        store.requeue(job_id, "the worker was stopped (a deploy or a restart)")
    except Cancelled:
        store.add_log(job_id, "cancelled")
        store.finish(job_id, "cancelled", "cancelled by the user")
    except (DataError, ParamError) as exc:
        store.add_log(job_id, f"error: {exc}")
        store.finish(job_id, "failed", str(exc))
    except Exception as exc:  # the job failed: the store says why, the worker goes on
        store.add_log(job_id, traceback.format_exc())
        message = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, torch.OutOfMemoryError):
            message = "out of memory: lower batch_size, width or image_size"
        store.finish(job_id, "failed", message)
    finally:
        beat.stop.set()
    final = store.get(job_id)
    if final is not None and final.ended:
        _remove_checkpoint(job_id)
    return final.status if final else "failed"


def _stop_on_sigterm() -> None:
    """SIGTERM asks the job to stop at its next progress report (then it is queued again);
    a second SIGTERM, or SIGKILL, ends the process at once."""

    def handler(signum: int, _frame: object) -> None:
        if STOPPING.is_set():
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        STOPPING.set()

    signal.signal(signal.SIGTERM, handler)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m bnviz.jobs.runner JOB_ID", file=sys.stderr)
        return 2
    _stop_on_sigterm()
    status = run_job(argv[0], claim=False)
    return 0 if status == "succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
