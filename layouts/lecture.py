"""Layout of the lecture view (/lecture): the figure fills the screen, the four sliders and
the caption are docked beside it, the step's title and the clicker's buttons above.

A component tree only: ``layout`` receives the state parsed from the URL
(:func:`callbacks.lecture.state.initial_state`); callbacks/lecture/ does the rest. Sizes are
set in assets/lecture.css so that at 1280x720 nothing scrolls and no type is under 18 px.
"""

from __future__ import annotations

import dash_bootstrap_components as dbc
from dash import dcc, html

import bnviz.web.callbacks.lecture.callbacks  # noqa: F401  (registers the page's callbacks)
import bnviz.web.callbacks.lecture.prefetch  # noqa: F401  (registers the page's callbacks)
import bnviz.web.callbacks.lecture.presenter  # noqa: F401  (registers the page's callbacks)
import bnviz.web.callbacks.lecture.snapshots  # noqa: F401  (registers the page's callbacks)
from bnviz.caps import LECTURE_MAX_SNAPSHOT_NAME, LECTURE_MAX_SNAPSHOTS
from bnviz.lecture.scenes import BATCH_ALL, BATCH_SLIDER, DEPTH_SLIDER
from bnviz.lecture.tour import TOUR
from bnviz.server.lecture_sync import SLIDER_BOUNDS
from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.state import LectureState, initial_state
from bnviz.web.layouts.common import loading

#: The animation speeds the [ and ] keys step through (assets/lecture.js, via the client
#: config), and the type sizes of + and -, as factors of the projector's TYPE_PX.
PLAYBACK_SPEEDS = (0.25, 0.5, 1, 2, 4)
TYPE_SCALES = (1, 1.15, 1.3, 1.5, 1.75)
TYPE_PX = 18
#: How often the page asks for the slides export's progress while it runs (ms).
EXPORT_POLL_MS = 700
#: How often a lecture window at a session link asks the server for the windows' newest
#: state (ms; assets/presenter.js, bnviz.server.lecture_sync).
SYNC_POLL_MS = 400
_GLYPHS = {0.25: "¼", 0.5: "½"}  # the keys panel's factors, short enough for one line

#: What each key does (the ? key lists them; assets/lecture.js implements them).
KEYS = (
    ("PageDown, →, Space", "next step"),
    ("PageUp, ←", "previous step"),
    ("Tab to a slider, then ← →", "move that slider"),
    ("Home, End", "first, last step"),
    (f"1 … {len(TOUR)} (type the number)", "jump to that step"),
    ("p", "play the step's animation; again: pause, and on"),
    ("[  ]", f"animation slower, faster (×{_GLYPHS.get(PLAYBACK_SPEEDS[0], PLAYBACK_SPEEDS[0])} … "
               f"×{PLAYBACK_SPEEDS[-1]:g})"),
    ("+  -", f"larger, smaller type (from {TYPE_PX} px to ×{TYPE_SCALES[-1]:g})"),
    ("r", "reset the step (its own sliders)"),
    ("n", "keep this state as a named snapshot (listed here)"),
    ("f", "full screen"),
    ("b", "blank the screen (any key brings it back)"),
    ("s", "split: the same weights without BN | with BN"),
    ("t", "light or dark theme"),
    ("c", "caption on one line; again: in full"),
    ("q", "QR code of this state, for students' laptops"),
    ("a", "ask the hall the step's question (phones tap; p: the answer); again: close"),
    ("v", "presenter view (notes, next step, timer); each window follows the other"),
    ("?", "this list"),
)


def _slider(id_: str, label: str, lo: float, hi: float, step: float, marks: dict,
            value: float, transform: str | None = None) -> html.Div:
    tooltip = {"placement": "bottom"} | ({"transform": transform} if transform else {})
    return html.Div(className="lecture-slider", id=f"{id_}-box", children=[
        html.Label(label, htmlFor=id_),
        dcc.Slider(id=id_, min=lo, max=hi, step=step, marks=marks, value=value,
                   updatemode="drag", tooltip=tooltip, allow_direct_input=False),
    ])


def sliders(values: dict) -> html.Div:
    """The four sliders, over the positions the windows' shared state allows
    (bnviz.server.lecture_sync.SLIDER_BOUNDS)."""
    batch_marks = {k: str(2 ** k) for k in range(BATCH_SLIDER[0], BATCH_ALL)} | {
        BATCH_ALL: "all"}
    bounds = {name: SLIDER_BOUNDS[name][:2] for name in SLIDER_BOUNDS}
    return html.Div(className="lecture-sliders", children=[
        _slider(ids.MU, "μ = t · μ_BN", *bounds["mu"], 0.01, {0: "0", 1: "BN", 1.5: "1.5"},
                values["mu"]),
        _slider(ids.SIGMA, "σ = s · σ_BN", *bounds["sigma"], 0.05,
                {-2: "¼", 0: "1", 2: "4"}, values["sigma"], "sigmaFactor"),
        _slider(ids.BATCH, "batch size |B|", *bounds["batch"], 1,
                {k: v for k, v in batch_marks.items() if k % 2 == 0 or k == BATCH_ALL},
                values["batch"], "batchSize"),
        _slider(ids.DEPTH, "depth L", *bounds["depth"], 1,
                {i: str(i) for i in range(DEPTH_SLIDER[0], DEPTH_SLIDER[1] + 1)
                 if i in (1, 2) or i % 2 == 0}, values["depth"]),
    ])


def _button(id_: str, text: str, title: str) -> html.Button:
    return html.Button(text, id=id_, title=title, className="lecture-button", n_clicks=0)


def header() -> html.Div:
    return html.Div(className="lecture-header", children=[
        html.A("bnviz", href="/", className="lecture-home", title="back to the explorer"),
        _button(ids.PREV, "◀", "previous step (PageUp, ←)"),
        html.Span(id=ids.COUNTER, className="lecture-counter"),
        _button(ids.NEXT, "▶", "next step (PageDown, →, Space)"),
        html.H1(id=ids.TITLE, className="lecture-title"),
        _button(ids.PLAY, "play", "play the step's animation (p)"),
        _button(ids.SPLIT_BUTTON, "no BN | BN", "the same weights without and with BN, side "
                                                "by side (s)"),
        _button(ids.THEME_BUTTON, "theme", "light or dark theme (t)"),
        _button(ids.QR_BUTTON, "QR", "QR code of this state (q)"),
        _button(ids.EXPORT, "export all", "every step as PNG and SVG with its caption: "
                                          "slides, in a zip"),
        _button(ids.HELP_BUTTON, "?", "the keys (?)"),
    ])


def help_panel() -> dbc.Modal:
    rows = [html.Tr([html.Td(html.Kbd(k)), html.Td(v)]) for k, v in KEYS]
    steps = html.Div([html.Ol([html.Li(s.title) for s in TOUR], className="lecture-steps"),
                      html.Div(id=ids.SNAPSHOT_LIST)])
    return dbc.Modal(id=ids.HELP, is_open=False, size="xl", className="lecture-modal",
                     children=[dbc.ModalHeader(dbc.ModalTitle("Keys (a clicker sends the "
                                                              "first two)")),
                               dbc.ModalBody(dbc.Row([
                                   dbc.Col(html.Table(html.Tbody(rows),
                                                      className="table table-sm"), md=7),
                                   dbc.Col(steps, md=5)]))])


def qr_panel() -> dbc.Modal:
    return dbc.Modal(id=ids.QR_PANEL, is_open=False, centered=True,
                     className="lecture-modal", children=[
                         dbc.ModalHeader(dbc.ModalTitle("Open this step on your laptop")),
                         dbc.ModalBody([html.Img(id=ids.QR, className="lecture-qr",
                                                 alt="QR code of this page's link"),
                                        html.Div(id=ids.QR_URL, className="lecture-qr-url")]),
                     ])


def layout(state: LectureState) -> html.Div:
    return html.Div(id=ids.ROOT, className=f"lecture-root lecture-{state.theme}", children=[
        dcc.Store(id=ids.STEP, data=state.step),
        dcc.Store(id=ids.BASE, data=state.base),
        dcc.Store(id=ids.RESET, data=0),
        dcc.Store(id=ids.THEME, data=state.theme),
        dcc.Store(id=ids.SPLIT, data=state.split),
        dcc.Store(id=ids.QUERY),
        dcc.Store(id=ids.LINK),
        dcc.Store(id=ids.ANIMATION),
        dcc.Store(id=ids.CURSOR),
        dcc.Store(id=ids.MARK),
        dcc.Store(id=ids.TYPE_SCALE, data=1),
        dcc.Store(id=ids.FIGURE),
        dcc.Store(id=ids.LINK_NOTE, data=state.message),
        dcc.Store(id=ids.SNAPSHOTS, data={"items": list(state.snapshots),
                                          "max": LECTURE_MAX_SNAPSHOTS,
                                          "name_max": LECTURE_MAX_SNAPSHOT_NAME}),
        dcc.Store(id=ids.PREFETCH_KEY),
        dcc.Store(id=ids.PREFETCH),
        dcc.Store(id=ids.DRAWN),
        dcc.Store(id=ids.SYNC),
        html.Div(id=ids.SINK, hidden=True),
        html.Div(id=ids.PREFETCH_SINK, hidden=True),
        dcc.Download(id=ids.DOWNLOAD),
        # the export's job (callbacks/lecture/export.py): per page, not kept (a kept one would
        # download the zip again whenever the page opens)
        dcc.Store(id=ids.EXPORT_JOB),
        dcc.Interval(id=ids.EXPORT_POLL, interval=EXPORT_POLL_MS, disabled=True),
        dcc.Interval(id=ids.TIMER, interval=100, disabled=True),
        header(),
        html.Div(id=ids.MAIN, className="lecture-main", children=[
            html.Div(id=ids.PLOT, className="lecture-plot", children=loading(dcc.Graph(
                id=ids.GRAPH, className="lecture-graph", responsive=True,
                style={"height": "100%", "width": "100%"},
                config={"displaylogo": False, "displayModeBar": False}))),
            html.Div(className="lecture-dock", children=[
                html.P(id=ids.CAPTION, className="lecture-caption"),
                html.P(id=ids.READOUT, className="lecture-readout", **{"aria-live": "polite"}),
                html.Div(state.message, id=ids.MESSAGE, className="lecture-message",
                         role="status"),
                html.Div(id=ids.INFO, className="lecture-info", **{"aria-live": "polite"}),
                sliders(state.sliders),
                # the export's line and progress bar (no spinner: the bar shows it runs)
                html.Div(id=ids.EXPORT_STATUS, className="lecture-export-status",
                         **{"aria-live": "polite"}),
            ]),
        ]),
        html.Div(id=ids.BLANK, className="lecture-blank", hidden=True),
        help_panel(),
        qr_panel(),
    ])


def presenter_panel() -> html.Div:
    """The presenter's side: the timer, the notes, the next step small and the step list
    (callbacks.lecture.presenter fills them; assets/presenter.js runs the timer and keeps
    this window and the projector's in one state, both ways)."""
    return html.Div(id=ids.PRESENTER, className="presenter-panel", children=[
        html.Div(className="presenter-bar", children=[
            html.Span(id=ids.CLOCK, className="presenter-clock", children="0:00"),
            html.Span("projector blank (b)", id=ids.BLANKED, className="presenter-blanked",
                      hidden=True),
            html.Span("hall's question open (a closes)", id=ids.ASKED,
                      className="presenter-asked", hidden=True),
        ]),
        html.Div(className="presenter-session", children=[
            html.A("projector ↗", id=ids.PROJECTOR_LINK, href="/lecture",
                   target="bnviz-projector", className="lecture-button presenter-open",
                   title="opens the projector's window: it and this one follow each other's "
                         "steps, sliders, play, reset, split, theme and blank"),
            html.Span(["hall computer: ", html.Span(
                id=ids.SESSION_LINK, className="presenter-link",
                title="open this link on the projector's computer: it joins this lecture, "
                      "both ways")], className="presenter-hall")]),
        html.Div(id=ids.NOTES, className="presenter-notes"),
        html.Div(className="presenter-next", children=[
            html.Div(id=ids.NEXT_TITLE, className="presenter-next-title"),
            html.Div(className="presenter-next-graph", children=loading(dcc.Graph(
                id=ids.NEXT_GRAPH, config={"staticPlot": True, "displayModeBar": False},
                style={"height": "100%", "width": "100%"}))),
        ]),
        html.Ol(id=ids.STEP_LIST, className="presenter-steps"),
        html.Div(id=ids.PRESENTER_SNAPSHOTS, className="presenter-snapshots"),
    ])


def presenter_layout(state: LectureState) -> html.Div:
    """/lecture/presenter: the lecture view (the same components and callbacks: its keys,
    sliders and buttons work as there) with the presenter's panel beside it."""
    page = layout(state)
    main = next(child for child in page.children if getattr(child, "id", None) == ids.MAIN)
    main.children = [*main.children, presenter_panel()]
    return page


def page_layout(**query) -> html.Div:
    """/lecture for a URL query (callbacks.lecture.state reads it)."""
    return layout(initial_state(query))


def presenter_page_layout(**query) -> html.Div:
    """/lecture/presenter for a URL query."""
    return presenter_layout(initial_state(query))


#: The lecture's two pages (layouts.registry registers them); the navbar's "Lecture ▸" button
#: opens the first at the page's state, so neither is a navbar link.
PAGES = ({"path": "/lecture", "name": "Lecture", "order": 7, "layout": page_layout,
          "nav": False},
         {"path": "/lecture/presenter", "name": "Lecture: presenter", "order": 8,
          "layout": presenter_page_layout, "nav": False, "module": "presenter"})
