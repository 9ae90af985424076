"""The image experiments' parameters: one model per job type (BN paper Figures 4, 5, 10,
Table 1, section 5, and Santurkar et al.'s landscape), the work caps as model validators,
and the view of their fields that the command line's ``jobs submit`` flags and the jobs
page's form are made from (:data:`JOB_OPTIONS`).

Every type shares the training setup (:class:`ImageJobParams`); the concentration
experiment keeps, but does not use, epochs and lr (it measures networks at initialisation).
Whether a data set's files are in place is checked when a job is submitted
(:func:`bnviz.images.params.check_params`), not here: a model is a description, the same on
every machine.  No torch is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bnviz.caps import ARCHS, IMAGE_JOB_LIMITS, MAX_FOLDER_IMAGES, TRAIN_SIZES
from bnviz.data.imagedata import STANDARD_DATASETS, DataError, parse_dataset_name
from bnviz.messages import brief
from bnviz.params.cost import check_concentration_passes, check_training_images
from bnviz.params.fields import (
    InputError,
    checked,
    choice,
    described,
    real,
    reals,
    whole,
)
from bnviz.params.model import field_check, json_schema, model_check, params_dataclass

__all__ = ["ARMS", "IMAGE_JOB_PARAMS", "JOB_FLAGS", "JOB_OPTIONS", "AffineAblationParams",
           "ConcentrationParams", "ImageJobParams", "JitterNoiseParams", "JobOption",
           "LandscapeJobParams", "SmartInitParams", "image_dataset"]

#: arm name -> (norm mode, learnable gamma/beta), per job type, in the order they are shown.
ARMS: dict[str, dict[str, tuple[str, bool]]] = {
    # bn_init: the paper's protocol (BN's statistics frozen, W trained through them); folded
    # and scale_only: the same start folded into the weights, trained as plain networks
    # (bnviz.images.folding: the fair comparison with the zero- and random-bias arms)
    "smart-init": {"zero_bias": ("zero_bias", False), "random_bias": ("random_bias", False),
                   "folded": ("folded", False), "scale_only": ("scale_only", False),
                   "bn_init": ("frozen", False)},
    "concentration": {"zero_bias": ("zero_bias", False), "random_bias": ("random_bias", False),
                      "bn": ("frozen", False)},
    "jitter-noise": {"bn": ("bn", False), "bn_noise": ("noisy_bn", False)},
    "affine-ablation": {"no_affine": ("bn", False), "affine": ("bn", True)},
    "landscape": {"no_bn": ("zero_bias", False), "bn": ("bn", True)},
}

_I = IMAGE_JOB_LIMITS
_DATASETS = f"{', '.join(STANDARD_DATASETS[:-1])}, {STANDARD_DATASETS[-1]} or folder:NAME"


def image_dataset() -> Any:
    """A str field naming an image data set (``digits``, ``cifar10``, ``cifar100``,
    ``svhn`` or ``folder:NAME``), normalised by :func:`bnviz.data.imagedata.
    parse_dataset_name` (a folder is one plain name inside the data directory)."""

    def check(raw: object, lax: bool) -> str:
        if not isinstance(raw, str) or not raw.strip():
            raise InputError(f"enter a data set name ({_DATASETS}), got {brief(raw)}")
        try:
            return parse_dataset_name(raw)
        except DataError as exc:
            raise InputError(str(exc)) from None

    return checked(str, check, {"type": "string"})


def _int(name: str, text: str) -> Any:
    lo, hi = _I[name]
    return described(whole(int(lo), int(hi)), text)


def _real(name: str, text: str) -> Any:
    return described(real(*_I[name]), text)


@params_dataclass
class ImageJobParams:
    """What every image experiment has: the data, the network and its training, capped at
    :data:`~bnviz.caps.MAX_TRAINING_IMAGES` training images passed through
    (:func:`~bnviz.params.cost.training_images`). The hours a job may take
    (``BNVIZ_JOB_MAX_HOURS``) are checked once its data set is known to be in place
    (:func:`bnviz.images.params.check_params`): an image folder's size is read there."""

    job_type: ClassVar[str] = ""

    dataset: described(image_dataset(), _DATASETS) = "digits"
    arch: described(choice(ARCHS), "network") = "resnet9"
    width: _int("width", "base channel count (paper: 64 for resnet9/50, 96 for cnn)") = 16
    epochs: _int("epochs", "training epochs (concentration: unused, it measures the "
                 "network at initialisation)") = 5
    runs: _int("runs", "runs (seeds seed, seed+1, ...)") = 2
    batch_size: _int("batch_size", "mini-batch size") = 64
    lr: _real("lr", "SGD learning rate, momentum 0.9 (concentration: unused)") = 0.05
    seed: _int("seed", "seed of the first run") = 0
    max_train: _int("max_train", "use at most this many training images (0: all)") = 0
    image_size: _int("image_size", "side of image-folder images after resizing") = 64

    @field_check("max_train", mode="after")
    @classmethod
    def _a_batch_of_two(cls, value: int) -> int:
        if value == 1:
            raise InputError(f"enter 0 (all) or a whole number from 2 to "
                             f"{int(_I['max_train'][1])} (BN needs a batch of two), got 1")
        return value

    @model_check
    def _capped(self) -> None:
        if self.job_type:  # a job type's model (this base class is none)
            self.check_work()

    @property
    def arms(self) -> int:
        return len(ARMS[self.job_type])

    @property
    def train_size(self) -> int:
        """Training images per epoch: ``max_train``, else the data set's (an image folder:
        the most it may hold)."""
        return self.max_train or TRAIN_SIZES.get(self.dataset, MAX_FOLDER_IMAGES)

    def check_work(self) -> None:
        """Refuse (InputError) a job over its work cap."""
        check_training_images(self.epochs, self.runs, self.arms, self.train_size)


@params_dataclass
class DDPJobParams(ImageJobParams):
    """An experiment that trains with torch DDP, one process per GPU on a cuda worker."""

    gpus: _int("gpus", "processes for torch DDP training (GPUs on a cuda worker)") = 1


@params_dataclass
class SmartInitParams(DDPJobParams):
    """BN paper Figures 5 and 10: zero bias, random bias and BN-statistics initialisation."""

    job_type = "smart-init"

    validation: _real("validation", "fraction of the training images held out (per class) "
                      "to choose the learning rate on; 0: none") = 0.0


@params_dataclass
class ConcentrationParams(ImageJobParams):
    """BN paper Figure 4: units whose pre-activation changes sign inside eps-balls around
    data images and Gaussian images, capped at
    :data:`~bnviz.caps.MAX_CONCENTRATION_PASSES` forward passes."""

    job_type = "concentration"

    images: _int("images", "images (and Gaussian images) per kind") = 100
    samples: _int("samples", "points sampled uniformly in each eps-ball") = 32
    eps: described(reals(*_I["eps"], distinct=True), "ball radii, as RMS change per pixel in "
                   "units of the data's std") = (0.01, 0.03, 0.1, 0.3)

    def check_work(self) -> None:
        check_concentration_passes(self.images, self.samples, len(self.eps), self.runs,
                                   self.arms)


@params_dataclass
class JitterNoiseParams(DDPJobParams):
    """BN paper section 5: BN against BN with extra mini-batch noise."""

    job_type = "jitter-noise"

    noise: _real("noise", "extra variance of mu_B, sigma_B^2, as a fraction") = 0.15


@params_dataclass
class AffineAblationParams(DDPJobParams):
    """BN paper appendix D, Table 1: BN without and with learnable gamma, beta."""

    job_type = "affine-ablation"


@params_dataclass
class LandscapeJobParams(ImageJobParams):
    """Santurkar et al.: the loss landscape and internal covariate shift of an image network
    trained with and without BN, measured every ``measure_every`` steps."""

    job_type = "landscape"

    etas: _int("etas", "step sizes in [1/2, 4] x lr (log-spaced) at each measured step") = 4
    measure_every: _int("measure_every", "measure the landscape and ICS every this many "
                        "steps") = 10

    def check_work(self) -> None:
        check_training_images(self.epochs, self.runs, self.arms, self.train_size,
                              (self.etas, self.measure_every))


#: Each image job type's parameters, in the order the types are listed.
IMAGE_JOB_PARAMS: dict[str, type[ImageJobParams]] = {model.job_type: model for model in (
    SmartInitParams, ConcentrationParams, JitterNoiseParams, AffineAblationParams,
    LandscapeJobParams)}


@dataclass(frozen=True)
class JobOption:
    """One image-job parameter as the command line's flag and the jobs page's control show
    it: read from the models' JSON schema (:func:`job_options`), never written by hand."""

    name: str
    kind: str  # "int", "float", "text", "choice", "floats" (a comma-separated list)
    default: Any
    help: str
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    types: tuple[str, ...] = ()  # the job types that have it

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


_KINDS = {"integer": "int", "number": "float", "array": "floats"}


def _option(name: str, schema: dict[str, Any], types: tuple[str, ...]) -> JobOption:
    kind = _KINDS.get(schema.get("type", ""), "choice" if "enum" in schema else "text")
    bounds = schema.get("items", {}) if kind == "floats" else schema
    default = tuple(schema["default"]) if kind == "floats" else schema["default"]
    return JobOption(name, kind, default, schema.get("description", ""),
                     bounds.get("minimum", bounds.get("exclusiveMinimum")),
                     bounds.get("maximum"), tuple(schema.get("enum", ())), types)


def job_options() -> tuple[JobOption, ...]:
    """Every parameter of every image job type, once: the shared ones first, then each
    type's own in the order of :data:`IMAGE_JOB_PARAMS` (the form hides those of the other
    types)."""
    fields = {job_type: json_schema(model)["properties"]
              for job_type, model in IMAGE_JOB_PARAMS.items()}
    first: dict[str, dict[str, Any]] = {}
    for properties in fields.values():
        for name, schema in properties.items():
            first.setdefault(name, schema)
    return tuple(_option(name, schema, tuple(t for t, p in fields.items() if name in p))
                 for name, schema in first.items())


JOB_OPTIONS: tuple[JobOption, ...] = job_options()
#: Field name -> the command line's flag: the messages name the flag (the page shows it too).
JOB_FLAGS: dict[str, str] = {option.name: option.flag for option in JOB_OPTIONS}
