"""Tests of bnviz.core.network: BN statistics against an independent numpy forward pass, Theorem 1
and Corollary 2 of the BN paper (docs/conventions.md, "Exact claims"), batches, loading."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnviz.core.bn import SIGMA_FLOOR_REL
from bnviz.core.network import (
    ACTIVATIONS,
    MODES,
    BNOverrides,
    Head,
    LayerOverride,
    Network,
    layer_statistics,
    load_network,
    negative_slope,
    random_network,
    select_batch,
)
from bnviz.data.datasets import DATASETS, make_dataset

ACTS = ACTIVATIONS

# --------------------------------------------------------------------------- reference


def ref_act(h: np.ndarray, activation: str, alpha: float) -> np.ndarray:
    """a(u) of docs/conventions.md written out per activation (independent of bnviz)."""
    if activation == "relu":
        return np.maximum(h, 0.0)
    if activation == "leaky_relu":
        return np.where(h > 0, h, alpha * h)
    if activation == "abs":
        return np.abs(h)
    raise AssertionError(activation)


def ref_statistics(net: Network, batch: np.ndarray, overrides: dict | None = None) -> list[dict]:
    """mu, sigma of every layer by a plain numpy forward pass of the batch.

    ``overrides``: {layer: (mu_scale, mu_offset, sigma_scale)} applied as docs/conventions.md
    and network.py say;
    later layers see the modified forward pass.
    """
    overrides = overrides or {}
    z = np.asarray(batch, dtype=np.float64)
    out = []
    for i, w in enumerate(net.weights):
        layer = i + 1
        u = z @ w.T
        mean = u.sum(0) / len(u)
        std = np.sqrt(((u - mean) ** 2).sum(0) / len(u))  # biased
        if net.mode == "bn":
            mu, sigma = mean.copy(), std.copy()
        elif net.mode == "zero_bias":
            mu, sigma = np.zeros_like(mean), np.ones_like(std)
        else:
            mu, sigma = -np.asarray(net.biases[i]), np.ones_like(std)
        if layer in overrides:
            ms, mo, ss = (np.asarray(v, dtype=np.float64) for v in overrides[layer])
            mu = ms * mu + mo
            sigma = ss * sigma
        out.append(dict(u=u, z=z, mean=mean, std=std, mu=np.broadcast_to(mu, mean.shape),
                        sigma=np.broadcast_to(sigma, std.shape)))
        z = ref_act((u - mu) / sigma, net.activation, net.alpha)
    return out


def _data(name: str, n: int = 80, seed: int = 0) -> np.ndarray:
    return make_dataset(name, n, seed=seed).points


STAT_CASES = [
    (act, mode, depth, width, name, seed)
    for (act, mode), (depth, width, name, seed) in zip(
        itertools.product(ACTS, MODES),
        [(1, 2, "star", 0), (2, 5, "moons", 1), (3, 7, "circles", 2), (4, 3, "blobs", 3),
         (2, 12, "spiral", 4), (3, 4, "gaussian", 5), (4, 9, "star", 6), (1, 11, "moons", 7),
         (3, 6, "blobs", 8)],
        strict=True,
    )
]


def _close(a, b, scale, rtol=1e-12):
    np.testing.assert_allclose(a, b, rtol=0, atol=rtol * scale)


# --------------------------------------------------------------------------- layer_statistics


@pytest.mark.parametrize("act,mode,depth,width,name,seed", STAT_CASES)
def test_layer_statistics_match_reference(act, mode, depth, width, name, seed):
    net = random_network(depth, width, activation=act, mode=mode, seed=seed)
    batch = select_batch(_data(name, 100, seed), 32, seed)
    stats = layer_statistics(net, batch)
    ref = ref_statistics(net, batch)
    assert len(stats) == depth
    for layer, (st, r) in enumerate(zip(stats, ref, strict=True), start=1):
        assert st.layer == layer
        scale = np.abs(r["u"]).max() + 1.0
        _close(st.inputs, r["z"], np.abs(r["z"]).max() + 1.0)
        _close(st.batch_mean, r["mean"], scale)
        _close(st.batch_std, r["std"], scale)
        _close(st.mu, r["mu"], scale)
        _close(st.sigma, r["sigma"], scale)
        np.testing.assert_allclose(st.weight_norm, np.sqrt((net.weights[layer - 1] ** 2).sum(1)),
                                   rtol=1e-14)
        if mode == "bn":
            # BN: mu is the batch mean and sigma the BIASED std (docs/conventions.md, Pitfalls)
            _close(st.mu, r["u"].mean(0), scale)
            _close(st.sigma, r["u"].std(0, ddof=0), scale)
            assert not np.allclose(st.sigma, r["u"].std(0, ddof=1), rtol=1e-6)
        elif mode == "zero_bias":
            assert np.all(st.mu == 0) and np.all(st.sigma == 1)
        else:
            np.testing.assert_array_equal(st.mu, -net.biases[layer - 1])
            assert np.all(st.sigma == 1)
        for arr in (st.batch_mean, st.batch_std, st.mu, st.sigma, st.tls_error):
            assert arr.shape == (net.widths[layer - 1],) and arr.dtype == np.float64


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("act", ACTS)
def test_overrides_apply_and_later_layers_are_recomputed(act, mode):
    depth, width, seed = 3, 5, 11
    net = random_network(depth, width, activation=act, mode=mode, seed=seed)
    batch = _data("moons", 60, seed)
    rng = np.random.default_rng(seed)
    raw = {
        1: (0.5, rng.normal(size=width), 1.7),
        2: (rng.uniform(0.2, 2.0, size=width), -0.3, rng.uniform(0.5, 2.0, size=width)),
    }
    ov = BNOverrides({k: LayerOverride(*v) for k, v in raw.items()})
    stats = layer_statistics(net, batch, ov)
    ref = ref_statistics(net, batch, raw)
    plain = layer_statistics(net, batch)
    for st, r in zip(stats, ref, strict=True):
        scale = np.abs(r["u"]).max() + 1.0
        _close(st.mu, r["mu"], scale)
        _close(st.sigma, r["sigma"], scale)
        _close(st.batch_mean, r["mean"], scale)
        _close(st.batch_std, r["std"], scale)
        _close(st.inputs, r["z"], np.abs(r["z"]).max() + 1.0)
    # layer 1 override changes the batch that layers 2 and 3 see
    assert not np.allclose(stats[1].inputs, plain[1].inputs)
    assert not np.allclose(stats[2].batch_mean, plain[2].batch_mean)
    # the override of layer 1 is mu -> ms * mu + mo, sigma -> ss * sigma of the plain values
    ms, mo, ss = raw[1]
    _close(stats[0].mu, ms * plain[0].mu + mo, 10.0)
    _close(stats[0].sigma, ss * plain[0].sigma, 10.0)
    # layer 3 has no override: its mu/sigma are the mode's own, from the modified batch
    if mode == "bn":
        _close(stats[2].mu, stats[2].batch_mean, 10.0)
        _close(stats[2].sigma, stats[2].batch_std, 10.0)


def test_override_constructors():
    net = random_network(3, 4, mode="bn", seed=2)
    batch = _data("star", 50, 2)
    ov = BNOverrides.all_layers(3, mu_scale=0.5, mu_offset=0.25, sigma_scale=2.0)
    stats = layer_statistics(net, batch, ov)
    ref = ref_statistics(net, batch, {k: (0.5, 0.25, 2.0) for k in (1, 2, 3)})
    for st, r in zip(stats, ref, strict=True):
        _close(st.mu, r["mu"], 10.0)
        _close(st.sigma, r["sigma"], 10.0)
    ov = BNOverrides.unit(4, layer=2, unit=1, mu_scale=3.0, mu_offset=-0.5, sigma_scale=0.25)
    stats = layer_statistics(net, batch, ov)
    ms, mo, ss = np.ones(4), np.zeros(4), np.ones(4)
    ms[1], mo[1], ss[1] = 3.0, -0.5, 0.25
    ref = ref_statistics(net, batch, {2: (ms, mo, ss)})
    for st, r in zip(stats, ref, strict=True):
        _close(st.mu, r["mu"], 10.0)
        _close(st.sigma, r["sigma"], 10.0)
    # units other than 1 of layer 2 keep the plain BN statistics
    np.testing.assert_allclose(np.delete(stats[1].mu, 1), np.delete(stats[1].batch_mean, 1),
                               atol=1e-13)
    with pytest.raises(ValueError):
        BNOverrides.unit(4, layer=1, unit=4)
    with pytest.raises(ValueError):
        layer_statistics(net, batch, BNOverrides.all_layers(3, sigma_scale=0.0))
    with pytest.raises(ValueError):
        layer_statistics(net, batch, BNOverrides.all_layers(3, mu_offset=np.inf))


# --------------------------------------------------------------------------- Theorem 1


def _tls_loss(u: np.ndarray, mu: np.ndarray, wnorm2: np.ndarray) -> float:
    """sum_k mean_B (w_k . z - mu_k)^2 / ||w_k||^2 (BN paper eq. 7-8)."""
    return float((((u - mu) ** 2).mean(0) / wnorm2).sum())


@pytest.mark.parametrize("act,mode,depth,width,name,seed", STAT_CASES)
def test_theorem1_mu_minimises_tls_distance(act, mode, depth, width, name, seed):
    net = random_network(depth, width, activation=act, mode=mode, seed=seed)
    batch = _data(name, 64, seed + 100)
    stats = layer_statistics(net, batch)
    rng = np.random.default_rng(seed)
    for st, w in zip(stats, net.weights, strict=True):
        z = st.inputs
        u = z @ w.T
        wnorm2 = (w**2).sum(1)
        mean = st.batch_mean
        scale = np.abs(u).max() + 1.0
        _close(mean, u.mean(0), scale)
        # gradient of the TLS loss in mu' vanishes at the batch mean (analytically)
        grad = -2.0 * (u - mean).mean(0) / wnorm2
        assert np.all(np.abs(grad) <= 1e-12 * scale / wnorm2)
        # the minimum value is sum_k sigma_k^2 / ||w_k||^2 (eq. 9)
        lmin = _tls_loss(u, mean, wnorm2)
        expected = float((st.batch_std**2 / wnorm2).sum())
        assert lmin == pytest.approx(expected, rel=1e-10, abs=1e-14 * scale**2)
        # any other mu' is worse, by exactly sum_k (mu'_k - mean_k)^2 / ||w_k||^2
        for eps in (1e-3, 1e-1, 1.0):
            for _ in range(5):
                d = eps * rng.normal(size=mean.shape) * np.sqrt(wnorm2)
                lp = _tls_loss(u, mean + d, wnorm2)
                assert lp > lmin
                assert lp - lmin == pytest.approx(float((d**2 / wnorm2).sum()), rel=1e-6)
        # tls_error is eq. 8 at the mu actually used: mean_B d(z, H_k)^2 computed directly
        dist2 = ((u - st.mu) ** 2 / wnorm2).mean(0)
        np.testing.assert_allclose(st.tls_error, dist2, rtol=1e-9, atol=1e-14 * scale**2)
        if mode == "bn":
            np.testing.assert_allclose(st.tls_error, st.batch_std**2 / wnorm2, rtol=1e-9,
                                       atol=1e-14 * scale**2)
            np.testing.assert_allclose(st.tls_error, st.sigma**2 / wnorm2, rtol=1e-9,
                                       atol=1e-14 * scale**2)
        else:  # away from the BN mean the TLS error is larger (Theorem 1)
            assert np.all(st.tls_error >= st.batch_std**2 / wnorm2 * (1 - 1e-12))


# --------------------------------------------------------------------------- Corollary 2


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("act", ACTS)
def test_corollary2_bn_hyperplanes_pass_through_batch_centroid(act, name):
    for seed in range(3):
        net = random_network(4, [3, 8, 5, 12][: 1 + seed % 4] + [6] * (3 - seed % 4),
                             activation=act, mode="bn", seed=seed)
        batch = select_batch(_data(name, 120, seed), 40, seed)
        stats = layer_statistics(net, batch)
        ref = ref_statistics(net, batch)
        for st, r, w in zip(stats, ref, net.weights, strict=True):
            centroid = r["z"].mean(0)  # of z_{l-1}, from the independent forward pass
            resid = w @ centroid - st.mu
            scale = np.abs(r["u"]).max() + 1e-300
            assert np.all(np.abs(resid) <= 1e-12 * scale), (st.layer, resid)


# --------------------------------------------------------------------------- degenerate BN


@pytest.mark.parametrize("n", [1, 2, 7])
def test_sigma_floor_for_identical_points(n):
    net = random_network(3, 5, mode="bn", seed=4)
    batch = np.tile([[0.3, -0.7]], (n, 1))
    stats = layer_statistics(net, batch)
    for st in stats:
        assert np.all(np.isfinite(st.mu)) and np.all(np.isfinite(st.sigma))
        assert np.all(st.sigma > 0)
        u = st.inputs @ net.weights[st.layer - 1].T
        ref = np.abs(u).max(0)
        nz = ref > 0
        # docs/conventions.md: an eps for a zero sigma is <= 1e-12 relative
        assert np.all(st.sigma[nz] <= SIGMA_FLOOR_REL * ref[nz] * (1 + 1e-9) + st.batch_std[nz])
        assert SIGMA_FLOOR_REL <= 1e-12
        _close(st.mu, u.mean(0), ref.max() + 1.0)


def test_zero_row_and_two_point_batch():
    w1 = np.array([[1.0, 2.0], [0.0, 0.0], [-1.0, 0.5]])
    net = Network((w1, np.ones((2, 3))), "leaky_relu", 0.1, "bn")
    batch = np.array([[0.0, 1.0], [2.0, -1.0]])
    st = layer_statistics(net, batch)
    u = batch @ w1.T
    np.testing.assert_allclose(st[0].mu, u.mean(0), atol=1e-15)
    np.testing.assert_allclose(st[0].sigma[[0, 2]], np.abs(u[0] - u[1])[[0, 2]] / 2, rtol=1e-14)
    assert np.isfinite(st[0].sigma[1]) and st[0].sigma[1] > 0
    assert st[0].mu[1] == 0
    # a zero row has no hyperplane: its TLS error is undefined (not checked); the others are
    assert np.all(np.isfinite(st[0].tls_error[[0, 2]]))
    assert np.all(np.isfinite(st[1].tls_error))
    np.testing.assert_allclose(st[0].tls_error[[0, 2]],
                               st[0].sigma[[0, 2]] ** 2 / (w1[[0, 2]] ** 2).sum(1), rtol=1e-14)


def test_layer_statistics_rejects_bad_batches():
    net = random_network(2, 3, seed=0)
    for bad in (np.zeros((0, 2)), np.zeros((4, 3)), np.zeros(4)):
        with pytest.raises(ValueError):
            layer_statistics(net, bad)


# --------------------------------------------------------------------------- networks


def test_negative_slope_and_validation():
    assert negative_slope("relu") == 0.0
    assert negative_slope("leaky_relu", 0.2) == 0.2
    assert negative_slope("abs") == -1.0
    for bad in (("leaky_relu", 0.0), ("leaky_relu", 1.0), ("tanh", 0.1)):
        with pytest.raises(ValueError):
            negative_slope(*bad)
    w = (np.ones((3, 2)), np.ones((4, 3)))
    net = Network(w, "abs", 0.1, "zero_bias")
    assert net.widths == (3, 4) and net.depth == 2 and net.negative_slope == -1.0
    with pytest.raises(ValueError):
        Network((), "relu")
    with pytest.raises(ValueError):
        Network((np.ones((3, 3)),), "relu")
    with pytest.raises(ValueError):
        Network((np.ones((3, 2)), np.ones((4, 2))), "relu")
    with pytest.raises(ValueError):
        Network(w, "relu", mode="random_bias")
    with pytest.raises(ValueError):
        Network(w, "relu", mode="bn", biases=(np.zeros(3),))
    with pytest.raises(ValueError):
        Network(w, "relu", mode="nope")
    with pytest.raises(ValueError):
        Network((np.array([[np.nan, 1.0]]),), "relu")
    with pytest.raises(ValueError):
        Network(w, "relu", head=Head(np.ones((1, 3)), np.zeros(1)))
    with pytest.raises(ValueError):
        Head(np.ones((3, 4)), np.zeros(3))
    with pytest.raises(ValueError):
        Head(np.ones((2, 4)), np.zeros(1))


def test_head_decision_function():
    h1 = Head(np.array([[1.0, -2.0]]), np.array([0.5]))
    w, b = h1.decision_function()
    np.testing.assert_array_equal(w, [1.0, -2.0])
    assert b == 0.5
    h2 = Head(np.array([[1.0, -2.0], [3.0, 1.0]]), np.array([0.5, -1.0]))
    w, b = h2.decision_function()
    np.testing.assert_array_equal(w, [2.0, 3.0])
    assert b == -1.5


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_random_network_weights_shared_across_modes_and_heads(seed):
    nets = [random_network(3, [4, 6, 5], mode=m, seed=seed, head_outputs=h, activation=a)
            for m in MODES for h in (0, 1, 2) for a in ("relu", "abs")]
    ref = nets[0]
    assert ref.widths == (4, 6, 5)
    for net in nets[1:]:
        for a, b in zip(net.weights, ref.weights, strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(net.biases, ref.biases, strict=True):
            np.testing.assert_array_equal(a, b)
    for m in MODES:
        wm = ref.with_mode(m)
        assert wm.mode == m and wm.activation == ref.activation
        for a, b in zip(wm.weights, ref.weights, strict=True):
            np.testing.assert_array_equal(a, b)
    other = random_network(3, [4, 6, 5], seed=seed + 1)
    assert not np.allclose(other.weights[0], ref.weights[0])
    h = random_network(3, 4, seed=seed, head_outputs=2).head
    assert h is not None and h.weight.shape == (2, 4) and h.bias.shape == (2,)
    assert random_network(3, 4, seed=seed).head is None
    for bad in (dict(depth=0, width=3), dict(depth=2, width=[3]), dict(depth=2, width=0),
                dict(depth=2, width=3, head_outputs=3)):
        with pytest.raises(ValueError):
            random_network(**bad)


def test_random_network_he_normal_scale():
    net = random_network(2, 400, seed=3)
    for w, d_in in zip(net.weights, (2, 400), strict=True):
        assert w.std() == pytest.approx(np.sqrt(2.0 / d_in), rel=0.1)
        assert abs(w.mean()) < 0.1 * np.sqrt(2.0 / d_in)


# --------------------------------------------------------------------------- select_batch


@pytest.mark.parametrize("size", [1, 2, 16, 99])
def test_select_batch_is_a_seeded_subset(size):
    pts = _data("spiral", 100, 5)
    b1 = select_batch(pts, size, seed=9)
    b2 = select_batch(pts, size, seed=9)
    np.testing.assert_array_equal(b1, b2)
    assert b1.shape == (size, 2) and b1.dtype == np.float64
    # distinct rows of the data, in data order
    idx = [int(np.flatnonzero((pts == row).all(1))[0]) for row in b1]
    assert len(set(idx)) == size and idx == sorted(idx)
    if size < 99:
        others = [select_batch(pts, size, seed=s) for s in range(10, 15)]
        assert any(not np.array_equal(o, b1) for o in others)


def test_select_batch_whole_set_and_errors():
    pts = _data("blobs", 30, 1)
    np.testing.assert_array_equal(select_batch(pts, None), pts)
    np.testing.assert_array_equal(select_batch(pts, 30), pts)
    np.testing.assert_array_equal(select_batch(pts, 1000, seed=3), pts)
    for bad in (0, -2):
        with pytest.raises(ValueError):
            select_batch(pts, bad)


# --------------------------------------------------------------------------- load_network


@pytest.mark.parametrize("head_outputs", [0, 1, 2])
def test_load_network_round_trip(tmp_path, head_outputs):
    net = random_network(3, [5, 4, 3], seed=8, head_outputs=head_outputs, mode="random_bias")
    arrays = {f"W{i + 1}": w for i, w in enumerate(net.weights)}
    arrays.update({f"c{i + 1}": c for i, c in enumerate(net.biases)})
    if net.head is not None:
        arrays["head_W"] = net.head.weight
        arrays["head_b"] = net.head.bias + 0.25
    path = tmp_path / "net.npz"
    np.savez(path, **arrays)
    got = load_network(path, activation="abs", alpha=0.3, mode="random_bias")
    assert got.activation == "abs" and got.mode == "random_bias" and got.widths == (5, 4, 3)
    for a, b in zip(got.weights, net.weights, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(got.biases, net.biases, strict=True):
        np.testing.assert_array_equal(a, b)
    if head_outputs:
        np.testing.assert_array_equal(got.head.weight, net.head.weight)
        np.testing.assert_array_equal(got.head.bias, net.head.bias + 0.25)
    else:
        assert got.head is None
    # same statistics as the original network
    batch = _data("moons", 40, 0)
    same = Network(net.weights, "abs", 0.3, "random_bias", net.biases)
    for a, b in zip(layer_statistics(got, batch), layer_statistics(same, batch), strict=True):
        np.testing.assert_array_equal(a.mu, b.mu)
        np.testing.assert_array_equal(a.inputs, b.inputs)


def test_load_network_without_biases(tmp_path):
    path = tmp_path / "w.npz"
    np.savez(path, W1=np.ones((3, 2)), W2=np.ones((2, 3)))
    net = load_network(path)
    assert net.biases is None and net.widths == (3, 2) and net.mode == "bn"
    with pytest.raises(ValueError, match="random_bias"):
        load_network(path, mode="random_bias")


def _save(path, **arrays):
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    "arrays,pattern",
    [
        (dict(W2=np.ones((2, 3))), "W1"),
        (dict(c1=np.ones(3)), "W1"),
        (dict(W1=np.ones((3, 3))), r"W1.*shape"),
        (dict(W1=np.ones((3, 2)), W2=np.ones((4, 2))), r"W2.*shape"),
        (dict(W1=np.ones(2)), r"W1.*shape"),
        (dict(W1=np.ones((3, 2)), c1=np.ones(4)), "c_l|bias"),
        (dict(W1=np.ones((3, 2)), head_W=np.ones((1, 4))), "head"),
        (dict(W1=np.ones((3, 2)), head_W=np.ones((3, 3))), "head"),
        (dict(W1=np.array([[1.0, np.inf], [0.0, 1.0]])), "non-finite"),
        (dict(W1=np.array([[{"a": 1}, None]], dtype=object)), "npz"),
    ],
)
def test_load_network_bad_files(tmp_path, arrays, pattern):
    path = _save(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=pattern) as info:
        load_network(path)
    if pattern != "head":  # a bad head's message names the shapes, not always the file
        assert str(path) in str(info.value)


def test_load_network_missing_and_garbage(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_network(tmp_path / "absent.npz")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a zip file at all")
    with pytest.raises(ValueError, match="npz"):
        load_network(garbage)


# --------------------------------------------------------------------------- frozen statistics


def ref_frozen_statistics(net: Network, batch: np.ndarray, overrides: dict) -> list[dict]:
    """Frozen semantics written out: mu, sigma from the network without overrides, then moved
    by the overrides; the batch then flows through the modified network."""
    plain = ref_statistics(net, batch)
    z = np.asarray(batch, dtype=np.float64)
    out = []
    for i, w in enumerate(net.weights):
        layer = i + 1
        mu, sigma = plain[i]["mu"], plain[i]["sigma"]
        if layer in overrides:
            ms, mo, ss = (np.asarray(v, dtype=np.float64) for v in overrides[layer])
            mu, sigma = ms * mu + mo, ss * sigma
        u = z @ w.T
        out.append(dict(z=z, mean=u.mean(0), std=u.std(0), mu=mu, sigma=sigma))
        z = ref_act((u - mu) / sigma, net.activation, net.alpha)
    return out


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("mode", MODES)
def test_frozen_statistics_move_fixed_values(act, mode):
    net = random_network(3, 5, activation=act, mode=mode, seed=4)
    batch = _data("blobs", 60, seed=2)
    overrides = {1: (1.0, 0.0, 2.5), 2: (0.3, 0.1, 1.0)}
    ov = BNOverrides({k: LayerOverride(*v) for k, v in overrides.items()})
    got = layer_statistics(net, batch, ov, frozen=True)
    want = ref_frozen_statistics(net, batch, overrides)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.mu, w["mu"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g.sigma, w["sigma"], rtol=1e-12)
        np.testing.assert_allclose(g.inputs, w["z"], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g.batch_mean, w["mean"], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g.batch_std, w["std"], rtol=1e-10, atol=1e-12)
    # layer 3 has no override: frozen keeps the plain network's statistics there
    plain = layer_statistics(net, batch)
    np.testing.assert_allclose(got[2].mu, plain[2].mu, rtol=1e-12, atol=1e-15)


def test_frozen_without_overrides_is_the_plain_network():
    net = random_network(3, 4, seed=1)
    batch = _data("moons")
    for a, b in zip(layer_statistics(net, batch), layer_statistics(net, batch, frozen=True),
                    strict=True):
        np.testing.assert_array_equal(a.mu, b.mu)
        np.testing.assert_array_equal(a.sigma, b.sigma)


def test_frozen_sigma_of_layer_1_reaches_layer_2_recomputed_does_not():
    """Figure 2c: with positively homogeneous activations, recomputed BN statistics divide a
    change of sigma_1 out again; frozen statistics keep it, so layer 2's h changes."""
    net = random_network(2, 6, activation="leaky_relu", mode="bn", seed=3)
    batch = _data("moons")
    ov = BNOverrides({1: LayerOverride(sigma_scale=3.0)})
    x = _data("circles", 30, seed=5)

    def h2(stats):
        z = ref_act((x @ net.weights[0].T - stats[0].mu) / stats[0].sigma, net.activation,
                    net.alpha)
        return (z @ net.weights[1].T - stats[1].mu) / stats[1].sigma

    plain = h2(layer_statistics(net, batch))
    np.testing.assert_allclose(h2(layer_statistics(net, batch, ov)), plain, atol=1e-10)
    assert np.abs(h2(layer_statistics(net, batch, ov, frozen=True)) - plain).max() > 1e-2
