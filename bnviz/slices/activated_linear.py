"""A convolution or linear layer on a ReLU cut's output maps, by differences (issue 45).

The faces a ReLU cut makes of one region share that region's maps A (3, U): face f's
activated maps are A times f's factors (1 on its active units, the slope on the others),
and the next linear op L gives L(factors_f * A).  Faces of one region differ in few units:
on the conv chain of ``bench/slice.py`` (1 024 units, 640 active), 57 000 faces of one
window have 28 active units on average beyond those active in every face of their chunk.
So a chunk's faces of one region take one reference, L applied to the common code's
factors times A (the units active in every face), and each face adds only the columns of
its other active units,

    L(factors_f * A) = L(factors_ref * A) + sum over u active in f, not in ref, of
                       (1 - slope) A[:, u] L[u, :],

where L[u, :] is what a one at input unit u adds to the outputs (a convolution's by-unit
matrix: :func:`bnviz.slices.conv_dense.unit_matrix`).  The reference is the common code,
not the majority's, so that nothing is subtracted: with a ReLU every term summed is one of
the face's own terms (with a leaky one, slope times one and 1 - slope times one), and the
rounding is relative to the face's own terms, as in the direct product; an output whose
inputs are all off on the face is exactly zero, as there (the majority's reference left
1e-16 of its terms where a bias-free conv's direct output was 0, which the snap, relative to
the face's terms, kept: dead units drawn as lines).  The result differs from the direct
product by that rounding alone, and :class:`bnviz.slices.ties.TieSnap` runs after it as
after the direct op.  A chunk whose faces come from many regions, or differ in many units,
runs the op directly (None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from bnviz.core import kernels
from bnviz.slices.conv_dense import conv_out_shape, unit_matrix
from bnviz.slices.graph import Op, SliceNet, Statistics, linear_part, plan_matrices
from bnviz.slices.slice_mesh import ActivatedRows

if TYPE_CHECKING:  # (imported where one is built: bnviz.slices.conv_dense)
    from scipy import sparse

__all__ = ["linear_by_differences", "plan_cut_matrices"]

#: Entries of a convolution's by-unit matrix (sparse: 12 bytes each) past which the op always
#: runs directly: 4M entries, 48 MB, kept on the op while the cut runs.
UNIT_MATRIX_ENTRIES = 4_000_000
#: A chunk's faces run by differences when they come from at most one region in this many
#: (the references' products, one a region, at most half the direct op's).  A cut's uncut
#: regions come first in its faces, each a run of one, and do not stop the others.  Measured
#: (bench/slice.py's per-core cases, one thread): 2 against 8 changed nothing beyond the
#: noise (ResNet9 5.60-5.62 against 5.57-5.71 s; the residual net 3.20-3.26 against
#: 3.25-3.27 s), and 1.1 on the appendix CNN, whose later layers have 1.1-1.9 faces a region,
#: neither (9.21-9.55 against 9.40-9.42 s).
MIN_FACES_A_REGION = 2
#: The differences run while the faces differ from their references in at most this fraction
#: of (face, unit) pairs: a differing unit adds its row's nonzeros once, scattered, where the
#: op on a face multiplies every unit's.
DIFFERING_SHARE = 0.25


def linear_by_differences(op: Op, rows: ActivatedRows, s: int, e: int,
                          stats: Statistics | None) -> torch.Tensor | None:
    """The linear part of ``op`` (a conv or linear layer) on faces s..e-1 of ``rows``, as
    (3, e - s, *output shape), by differences from each region's common code; None when
    that would not pay (then the caller runs ``op`` on the faces' maps)."""
    if op.kind not in ("conv", "linear") or rows.device.type != "cpu" or e - s < 8:
        return None
    parent = rows.parent[s:e]
    starts = np.flatnonzero(np.r_[True, parent[1:] != parent[:-1]])
    n, groups = e - s, len(starts)
    if groups * MIN_FACES_A_REGION > n:
        return None
    compiled = kernels.require()
    units = rows.planes.shape[2]
    packed = rows.packed[s:e]
    reference, differing = compiled.common_codes(packed, np.r_[starts, n])
    if differing > DIFFERING_SHARE * n * units:
        return None
    matrix = _by_unit(op, tuple(rows.shape[2:]))  # (built only where it will be used)
    if matrix is None:
        return None
    factors = np.where(np.unpackbits(reference, axis=1, count=units).view(bool), 1.0,
                       rows.slope)
    ref_maps = torch.from_numpy(rows.planes[:, parent[starts]] * factors[None])
    shape = (-1,) if op.kind == "linear" else rows.shape[2:]
    ref_out = linear_part(op, [ref_maps.reshape(3 * groups, *shape)], stats)
    group = np.repeat(np.arange(groups), np.diff(np.r_[starts, n]))
    out = ref_out.reshape(3, groups, -1)[:, torch.from_numpy(group)].contiguous()
    compiled.add_unit_steps(rows.planes, parent, packed, reference, group, rows.slope,
                            matrix.indptr, matrix.indices, matrix.data, out.numpy())
    if op.kind == "conv":
        return out.reshape(3, n, *conv_out_shape(op.attrs, tuple(rows.shape[2:])))
    return out


def _by_unit(op: Op, shape: tuple[int, ...]) -> sparse.csr_matrix | None:
    """``op``'s linear part by input unit (U, V), sparse with int32 indices (the compiled
    kernel's types), kept on the op (a conv's: :func:`bnviz.slices.conv_dense.unit_matrix`);
    None past :data:`UNIT_MATRIX_ENTRIES`, or past what the cut's plan left
    (:func:`plan_cut_matrices`)."""
    cache = op.attrs.setdefault("_dense", {})
    key = ("by unit", shape)
    if key not in cache:
        left = cache.get(("left",), {"bytes": float("inf")})  # the cut's plan, if it ran
        most = min(UNIT_MATRIX_ENTRIES, left["bytes"] // 12)  # (12 bytes an entry)
        if op.kind == "conv":
            cache[key] = unit_matrix(op.attrs, shape, most)
        else:
            from scipy import sparse

            weight = np.asarray(op.attrs["weight"], np.float64)
            cache[key] = None if weight.size > most else sparse.csr_matrix(
                (weight.T.ravel(), np.tile(np.arange(weight.shape[0], dtype=np.int32),
                                           weight.shape[1]),
                 np.arange(0, weight.size + 1, weight.shape[0], dtype=np.int32)),
                shape=weight.T.shape)
        if cache[key] is not None:
            left["bytes"] -= _nbytes(cache[key])
    return cache[key]


def _nbytes(matrix: sparse.csr_matrix) -> int:
    return matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes


def plan_cut_matrices(net: SliceNet, cpu: bool) -> None:
    """Plan a cut's matrices under one budget (:data:`bnviz.caps.SLICE_MATRIX_BYTES`): the
    convolutions' forms first (:func:`bnviz.slices.graph.plan_matrices`); what is left goes
    to the by-unit matrices of the differences as they are built, each refused (its op runs
    directly) where it would not fit.  (They are built only where the differences pay: a cut
    of the appendix CNN built one of 20.7 MB and six of 1.7 MB; their bounds sum to 229 MB.)"""
    from bnviz.caps import SLICE_MATRIX_BYTES

    left = {"bytes": SLICE_MATRIX_BYTES - plan_matrices(net, cpu)}
    for op in net.ops:
        if op.kind in ("conv", "linear"):
            cache = op.attrs.setdefault("_dense", {})
            cache[("left",)] = left
            for key, built in cache.items():  # an earlier cut's (a tile's), still kept
                if key[0] == "by unit" and built is not None:
                    left["bytes"] -= _nbytes(built)
