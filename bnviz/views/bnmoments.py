"""BN statistics as random variables, in closed form: Proposition 2 (eq. 13) of the BN paper, the
exact finite-population moments, and Luo et al.'s Gaussian model.

For one unit with pre-activation u = <w, z> (the BN paper's W_l z_{l-1}, one coordinate), a
mini-batch B of size |B| = B gives BN's statistics (docs/conventions.md, BN paper eq. 3; computed by
:func:`bnviz.core.bn.batch_moments`)

    mu      = (1/B) sum_{i in B} u_i,
    sigma^2 = (1/B) sum_{i in B} (u_i - mu)^2        (the BIASED batch variance, divide by B).

Redrawing the mini-batch makes (mu, sigma^2) random. With m, s^2, phi^4 the mean, variance
and 4th central moment of u under the data distribution, and iid draws, the exact moments are
(:func:`analytical_moments`)

    E[mu] = m,                     var(mu) = s^2 / B                    (eq. 13, left),
    E[sigma^2] = (B-1)/B s^2,      var(sigma^2) = ((B-1)/B)^2 (1/B) (phi^4 - s^4 (B-3)/(B-1)).

Eq. 13 as printed, var(sigma^2) = (1/B)(phi^4 - s^4 (B-3)/(B-1)), is the classical variance
of the UNBIASED sample variance S^2 = B/(B-1) sigma^2; BN normalises by the biased sigma^2,
hence the factor ((B-1)/B)^2 here (a 44 % difference at B = 4, 3 % at B = 64). For a
Gaussian u, phi^4 = 3 s^4.

Mini-batches drawn WITHOUT replacement from a finite training set of N values (the paper's
Figure 7: 64 out of 1000) are not iid draws; :func:`finite_population_moments` gives the exact
moments of mu and sigma^2 for that case (finite-population sampling), e.g.
var(mu) = s_N^2 / B * (N-B)/(N-1) with s_N^2 the training set's biased variance.

Luo et al. ("Towards understanding regularization in batch normalization", section 2) model
mu_B and sigma_B as Gaussians; :func:`luo_moments` gives their model, with the corrections
listed in docs/conventions.md, side by side with the exact values.  The Monte Carlo side is
:mod:`bnviz.views.bnsampling`, the Figure 7 report :mod:`bnviz.views.bnstats`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from bnviz.params.fields import InputError

__all__ = [
    "analytical_moments",
    "check_float",
    "check_int",
    "finite_population_moments",
    "finite_sigma2_moments",
    "iid_sigma2_moments",
    "luo_moments",
    "unit_moments",
]


# --------------------------------------------------------------------------- validation
# A bad value raises InputError (a ValueError): the parameter layer's one error, one line
# naming the parameter, as every value a user gives is refused (ARCHITECTURE.md).


def check_int(name: str, value: object, lo: int, hi: int, hi_name: str | None = None) -> int:
    """``value`` as an int in [lo, hi], else a one-line InputError naming the parameter."""
    bound = f"{hi_name}={hi}" if hi_name else str(hi)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer in [{lo}, {bound}], got {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise InputError(f"{name} must be an integer in [{lo}, {bound}], got {value}")
    return value


def check_float(name: str, value: object, lo: float = -math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < lo:
        raise InputError(f"{name} must be a finite number >= {lo}, got {value}")
    return value


def _check_moments(s2: float, m4: float) -> tuple[float, float]:
    s2 = check_float("s2 (variance)", s2, 0.0)
    m4 = check_float("m4 (4th central moment)", m4, 0.0)
    if m4 < s2 * s2 * (1.0 - 1e-9):
        raise InputError(f"m4 must be >= s2^2 (Jensen), got m4={m4} < s2^2={s2 * s2}")
    return s2, m4


# --------------------------------------------------------------------------- moments


def unit_moments(u: np.ndarray) -> tuple[float, float, float]:
    """(mean, biased variance, 4th central moment) of a 1-D sample ``u``.

    Population-style (divide by n) moments: for a training set these are the exact m, s_N^2
    and phi_N^4 that :func:`finite_population_moments` needs.
    """
    arr = np.asarray(u, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"u must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError("u must contain only finite values")
    mean = float(arr.mean())
    centred = arr - mean
    c2 = centred * centred
    return mean, float(c2.mean()), float((c2 * c2).mean())


def iid_sigma2_moments(s2, m4, b: int):
    """(E, var) of the biased batch variance for iid draws; floats or tensors (elementwise)."""
    shrink = (b - 1) / b
    unbiased_var = (m4 - s2 * s2 * (b - 3) / (b - 1)) / b  # eq. 13 as printed: var(S^2)
    return shrink * s2, shrink * shrink * unbiased_var


def _falling_ratio(b: int, n: int, k: int) -> float:
    """P(k given units all lie in a uniform random b-subset of n) = b^(k) / n^(k) (falling)."""
    if b < k:
        return 0.0
    p = 1.0
    for j in range(k):
        p *= (b - j) / (n - j)
    return p


def finite_sigma2_moments(s2, m4, n: int, b: int):
    """(E, var) of the biased batch variance, batches of b without replacement from n values.

    ``s2``, ``m4``: biased variance and 4th central moment of the n values (floats or tensors,
    elementwise). Exact; derivation in :func:`finite_population_moments`.
    """
    # With y = u - mean, S^2 = (1/(b(b-1))) sum_{i != j in batch} h_ij, h_ij = (y_i - y_j)^2 / 2.
    # Sums over ordered pairs of the n values (r_i = sum_j h_ij):
    #   R = sum h_ij = n^2 s2, Q = sum r_i^2 = n^3 (m4 + 3 s2^2) / 4,
    #   H = sum h_ij^2 = n^2 (m4 + 3 s2^2) / 2.
    # Pairs of pairs sharing 2, 1, 0 indices: T2 = 2H, T3 = 4Q - 4H, T4 = R^2 - T2 - T3, each
    # weighted by the probability p_k that its k distinct units are all in the batch.
    r = n * n * s2
    q = n**3 * (m4 + 3.0 * s2 * s2) / 4.0
    h = n * n * (m4 + 3.0 * s2 * s2) / 2.0
    t2 = 2.0 * h
    t3 = 4.0 * q - 4.0 * h
    t4 = r * r - t2 - t3
    p2, p3, p4 = (_falling_ratio(b, n, k) for k in (2, 3, 4))
    e_s2 = n / (n - 1) * s2  # E[S^2]
    e_s4 = (p2 * t2 + p3 * t3 + p4 * t4) / (b * (b - 1)) ** 2  # E[(S^2)^2]
    var_s2 = e_s4 - e_s2 * e_s2
    if isinstance(var_s2, torch.Tensor):
        var_s2 = var_s2.clamp_min(0.0)
    else:
        var_s2 = max(var_s2, 0.0)  # b = n: exactly 0 up to rounding
    shrink = (b - 1) / b
    return shrink * e_s2, shrink * shrink * var_s2


def analytical_moments(m: float, s2: float, m4: float, batch_size: int) -> dict[str, float]:
    """Exact moments of BN's mu and biased sigma^2 for a batch of iid draws (Proposition 2).

    ``m``, ``s2``, ``m4``: mean, variance and 4th central moment (phi^4) of the unit's
    pre-activation u = <w, z> under the data distribution. Returns

    - ``mu_mean`` = m, ``mu_var`` = s2 / B (eq. 13, left; <w^2, m rho> in the paper is s2),
    - ``sigma2_mean`` = (B-1)/B s2,
    - ``sigma2_var`` = ((B-1)/B)^2 (1/B) (m4 - s2^2 (B-3)/(B-1)): eq. 13 (right) as printed
      is var of the UNBIASED sample variance; BN's sigma^2 = (B-1)/B S^2 is biased.
    """
    m = check_float("m (mean)", m)
    s2, m4 = _check_moments(s2, m4)
    b = check_int("batch_size", batch_size, 2, 2**62)
    sigma2_mean, sigma2_var = iid_sigma2_moments(s2, m4, b)
    return {"mu_mean": m, "mu_var": s2 / b, "sigma2_mean": sigma2_mean, "sigma2_var": sigma2_var}


def finite_population_moments(
    m: float, s2: float, m4: float, train_size: int, batch_size: int
) -> dict[str, float]:
    """Exact moments of mu and biased sigma^2 for mini-batches drawn WITHOUT replacement.

    ``m``, ``s2``, ``m4``: mean, BIASED variance s_N^2 and 4th central moment of the N
    training values (:func:`unit_moments` of the training pre-activations); each mini-batch
    is a uniform random subset of size B. Returns the keys of :func:`analytical_moments`:

    - ``mu_mean`` = m, ``mu_var`` = s_N^2 / B * (N - B) / (N - 1) (finite-population
      correction; 0 at B = N),
    - ``sigma2_mean`` = (B-1)/B * N/(N-1) * s_N^2,
    - ``sigma2_var`` exact: write S^2 = (1/(B(B-1))) sum over ordered pairs i != j of the batch
      of h_ij = (u_i - u_j)^2 / 2, expand E[(S^2)^2] as a sum over two ordered pairs of the
      N values weighted by the probability b^(k)/N^(k) (falling factorials) that their k = 2, 3
      or 4 distinct units all fall in the batch; the pair sums reduce to N, s_N^2 and phi_N^4
      (see ``finite_sigma2_moments``). sigma^2 = (B-1)/B S^2. As N -> infinity this tends to
      the iid value of :func:`analytical_moments`.
    """
    m = check_float("m (mean)", m)
    s2, m4 = _check_moments(s2, m4)
    n = check_int("train_size", train_size, 2, 2**31)
    b = check_int("batch_size", batch_size, 2, n, "train_size")
    sigma2_mean, sigma2_var = finite_sigma2_moments(s2, m4, n, b)
    return {
        "mu_mean": m,
        "mu_var": s2 / b * (n - b) / (n - 1),
        "sigma2_mean": sigma2_mean,
        "sigma2_var": sigma2_var,
    }


def luo_moments(
    m: float, s2: float, m4: float, batch_size: int, *, as_printed: bool = False
) -> dict[str, float]:
    """Luo et al.'s Gaussian model of the BN statistics (their section 2, "Prior of mu_B,
    sigma_B"): mu_B ~ N(mu_P, sigma_P^2 / M) and sigma_B ~ N(sigma_P, var), M the batch size.

    Note sigma_B is the standard deviation (not the variance). Returns ``mu_mean``,
    ``mu_var``, ``sigma_mean``, ``sigma_var``, with mu_P = m, sigma_P^2 = s2.

    - Default (corrected, docs/conventions.md): var(sigma_B) = sigma_P^2 (rho + 2) / (4M)
      with rho the EXCESS kurtosis m4 / s2^2 - 3. This is the delta method applied to
      var(sigma_B^2) ~ (phi^4 - sigma_P^4) / M = sigma_P^4 (rho + 2) / M, divided by
      (2 sigma_P)^2; for Gaussian u (rho = 0) it is sigma_P^2 / (2M). Their own appendix C
      uses it this way (rho = 0 for Gaussian inputs; R^f carries 1/sigma_P).
    - ``as_printed=True``: the formula as printed, var(sigma_B) = (rho + 2) / (4M), with
      rho = m4 / s2^2 the (plain) kurtosis of their notation table. It lacks the factor
      sigma_P^2 (wrong units unless sigma_P = 1) and, read literally, double counts the
      Gaussian kurtosis 3 (5/(4M) instead of 2/(4M) for standard Gaussian u).

    Both keep E[sigma_B] = sigma_P, dropping the O(1/M) bias of the biased batch std (about
    -3/(4M) sigma_P for Gaussian u) and the correlation of mu_B and sigma_B for skewed u. The
    mu_B part is Proposition 2's (E = m, var = s2 / M, exact for iid draws).
    """
    m = check_float("m (mean)", m)
    s2, m4 = _check_moments(s2, m4)
    if s2 <= 0.0:
        raise InputError(
            "s2 (variance) must be > 0 for Luo et al.'s model (kurtosis divides by it)"
        )
    b = check_int("batch_size", batch_size, 2, 2**62)
    kurtosis = m4 / (s2 * s2)
    if as_printed:
        sigma_var = (kurtosis + 2.0) / (4.0 * b)
    else:
        sigma_var = s2 * ((kurtosis - 3.0) + 2.0) / (4.0 * b)
    return {"mu_mean": m, "mu_var": s2 / b, "sigma_mean": math.sqrt(s2), "sigma_var": sigma_var}
