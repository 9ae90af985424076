"""One way for a page to run a computation in the background: start, poll, cancel.

A page describes its run (:class:`BackgroundRun`: its component ids, the job type, how its
controls become the job's parameters, and what to say while it runs and when it is done) and
:func:`register_background` registers four callbacks for it:

* **start** (the page's button): ``bnviz.jobs.start_job``, which reuses the job of the same
  parameters (queued, running or done, also after a restart) or starts one on the job worker,
  refusing with "the server is busy" at ``BNVIZ_MAX_RUNS`` and counting against the client's
  allowance (``BNVIZ_JOBS_PER_CLIENT``, the request's address as
  :func:`bnviz.service.clients.request_client` names it); the job's id, with the tab's key to
  cancel it (``"<id>.<key>"``, :func:`bnviz.service.clients.cancel_key`), goes into the page's
  store and polling starts. A refusal is one line in the page's alert. Where the server has a
  jobs token (``BNVIZ_JOBS_TOKEN``), starting needs it: the jobs page's token field, kept for
  the browser tab in a store of every page (:data:`callbacks.jobs.ids.TOKEN_STORE`).
* **poll** (the interval): the job as the store has it, from any web process: the progress bar
  (and its label), a status line, and, once it succeeded, the page's result value (from which
  the page draws). The store's value comes from the client: anything that is not the id of a
  job of this page's type stops polling; it never raises.
* **cancel** (an optional button): the store's cancel flag, which the job's process sees at its
  next progress report, whichever web process asks; only with the jobs token where the
  server has one, else only with the key of the tab that started it (another tab, or a
  crafted request naming a job ``GET /api/jobs`` lists, cannot cancel someone's run).
* **resume**: the page's job and result stores are kept per browser tab (``layouts.common.
  KEPT``), so a page opened again (back from another page, a reload) polls its job again: a
  running job's progress goes on, a finished one's result is drawn again.

Dash's own background callbacks were not used: they keep their own queue and cache beside the
job store (a second mechanism), run in a process of the web server's machine, and neither
reuse a result across users and restarts nor count towards the jobs' cap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dash import Input, Output, State, callback, html, no_update

from bnviz import jobs
from bnviz.records.results import has_result
from bnviz.records.store import Job
from bnviz.service.clients import (
    cancel_key,
    cancel_key_ok,
    jobs_token,
    request_client,
    token_ok,
)
from bnviz.web.callbacks.jobs.ids import TOKEN_STORE

__all__ = ["BackgroundIds", "BackgroundRun", "job_id_of", "one_line", "percent",
           "register_background"]

#: A start refused for the token.
TOKEN_NEEDED = ("this server needs its jobs token to start a computation: enter it on the "
                "Jobs page (it is kept for this browser tab)")


@dataclass(frozen=True)
class BackgroundIds:
    """The components of a page's background run."""

    start: str  # the button that starts it
    job: str  # dcc.Store: the job's id
    poll: str  # dcc.Interval
    progress: str  # dbc.Progress
    status: str  # the status line
    message: str  # the page's alert (a refused start)
    result: tuple[str, str]  # (id, property) that gets the finished job's result value
    cancel: str | None = None  # a cancel button, if the page has one
    progress_label: bool = False  # the bar shows "42%" too


@dataclass(frozen=True)
class BackgroundRun:
    """A page's background run (see the module docstring)."""

    ids: BackgroundIds
    job_type: str
    controls: list[State]  # the start button's states, given to ``params``
    params: Callable[..., dict]  # controls -> the job's parameters (ValueError: a message)
    running: Callable[[Job], str]  # the status line while the job runs
    done: Callable[[Job], str]  # ... once it succeeded
    result: Callable[[Job], Any] = lambda job: job.id  # the result value of a finished job
    failed: str = "failed: "  # the status line of a failed job starts with this
    missing: str = "not found"  # ... of a job (or a result file) that is gone
    keep_message: bool = False  # a start leaves the page's alert as it is


def one_line(error: object) -> str:
    """An error as the page shows it: its first line."""
    text = str(error).strip()
    return text.splitlines()[0] if text else "an unknown error"


def percent(fraction: float) -> int:
    """A job's progress in whole percent, rounded down (100 only when it is done)."""
    return int(min(max(100.0 * fraction, 0.0), 100.0) + 1e-9)


def polling_off(job_id) -> bool:
    """The poll interval's ``disabled`` for the job store's value, also when a page opens
    again (back from another page, a reload) with a job kept in its store (per browser tab):
    polling goes on for a job id (a running job's progress goes on, a finished one's result
    is drawn again), stops for anything else (nothing kept, or a crafted value)."""
    return not (isinstance(job_id, str) and bool(job_id))


def job_id_of(value: object) -> str | None:
    """The job id of a page's job store (``"<id>.<key>"``, or an id alone), None for what
    is not one."""
    if not isinstance(value, str) or not value:
        return None
    return value.split(".", 1)[0]


def _may_cancel(value: object, token: object) -> bool:
    """The jobs token where the server has one, else the key of the tab that started it."""
    if jobs_token() is not None:
        return token_ok(token)
    job_id = job_id_of(value)
    return job_id is not None and "." in value and cancel_key_ok(job_id,
                                                                value.split(".", 1)[1])


def register_background(run: BackgroundRun) -> tuple[Callable, Callable, Callable | None]:
    """Register the start, poll and cancel callbacks of ``run``; returns them (tests and the
    page module call them by name)."""
    ids = run.ids
    shown = (no_update, no_update) if run.keep_message else ("", False)

    @callback(Output(ids.job, "data"), Output(ids.poll, "disabled", allow_duplicate=True),
              Output(ids.message, "children", allow_duplicate=True),
              Output(ids.message, "is_open", allow_duplicate=True),
              Input(ids.start, "n_clicks"), State(TOKEN_STORE, "data"), *run.controls,
              prevent_initial_call=True)
    def _start(n_clicks, token, *controls):
        return start(n_clicks, *controls, token=token)

    def start(_n_clicks, *controls, token=None):
        if not token_ok(token):
            return no_update, no_update, TOKEN_NEEDED, True
        try:
            job = jobs.start_job(run.job_type, run.params(*controls), client=request_client())
        except (ValueError, TypeError, jobs.StoreError) as exc:  # bad input, the cap, no store
            return no_update, no_update, one_line(exc), True
        return (f"{job.id}.{cancel_key(job.id)}", False, *shown)

    callback(Output(ids.poll, "disabled", allow_duplicate=True), Input(ids.job, "data"),
             prevent_initial_call="initial_duplicate")(polling_off)

    def answer(value, label, status, result, stop: bool) -> tuple:
        return ((value, label) if ids.progress_label else (value,)) + (status, result, stop)

    def ended(text: str) -> tuple:
        return answer(0, "", html.Span(text, className="text-danger"), no_update, True)

    @callback(Output(ids.progress, "value", allow_duplicate=True),
              *([Output(ids.progress, "label", allow_duplicate=True)]
                if ids.progress_label else []),
              Output(ids.status, "children", allow_duplicate=True),
              Output(ids.result[0], ids.result[1], allow_duplicate=True),
              Output(ids.poll, "disabled", allow_duplicate=True),
              Input(ids.poll, "n_intervals"), State(ids.job, "data"),
              prevent_initial_call=True)
    def poll(_n_intervals, job_value):
        try:
            job = jobs.get_job(job_id_of(job_value))
        except ValueError:  # none, or a tampered store
            return answer(no_update, no_update, no_update, no_update, True)
        except jobs.StoreError as exc:
            return ended(run.failed + one_line(exc))
        if job is None or job.type != run.job_type:
            return ended(run.missing)
        if job.status == "queued":
            return answer(0, "0%", "waiting for a worker...", no_update, False)
        if job.status == "running":
            value = percent(job.progress)
            return answer(value, f"{value}%", run.running(job), no_update, False)
        if job.status == "succeeded":
            if not has_result(job.id):  # its result file was removed
                return ended(run.missing)
            return answer(100, "100%", run.done(job), run.result(job), True)
        if job.status == "cancelled":
            return ended("cancelled")
        return ended(run.failed + one_line(job.error))

    if ids.cancel is None:
        return start, poll, None

    @callback(Output(ids.status, "children", allow_duplicate=True),
              Input(ids.cancel, "n_clicks"), State(ids.job, "data"), State(TOKEN_STORE, "data"),
              prevent_initial_call=True)
    def _cancel(n_clicks, job_value, token):
        return cancel(n_clicks, job_value, token=token)

    def cancel(_n_clicks, job_value, token=None):
        try:
            job = jobs.get_job(job_id_of(job_value))
            if job is None or job.ended or job.type != run.job_type:
                return "nothing to cancel"
            if not _may_cancel(job_value, token):
                return ("only the tab that started this run can cancel it" if jobs_token()
                        is None else TOKEN_NEEDED.replace("start a computation",
                                                          "cancel a run"))
            jobs.cancel_job(job.id)
        except (ValueError, KeyError, jobs.StoreError):
            return "nothing to cancel"
        return "cancelling..."

    return start, poll, cancel
