"""``python -m bnviz``: see :mod:`bnviz.cli`."""

import signal
import sys


def _exit_when_stopped_early(*_: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(0)


if sys.argv[1:2] == ["worker"]:
    # A worker stopped while it is still starting (a deploy, `bnviz serve` stopped at once)
    # has claimed no job yet: it exits cleanly. Its own graceful handler, which hands its
    # jobs back to the queue, replaces this one once it runs.
    signal.signal(signal.SIGTERM, _exit_when_stopped_early)

from bnviz.cli import main  # noqa: E402

code = main()
if sys.argv[1:2] == ["worker"]:
    # Stopped gracefully: a second SIGTERM (a process group's, then its supervisor's) must
    # not kill it while the interpreter ends (Python puts back the default, deadly handler
    # for the signals it handled; an ignored one it leaves alone).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.exit(code)
