"""The dashboard's pages, registered with Dash Pages from the page modules themselves.

Each ``layouts/<page>.py`` declares its page(s) in a module constant ``PAGES``: a tuple of
dicts with the page's ``path``, ``name`` (the navbar's link), ``order`` (the navbar's
place), ``layout`` (a function of the URL's query, as Dash Pages calls it), and optionally
``nav`` (False: no navbar link), ``lecture_step`` (the tour step the navbar's Lecture link
opens from this page; assets/lecture.js reads it from the client config) and ``module`` (the
registry's key, when a module declares a second page). A new page is a new module in
layouts/ with its ``PAGES``; app.py lists no page. (Dash's own ``pages_folder`` discovery
would execute each module a second time, beside the import that the page's callbacks make of
it: this registry imports each module once.)
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import dash

from bnviz.web import layouts

__all__ = ["page_modules", "pages", "register_pages"]

#: Keys a page declaration may have (anything else is a typo, refused at start-up).
PAGE_KEYS = {"path", "name", "order", "layout", "nav", "module", "lecture_step"}


def page_modules() -> list[ModuleType]:
    """Every module of layouts/ (imported), in name order."""
    return [importlib.import_module(f"{layouts.__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(layouts.__path__), key=lambda m: m.name)
            if not m.name.startswith("_")]


def pages() -> list[dict]:
    """Every page the modules declare, in navbar order, each with its registry key."""
    out = []
    for module in page_modules():
        for page in getattr(module, "PAGES", ()):
            unknown = set(page) - PAGE_KEYS
            if unknown or not {"path", "name", "order", "layout"} <= set(page):
                raise ValueError(f"{module.__name__}.PAGES: a page needs path, name, order "
                                 f"and layout; unknown keys {sorted(unknown)}")
            key = page.get("module", module.__name__.rsplit(".", 1)[-1])
            out.append({**page, "module": key, "nav": page.get("nav", True)})
    return sorted(out, key=lambda p: p["order"])


def register_pages() -> None:
    """Register every declared page with Dash Pages (after ``Dash(use_pages=True)``)."""
    for page in pages():
        dash.register_page(page["module"], path=page["path"], name=page["name"],
                           order=page["order"], layout=page["layout"], nav=page["nav"])
