"""BN statistics as random variables: Figure 7 and Proposition 2 (eq. 13) of the BN paper.

For one unit with pre-activation u = <w, z> (the BN paper's W_l z_{l-1}, one coordinate), a
mini-batch B of size |B| = B gives BN's statistics (SPEC.md, BN paper eq. 3)

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

Noise-controlled BN (BN paper section 5 and Figure 7, red): extra Gaussian additive noise on
mu and chi-square multiplicative noise on sigma^2 make the statistics of a real batch of size
B vary as much as those of a smaller virtual batch B' (:func:`noise_controlled`).

Luo et al. ("Towards understanding regularization in batch normalization", section 2) model
mu_B and sigma_B as Gaussians; :func:`luo_moments` gives their model, with the corrections
listed in SPEC.md, side by side with the exact values.

All Monte Carlo is done with torch in float64, batched over mini-batches and units (the only
Python loops are over memory-bounded chunks of mini-batches and over rejection rounds), on the
device of :func:`bnviz.device.pick_device`. Random streams come from an explicit
``torch.Generator``, so a seed fixes every number (on one device type: CPU and CUDA generators
give different streams for the same seed).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch

from bnviz.device import pick_device
from bnviz.params.caps import MAX_ELEMENTS, MAX_SAMPLES, MAX_TRAIN_SIZE, MAX_UNITS, MIN_SAMPLES

__all__ = [
    "MAX_ELEMENTS",
    "MAX_SAMPLES",
    "MAX_TRAIN_SIZE",
    "MAX_UNITS",
    "MIN_SAMPLES",
    "MomentReport",
    "REPORT_KEYS",
    "analytical_moments",
    "figure7_report",
    "figure7_samples",
    "finite_population_moments",
    "luo_moments",
    "noise_controlled",
    "noise_from_variances",
    "sample_batch_indices",
    "sample_batch_statistics",
    "unit_moments",
    "unit_report",
]

# the bounds and the cap on samples * batch_size: bnviz.params.caps (one place for every cap)
#: Memory guard: mini-batches are processed in chunks of about this many elements.
_CHUNK_ELEMENTS = 1 << 20
#: Batches larger than this fraction of the training set are drawn by random keys, smaller
#: ones by rejection of repeats (the faster of the two on either side, measured on CPU).
_KEYS_FRACTION = 0.3
_DTYPE = torch.float64

# Keys of one statistic's block in figure7_report (the CLI prints them in this order).
REPORT_KEYS = (
    "empirical_mean",
    "empirical_var",
    "analytical_mean",
    "analytical_var",
    "noise_controlled_var",
    "finite_population_var",
)


@dataclass(frozen=True)
class MomentReport:
    """Mean and variance of one BN statistic (mu or sigma^2) of one unit, four ways.

    - ``empirical_*``: over the Monte Carlo mini-batches (variance with ddof = 1, i.e. the
      unbiased estimate of the spread over mini-batches; BN's own sigma^2 inside each
      mini-batch is the biased one).
    - ``analytical_*``: Proposition 2 (eq. 13) for iid draws from the data distribution,
      with the biased-variance correction for sigma^2 (:func:`analytical_moments`).
    - ``noise_controlled_*``: empirical, after :func:`noise_controlled` (virtual batch).
    - ``finite_population_*``: exact for mini-batches drawn without replacement from the
      finite training set (:func:`finite_population_moments`); ``None`` if not computed.
    """

    empirical_mean: float
    empirical_var: float
    analytical_mean: float
    analytical_var: float
    noise_controlled_mean: float
    noise_controlled_var: float
    finite_population_mean: float | None = None
    finite_population_var: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        """The JSON block of :func:`figure7_report`: exactly the keys in ``REPORT_KEYS``."""
        full = asdict(self)
        return {key: full[key] for key in REPORT_KEYS}


# --------------------------------------------------------------------------- validation


def _check_int(name: str, value: object, lo: int, hi: int, hi_name: str | None = None) -> int:
    """``value`` as an int in [lo, hi], else a one-line ValueError naming the parameter."""
    bound = f"{hi_name}={hi}" if hi_name else str(hi)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer in [{lo}, {bound}], got {value!r}")
    value = int(value)
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {bound}], got {value}")
    return value


def _check_float(name: str, value: object, lo: float = -math.inf) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < lo:
        raise ValueError(f"{name} must be a finite number >= {lo}, got {value}")
    return value


def _check_moments(s2: float, m4: float) -> tuple[float, float]:
    s2 = _check_float("s2 (variance)", s2, 0.0)
    m4 = _check_float("m4 (4th central moment)", m4, 0.0)
    if m4 < s2 * s2 * (1.0 - 1e-9):
        raise ValueError(f"m4 must be >= s2^2 (Jensen), got m4={m4} < s2^2={s2 * s2}")
    return s2, m4


# --------------------------------------------------------------------------- moments


def unit_moments(u: np.ndarray) -> tuple[float, float, float]:
    """(mean, biased variance, 4th central moment) of a 1-D sample ``u``.

    Population-style (divide by n) moments: for a training set these are the exact m, s_N^2
    and phi_N^4 that :func:`finite_population_moments` needs.
    """
    arr = np.asarray(u, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"u must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("u must contain only finite values")
    mean = float(arr.mean())
    centred = arr - mean
    c2 = centred * centred
    return mean, float(c2.mean()), float((c2 * c2).mean())


def _iid_sigma2_moments(s2, m4, b: int):
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


def _finite_sigma2_moments(s2, m4, n: int, b: int):
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
    m = _check_float("m (mean)", m)
    s2, m4 = _check_moments(s2, m4)
    b = _check_int("batch_size", batch_size, 2, 2**62)
    sigma2_mean, sigma2_var = _iid_sigma2_moments(s2, m4, b)
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
      (see ``_finite_sigma2_moments``). sigma^2 = (B-1)/B S^2. As N -> infinity this tends to
      the iid value of :func:`analytical_moments`.
    """
    m = _check_float("m (mean)", m)
    s2, m4 = _check_moments(s2, m4)
    n = _check_int("train_size", train_size, 2, 2**31)
    b = _check_int("batch_size", batch_size, 2, n, "train_size")
    sigma2_mean, sigma2_var = _finite_sigma2_moments(s2, m4, n, b)
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

    - Default (corrected, SPEC.md): var(sigma_B) = sigma_P^2 (rho + 2) / (4M) with rho the
      EXCESS kurtosis m4 / s2^2 - 3. This is the delta method applied to
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
    m = _check_float("m (mean)", m)
    s2, m4 = _check_moments(s2, m4)
    if s2 <= 0.0:
        raise ValueError(
            "s2 (variance) must be > 0 for Luo et al.'s model (kurtosis divides by it)"
        )
    b = _check_int("batch_size", batch_size, 2, 2**62)
    kurtosis = m4 / (s2 * s2)
    if as_printed:
        sigma_var = (kurtosis + 2.0) / (4.0 * b)
    else:
        sigma_var = s2 * ((kurtosis - 3.0) + 2.0) / (4.0 * b)
    return {"mu_mean": m, "mu_var": s2 / b, "sigma_mean": math.sqrt(s2), "sigma_var": sigma_var}


# --------------------------------------------------------------------------- sampling


def _rows_per_chunk(elements_per_row: int) -> int:
    return max(1, _CHUNK_ELEMENTS // max(1, elements_per_row))


def _subsets_by_rejection(
    n: int, b: int, rows: int, generator: torch.Generator, device: torch.device
) -> torch.Tensor:
    """``rows`` uniform b-subsets of range(n), sorted; for b <= 0.3 n (O(rows * b) memory).

    Draw b indices with replacement, then redraw the repeated ones until every row has b
    distinct values. Each step treats the labels symmetrically (which copies are redrawn,
    and how many, does not depend on the labels), so the set's law is invariant under
    relabelling, hence uniform over the b-subsets. With b <= 0.3 n each redraw collides with
    probability < 0.3: a few rounds (~log(b)), each on the rows that still have repeats.
    """
    idx = torch.randint(n, (rows, b), generator=generator, device=device).sort(dim=1).values
    active = torch.arange(rows, device=device)
    while active.numel():
        sub = idx[active]
        repeat = sub[:, 1:] == sub[:, :-1]
        keep = repeat.any(dim=1)
        active, sub, repeat = active[keep], sub[keep], repeat[keep]
        if not active.numel():
            break
        redraw = torch.nn.functional.pad(repeat, (1, 0))  # later copies of a repeated value
        count = int(redraw.sum())
        sub[redraw] = torch.randint(n, (count,), generator=generator, device=device)
        idx[active] = sub.sort(dim=1).values
    return idx


def _subsets_by_keys(
    n: int, b: int, rows: int, generator: torch.Generator, device: torch.device
) -> torch.Tensor:
    """``rows`` uniform b-subsets of range(n), sorted: the b smallest of n iid float64 keys."""
    keys = torch.rand((rows, n), generator=generator, device=device, dtype=_DTYPE)
    return keys.argsort(dim=1)[:, :b].sort(dim=1).values


def sample_batch_indices(
    train_size: int,
    batch_size: int,
    samples: int,
    generator: torch.Generator,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """``samples`` mini-batches drawn without replacement: a (samples, batch_size) LongTensor.

    Each row is an independent uniform random subset of range(train_size), listed in
    increasing order (order inside a batch does not matter to BN). Batched over rows: for
    batch_size <= 0.3 train_size by rejection of repeats (O(samples * batch_size) work), above
    that by the batch_size smallest of train_size random keys per row (then train_size <
    batch_size / 0.3, so the work is still O(samples * batch_size)); rows are processed in
    memory-bounded chunks. ``generator`` must live on ``device`` (default: its own device).
    """
    n = _check_int("train_size", train_size, 2, 2**31)
    b = _check_int("batch_size", batch_size, 2, n, "train_size")
    s = _check_int("samples", samples, 1, 2**40)
    dev = torch.device(device) if device is not None else generator.device
    by_keys = b > _KEYS_FRACTION * n
    draw = _subsets_by_keys if by_keys else _subsets_by_rejection
    chunk = _rows_per_chunk(n if by_keys else b)
    parts = [draw(n, b, min(chunk, s - start), generator, dev) for start in range(0, s, chunk)]
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def sample_batch_statistics(
    u: torch.Tensor,
    batch_size: int,
    samples: int,
    generator: torch.Generator,
    *,
    return_indices: bool = False,
):
    """BN's (mu, biased sigma^2) of ``samples`` mini-batches of the training pre-activations.

    ``u``: (N, D) tensor, the N training values of D units. Each mini-batch is a uniform
    subset of ``batch_size`` rows drawn without replacement (:func:`sample_batch_indices`;
    the same rows for all D units, as in a network). Returns ``(mu, sigma2)``, each
    (samples, D) float64 on ``u``'s device, with sigma2 = mean over the batch of
    (u - mu)^2 (divide by B); with ``return_indices`` also the (samples, B) row indices.
    Computed in memory-bounded chunks of mini-batches, each fully batched.
    """
    if not isinstance(u, torch.Tensor) or u.ndim != 2:
        raise ValueError(f"u must be a 2-D (N, D) torch tensor, got {type(u).__name__}")
    n, d = u.shape
    b = _check_int("batch_size", batch_size, 2, n, "N (rows of u)")
    s = _check_int("samples", samples, 1, 2**40)
    if s * b > MAX_ELEMENTS:
        raise ValueError(f"samples * batch_size must be <= {MAX_ELEMENTS}, got {s * b}")
    x_all = u.to(_DTYPE)
    chunk = _rows_per_chunk(max(b * max(d, 1), n if b > _KEYS_FRACTION * n else 0))
    mus, sigma2s, indices = [], [], []
    for start in range(0, s, chunk):
        idx = sample_batch_indices(n, b, min(chunk, s - start), generator, u.device)
        x = x_all[idx]  # (rows, B, D)
        mu = x.mean(dim=1)
        sigma2 = (x - mu.unsqueeze(1)).square().mean(dim=1)
        mus.append(mu)
        sigma2s.append(sigma2)
        if return_indices:
            indices.append(idx)
    mu, sigma2 = torch.cat(mus), torch.cat(sigma2s)
    if return_indices:
        return mu, sigma2, torch.cat(indices)
    return mu, sigma2


def _standard_gamma(shape: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Gamma(shape, 1) draws, one per element of ``shape`` (> 0), from ``generator``.

    Marsaglia & Tsang (2000), batched: every element draws a candidate per round and the
    rejected ones redraw (acceptance > 95 % for shape >= 1); shape < 1 uses
    Gamma(a) = Gamma(a + 1) * U^(1/a). (torch's own gamma sampler takes no generator.)
    """
    alpha = shape.reshape(-1)
    small = alpha < 1.0
    a = torch.where(small, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / torch.sqrt(9.0 * d)
    out = torch.empty_like(a)
    todo = torch.arange(a.numel(), device=a.device)
    kw = {"generator": generator, "device": a.device, "dtype": a.dtype}
    while todo.numel():
        dd, cc = d[todo], c[todo]
        x = torch.randn(todo.numel(), **kw)
        v = (1.0 + cc * x) ** 3
        u = torch.rand(todo.numel(), **kw)
        log_v = torch.log(v.clamp_min(torch.finfo(a.dtype).tiny))
        ok = (v > 0) & (torch.log(u) < 0.5 * x * x + dd - dd * v + dd * log_v)
        out[todo[ok]] = (dd * v)[ok]
        todo = todo[~ok]
    if bool(small.any()):
        u = torch.rand(int(small.sum()), **kw)
        out[small] = out[small] * u.pow(1.0 / alpha[small])
    return out.reshape(shape.shape)


def _as_unit_tensor(name: str, value, like: torch.Tensor) -> torch.Tensor:
    t = torch.as_tensor(value, dtype=like.dtype, device=like.device)
    if t.ndim > 1 or (t.ndim == 1 and like.ndim >= 1 and t.shape[0] not in (1, like.shape[-1])):
        raise ValueError(f"{name} must be a scalar or one value per unit (D = {like.shape[-1]})")
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()):
        raise ValueError(f"{name} must be finite and >= 0")
    return t


def noise_controlled(
    mu: torch.Tensor,
    sigma2: torch.Tensor,
    batch_size: int,
    virtual_batch_size: int,
    pop_var,
    pop_m4,
    generator: torch.Generator,
    *,
    population_size: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Noise-controlled BN (BN paper section 5, Figure 7 red): statistics of a batch of size
    B made as variable as those of a smaller virtual batch B'.

    ``mu``, ``sigma2``: BN statistics of real batches of size B, tensors of shape (..., D)
    (sigma2 the biased variance). ``pop_var``, ``pop_m4``: the population variance s^2 and 4th
    central moment phi^4 of each unit (scalars or (D,) values; in a network: the full-data,
    i.e. test-time, statistics). Returns (mu', sigma2') with

        mu'      = mu + eps,       eps ~ N(0, s^2 (1/B' - 1/B))         (additive Gaussian),
        sigma2'  = sigma2 * X,     X ~ chi2_k / k, E[X] = 1, var(X) = 2/k  (multiplicative),

    independent of each other and of the batch. Then E[mu'] = E[mu], var(mu') = s^2/B', and,
    with E_B, V_B the mean and variance of the biased sigma^2 at batch size B,
    var(sigma2') = V_B + (2/k)(E_B^2 + V_B); k = 2 (E_B^2 + V_B) / (V_B' - V_B) makes it
    equal V_B' exactly (k need not be an integer: X ~ Gamma(k/2, scale 2/k)). The mean of
    sigma2' stays E_B = (B-1)/B s^2 (only the spread is that of the virtual batch).

    E_B, V_B, V_B' are the iid values of :func:`analytical_moments`; with ``population_size``
    = N, batches are taken to be drawn without replacement from N values whose biased
    moments are pop_var, pop_m4, and the exact finite-population values
    (:func:`finite_population_moments`) are used instead, so that mu', sigma2' match a
    virtual batch of B' drawn from the same N values (the mu noise variance becomes
    s_N^2 N/(N-1) (1/B' - 1/B)).

    B' >= B adds no noise: the inputs are returned as they are. Where V_B' <= V_B (constant
    data) there is no multiplicative noise. B' < 2 raises ValueError.
    """
    if not isinstance(mu, torch.Tensor) or not isinstance(sigma2, torch.Tensor):
        raise ValueError("mu and sigma2 must be torch tensors")
    if mu.shape != sigma2.shape:
        raise ValueError(f"mu and sigma2 must have one shape, got {mu.shape} and {sigma2.shape}")
    b = _check_int("batch_size", batch_size, 2, 2**62)
    if population_size is not None:
        n = _check_int("population_size", population_size, 2, 2**62)
        b = _check_int("batch_size", b, 2, n, "population_size")
    vb = _check_int("virtual_batch_size", virtual_batch_size, 2, 2**62)
    if vb >= b:
        return mu, sigma2
    like = mu.to(_DTYPE) if not mu.is_floating_point() else mu
    s2 = _as_unit_tensor("pop_var", pop_var, like)
    m4 = _as_unit_tensor("pop_m4", pop_m4, like)
    if population_size is None:
        extra_mu_var = s2 * (1.0 / vb - 1.0 / b)
        e_b, v_b = _iid_sigma2_moments(s2, m4, b)
        _, v_vb = _iid_sigma2_moments(s2, m4, vb)
    else:
        extra_mu_var = s2 * n / (n - 1) * (1.0 / vb - 1.0 / b)
        e_b, v_b = _finite_sigma2_moments(s2, m4, n, b)
        _, v_vb = _finite_sigma2_moments(s2, m4, n, vb)
    return noise_from_variances(mu, sigma2, extra_mu_var, e_b, v_b, v_vb, generator)


def noise_from_variances(mu: torch.Tensor, sigma2: torch.Tensor, extra_mu_var, e_b, v_b, v_vb,
                         generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The sampling core of :func:`noise_controlled`, given the target variances directly:
    mu' = mu + N(0, extra_mu_var) and sigma2' = sigma2 * chi2_k / k with
    k = 2 (E_B^2 + V_B) / (V_B' - V_B), so var(sigma2') = V_B' when var(sigma2) = V_B and
    E[sigma2] = E_B.  Units with V_B' <= V_B get no multiplicative noise.  Used directly where
    the variances are measured rather than known in closed form (deeper layers of a network).
    """
    like = mu.to(_DTYPE) if not mu.is_floating_point() else mu
    extra_mu_var = _as_unit_tensor("extra_mu_var", extra_mu_var, like).clamp_min(0.0)
    e_b = _as_unit_tensor("e_b", e_b, like)
    v_b = _as_unit_tensor("v_b", v_b, like)
    v_vb = _as_unit_tensor("v_vb", v_vb, like)
    eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=like.dtype)
    mu_out = mu + extra_mu_var.sqrt() * eps
    gap = v_vb - v_b
    noisy = gap > 0
    k = torch.where(noisy, 2.0 * (e_b * e_b + v_b) / torch.where(noisy, gap, 1.0), 1.0)
    half_k = torch.broadcast_to(k / 2.0, sigma2.shape)
    gamma = _standard_gamma(half_k.contiguous(), generator)
    x = torch.where(torch.broadcast_to(noisy, sigma2.shape), gamma / half_k, 1.0)
    return mu_out, sigma2 * x


# --------------------------------------------------------------------------- Figure 7


def _check_figure7(
    batch_size, train_size, samples, virtual_batch_size, seed, means, variances
) -> tuple[int, int, int, int, int, list[float], list[float]]:
    n = _check_int("train_size", train_size, 2, MAX_TRAIN_SIZE)
    b = _check_int("batch_size", batch_size, 2, n, "train_size")
    s = _check_int("samples", samples, MIN_SAMPLES, MAX_SAMPLES)
    vb = _check_int("virtual_batch_size", virtual_batch_size, 2, b, "batch_size")
    sd = _check_int("seed", seed, 0, 2**63 - 1)
    if s * b > MAX_ELEMENTS:
        raise ValueError(f"samples * batch_size must be <= {MAX_ELEMENTS}, got {s} * {b} = {s * b}")
    if isinstance(means, str | bytes) or not isinstance(means, Sequence):
        raise ValueError(f"means must be a sequence of numbers, got {means!r}")
    if isinstance(variances, str | bytes) or not isinstance(variances, Sequence):
        raise ValueError(f"variances must be a sequence of numbers, got {variances!r}")
    if not 1 <= len(means) <= MAX_UNITS or len(variances) != len(means):
        raise ValueError(
            f"means and variances must have one length in [1, {MAX_UNITS}], "
            f"got {len(means)} and {len(variances)}"
        )
    ms = [_check_float(f"means[{i}]", v) for i, v in enumerate(means)]
    vs = [_check_float(f"variances[{i}]", v, 0.0) for i, v in enumerate(variances)]
    if any(v <= 0.0 for v in vs):
        raise ValueError(f"variances must be > 0, got {list(variances)}")
    return b, n, s, vb, sd, ms, vs


def _figure7_run(
    batch_size, train_size, samples, virtual_batch_size, seed, means, variances, device
) -> dict:
    b, n, s, vb, sd, ms, vs = _check_figure7(
        batch_size, train_size, samples, virtual_batch_size, seed, means, variances
    )
    dev = pick_device(device) if device is None or isinstance(device, str) else device
    gen = torch.Generator(device=dev)
    gen.manual_seed(sd)
    m = torch.tensor(ms, dtype=_DTYPE, device=dev)
    s2 = torch.tensor(vs, dtype=_DTYPE, device=dev)
    train = m + s2.sqrt() * torch.randn((n, len(ms)), generator=gen, device=dev, dtype=_DTYPE)
    mu, sigma2 = sample_batch_statistics(train, b, s, gen)
    # Full-data (test-time) moments of the training set drive the noise, as in a network.
    t_mean = train.mean(dim=0)
    t_var = (train - t_mean).square().mean(dim=0)
    t_m4 = (train - t_mean).pow(4).mean(dim=0)
    mu_noise, sigma2_noise = noise_controlled(
        mu, sigma2, b, vb, t_var, t_m4, gen, population_size=n
    )
    return {
        "params": (b, n, s, vb, sd, ms, vs),
        "train": train.cpu().numpy(),
        "mu": mu.cpu().numpy(),
        "sigma2": sigma2.cpu().numpy(),
        "mu_noise": mu_noise.cpu().numpy(),
        "sigma2_noise": sigma2_noise.cpu().numpy(),
    }


def figure7_samples(
    batch_size: int = 64,
    train_size: int = 1000,
    samples: int = 2000,
    virtual_batch_size: int = 32,
    seed: int = 0,
    means: Sequence[float] = (1.0, 0.0, -1.0),
    variances: Sequence[float] = (1.0, 3.0, 0.1),
    *,
    device: str | torch.device | None = None,
) -> dict[str, np.ndarray]:
    """The Monte Carlo samples behind :func:`figure7_report` (for histograms).

    BN paper Figure 7 setup: the D = len(means) units' pre-activations are iid
    N(means, diag(variances)); a training set of ``train_size`` rows is drawn once (seeded);
    ``samples`` mini-batches of ``batch_size`` rows are drawn from it without replacement;
    noise-controlled BN (:func:`noise_controlled`, finite-population mode, with the training
    set's moments) targets ``virtual_batch_size``. Returns float64 arrays:
    ``mu``, ``sigma2``, ``mu_noise``, ``sigma2_noise`` (samples, D) and ``train`` (N, D).
    Same arguments (and device type), same arrays; ``device`` defaults to
    :func:`bnviz.device.pick_device`.
    """
    run = _figure7_run(
        batch_size, train_size, samples, virtual_batch_size, seed, means, variances, device
    )
    return {key: run[key] for key in ("mu", "sigma2", "mu_noise", "sigma2_noise", "train")}


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1))


def unit_report(samples: dict, j: int, batch_size: int, train_size: int, m: float, s2: float,
                m4: float) -> dict:
    """One unit's Figure 7 numbers from the sampled statistics (``samples`` holds mu, sigma2,
    mu_noise, sigma2_noise (S, D) and train (N, D)): empirical against analytical (eq. 13 with
    the moments m, s2, m4), finite-population (the training set's moments) and
    noise-controlled, plus Luo et al.'s model."""
    ana = analytical_moments(m, s2, m4, batch_size)
    t_mean, t_var, t_m4 = unit_moments(samples["train"][:, j])
    fin = finite_population_moments(t_mean, t_var, t_m4, train_size, batch_size)
    blocks = {}
    for stat in ("mu", "sigma2"):
        emp, noisy = samples[stat][:, j], samples[f"{stat}_noise"][:, j]
        blocks[stat] = MomentReport(
            empirical_mean=float(emp.mean()),
            empirical_var=_var(emp),
            analytical_mean=ana[f"{stat}_mean"],
            analytical_var=ana[f"{stat}_var"],
            noise_controlled_mean=float(noisy.mean()),
            noise_controlled_var=_var(noisy),
            finite_population_mean=fin[f"{stat}_mean"],
            finite_population_var=fin[f"{stat}_var"],
        ).to_dict()
    return {"mean": m, "var": s2, **blocks, "luo": luo_moments(m, s2, m4, batch_size)}


def figure7_report(
    batch_size: int = 64,
    train_size: int = 1000,
    samples: int = 2000,
    virtual_batch_size: int = 32,
    seed: int = 0,
    means: Sequence[float] = (1.0, 0.0, -1.0),
    variances: Sequence[float] = (1.0, 3.0, 0.1),
    *,
    device: str | torch.device | None = None,
) -> dict:
    """Figure 7 of the BN paper as numbers: empirical vs analytical vs noise-controlled.

    Same run as :func:`figure7_samples` (same arguments, same samples). Returns a JSON-able
    dict ``{"batch_size", "train_size", "samples", "virtual_batch_size", "seed", "units"}``,
    one entry of ``units`` per unit::

        {"mean": m, "var": s2,
         "mu":     {empirical_mean, empirical_var, analytical_mean, analytical_var,
                    noise_controlled_var, finite_population_var},
         "sigma2": {same keys},
         "luo":    {mu_mean, mu_var, sigma_mean, sigma_var}}

    - empirical: over the mini-batches (variance ddof = 1);
    - analytical: Proposition 2 / eq. 13 for iid N(m, s2) draws, biased sigma^2
      (:func:`analytical_moments`, phi^4 = 3 s2^2);
    - noise_controlled_var: empirical variance after noise-controlled BN targeting the
      virtual batch size (its expected value is the finite_population_var at B');
    - finite_population_var: exact for B drawn without replacement from this training set
      (:func:`finite_population_moments`), for both mu and sigma^2;
    - luo: Luo et al.'s Gaussian model with the SPEC.md corrections (:func:`luo_moments`),
      for the std sigma_B, from the population m, s2.
    """
    return _report_from_run(_figure7_run(
        batch_size, train_size, samples, virtual_batch_size, seed, means, variances, device
    ))


def _report_from_run(run: dict) -> dict:
    b, n, s, vb, sd, ms, vs = run["params"]
    units = [unit_report(run, j, b, n, m, s2, 3.0 * s2 * s2) for j, (m, s2) in
             enumerate(zip(ms, vs, strict=True))]
    return {
        "batch_size": b,
        "train_size": n,
        "samples": s,
        "virtual_batch_size": vb,
        "seed": sd,
        "units": units,
    }


def figure7(batch_size: int = 64, train_size: int = 1000, samples: int = 2000,
            virtual_batch_size: int = 32, seed: int = 0,
            device: str | torch.device | None = None) -> tuple[dict, dict[str, np.ndarray]]:
    """(figure7_report, figure7_samples) from one Monte Carlo run (the page needs both)."""
    run = _figure7_run(batch_size, train_size, samples, virtual_batch_size, seed,
                       (1.0, 0.0, -1.0), (1.0, 3.0, 0.1), device)
    keys = ("mu", "sigma2", "mu_noise", "sigma2_noise", "train")
    return _report_from_run(run), {key: run[key] for key in keys}
