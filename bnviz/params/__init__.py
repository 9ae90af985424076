"""One validation layer for the live computations: a typed description of each one's
parameters (frozen dataclasses that check themselves: :mod:`bnviz.params.model`), with the
bounds and cost caps in one place (:mod:`bnviz.caps`) and the cost estimated before any work
(:mod:`bnviz.params.cost`).

The command line, the pages' callbacks and the job submission call it (later an HTTP API):
code builds a model with typed values, ``parse(Model, raw)`` reads raw control values;
either way a bad value raises :class:`InputError` (a ValueError) with one line naming the
control or option and the allowed range.  No torch is imported here.
"""

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

#: Each public name and the submodule that defines it.  They are imported on first use
#: (PEP 562), so that ``import bnviz.params`` loads no model it does not use: a command
#: reads the one model it needs.
_WHERE: dict[str, str] = {
    "BNStatsParams": "bnstats", "DensityPageParams": "density", "DensityParams": "density",
    "default_layers": "density", "InputError": "fields", "parse": "model",
    "JitterParams": "jitter", "TrainingJobParams": "jitter",
    "TrainingParams": "jitter", "IMAGE_JOB_PARAMS": "jobs", "LandscapeParams": "landscape",
    "NoisyBN": "landscape", "PartitionParams": "partition",
    "LiveTrainingParams": "live", "LiveFrameParams": "live", "SliceParams": "slice",
    "SlicePageParams": "slice",
}

__all__ = ["IMAGE_JOB_PARAMS", "BNStatsParams", "DensityPageParams", "DensityParams",
           "InputError", "JitterParams", "LandscapeParams",
           "LiveFrameParams", "LiveTrainingParams", "NoisyBN",
           "PartitionParams", "SlicePageParams", "SliceParams", "TrainingJobParams",
           "TrainingParams", "default_layers", "parse", "warm_validators"]


def warm_validators() -> tuple[type, ...]:
    """Build every parameter model's validator now (every module of this package imported,
    each model of :data:`bnviz.params.model.MODELS` given its validator): what a server's
    ``warm_up`` calls before its first request, so that no two request threads race to build
    one.  Returns the models (tests/test_architecture.py checks that they are all of them)."""
    from bnviz.params import model as layer

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    for model in layer.MODELS:
        layer.validator(model)
    return tuple(layer.MODELS)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'bnviz.params' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"bnviz.params.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # for type checkers and readers: the names, eagerly
    from bnviz.params.bnstats import BNStatsParams
    from bnviz.params.density import DensityPageParams, DensityParams, default_layers
    from bnviz.params.fields import InputError
    from bnviz.params.jitter import JitterParams, TrainingJobParams, TrainingParams
    from bnviz.params.jobs import IMAGE_JOB_PARAMS
    from bnviz.params.landscape import LandscapeParams, NoisyBN
    from bnviz.params.live import LiveFrameParams, LiveTrainingParams
    from bnviz.params.model import parse
    from bnviz.params.partition import PartitionParams
    from bnviz.params.slice import SlicePageParams, SliceParams
