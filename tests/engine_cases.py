"""The engine configurations the core tests compare, and the networks they compare them on.

``use`` picks how the partition is cut (compiled kernels, the vectorised cut on numpy or on
torch, or numpy then torch), ``CASES`` are networks of every kind (BN's central layer 1,
leaky-ReLU, abs, zero and random bias, narrow and wide, tiny and large boxes, with and without
a head), ``assert_same_partition`` what "the same partition" means between two cuts.
"""

from __future__ import annotations

import itertools

import numpy as np

import bnviz.core.arrays as arrays
import bnviz.core.cut as cut
from bnviz.core import kernels
from bnviz.core.network import BNOverrides, random_network
from bnviz.data.datasets import DATASETS, make_dataset


def use(monkeypatch, engine: str, work: float | None = None) -> None:
    """Make the engine cut with the compiled kernels ("compiled", at every size), with the
    vectorised cut on numpy ("numpy") or torch ("torch"), or on numpy up to ``work`` then
    torch ("mixed")."""
    limit = {"compiled": float("inf"), "numpy": float("inf"), "torch": -1,
             "mixed": work}[engine]
    if engine == "compiled":
        kernels.require()
    monkeypatch.setitem(arrays.NUMPY_MAX_WORK, "cpu", limit)
    monkeypatch.setattr(cut, "COMPILED_MAX_WORK",
                        float("inf") if engine == "compiled" else -1)


def _cases() -> list[tuple]:
    out = []
    acts, modes = ("relu", "leaky_relu", "abs"), ("bn", "zero_bias", "random_bias")
    extents = (1e-3, 0.5, 3.0, 6.0)
    for i, (act, mode) in enumerate(itertools.product(acts, modes)):
        for j in range(3):
            k = 3 * i + j
            out.append((act, mode, 1 + k % 4, (2, 3, 7, 12, 20, 40)[k % 6], k,
                        extents[k % 4], (None, 12, 2)[j], (0, 1, 2)[k % 3]))
    return out


CASES = _cases()


def _build(case):
    act, mode, depth, width, seed, extent, batch_size, head = case
    net = random_network(depth, width, activation=act, mode=mode, seed=seed,
                         head_outputs=head)
    data = make_dataset(DATASETS[seed % 6], 80, seed=seed).points * min(1.0, extent)
    batch = data if batch_size is None else data[:batch_size]
    ov = BNOverrides.all_layers(depth, mu_offset=0.2) if seed % 5 == 4 else None
    return net, batch, ov, (-extent, extent, -extent * 0.8, extent * 1.2)


def assert_engines_agree(monkeypatch, case, first: str, second: str,
                         work: float | None = None) -> tuple:
    """The case's partition cut by engine ``first`` and by ``second`` (:func:`use`, ``work``
    for "mixed"): the same partition (:func:`assert_same_partition`, to 1e-11 of the box).
    Returns the two."""
    from bnviz.core.partition import compute_partition

    net, batch, ov, box = _build(case)
    out = []
    for engine in (first, second):
        use(monkeypatch, engine, work)
        out.append(compute_partition(net, batch, box, overrides=ov, device="cpu"))
    assert_same_partition(*out, atol=1e-11 * (box[1] - box[0]))
    return tuple(out)


def assert_same_partition(p, q, atol: float) -> None:
    """Same regions (CSR), codes, facets' units and parents, in the same order; vertices,
    facets and decision boundary equal to ``atol``."""
    assert len(p.layers) == len(q.layers)
    for a, b in zip(p.layers, q.layers, strict=True):
        np.testing.assert_array_equal(a.regions.ptr, b.regions.ptr)
        np.testing.assert_array_equal(a.regions.packed_codes, b.regions.packed_codes)
        np.testing.assert_array_equal(a.facet_units, b.facet_units)
        np.testing.assert_array_equal(a.facet_parents, b.facet_parents)
        np.testing.assert_allclose(a.regions.vertices, b.regions.vertices, rtol=0, atol=atol)
        np.testing.assert_allclose(a.facets, b.facets, rtol=0, atol=atol)
    if p.decision_boundary is None:
        assert q.decision_boundary is None
    else:
        np.testing.assert_allclose(p.decision_boundary, q.decision_boundary, rtol=0, atol=atol)


def realisations(act: str) -> tuple:
    """A 3x8 BN network with a head and the statistics of 5 mini-batches of 16 moons
    (Figure 6's K realisations): (net, mu as lists, sigma as a (K, L, D) tensor)."""
    import torch

    from bnviz.core.network import layer_statistics

    net = random_network(3, 8, activation=act, mode="bn", seed=3, head_outputs=2)
    data = make_dataset("moons", 64, seed=3).points
    rng = np.random.default_rng(3)
    stats = [layer_statistics(net, data[rng.choice(64, 16, replace=False)]) for _ in range(5)]
    mu = [[s.mu for s in st] for st in stats]
    sigma = torch.as_tensor(np.array([[s.sigma for s in st] for st in stats]))
    return net, mu, sigma
