"""``bnviz serve``'s parser; the command runs :func:`bnviz.server.stack.run_serve` (the
production stack: nginx in front of gunicorn, and the job worker).  The parser lives with the
command line, which sits above the server, so that the server imports nothing of it."""

from __future__ import annotations

import argparse

from bnviz.cli.commands import summary
from bnviz.server.stack import run_serve

__all__ = ["add_serve", "run_serve"]


def add_serve(sub: argparse._SubParsersAction) -> None:
    """The ``serve`` command's parser."""
    p = sub.add_parser("serve", help=summary("serve"))
    p.add_argument("--no-worker", action="store_true",
                   help="no job worker (it runs elsewhere, e.g. compose's worker service)")
    p.add_argument("--no-nginx", action="store_true",
                   help="gunicorn alone on BNVIZ_HOST:BNVIZ_PORT, what make run runs: no nginx "
                        "in front, no supervised job worker")
