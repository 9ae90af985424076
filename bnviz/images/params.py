"""The parameters of the image experiments: their specs (the CLI's flags and the jobs page's
form are made from :data:`PARAMS`) and :func:`check_params`, which validates a job's
parameters, fills in the defaults and refuses work over the caps, with one clear sentence
(:class:`~bnviz.jobs.types.ParamError`) naming the flag."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bnviz.data.imagedata import MAX_FOLDER_IMAGES, check_available
from bnviz.images.networks import ARCHS
from bnviz.jobs.types import IMAGE_JOB_TYPES, ParamError
from bnviz.messages import brief

__all__ = ["ARMS", "JOB_TYPES", "MAX_CONCENTRATION_PASSES", "MAX_TRAINING_IMAGES", "PARAMS",
           "ParamSpec", "check_params"]

JOB_TYPES: tuple[str, ...] = IMAGE_JOB_TYPES
#: arm name -> (norm mode, learnable gamma/beta), per job type, in the order they are shown.
ARMS: dict[str, dict[str, tuple[str, bool]]] = {
    "smart-init": {"zero_bias": ("zero_bias", False), "random_bias": ("random_bias", False),
                   "bn_init": ("frozen", False)},
    "concentration": {"zero_bias": ("zero_bias", False), "random_bias": ("random_bias", False),
                      "bn": ("frozen", False)},
    "jitter-noise": {"bn": ("bn", False), "bn_noise": ("noisy_bn", False)},
    "affine-ablation": {"no_affine": ("bn", False), "affine": ("bn", True)},
    "landscape": {"no_bn": ("zero_bias", False), "bn": ("bn", True)},
}


@dataclass(frozen=True)
class ParamSpec:
    name: str
    kind: str  # "int", "float", "text", "choice", "floats"
    default: Any
    help: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    types: tuple[str, ...] = JOB_TYPES  # the job types that use it

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("dataset", "text", "digits", "digits, cifar10, cifar100, svhn or folder:NAME"),
    ParamSpec("arch", "choice", "resnet9", "network", choices=ARCHS),
    ParamSpec("width", "int", 16, "base channel count (paper: 64 for resnet9/50, 96 for cnn)",
              1, 512),
    ParamSpec("epochs", "int", 5, "training epochs (concentration: unused, it measures the "
              "network at initialisation)", 1, 1000),
    ParamSpec("runs", "int", 2, "runs (seeds seed, seed+1, ...)", 1, 50),
    ParamSpec("batch_size", "int", 64, "mini-batch size", 2, 4096),
    ParamSpec("lr", "float", 0.05, "SGD learning rate, momentum 0.9 (concentration: unused)",
              1e-6, 10.0),
    ParamSpec("seed", "int", 0, "seed of the first run", 0, 2**31 - 1),
    ParamSpec("max_train", "int", 0, "use at most this many training images (0: all)", 0,
              10_000_000),
    ParamSpec("image_size", "int", 64, "side of image-folder images after resizing", 8, 512),
    ParamSpec("gpus", "int", 1, "processes for torch DDP training (GPUs on a cuda worker)", 1,
              64, types=("smart-init", "jitter-noise", "affine-ablation")),
    ParamSpec("noise", "float", 0.15, "extra variance of mu_B, sigma_B^2, as a fraction", 0.0,
              10.0, types=("jitter-noise",)),
    ParamSpec("images", "int", 100, "images (and Gaussian images) per kind", 1, 10_000,
              types=("concentration",)),
    ParamSpec("samples", "int", 32, "points sampled uniformly in each eps-ball", 2, 4096,
              types=("concentration",)),
    ParamSpec("eps", "floats", (0.01, 0.03, 0.1, 0.3),
              "ball radii, as RMS change per pixel in units of the data's std", 1e-6, 100.0,
              types=("concentration",)),
    ParamSpec("etas", "int", 4, "step sizes in [1/2, 4] x lr (log-spaced) at each measured "
              "step", 2, 16, types=("landscape",)),
    ParamSpec("measure_every", "int", 10, "measure the landscape and ICS every this many "
              "steps", 1, 10_000, types=("landscape",)),
)
_SPEC = {p.name: p for p in PARAMS}
#: A job's work is capped (epochs x runs x arms x training images; concentration: images x
#: samples x radii x runs x arms): one user cannot fill a worker for weeks by mistake.
MAX_TRAINING_IMAGES = 2e9
MAX_CONCENTRATION_PASSES = 2e8
_TRAIN_SIZES = {"digits": 1352, "cifar10": 50_000, "cifar100": 50_000, "svhn": 73_257}


def _coerce(spec: ParamSpec, value: Any) -> Any:
    name = spec.flag
    if spec.kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise ParamError(f"{name}: expected text")
        return value.strip()
    if spec.kind == "choice":
        if value not in spec.choices:
            raise ParamError(f"{name}: expected one of {', '.join(spec.choices)}, got "
                             f"{brief(value)}")
        return value
    if spec.kind == "floats":
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not 1 <= len(items) <= 16:
            raise ParamError(f"{name}: expected 1 to 16 comma-separated numbers")
        out = tuple(_number(spec, v, float) for v in items)
        return tuple(sorted(set(out)))
    return _number(spec, value, int if spec.kind == "int" else float)


def _number(spec: ParamSpec, value: Any, kind: type) -> Any:
    name = spec.flag
    if isinstance(value, bool) or value is None:
        raise ParamError(f"{name}: expected a number, got {brief(value)}")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParamError(f"{name}: expected a number, got {brief(value)}") from None
    if not math.isfinite(number):
        raise ParamError(f"{name}: expected a finite number, got {brief(value)}")
    if kind is int:
        if number != int(number):
            raise ParamError(f"{name}: expected a whole number, got {brief(value)}")
        number = int(number)
    if (spec.lo is not None and number < spec.lo) or (spec.hi is not None and number > spec.hi):
        raise ParamError(f"{name}: must be from {spec.lo:g} to {spec.hi:g}, got {brief(value)}")
    return number


def check_params(job_type: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Validate and complete a job's parameters (strings from the CLI or the page are
    accepted); unknown names, wrong types, out-of-range values and over-cap work raise
    ParamError with one clear sentence. Returns every parameter the type uses."""
    if job_type not in JOB_TYPES:
        raise ParamError(f"unknown job type {brief(job_type)}: one of {', '.join(JOB_TYPES)}")
    if not isinstance(raw, dict):
        raise ParamError("parameters must be a mapping")
    unknown = sorted(str(k) for k in set(raw) - set(_SPEC))
    if unknown:
        raise ParamError(f"unknown parameter {brief(unknown[0])} (known: {', '.join(_SPEC)})")
    other = sorted(k for k in raw if job_type not in _SPEC[k].types and raw[k] not in (None, ""))
    if other:
        raise ParamError(f"{_SPEC[other[0]].flag} is not a parameter of {job_type} (it is one "
                         f"of {', '.join(_SPEC[other[0]].types)})")
    out: dict[str, Any] = {}
    for spec in PARAMS:
        if job_type not in spec.types:
            continue
        value = raw.get(spec.name)
        out[spec.name] = spec.default if value is None or value == "" else _coerce(spec, value)
    if out.get("max_train") == 1:
        raise ParamError("--max-train: 0 (all) or at least 2 images (BN needs a batch of two)")
    try:
        out["dataset"] = check_available(out["dataset"])
    except ValueError as exc:
        raise ParamError(f"--dataset: {exc}") from None
    arms = len(ARMS[job_type])
    if job_type == "concentration":
        work = out["images"] * out["samples"] * len(out["eps"]) * out["runs"] * arms * 2
        if work > MAX_CONCENTRATION_PASSES:
            raise ParamError(f"images x samples x eps values x runs x {arms * 2} = {work:.3g} "
                             f"forward passes is over the cap of {MAX_CONCENTRATION_PASSES:.0e}")
    else:
        n_train = out["max_train"] or _TRAIN_SIZES.get(out["dataset"], MAX_FOLDER_IMAGES)
        work = out["epochs"] * out["runs"] * arms * n_train
        if job_type == "landscape":  # each measurement: etas + ~12 layer hybrids passes
            work *= 1 + (out["etas"] + 12) / out["measure_every"]
        if work > MAX_TRAINING_IMAGES:
            raise ParamError(f"epochs x runs x {arms} arms x training images = {work:.3g} is "
                             f"over the cap of {MAX_TRAINING_IMAGES:.0e}: lower --epochs, "
                             "--runs or --max-train")
    return out

