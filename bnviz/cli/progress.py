"""Progress for the commands that can take more than a couple of seconds, on stderr.

A command's work reports the fraction done (``report(0.4)``), the way the jobs report theirs.
On a terminal a bar (tqdm) shows it, with the elapsed time and an estimate of what is left.
Without one (a pipe, a log, a CI job) a plain line every :data:`LINE_SECONDS` says the command
is still working and how far it is ("bnviz slides: 40% after 20 s"), so a log never goes
silent for minutes and never holds a bar's control characters; a command done within the
first interval prints nothing. The lines come from a SIGALRM timer of the command's own main
thread (no thread), so they keep coming while a step reports nothing (they wait for a long C
call to return). ``--quiet`` shows neither.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["add_quiet", "progress_bar"]

Report = Callable[[float], None]
#: Seconds between two progress lines when stderr is not a terminal.
LINE_SECONDS = 10.0


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """The ``--quiet`` option of a command that shows progress."""
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is none when stderr is not a terminal)")


@contextmanager
def progress_bar(args: argparse.Namespace, what: str) -> Iterator[Report]:
    """``report(fraction)`` for the work inside the block: a bar on a terminal's stderr,
    nothing otherwise."""
    if getattr(args, "quiet", False):
        yield lambda fraction: None
        return
    if not sys.stderr.isatty():
        with progress_lines(what) as report:
            yield report
        return
    from tqdm import tqdm

    with tqdm(total=1000, desc=what, file=sys.stderr, leave=False, dynamic_ncols=True,
              bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}") as bar:

        def report(fraction: float) -> None:
            done = min(1000, max(0, round(1000 * float(fraction))))
            if done > bar.n:
                bar.update(done - bar.n)

        yield report


@contextmanager
def progress_lines(what: str, every: float = LINE_SECONDS) -> Iterator[Report]:
    """``report(fraction)``; a line on stderr every ``every`` seconds while the block runs
    (module docstring). Where SIGALRM cannot be used (not the main thread, not POSIX), the
    lines come from the reports instead."""
    started = time.monotonic()
    done = [0.0, started]  # the fraction reported last; when the last line was written

    def line() -> None:
        done[1] = time.monotonic()
        try:
            print(f"bnviz {what}: {100 * done[0]:.0f}% after {done[1] - started:.0f} s",
                  file=sys.stderr, flush=True)
        except RuntimeError:  # the signal came while stderr was being written: next time
            pass

    def report(fraction: float) -> None:
        done[0] = min(1.0, max(done[0], float(fraction)))
        if not timed and time.monotonic() - done[1] >= every:
            line()

    try:
        previous = signal.signal(signal.SIGALRM, lambda signum, frame: line())
        signal.setitimer(signal.ITIMER_REAL, every, every)
        timed = True
    except (ValueError, AttributeError, OSError):  # not the main thread; no SIGALRM
        timed = False
    try:
        yield report
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, previous)
