"""A conv or linear layer on a ReLU cut's output maps by differences from each region's
common code (bnviz.slices.activated_linear, issue 45): the same outputs as the op applied
to the faces' maps, to float64 rounding, whatever the strides, dilations, groups, padding,
slope and regions; refused where it would not pay; and the slice cut with it is the cut
without it, region for region, on the slice tests' networks in eval and train mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from slice_compare import assert_codes_are_the_network, assert_same, onnx_case, ties_case

from bnviz.slices import activated_linear
from bnviz.slices.activated_linear import linear_by_differences
from bnviz.slices.engine import cut_slice
from bnviz.slices.graph import Op, SliceNet, linear_part
from bnviz.slices.plane import plane_through_images
from bnviz.slices.slice_mesh import ActivatedRows

CONVS = [  # (C, H, W), O, groups, kernel, stride, dilation, pads (top, left, bottom, right)
    ((3, 6, 6), 4, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((4, 8, 8), 4, 1, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),  # the chain's strided conv
    ((4, 5, 7), 6, 2, (3, 2), (2, 1), (1, 1), (0, 1, 0, 1)),
    ((2, 8, 8), 2, 2, (3, 3), (1, 2), (2, 1), (2, 0, 1, 1)),  # asymmetric padding
    ((6, 4, 4), 3, 3, (5, 5), (1, 1), (1, 1), (2, 2, 2, 2)),  # kernel wider than the map
]


def _rows(shape, regions: int, faces: int, slope: float, seed: int) -> ActivatedRows:
    """Faces of ``regions`` regions (in runs, as a cut makes them), the regions' maps random:
    a face's code is its region's but on the few units whose lines cross the region (8 %),
    where it is random, as a cut's faces are."""
    rng = np.random.default_rng(seed)
    units = int(np.prod(shape))
    planes = rng.normal(0, 1, (3, regions, units))
    parent = np.sort(rng.integers(0, regions, faces))
    base = rng.random((regions, units)) < 0.6
    crossing = (rng.random((regions, units)) < 0.08)[parent]
    codes = np.where(crossing, rng.random((faces, units)) < 0.5, base[parent])
    packed = np.packbits(codes, axis=1)
    return ActivatedRows(planes, parent, packed, slope, tuple(shape), torch.device("cpu"))


def _direct(op: Op, rows: ActivatedRows, s: int, e: int) -> torch.Tensor:
    x = rows(s, e)
    if op.kind == "linear":
        x = x.reshape(3, e - s, -1)
    y = linear_part(op, [x.reshape(3 * (e - s), *x.shape[2:])])
    return y.reshape(3, e - s, *y.shape[1:])


@pytest.mark.parametrize("slope", [0.0, 0.1, -0.7, 2.5])
@pytest.mark.parametrize("shape, o, groups, kernel, stride, dilation, pads", CONVS)
def test_a_conv_by_differences_is_the_conv_of_the_faces(shape, o, groups, kernel, stride,
                                                        dilation, pads, slope):
    rng = np.random.default_rng(o + len(kernel))
    op = Op("conv", "c", ("x",), "y", {
        "weight": rng.normal(0, 1, (o, shape[0] // groups, *kernel)), "bias": None,
        "stride": stride, "pads": pads, "dilation": dilation, "groups": groups})
    rows = _rows(shape, 3, 400, slope, seed=o)
    for s, e in ((0, 400), (37, 301)):
        got = linear_by_differences(op, rows, s, e, None)
        assert got is not None  # it ran: a few flips from one code per region pays
        want = _direct(op, rows, s, e)
        assert got.shape == want.shape
        scale = float(want.abs().max())
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-13 * scale)


def test_a_linear_layer_by_differences_is_the_layer_of_the_faces():
    rng = np.random.default_rng(3)
    op = Op("linear", "fc", ("x",), "y", {"weight": rng.normal(0, 1, (5, 48)),
                                          "bias": np.zeros(5)})
    rows = _rows((3, 4, 4), 2, 300, 0.0, seed=5)
    got = linear_by_differences(op, rows, 0, 300, None)
    assert got is not None
    want = _direct(op, rows, 0, 300)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0,
                               atol=1e-13 * float(want.abs().max()))


def test_faces_of_many_regions_or_with_many_flips_run_the_op_directly():
    rng = np.random.default_rng(0)
    op = Op("conv", "c", ("x",), "y", {"weight": rng.normal(0, 1, (4, 3, 3, 3)),
                                      "bias": None, "stride": (1, 1), "pads": (1, 1, 1, 1),
                                      "dilation": (1, 1), "groups": 1})
    shape = (3, 6, 6)
    assert linear_by_differences(op, _rows(shape, 1000, 300, 0.0, 1), 0, 300, None) is None
    flips = _rows(shape, 1, 300, 0.0, 2)
    flips.packed = np.packbits(rng.random((300, 108)) < 0.5, axis=1)  # codes at random
    assert linear_by_differences(op, flips, 0, 300, None) is None
    assert linear_by_differences(op, _rows(shape, 1, 300, 0.0, 3), 0, 300, None) is not None


CASES = {"strided": dict(), "residual": dict(residual=True),
         "leaky": dict(leaky=True, residual=True), "maxpool": dict(maxpool=True),
         "bn-after-relu": dict(bn_after_act=True, residual=True, seed=6)}


def _case(tmp_path, case: str, mode: str):
    """The network, plane, window and statistics: an ONNX net of CASES, or test_ties' net on
    flat blocks (a zero-sum kernel: units exactly zero, a linear head after the ReLU)."""
    if case.startswith("ties"):
        return ties_case("pool-relu", int(case.split("-")[1]))
    return onnx_case(tmp_path, CASES[case], mode)


@pytest.mark.parametrize(("case", "mode"), [(c, m) for c in sorted(CASES)
                                            for m in ("eval", "train")]
                         + [("ties-4", "eval"), ("ties-9", "eval")])
def test_the_cut_by_differences_is_the_direct_cut(tmp_path, monkeypatch, case, mode):
    net, plane, window, stats = _case(tmp_path, case, mode)
    ran = _forced(monkeypatch, True)
    with_differences = cut_slice(net, plane, window, stats, device="cpu")
    assert ran, "the differences never ran"
    ran = _forced(monkeypatch, False)
    direct = cut_slice(net, plane, window, stats, device="cpu")
    assert not ran
    assert_same(with_differences, direct)


def _op_net(seed: int, bias2) -> SliceNet:
    """A plain ReLU (slope 0) then a conv with ``bias2`` (None or zeros: no BN folded into
    it) then a ReLU: outputs whose inputs are all off are exactly zero, and must stay so."""
    rng = np.random.default_rng(seed)

    def conv(name, i, o, cin, bias):
        return Op("conv", name, (i,), o, {
            "weight": rng.normal(0, 1 / np.sqrt(9 * cin), (3, cin, 3, 3)), "bias": bias,
            "stride": (1, 1), "pads": (1, 1, 1, 1), "dilation": (1, 1), "groups": 1})

    ops = (conv("c1", "image", "h1", 1, rng.normal(-0.3, 0.3, 3)),
           Op("relu", "a1", ("h1",), "r1", {"slope": 0.0}), conv("c2", "r1", "h2", 3, bias2),
           Op("relu", "a2", ("h2",), "r2", {"slope": 0.0}), Op("gap", "gap", ("r2",), "g", {}),
           Op("flatten", "fl", ("g",), "f", {}),
           Op("linear", "fc", ("f",), "logits", {"weight": rng.normal(0, 1, (3, 3)),
                                                 "bias": rng.normal(0, 0.1, 3)}))
    return SliceNet(ops, "image", "logits", (1, 6, 6))


def _forced(monkeypatch, on: bool) -> list:
    """Differences wherever they can run (on) or nowhere, after the compiled ReLU cut at
    every size (its faces' maps are made a chunk at a time: the vectorised cut's small
    outputs come whole); returns the (s, e) they ran on."""
    monkeypatch.setattr("bnviz.slices.engine.VECTORISED_RELU_CUT", False)
    monkeypatch.setattr(activated_linear, "DIFFERING_SHARE", np.inf if on else -1.0)
    monkeypatch.setattr(activated_linear, "MIN_FACES_A_REGION", 1)
    ran = []
    real = activated_linear.linear_by_differences

    def counted(op, rows, s, e, stats):
        out = real(op, rows, s, e, stats)
        if out is not None:
            ran.append((s, e))
        return out

    monkeypatch.setattr("bnviz.slices.engine.linear_by_differences", counted)
    return ran


@pytest.mark.parametrize("bias2", ["none", "zeros"])
@pytest.mark.parametrize("seed", [2, 4, 5])
def test_dead_units_stay_dead_through_a_bias_free_conv(monkeypatch, seed, bias2):
    """(A majority reference left 1e-16 of its terms where the direct conv gives 0: 8 to 16
    extra regions here, and 485 of 7 209 regions whose code was not the network's.)"""
    net = _op_net(seed, None if bias2 == "none" else np.zeros(3))
    plane = plane_through_images(np.random.default_rng(seed).normal(0, 1, (3, 1, 6, 6)))
    e = plane.default_window()[1] / 2
    ran = _forced(monkeypatch, True)
    with_differences = cut_slice(net, plane, (-e, e, -e, e), device="cpu")
    assert ran
    _forced(monkeypatch, False)
    assert_same(with_differences, cut_slice(net, plane, (-e, e, -e, e), device="cpu"))
    assert assert_codes_are_the_network(net, with_differences) > 1000


@pytest.mark.parametrize("case", ["residual", "maxpool"])
def test_chunks_by_differences_are_the_direct_cut(tmp_path, monkeypatch, case):
    net, plane, window, stats = onnx_case(tmp_path, CASES[case], "train")
    monkeypatch.setattr("bnviz.slices.engine.CHUNK_BYTES", 300_000)  # 57 faces a chunk
    ran = _forced(monkeypatch, True)
    chunked = cut_slice(net, plane, window, stats, device="cpu")
    assert any(s > 0 for s, _ in ran)  # chunks that start past the cut's first face
    _forced(monkeypatch, False)
    assert_same(chunked, cut_slice(net, plane, window, stats, device="cpu"))
