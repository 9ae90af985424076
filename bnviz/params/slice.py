"""A slice of an image network: its settings and their caps, and the one model of what is
cut, which ``bnviz slice`` and the /slice page's ``slice`` job both fill
(:class:`SliceSetup`; :func:`bnviz.slices.setup.slice_networks` runs it).

Bounded before any work: the BN mode, the mini-batches of train mode (:data:`~bnviz.params.
caps.SLICE_LIMITS`), and the regions, estimated for the very network, plane and window by
:func:`bnviz.slices.cost.estimate_regions` (exact cuts of a sample of the window, with a
standard error; the caller checks its bound, the estimate + 3 standard errors, with
:func:`check_slice_regions` before the cut) against :data:`~bnviz.caps.SLICE_MAX_REGIONS`
(the page: :data:`~bnviz.caps.SLICE_PAGE_MAX_REGIONS`; a slice job, :class:`SliceJobParams`:
:data:`~bnviz.caps.SLICE_JOB_MAX_REGIONS`, which a refusal over an interactive cap names).
"""

from __future__ import annotations

import os
from typing import Any

from bnviz.caps import (
    ARCHS,
    BN_SLICE_MODES,
    MAX_EXTENT,
    SEED_MAX,
    SLICE_JOB_MAX_REGIONS,
    SLICE_JOB_MAX_TOTAL_REGIONS,
    SLICE_LIMITS,
    SLICE_MAX_REGIONS,
    SLICE_MAX_TOTAL_REGIONS,
    SLICE_PAGE_MAX_REGIONS,
    SLICE_REFERENCE_MULTIPLY_ADDS,
)
from bnviz.messages import brief
from bnviz.params.fields import InputError, checked, choice, real, text, whole, whole_or_none
from bnviz.params.model import model_check, params_dataclass

__all__ = ["AS_A_JOB", "BOUND_ERRORS", "SliceJobParams", "SlicePageParams", "SliceParams",
           "SliceSetup", "check_slice_regions", "image_indices", "slice_region_cap"]

_S = SLICE_LIMITS
#: The longest path of a file a slice reads (the command line's files).
_PATH_CHARS = 4096
_ONE_OR_THREE = "three different test image indices, e.g. 0,1,2 (or one index)"


@params_dataclass
class SliceParams:
    """How a slice is cut: BN with its running statistics (``eval``) or with the statistics
    of ``batches`` mini-batches of ``batch_size`` images (``train``), the window's half-width
    (``extent``; 0: the default window about the images), the region cap, and how the cut
    is shared out (``tiles`` cut by ``workers`` processes, merged exactly)."""

    bn: choice(BN_SLICE_MODES) = "eval"
    batches: whole(*_S["batches"]) = 1
    batch_size: whole(*_S["batch_size"]) = 64
    seed: whole(0, SEED_MAX) = 0
    extent: real(0.0, MAX_EXTENT) = 0.0
    max_regions: whole(1, SLICE_MAX_REGIONS) = SLICE_MAX_REGIONS
    #: The window cut as this many tiles, each exact, merged by full code (1: one cut).
    tiles: whole(*_S["tiles"]) = 1
    #: Processes cutting the tiles (None: every usable core; 1: this process).
    workers: whole_or_none(*_S["workers"]) = None

    @model_check
    def _consistent(self) -> None:
        if self.batches > 1 and self.bn != "train":
            raise InputError("several mini-batches need BN in train mode (--bn train): eval "
                             "mode's running statistics are one", "batches")


#: A slice's cap acts on its region estimate plus this many standard errors, widened to
#: Student's t at the error's degrees of freedom (the same one-sided level, 99.87 %:
#: :mod:`bnviz.slices.cost`).
BOUND_ERRORS = 3


#: What a refusal over an interactive cap adds when a slice job could cut the window (the
#: /slice page shows its "run as a job" control on it).
AS_A_JOB = "or run it as a slice job"


def _total_cap(params: SliceParams) -> int:
    """K mini-batches' partitions together: a slice job's cap, or an interactive one's."""
    job = isinstance(params, SliceJobParams)
    return SLICE_JOB_MAX_TOTAL_REGIONS if job else SLICE_MAX_TOTAL_REGIONS


def slice_region_cap(params: SliceParams, multiply_adds: int = 0) -> int:
    """The regions one partition may have: ``max_regions``, and K mini-batches' partitions
    together within :data:`~bnviz.caps.SLICE_MAX_TOTAL_REGIONS` (a slice job's:
    :data:`~bnviz.caps.SLICE_JOB_MAX_TOTAL_REGIONS`; a batch's share), scaled down for a
    network of more ``multiply_adds`` an image than
    :data:`~bnviz.caps.SLICE_REFERENCE_MULTIPLY_ADDS` (a region's cut costs in proportion)."""
    cap = min(params.max_regions * params.batches, _total_cap(params)) // params.batches
    return int(cap * _share(multiply_adds))


def _share(multiply_adds: int) -> float:
    """The share of the region caps a network of ``multiply_adds`` an image gets."""
    return min(1.0, SLICE_REFERENCE_MULTIPLY_ADDS / max(multiply_adds, 1))


def check_slice_regions(regions: int, error: int, bound: int, params: SliceParams,
                        exceeded: bool = False, multiply_adds: int = 0) -> None:
    """Refuse a slice, before any cut, whose bound on the regions (the estimate plus some
    :data:`BOUND_ERRORS` standard errors, :mod:`bnviz.slices.cost`; all K partitions
    together) is over the cap (scaled down for a network of many ``multiply_adds`` an
    image: :func:`slice_region_cap`); the message gives the estimate, its error and the
    bound, in one line."""
    total = bound * params.batches
    share = _share(multiply_adds)
    cap = int(min(params.max_regions * params.batches, _total_cap(params)) * share)
    if total <= cap:
        return
    each = "" if params.batches == 1 else " a mini-batch"
    if exceeded:
        what = f"more than {bound:,} regions{each} (a sample of it outgrew its budget)"
    elif error == 0:
        what = f"{regions:,} regions{each} (counted exactly)"
    else:
        what = (f"about {regions:,} regions{each}, standard error {error:,}: a bound of "
                f"{bound:,} (the estimate + {(bound - regions) / error:.1f} standard errors)")
    if params.batches > 1:
        what += f", {total:,} for {params.batches}"
    job_cap = int(min(SLICE_JOB_MAX_REGIONS * params.batches, SLICE_JOB_MAX_TOTAL_REGIONS)
                  * share)
    instead = "" if isinstance(params, SliceJobParams) or total > job_cap else \
        f", {AS_A_JOB} (--submit, up to {job_cap:,})"
    kind = "a slice job's cap" if isinstance(params, SliceJobParams) else "the cap"
    heavy = "" if share == 1.0 else (
        f" (for a network of {multiply_adds:,} multiply-adds an image: caps are scaled down "
        f"past {SLICE_REFERENCE_MULTIPLY_ADDS:,})")
    raise InputError(f"this window would have {what}, over {kind} of {cap:,}{heavy}: use a "
                     f"smaller window (--extent) or fewer mini-batches{instead}", "extent")


def _path(optional: bool) -> Any:
    """A file's path (text, or a path object read as its text): the command line's files."""

    def check(raw: object, lax: bool) -> str | None:
        if raw is None and optional:
            return None
        if isinstance(raw, os.PathLike):
            raw = os.fspath(raw)
        if not (isinstance(raw, str) and 0 < len(raw) <= _PATH_CHARS and "\x00" not in raw):
            raise InputError(f"a file's path or a name, got {brief(raw)}")
        return raw

    schema = {"type": "string", "maxLength": _PATH_CHARS}
    return checked(str | None if optional else str, check,
                   {"anyOf": [schema, {"type": "null"}]} if optional else schema)


def _choice_or_none(options: tuple[str, ...]) -> Any:
    """One of ``options``, or None (not given)."""

    def check(raw: object, lax: bool) -> str | None:
        if raw is None:
            return None
        if not (isinstance(raw, str) and raw in options):
            raise InputError(f"choose one of {', '.join(options)}, got {brief(raw)}")
        return raw

    return checked(str | None, check, {"anyOf": [{"type": "string", "enum": list(options)},
                                                 {"type": "null"}]})


def image_indices(images: str) -> tuple[int, ...]:
    """The test image indices of ``images`` ("i,j,k" or "i"); () when it is not that."""
    try:
        idx = tuple(int(v) for v in images.split(","))
    except ValueError:
        return ()
    ok = len(idx) in (1, 3) and min(idx) >= 0 and len(set(idx)) == len(idx)
    return idx if ok else ()


@params_dataclass
class SliceSetup(SliceParams):
    """What is cut, with the settings of :class:`SliceParams`: the networks (``job``: a
    finished job's id, its kept networks ``arms`` of run ``run``, one or two, comma-separated,
    default the first it kept; or an uploaded network, ``job`` = ``up-<hash>``; or a file:
    ``model``, an ONNX file, or ``weights``, a safetensors file of architecture ``arch``),
    the images (``data``: a data set's name or an .npy (N, C, H, W); a job's network is cut
    on its own job's data set), and the plane: through test images ``images`` ("i,j,k", or
    one index and two random directions from ``seed``), or the .npz file ``plane`` (origin,
    u, v; with ``extent``).  Train mode's mini-batches come from ``batch`` (an .npy), else
    the data set's training images.

    One name and one default each, for ``bnviz slice`` (the flag ``--name``) and the page."""

    job: text(64) = ""  # a job's id, or an upload's reference (up-<hash>)
    arms: text(80) = ""
    run: whole(0, 1000) = 0
    data: _path(False) = "digits"
    images: text(64) = "0,1,2"
    model: _path(True) = None
    weights: _path(True) = None
    arch: _choice_or_none(ARCHS) = None
    plane: _path(True) = None
    batch: _path(True) = None

    @model_check
    def _what(self) -> None:
        sources = [name for name in ("job", "model", "weights") if getattr(self, name)]
        if len(sources) != 1:
            raise InputError("one network: a job's (job), an ONNX file (model) or a "
                             "safetensors file (weights)", "job")
        if self.weights is not None and self.arch is None:
            raise InputError(f"the architecture of the weights file: one of {', '.join(ARCHS)}",
                             "arch")
        arms = [a for a in self.arms.split(",") if a]
        if len(arms) > 2 or not all(a.replace("_", "").isalnum() for a in arms):
            raise InputError("one or two of the job's arms, e.g. bn_init,zero_bias", "arms")
        if self.plane is not None:
            if self.extent <= 0:
                raise InputError("a plane from a file needs the window's half-width E (the "
                                 "window [-E, E]^2)", "extent")
        elif not image_indices(self.images):
            raise InputError(_ONE_OR_THREE, "images")


@params_dataclass
class SlicePageParams(SliceSetup):
    """The /slice page's job: :class:`SliceSetup` with one or two ``arms`` of the networks
    job ``job`` kept (run ``run``), or an uploaded network (``job`` = ``up-<hash>``, through
    the data set ``data``, a name), through three test images ``images``, under a page's
    region cap; the page reads no file of the server.  Its check replaces SliceSetup's (the
    same rules, stricter: a job or an upload, three images, no file)."""

    data: text(40) = "digits"  # an upload's images (a job's are its own): a name, never a path
    max_regions: whole(1, SLICE_PAGE_MAX_REGIONS) = SLICE_PAGE_MAX_REGIONS

    @model_check
    def _what(self) -> None:
        files = [name for name in ("model", "weights", "arch", "plane", "batch")
                 if getattr(self, name) is not None]
        if files:
            raise InputError("the page slices a job's or an uploaded network, never a file of "
                             "the server", files[0])
        if not self.job:
            raise InputError("choose a job whose networks to slice", "job")
        arms = ["upload"] if self.job.startswith("up-") else [
            a for a in self.arms.split(",") if a]
        if not 1 <= len(arms) <= 2 or not all(a.replace("_", "").isalnum() for a in arms):
            raise InputError("choose one or two arms", "arms")
        if len(image_indices(self.images)) != 3:
            raise InputError("three different test image indices, e.g. 0,1,2", "images")


@params_dataclass
class SliceJobParams(SliceSetup):
    """A slice job (``bnviz slice --submit``, the /slice page's "run as a job"): the same
    model as the command's, with a slice job's region cap (:data:`~bnviz.caps.
    SLICE_JOB_MAX_REGIONS`, by the estimate's bound); the window is cut as ``tiles`` tiles
    (1: as many as the estimate needs, :mod:`bnviz.slices.tiled_job`), each stored when it
    is done."""

    max_regions: whole(1, SLICE_JOB_MAX_REGIONS) = SLICE_JOB_MAX_REGIONS
