"""``python -m bnviz jobs ...``, ``python -m bnviz worker`` and ``python -m bnviz data ...``.

    jobs submit TYPE [--dataset digits --arch resnet9 --epochs 5 ...] [--json]
    jobs run TYPE [... --lrs 0.003,0.01 --validation 0.2] [--json]   (here, in the foreground)
    jobs list [--json]
    jobs show ID [--json]
    jobs wait ID [--timeout S] [--json]     (exit code 0 if the job succeeded, 1 if not)
    jobs cancel ID
    jobs rerun ID [--json]
    worker [--concurrency N]                 (Celery with BNVIZ_BROKER_URL, else the local pool)
    data download NAME [--mirror URL]        (cifar10, cifar100, svhn, imagenette)

``jobs submit`` starts the image experiments; the other commands handle every job, those the
pages start too (``density``, ``landscape-2d``, ``jitter-training``). The submit flags are
made from the parameter models (:data:`bnviz.params.jobs.JOB_OPTIONS`: name, default, help
text, the types that have it); parameters are checked by
:func:`bnviz.images.params.check_params`: a bad one is one line on stderr and exit code 2,
like every other bnviz command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bnviz.cli.commands import summary
from bnviz.cli.progress import add_quiet
from bnviz.jobs.registry import get_job_type
from bnviz.params.jobs import JOB_OPTIONS
from bnviz.records.types import IMAGE_JOB_TYPES

__all__ = ["add_commands"]


def add_commands(sub: argparse._SubParsersAction, parser_class: type) -> None:
    jobs = sub.add_parser("jobs", help=summary("jobs"))
    jsub = jobs.add_subparsers(dest="jobs_command", required=True, parser_class=parser_class)
    s = jsub.add_parser("submit", help="submit a job")
    s.add_argument("type", choices=IMAGE_JOB_TYPES)
    _job_flags(s)
    s.add_argument("--json", action="store_true", help='print {"id": ...}')
    s.add_argument("--id-only", action="store_true",
                   help="print the job's id alone, for scripts: id=$(bnviz jobs submit ...)")
    r = jsub.add_parser("run", help="run an experiment in the foreground, here, and print "
                        "its summary; --lrs sweeps the learning rate of a training one")
    r.add_argument("type", choices=IMAGE_JOB_TYPES)
    _job_flags(r)
    r.add_argument("--lrs", default=None,
                   help="comma-separated learning rates to sweep (training types): each "
                        "arm's rate is chosen on held-out images with --validation, else on "
                        "the test images")
    r.add_argument("--extend-lrs", action="store_true",
                   help="with --lrs: while an arm's best rate is the grid's largest "
                        "(smallest), add twice (half) that rate, up to 4 more")
    r.add_argument("--json", action="store_true", help="JSON output (default: a table)")
    r.add_argument("--out", type=Path)
    r.add_argument("--device", default=None)
    ls = jsub.add_parser("list", help="the jobs, newest first")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--limit", type=int, default=50)
    for name, text in (("show", "one job: status, parameters, metrics, log"),
                       ("wait", "wait until a job ends"), ("cancel", "cancel a job"),
                       ("rerun", "submit a job again with the same parameters")):
        p = jsub.add_parser(name, help=text)
        p.add_argument("id")
        p.add_argument("--json", action="store_true")
        if name == "wait":
            p.add_argument("--timeout", type=float, default=None, help="seconds")
            add_quiet(p)
    w = sub.add_parser("worker", help=summary("worker"))
    w.add_argument("--concurrency", type=int, default=None,
                   help="jobs at a time (default: cores, at least 2; local: BNVIZ_LOCAL_WORKERS)")
    w.add_argument("--idle-exit", type=float, default=None,
                   help="local worker: exit after this many idle seconds (0: never)")
    d = sub.add_parser("data", help=summary("data"))
    dsub = d.add_subparsers(dest="data_command", required=True, parser_class=parser_class)
    dl = dsub.add_parser("download", help="download a data set into BNVIZ_DATA (internet)")
    dl.add_argument("name", choices=("cifar10", "cifar100", "svhn", "imagenette"))
    dl.add_argument("--mirror", default=None, help="base URL of a mirror")


def _job_flags(parser: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """The image jobs' parameters as flags (from the models: name, default, help, types)."""
    for option in JOB_OPTIONS:
        if option.name in skip:
            continue
        default = (",".join(map(str, option.default)) if option.kind == "floats" else
                   option.default)
        parser.add_argument(option.flag, dest=option.name, default=None,
                            help=f"{option.help} (default {default}; "
                            f"{', '.join(option.types)})"
                            if len(option.types) < len(IMAGE_JOB_TYPES) else f"{option.help} "
                            f"(default {default})")


def _line(job) -> str:
    created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(job.created))
    return (f"{job.id}  {job.type:<16} {job.status:<10} {100 * job.progress:5.1f}%  "
            f"{job.params.get('dataset', ''):<12} {job.device or '-':<8} {created}"
            + (f"  {job.error}" if job.error else ""))


def _dump(value: Any) -> bytes:
    return (json.dumps(value) + "\n").encode()


def _for_people(value: Any) -> Any:
    """A value as a person reads it: floats to 4 significant digits, in lists and dicts too
    (``--json`` keeps every digit)."""
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _for_people(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_for_people(v) for v in value]
    return value


def flag_message(text: str) -> str:
    """A job parameter's message as the command line says it: the field it starts with (the
    API's name, ``epochs: ...``) becomes the flag (``--epochs: ...``)."""
    from bnviz.params.jobs import JOB_FLAGS

    name, sep, rest = text.partition(":")
    word, _, tail = name.partition(" ")  # "eps is not a parameter of ..."
    if word in JOB_FLAGS and (sep or tail):
        return JOB_FLAGS[word] + (f" {tail}" if tail else "") + sep + rest
    return text


def run_jobs(args: argparse.Namespace) -> tuple[bytes, int]:
    from bnviz.records.types import ParamError

    try:
        return _run_jobs(args)
    except ParamError as exc:
        raise ParamError(flag_message(str(exc))) from None


def _run_jobs(args: argparse.Namespace) -> tuple[bytes, int]:
    from bnviz import jobs

    cmd = args.jobs_command
    if cmd == "run":
        return _run_here(args)
    if cmd == "submit":
        params = {option.name: getattr(args, option.name) for option in JOB_OPTIONS
                  if getattr(args, option.name) is not None}
        job = jobs.submit_job(args.type, params)
        if args.json:
            return _dump({"id": job.id}), 0
        if args.id_only:
            return f"{job.id}\n".encode(), 0
        return f"submitted job {job.id} ({job.type}, {job.backend} backend)\n".encode(), 0
    if cmd == "list":
        listed = jobs.list_jobs(max(1, min(args.limit, 1000)))
        if args.json:
            return _dump({"jobs": [j.to_json() for j in listed]}), 0
        return "".join(_line(j) + "\n" for j in listed).encode() or b"no jobs\n", 0
    if cmd == "show":
        details = jobs.job_details(args.id)
        if details is None:
            raise KeyError(args.id)
        if args.json:
            return _dump(details), 0
        summary = (details["summary"] or
                   get_job_type(details["type"]).summarise(details["metrics"]))
        text = [f"{k}: {_for_people(details[k])}" for k in (
            "id", "type", "status", "progress", "device", "error", "seconds", "params")
            if details.get(k) is not None]  # no "error: None"
        arms = summary.get("arms")
        if isinstance(arms, dict):  # an image job: each arm's metrics
            text += [f"{arm}: {json.dumps(_for_people(v))}" for arm, v in arms.items()]
        else:  # a slice job: its counts per layer, tiles, hosts, folder
            text += [f"{k}: {json.dumps(_for_people(v))}" for k, v in summary.items()]
        text += ["log:"] + ["  " + line for line in details["log"][-20:]]
        return ("\n".join(text) + "\n").encode(), 0
    if cmd == "wait":
        from bnviz.cli.progress import progress_bar

        with progress_bar(args, f"job {args.id}") as report:
            job = jobs.wait_job(args.id, args.timeout, progress=report)
        code = 0 if job.status == "succeeded" else 1
        if args.json:
            return _dump(job.to_json()), code
        return (f"{job.id} {job.status}" + (f": {job.error}" if job.error else "") +
                "\n").encode(), code
    if cmd == "cancel":
        status = jobs.cancel_job(args.id)
        word = "cancelled" if status == "cancelled" else (
            "asked to stop" if status == "running" else f"already {status}")
        return (_dump({"id": args.id, "status": status}) if args.json else
                f"{args.id}: {word}\n".encode()), 0
    job = jobs.rerun_job(args.id)
    return (_dump({"id": job.id}) if args.json else
            f"submitted job {job.id} (a re-run of {args.id})\n".encode()), 0


def run_worker(args: argparse.Namespace) -> tuple[bytes, int]:
    from bnviz.config import check_settings
    from bnviz.jobs.celery_app import broker_url
    from bnviz.jobs.celery_worker import run_celery_worker
    from bnviz.jobs.local import LocalWorker

    check_settings()  # a bad setting stops the worker at its start, in one line
    if args.concurrency is not None and not 1 <= args.concurrency <= 256:
        raise ValueError("--concurrency must be from 1 to 256")
    if broker_url():
        run_celery_worker(args.concurrency or 1)
    else:
        LocalWorker(concurrency=args.concurrency, idle_exit=args.idle_exit).serve()
    return b"", 0


def run_data(args: argparse.Namespace) -> tuple[bytes, int]:
    from bnviz.data.download import download

    path = download(args.name, args.mirror)
    return f"{args.name}: {path}\n".encode(), 0


def _run_here(args: argparse.Namespace) -> tuple[bytes, int]:
    """``bnviz jobs run``: the job type's own code in this process
    (:func:`bnviz.images.sweep.run_here`, or :func:`~bnviz.images.sweep.lr_sweep` with
    ``--lrs``); progress on stderr; JSON or a table."""
    from bnviz.device import pick_device
    from bnviz.images.sweep import lr_sweep, run_here

    params = {option.name: getattr(args, option.name) for option in JOB_OPTIONS
              if getattr(args, option.name) is not None}
    device = pick_device(args.device)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.lrs is None:
        if args.extend_lrs:
            raise ValueError("--extend-lrs widens a sweep: give --lrs too")
        result = run_here(args.type, params, device, log)
        return (_dump(result) if args.json else
                "".join(f"{arm}: {json.dumps(v)}\n" for arm, v in result["arms"].items())
                .encode()), 0
    try:
        lrs = [float(v) for v in args.lrs.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--lrs: comma-separated numbers, got {args.lrs!r}") from None
    if "lr" in params:
        raise ValueError("give --lr or --lrs, not both")
    result = lr_sweep(args.type, params, lrs, device, log, extend=args.extend_lrs)
    if args.json:
        return _dump(result), 0
    lines = [f"{args.type} on {result['params']['dataset']}, {result['params']['runs']} runs, "
             f"learning rates {', '.join(f'{lr:g}' for lr in result['lrs'])}"]
    for arm, a in result["arms"].items():
        lines.append(f"  {arm:<12} lr {a['lr']:<6g} (by {a['selected_by']})  test accuracy "
                     f"{100 * a['final']:.2f} +- {100 * a['std']:.2f} %")
    if result["at_edge"]:
        lines.append(f"  at the edge of the grid: {', '.join(result['at_edge'])} (their best "
                     "rate may lie beyond it)")
    return ("\n".join(lines) + "\n").encode(), 0
