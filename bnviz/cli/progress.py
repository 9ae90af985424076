"""Progress bars for the commands that take more than a couple of seconds (tqdm, on stderr).

A command's work reports the fraction done (``report(0.4)``), the way the jobs report theirs;
the bar shows it, with the elapsed time and an estimate of what is left.  Nothing is drawn
when stderr is not a terminal (a pipe, a log, a test) or with ``--quiet``, so the output of a
script never holds a bar.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["add_quiet", "progress_bar"]

Report = Callable[[float], None]


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """The ``--quiet`` option of a command that shows progress."""
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is none when stderr is not a terminal)")


@contextmanager
def progress_bar(args: argparse.Namespace, what: str) -> Iterator[Report]:
    """``report(fraction)`` for the work inside the block: a bar on a terminal's stderr,
    nothing otherwise."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        yield lambda fraction: None
        return
    from tqdm import tqdm

    with tqdm(total=1000, desc=what, file=sys.stderr, leave=False, dynamic_ncols=True,
              bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}") as bar:

        def report(fraction: float) -> None:
            done = min(1000, max(0, round(1000 * float(fraction))))
            if done > bar.n:
                bar.update(done - bar.n)

        yield report
