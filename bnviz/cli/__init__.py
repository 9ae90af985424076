"""Command line: ``bnviz partition ...`` or ``python -m bnviz partition ...`` (figures for
slides and papers, scripted).

One module per command group: :mod:`~bnviz.cli.partition`, :mod:`~bnviz.cli.figures`
(jitter, density, bnstats), :mod:`~bnviz.cli.claims`, :mod:`~bnviz.cli.lecture` (the
guided tour and its slides), :mod:`~bnviz.cli.replicate` (the replication report),
:mod:`~bnviz.cli.train` (live training, frame by frame), :mod:`~bnviz.cli.slice` (image
networks on a plane),
the jobs commands of :mod:`bnviz.cli.jobs`, and ``serve`` (:mod:`~bnviz.cli.serve`, which
runs :mod:`bnviz.server.stack`: nginx, gunicorn and the job worker; it never loads torch).
Options are checked by the parameter models of :mod:`bnviz.params` before anything heavy is
imported: ``--help`` and a bad option never load
torch (the jobs commands do, to list their job types).

Bad options or files print one line on stderr and exit with code 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path

from bnviz import __version__
from bnviz.cli.commands import COMMANDS, JOB_COMMANDS, Command
from bnviz.cli.options import CLIError, Parser, examples_epilog

__all__ = ["CLIError", "build_parser", "execute", "main"]


def _command_of(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(command: str | None = None) -> Parser:
    """The parser, with ``command``'s own options (its module imported); every other
    command only named, with its one line (nothing imported)."""
    parser = Parser(prog="bnviz",
                    description="Exact input-space partitions of batch-normalized networks.",
                    epilog=examples_epilog(("bnviz partition --depth 3 --width 16",
                                            "bnviz partition --help", "bnviz serve")))
    parser.add_argument("--version", action="version", version=f"bnviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser,
                                metavar="COMMAND")
    jobs = command in JOB_COMMANDS
    for name, cmd in (COMMANDS | JOB_COMMANDS).items():
        if name == command and not jobs:
            getattr(import_module(cmd.module), cmd.add)(sub)
        elif not (jobs and name in JOB_COMMANDS):
            sub.add_parser(name, help=cmd.summary)
    if jobs:  # the three job commands are built together (they list the job types)
        from bnviz.cli import jobs as job_cli

        job_cli.add_commands(sub, Parser)
    if command in sub.choices:
        cmd = (COMMANDS | JOB_COMMANDS)[command]
        own = sub.choices[command]
        own.description = cmd.summary
        own.epilog = examples_epilog(cmd.examples)
    return parser


def _function(cmd: Command):
    return getattr(import_module(cmd.module), cmd.run)


def _run_job_command(args: argparse.Namespace) -> tuple[bytes, int]:
    from bnviz.cli import jobs as job_cli
    from bnviz.jobs.local import WorkerRunning
    from bnviz.records.store import StoreError

    try:
        return getattr(job_cli, JOB_COMMANDS[args.command].run)(args)
    except KeyError as exc:
        raise CLIError(f"no job {exc.args[0]}") from None
    except (StoreError, TimeoutError, WorkerRunning) as exc:
        raise CLIError(str(exc)) from None


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    command = _command_of(argv)
    try:
        return build_parser(command).parse_args(list(argv))
    except CLIError as exc:
        raise CLIError(f"{exc}{_renamed(command, argv)}") from None


def _renamed(command: str | None, argv: Sequence[str]) -> str:
    """What a flag of before issue 43 is called now (:data:`bnviz.params.renames.
    OLD_FLAGS`), for the one line that refuses it: `` (--n is now --n-points)``."""
    from bnviz.params.renames import OLD_FLAGS

    old = OLD_FLAGS.get(command or "", {})
    used = [flag for flag in old if any(a == flag or a.startswith(f"{flag}=") for a in argv)]
    said = [f"{flag} is now {', '.join(old[flag][:-1])}{' and ' if len(old[flag]) > 1 else ''}"
            f"{old[flag][-1]}" for flag in used]
    return f" ({'; '.join(said)})" if said else ""


def _dispatch(args: argparse.Namespace) -> tuple[bytes, int]:
    if args.command in JOB_COMMANDS:
        return _run_job_command(args)
    return _function(COMMANDS[args.command])(args), 0


def execute(argv: Sequence[str]) -> bytes:
    """Run one command in this process and return what it would print (``bnviz replicate``
    runs its entries' commands this way, so an entry's ``command`` is what produced its
    numbers). A bad option raises :class:`CLIError` or ValueError, as for ``main``."""
    argv = list(argv)
    if argv[:1] == ["bnviz"]:
        argv = argv[1:]
    try:
        args = _parse(argv)
    except SystemExit:
        raise CLIError(f"bad command: bnviz {' '.join(argv)}") from None
    check_paths(args)
    if args.command == "serve":
        raise CLIError("serve runs until stopped")
    payload, code = _dispatch(args)
    if code != 0:
        raise CLIError(f"bnviz {' '.join(argv)} exited with code {code}")
    return payload


#: Options naming a file a command reads, and options naming one it writes (a Path once
#: parsed): each checked before any work.
INPUT_FILES = ("weights", "weights_file", "data", "model", "batch", "plane")
OUTPUT_FILES = ("out", "save", "save_weights", "movie", "geometry")
#: The formats whose output is binary: never written to a terminal.
BINARY_FORMATS = ("png",)


def check_paths(args: argparse.Namespace, terminal: bool = False) -> None:
    """Every file a command names, checked before it starts: inputs exist and are files,
    outputs go to an existing directory and are not one; binary output never goes to a
    ``terminal`` (the process's stdout is one)."""
    for name in INPUT_FILES:
        path = getattr(args, name, None)
        if isinstance(path, Path) and not path.is_file():
            what = "a directory, not a file" if path.is_dir() else "no such file"
            raise CLIError(f"--{name.replace('_', '-')}: {str(path)[-80:]}: {what}")
    for name in OUTPUT_FILES:
        path = getattr(args, name, None)
        if isinstance(path, Path):
            flag = f"--{name.replace('_', '-')}"
            if path.is_dir():
                raise CLIError(f"{flag}: {str(path)[-80:]} is a directory: name a file")
            if not path.parent.is_dir():
                raise CLIError(f"{flag}: no directory {str(path.parent)[-80:]!r}")
    if (terminal and getattr(args, "format", None) in BINARY_FORMATS
            and getattr(args, "out", None) is None):
        raise CLIError(f"--format {args.format} is binary: write it to a file with --out "
                       "FILE (or pipe it), not to the terminal")


def _is_text(payload: bytes) -> bool:
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in payload


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    code = 0
    try:
        args = _parse(argv)
        check_paths(args, terminal=sys.stdout.isatty())
        if args.command == "serve":  # runs until stopped; its own one-line errors
            return _function(COMMANDS["serve"])(args)
        payload, code = _dispatch(args)
        out = getattr(args, "out", None)
        if out is not None:
            try:
                out.write_bytes(payload)
            except OSError as exc:
                raise CLIError(f"cannot write {out}: {exc.strerror or exc}") from None
        elif sys.stdout.isatty() and not _is_text(payload):
            raise CLIError("the output is binary: write it to a file with --out FILE (or "
                           "pipe it), not to the terminal")
        else:
            sys.stdout.buffer.write(payload)
            sys.stdout.flush()
    except (CLIError, ValueError) as exc:  # ValueError: InputError, PartitionTooLarge,
        print(f"bnviz: error: {exc}", file=sys.stderr)  # DataError, ParamError
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`bnviz replicate | head`): no traceback
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # no real stdout (a test's capture)
            pass
        return 1
    return code
