"""Canonical ties of the slice's cut (:mod:`bnviz.slices.engine`, its docstring's "Ties are
canonical"): a unit an affine op makes zero within RTOL of the terms it summed is exactly
zero on that region, so its float64 rounding draws no line of its own and breaks no tie of
pooled values.  The tolerance is RTOL of :mod:`bnviz.core.crossings`, relative to the terms'
scale |d/da| X + |d/db| Y + |offset| (X, Y: the window's largest |a| and |b|)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from bnviz.core.crossings import RTOL
from bnviz.slices.graph import Op, Statistics, linear_part

__all__ = ["TieSnap", "largest_scale", "unit_scale"]


class TieSnap:
    """The snapping of one cut: BN's statistics, the tolerance's scale (bx, by), and each
    op's linear part in absolute value, made once."""

    def __init__(self, stats: Statistics | None, bx: float, by: float):
        self.stats, self.bx, self.by = stats, bx, by
        self.absolute: dict[str, tuple[Op, torch.Tensor, torch.Tensor]] = {}

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
            self.absolute[op.name] = (absolute, RTOL * linear_part(absolute, ones, self.stats),
                                      RTOL * constant)
        absolute, rows_sum, constant = self.absolute[op.name]
        r = out.shape[1]
        largest = torch.stack(bounds).amax(0)
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
    # (2.9 against 0.25 ms on 3 x 300 x 1536 float64, one thread; bench/slice.py's profile)
    m = torch.maximum(flat.amax(2), -flat.amin(2))
    return m[0] * bx + m[1] * by + m[2]


def unit_scale(x: torch.Tensor, bx: float, by: float) -> torch.Tensor:
    """Each unit's scale on each region of its maps (3, R, ...): |d/da| X + |d/db| Y +
    |offset| (the tolerance's scale, :mod:`bnviz.core.crossings`)."""
    return x[0].abs() * bx + x[1].abs() * by + x[2].abs()
