"""The lecture's "export all" button: every step's slide, PNG and SVG with its caption, in one
zip (:mod:`bnviz.lecture.slides`), as a job of the project's one background mechanism
(:mod:`bnviz.jobs`, issue 42).

* **start** (the button): ``bnviz.jobs.start_job`` of the theme's slides. A job of the same
  theme and edition that succeeded (any web process, also before a restart) is reused: its
  result file is the zip, sent at once; nothing is drawn again. One queued or running is
  joined (three lecturers at once share one job). Else a new job starts on the job worker,
  refused at the jobs' cap (``BNVIZ_MAX_RUNS``) or the client's (``BNVIZ_JOBS_PER_CLIENT``)
  with one busy line and its retry time.
* **poll** (an interval, on while the job runs): the progress bar and the step being drawn;
  the zip once it succeeded; one line if it failed.
* The button is disabled while the export runs, so a click cannot start a second one: from
  the click on, in the browser (``exportStarted``, assets/lecture.js), before the server's
  first answer; the status says how many of the tour's steps are drawn.

Not :func:`callbacks.background.register_background`, which the other pages' runs use: its
start needs the jobs token where the server has one, and a lecturer downloading slides that
are already drawn must not need it (the job has two possible parameter values, so it cannot
be used to load the server); and its result store is kept per tab, which would download the
zip again each time the page is opened. Its helpers (the status line, percent) are used.
No cancel: the job is shared by every caller of the same theme.
"""

from __future__ import annotations

from dash import (
    ClientsideFunction,
    Input,
    Output,
    State,
    callback,
    clientside_callback,
    dcc,
    html,
    no_update,
)

from bnviz import jobs
from bnviz.lecture.slides import SLIDES_JOB_TYPE, THEMES, load_slides_zip, slides_edition
from bnviz.lecture.tour import TOUR
from bnviz.params.cost import slides_seconds
from bnviz.records.results import has_result
from bnviz.records.store import Job
from bnviz.server.api import RETRY_BUSY
from bnviz.service.clients import request_client
from bnviz.web.callbacks.background import one_line, percent
from bnviz.web.callbacks.lecture import ids

__all__ = ["FILENAME", "answer", "busy_line", "export_slides", "poll_export", "progress_line"]

FILENAME = "bnviz-lecture-slides.zip"
#: The callbacks' outputs, in order: the download, the status (line and bar), the job store,
#: the poll interval's disabled and the button's disabled.
_OUTPUTS = ((ids.DOWNLOAD, "data"), (ids.EXPORT_STATUS, "children"), (ids.EXPORT_JOB, "data"),
            (ids.EXPORT_POLL, "disabled"), (ids.EXPORT, "disabled"))


def _idle(status) -> tuple:
    """Nothing running: the line, polling off, the button enabled."""
    return no_update, status, None, True, False


def _progress(line: str, value: int) -> html.Div:
    return html.Div([html.Span(line), html.Progress(
        value=value, max=100, id=ids.EXPORT_PROGRESS, className="lecture-export-progress",
        title=f"{value}%")], role="status")


def answer(job: Job) -> tuple:
    """The page's outputs for the export's job: running (the bar; polling on, the button
    disabled), succeeded (the zip, and what it holds), or ended otherwise (one line)."""
    if job.status in ("queued", "running"):
        bar = _progress(progress_line(job), percent(job.progress))
        return no_update, bar, job.id, False, True
    if job.status == "succeeded":
        try:
            data = load_slides_zip(job.id)
        except (OSError, KeyError, ValueError):  # removed since: the next click draws again
            return _idle("slides: the stored zip is gone: press export again")
        return (dcc.send_bytes(data, FILENAME), f"slides: {len(TOUR)} steps, "
                f"{len(data) // 1024} kB", None, True, False)
    if job.status == "cancelled":
        return _idle("slides: the export was cancelled: press export again")
    return _idle(f"slides: the export failed: {one_line(job.error)}")


def progress_line(job: Job) -> str:
    """The steps drawn of the tour's (the job reports each step: slides.slide_files), and
    about how long the rest takes; a queued job waits for the worker (it may be starting)."""
    total = len(TOUR)
    done = min(total, max(0, round((job.progress or 0.0) * total)))
    if job.status == "queued":
        return f"slides: {done} of {total} steps drawn; waiting for the job worker..."
    left = slides_seconds(total) * (1 - done / total)
    return f"slides: {done} of {total} steps drawn (about {left:.0f} s left)"


def busy_line(exc: Exception) -> str:
    """A refused start as one line with when to try again (the jobs API's Retry-After for the
    same refusal)."""
    text = one_line(exc)
    if isinstance(exc, jobs.QueueFull | jobs.StoreError):  # ClientBusy too
        return f"slides: {text}; retry in about {RETRY_BUSY} s"
    return f"slides: {text}"  # DiskFull says what must happen first


@callback(*(Output(i, p, allow_duplicate=True) for i, p in _OUTPUTS),
          Input(ids.EXPORT, "n_clicks"), State(ids.THEME, "data"), prevent_initial_call=True)
def export_slides(clicks, theme):
    """Start (or join, or read) the export of the slides in the page's theme (a theme a
    crafted request sends is taken as light)."""
    if not isinstance(clicks, int) or isinstance(clicks, bool) or clicks < 1:
        return (no_update,) * len(_OUTPUTS)
    theme = theme if theme in THEMES else "light"
    params = {"theme": theme, "edition": slides_edition()}
    try:
        job = jobs.start_job(SLIDES_JOB_TYPE, params, client=request_client())
    except (ValueError, TypeError, jobs.StoreError) as exc:
        return _idle(busy_line(exc))
    if job.status == "succeeded" and not has_result(job.id):  # removed in between
        return _idle("slides: the stored zip is gone: press export again")
    return answer(job)


@callback(*(Output(i, p, allow_duplicate=True) for i, p in _OUTPUTS),
          Input(ids.EXPORT_POLL, "n_intervals"), State(ids.EXPORT_JOB, "data"),
          prevent_initial_call=True)
def poll_export(_n_intervals, job_id):
    """The export's job as the store has it, from any web process; anything in the store
    that is not the id of a slides job stops polling (a crafted value), never raises."""
    try:
        job = jobs.get_job(job_id)
    except ValueError:  # none, or a tampered store
        return _idle(no_update)
    except jobs.StoreError as exc:
        return _idle(busy_line(exc))
    if job is None or job.type != SLIDES_JOB_TYPE:
        return _idle("slides: the export's job is gone: press export again")
    return answer(job)


# The click itself disables the button and says the export starts, in the browser: the
# server's answer (the job started, joined or reused) can take seconds on a busy machine, and
# a lecturer saw 37 s of an enabled button and an empty status (issue 46, item 5).
clientside_callback(ClientsideFunction("lecture", "exportStarted"),
                    Output(ids.EXPORT, "disabled", allow_duplicate=True),
                    Output(ids.EXPORT_STATUS, "children", allow_duplicate=True),
                    Input(ids.EXPORT, "n_clicks"), prevent_initial_call=True)
