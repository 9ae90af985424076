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


def test_a_misspelt_class_is_caught():
    assert _undefined('document.querySelector("#explorer-grahp .js-plotly-plot")') == {
        "explorer-grahp"}
    assert _undefined('e.target.closest(".lecture-slidr")') == {"lecture-slidr"}


# --------------------------------------------------------------------------- the client config

#: ``const X = window.bnvizConfig.<page>;`` in a script: X is that page's config
CONFIG_ALIAS = re.compile(r"const\s+(\w+)\s*=\s*window\.bnvizConfig\.(\w+)\s*;")


def _config_misses(source: str) -> set[str]:
    """What a script reads from the client config that the config does not hold: a page,
    a key of a page's config (``CONFIG.steps`` or ``window.bnvizConfig.lecture.steps``) or
    an id (``IDS.COUNTER``, where ``const IDS = CONFIG.ids``)."""
    from bnviz.web.layouts.client_config import client_config

    config = client_config()
    misses = set()
    aliases = dict(CONFIG_ALIAS.findall(source))
    for page in set(aliases.values()) | set(re.findall(r"window\.bnvizConfig\.(\w+)", source)):
        if page not in config:
            misses.add(page)
    for page, key in re.findall(r"window\.bnvizConfig\.(\w+)\.(\w+)", source):
        if page in config and key not in config[page]:
            misses.add(f"{page}.{key}")
    for alias, page in aliases.items():
        if page not in config:
            continue
        for key in re.findall(rf"\b{alias}\.(\w+)", source):
            if key not in config[page]:
                misses.add(f"{page}.{key}")
        for ids_alias in re.findall(rf"const\s+(\w+)\s*=\s*{alias}\.ids\s*;", source):
            misses |= {f"{page}.ids.{name}"
                       for name in re.findall(rf"\b{ids_alias}\.(\w+)", source)
                       if name not in config[page]["ids"]}
    return misses


@pytest.mark.parametrize("script", sorted(p.name for p in ASSETS.glob("*.js")))
def test_every_config_entry_a_script_reads_is_served(script):
    assert _config_misses((ASSETS / script).read_text()) == set()


def test_a_misspelt_config_entry_is_caught():
    source = (ASSETS / "lecture.js").read_text()
    assert "IDS.COUNTER" in source and "CONFIG.steps" in source
    assert _config_misses(source.replace("IDS.COUNTER", "IDS.COUNTR", 1)) == {
        "lecture.ids.COUNTR"}
    assert _config_misses(source.replace("CONFIG.steps", "CONFIG.stepz", 1)) == {
        "lecture.stepz"}
    assert _config_misses("const C = window.bnvizConfig.lectur;") == {"lectur"}


@pytest.mark.parametrize("script", sorted(p.name for p in ASSETS.glob("*.js")))
def test_no_script_writes_an_id_itself(script):
    """Ids come from the config: no component id of an ids module is a string literal of a
    script (a CSS class of the same text is allowed; the page's root is both)."""
    from bnviz.web.callbacks.explorer import ids as explorer_ids
    from bnviz.web.callbacks.lecture import ids as lecture_ids
    from bnviz.web.layouts.client_config import module_ids

    every_id = {*module_ids(lecture_ids).values(), *module_ids(explorer_ids).values()}
    written = _js_names((ASSETS / script).read_text(), _prefixes()) & every_id
    assert written - _css_classes() == set(), f"{script} writes ids itself"


def test_the_page_carries_the_config_before_the_scripts(tmp_home):
    """Every page's HTML holds the config as JSON, equal to client_config(), before the
    scripts of assets/ that read it; no id can end the element early."""
    import json

    from bnviz.lecture.tour import TOUR
    from bnviz.web.app import app
    from bnviz.web.layouts.client_config import CONFIG_ID, client_config

    html = app.server.test_client().get("/lecture").get_data(as_text=True)
    m = re.search(rf'<script type="application/json" id="{CONFIG_ID}">(.*?)</script>', html,
                  flags=re.S)
    assert m, "no config element in the page"
    assert json.loads(m.group(1)) == client_config()
    assert m.end() < html.index("00-config.js") < html.index("lecture.js")
    config = client_config()
    assert config["lecture"]["steps"] == len(TOUR)
    assert set(config["lecture"]["pageStep"]) == {"/jitter", "/density", "/papers"}
    assert set(config["lecture"]["pageStep"].values()) <= {step.key for step in TOUR}


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
