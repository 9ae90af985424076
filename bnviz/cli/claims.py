"""``bnviz claims``: every closed-form claim of the five papers, checked numerically.

Its only parameters are claim ids, checked against the claims table itself
(:func:`bnviz.papers.claims.run_claims` names an unknown one)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bnviz.cli.commands import summary
from bnviz.cli.progress import add_quiet

__all__ = ["add_claims", "run_claims"]


def add_claims(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("claims", help=summary("claims"))
    add_quiet(c)
    c.add_argument("--id", action="append", dest="ids", metavar="ID",
                   help="only this claim (repeatable); default: all")
    c.add_argument("--json", action="store_true", help="JSON output (default: a table)")
    c.add_argument("--out", type=Path)
    c.add_argument("--device", default=None)


def run_claims(args: argparse.Namespace) -> bytes:
    """``{"claims": [{id, paper, statement, statement_tex, paper_value, computed, holds,
    how, view}]}``, or a table: one line per claim, then how it was computed."""
    from bnviz.cli.progress import progress_bar
    from bnviz.device import pick_device
    from bnviz.papers.claims import run_claims as check_claims

    with progress_bar(args, "claims") as report:
        claims = check_claims(args.ids, device=pick_device(args.device), progress=report)
    if args.json:
        return (json.dumps({"claims": [c.as_json() for c in claims]}) + "\n").encode()

    def short(value) -> str:
        text = json.dumps(value, default=float)
        return text if len(text) <= 60 else text[:57] + "..."

    lines = []
    for c in claims:
        lines += [f"{'holds' if c.holds else 'FAILS'}  {c.id}  ({c.paper})",
                  f"       {c.statement}",
                  f"       paper: {short(c.paper_value)}   computed: {short(c.computed)}",
                  f"       {c.how}", ""]
    return "\n".join(lines).encode()
