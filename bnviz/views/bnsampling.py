"""BN statistics as random variables, by Monte Carlo: mini-batches drawn without replacement,
their statistics (BN paper eq. 3, :func:`bnviz.core.bn.batch_moments`), and noise-controlled BN
(BN paper section 5 and Figure 7, red): extra Gaussian additive noise on mu and chi-square
multiplicative noise on sigma^2 make the statistics of a real batch of size B vary as much as
those of a smaller virtual batch B' (:func:`noise_controlled`; the closed forms it targets are
:mod:`bnviz.views.bnmoments`').

All Monte Carlo is done with torch in float64, batched over mini-batches and units (the only
Python loops are over memory-bounded chunks of mini-batches and over rejection rounds), on the
device of the tensors given. Random streams come from an explicit ``torch.Generator``, so a
seed fixes every number (on one device type: CPU and CUDA generators give different streams
for the same seed).
"""

from __future__ import annotations

import torch

from bnviz.caps import MAX_ELEMENTS
from bnviz.core.bn import batch_moments
from bnviz.params.fields import InputError
from bnviz.views.bnmoments import check_int, finite_sigma2_moments, iid_sigma2_moments

__all__ = [
    "noise_controlled",
    "noise_from_variances",
    "sample_batch_indices",
    "sample_batch_statistics",
]

#: Memory guard: mini-batches are processed in chunks of about this many elements.
_CHUNK_ELEMENTS = 1 << 20
#: Batches larger than this fraction of the training set are drawn by random keys, smaller
#: ones by rejection of repeats (the faster of the two on either side, measured on CPU).
_KEYS_FRACTION = 0.3
_DTYPE = torch.float64


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
    n = check_int("train_size", train_size, 2, 2**31)
    b = check_int("batch_size", batch_size, 2, n, "train_size")
    s = check_int("samples", samples, 1, 2**40)
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
        raise InputError(f"u must be a 2-D (N, D) torch tensor, got {type(u).__name__}")
    n, d = u.shape
    b = check_int("batch_size", batch_size, 2, n, "N (rows of u)")
    s = check_int("samples", samples, 1, 2**40)
    if s * b > MAX_ELEMENTS:
        raise InputError(f"samples * batch_size must be <= {MAX_ELEMENTS}, got {s * b}")
    x_all = u.to(_DTYPE)
    chunk = _rows_per_chunk(max(b * max(d, 1), n if b > _KEYS_FRACTION * n else 0))
    mus, sigma2s, indices = [], [], []
    for start in range(0, s, chunk):
        idx = sample_batch_indices(n, b, min(chunk, s - start), generator, u.device)
        mu, sigma2 = batch_moments(x_all[idx], dim=1)  # (rows, B, D) -> (rows, D), eq. 3
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
        raise InputError(f"{name} must be a scalar or one value per unit (D = {like.shape[-1]})")
    if not bool(torch.isfinite(t).all()) or bool((t < 0).any()):
        raise InputError(f"{name} must be finite and >= 0")
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
    strength: float = 1.0,
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

    ``strength`` c >= 0 scales the extra variances: var(mu') = var_B(mu) + c (var_B'(mu) -
    var_B(mu)) and var(sigma2') = V_B + c (V_B' - V_B), so c = 1 is the virtual batch B', c = 0
    no noise (the jitter page sets c so that the decision boundary jitters as with real
    batches of B': :mod:`bnviz.views.virtual_batch`).

    B' >= B adds no noise: the inputs are returned as they are. Where V_B' <= V_B (constant
    data) there is no multiplicative noise. B' < 2 raises InputError.
    """
    if not isinstance(mu, torch.Tensor) or not isinstance(sigma2, torch.Tensor):
        raise InputError("mu and sigma2 must be torch tensors")
    if mu.shape != sigma2.shape:
        raise InputError(f"mu and sigma2 must have one shape, got {mu.shape} and {sigma2.shape}")
    b = check_int("batch_size", batch_size, 2, 2**62)
    if population_size is not None:
        n = check_int("population_size", population_size, 2, 2**62)
        b = check_int("batch_size", b, 2, n, "population_size")
    vb = check_int("virtual_batch_size", virtual_batch_size, 2, 2**62)
    c = float(strength)
    if not 0.0 <= c < float("inf"):
        raise InputError(f"strength must be a finite number >= 0, got {strength!r}")
    if vb >= b:
        return mu, sigma2
    like = mu.to(_DTYPE) if not mu.is_floating_point() else mu
    s2 = _as_unit_tensor("pop_var", pop_var, like)
    m4 = _as_unit_tensor("pop_m4", pop_m4, like)
    if population_size is None:
        extra_mu_var = s2 * (1.0 / vb - 1.0 / b)
        e_b, v_b = iid_sigma2_moments(s2, m4, b)
        _, v_vb = iid_sigma2_moments(s2, m4, vb)
    else:
        extra_mu_var = s2 * n / (n - 1) * (1.0 / vb - 1.0 / b)
        e_b, v_b = finite_sigma2_moments(s2, m4, n, b)
        _, v_vb = finite_sigma2_moments(s2, m4, n, vb)
    return noise_from_variances(mu, sigma2, c * extra_mu_var, e_b, v_b, v_b + c * (v_vb - v_b),
                                generator)


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
