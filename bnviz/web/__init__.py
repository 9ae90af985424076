"""The dashboard (Dash): the only part of bnviz that imports Dash or Plotly's figure objects.

Its code stays at the repository's top, where a reader looks for it: ``app.py`` (the app
object and its server routes), ``layouts/`` (one module per page, which registers the page and
imports that page's callbacks) and ``callbacks/``. This package names them by symbolic links, so
that the wheel installs them as ``bnviz.web.app``, ``bnviz.web.layouts`` and
``bnviz.web.callbacks``: the wheel's only top-level name is ``bnviz``, and no other project's
``app`` or ``callbacks`` can collide with ours. Import them by these names only (the
import-linter contracts in ``.importlinter`` refuse the top-level ones).
"""
