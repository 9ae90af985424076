"""Planes through image space, x(a, b) = origin + a u + b v, and their windows.

* Through three images (the default slice): the origin is their centroid, u and v an
  orthonormal basis of the plane they span (Gram-Schmidt on x2 - x1, x3 - x1), and the window
  the smallest square about the origin that holds the three with a margin.
* Through one image along two random directions, orthonormal, of norm 1 in image space.
* An explicit plane from an .npz file holding ``origin``, ``u`` and ``v`` of the image's shape,
  with the window [-E, E]^2.

Coordinates (a, b) are lengths in image space when u, v are orthonormal; a given plane is used
as given (its u, v need only be independent).
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Plane", "load_plane", "plane_through_image", "plane_through_images"]

#: Relative size of the margin about the three images (of their largest coordinate).
MARGIN = 0.25
#: u and v count as dependent when |sin angle| is below this (float64 rounding of a
#: parallel pair leaves sin ~ 1e-8).
INDEPENDENCE_TOL = 1e-6


@dataclass(frozen=True)
class Plane:
    origin: np.ndarray  # (C, H, W) float64
    u: np.ndarray
    v: np.ndarray
    anchors: np.ndarray  # (n, 2): the (a, b) of the images the plane goes through

    def point(self, a: float, b: float) -> np.ndarray:
        return self.origin + a * self.u + b * self.v

    def points(self, ab: np.ndarray) -> np.ndarray:
        """The images at the plane coordinates ``ab`` (n, 2): (n, C, H, W)."""
        return (self.origin[None] + ab[:, 0, None, None, None] * self.u[None]
                + ab[:, 1, None, None, None] * self.v[None])

    def coordinates(self, images: np.ndarray) -> np.ndarray:
        """The (a, b) of the orthogonal projections of ``images`` (n, C, H, W) on the plane."""
        basis = np.stack([self.u.ravel(), self.v.ravel()], 1)
        rel = images.reshape(len(images), -1) - self.origin.ravel()
        return np.linalg.lstsq(basis, rel.T, rcond=None)[0].T

    def default_window(self) -> tuple[float, float, float, float]:
        """The square about the origin holding the anchors with a margin ([-1, 1]^2 about a
        single image, which is the origin)."""
        e = float(np.abs(self.anchors).max()) * (1 + MARGIN) if len(self.anchors) else 0.0
        e = e if e > 0 else 1.0  # one image at the origin: a unit square about it
        return (-e, e, -e, e)


def _check_independent(u: np.ndarray, v: np.ndarray, what: str) -> None:
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    if not (math.isfinite(nu) and math.isfinite(nv)) or nu == 0 or nv == 0:
        raise ValueError(f"{what}: u and v must be finite and non-zero")
    cos = float(u.ravel() @ v.ravel()) / (nu * nv)
    if 1 - cos * cos < INDEPENDENCE_TOL**2 or abs(cos) > 1 - INDEPENDENCE_TOL**2 / 2:
        raise ValueError(f"{what}: u and v are not independent (they are parallel)")


def plane_through_images(images: np.ndarray) -> Plane:
    """The plane through three images (3, C, H, W): origin at their centroid, u, v from
    Gram-Schmidt on (x2 - x1, x3 - x1)."""
    x = np.asarray(images, np.float64)
    if x.ndim != 4 or len(x) != 3:
        raise ValueError("a plane through images needs exactly three images")
    origin = x.mean(0)
    d1, d2 = x[1] - x[0], x[2] - x[0]
    n1 = np.linalg.norm(d1)
    if n1 == 0:
        raise ValueError("the three images are not independent (two are equal): choose others")
    u = d1 / n1
    w = d2 - (d2.ravel() @ u.ravel()) * u
    nw = np.linalg.norm(w)
    if nw <= INDEPENDENCE_TOL * max(np.linalg.norm(d2), 1e-300):
        raise ValueError("the three images lie on one line: choose others")
    v = w / nw
    plane = Plane(origin, u, v, np.zeros((0, 2)))
    return Plane(origin, u, v, plane.coordinates(x))


def plane_through_image(image: np.ndarray, seed: int = 0) -> Plane:
    """The plane through one image along two random orthonormal directions."""
    x = np.asarray(image, np.float64)
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((2, x.size))
    q, _ = np.linalg.qr(g.T)
    u, v = q[:, 0].reshape(x.shape), q[:, 1].reshape(x.shape)
    return Plane(x, u, v, np.zeros((1, 2)))


def load_plane(path: Path, shape: tuple[int, ...]) -> Plane:
    """A plane from an .npz holding ``origin``, ``u`` and ``v`` of the image's ``shape``
    (nothing unpickled); one-line ValueError for anything else."""
    from bnviz.data.npfiles import read_numpy

    loaded = read_numpy(path)  # one line for a missing, empty, non-NumPy or pickled file
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: a single array, not an .npz holding origin, u and v")
    try:
        with loaded as f:
            arrays = {k: np.asarray(f[k], np.float64) for k in ("origin", "u", "v")
                      if k in f.files}
    except KeyError as exc:
        raise ValueError(f"{path}: {exc}") from None
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        detail = str(exc).splitlines()[0][:80]
        if "pickle" in detail:
            detail = "it holds Python objects, which bnviz never loads"
        raise ValueError(f"{path}: not a readable .npz ({detail})") from None
    missing = [k for k in ("origin", "u", "v") if k not in arrays]
    if missing:
        raise ValueError(f"{path}: the plane needs arrays origin, u, v (missing "
                         f"{', '.join(missing)})")
    for k, a in arrays.items():
        if a.size == int(np.prod(shape)) and a.shape != tuple(shape):
            a = a.reshape(shape)
            arrays[k] = a
        if a.shape != tuple(shape):
            raise ValueError(f"{path}: {k} has shape {a.shape}, the network's images are "
                             f"{tuple(shape)}")
        if not np.isfinite(a).all():
            raise ValueError(f"{path}: {k} has values that are not finite")
    _check_independent(arrays["u"], arrays["v"], str(path))
    return Plane(arrays["origin"], arrays["u"], arrays["v"], np.zeros((1, 2)))
