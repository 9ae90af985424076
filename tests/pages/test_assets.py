"""The browser's code against the Python that defines the page (issue 32): every id and class
name assets/*.js uses is one the Python side (the ids modules, the layouts, the callbacks)
or the CSS defines, so that renaming an id in Python fails here rather than silently in a
browser; and no private API of Dash or plotly.js is used in assets/ or the app's Python."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets"
PY_SOURCES = [ROOT / "app.py", *sorted((ROOT / "layouts").rglob("*.py")),
              *sorted((ROOT / "callbacks").rglob("*.py"))]
#: A JavaScript string literal (double or single quotes, no escapes inside that matter here).
JS_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')
#: A name of the page: an id or a class, "<page>-<what>" (css selectors' # and . stripped).
NAME = re.compile(r"(?<![\w-])[#.]?([a-z]+(?:-[a-z0-9]+)+)")


def _python_strings() -> set[str]:
    """Every token of every string constant in the app's Python, docstrings left out."""
    tokens: set[str] = set()
    for path in PY_SOURCES:
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and id(node) not in docstrings:
                tokens.update(m.group(1) for m in NAME.finditer(node.value))
    return tokens


def _css_classes() -> set[str]:
    return {m.group(1) for css in ASSETS.glob("*.css") if css.name[0].isalpha()
            for m in re.finditer(r"[.#]([a-z]+(?:-[a-z0-9]+)+)", css.read_text())}


def _prefixes() -> set[str]:
    """The pages' prefixes ("lecture", "explorer", ...): the first word of the ids modules'
    values."""
    prefixes = set()
    for path in (ROOT / "callbacks").glob("*/ids.py"):
        module = ast.parse(path.read_text())
        for node in ast.walk(module):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                m = NAME.fullmatch(node.value.split()[0]) if node.value.split() else None
                if m:
                    prefixes.add(m.group(1).split("-")[0])
    return prefixes


def _js_names(source: str, prefixes: set[str]) -> set[str]:
    """The page names a script's string literals use (ids, classes, selectors)."""
    source = re.sub(r"/\*.*?\*/", "", source, flags=re.S)
    source = re.sub(r"^\s*//.*$", "", source, flags=re.M)
    names = set()
    for m in JS_STRING.finditer(source):
        text = m.group(1) if m.group(1) is not None else m.group(2)
        for name in NAME.finditer(text):
            if name.group(1).split("-")[0] in prefixes:
                names.add(name.group(1))
    return names


def _undefined(source: str) -> set[str]:
    return _js_names(source, _prefixes()) - (_python_strings() | _css_classes())


@pytest.mark.parametrize("script", sorted(p.name for p in ASSETS.glob("*.js")))
def test_every_name_a_script_uses_is_defined_in_python(script):
    source = (ASSETS / script).read_text()
    assert _undefined(source) == set(), f"{script} uses names Python does not define"


def test_a_misspelt_id_is_caught():
    source = (ASSETS / "lecture.js").read_text().replace(
        '"lecture-counter"', '"lecture-countr"', 1)
    assert _undefined(source) == {"lecture-countr"}
    assert _undefined('document.querySelector("#explorer-grahp .js-plotly-plot")') == {
        "explorer-grahp"}


PRIVATE = re.compile(r"_dashprivate|\._offset\b|\._length\b|\bgd\._|\._ev\b|_fullLayout|"
                     r"_transitionData|\b_pages_(?:location|content|store)\b")


@pytest.mark.parametrize("path", [*sorted(ASSETS.glob("*.js")), *PY_SOURCES],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_api_of_dash_or_plotly(path):
    text = path.read_text()
    if path.suffix == ".py":  # the code, not what its docstrings say
        text = "\n".join(line for line in text.splitlines()
                         if not line.lstrip().startswith("#"))
    assert PRIVATE.findall(text) == [], path
