"""The vectorised engine on its two array libraries (bnviz.core.arrays) and its fast paths.

numpy (small meshes) and torch (big meshes, GPUs) cut the same partition: the same regions in
the same order, codes, facets and decision boundaries, coordinates equal to float64 rounding,
on networks of every kind (BN's central layer 1, leaky-ReLU, abs, zero and random bias, narrow
and wide, tiny and large boxes), and when a partition switches library half-way.  The torch
path also passes the independent reference of tests/partition_reference.py.  The fast paths
give what the general ones give: lines in general position (cut.py) against the general
vertex-face construction (degenerate.py), the one-key angle sort against the two-key sort,
and the array operations that differ between the libraries against plain numpy.  Region
counts equal Regioncam's at the sizes of bench/partition.py.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import regioncam
import torch
from engine_cases import (
    CASES,
    _build,
    assert_engines_agree,
    assert_same_partition,
    realisations,
    use,
)
from partition_reference import check_all

import bnviz.core.arrays as arrays
import bnviz.core.cut as cut
from bnviz.core.arrays import NUMPY, TorchOps, ops_for, ops_of, single_thread_matmul
from bnviz.core.degenerate import vertex_faces
from bnviz.core.mesh import box_mesh, group_first, lexsort, pack_local, ragged_arange, starts
from bnviz.core.network import layer_statistics, random_network
from bnviz.core.partition import compute_partition, decision_boundaries

TORCH = TorchOps(torch.device("cpu"))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_numpy_and_torch_cut_the_same_partition(case, monkeypatch):
    p, q = assert_engines_agree(monkeypatch, case, "numpy", "torch")
    assert p.device == q.device == "cpu"


@pytest.mark.parametrize("case", CASES[::4], ids=str)
def test_a_partition_may_switch_from_numpy_to_torch(case, monkeypatch):
    """Small layers on numpy, the rest on torch (as on a GPU): the same partition."""
    widest = max(_build(case)[0].widths)
    assert_engines_agree(monkeypatch, case, "numpy", "mixed", work=20 * widest)


@pytest.mark.parametrize("case", CASES[1::3], ids=str)
def test_torch_path_against_the_reference(case, monkeypatch):
    net, batch, ov, box = _build(case)
    use(monkeypatch, "torch")
    part = compute_partition(net, batch, box, overrides=ov, device="cpu")
    check_all(net, layer_statistics(net, batch, ov), part, seed=case[4])


@pytest.mark.parametrize("act", ["relu", "leaky_relu", "abs"])
def test_decision_boundaries_on_both_libraries(act, monkeypatch):
    net, mu, sigma = realisations(act)
    use(monkeypatch, "numpy")
    p = decision_boundaries(net, mu, sigma, (-3.0, 3.0, -3.0, 3.0), "cpu")
    use(monkeypatch, "torch")
    q = decision_boundaries(net, mu, sigma, (-3.0, 3.0, -3.0, 3.0), "cpu")
    assert len(p) == len(q) == 5 and sum(len(b) for b in p) > 0
    for a, b in zip(p, q, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)


@pytest.mark.parametrize("engine", ["numpy", "torch"])
@pytest.mark.parametrize("case", [c for c in CASES if c[1] == "random_bias"], ids=str)
def test_general_position_path_equals_the_general_path(case, engine, monkeypatch):
    """Random-bias lines are in general position: the direct construction of the faces
    (cut._general_position_faces) gives exactly what the general one (vertex_faces) gives."""
    net, batch, ov, box = _build(case)
    use(monkeypatch, engine)
    fast = compute_partition(net, batch, box, overrides=ov, device="cpu")
    used = []
    monkeypatch.setattr(cut, "_general_position_faces",
                        lambda *a: used.append(1) or vertex_faces(*a))
    slow = compute_partition(net, batch, box, overrides=ov, device="cpu")
    # the general path was taken in place of the fast one (unless no line crossed the box)
    assert used or not any(len(lay.facets) for lay in fast.layers)
    assert_same_partition(fast, slow, atol=0.0)


@pytest.mark.parametrize("width,depth", [(8, 2), (16, 3), (32, 4), (64, 3)])
def test_bench_sizes_count_regioncams_regions(width, depth, monkeypatch):
    """bench/partition.py's networks (He-normal, random bias, ReLU, [-1, 1]^2): the region
    counts of every layer equal Regioncam's, on both libraries and compiled."""
    net = random_network(depth, width, activation="relu", mode="random_bias", seed=0)
    pts = np.zeros((1, 2))
    stats = layer_statistics(net, pts)
    cam, want = regioncam.Regioncam(size=1.0), []
    for w, st in zip(net.weights, stats, strict=True):
        cam.linear((w / st.sigma[:, None]).T.astype(np.float32),
                   (-st.mu / st.sigma).astype(np.float32))
        cam.relu()
        want.append(cam.num_faces)
    for engine in ("compiled", "numpy", "torch"):
        use(monkeypatch, engine)
        part = compute_partition(net, pts, (-1.0, 1.0, -1.0, 1.0), stats=stats, device="cpu")
        assert [len(lay.regions) for lay in part.layers] == want


# --------------------------------------------------------------------------- choice of library


def test_ops_for_chooses_by_device_and_size(monkeypatch):
    assert ops_for(torch.device("cpu"), 10**9) is NUMPY  # CPU: numpy at every size
    gpu = torch.device("cuda")  # (constructing the device needs no GPU)
    assert ops_for(gpu, 10) is NUMPY
    big = ops_for(gpu, arrays.NUMPY_MAX_WORK["cuda"] + 1)
    assert isinstance(big, TorchOps) and big.device == gpu
    use(monkeypatch, "torch")
    assert isinstance(ops_for(torch.device("cpu"), 0), TorchOps)
    assert ops_of(np.zeros(2)) is NUMPY and ops_of(torch.zeros(2)).device == torch.device("cpu")


def test_mesh_moves_between_libraries_unchanged():
    mesh = box_mesh((-1.0, 2.0, -0.5, 3.0), groups=2, ops=NUMPY)
    assert isinstance(mesh.verts, np.ndarray) and mesh.to(NUMPY) is mesh
    back = mesh.to(TORCH).to(NUMPY)
    for name in ("ptr", "verts", "aff", "codes", "group", "counts", "poly", "nxt", "prv"):
        np.testing.assert_array_equal(getattr(back, name), getattr(mesh, name))
    ref = box_mesh((-1.0, 2.0, -0.5, 3.0), "cpu", groups=2)
    for name in ("ptr", "verts", "aff", "codes", "group", "nxt", "prv"):
        np.testing.assert_array_equal(getattr(ref, name).numpy(), getattr(mesh, name))


# --------------------------------------------------------------------------- array operations


@pytest.mark.parametrize("seed", range(3))
def test_sorts_and_sums_agree_with_numpy(seed):
    rng = np.random.default_rng(seed)
    for n, hi in ((50, 7), (5000, 300), (5000, 2**40)):  # small, radix-sortable, wide keys
        x = rng.integers(0, hi, n)
        want = np.argsort(x, kind="stable")
        for ops in (NUMPY, TORCH):
            got = ops.numpy(ops.argsort(ops.asarray(x)))
            np.testing.assert_array_equal(got, want)
            fast = ops.numpy(ops.argsort(ops.asarray(x), stable=False))
            np.testing.assert_array_equal(x[fast], np.sort(x))
    idx = rng.integers(0, 30, 400)
    vals = rng.normal(size=(400, 2))
    words = rng.integers(0, 2**60, 400)
    ptr = np.concatenate([[0], np.cumsum(rng.integers(1, 6, 30))])
    seg = np.repeat(np.arange(30), np.diff(ptr))
    seg_vals = rng.random(ptr[-1])
    for ops in (NUMPY, TORCH):
        a = ops.asarray
        np.testing.assert_allclose(ops.numpy(ops.scatter_add(30, a(idx), a(vals))),
                                   np.stack([np.bincount(idx, vals[:, j], 30) for j in (0, 1)], 1),
                                   rtol=1e-14)
        exact = np.zeros(30, np.int64)
        np.add.at(exact, idx, words >> 5)  # int64 sums: exact, no float rounding
        np.testing.assert_array_equal(ops.numpy(ops.scatter_add(30, a(idx), a(words >> 5))),
                                      exact)
        np.testing.assert_array_equal(ops.numpy(ops.count(a(idx), a(words % 2 == 1), 30)),
                                      np.bincount(idx[words % 2 == 1], minlength=30))
        np.testing.assert_allclose(ops.numpy(ops.segment_sum(a(seg_vals), a(ptr), a(seg))),
                                   np.bincount(seg, seg_vals), rtol=1e-14)
        np.testing.assert_array_equal(ops.numpy(ops.segment_max(a(seg_vals), a(ptr), a(seg))),
                                      [seg_vals[s:e].max() for s, e in itertools.pairwise(ptr)])


@pytest.mark.parametrize("seed", range(3))
def test_mesh_helpers_give_the_same_on_numpy_and_torch(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 5, 40)
    for got, want in zip(ragged_arange(counts), ragged_arange(torch.as_tensor(counts)),
                         strict=True):
        np.testing.assert_array_equal(got, want.numpy())
    np.testing.assert_array_equal(starts(counts), starts(torch.as_tensor(counts)).numpy())
    primary, secondary = rng.integers(0, 5, 300), rng.normal(size=300).round(1)
    np.testing.assert_array_equal(lexsort(primary, secondary), np.lexsort((secondary, primary)))
    rows = np.stack([rng.integers(0, 4, 200), rng.integers(0, 2**61, 200) % 3], 1)
    for stable in (True, False):
        first, inverse = group_first(rows, stable=stable)
        tfirst, tinverse = group_first(torch.as_tensor(rows), stable=stable)
        np.testing.assert_array_equal(inverse, tinverse.numpy())  # groups in key order
        assert np.all(inverse[first] == np.arange(len(first)))  # a member of its group
        if stable:
            np.testing.assert_array_equal(first, tfirst.numpy())
            assert all(f == np.flatnonzero(inverse == g).min() for g, f in enumerate(first))
    point, local = np.repeat(np.arange(20), 40), np.tile(np.arange(40), 20)
    sign = rng.integers(-1, 2, 800).astype(np.int8)
    np.testing.assert_array_equal(
        pack_local(point, local, sign, 20, 2),
        pack_local(*(torch.as_tensor(v) for v in (point, local, sign)), 20, 2).numpy())


def test_angle_order_falls_back_to_the_exact_sort_on_near_ties():
    """Angles closer than the one-key sort's resolution (faces numbered ~2^30) are ordered
    by the exact two-key sort; far apart ones by the one-key sort; both as np.lexsort."""
    rng = np.random.default_rng(7)
    face = np.repeat(np.arange(2**30, 2**30 + 50), 6)
    for spread in (1.0, 1e-12):
        theta = (rng.uniform(-3, 3, 50)[:, None] + spread * rng.normal(size=(50, 6))).ravel()
        for ops in (NUMPY, TORCH):
            got = ops.numpy(cut._by_angle(ops, ops.asarray(face), ops.asarray(theta)))
            np.testing.assert_array_equal(got, np.lexsort((theta, face)))


def test_single_thread_matmul_is_matmul():
    rng = np.random.default_rng(0)
    for shape in ((5, 3, 4), (3000, 64, 64)):  # below and above the small-GEMM bound
        a, b = rng.normal(size=shape[:2]), rng.normal(size=shape[1:])
        np.testing.assert_allclose(single_thread_matmul(a, b), a @ b, rtol=1e-12, atol=1e-12)
