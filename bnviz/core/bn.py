"""The one BN forward and the one set of BN statistics (BN paper eq. 3-4; docs/conventions.md).

For a unit with pre-activations u_1..u_|B| over the batch B, BN uses (eq. 3)

    mu    = (1/|B|) sum_i u_i,
    sigma = sqrt((1/|B|) sum_i (u_i - mu)^2)        (the BIASED standard deviation),

and sets h = gamma (u - mu) / sigma + beta (eq. 4; gamma = 1, beta = 0 unless a view says
otherwise).  Every place of bnviz that normalises goes through this module: the exact geometry
(:mod:`bnviz.core.network`), the jitter realisations, the toy training, the image networks'
norm layers, and the paper views.  Every function takes torch tensors, differentiable (autograd
flows through mu and sigma as in torch's own training-mode ``batch_norm``), or numpy arrays
(the CPU geometry of ``bnviz partition``, which never imports torch), batched over any leading
dims, float64 when given float64, on the device of its input: one implementation, two array
libraries.

A zero sigma (every batch point gives the same u) leaves BN's division undefined.
docs/conventions.md:
"no eps in the exact geometry; where an eps is needed for a zero sigma, say so and keep it
<= 1e-12 relative".  The one floor used everywhere (:func:`floored_sigma`) is

    sigma >= SIGMA_FLOOR_REL * sqrt(mu^2 + sigma^2)    (the root mean square of u over B),

and sigma = 1 when u is zero on the whole batch.  The root mean square is the scale of the
unit's values (it is within a factor sqrt(|B|) of max |u|, and equals |u| on a constant batch),
so the floor never moves a non-degenerate sigma by more than float rounding, and it is
computed from the statistics alone: the same definition serves batch statistics, running
averages and calibrated (frozen) statistics, with no second pass over u.  The floor is applied
to the variance before the square root, so the gradient stays finite on a constant batch
(it is zero through the floor, which is a constant, like torch's eps).

The unbiased variant (divide by |B| - 1) is available as ``correction=1`` for the views that
show the difference on purpose (Dannemann & Junike's counterexample): it is an argument of the
one function, not a second implementation.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "SIGMA_FLOOR_REL",
    "batch_moments",
    "batch_norm",
    "batch_statistics",
    "bn_forward",
    "floored_sigma",
]

#: Relative floor on a zero BN standard deviation (docs/conventions.md: an eps only where
#: sigma is 0, and <= 1e-12 relative to the unit's scale, here its root mean square over the batch).
SIGMA_FLOOR_REL = 1e-12

Dims = int | tuple[int, ...] | list[int]


def _is_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")  # no tensor exists before torch is imported
    return torch is not None and isinstance(x, torch.Tensor)


def batch_moments(u: torch.Tensor | np.ndarray, dim: Dims = 0, keepdim: bool = False, *,
                  correction: int = 0) -> tuple[Any, Any]:
    """(mean, variance) of ``u`` over ``dim`` in one ``torch.var_mean`` pass (eq. 3; numpy's
    mean and var for an array).

    The variance divides by n - ``correction``: 0 (the default) is BN's biased variance,
    1 the unbiased one (docs/conventions.md, Pitfalls: torch's ``var`` defaults to 1).
    ``dim`` may be a tuple (an image channel: batch and spatial dims); other dims are kept as
    batch dims.
    """
    if _is_tensor(u):
        import torch

        var, mean = torch.var_mean(u, dim=dim, correction=correction, keepdim=keepdim)
        return mean, var
    axis = tuple(dim) if isinstance(dim, list) else dim
    return (np.mean(u, axis=axis, keepdims=keepdim),
            np.var(u, axis=axis, ddof=correction, keepdims=keepdim))


def floored_sigma(mean: Any, var: Any) -> Any:
    """sqrt(var), floored at SIGMA_FLOOR_REL times the unit's root mean square
    sqrt(mean^2 + var), and 1 where the unit is zero on the whole batch (module docstring).

    The floor is a constant for autograd (detached) and is applied to the variance before the
    square root, so a constant batch has a finite, zero gradient through sigma.  The floored
    variance is at least the dtype's smallest normal number, so sigma is never 0 (a float32
    floor must not underflow to 0).
    """
    if not _is_tensor(var):
        mean_square = mean * mean + np.maximum(var, 0)
        floor_sq = np.where(mean_square > 0, np.maximum(SIGMA_FLOOR_REL**2 * mean_square,
                                                        np.finfo(var.dtype).tiny), 1.0)
        return np.sqrt(np.maximum(var, floor_sq))
    import torch

    with torch.no_grad():
        mean_square = mean * mean + var.clamp_min(0)
        tiny = torch.finfo(var.dtype).tiny
        floor_sq = torch.where(mean_square > 0,
                               (SIGMA_FLOOR_REL**2 * mean_square).clamp_min(tiny),
                               torch.ones_like(mean_square))
    return torch.maximum(var, floor_sq).sqrt()


def batch_statistics(u: torch.Tensor, dim: Dims = 0, keepdim: bool = False, *,
                     correction: int = 0, floor: bool = True
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """BN's (mu, sigma) of ``u`` over ``dim`` (eq. 3): the mean and the BIASED standard
    deviation (``correction=1``: the unbiased one), in one pass.

    With ``floor`` (the default, what BN divides by) sigma is :func:`floored_sigma`; without
    it, the plain statistic (a description of the batch, or a loss that must stay undefined
    where sigma is 0; its gradient is not finite there).
    """
    mean, var = batch_moments(u, dim, keepdim, correction=correction)
    return mean, floored_sigma(mean, var) if floor else (
        var.sqrt() if _is_tensor(var) else np.sqrt(var))


def bn_forward(u: torch.Tensor, mean: torch.Tensor, sigma: torch.Tensor,
               gamma: torch.Tensor | float | None = None,
               beta: torch.Tensor | float | None = None, *, inplace: bool = False
               ) -> torch.Tensor:
    """h = gamma (u - mean) / sigma + beta (eq. 4), with statistics that broadcast against
    ``u`` (batch statistics, running averages, frozen or noisy ones); gamma = 1, beta = 0
    when not given.  ``inplace`` overwrites ``u`` (no temporaries: the jitter view's K
    realisations at once; not for tensors autograd needs)."""
    if inplace and _is_tensor(u):
        h = u.sub_(mean).div_(sigma)
    elif inplace:
        h = u
        h -= mean
        h /= sigma
    else:
        h = (u - mean) / sigma
    if gamma is not None:
        h = h * gamma
    if beta is not None:
        h = h + beta
    return h


def batch_norm(u: torch.Tensor, dim: Dims = 0, *, correction: int = 0,
               gamma: torch.Tensor | float | None = None,
               beta: torch.Tensor | float | None = None) -> torch.Tensor:
    """Training-mode BN of ``u`` over ``dim``: :func:`bn_forward` with the batch's own
    :func:`batch_statistics` (floored sigma), differentiable through both."""
    mean, sigma = batch_statistics(u, dim, keepdim=True, correction=correction)
    return bn_forward(u, mean, sigma, gamma, beta)
