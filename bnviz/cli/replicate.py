"""``bnviz replicate``: the replication report, from stored outcomes, in seconds; ``--run ID``
reruns an entry (its bnviz commands, here) and stores its new outcome
(:mod:`bnviz.replication`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bnviz.cli.commands import summary

__all__ = ["add_replicate", "run_replicate"]


def add_replicate(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("replicate", help=summary("replicate"))
    r.add_argument("--run", action="append", metavar="ID",
                   help="rerun this entry now and store its outcome (repeatable; 'all': every "
                        "entry, minutes)")
    r.add_argument("--id", action="append", dest="ids", metavar="ID",
                   help="show only this entry (repeatable)")
    r.add_argument("--json", action="store_true",
                   help='{"results": [{id, paper, result, paper_value, ours, status, '
                        'command, ...}]}')
    r.add_argument("--markdown", action="store_true", help="docs/REPLICATION.md's text")
    r.add_argument("--store", type=Path, default=None,
                   help="read and write only this outcomes file (default: this machine's "
                        "reruns in BNVIZ_HOME over the outcomes shipped with bnviz)")
    r.add_argument("--out", type=Path)


def run_replicate(args: argparse.Namespace) -> bytes:
    from bnviz.cli import execute
    from bnviz.replication.entries import entry_ids, run_entry
    from bnviz.replication.report import markdown, report, table
    from bnviz.replication.store import read_outcomes, write_outcomes

    known = entry_ids()
    for given in (args.run or []) + (args.ids or []):
        if given not in known and not (given == "all" and given in (args.run or [])):
            raise ValueError(f"unknown entry {given!r}; known: {', '.join(known)}")
    if args.json and args.markdown:
        raise ValueError("give --json or --markdown, not both")
    shown = list(args.ids or [])
    if args.run:
        todo = known if "all" in args.run else list(dict.fromkeys(args.run))
        outputs: dict = {}
        for i, entry_id in enumerate(todo, 1):
            print(f"[{i}/{len(todo)}] {entry_id} ...", file=sys.stderr, flush=True)
            outcome = run_entry(entry_id, execute, outputs)
            write_outcomes([outcome], args.store)  # one by one: a stop keeps those done
            print(f"      {outcome['status']} ({outcome['seconds']} s)", file=sys.stderr,
                  flush=True)
        shown = shown or todo
    results = report(read_outcomes(args.store))
    if shown:
        results = [r for r in results if r["id"] in shown]
    if args.json:
        return (json.dumps({"results": results}) + "\n").encode()
    if args.markdown:
        return markdown(results).encode()
    return table(results).encode()
