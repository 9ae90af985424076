"""Two-dimensional data sets for the live views.

Every data set is drawn from a seed with ``numpy.random.default_rng(seed)`` only, so the same
``(name, n, seed, noise)`` always gives the same arrays. Each point carries an integer class
label (for the classification views, e.g. the BN paper's Figure 6).

All generated data lie inside the square ``[-DATA_BOUND, DATA_BOUND]^2`` (``DATA_BOUND = 2.5``),
so they sit well inside the default input box ``[-3, 3]^2``: each generator samples its shape,
adds isotropic Gaussian jitter of standard deviation ``noise`` to the positions, and redraws
(rejection sampling, from the same generator) any point that lands outside that square. With the
default noise levels the redraw only acts on the far tails of ``gaussian`` and ``blobs``.

The sets (labels in brackets):

- ``star`` [0, 1]: the BN paper's Figure 3 shape. Points are sampled uniformly by arc length
  (stratified) along the outline of a five-pointed star whose ten vertices alternate between
  radius ``STAR_OUTER_RADIUS = 1`` (the tips, first tip pointing up, at angle pi/2) and
  ``STAR_INNER_RADIUS = 0.4``. Every edge joins a tip to an inner vertex; label 1 marks a point on
  the half of its edge nearer the tip ("outer half of an arm"), label 0 the half nearer the inner
  vertex. Labels are set from the noise-free position. Default noise 0.02.
- ``moons`` [0, 1]: two interleaved half circles of radius 1 (0: upper moon, 1: lower moon),
  centred on the origin. Default noise 0.1.
- ``circles`` [0, 1]: two concentric circles of radius 1 (label 0) and 0.5 (label 1).
  Default noise 0.05.
- ``blobs`` [0, 1, 2]: three isotropic Gaussian blobs centred at radius 1.5 at angles 90, 210 and
  330 degrees (label k for centre k); ``noise`` is the blobs' standard deviation. Default 0.35.
- ``spiral`` [0, 1]: two interleaved Archimedean spirals (1.25 turns, radius 0.2 to 1.5), the
  second the first rotated by pi. Default noise 0.05.
- ``gaussian`` [0, 1]: standard normal points (conditioned on the square above); label 1 where
  ``x0 + x1 > 0``. Default noise 0, and any jitter is added after labelling (label noise).

Classes are balanced (up to one point) for ``moons``, ``circles``, ``blobs`` and ``spiral``. For
``star`` (two halves of equal length) and ``gaussian`` (a line through the centre) they are
balanced in expectation; both ``star`` classes are present once n >= 40.

Points from elsewhere come in through :func:`bnviz.data.pointfiles.load_points` (``.npy`` or
``.csv``) and :func:`as_dataset` (an in-memory array); both validate the same way and raise
:class:`DatasetError` (a ``ValueError``) with a one-line message that says what is wrong.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from bnviz.caps import DATASETS, MAX_COORDINATE, MAX_NOISE, MAX_POINTS
from bnviz.messages import brief

__all__ = [
    "DATASETS",
    "DATA_BOUND",
    "DEFAULT_NOISE",
    "MAX_POINTS",
    "NUM_CLASSES",
    "STAR_INNER_RADIUS",
    "STAR_OUTER_RADIUS",
    "Dataset",
    "DatasetError",
    "as_dataset",
    "shifted",
    "check_points",
    "make_dataset",
    "star_vertices",
]

#: Generated points lie in ``[-DATA_BOUND, DATA_BOUND]^2``.
DATA_BOUND = 2.5

STAR_OUTER_RADIUS = 1.0
STAR_INNER_RADIUS = 0.4

#: Noise used when ``make_dataset(..., noise=None)``.
DEFAULT_NOISE = MappingProxyType(
    {"star": 0.02, "moons": 0.1, "circles": 0.05, "blobs": 0.35, "spiral": 0.05, "gaussian": 0.0}
)
#: Number of classes of each generated set; labels are ``0 .. NUM_CLASSES[name] - 1``.
NUM_CLASSES = MappingProxyType(
    {"star": 2, "moons": 2, "circles": 2, "blobs": 3, "spiral": 2, "gaussian": 2}
)

_MAX_REDRAW_ROUNDS = 10_000


class DatasetError(ValueError):
    """Invalid data-set request or invalid points (a ``ValueError``)."""


@dataclass(frozen=True)
class Dataset:
    """A 2D point set with one integer class label per point.

    Treat the arrays as read-only: views and caches share them.
    """

    name: str
    points: np.ndarray  # (n, 2) float64
    labels: np.ndarray  # (n,) int64

    def __post_init__(self) -> None:
        p, y = self.points, self.labels
        if not isinstance(p, np.ndarray) or p.dtype != np.float64 or p.ndim != 2 or p.shape[1] != 2:
            raise DatasetError("Dataset.points must be a float64 array of shape (n, 2)")
        if not isinstance(y, np.ndarray) or y.dtype != np.int64 or y.shape != (p.shape[0],):
            raise DatasetError("Dataset.labels must be an int64 array of shape (n,)")

    @property
    def n(self) -> int:
        """Number of points."""
        return int(self.points.shape[0])


# --------------------------------------------------------------------------- generators


def star_vertices(outer: float = STAR_OUTER_RADIUS, inner: float = STAR_INNER_RADIUS) -> np.ndarray:
    """The ten vertices (10, 2) of the star outline, counter-clockwise, starting at the top tip.

    Even indices are the tips (radius ``outer``), odd indices the inner vertices.
    """
    k = np.arange(10)
    angle = np.pi / 2 + k * np.pi / 5
    radius = np.where(k % 2 == 0, outer, inner)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)


def _balanced_labels(rng: np.random.Generator, k: int, classes: int) -> np.ndarray:
    return rng.permutation(np.arange(k, dtype=np.int64) % classes)


def _star(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    vertices = star_vertices()
    # Stratified uniform arc-length positions: one point in each of k equal perimeter slices.
    s = (np.arange(k) + rng.random(k)) / k * 10.0  # in edge units: edge e covers [e, e + 1)
    s = np.minimum(s, np.nextafter(10.0, 0.0))
    edge = np.floor(s).astype(np.int64)
    t = s - edge
    start, end = vertices[edge], vertices[(edge + 1) % 10]
    points = start + t[:, None] * (end - start)
    # Even edges run tip -> inner vertex, odd edges inner vertex -> tip.
    from_tip = np.where(edge % 2 == 0, t, 1.0 - t)
    labels = (from_tip < 0.5).astype(np.int64)
    order = rng.permutation(k)
    return points[order], labels[order]


def _moons(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    labels = _balanced_labels(rng, k, 2)
    theta = rng.uniform(0.0, np.pi, k)
    upper = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    lower = np.stack([1.0 - np.cos(theta), 0.5 - np.sin(theta)], axis=1)
    points = np.where(labels[:, None] == 0, upper, lower) - np.array([0.5, 0.25])
    return points, labels


def _circles(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    labels = _balanced_labels(rng, k, 2)
    theta = rng.uniform(0.0, 2.0 * np.pi, k)
    radius = np.where(labels == 0, 1.0, 0.5)
    return np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=1), labels


_BLOB_CENTRES = 1.5 * np.array(
    [[math.cos(a), math.sin(a)] for a in np.deg2rad([90.0, 210.0, 330.0])]
)


def _blobs(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    labels = _balanced_labels(rng, k, 3)
    return _BLOB_CENTRES[labels].copy(), labels  # the spread is the jitter (noise)


def _spiral(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    labels = _balanced_labels(rng, k, 2)
    t = rng.random(k)
    theta = 2.5 * np.pi * t + np.pi * labels
    radius = 0.2 + 1.3 * t
    return np.stack([radius * np.cos(theta), radius * np.sin(theta)], axis=1), labels


def _gaussian(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    points = rng.standard_normal((k, 2))
    labels = (points[:, 0] + points[:, 1] > 0).astype(np.int64)
    return points, labels


_GENERATORS: dict[str, Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]] = {
    "star": _star,
    "moons": _moons,
    "circles": _circles,
    "blobs": _blobs,
    "spiral": _spiral,
    "gaussian": _gaussian,
}


def _check_int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise DatasetError(f"{what} must be an integer, got {brief(value)}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise DatasetError(f"{what} must be an integer, got {brief(value)}") from None


def make_dataset(name: str, n: int = 100, seed: int = 0, noise: float | None = None) -> Dataset:
    """Draw ``n`` labelled 2D points of the data set ``name`` from ``seed``.

    Args:
        name: one of :data:`DATASETS`.
        n: number of points, 1 .. :data:`MAX_POINTS`.
        seed: non-negative integer seed of ``numpy.random.default_rng``.
        noise: standard deviation of the Gaussian jitter added to the positions (for ``blobs``
            the blobs' spread), 0 .. 1; ``None`` takes :data:`DEFAULT_NOISE` ``[name]``.

    Returns:
        A :class:`Dataset` with points (n, 2) float64 in ``[-2.5, 2.5]^2`` and labels (n,) int64
        in ``0 .. NUM_CLASSES[name] - 1``. Same arguments, identical arrays.

    Raises:
        DatasetError: (a ``ValueError``) unknown name, n out of range, bad seed or noise.
    """
    if name not in _GENERATORS:
        raise DatasetError(f"unknown data set {brief(name)}; valid names: {', '.join(DATASETS)}")
    n = _check_int(n, "n")
    if not 1 <= n <= MAX_POINTS:
        raise DatasetError(f"n must be between 1 and {MAX_POINTS:,}, got {n}")
    seed = _check_int(seed, "seed")
    if seed < 0:
        raise DatasetError(f"seed must be a non-negative integer, got {seed}")
    if noise is None:
        noise = DEFAULT_NOISE[name]
    try:
        noise = float(noise)
    except (TypeError, ValueError):
        raise DatasetError(f"noise must be a number, got {brief(noise)}") from None
    if not (math.isfinite(noise) and 0.0 <= noise <= MAX_NOISE):
        raise DatasetError(f"noise must be between 0 and {MAX_NOISE}, got {noise}")

    rng = np.random.default_rng(seed)
    generate = _GENERATORS[name]

    def draw(k: int) -> tuple[np.ndarray, np.ndarray]:
        pts, lab = generate(rng, k)
        if noise > 0.0:
            pts = pts + noise * rng.standard_normal((k, 2))
        return pts, lab

    points, labels = draw(n)
    for _ in range(_MAX_REDRAW_ROUNDS):
        outside = np.flatnonzero(np.any(np.abs(points) > DATA_BOUND, axis=1))
        if outside.size == 0:
            break
        points[outside], labels[outside] = draw(outside.size)
    else:  # pragma: no cover - needs an astronomically unlucky seed
        raise RuntimeError(f"could not draw {name} points inside [-{DATA_BOUND}, {DATA_BOUND}]^2")

    return Dataset(
        name=name,
        points=np.ascontiguousarray(points, dtype=np.float64),
        labels=np.ascontiguousarray(labels, dtype=np.int64),
    )


# --------------------------------------------------------------------------- validation


def check_points(points: object, labels: object, source: str) -> tuple[np.ndarray, np.ndarray]:
    """Check and convert points (n, 2) and optional labels (n,); messages start with source."""
    arr = np.asarray(points)
    if arr.dtype.kind not in "iuf":
        raise DatasetError(
            f"{source}: points must be real numbers, got an array of dtype {arr.dtype}"
        )
    if arr.size == 0:
        raise DatasetError(f"{source}: no points (the array is empty, shape {arr.shape})")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise DatasetError(f"{source}: points must have shape (n, 2), got shape {arr.shape}")
    n = arr.shape[0]
    if n > MAX_POINTS:
        raise DatasetError(f"{source}: too many points ({n:,}; at most {MAX_POINTS:,})")
    arr = np.array(arr, dtype=np.float64, order="C", copy=True)
    bad = ~np.isfinite(arr) | (np.abs(arr) > MAX_COORDINATE)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DatasetError(
            f"{source}: {int(bad.any(axis=1).sum())} point(s) have non-finite coordinates or "
            f"coordinates beyond +/-{MAX_COORDINATE:g} "
            f"(first: row {row}, column {col}, value {arr[row, col]})"
        )

    if labels is None:
        return arr, np.zeros(n, dtype=np.int64)
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iuf":
        raise DatasetError(f"{source}: labels must be integers, got an array of dtype {lab.dtype}")
    if lab.shape != (n,):
        raise DatasetError(f"{source}: labels must have shape ({n},), got shape {lab.shape}")
    if lab.dtype.kind == "f":
        if not np.all(np.isfinite(lab)):
            raise DatasetError(f"{source}: labels contain non-finite values")
        if not np.all(lab == np.round(lab)):
            raise DatasetError(f"{source}: labels must be whole numbers")
        if np.any(np.abs(lab) >= 2**62):
            raise DatasetError(f"{source}: labels out of range")
    if np.any(lab < 0):
        raise DatasetError(f"{source}: labels must be non-negative integers")
    if lab.dtype.kind == "u" and np.any(lab > np.iinfo(np.int64).max):
        raise DatasetError(f"{source}: labels out of range")
    return arr, lab.astype(np.int64)


def shifted(data: Dataset, shift_x: float = 0.0, shift_y: float = 0.0) -> Dataset:
    """``data`` moved by (shift_x, shift_y): the data sets are centred on the origin, where
    BN's layer-1 hyperplanes (through the data's centroid, Corollary 2) and zero bias's
    (through the origin) coincide; off the origin they differ (BN paper Figure 1)."""
    if shift_x == 0 and shift_y == 0:
        return data
    return Dataset(data.name, data.points + np.array([shift_x, shift_y], dtype=np.float64),
                   data.labels)


def as_dataset(
    points: np.ndarray, labels: np.ndarray | None = None, name: str = "custom"
) -> Dataset:
    """Validate an in-memory point array (n, 2), with optional labels (n,), as a :class:`Dataset`.

    Points must be finite real numbers, 1 .. :data:`MAX_POINTS` rows; labels non-negative
    integers (whole-number floats are accepted). Without labels every point gets label 0.
    The arrays are copied.

    Raises:
        DatasetError: (a ``ValueError``) with a one-line message naming the problem.
    """
    pts, lab = check_points(points, labels, "points")
    return Dataset(name=name, points=pts, labels=lab)
