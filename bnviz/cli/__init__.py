"""Command line: ``bnviz partition ...`` or ``python -m bnviz partition ...`` (figures for
slides and papers, scripted).

One module per command group: :mod:`~bnviz.cli.partition`, :mod:`~bnviz.cli.figures`
(jitter, density, bnstats), :mod:`~bnviz.cli.claims`, :mod:`~bnviz.cli.lecture` (the
guided tour and its slides), :mod:`~bnviz.cli.replicate` (the replication report),
:mod:`~bnviz.cli.train` (live training, frame by frame), :mod:`~bnviz.cli.slice` (image
networks on a plane),
the jobs commands of :mod:`bnviz.jobs.cli`, and ``serve`` (:mod:`bnviz.service.stack`: nginx,
gunicorn and the job worker; it never loads torch).  Options are checked by the parameter models of
:mod:`bnviz.params` before anything heavy is imported: ``--help`` and a bad option never load
torch (the jobs commands do, to list their job types).

Bad options or files print one line on stderr and exit with code 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from bnviz.cli.claims import add_claims, run_claims
from bnviz.cli.figures import (
    add_bnstats,
    add_density,
    add_figure9,
    add_jitter,
    run_bnstats,
    run_density,
    run_figure9,
    run_jitter,
)
from bnviz.cli.lecture import add_lecture, run_lecture
from bnviz.cli.options import CLIError, Parser
from bnviz.cli.partition import add_partition, run_partition
from bnviz.cli.replicate import add_replicate, run_replicate
from bnviz.cli.slice import add_slice, run_slice_command
from bnviz.cli.train import add_train, run_train
from bnviz.service.stack import add_serve, run_serve

__all__ = ["CLIError", "execute", "main"]

COMMANDS: dict[str, Callable[[argparse.Namespace], bytes]] = {
    "partition": run_partition, "jitter": run_jitter, "bnstats": run_bnstats,
    "density": run_density, "claims": run_claims, "lecture": run_lecture,
    "replicate": run_replicate, "figure9": run_figure9, "train": run_train,
    "slice": run_slice_command}
#: Commands that return (output, exit code): jobs, the worker, data downloads.  Their parser
#: lists the job types, so it is built (and torch loaded) only when one of them is asked for;
#: otherwise ``--help`` lists them with these lines.
JOB_COMMANDS: dict[str, str] = {
    "jobs": "background image experiments (Figures 4, 5, 10, Table 1, section 5)",
    "worker": "run a job worker (Celery with BNVIZ_BROKER_URL, else the local pool)",
    "data": "image data sets"}


def _command_of(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(with_jobs: bool = True) -> Parser:
    parser = Parser(prog="bnviz",
                    description="Exact input-space partitions of batch-normalized networks.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_partition(sub)
    add_jitter(sub)
    add_density(sub)
    add_bnstats(sub)
    add_figure9(sub)
    add_claims(sub)
    add_lecture(sub)
    add_replicate(sub)
    add_train(sub)
    add_slice(sub)
    add_serve(sub)
    if with_jobs:
        from bnviz.jobs import cli as job_cli

        job_cli.add_commands(sub, Parser)
    else:
        for name, text in JOB_COMMANDS.items():
            sub.add_parser(name, help=text)
    return parser


def _run_job_command(args: argparse.Namespace) -> tuple[bytes, int]:
    from bnviz.jobs import cli as job_cli
    from bnviz.jobs.local import WorkerRunning
    from bnviz.jobs.store import StoreError

    run = {"jobs": job_cli.run_jobs, "worker": job_cli.run_worker, "data": job_cli.run_data}
    try:
        return run[args.command](args)
    except KeyError as exc:
        raise CLIError(f"no job {exc.args[0]}") from None
    except (StoreError, TimeoutError, WorkerRunning) as exc:
        raise CLIError(str(exc)) from None


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    return build_parser(with_jobs=_command_of(argv) in JOB_COMMANDS).parse_args(list(argv))


def _dispatch(args: argparse.Namespace) -> tuple[bytes, int]:
    if args.command in JOB_COMMANDS:
        return _run_job_command(args)
    return COMMANDS[args.command](args), 0


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
    if args.command == "serve":
        raise CLIError("serve runs until stopped")
    payload, code = _dispatch(args)
    if code != 0:
        raise CLIError(f"bnviz {' '.join(argv)} exited with code {code}")
    return payload


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    code = 0
    try:
        args = _parse(argv)
        if args.command == "serve":  # runs until stopped; its own one-line errors
            return run_serve(args)
        payload, code = _dispatch(args)
        out = getattr(args, "out", None)
        if out is not None:
            try:
                out.write_bytes(payload)
            except OSError as exc:
                raise CLIError(f"cannot write {out}: {exc.strerror or exc}") from None
        else:
            sys.stdout.buffer.write(payload)
            sys.stdout.flush()
    except (CLIError, ValueError) as exc:  # ValueError: InputError, PartitionTooLarge,
        print(f"bnviz: error: {exc}", file=sys.stderr)  # DataError, ParamError
        return 2
    except KeyboardInterrupt:
        return 130
    return code
