"""A slice's ReLU layer cut by the vectorised cut of the 2D views, in torch on the device that
holds the maps (issue 45, item 5: the GPU when one is lent).

The compiled kernel (:func:`bnviz.core.compiled_network.cut_layer`) cuts on the CPU, so on a
GPU every ReLU layer's pre-activations would travel to the host and back.  The vectorised cut
(:func:`bnviz.core.cut.layer_step`, the explorer's cut on big meshes and on the GPU: whole
arrays, no loop over polygons) takes the same pre-activations, the same tolerance (RTOL of the
window's scale, :mod:`bnviz.core.crossings`) and the same region caps, and gives the same
partition: tests/slices/test_vectorised_cut.py compares the two, region for region (full
code and area), with the torch path forced on the CPU.  Only the order of the regions differs
(the vectorised cut keeps uncut polygons first), which nothing downstream depends on: every
region carries its parent.  Max pooling and the decision cells stay on the CPU's compiled
kernels (no vectorised form yet).
"""

from __future__ import annotations

import numpy as np
import torch

from bnviz.core.cut import layer_step
from bnviz.core.mesh import Mesh

__all__ = ["relu_cut_vectorised"]


def relu_cut_vectorised(x: torch.Tensor, ptr: np.ndarray, verts: np.ndarray, bx: float,
                        by: float, slope: float, max_regions: int
                        ) -> tuple[np.ndarray, np.ndarray, torch.Tensor, np.ndarray, np.ndarray,
                                   np.ndarray, np.ndarray, np.ndarray]:
    """Every region (``ptr``, ``verts``) cut by the lines h_k = 0 of its pre-activation maps
    ``x`` (3, R, ...), on ``x``'s device: (ptr, verts, the faces' activated maps (3, R', D) on
    the device, the faces' packed codes, each face's region, the facets (M, 4), their units,
    their regions).  :class:`~bnviz.core.limits.PartitionTooLarge` as the compiled cut
    raises it."""
    dev = x.device
    r = x.shape[1]
    planes = x.reshape(3, r, -1).to(torch.float64).clone()
    d = planes.shape[2]
    mesh = Mesh(torch.as_tensor(ptr, device=dev), torch.as_tensor(verts, device=dev), planes,
                torch.zeros((r, 0), dtype=torch.bool, device=dev),
                torch.arange(r, device=dev))  # group: each face's region comes back in it
    zero = torch.zeros((1, d), dtype=torch.float64, device=dev)
    out, facets, units, fparents = layer_step(
        mesh, zero.T, zero, zero + 1.0, slope, (-bx, bx, -by, by), max_regions,
        compiled=False, planes=planes)
    return (out.ptr.cpu().numpy(), out.verts.cpu().numpy(), out.aff,
            np.packbits(out.codes.cpu().numpy(), axis=1), out.group.cpu().numpy(),
            facets.cpu().numpy(), units.cpu().numpy(), fparents.cpu().numpy())
