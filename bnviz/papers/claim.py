"""One checked claim of a paper (:class:`Claim`: paper value beside computed value) and the papers
they come from.  The checks are in ``checks_*.py`` (one module per paper or pair of papers),
the table of all of them in :mod:`bnviz.papers.claims`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from bnviz.papers.titles import PAPERS

__all__ = ["F64", "PAPERS", "Claim", "as_floats"]

#: Every check computes in float64.
F64 = torch.float64


@dataclass(frozen=True)
class Claim:
    """One statement, the value the paper states (or its formula gives) and the value computed
    independently; ``how`` says how and with which tolerance, ``view`` where the page shows it.

    ``statement`` is plain text (the command line's table); ``statement_tex`` is the same
    sentence in Markdown with inline TeX math between ``$`` signs (the debate page's table
    renders it with MathJax). It is keyword-only, so it follows ``view`` in the checks."""

    id: str
    paper: str
    statement: str
    paper_value: Any
    computed: Any
    holds: bool
    how: str
    view: str = "/papers"
    statement_tex: str = field(kw_only=True)

    def as_json(self) -> dict:
        return {"id": self.id, "paper": self.paper, "statement": self.statement,
                "statement_tex": self.statement_tex, "paper_value": self.paper_value,
                "computed": self.computed, "holds": bool(self.holds), "how": self.how,
                "view": self.view}


def as_floats(t: torch.Tensor | np.ndarray) -> list[float]:
    """A tensor or array as a flat list of Python floats (the JSON of a claim's values)."""
    return [float(v) for v in np.asarray(torch.as_tensor(t).detach().cpu()).ravel()]
