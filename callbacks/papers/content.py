"""What the debate page's controls start from, and its TeX text: shared by its layout and its
callbacks (the reset of the weight plane's points, the check of the convex view's data set)."""

from __future__ import annotations

from dash import dcc

#: Data sets of the Ergen et al. view (each has at least two classes).
ERGEN_DATASETS = ("blobs", "moons", "circles", "spiral")

#: Example 3.2 of Dannemann & Junike: inputs and labels.
DJ_EXAMPLE = [{"x1": 1.0, "x2": 1.0, "y": 2.0}, {"x1": 1.0, "x2": 2.0, "y": 5.0},
              {"x1": 2.0, "x2": 3.0, "y": 13.0}]


def math_text(text: str, **kwargs) -> dcc.Markdown:
    """Markdown whose ``$...$`` is TeX, typeset by the MathJax that Dash bundles (served from
    this origin, like every other script: the content security policy needs nothing more)."""
    return dcc.Markdown(text, mathjax=True, **kwargs)
