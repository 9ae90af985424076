"""Jobs page callbacks: submit, list with progress bars, open one (live curves and log),
cancel, re-run, overlay several. Every action goes through :mod:`bnviz.jobs`.

Submitting, cancelling and re-running need the jobs token when the server has one
(``BNVIZ_JOBS_TOKEN``, the page's token field; checked here, nothing is done without it), and
count against the client's allowance of queued and running jobs (its address, as
:func:`bnviz.service.clients.request_client` names it); reading is open."""

from __future__ import annotations

import time

import dash_bootstrap_components as dbc
from dash import ALL, Input, Output, State, callback, ctx, html, no_update

from bnviz import jobs
from bnviz.data.imagedata import data_dir
from bnviz.images.experiments import summarise
from bnviz.messages import for_page, log_for_page
from bnviz.params.jobs import JOB_OPTIONS
from bnviz.records.types import IMAGE_JOB_TYPES as JOB_TYPES
from bnviz.records.types import ParamError
from bnviz.service.clients import request_client, token_ok
from bnviz.web.callbacks.jobs import ids
from bnviz.web.callbacks.jobs.explanation import experiment_explanation
from bnviz.web.callbacks.jobs.figures import NO_JOB, NO_OVERLAY, job_figure, placeholder
from bnviz.web.callbacks.jobs.ids import progress_id

STATUS_COLOURS = {"queued": "secondary", "running": "primary", "succeeded": "success",
                  "failed": "danger", "cancelled": "warning"}
_PARAM_NAMES = [spec.name for spec in JOB_OPTIONS]


#: What the page says when the token field does not hold the server's token: empty, or
#: another text.
TOKEN_NEEDED = ("this server needs its jobs token to submit, cancel or re-run: enter it in "
                "the token field")
TOKEN_WRONG = ("the token field does not hold this server's jobs token (BNVIZ_JOBS_TOKEN): "
               "nothing was done")


def _token_refusal(token) -> str:
    """Why a write was refused: no token given, or one that is not the server's."""
    return TOKEN_WRONG if isinstance(token, str) and token.strip() else TOKEN_NEEDED


def _failure(exc: Exception) -> str:
    """The message a user sees for an action that failed."""
    if isinstance(exc, KeyError):
        return "no such job"
    return for_page(str(exc))


@callback(Output({"type": ids.PARAM_ROW, "name": ALL}, "style"), Output(ids.EXPLAIN, "children"),
          Input(ids.TYPE, "value"))
def show_type_params(job_type):
    """Only the parameters the chosen experiment uses, and what it is (the paper's claim and
    what our stored runs show)."""
    return ([None if job_type in spec.types else {"display": "none"} for spec in JOB_OPTIONS],
            experiment_explanation(job_type))


@callback(Output(ids.TOKEN_STORE, "data"), Input(ids.TOKEN, "value"),
          prevent_initial_call=True)
def keep_token(token):
    """The token field, kept for the browser tab: every page's background runs send it."""
    return token if isinstance(token, str) and len(token) <= 1000 else None


def _open(reply: tuple) -> tuple:
    """Add the job list to a reply that opens a job: the dropdown keeps a value only when it
    is among its options."""
    if reply[-1] is no_update:
        return (*reply, no_update)
    try:
        return (*reply, [_option(j) for j in jobs.list_jobs(100)])
    except jobs.StoreError:
        return (*reply, no_update)


@callback(Output(ids.MESSAGE, "children"), Output(ids.MESSAGE, "color"),
          Output(ids.MESSAGE, "is_open"), Output(ids.SELECTED, "value", allow_duplicate=True),
          Output(ids.SELECTED, "options", allow_duplicate=True),
          Input(ids.SUBMIT, "n_clicks"), State(ids.TYPE, "value"),
          State({"type": ids.PARAM, "name": ALL}, "value"), State(ids.TOKEN, "value"),
          prevent_initial_call=True)
def submit_and_open(n, job_type, values, token=None):
    return _open(submit(n, job_type, values, token))


def submit(_n, job_type, values, token=None):
    """Submit from the form: (message, colour, open, job to open). ``token``: the token
    field (needed when the server has a jobs token)."""
    if not token_ok(token):
        return _token_refusal(token), "danger", True, no_update
    if job_type not in JOB_TYPES:
        return "choose an experiment", "warning", True, no_update
    if not isinstance(values, list):
        return "the form is incomplete: reload the page", "warning", True, no_update
    spec = {s.name: s for s in JOB_OPTIONS}
    params = {name: value for name, value in zip(_PARAM_NAMES, values, strict=False)
              if job_type in spec[name].types and value not in (None, "")}
    try:
        job = jobs.submit_job(job_type, params, client=request_client())
    except (ParamError, ValueError, jobs.StoreError) as exc:
        return _failure(exc), "danger", True, no_update
    return f"submitted job {job.id}", "success", True, job.id


def _table(listed: list[jobs.Job]):
    if not listed:
        return html.P("No jobs yet: submit one on the left.", className="text-muted")
    head = html.Thead(html.Tr([html.Th(h) for h in ("job", "experiment", "data", "status",
                                                    "progress", "device", "time")]))
    rows = []
    for job in listed:
        pct = round(100 * job.progress, 1)
        seconds = job.seconds()
        rows.append(html.Tr([
            html.Td(html.Code(job.id)), html.Td(job.type),
            html.Td(f"{job.params.get('dataset', '')} · {job.params.get('arch', '')}"),
            html.Td(dbc.Badge(job.status, color=STATUS_COLOURS.get(job.status, "secondary"))),
            html.Td(dbc.Progress(id=progress_id(job.id), value=pct, label=f"{pct:g}%",
                                 color=STATUS_COLOURS.get(job.status, "secondary"),
                                 striped=job.status == "running",
                                 animated=job.status == "running",
                                 style={"height": "16px", "minWidth": "120px"}),
                    title=for_page(job.error or "")),
            html.Td(job.device or "-"),
            html.Td("-" if seconds is None else f"{seconds:.0f} s")]))
    return dbc.Table([head, html.Tbody(rows)], size="sm", hover=True, className="mb-0")


def _option(job: jobs.Job) -> dict:
    created = time.strftime("%H:%M:%S", time.localtime(job.created))
    return {"label": f"{job.id} · {job.type} · {job.params.get('dataset', '')} · {job.status}"
                     f" · {created}", "value": job.id}


@callback(Output(ids.TABLE, "children"), Output(ids.SELECTED, "options"),
          Output(ids.OVERLAY, "options"), Output(ids.BACKEND, "children"),
          Input(ids.POLL, "n_intervals"))
def refresh(_n):
    try:
        listed = jobs.list_jobs(100)
    except jobs.StoreError as exc:
        return dbc.Alert(for_page(str(exc)), color="danger"), [], [], ""
    options = [_option(j) for j in listed]
    where = ("Celery workers (BNVIZ_BROKER_URL)" if jobs.backend() == "celery" else
             "the local worker pool")
    return (_table(listed), options, options,
            f"Jobs run on {where}; image data from BNVIZ_DATA ({for_page(str(data_dir()))}).")


@callback(Output(ids.DETAIL, "children"), Output(ids.GRAPH, "figure"),
          Output(ids.LOG, "children"), Output(ids.SHOWN, "data"),
          Input(ids.POLL, "n_intervals"), Input(ids.SELECTED, "value"),
          State(ids.SHOWN, "data"))
def show_job(_n, job_id, shown):
    empty = placeholder(NO_JOB)
    if not job_id:
        return html.P("Open a job to see its curves and log.", className="text-muted"), \
            empty, "", None
    try:
        details = jobs.job_details(job_id)
    except (ValueError, jobs.StoreError) as exc:
        return dbc.Alert(for_page(str(exc)), color="danger"), empty, "", None
    if details is None:
        return dbc.Alert(f"no job {job_id}", color="warning"), empty, "", None
    key = [job_id, details["status"], round(details["progress"], 3), len(details["metrics"]),
           len(details["log"]), details["log"][-1] if details["log"] else ""]
    if key == shown:
        return no_update, no_update, no_update, no_update
    summary = details["summary"] or summarise(details["type"], details["metrics"])
    params = ", ".join(f"{k}={v}" for k, v in details["params"].items())
    seconds = details["seconds"]
    info = [
        html.Div([html.Code(details["id"]), " ", html.B(details["type"]), " ",
                  dbc.Badge(details["status"],
                            color=STATUS_COLOURS.get(details["status"], "secondary"))]),
        html.Div(params, className="small text-muted"),
        html.Div(f"device {details['device'] or '-'} · "
                 f"{'-' if seconds is None else f'{seconds:.1f} s'}"
                 + (f" · re-run of {details['rerun_of']}" if details["rerun_of"] else ""),
                 className="small"),
        dbc.Progress(value=round(100 * details["progress"], 1),
                     label=f"{100 * details['progress']:.0f}%", className="my-1",
                     style={"height": "14px"}),
    ]
    if details["error"] and details["status"] != "cancelled":
        info.append(dbc.Alert(for_page(details["error"]), color="danger",
                              className="py-1 small"))
    finals = [f"{arm}: {100 * v['final']:.2f}%" for arm, v in summary.get("arms", {}).items()
              if isinstance(v, dict) and v.get("final") is not None]
    if finals:
        info.append(html.Div("final test accuracy (mean over runs): " + " · ".join(finals),
                             className="small"))
    figure = job_figure([("", details["type"], summary)], f"{details['type']} on "
                        f"{details['params'].get('dataset')} ({details['id']})")
    return info, figure, "\n".join(log_for_page(details["log"][-60:])), key


@callback(Output(ids.MESSAGE, "children", allow_duplicate=True),
          Output(ids.MESSAGE, "color", allow_duplicate=True),
          Output(ids.MESSAGE, "is_open", allow_duplicate=True),
          Output(ids.SELECTED, "value", allow_duplicate=True),
          Output(ids.SELECTED, "options", allow_duplicate=True),
          Input(ids.CANCEL, "n_clicks"), Input(ids.RERUN, "n_clicks"),
          State(ids.SELECTED, "value"), State(ids.TOKEN, "value"), prevent_initial_call=True)
def act(_cancel, _rerun, job_id, token=None):
    return _open(job_action("cancel" if ctx.triggered_id == ids.CANCEL else "rerun", job_id,
                            token))


def job_action(action: str, job_id: str | None, token=None):
    """Cancel or re-run the open job: (message, colour, open, job to open). ``token``: the
    token field (needed when the server has a jobs token)."""
    if not job_id:
        return "open a job first", "warning", True, no_update
    if not token_ok(token):
        return _token_refusal(token), "danger", True, no_update
    try:
        if action == "cancel":
            status = jobs.cancel_job(job_id)
            text = {"cancelled": "cancelled", "running": "asked to stop"}.get(
                status, f"already {status}")
            return f"job {job_id}: {text}", "info", True, no_update
        job = jobs.rerun_job(job_id, client=request_client())
    except (KeyError, ValueError, jobs.StoreError) as exc:
        return _failure(exc), "danger", True, no_update
    return f"submitted job {job.id} (a re-run of {job_id})", "success", True, job.id


@callback(Output(ids.OVERLAY_GRAPH, "figure"), Input(ids.OVERLAY, "value"),
          Input(ids.POLL, "n_intervals"))
def overlay(job_ids, _n):
    curves = []
    for job_id in (job_ids if isinstance(job_ids, list) else [])[:8]:
        try:
            details = jobs.job_details(job_id, log_tail=0)
        except (ValueError, jobs.StoreError):
            continue
        if details is not None:
            curves.append((job_id, details["type"],
                           details["summary"] or summarise(details["type"],
                                                           details["metrics"])))
    if len({t == "concentration" for _, t, _ in curves}) > 1:  # one kind of axes at a time
        curves = [c for c in curves if c[1] != "concentration"]
    return job_figure(curves, "overlay") if curves else placeholder(NO_OVERLAY)
