"""The table of every job type: its name -> the code that checks and runs it.

The job types live beside the code they run (the image experiments in
:mod:`bnviz.images.experiments`, the density page's Figure 3 run in :mod:`bnviz.views.density`,
the debate page's 2D landscape run of Santurkar et al. in :mod:`bnviz.papers.landscape`, the
jitter page's training in :mod:`bnviz.views.training_cache`, the /slice page's cut in
:mod:`bnviz.slices.job`, its tiled job for windows of millions of regions in
:mod:`bnviz.slices.tiled_job`, the lecture's slides in :mod:`bnviz.lecture.slides`), and each
imports :mod:`bnviz.records.types` for what a job type is.
This module is the one that imports them back, each only when a job of that type is checked
or run (:func:`get_job_type`), so that listing the types loads neither torch nor their code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from bnviz.messages import brief
from bnviz.records.types import IMAGE_JOB_TYPES, JobType, ParamError

__all__ = ["PAGE_JOB_TYPES", "PART_RUNNERS", "all_job_types", "get_job_type", "get_part_runner"]

#: The jobs the pages start (a name -> the module that defines it, as ``module:ATTRIBUTE``).
PAGE_JOB_TYPES: dict[str, str] = {
    "density": "bnviz.views.density:DENSITY_JOB",
    "landscape-2d": "bnviz.papers.landscape:LANDSCAPE_2D_JOB",
    "jitter-training": "bnviz.views.training_cache:TRAINING_JOB",
    "slice": "bnviz.slices.job:SLICE_JOB",
    "slice-tiles": "bnviz.slices.tiled_job:TILED_SLICE_JOB",
    "lecture-slides": "bnviz.lecture.slides:SLIDES_JOB",
}


#: The job types that hand parts of their work to other workers (``ctx.fan_out``): the type's
#: name -> the function a worker runs a part with, ``(job_id, params, part) -> str``.
PART_RUNNERS: dict[str, str] = {
    "slice-tiles": "bnviz.slices.tiled_share:run_tile_part",
}


def all_job_types() -> tuple[str, ...]:
    """Every job type's name (nothing imported)."""
    return (*IMAGE_JOB_TYPES, *PAGE_JOB_TYPES)


def get_job_type(name: object) -> JobType:
    """The job type called ``name`` (ParamError for any other value), its module imported."""
    if name in IMAGE_JOB_TYPES:
        from bnviz.images.experiments import image_job_type

        return image_job_type(str(name))
    if isinstance(name, str) and name in PAGE_JOB_TYPES:
        module, attribute = PAGE_JOB_TYPES[name].split(":")
        return getattr(importlib.import_module(module), attribute)
    raise ParamError(f"unknown job type {brief(name)}: one of {', '.join(all_job_types())}")


def get_part_runner(name: str) -> Callable[[str, dict[str, Any], str], str]:
    """The function that runs one part of a job of type ``name`` (KeyError: none)."""
    module, attribute = PART_RUNNERS[name].split(":")
    return getattr(importlib.import_module(module), attribute)
