"""The pages register themselves (issue 32): every page module of layouts/ declares its
PAGES and layouts.registry registers them with Dash Pages; app.py lists none. A page file
added to layouts/ with its PAGES is a page; a typo in a declaration stops the start."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import dash
import pytest
from dash.development.base_component import Component

from bnviz.web import app  # noqa: F401  (registers the pages)
from bnviz.web.layouts import registry

ROOT = Path(__file__).resolve().parents[2]


def test_every_page_module_declares_its_pages_and_app_lists_none():
    declared = {p["path"] for p in registry.pages()}
    assert declared == {p["path"] for p in dash.page_registry.values()}
    assert len(declared) == len(registry.pages())  # one module per path
    for module in registry.page_modules():
        if hasattr(module, "layout") and module.__name__ != "bnviz.web.layouts.common":
            assert getattr(module, "PAGES", None), f"{module.__name__} has no PAGES"
    app_source = (ROOT / "app.py").read_text()
    assert "register_page(" not in app_source
    # (the navbar's "Lecture ▸" button names /lecture: it opens the lecture at a state)
    assert not any(p["path"] in app_source.split('"') for p in registry.pages()
                   if p["path"] not in ("/", "/lecture"))


def test_a_page_registers_its_own_callbacks_and_app_lists_none():
    """Importing the pages' modules alone (no app.py) registers every callback the app has;
    app.py imports no callbacks module for its side effect (it takes ids and the training
    route's function by name)."""
    import ast

    tree = ast.parse((ROOT / "app.py").read_text())
    bare = [a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
            for a in node.names if "callbacks" in a.name]
    assert not bare, bare
    outputs = "import json, dash._callback as c; {}; print(json.dumps(sorted({})))"
    pages_only = subprocess.run(
        [sys.executable, "-c", outputs.format("from bnviz.web.layouts import registry; "
                                              "registry.page_modules()", "c.GLOBAL_CALLBACK_MAP")],
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    whole_app = subprocess.run(
        [sys.executable, "-c", outputs.format("from bnviz.web import app", "app.app.callback_map")],
        capture_output=True, text=True, timeout=300, check=True, cwd=ROOT)
    registered, served = (set(json.loads(run.stdout)) for run in (pages_only, whole_app))
    assert len(registered) > 50
    # the app adds only Dash Pages' own routing callback
    assert registered <= served and all("_pages" in o for o in served - registered), \
        served - registered


def test_each_pages_layout_is_a_function_of_the_query():
    for page in registry.pages():
        assert isinstance(page["layout"](), Component), page["path"]
        assert isinstance(page["layout"](unknown="x"), Component), page["path"]


def test_the_navbar_links_are_the_pages_with_nav():
    links = []

    def walk(node) -> None:
        if isinstance(node, Component):
            if node.__class__.__name__ == "NavLink":
                links.append(node.href)
            walk(getattr(node, "children", None))
        elif isinstance(node, list | tuple):
            for child in node:
                walk(child)

    walk(app.app.layout)
    assert links == [p["path"] for p in registry.pages() if p["nav"]]
    assert "/lecture" not in links and "/papers/replication" not in links


def test_a_typo_in_a_declaration_stops_the_start(monkeypatch):
    from bnviz.web.layouts import jitter

    monkeypatch.setattr(jitter, "PAGES", ({**jitter.PAGES[0], "titel": "x"},))
    with pytest.raises(ValueError, match="titel"):
        registry.pages()
    monkeypatch.setattr(jitter, "PAGES", ({"path": "/x", "name": "x", "order": 1},))
    with pytest.raises(ValueError, match="layout"):
        registry.pages()


def test_no_module_outside_layouts_builds_a_page():
    """A page's layout lives in layouts/<page>.py: nothing in callbacks/ defines one."""
    for path in (ROOT / "callbacks").rglob("*.py"):
        names = {n.name for n in ast.parse(path.read_text()).body
                 if isinstance(n, ast.FunctionDef)}
        assert not names & {"layout", "page_layout"}, path
