"""Nothing over 300 ms looks frozen (issue 16, item 7): every graph and the claims table of
every page sit under the pages' one spinner, which shows after SPINNER_DELAY_MS (so quick
answers show none)."""

from __future__ import annotations

import dash
import pytest
from dash import dcc

from bnviz.web import app  # noqa: F401  (registers the pages)
from bnviz.web.layouts.common import SPINNER_DELAY_MS


def _under_spinners(node, under: dcc.Loading | None = None):
    """(component, the innermost dcc.Loading around it or None) for a layout's components."""
    if isinstance(node, list | tuple):
        for child in node:
            yield from _under_spinners(child, under)
    elif hasattr(node, "to_plotly_json"):
        yield node, under
        yield from _under_spinners(getattr(node, "children", None),
                                   node if isinstance(node, dcc.Loading) else under)


@pytest.mark.parametrize("path", sorted(p["path"] for p in dash.page_registry.values()))
def test_every_graph_has_a_spinner_after_300_ms(path):
    page = next(p for p in dash.page_registry.values() if p["path"] == path)
    layout = page["layout"]() if callable(page["layout"]) else page["layout"]
    found = [(c.id, spinner) for c, spinner in _under_spinners(layout)
             if isinstance(c, dcc.Graph)]
    assert found, f"{path}: no graph found (the walk is broken)"
    bare = [gid for gid, spinner in found if spinner is None]
    assert not bare, f"{path}: graphs without a spinner: {bare}"
    assert SPINNER_DELAY_MS == 300
    assert {spinner.delay_show for _, spinner in found} == {SPINNER_DELAY_MS}


def test_the_claims_table_has_the_spinner():
    from bnviz.web.callbacks.papers import ids
    from bnviz.web.layouts.papers import layout

    found = [spinner for c, spinner in _under_spinners(layout())
             if getattr(c, "id", None) == ids.CLAIMS]
    assert len(found) == 1 and found[0] is not None and found[0].delay_show == SPINNER_DELAY_MS
