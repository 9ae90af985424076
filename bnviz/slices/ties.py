"""Canonical ties of the slice's cut (:mod:`bnviz.slices.engine`, its docstring's "Ties are
canonical"): a unit an affine op makes zero within RTOL of the terms it summed is exactly
zero on that region, so its float64 rounding draws no line of its own and breaks no tie of
pooled values.  The tolerance is RTOL of :mod:`bnviz.core.crossings`, relative to the terms'
scale |d/da| X + |d/db| Y + |offset| (X, Y: the window's largest |a| and |b|)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from bnviz.core.arrays import NUMPY
from bnviz.core.crossings import RTOL
from bnviz.core.cut import compiled_kernels
from bnviz.slices.graph import Op, Statistics, conv2d_part, linear_part

__all__ = ["TieSnap", "largest_scale", "unit_scale"]

#: The first test's |op| on ones is summed by conv2d, the exact terms by |op|'s planned form:
#: the two orders round apart by some n * 2^-53 of the sum (n terms), so the test's bound is
#: raised by this factor to stay above the terms it stands for (it only picks the regions
#: whose exact terms are computed: a larger bound picks more, never other ties).
ONES_SLACK = 1.0 + 1e-9


class TieSnap:
    """The snapping of one cut: BN's statistics, the tolerance's scale (bx, by), and each
    op's linear part in absolute value, made once."""

    def __init__(self, stats: Statistics | None, bx: float, by: float):
        self.stats, self.bx, self.by = stats, bx, by
        self.absolute: dict[str, tuple] = {}  # |op|, its bound's terms, those flattened

    def snap(self, op: Op, xs: list[torch.Tensor], bounds: list[torch.Tensor],
             out: torch.Tensor, bias: np.ndarray | None) -> None:
        """Make exactly zero the units of ``out`` (3, R, ...) that are zero within RTOL of the
        terms ``op`` summed: |op| on its inputs' scales, plus |bias|.  A bound first, |op|
        applied to ones times each region's largest input scale (``bounds``, one per input:
        :func:`largest_scale` or a larger bound): only the regions with a unit under it get
        the exact terms (most layers have none)."""
        if op.name not in self.absolute:
            attrs = {k: np.abs(v) if k in ("weight", "gamma") and v is not None else v
                     for k, v in op.attrs.items() if k != "_dense"}
            # the op's planned forms, not its matrices: the plan counted these twice
            # (bnviz.slices.conv_products.plan_forms)
            attrs["_dense"] = {k: v for k, v in op.attrs.get("_dense", {}).items()
                               if k[0] == "form"}
            absolute = replace(op, attrs=attrs)
            ones = [torch.ones((1, *x.shape[2:]), dtype=out.dtype, device=out.device)
                    for x in xs]
            constant = torch.as_tensor(np.abs(bias) if bias is not None else 0.0,
                                       dtype=out.dtype, device=out.device)
            # |op| on ones by conv2d (one image), not by |op|'s matrices: those are built only
            # for a region the bound flags, which most cuts never meet (the appendix CNN's
            # cut flagged one op's regions once: 54 MB of matrices, half its forms, unbuilt)
            rows_sum = RTOL * ONES_SLACK * (conv2d_part(absolute, ones[0]) if op.kind == "conv"
                                            else linear_part(absolute, ones, self.stats))
            constant = RTOL * constant
            # each unit's constant and bound per scale for the compiled test, writable (a
            # read-only array is another type to numba: compiled in the middle of a cut)
            flat = (np.array(np.broadcast_to(constant.numpy(), out.shape[2:]).reshape(-1)),
                    np.array(rows_sum.numpy().reshape(-1))) if out.device.type == "cpu" else None
            self.absolute[op.name] = (absolute, rows_sum, constant, flat)
        absolute, rows_sum, constant, flat = self.absolute[op.name]
        r = out.shape[1]
        largest = torch.stack(bounds).amax(0)
        compiled = _compiled_for(out)
        if compiled is not None:  # (one pass: bnviz.core.compiled_network.rows_under_bound)
            under = compiled.rows_under_bound(
                np.ascontiguousarray(out[2].numpy()).reshape(r, -1), *flat,
                np.ascontiguousarray(largest.numpy()))
            rows = torch.from_numpy(np.flatnonzero(under))
        else:
            bound = torch.addcmul(constant, rows_sum, largest.reshape(r, *[1] * (out.ndim - 2)))
            rows = torch.nonzero(torch.le(out[2].abs(), bound).reshape(r, -1).any(1))[:, 0]
        if len(rows) == 0:
            return
        part = out[:, rows]
        terms = RTOL * linear_part(absolute, [unit_scale(x[:, rows], self.bx, self.by) for x in xs],
                                   self.stats) + constant
        zero = (unit_scale(part, self.bx, self.by) <= terms) & (part != 0).any(0)
        if bool(zero.any()):
            part[:, zero] = 0.0
            out[:, rows] = part


def largest_scale(x: torch.Tensor, bx: float, by: float) -> torch.Tensor:
    """A bound of the largest unit scale of each region's maps (3, R, ...): (R,)."""
    flat = x.reshape(3, x.shape[1], -1)
    # amax and amin, not aminmax: torch's CPU aminmax over the last dim ran 10x slower
    # (2.9 against 0.25 ms on 3 x 300 x 1536 float64, one thread; bench/slice.py's profile);
    # a compiled pass was no faster (1.6 against 1.8 ms for 3 x 1 500 x 768: memory-bound)
    m = torch.maximum(flat.amax(2), -flat.amin(2))
    return m[0] * bx + m[1] * by + m[2]


def _compiled_for(x: torch.Tensor):  # noqa: ANN202 (the kernels' module, or None)
    """The compiled kernels for float64 maps on the CPU, where this process has them loaded
    (:func:`bnviz.core.cut.compiled_kernels`); else None: torch's ops, the same rows picked."""
    if x.device.type != "cpu" or x.dtype != torch.float64:
        return None
    return compiled_kernels(NUMPY, 0)


def unit_scale(x: torch.Tensor, bx: float, by: float) -> torch.Tensor:
    """Each unit's scale on each region of its maps (3, R, ...): |d/da| X + |d/db| Y +
    |offset| (the tolerance's scale, :mod:`bnviz.core.crossings`)."""
    return x[0].abs() * bx + x[1].abs() * by + x[2].abs()
