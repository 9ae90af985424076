"""Layout of the background-jobs page: launch, watch and compare the image experiments."""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dcc, html

import bnviz.web.callbacks.jobs.callbacks  # noqa: F401  (registers the page's callbacks)
from bnviz.params.jobs import JOB_OPTIONS
from bnviz.records.store import JOB_ID
from bnviz.records.types import IMAGE_JOB_TYPES as JOB_TYPES
from bnviz.service.clients import jobs_token
from bnviz.web.callbacks.jobs import ids
from bnviz.web.callbacks.jobs.explanation import experiment_explanation
from bnviz.web.callbacks.jobs.figures import NO_JOB, NO_OVERLAY, placeholder
from bnviz.web.layouts.common import labelled_row, loading

TYPE_LABELS = {
    "smart-init": "Smart initialisation (Fig. 5, 10)",
    "concentration": "Concentration around images (Fig. 4)",
    "jitter-noise": "Jitter noise (section 5)",
    "affine-ablation": "Learnable gamma, beta (Table 1)",
    "landscape": "Loss landscape and ICS (Santurkar et al.)",
}
def _param_control(spec):
    value = ",".join(f"{v:g}" for v in spec.default) if spec.kind == "floats" else spec.default
    pid = {"type": ids.PARAM, "name": spec.name}
    if spec.kind == "choice":
        control = dbc.Select(id=pid, value=value, size="sm",
                             options=[{"label": c, "value": c} for c in spec.choices])
    elif spec.kind in ("int", "float"):
        control = dbc.Input(id=pid, type="number", value=value, min=spec.lo, max=spec.hi,
                            step=1 if spec.kind == "int" else "any", size="sm")
    else:
        control = dbc.Input(id=pid, type="text", value=value, size="sm")
    label = spec.name.replace("_", " ")
    return html.Div(labelled_row(label, control), id={"type": ids.PARAM_ROW, "name": spec.name},
                    title=spec.help)


def _token_row() -> html.Div:
    """The jobs token field: shown when the server has a token (BNVIZ_JOBS_TOKEN, read when
    the page is served), hidden but present otherwise (the callbacks read its value)."""
    return html.Div([
        labelled_row("token", dbc.Input(id=ids.TOKEN, type="password", size="sm",
                                        placeholder="jobs token", autocomplete="off")),
        html.P("Needed to submit, cancel and re-run; reading needs none.",
               className="small text-muted mb-2"),
    ], id=ids.TOKEN_ROW, style=None if jobs_token() else {"display": "none"})


#: Where the page's one message sits: the bottom right corner of the window, above the page.
MESSAGE_STYLE = {"position": "fixed", "right": "1rem", "bottom": "1rem", "zIndex": 1080,
                 "maxWidth": "min(32rem, calc(100vw - 2rem))", "marginBottom": 0}


def layout(job: str | None = None, **_query) -> dbc.Container:
    """The page; ``/jobs?job=ID`` opens that job (a malformed id in the URL is ignored)."""
    job = job.strip().lower() if isinstance(job, str) and JOB_ID.match(job.strip().lower()) \
        else None
    form = dbc.Card(dbc.CardBody([
        html.H6("New job", className="text-muted"),
        # the experiment's name above its select, the whole width: beside its label, the
        # select cut the names at 1280x720 ("Smart initialis")
        dbc.Label("experiment", html_for=ids.TYPE, className="small mb-0"),
        dbc.Select(id=ids.TYPE, value=JOB_TYPES[0], size="sm", className="mb-2",
                   options=[{"label": TYPE_LABELS[t], "value": t} for t in JOB_TYPES]),
        html.P(experiment_explanation(JOB_TYPES[0]), id=ids.EXPLAIN,
               className="small explain explain-scroll"),
        *[_param_control(spec) for spec in JOB_OPTIONS],
        _token_row(),
        # stuck to the window's bottom while the form runs below it: on a 1280x720 screen the
        # submit button was under the first screen (issue 31)
        html.Div(dbc.Button("submit", id=ids.SUBMIT, color="primary", size="sm"),
                 className="submit-bar"),
        # pinned to the window's corner: the form is taller than a 1280x720 screen, and a
        # cancel or re-run is pressed far below it; the answer is seen wherever one is
        dbc.Alert(id=ids.MESSAGE, is_open=False, color="info", dismissable=True,
                  className="py-2 small shadow", style=MESSAGE_STYLE),
        html.P(id=ids.BACKEND, className="small text-muted mt-2"),
    ]), className="mt-2")
    detail = dbc.Card(dbc.CardBody([
        dbc.Row([
            # the dropdown keeps a value only among its options: the URL's job is one until
            # the first refresh lists them all
            dbc.Col(dcc.Dropdown(id=ids.SELECTED, value=job, placeholder="open a job",
                                 options=[{"label": job, "value": job}] if job else [],
                                 clearable=True), md=6),
            dbc.Col(dbc.ButtonGroup([
                dbc.Button("cancel", id=ids.CANCEL, size="sm", color="secondary",
                           outline=True),
                dbc.Button("re-run", id=ids.RERUN, size="sm", color="secondary",
                           outline=True)]), md=6),
        ], className="mb-2"),
        html.Div(id=ids.DETAIL),
        loading(dcc.Graph(id=ids.GRAPH, style={"height": "42vh"},
                          config={"displaylogo": False}, figure=placeholder(NO_JOB))),
        html.Pre(id=ids.LOG, className="small bg-light p-2",
                 style={"maxHeight": "22vh", "overflowY": "auto"}),
    ]), className="mt-2")
    overlay = dbc.Card(dbc.CardBody([
        html.H6("Overlay: the curves of several jobs", className="text-muted"),
        dcc.Dropdown(id=ids.OVERLAY, multi=True, placeholder="choose jobs to overlay"),
        loading(dcc.Graph(id=ids.OVERLAY_GRAPH, style={"height": "40vh"},
                          config={"displaylogo": False}, figure=placeholder(NO_OVERLAY))),
    ]), className="mt-2")
    return dbc.Container(fluid=True, children=[
        dcc.Interval(id=ids.POLL, interval=1000),
        dcc.Store(id=ids.SHOWN),
        dbc.Row([
            dbc.Col(form, lg=3),
            dbc.Col([
                dbc.Card(dbc.CardBody([
                    html.H6("Jobs", className="text-muted"),
                    html.Div(id=ids.TABLE, className="small"),
                ]), className="mt-2"),
                detail,
                overlay,
            ], lg=9),
        ]),
    ])


#: The page (layouts.registry registers it).
PAGES = ({"path": "/jobs", "name": "Jobs (Fig. 4, 5, 10)", "order": 3, "layout": layout},)
