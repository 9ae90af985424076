"""The parameters of the image experiments as a job submission sees them:
:func:`check_params` validates a job's parameters through its model
(:data:`bnviz.params.jobs.IMAGE_JOB_PARAMS`), fills in the defaults, refuses work over the
caps, data that are not in place and jobs over the hours cap (``BNVIZ_JOB_MAX_HOURS``,
:mod:`bnviz.params.jobcost`, an image folder counted by its files), with one clear sentence
(:class:`~bnviz.records.types.ParamError`) naming the flag.

The models, their bounds and the view of their fields (:data:`bnviz.params.jobs.JOB_OPTIONS`,
from which the CLI's flags and the jobs page's form are made) live in :mod:`bnviz.params.jobs`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bnviz.caps import MAX_CONCENTRATION_PASSES, MAX_TRAINING_IMAGES, TRAIN_SIZES
from bnviz.data.imagedata import DataError, check_available, count_folder_images
from bnviz.messages import brief
from bnviz.params.jobcost import check_job_hours, check_job_memory, data_facts
from bnviz.params.jobs import ARMS, IMAGE_JOB_PARAMS, JOB_FLAGS, JOB_OPTIONS, JobOption
from bnviz.records.types import IMAGE_JOB_TYPES, ParamError, validate_params

__all__ = ["ARMS", "JOB_TYPES", "MAX_CONCENTRATION_PASSES", "MAX_TRAINING_IMAGES",
           "TRAIN_SIZES", "JobOption", "check_params"]

JOB_TYPES: tuple[str, ...] = IMAGE_JOB_TYPES
_OPTION = {option.name: option for option in JOB_OPTIONS}


def _given(value: Any) -> bool:
    """None (a flag left out) and an empty text (a form field left empty) mean the default."""
    return value is not None and not (isinstance(value, str) and value == "")


def check_params(job_type: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Validate and complete a job's parameters (strings from the CLI or the page are
    accepted); unknown names, a parameter of another type, wrong types, out-of-range values,
    over-cap work and missing data raise ParamError with one clear sentence. Returns every
    parameter the type uses."""
    if job_type not in IMAGE_JOB_PARAMS:
        raise ParamError(f"unknown job type {brief(job_type)}: one of {', '.join(JOB_TYPES)}")
    if not isinstance(raw, dict):
        raise ParamError("parameters must be a mapping")
    unknown = sorted(str(k) for k in set(raw) - set(_OPTION))
    if unknown:
        raise ParamError(f"unknown parameter {brief(unknown[0])} (known: {', '.join(_OPTION)})")
    other = sorted(k for k, v in raw.items() if job_type not in _OPTION[k].types and _given(v))
    if other:
        option = _OPTION[other[0]]
        raise ParamError(f"{option.name} is not a parameter of {job_type} (it is one of "
                         f"{', '.join(option.types)})")
    given = {k: v for k, v in raw.items() if job_type in _OPTION[k].types and _given(v)}
    # messages name the field as the API and the page send it; the command line says its
    # flag instead (bnviz.cli.jobs.flag_message)
    params = validate_params(IMAGE_JOB_PARAMS[job_type], given, None,
                             {name: name for name in JOB_FLAGS})
    try:
        check_available(params.dataset)
        counts = count_folder_images(params.dataset) if params.dataset.startswith("folder:") \
            else None
    except (DataError, OSError) as exc:
        raise ParamError(f"dataset: {exc}") from None
    values = asdict(params)
    facts = data_facts(params.dataset, params.image_size, params.max_train, counts)
    try:
        check_job_memory(job_type, values, facts)
        check_job_hours(job_type, values, [mode for mode, _ in ARMS[job_type].values()], facts)
    except ValueError as exc:
        raise ParamError(str(exc)) from None
    return values
