"""The compiled cut (bnviz.core.clipping, bnviz.core.compiled_network) against the vectorised one.

The compiled kernels clip each polygon by its lines one after the other; the vectorised cut
builds every vertex from pairs of lines at once.  On networks of every kind (BN's concurrent
layer-1 lines, leaky-ReLU, abs, zero and random bias, tiny and large boxes, heads) they give
the same regions in the same order, the same codes, facets and decision boundaries, with
coordinates equal to float64 rounding; the compiled partition also passes the independent
reference of tests/partition_reference.py.  A partition may go from the one-call network
kernel to the per-layer kernel to the vectorised cut half-way, and the compiled path refuses
what the vectorised one refuses, in the same words.  (K realisations at once,
decision_boundaries, stay on the vectorised cut: its sign-table cap is not reproduced by the
kernels yet.)
"""

from __future__ import annotations

import numpy as np
import pytest
from engine_cases import CASES, _build, assert_engines_agree, assert_same_partition, use
from partition_reference import check_all

import bnviz.core.compiled_network as compiled_network
import bnviz.core.cut as cut
from bnviz.core.limits import PartitionTooLarge
from bnviz.core.network import layer_statistics, random_network
from bnviz.core.partition import compute_partition
from bnviz.data.datasets import make_dataset


@pytest.mark.parametrize("case", CASES, ids=str)
def test_compiled_and_vectorised_cut_the_same_partition(case, monkeypatch):
    assert_engines_agree(monkeypatch, case, "compiled", "numpy")


#: Polygons crossed by a hundred lines and more: the compiled cut keeps, for each face, only
#: the lines that may still cross it (clipping.clip_faces), and must give what clipping by
#: every line in turn gives.  BN's 120 layer-1 lines, and zero-bias ones, all pass through
#: one point (every face there within the tolerance of them all): 2 D faces.
MANY_LINES = [("relu", "random_bias", 1, 150, 31, 3.0, None, 0),
              ("leaky_relu", "random_bias", 2, 60, 35, 3.0, None, 1),
              ("leaky_relu", "bn", 1, 120, 32, 6.0, None, 0),
              ("abs", "zero_bias", 2, 60, 33, 0.5, 12, 1)]


@pytest.mark.parametrize("case", MANY_LINES, ids=str)
def test_many_lines_on_one_polygon_cut_as_every_line_in_turn(case, monkeypatch):
    first, _ = assert_engines_agree(monkeypatch, case, "compiled", "numpy")
    width, faces = case[3], len(first.layers[0].regions)
    assert faces == 2 * width if case[1] != "random_bias" else faces > 10 * width


@pytest.mark.parametrize("case", CASES[::2], ids=str)
def test_compiled_partition_against_the_reference(case, monkeypatch):
    net, batch, ov, box = _build(case)
    use(monkeypatch, "compiled")
    part = compute_partition(net, batch, box, overrides=ov, device="cpu")
    check_all(net, layer_statistics(net, batch, ov), part, seed=case[4])


def test_bn_layer_one_meets_in_one_vertex(monkeypatch):
    """BN's layer-1 lines all pass through the batch centroid (Corollary 2): the compiled
    cut makes one vertex there, shared by the 2 D faces around it, not D (D - 1) / 2."""
    use(monkeypatch, "compiled")
    net = random_network(1, 9, activation="relu", mode="bn", seed=4)
    batch = make_dataset("moons", 60, seed=4).points
    part = compute_partition(net, batch, (-3.0, 3.0, -3.0, 3.0), device="cpu")
    regions = part.layers[0].regions
    assert len(regions) == 18
    centroid = batch.mean(0)
    near = np.linalg.norm(regions.vertices - centroid, axis=1) < 1e-9
    assert near.sum() == 18  # one corner of each face
    np.testing.assert_allclose(regions.vertices[near], np.repeat(centroid[None], 18, 0),
                               rtol=0, atol=1e-12)
    assert np.isclose(regions.areas().sum(), 36.0, rtol=1e-12)


@pytest.mark.parametrize("case", CASES[1::3], ids=str)
def test_a_partition_may_leave_the_compiled_path_half_way(case, monkeypatch):
    """One compiled call for the first layers, then one per layer, then the vectorised cut
    on torch: the same partition as the compiled path all the way."""
    net, batch, ov, box = _build(case)
    use(monkeypatch, "compiled")
    p = compute_partition(net, batch, box, overrides=ov, device="cpu")
    use(monkeypatch, "mixed", work=40 * max(net.widths))
    monkeypatch.setattr(cut, "COMPILED_MAX_WORK", 40 * max(net.widths))
    monkeypatch.setattr(cut, "COMPILED_MAX_GEMM", 8 * max(net.widths) ** 2)
    q = compute_partition(net, batch, box, overrides=ov, device="cpu")
    assert_same_partition(p, q, atol=1e-11 * (box[1] - box[0]))


@pytest.mark.parametrize("layer_cap", [False, True])
def test_compiled_refusals_read_as_the_vectorised_ones(layer_cap, monkeypatch):
    """Over the region cap, in the one-call kernel (first layer) or the per-layer one: the
    same PartitionTooLarge message as the vectorised cut's."""
    net = random_network(3, 12, activation="relu", mode="random_bias", seed=1)
    batch = np.zeros((1, 2))
    cap = 60
    messages = []
    for engine in ("compiled", "numpy"):
        use(monkeypatch, engine)
        if layer_cap and engine == "compiled":  # the per-layer kernel from layer 2 on
            monkeypatch.setattr(cut, "COMPILED_MAX_GEMM", 3 * 4 * 12 * 2)
        with pytest.raises(PartitionTooLarge) as err:
            compute_partition(net, batch, (-2.0, 2.0, -2.0, 2.0), device="cpu",
                              max_regions=cap)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith("layer ")


def test_warm_up_compiles_the_kernels():
    compiled_network.warm_up()
    assert compiled_network.cut_layer.signatures and compiled_network.cut_network.signatures
