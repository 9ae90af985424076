"""What an image job costs in seconds of this machine, estimated from its parameters before
any work starts, and the cap on it (``BNVIZ_JOB_MAX_HOURS``).

The work caps of :mod:`bnviz.params.cost` count training images, whatever they cost: a job of
a CIFAR-100 ResNet9 of width 64 for 100 epochs passed them and asked for weeks of a 2-core
machine. Here a job's seconds are estimated from what its network does to one image (the
multiply-adds of its convolutions and the elements its norm layers and activations touch,
counted layer by layer as :mod:`bnviz.images.networks` builds them), how many images it
passes forward and backward (training), forward only (test accuracy after every epoch, the
concentration experiment's ball samples, the BN statistics of a frozen arm) and how many
optimiser steps it takes, with coefficients measured on the real training code
(``bench/jobcost.py``; :data:`CALIBRATION`). No torch here: the command line, the jobs page
and the HTTP API refuse an over-long job before anything is imported or run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bnviz.caps import IMAGE_SHAPES, TEST_SIZES, TRAIN_SIZES
from bnviz.config import setting
from bnviz.params.fields import InputError

__all__ = ["CALIBRATION", "RATES", "DataFacts", "NetCost", "Rates", "check_job_hours",
           "data_facts", "job_seconds", "network_cost"]

CALIBRATION = """\
bench/jobcost.py --fit, 2026-11-25, 2 cores, torch 2.13.0+cpu, 2 threads: 27 training steps
(resnet9, cnn, resnet50; widths 4-64; 8 and 32 px; batches 8-256; bn and zero_bias) fitted
within measured/fitted 0.77-1.29, 9 evaluation passes within 0.72-2.00 (evaluation is a small
part of a job). A process's start 1.18 s; reading and standardising CIFAR files 7.4 ns a
pixel. bench/jobcost.py (whole jobs through the real code, in process): measured / estimated
0.67-1.56 over nine jobs (each type on digits; affine-ablation, smart-init at width 32 and
with a resnet50, concentration on CIFAR-format files)."""
# --------------------------------------------------------------------------- networks


@dataclass(frozen=True)
class NetCost:
    """One image through a network, forward: ``macs`` multiply-adds, ``elements`` outputs of
    its conv layers (what each norm layer and activation touches), ``norms`` norm layers,
    ``weights`` conv and linear weight tensors, and ``prefix``: (macs, elements) of the
    forward pass cut after each norm layer (how the frozen arms compute their statistics);
    ``parameters`` its weights' entries, ``peak`` the outputs of its largest conv layer."""

    macs: float
    elements: float
    norms: int
    weights: int
    prefix: tuple[tuple[float, float], ...]
    parameters: float = 0.0
    peak: float = 0.0


def _pooled(size: int, tracked: int) -> int:
    """A feature map after ``_pool(tracked)`` of bnviz.images.networks: halved (floor)
    while the tracked size is at least 2, else unchanged."""
    return size // 2 if tracked >= 2 else size


def _resnet9(c_in: int, size: int, w: int) -> list[tuple[int, int, int, int]]:
    s1 = _pooled(size, size)
    s2 = _pooled(s1, size // 2)
    s3 = _pooled(s2, size // 4)
    return [(c_in, w, 3, size), (w, 2 * w, 3, size), (2 * w, 2 * w, 3, s1), (2 * w, 2 * w, 3, s1),
            (2 * w, 4 * w, 3, s1), (4 * w, 8 * w, 3, s2), (8 * w, 8 * w, 3, s3),
            (8 * w, 8 * w, 3, s3)]


def _cnn(c_in: int, size: int, width: int) -> list[tuple[int, int, int, int]]:
    def c(n: int) -> int:
        return max(1, round(n * width / 96))

    convs = [(c_in, c(32), 5, size)]
    actual, tracked = _pooled(size, size), size // 2
    ch = c(32)
    if tracked > 16:
        convs.append((ch, c(64), 5, actual))
        actual, tracked = _pooled(actual, tracked), tracked // 2
        ch = c(64)
    for wk in (c(96), c(192)):
        for _ in range(3):
            convs += [(ch, wk, 5, actual), (wk, wk, 1, actual), (wk, wk, 1, actual)]
            ch = wk
        actual, tracked = _pooled(actual, tracked), tracked // 2
    convs += [(ch, c(192), 3, actual), (c(192), c(192), 1, actual)]
    return convs


def _resnet50(c_in: int, size: int, w: int) -> list[tuple[int, int, int, int]]:
    convs = [(c_in, w, 7 if size > 64 else 3, size)]
    if size > 64:
        size //= 4
    ch = w
    for stage, blocks in enumerate((3, 4, 6, 3)):
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 0 and size >= 2 else 1
            mid, out, before = w * 2**stage, 4 * w * 2**stage, size
            size //= stride
            convs += [(ch, mid, 1, before), (mid, mid, 3, before), (mid, out, 1, size)]
            if not (ch == out and stride == 1):
                convs.append((ch, out, 1, size))
            ch = out
    return convs


_WALKS = {"resnet9": _resnet9, "cnn": _cnn, "resnet50": _resnet50}
#: The head's input: the last conv's channels.
DEFAULT_WIDTH = {"resnet9": 64, "cnn": 96, "resnet50": 64}


def network_cost(arch: str, channels: int, size: int, width: int, classes: int) -> NetCost:
    """The forward cost of one ``size`` x ``size`` image of ``channels`` channels through the
    ``arch`` network of ``width`` with ``classes`` outputs (:class:`NetCost`)."""
    convs = _WALKS[arch](channels, size, width)
    macs = elements = parameters = peak = 0.0
    prefix = []
    for c_in, c_out, k, side in convs:
        macs += float(c_in) * c_out * k * k * side * side
        elements += float(c_out) * side * side
        parameters += float(c_in) * c_out * k * k + c_out  # the norm layer's bias
        peak = max(peak, float(c_out) * side * side)
        prefix.append((macs, elements))
    head = float(convs[-1][1]) * classes
    return NetCost(macs + head, elements, len(convs), len(convs) + 1, tuple(prefix),
                   parameters + head + classes, peak)


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class DataFacts:
    """What the estimate needs of a data set: image shape, classes, training images used
    (``max_train`` applied) and test images (evaluated after every epoch)."""

    channels: int
    size: int
    classes: int
    train: int
    test: int


def data_facts(dataset: str, image_size: int = 64, max_train: int = 0,
               folder: tuple[int, int, int] | None = None) -> DataFacts:
    """The :class:`DataFacts` of a data set name as the parameter models hold it; an image
    folder needs its ``folder`` counts: (training images, test images, classes), from
    :func:`bnviz.data.imagedata.count_folder_images` (its images are resized to
    ``image_size``, RGB)."""
    if dataset in IMAGE_SHAPES:
        channels, size, classes = IMAGE_SHAPES[dataset]
        train, test = TRAIN_SIZES[dataset], TEST_SIZES[dataset]
    elif folder is not None:
        channels, size, (train, test, classes) = 3, image_size, folder
    else:
        raise ValueError(f"{dataset}: an image folder's cost needs its image counts")
    return DataFacts(channels, size, classes, min(max_train, train) if max_train else train,
                     test)


# --------------------------------------------------------------------------- seconds


@dataclass(frozen=True)
class Rates:
    """Seconds per unit of work of this machine's size (2 CPU cores, torch on the CPU with
    its default 2 threads), fitted by ``bench/jobcost.py --fit`` (:data:`CALIBRATION`)."""

    mac_train: float  # a multiply-add of a training image (forward, backward, update)
    element_norm: float  # a conv output element of a training image, BN-like layer
    element_bias: float  # ... a bias-only layer (zero_bias, random_bias)
    mac_eval: float  # a multiply-add of an image evaluated without gradients
    element_eval: float  # a conv output element of an image evaluated
    step_layer: float  # an optimiser step (or a gradient pass), per norm layer
    start: float  # a job's start: its process, torch, the data read and standardised
    pixel: float  # a pixel (times channels) of the data set, read and standardised


RATES = Rates(mac_train=1.78e-11, element_norm=6.77e-09, element_bias=1.62e-09,
              mac_eval=2.53e-12, element_eval=2.38e-09, step_layer=3.02e-4, start=1.18,
              pixel=7.38e-09)
#: Element passes of the concentration experiment's sign tests (> 0 and < 0, any over a ball).
SIGN_TESTS = 2
#: The norm modes that normalise (batch or frozen statistics); the others add a bias only.
NORMALISING = frozenset({"bn", "noisy_bn", "frozen"})


def _train(net: NetCost, mode: str, images: float, steps: float) -> float:
    element = RATES.element_norm if mode in NORMALISING else RATES.element_bias
    return images * (RATES.mac_train * net.macs + element * net.elements) + \
        steps * RATES.step_layer * net.norms


def _forward(net: NetCost, images: float) -> float:
    return images * (RATES.mac_eval * net.macs + RATES.element_eval * net.elements)


def _frozen_statistics(net: NetCost, images: float) -> float:
    """bnviz.images.networks.calibrate_frozen: one pass over the training images per norm
    layer, cut after that layer."""
    return images * sum(RATES.mac_eval * m + RATES.element_eval * e for m, e in net.prefix)


def job_seconds(job_type: str, params: Mapping[str, Any], modes: Sequence[str],
                data: DataFacts | None = None) -> float:
    """Estimated seconds of an image job of ``job_type`` with these (checked) parameters,
    one arm per norm mode of ``modes``, on this machine's size (:class:`Rates`). ``data``:
    the data set's facts (default: those of ``params["dataset"]``)."""
    p = params
    data = data or data_facts(p["dataset"], p.get("image_size", 64), p.get("max_train", 0))
    net = network_cost(p["arch"], data.channels, data.size, p["width"], data.classes)
    seconds = RATES.start + RATES.pixel * (data.train + data.test) * data.channels * \
        data.size**2
    for mode in modes:
        if mode in ("frozen", "folded", "scale_only"):  # folded: calibrated as frozen first
            seconds += p["runs"] * _frozen_statistics(net, data.train)
        if job_type == "concentration":
            # every point's pre-activations are kept and tested for both signs across its
            # ball (bnviz.images.concentration.sign_change_counts): two more passes over
            # the elements a forward pass writes
            points = 2 * len(p["eps"]) * p["images"] * (p["samples"] + 1)
            seconds += p["runs"] * (_forward(net, points) +
                                    SIGN_TESTS * RATES.element_eval * net.elements * points)
            continue
        steps = p["epochs"] * math.ceil((data.train - 1) / p["batch_size"])
        seconds += p["runs"] * (_train(net, mode, data.train * p["epochs"], steps)
                                + _forward(net, data.test * p["epochs"]))
        if job_type == "landscape":  # every measure_every steps: 1 + etas + weights passes
            passes = math.ceil(steps / p["measure_every"]) * (1 + p["etas"] + net.weights)
            batch = min(p["batch_size"], data.train)
            seconds += p["runs"] * _train(net, mode, passes * batch, passes)
    return seconds


#: What to lower when a job of a type is over the cap, in the order they usually matter.
#: Named as the API and the page name the fields (the command line's flags are the same words
#: with -- and dashes).
LEVERS = {"concentration": "images, samples, the eps values, runs or width",
          "landscape": "epochs, runs, max_train or width, or raise measure_every"}
TRAINING_LEVERS = "epochs, runs, max_train or width"


def _hours(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:,.0f}" if hours >= 10 else f"{hours:.1f}"


def check_job_hours(job_type: str, params: Mapping[str, Any], modes: Sequence[str],
                    data: DataFacts | None = None) -> None:
    """Refuse (InputError, one line) a job whose estimate (:func:`job_seconds`, on ``data``,
    default: those of its data set's name) is over ``BNVIZ_JOB_MAX_HOURS``: about how long,
    the cap, and what to lower."""
    cap = setting("BNVIZ_JOB_MAX_HOURS")
    seconds = job_seconds(job_type, params, modes, data)
    if seconds > cap * 3600:
        raise InputError(
            f"this job would take about {_hours(seconds)} hours on a 2-core CPU server "
            f"(estimated before any work), over the cap of {cap:g} hours "
            f"(BNVIZ_JOB_MAX_HOURS): lower {LEVERS.get(job_type, TRAINING_LEVERS)}")


# --------------------------------------------------------------------------- memory

#: Bytes a job holds besides its data and network: the interpreter, torch and numpy loaded.
BASE_BYTES = 0.6e9
#: float32 bytes per weight: the weight, its gradient and SGD's momentum.
PARAMETER_BYTES = 3 * 4
#: float32 bytes per conv output element of a training image: autograd keeps the conv's, the
#: norm layer's and the activation's outputs for the backward pass, and the gradient flows
#: through one more.
TRAIN_ELEMENT_BYTES = 4 * 4
#: Images evaluated at once without gradients (bnviz.images.training.chunks), and the float32
#: tensors of its largest layer alive at once: the conv's input and output, the norm layer's
#: float32 copy and output, the activation's (fitted: peak RSS of resnet9 width 64 and the
#: appendix CNN on glyphs, 2.16 and 1.31 GB, against 2.1 and 1.3 estimated).
EVAL_CHUNK, EVAL_TENSORS = 512, 5
#: Bytes per pixel of the data held: the uint8 images, their standardised float32 copy, and
#: the float32 copy standardising makes on the way.
PIXEL_BYTES = 1 + 4 + 4


def job_memory_bytes(job_type: str, params: Mapping[str, Any],
                     data: DataFacts | None = None) -> float:
    """The most memory one process of the job holds (bytes): the libraries, the data, the
    network with its gradient and momentum, and a training step's activations (a
    mini-batch) or an evaluation chunk's, whichever is larger. Arms run one after another; a
    DDP job runs ``gpus`` such processes. Against measured peaks (RSS of a job's process:
    resnet9 at widths 16 and 64, the appendix CNN, resnet50 at width 16; digits and glyphs)
    it is 0.75 to 1.33 times the truth: a bound on what a job may ask, not an accountant."""
    p = params
    data = data or data_facts(p["dataset"], p.get("image_size", 64), p.get("max_train", 0))
    net = network_cost(p["arch"], data.channels, data.size, p["width"], data.classes)
    pixels = (data.train + data.test) * data.channels * data.size ** 2
    step = 0.0 if job_type == "concentration" else \
        min(p["batch_size"], data.train) * TRAIN_ELEMENT_BYTES * net.elements
    evaluate = EVAL_CHUNK * EVAL_TENSORS * 4 * net.peak
    one = BASE_BYTES + PIXEL_BYTES * pixels + PARAMETER_BYTES * net.parameters + \
        max(step, evaluate)
    return one * max(int(p.get("gpus", 1) or 1), 1)


def check_job_memory(job_type: str, params: Mapping[str, Any],
                     data: DataFacts | None = None) -> None:
    """Refuse (InputError, one line) a job whose memory estimate (:func:`job_memory_bytes`)
    is over ``BNVIZ_JOB_MAX_GB``: about how much, the cap, and what to lower."""
    cap = setting("BNVIZ_JOB_MAX_GB")
    need = job_memory_bytes(job_type, params, data) / 2**30
    if need > cap:
        lower = "width, batch_size, max_train or image_size" if job_type != "concentration" \
            else "width or image_size"
        raise InputError(f"this job would need about {need:,.1f} GB of memory (estimated "
                         f"before any work), over the cap of {cap:.3g} GB (BNVIZ_JOB_MAX_GB): "
                         f"lower {lower}")

