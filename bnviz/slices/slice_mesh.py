"""The regions a slice cut is cutting (:mod:`bnviz.slices.engine`): their polygons and each
live tensor's affine maps on each, and a ReLU cut's output maps made a chunk of regions at a
time.  The maps of region r are three arrays of the tensor's shape, the coefficients of the
plane's coordinates a and b and the constant (BN paper eq. 10-11 folded per region)."""

from __future__ import annotations

import numpy as np
import torch

from bnviz.core import kernels

__all__ = ["ActivatedRows", "SliceMesh", "planes_of"]


class SliceMesh:
    """The regions being cut (numpy CSR polygons), each live tensor's maps (torch), a bound
    of the largest unit scale of some of them per region (``bounds``: a cut's outputs), and
    ``base``: the index of region 0 among the last nonlinear layer's regions kept so far;
    ``activated``: the tensors whose maps are a ReLU cut's output, with the face of region 0
    (a linear op on them may run by differences: :mod:`bnviz.slices.activated_linear`)."""

    def __init__(self, ptr: np.ndarray, verts: np.ndarray, base: int = 0):
        self.ptr, self.verts, self.base = ptr, verts, base
        self.maps: dict[str, torch.Tensor] = {}
        self.bounds: dict[str, torch.Tensor] = {}
        self.activated: dict[str, tuple[ActivatedRows, int]] = {}

    @property
    def n(self) -> int:
        return len(self.ptr) - 1

    def nbytes(self) -> int:
        return sum(v.numel() for v in self.maps.values()) * 8

    def chunk(self, s: int, e: int) -> SliceMesh:
        """Regions s..e-1 as a mesh of their own."""
        ptr = self.ptr[s:e + 1] - self.ptr[s]
        out = SliceMesh(ptr, self.verts[self.ptr[s]:self.ptr[e]], self.base + s)
        out.maps = {k: v[:, s:e] for k, v in self.maps.items()}
        out.bounds = {k: v[s:e] for k, v in self.bounds.items()}
        out.activated = {k: (rows, first + s) for k, (rows, first) in self.activated.items()}
        return out


def planes_of(t: torch.Tensor, r: int) -> np.ndarray:
    """Maps (3, r, ...) as one float64 numpy array (3, r, D), for the compiled kernels."""
    return np.ascontiguousarray(t.reshape(3, r, -1).cpu().numpy(), dtype=np.float64)


class ActivatedRows:
    """A ReLU cut's output maps, made a chunk of regions at a time (``rows(s, e)``): each
    region's is its polygon's ``planes`` times 1 or ``slope`` by its code
    (:func:`bnviz.core.compiled_network.activated_maps`, the cut's own products)."""

    def __init__(self, planes: np.ndarray, parent: np.ndarray, packed: np.ndarray,
                 slope: float, shape: tuple[int, ...], device: torch.device):
        self.planes, self.parent, self.packed, self.slope = planes, parent, packed, slope
        self.shape, self.device = (3, len(parent), *shape), device

    def __call__(self, s: int, e: int) -> torch.Tensor:
        out = torch.empty((3, e - s, self.planes.shape[2]), dtype=torch.float64)
        kernels.require().activated_maps(self.planes, self.parent[s:e], self.packed[s:e], 0,
                                         self.slope, out.numpy())
        return out.to(self.device).reshape(3, e - s, *self.shape[2:])
