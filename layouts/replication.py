"""Layout of the replication page (/papers/replication): what reproduces, paper by paper.

Built from the stored outcomes (:mod:`bnviz.replication.store`) each time the page is served,
so it says what the last runs found, whichever way they fell; the same table is
``bnviz replicate --json`` and ``docs/REPLICATION.md``."""

from __future__ import annotations

from typing import Any

import dash_bootstrap_components as dbc
from dash import dcc, html

from bnviz.replication.entries import PAPER_TITLES
from bnviz.replication.report import (
    NOT_RUN,
    counts,
    format_ours,
    format_value,
    report,
    smart_init_sentence,
)
from bnviz.replication.smart_init import smart_init_arm
from bnviz.replication.store import STATUSES, OutcomesError, read_outcomes
from bnviz.web.callbacks.replication import ids
from bnviz.web.callbacks.replication.figures import (
    ARMS,
    slice_concentration_figure,
    smart_init_figure,
    smart_init_paired_figure,
)
from bnviz.web.layouts.common import loading

#: A status's badge colour (the word is always written: colour is not the only cue).
STATUS_COLOURS = {"reproduced": "success", "partly": "warning", "inconclusive": "info",
                  "not reproduced": "danger",
                  NOT_RUN: "secondary"}
SMART_INIT_ID = "bn-fig5-10-smart-init"


def status_badge(status: str) -> dbc.Badge:
    return dbc.Badge(status, color=STATUS_COLOURS.get(status, "secondary"),
                     text_color="dark" if status in ("partly", "inconclusive") else None,
                     className="replication-status")


def _summary(results: list[dict[str, Any]]) -> html.Div:
    c = counts(results)
    return html.Div([html.Span(f"{len(results)} results: ", className="me-1"),
                     *[html.Span([status_badge(s), f" {c[s]}"], className="me-3")
                       for s in (*STATUSES, NOT_RUN) if c[s]]],
                    id=ids.SUMMARY, className="mb-2")


def _row(r: dict[str, Any]) -> html.Tr:
    when = f"ran {r['ran_at']} in {r['seconds']} s on {r['device']}" if r.get("ran_at") else ""
    return html.Tr([
        html.Td([html.Code(r["id"]), html.Div(r["result"])]),
        html.Td(format_value(r["paper_value"])),
        html.Td([format_ours(r["ours"]), html.Div(when, className="text-muted")]),
        html.Td(status_badge(r["status"])),
        html.Td(html.Code(r["command"], className="replication-command")),
    ], id=ids.row(r["id"]))


def _paper_table(title: str, rows: list[dict[str, Any]]) -> html.Div:
    head = html.Thead(html.Tr([html.Th(h) for h in (
        "result (what the paper claims)", "the paper", "ours", "status", "command")]))
    return html.Div([html.H5(title, className="mt-3"),
                     dbc.Table([head, html.Tbody([_row(r) for r in rows])], size="sm",
                               bordered=True, className="small replication-table")])


def _by_lr_table(ours: dict[str, Any]) -> dbc.Table:
    """Final test accuracy at every learning rate of the sweep (where the choice was made)."""
    head = html.Thead(html.Tr([html.Th("arm")] + [html.Th(f"lr {lr:g}") for lr in ours["lrs"]]))
    body = html.Tbody([html.Tr([html.Td(arm)] + [
        html.Td(f"{100 * v:.1f} %" if v is not None else "-", className="fw-bold"
                if lr == ours[arm + "_lr"] else None)
        for lr, v in zip(ours["lrs"], ours.get(f"{arm}_by_lr") or [None] * len(ours["lrs"]),
                         strict=True)]) for arm in ARMS if f"{arm}_lr" in ours])
    return dbc.Table([head, body], size="sm", bordered=True, className="small",
                     id=ids.SMART_INIT_BY_LR)


def _smart_init(outcome: dict[str, Any] | None) -> html.Div:
    ours = (outcome or {}).get("ours")
    body: list = [
        html.P([html.B("The paper: "), "BN statistics used once as an initialisation, then "
                "frozen, learn faster and end with higher test accuracy than zero or random "
                "bias (Figures 5, 10: ResNet50 on ImageNet; ResNet9 on CIFAR-100, 10 runs, "
                "cross-validated learning rate)."]),
        html.P([html.B("Ours: "), smart_init_sentence(outcome), " ",
                status_badge(outcome["status"]) if outcome else None],
               id=ids.SMART_INIT_TEXT)]
    if ours is not None and ours.get(f"{smart_init_arm(ours)}_curve"):
        body += [loading(dcc.Graph(id=ids.SMART_INIT_GRAPH, figure=smart_init_figure(ours),
                                   style={"height": "300px"},
                                   config={"displayModeBar": False})),
                 *([loading(dcc.Graph(id=ids.SMART_INIT_PAIRED,
                                      figure=smart_init_paired_figure(ours),
                                      style={"height": "300px"},
                                      config={"displayModeBar": False}))]
                   if ours.get("paired") else []),
                 html.Div("Final test accuracy at each learning rate (bold: the rate chosen "
                          "on the held-out images):", className="small text-muted"),
                 _by_lr_table(ours)]
    return html.Div(body, id=ids.SMART_INIT, className="mb-3")


def slice_concentration_section(outcome: dict[str, Any] | None, section_id: str = ids.SLICE,
                                graph_id: str = ids.SLICE_GRAPH,
                                height: str = "460px") -> html.Div:
    """Every network's value of the slice entry, a dot each: the paired test's inputs (the
    replication page's section, and /slice's "our experiment")."""
    ours = (outcome or {}).get("ours") or {}
    if "per_network" not in ours:
        return html.Div("Our runs: none stored yet (bnviz replicate --run "
                        "bn-slice-concentration).", id=section_id, className="small")
    return html.Div([
        html.P([html.B("The paper: "), "BN focuses the partition on the data (Figures 3, 4). ",
                html.B("Ours: "), f"{len(ours['seeds'])} networks an arm, trained "
                f"{ours['epochs']} epochs on the {ours['dataset']}; each dot is one network's "
                "log of the mean exact region count in windows about three test images over "
                "that about matched images off the data, on "
                f"{ours['triples']} planes (above 0: more regions on the data). ",
                status_badge(outcome["status"]), " ",
                html.A("the rule and the numbers",
                       href=f"/papers/replication#{ids.row('bn-slice-concentration')}")],
               className="small"),
        loading(dcc.Graph(id=graph_id, figure=slice_concentration_figure(ours),
                          style={"height": height}, config={"displayModeBar": False})),
    ], id=section_id, className="mb-3")


def layout(**_query) -> dbc.Container:
    try:
        outcomes, problem = read_outcomes(), None
    except OutcomesError as exc:  # the shipped file damaged: say so, show what can be shown
        outcomes, problem = {}, str(exc)
    results = report(outcomes)
    smart = outcomes.get(SMART_INIT_ID)
    return dbc.Container([
        html.H4("What reproduces", className="mt-3"),
        html.P(["Every figure, table and closed-form claim of the five papers, what the "
                "paper says beside what bnviz's own runs show. Where they disagree, the "
                "table says so. The same table: ", html.Code("bnviz replicate --json"),
                "; rerun one entry: ", html.Code("bnviz replicate --run ID"), ". Back to ",
                html.A("the debate", href="/papers"), "."], className="small"),
        dbc.Alert(problem, color="danger", is_open=problem is not None),
        _summary(results),
        html.H5("Smart initialisation (BN paper, Figures 5 and 10)", className="mt-3"),
        _smart_init(smart),
        html.H5("Slices of trained image networks (BN paper, Figures 3 and 4)",
                className="mt-3"),
        slice_concentration_section(outcomes.get("bn-slice-concentration")),
        html.Div([_paper_table(title, [r for r in results if r["paper"] == title])
                  for title in PAPER_TITLES.values()], id=ids.TABLE),
    ], fluid=True, className="replication-page")


#: The page (layouts.registry registers it).
PAGES = ({"path": "/papers/replication", "name": "What reproduces", "order": 6,
           "layout": layout, "nav": False},)
