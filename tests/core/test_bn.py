"""Tests of bnviz.core.bn, the one BN forward: the statistics against a numpy re-implementation of
eq. 3 (biased and unbiased), the floor on a zero sigma (docs/conventions.md: <= 1e-12
relative), batched
dims, gradients against torch's own training-mode batch_norm, and torch.func (vmap of grad, as
the landscape view uses it).  Every test runs on the CPU and, when there is one, on CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.func import grad, vmap

from bnviz.core.bn import (
    SIGMA_FLOOR_REL,
    batch_moments,
    batch_norm,
    batch_statistics,
    bn_forward,
    floored_sigma,
)

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                  reason="no CUDA device")),
]


def _numpy_statistics(u: np.ndarray, axis, ddof: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 3 written out: mean and sqrt(sum (u - mean)^2 / (n - ddof)), in float64 numpy."""
    mean = u.mean(axis=axis, keepdims=True)
    n = u.size // mean.size
    var = ((u - mean) ** 2).sum(axis=axis, keepdims=True) / (n - ddof)
    return mean.squeeze(axis), np.sqrt(var).squeeze(axis)


def _data(shape, seed: int = 0, device: str = "cpu", dtype=torch.float64) -> torch.Tensor:
    """Units with different means and scales."""
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(shape, generator=g, dtype=torch.float64)
    scale = torch.linspace(0.1, 5.0, shape[-1], dtype=torch.float64)
    return (u * scale + 3.0 * scale.flip(0) - 2.0).to(device=device, dtype=dtype)


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, (0, 2), -1])
@pytest.mark.parametrize("correction", [0, 1])
def test_statistics_against_numpy(device, dim, correction):
    u = _data((7, 5, 6), seed=1, device=device)
    mean, sigma = batch_statistics(u, dim, correction=correction)
    want_mean, want_sigma = _numpy_statistics(u.cpu().numpy(), dim, correction)
    assert mean.dtype == sigma.dtype == torch.float64 and mean.device.type == device
    np.testing.assert_allclose(mean.cpu().numpy(), want_mean, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(sigma.cpu().numpy(), want_sigma, rtol=1e-12)
    m2, var = batch_moments(u, dim, correction=correction)
    torch.testing.assert_close(m2, mean, rtol=0, atol=0)
    np.testing.assert_allclose(var.cpu().numpy(), want_sigma**2, rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_biased_is_the_default_and_differs_from_torch_var(device):
    """docs/conventions.md, Pitfalls: BN divides by |B|; torch's var divides by |B| - 1 by
    default."""
    u = _data((4, 3), seed=2, device=device)
    _, sigma = batch_statistics(u)
    np.testing.assert_allclose(sigma.cpu().numpy(), u.cpu().numpy().std(0, ddof=0), rtol=1e-13)
    np.testing.assert_allclose((sigma**2 * 4 / 3).cpu().numpy(), u.var(0).cpu().numpy(),
                               rtol=1e-13)


@pytest.mark.parametrize("device", DEVICES)
def test_keepdim_and_batched_leading_dims(device):
    """(K, B, D) over dim 1: each of the K realisations is its own batch (the jitter view)."""
    u = _data((9, 16, 4), seed=3, device=device)
    mean, sigma = batch_statistics(u, dim=1, keepdim=True)
    assert mean.shape == sigma.shape == (9, 1, 4)
    for k in range(9):
        m_k, s_k = batch_statistics(u[k])
        torch.testing.assert_close(mean[k, 0], m_k, rtol=1e-14, atol=1e-14)
        torch.testing.assert_close(sigma[k, 0], s_k, rtol=1e-14, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_dtype_is_kept(device):
    u = _data((8, 3), device=device, dtype=torch.float32)
    mean, sigma = batch_statistics(u)
    assert mean.dtype == sigma.dtype == torch.float32
    np.testing.assert_allclose(sigma.cpu().numpy(), u.cpu().double().numpy().std(0), rtol=1e-5)


# --------------------------------------------------------------------------- the floor


@pytest.mark.parametrize("device", DEVICES)
def test_floor_leaves_a_non_degenerate_sigma_exactly_alone(device):
    u = _data((32, 6), seed=4, device=device)
    mean, var = batch_moments(u)
    assert torch.equal(floored_sigma(mean, var), var.sqrt())
    assert torch.equal(batch_statistics(u)[1], batch_statistics(u, floor=False)[1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [1, 2, 9])
def test_floor_on_a_constant_batch(device, n):
    """Every batch point gives the same u: sigma is SIGMA_FLOOR_REL |u| (<= 1e-12 relative,
    docs/conventions.md), 1 where u is zero, and BN's output is 0, finite."""
    assert SIGMA_FLOOR_REL <= 1e-12
    values = torch.tensor([2.5, -1e-3, 0.0, 7e5], dtype=torch.float64, device=device)
    u = values.expand(n, 4).clone()
    mean, sigma = batch_statistics(u)
    raw = batch_statistics(u, floor=False)[1]
    assert torch.all(raw <= 1e-15 * values.abs())  # the undefined case really happens
    want = torch.where(values != 0, SIGMA_FLOOR_REL * values.abs(), torch.ones_like(values))
    torch.testing.assert_close(sigma, want, rtol=1e-12, atol=0)
    h = bn_forward(u, mean, sigma)
    assert torch.isfinite(h).all() and torch.all(h.abs() <= 1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_floor_is_a_constant_for_autograd(device):
    """On a constant unit the gradient is finite (zero through sigma, as with torch's eps);
    without the floor the square root's derivative at 0 gives NaN."""
    u = torch.full((5, 2), 3.0, dtype=torch.float64, device=device, requires_grad=True)
    (g,) = torch.autograd.grad(batch_norm(u).square().sum(), u)
    assert torch.isfinite(g).all()
    v = u.detach().clone().requires_grad_()
    mean, sigma = batch_statistics(v, floor=False)
    (g_raw,) = torch.autograd.grad(bn_forward(v, mean, sigma).nan_to_num().sum() + sigma.sum(),
                                   v)
    assert not torch.isfinite(g_raw).all()


@pytest.mark.parametrize("device", DEVICES)
def test_float32_floor_never_underflows(device):
    """A float32 unit of tiny constant values (mean^2 a normal number, 1e-24 mean^2 not): the
    floored variance stays the smallest normal number, so sigma is > 0 (and not the 1 of an
    all-zero unit)."""
    u = torch.full((4, 1), 1e-18, dtype=torch.float32, device=device)
    mean, sigma = batch_statistics(u)
    assert 0 < sigma.item() < 1e-18
    assert torch.isfinite(bn_forward(u, mean, sigma)).all()


# --------------------------------------------------------------------------- the forward


@pytest.mark.parametrize("device", DEVICES)
def test_forward_with_gamma_beta_and_in_place(device):
    u = _data((10, 3), seed=5, device=device)
    gamma = torch.tensor([0.5, -2.0, 1.5], dtype=torch.float64, device=device)
    beta = torch.tensor([1.0, 0.0, -3.0], dtype=torch.float64, device=device)
    mean, sigma = batch_statistics(u)
    h = bn_forward(u, mean, sigma, gamma, beta)
    m_np, s_np = _numpy_statistics(u.cpu().numpy(), 0)
    want = (u.cpu().numpy() - m_np) / s_np * gamma.cpu().numpy() + beta.cpu().numpy()
    np.testing.assert_allclose(h.cpu().numpy(), want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(batch_norm(u, gamma=gamma, beta=beta), h, rtol=0, atol=0)
    # output statistics: mean beta, biased std |gamma|
    m_h, s_h = batch_statistics(h)
    torch.testing.assert_close(m_h, beta, rtol=0, atol=1e-12)
    torch.testing.assert_close(s_h, gamma.abs(), rtol=1e-12, atol=0)
    w = u.clone()
    out = bn_forward(w, mean, sigma, inplace=True)
    assert out.data_ptr() == w.data_ptr()
    torch.testing.assert_close(out, bn_forward(u, mean, sigma), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(12, 4), (6, 3, 4, 5)])
def test_gradient_equals_torch_batch_norm(device, shape):
    """Autograd through mu and sigma, as torch's training-mode batch_norm (eps ~ 0)."""
    x = _data(shape, seed=6, device=device).requires_grad_()
    c = shape[1]
    gamma = torch.linspace(0.5, 2.0, c, dtype=torch.float64, device=device).requires_grad_()
    beta = torch.linspace(-1.0, 1.0, c, dtype=torch.float64, device=device).requires_grad_()
    weight = _data(shape, seed=7, device=device)  # a loss that is not symmetric in the batch
    dims = (0, *range(2, len(shape)))
    view = (1, c, *([1] * (len(shape) - 2)))
    ours = batch_norm(x, dims, gamma=gamma.view(view), beta=beta.view(view))
    theirs = F.batch_norm(x, None, None, gamma, beta, training=True, eps=1e-300)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    g_ours = torch.autograd.grad((ours * weight).square().sum(), (x, gamma, beta))
    g_theirs = torch.autograd.grad((theirs * weight).square().sum(), (x, gamma, beta))
    for a, b in zip(g_ours, g_theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_vmap_of_grad_equals_a_loop(device):
    """torch.func: the landscape view evaluates gradients at many parameter sets at once."""
    x = _data((16, 2), seed=8, device=device)
    ws = _data((5, 3, 2), seed=9, device=device)

    def loss(w: torch.Tensor) -> torch.Tensor:
        return torch.relu(batch_norm(x @ w.T)).pow(3).sum()

    batched = vmap(grad(loss))(ws)
    for k in range(5):
        torch.testing.assert_close(batched[k], grad(loss)(ws[k]), rtol=1e-12, atol=1e-12)
