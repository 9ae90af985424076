"""The bnviz dashboard: ``python app.py`` serves http://127.0.0.1:8050; gunicorn uses ``server``."""

from __future__ import annotations

import os

import dash
import dash_bootstrap_components as dbc
import torch
from dash import Dash, dcc, html

from bnviz.config import exit_on_bad_settings, setting
from bnviz.server.background import start_tour_precompute
from bnviz.server.hall import add_lecture_hall
from bnviz.service.kernel_loading import start_kernel_loading
from bnviz.service.webapp import assets_dir
from bnviz.web.callbacks.jobs.ids import TOKEN_STORE
from bnviz.web.callbacks.lecture import ids as lecture_ids
from bnviz.web.layouts.client_config import config_script
from bnviz.web.layouts.registry import register_pages


def configure_torch() -> None:
    """One intra-op thread per server process (BNVIZ_TORCH_THREADS overrides): requests are
    small, and under load torch's thread pool contends with the other requests' threads
    (measured by bench/explorer.py: ~30 ms with 1 thread vs ~1 s with 2 on a busy 2-core
    machine)."""
    torch.set_num_threads(int(setting("BNVIZ_TORCH_THREADS")))


def create_app() -> Dash:
    configure_torch()
    # Bootstrap 5.3 CSS is vendored in assets/ (bnviz.web's, bnviz.service.webapp)
    app = Dash(__name__, use_pages=True, pages_folder="", title="bnviz",
               assets_folder=str(assets_dir()), suppress_callback_exceptions=True)
    register_pages()  # each layouts/<page>.py declares its PAGES
    # the ids and constants assets/*.js use, as JSON in the page (layouts/client_config.py),
    # before the scripts that read it
    app.index_string = app.index_string.replace("{%config%}",
                                                config_script() + "\n            {%config%}")
    app.layout = html.Div([
        dbc.NavbarSimple(
            # the subtitle only where it fits beside the links (at 1280 px it wrapped them)
            brand=[html.B("bnviz"), html.Span(": what batch normalization does to the "
                                              "partition", className="brand-subtitle")],
            color="dark",
            dark=True, fluid=True,
            # active="exact": the link of the page shown is marked (Bootstrap's .active and
            # aria-current), in the browser, as the URL changes
            # "partial": the debate's link is marked on /papers/replication too (reached
            # from the debate page; one more navbar link would wrap the navbar at 1280 px)
            children=[dbc.NavItem(dbc.NavLink(page["name"], href=page["relative_path"],
                                              active="exact" if page["relative_path"] == "/"
                                              else "partial"))
                      for page in dash.page_registry.values() if page.get("nav", True)]
            # opens the lecture view at this page's state (assets/lecture.js sets where)
            + [dbc.NavItem(html.A("Lecture ▸", id=lecture_ids.OPEN, href="/lecture",
                                  className="btn btn-warning btn-sm ms-2",
                                  title="open this state in the lecture view (projector)"))]),
        # the jobs token as the jobs page's field last held it, for this tab's every page
        dcc.Store(id=TOKEN_STORE, storage_type="session"),
        dash.page_container,
    ])
    return app


def add_health_route(app: Dash) -> None:
    """``GET /healthz``: JSON (status, version, device, job backend reachable); 200 while the
    dashboard serves, even when the job backend is down (status "degraded"); the details
    only with the jobs token where the server has one."""
    from flask import jsonify, request

    from bnviz.server.health import for_reader, health

    app.server.add_url_rule("/healthz", "healthz", lambda: jsonify(
        for_reader(health(), request.headers.get("Authorization"))))


def add_memory_release(app: Dash, min_seconds: float = 0.25) -> None:
    """After a request that computed for ``min_seconds`` or more, give the memory its
    tensors used back to the OS once the response is sent (bnviz.service.memory), so that a worker
    does not keep a heavy request's peak for good."""
    import time

    from flask import g, request

    from bnviz.service import memory

    @app.server.before_request
    def _started() -> None:
        g.bnviz_started = time.perf_counter()

    @app.server.after_request
    def _release(response):
        started = g.get("bnviz_started")
        if started is not None and request.method == "POST" and \
                time.perf_counter() - started >= min_seconds:
            response.call_on_close(memory.release_freed_memory)
        return response


def add_request_guard(app: Dash) -> None:
    """Refuse oversized bodies (413, before they are read) and callback requests that are not
    what Dash's client sends (400, one line) in front of Flask (bnviz.service.guard)."""
    from dash.exceptions import CallbackException, InvalidCallbackReturnValue
    from flask import jsonify, request

    from bnviz.server.api import PREFIX
    from bnviz.service.guard import CallbackShape, OutputSpec, RequestGuard
    from bnviz.web.callbacks.explorer.training import ROUTE

    def deps(items: list[dict]) -> tuple[tuple[str | None, str], ...]:
        return tuple((None if str(d["id"]).startswith("{") else d["id"], d["property"])
                     for d in items)

    def output_specs(declared: object) -> tuple[OutputSpec, ...] | None:
        """A callback's declared outputs (Dash keeps an Output, or a list for a multi-output
        callback); a pattern's wildcards by their names (MATCH, ALL)."""
        items = declared if isinstance(declared, list | tuple) else [declared]
        if not all(hasattr(o, "component_property") for o in items):
            return None  # (no declaration to check against)
        return tuple(OutputSpec(o.component_id if isinstance(o.component_id, str) else
                                {k: str(v) for k, v in o.component_id.items()},
                                o.component_property) for o in items)

    built: dict[str, CallbackShape] = {}

    def shapes() -> dict[str, CallbackShape]:
        """Every registered output: its callback's inputs, states and outputs, and whether it
        runs in the browser (Dash lists clientside callbacks without a server function).
        Built again only when a callback was registered since."""
        if len(built) != len(app.callback_map):
            built.clear()
            built.update({output: CallbackShape(
                deps(spec["inputs"]), deps(spec["state"]), "callback" not in spec,
                output_specs(spec.get("output")), isinstance(spec.get("output"), list | tuple))
                for output, spec in app.callback_map.items()})
        return built

    app.server.wsgi_app = RequestGuard(
        app.server.wsgi_app, app.config.routes_pathname_prefix + "_dash-update-component",
        shapes, state_paths=[ROUTE], api_prefix=PREFIX)

    @app.server.errorhandler(CallbackException)
    def _request_does_not_match(exc: CallbackException):
        """Dash's own check that a request's outputs and inputs match the callback's
        definition (a crafted request) is the client's error; a callback returning what its
        outputs cannot take is ours."""
        if isinstance(exc, InvalidCallbackReturnValue) and not _client_counted_outputs():
            app.server.logger.exception("callback returned an invalid value")
            return jsonify(error="the server could not answer this request"), 500
        return jsonify(error=f"the request does not match the callback: {exc}"[:200]), 400

    def _client_counted_outputs() -> bool:
        """Whether the request's callback has a pattern's ALL output, whose items the client
        lists: a return that does not fit them is then the request's mismatch with the page
        (a crafted list), not the callback's fault."""
        body = request.get_json(silent=True) or {}
        shape = shapes().get(body.get("output")) if isinstance(body, dict) else None
        return shape is not None and any(
            not isinstance(o.component, str) and "ALL" in o.component.values()
            for o in shape.outputs or ())


def add_busy_answer(app: Dash) -> None:
    """A heavy computation the server had no turn for (bnviz.service.admission) and that no
    page shows as its message: ``429`` with ``Retry-After``, JSON, never a 500."""
    from flask import jsonify

    from bnviz.service.admission import ServerBusy

    @app.server.errorhandler(ServerBusy)
    def _busy(exc: ServerBusy):
        response = jsonify(error=str(exc))
        response.headers["Retry-After"] = str(exc.retry_after)
        return response, 429


def add_jobs_api(app: Dash) -> None:
    """The jobs' JSON API under /api (bnviz.server.api): submit, list, show, cancel."""
    from bnviz.server.api import add_jobs_api as register

    register(app.server)


def add_lecture_sync(app: Dash) -> None:
    """``/api/lecture/sessions/<id>``: the lecture's state shared by its windows through the
    server, for a presenter and a projector on two machines (bnviz.server.lecture_sync)."""
    from bnviz.server.lecture_sync import add_lecture_sync as register

    register(app.server)


def add_training_route(app: Dash) -> None:
    """``POST /api/training/frame``: one frame of the explorer's live training, for the tab's
    player (callbacks.explorer.training)."""
    from bnviz.web.callbacks.explorer.training import add_training_route as register

    register(app.server)


def add_security_headers(app: Dash) -> None:
    """CSP, frame-ancestors, nosniff and Referrer-Policy on every answer
    (:mod:`bnviz.service.headers`); Dash's inline scripts are allowed by their hashes, known
    once every callback is registered: Dash Pages registers its own clientside callback when
    the server sets up, at the first request, so the policy is made then, once."""
    from bnviz.service.headers import security_headers

    made: list[dict[str, str]] = []

    @app.server.after_request
    def _security_headers(response):
        if not made:
            made.append(security_headers(app.csp_hashes()))
        for name, value in made[0].items():
            response.headers.setdefault(name, value)
        return response


def add_proxy_fix(app: Dash) -> None:
    """Behind the nginx stack (BNVIZ_BEHIND_PROXY=1), take the client's address from
    X-Forwarded-For (werkzeug's ProxyFix, one proxy): the per-client job limit counts real
    clients, not nginx. Without a proxy the header is ignored, or a client could write it to
    take a fresh allowance each time. Call it before add_request_guard, which stays
    outermost (either order works: ProxyFix rewrites the address, never the body)."""
    from bnviz.service.clients import trust_proxy

    app.server.wsgi_app = trust_proxy(app.server.wsgi_app)


def warm_up(app: Dash) -> None:
    """Build now, in the importing process (gunicorn's master, which imports the app before it
    forks the workers: preload_app; or the one process of ``python app.py``), what is
    otherwise built on first use, where several request threads at once
    could find it half built (measured before: a 500 on /healthz, a /_dash-dependencies
    without the callbacks, failed first callbacks on /papers). About 0.5 s a worker under
    gunicorn (tests/service/test_cold_start.py starts fresh servers):

    * Dash's one-time server setup (the callback map, the pages' registry): the request
      guard knows every output from the first request on;
    * every page's layout (each page's layout function, as the router calls it), and /healthz
      (its job store and broker modules);
    * the parameter models' validators (their fields' rules, read from the annotations);
    * torch.func's first call, which imports torch._dynamo (gunicorn.conf.py imports that in
      the master, so a worker inherits it; without gunicorn this costs 2-3 s once);
    * the exact engine's compiled kernels, in a background thread (:mod:`bnviz.core.kernels`:
      loaded from numba's cache in 0.5 s, compiled once per machine; the vectorised cut until
      then, so no page waits for the compiler).
    """
    import warnings

    import torch

    from bnviz import params

    client = app.server.test_client()
    prefix = app.config.routes_pathname_prefix
    client.get(prefix + "_dash-dependencies")
    client.get(prefix + "_dash-layout")
    client.get("/healthz")
    for page in dash.page_registry.values():  # each page's layout, as its URL builds it
        page["layout"]()
    params.warm_validators()  # every parameter model's validator
    x = torch.zeros(2, dtype=torch.float64)
    with warnings.catch_warnings():  # torch's own use of torch.jit.script, deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.func.hessian(lambda v: (v * v).sum())(x)  # forward and reverse transforms
        torch.func.vmap(torch.func.grad_and_value(lambda v: (v * v).sum()))(x.reshape(1, 2))
    start_kernel_loading()


def precompute_tour() -> None:
    """Compute every lecture tour step, then the debate page's claims, in a background thread
    of this process (bnviz.server.background), so that each step answers from memory within
    the 300 ms a hall can wait (issue 16) and /papers at once; BNVIZ_PRECOMPUTE_TOUR=0 skips
    it (they are then computed when first shown)."""
    start_tour_precompute(app.server.logger.exception)


app = create_app()
add_health_route(app)
add_memory_release(app)
add_busy_answer(app)
add_jobs_api(app)
add_lecture_sync(app)
add_lecture_hall(app.server)
add_training_route(app)
add_proxy_fix(app)
add_security_headers(app)
add_request_guard(app)
warm_up(app)
precompute_tour()
server = app.server

if __name__ == "__main__":
    exit_on_bad_settings()
    app.run(host=os.environ.get("BNVIZ_HOST", "127.0.0.1"), port=int(setting("BNVIZ_PORT")),
            debug=False)
