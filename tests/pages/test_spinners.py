"""Nothing over 300 ms looks frozen (issue 16, item 7): every graph and the claims table of
every page sit under the pages' one spinner, which shows after SPINNER_DELAY_MS (so quick
answers show none)."""

from __future__ import annotations

import dash
import pytest
from dash import dcc

import app  # noqa: F401  (registers the pages)
from layouts.common import SPINNER_DELAY_MS


def _graphs_and_spinners(node, under: dcc.Loading | None, found: list) -> None:
    if isinstance(node, list | tuple):
        for child in node:
            _graphs_and_spinners(child, under, found)
        return
    if not hasattr(node, "to_plotly_json"):
        return
    if isinstance(node, dcc.Graph):
        found.append((node.id, under))
    inner = node if isinstance(node, dcc.Loading) else under
    for name in ("children", "tabs"):
        _graphs_and_spinners(getattr(node, name, None), inner, found)


@pytest.mark.parametrize("path", sorted(p["path"] for p in dash.page_registry.values()))
def test_every_graph_has_a_spinner_after_300_ms(path):
    page = next(p for p in dash.page_registry.values() if p["path"] == path)
    layout = page["layout"]() if callable(page["layout"]) else page["layout"]
    found: list = []
    _graphs_and_spinners(layout, None, found)
    assert found, f"{path}: no graph found (the walk is broken)"
    bare = [gid for gid, spinner in found if spinner is None]
    assert not bare, f"{path}: graphs without a spinner: {bare}"
    assert SPINNER_DELAY_MS == 300
    assert {spinner.delay_show for _, spinner in found} == {SPINNER_DELAY_MS}


def test_the_claims_table_has_the_spinner():
    from callbacks.papers import ids
    from layouts.papers import layout

    found = []

    def walk(node, under) -> None:
        if isinstance(node, list | tuple):
            for child in node:
                walk(child, under)
        elif hasattr(node, "to_plotly_json"):
            if getattr(node, "id", None) == ids.CLAIMS:
                found.append(under)
            walk(getattr(node, "children", None),
                 node if isinstance(node, dcc.Loading) else under)

    walk(layout(), None)
    assert len(found) == 1 and found[0] is not None and found[0].delay_show == SPINNER_DELAY_MS
