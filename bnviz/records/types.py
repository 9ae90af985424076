"""What a job type is and how a job reports while it runs (the table of every job type is
:mod:`bnviz.jobs.registry`).

A job type (:class:`JobType`) is three functions and one flag:

* ``check(raw) -> params``: validate and complete the parameters (ParamError with one clear
  sentence). Checked parameters are what is stored, what the dedupe key is made of, and what
  ``run`` receives (the runner checks them again: a store can be written by hand).
* ``run(params, ctx, dist) -> dict``: do the work, reporting through ``ctx`` (a
  :class:`JobContext`); returns values added to the job's summary.
* ``summarise(metric rows) -> dict``: the summary the jobs page and ``jobs show`` draw.
* ``result``: whether ``run`` writes arrays to the job's result file
  (``ctx.save_result``, :mod:`bnviz.records.results`). A page reuses a succeeded job of the same
  parameters only while its result file is there.

The types live beside the code they run, which imports this module for its vocabulary; the
table of every type (:func:`bnviz.jobs.registry.get_job_type`) is a module of its own, the
one that imports them, so that nothing here imports a job's code back (no import cycle).
Nothing here imports torch.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from bnviz.messages import brief
from bnviz.params.fields import InputError
from bnviz.params.jobs import IMAGE_JOB_PARAMS
from bnviz.params.model import parse
from bnviz.params.renames import current_params

__all__ = ["IMAGE_JOB_TYPES", "Cancelled", "DistInfo", "Interrupted", "JobContext", "JobType",
           "ParamError", "RecordingContext", "validate_params"]

#: The image experiments: one parameter model each (:mod:`bnviz.params.jobs`).
IMAGE_JOB_TYPES: tuple[str, ...] = tuple(IMAGE_JOB_PARAMS)


class Cancelled(Exception):
    """Raised inside a job's work (by ``ctx.progress``) once the job was cancelled."""


class Interrupted(Exception):
    """Raised inside a job's work (by ``ctx.progress``) when its worker is being stopped (a
    deploy, a restart): the job goes back to the queue and resumes from its last
    checkpoint on the next worker."""


class ParamError(InputError):
    """A bad job parameter: a message for the user (the parameter layer's InputError)."""


class JobContext(Protocol):
    """What a job reports through; the runner's is :class:`bnviz.jobs.runner.StoreContext`."""

    device: Any  # torch.device

    def progress(self, fraction: float) -> None: ...  # may raise Cancelled
    def log(self, line: str) -> None: ...
    def metric(self, row: dict[str, Any]) -> None: ...
    def save_result(self, write: Callable[[Any], None]) -> None: ...
    # A trained network kept beside the result (``write(path)`` writes its safetensors file).
    def save_network(self, name: str, write: Callable[[Any], None]) -> None: ...
    # A long job saves its state now and then (tensors, numbers, lists and dicts of them);
    # a job started again after its worker was lost resumes from the last one (None: none).
    def checkpoint(self, state: dict[str, Any]) -> None: ...
    def restore(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class DistInfo:
    """This process's place in a DDP job (rank 0 reports)."""

    rank: int = 0
    world: int = 1


def _cpu() -> Any:
    import torch

    return torch.device("cpu")


@dataclass
class RecordingContext:
    """A context that keeps everything in memory (tests, scripts, and the DDP ranks > 0)."""

    device: Any = field(default_factory=_cpu)
    fractions: list[float] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    cancel_at: float | None = None  # raise Cancelled once progress reaches this
    interrupt_at: float | None = None  # raise Interrupted once progress reaches this
    result: dict[str, Any] | None = None  # the arrays save_result wrote
    networks: dict[str, bytes] = field(default_factory=dict)  # the files save_network wrote
    saved: dict[str, Any] | None = None  # the last checkpoint, with the rows it had seen

    def progress(self, fraction: float) -> None:
        self.fractions.append(float(fraction))
        if self.cancel_at is not None and fraction >= self.cancel_at:
            raise Cancelled
        if self.interrupt_at is not None and fraction >= self.interrupt_at:
            self.interrupt_at = None  # once: the resumed run goes on
            raise Interrupted

    def log(self, line: str) -> None:
        self.lines.append(line)

    def metric(self, row: dict[str, Any]) -> None:
        self.rows.append(row)

    def checkpoint(self, state: dict[str, Any]) -> None:
        import copy

        self.saved = {"rows": len(self.rows), "state": copy.deepcopy(state)}

    def restore(self) -> dict[str, Any] | None:
        """The last checkpoint; the rows recorded after it are dropped, as the store's are."""
        if self.saved is None:
            return None
        del self.rows[self.saved["rows"]:]
        return self.saved["state"]

    def save_network(self, name: str, write: Callable[[Any], None]) -> None:
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.safetensors"
            write(path)
            self.networks[name] = path.read_bytes()

    def save_result(self, write: Callable[[Any], None]) -> None:
        import numpy as np

        buffer = io.BytesIO()
        write(buffer)
        buffer.seek(0)
        with np.load(buffer, allow_pickle=False) as f:
            self.result = {k: f[k] for k in f.files}


@dataclass(frozen=True)
class JobType:
    """One kind of job (see the module docstring)."""

    name: str
    check: Callable[[dict[str, Any]], dict[str, Any]]
    run: Callable[[dict[str, Any], JobContext, DistInfo], dict[str, Any]]
    summarise: Callable[[list[dict[str, Any]]], dict[str, Any]] = lambda rows: {}
    result: bool = False


def validate_params(schema: type, raw: object, what: str | None,
                    labels: Mapping[str, str] | None = None) -> Any:
    """``raw`` (a job's parameters) validated into ``schema`` by the one parameter layer
    (:func:`bnviz.params.parse`: a model of :mod:`bnviz.params`): unknown names, wrong types
    and values out of range raise ParamError with one line naming the parameter (by its
    ``labels``, e.g. the CLI's flags), after ``what:`` (the job type) unless ``what`` is None
    (the labels say enough). A record stored under the names of before issue 43 (``n``,
    ``seed``) is read under today's first (:func:`bnviz.params.renames.current_params`)."""
    prefix = f"{what}: " if what else ""
    raw = current_params(schema, raw)
    if not isinstance(raw, dict):
        raise ParamError(f"{prefix}the parameters must be a mapping, got {brief(raw)}")
    names = {f.name for f in dataclasses.fields(schema)}
    unknown = sorted(str(k) for k in set(raw) - names)
    if unknown:
        raise ParamError(f"{prefix}unknown parameter {brief(unknown[0])} (known: "
                         f"{', '.join(sorted(names))})")
    try:
        return parse(schema, raw, labels)
    except InputError as exc:
        raise ParamError(f"{prefix}{exc}") from None
