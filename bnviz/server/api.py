"""The jobs' JSON HTTP API: submit, list, show and cancel the image experiments over HTTP, as
``bnviz jobs`` does on the server's command line.

    POST   /api/jobs          {"type": "smart-init", "params": {...}}  -> 201 {"id", "status"}
    GET    /api/jobs          ?limit=1..1000 (100) &status=queued|running|...  -> {"jobs": [...]}
    GET    /api/jobs/<id>     ?log=0..5000 (200)  -> the job, its metrics and its log's tail
    DELETE /api/jobs/<id>     -> {"id", "status"} (cancel: a running job stops at its next step)

(The app also serves ``POST /api/training/frame``, one frame of the explorer's live training
for the page's player: callbacks.explorer.training; this module answers its other methods.)

The types and parameters are those of ``bnviz jobs submit`` (the image experiments), checked
by the same parameter layer (a bad one: 400 with its one-line message, the flag named). When
``BNVIZ_JOBS_TOKEN`` is set, POST and DELETE need ``Authorization: Bearer <token>`` (401
without it); reading is open. A client (:func:`bnviz.service.clients.client_id` of its
address) may have ``BNVIZ_JOBS_PER_CLIENT`` jobs queued or running (429 past it).

What a client sends never gets a 5xx, an HTML page or a traceback: every answer under
``/api/`` is JSON, an error is ``{"error": "one line"}``. 503 is kept for the server's own
conditions (a nearly full disk, the job store out of reach), each with ``Retry-After``.
Bodies over 64 kB are refused with 413 before they are read, by the request guard in front
(bnviz.service.guard). Readers see what :meth:`bnviz.records.job.Job.public` shows (no host, pid,
client or key) and the error and log as the jobs page shows them (:mod:`bnviz.messages`).
"""

from __future__ import annotations

import math
from typing import Any

from flask import Blueprint, Flask, Response, request
from werkzeug.exceptions import HTTPException, InternalServerError

from bnviz import jobs
from bnviz.messages import Refused, brief, for_page, log_for_page
from bnviz.records.store import STATUSES, Job, open_store
from bnviz.records.types import IMAGE_JOB_TYPES
from bnviz.server.answers import json_answer, refusal
from bnviz.service.clients import client_id, jobs_token, token_ok
from bnviz.service.guard import strict_json

__all__ = ["PREFIX", "add_jobs_api", "blueprint", "finite", "strict_json"]

PREFIX = "/api"
#: GET /api/jobs: how many jobs at most (default, highest); GET /api/jobs/<id>: log lines.
DEFAULT_LIMIT, MAX_LIMIT = 100, 1000
DEFAULT_LOG, MAX_LOG = 200, 5000
#: Retry-After (seconds): a client at its limit or a busy server, a full disk, no store.
RETRY_BUSY, RETRY_DISK, RETRY_STORE = 30, 300, 30
#: The fields of a submission.
SUBMIT_FIELDS = ("type", "params")

blueprint = Blueprint("jobs_api", __name__, url_prefix=PREFIX)


class ApiError(Refused):
    """An answer other than success: status, one line, extra headers."""


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return refusal(Refused(status, message, headers))


@blueprint.errorhandler(ApiError)
def _api_error(exc: ApiError) -> Response:
    return refusal(exc)


def finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such a float (a diverged loss) is sent as null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def _public(job: Job) -> dict[str, Any]:
    out = finite(job.public())
    out["error"] = for_page(out["error"]) if out.get("error") else out.get("error")
    return out


def _require_token() -> None:
    """401 unless the request carries the jobs token (when one is set)."""
    if jobs_token() is None:
        return
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise ApiError(401, "this server needs a token to submit or cancel jobs: send "
                       "Authorization: Bearer <token>",
                       {"WWW-Authenticate": 'Bearer realm="bnviz"'})
    if not token_ok(given):
        raise ApiError(401, "the token is not this server's",
                       {"WWW-Authenticate": 'Bearer realm="bnviz", error="invalid_token"'})


def _body() -> dict[str, Any]:
    """The request's JSON object (415 for another content type, 400 for anything else)."""
    if not request.is_json:
        raise ApiError(415, "send the job as JSON (Content-Type: application/json)")
    try:
        body = strict_json(request.get_data(cache=False))
    except ValueError:
        raise ApiError(400, "the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"the body must be a JSON object {{\"type\": ..., \"params\": "
                       f"{{...}}}}, got {brief(body)}")
    unknown = sorted(k for k in body if k not in SUBMIT_FIELDS)
    if unknown:
        raise ApiError(400, f"unknown field {brief(unknown[0])}: a job is "
                       "{\"type\": ..., \"params\": {...}}")
    return body


def _busy(exc: Exception) -> ApiError:
    """The job system's exceptions (bnviz.records' and bnviz.service's, which bnviz.jobs
    re-exports) that are the server's state, not the request's fault."""
    if isinstance(exc, jobs.QueueFull):  # ClientBusy too
        return ApiError(429, str(exc), {"Retry-After": str(RETRY_BUSY)})
    if isinstance(exc, jobs.DiskFull):
        return ApiError(503, str(exc), {"Retry-After": str(RETRY_DISK)})
    return ApiError(503, for_page(str(exc)), {"Retry-After": str(RETRY_STORE)})


def _number(name: str, default: int, lo: int, hi: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        raise ApiError(400, f"{name}: a whole number from {lo} to {hi}, got {brief(raw)}")
    return value


#: The methods of each route (an OPTIONS request and a 405 name them in Allow).
_ALLOWED = {"jobs": "GET, HEAD, OPTIONS, POST", "job": "DELETE, GET, HEAD, OPTIONS",
            "training": "OPTIONS, POST"}
_ANY = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _route_of(path: str) -> str | None:
    """Which route of the API a path is ("jobs", "job", "training": the explorer's live
    training frames, registered by the app: callbacks.explorer.training), None for no
    route."""
    parts = path.split("/")[2:]  # without "", "api"
    if parts == ["jobs"]:
        return "jobs"
    if parts == ["training", "frame"]:
        return "training"
    if len(parts) == 2 and parts[0] == "jobs" and parts[1]:
        return "job"
    return None


def _options() -> Response:
    response = Response(status=204)
    response.headers.remove("Content-Type")  # no body
    response.headers["Allow"] = _ALLOWED[_route_of(request.path) or "jobs"]
    return response


@blueprint.route("/jobs", methods=["GET", "POST", "OPTIONS"], provide_automatic_options=False)
def jobs_collection() -> Response:
    if request.method == "OPTIONS":
        return _options()
    return _submit() if request.method == "POST" else _list()


def _submit() -> Response:
    _require_token()
    body = _body()
    job_type, params = body.get("type"), body.get("params", {})
    if job_type not in IMAGE_JOB_TYPES:
        raise ApiError(400, f"{'missing' if job_type is None else 'unknown'} job type"
                       f"{'' if job_type is None else ' ' + brief(job_type)}: \"type\" is "
                       f"one of {', '.join(IMAGE_JOB_TYPES)}")
    if not isinstance(params, dict):
        raise ApiError(400, f"\"params\" must be a JSON object, got {brief(params)}")
    try:
        job = jobs.submit_job(job_type, params, client=client_id(request.remote_addr))
    except (jobs.QueueFull, jobs.DiskFull, jobs.StoreError) as exc:
        raise _busy(exc) from None
    except ValueError as exc:  # ParamError: the one line naming the parameter
        raise ApiError(400, for_page(str(exc))) from None
    return json_answer(201, {"id": job.id, "status": job.status},
                   {"Location": f"{PREFIX}/jobs/{job.id}"})


def _list() -> Response:
    limit = _number("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    status = request.args.get("status")
    if status is not None and status not in STATUSES:
        raise ApiError(400, f"status: one of {', '.join(STATUSES)}, got {brief(status)}")
    try:
        if status is None:
            listed = jobs.list_jobs(limit)
        else:  # every job of that status, newest first (the newest jobs may have none)
            jobs.reap()
            listed = sorted(open_store().with_status(status), key=lambda j: j.created,
                            reverse=True)[:limit]
    except jobs.StoreError as exc:
        raise _busy(exc) from None
    return json_answer(200, {"jobs": [_public(j) for j in listed]})


def _job(job_id: str) -> Job:
    try:
        job = jobs.get_job(job_id)
    except jobs.StoreError as exc:
        raise _busy(exc) from None
    except ValueError as exc:  # not 12 hex digits
        raise ApiError(400, str(exc)) from None
    if job is None:
        raise ApiError(404, f"no job {job_id}")
    return job


@blueprint.route("/jobs/<job_id>", methods=["GET", "DELETE", "OPTIONS"],
                 provide_automatic_options=False)
def job_item(job_id: str) -> Response:
    if request.method == "OPTIONS":
        return _options()
    if request.method == "DELETE":
        return _cancel(job_id)
    tail = _number("log", DEFAULT_LOG, 0, MAX_LOG)
    job = _job(job_id)
    out = _public(job)
    try:
        store = open_store()
        out["metrics"] = finite(store.metrics(job.id))
        out["log"] = log_for_page(store.logs(job.id, tail)) if tail else []
    except jobs.StoreError as exc:
        raise _busy(exc) from None
    return json_answer(200, out)


def _cancel(job_id: str) -> Response:
    _require_token()
    try:
        status = jobs.cancel_job(job_id)
    except jobs.StoreError as exc:
        raise _busy(exc) from None
    except KeyError:
        raise ApiError(404, f"no job {job_id}") from None
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    return json_answer(200, {"id": job_id.strip().lower(), "status": status})


@blueprint.route("/", defaults={"rest": ""}, methods=_ANY, strict_slashes=False,
                 provide_automatic_options=False)
@blueprint.route("/<path:rest>", methods=_ANY, provide_automatic_options=False)
def elsewhere(rest: str) -> Response:
    """Anything else under /api: 404 as JSON (Dash's page router would answer an HTML page),
    or 405 for a method a route does not take."""
    route = _route_of(request.path)
    if route is None:
        raise ApiError(404, "no such API route: see GET /api/jobs")
    if request.method == "OPTIONS":
        return _options()
    raise ApiError(405, f"{request.method} is not allowed here", {"Allow": _ALLOWED[route]})


def _http_error(exc: HTTPException) -> Response | HTTPException:
    """An HTTP error under /api is JSON (a method no route takes, a server error); any other
    path keeps Flask's answer."""
    if not (request.path == PREFIX or request.path.startswith(PREFIX + "/")):
        return exc
    if isinstance(exc, InternalServerError):  # logged by Flask with its traceback
        return _error(500, "the server could not answer this request")
    if exc.code == 405:  # a method no route takes at all (e.g. TRACE)
        route = _route_of(request.path)
        return _error(405, f"{request.method} is not allowed here",
                      {"Allow": _ALLOWED[route]} if route else None)
    return _error(exc.code or 500, exc.description or exc.name)


def add_jobs_api(server: Flask) -> None:
    """Register the API on the Flask server (before its first request)."""
    server.register_blueprint(blueprint)
    server.register_error_handler(HTTPException, _http_error)
