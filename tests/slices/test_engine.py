"""The exact cut of image networks on a plane (bnviz.slices): every region's code against an
independent float64 forward pass at a point inside it (torch on the same ops, and the ONNX
file's own reference evaluator for the import), region counts against Regioncam on the
network unrolled to dense layers, max pooling against a dense grid of argmax patterns, train
mode's statistics against torch's batch norm, chunks against one pass, the grid's count."""

from __future__ import annotations

import numpy as np
import onnx.reference
import pytest
import regioncam
import torch
import torch.nn.functional as F
from onnx_nets import conv_net
from slice_compare import assert_codes_are_the_network

from bnviz.slices import engine, maxcells
from bnviz.slices.engine import cut_slice
from bnviz.slices.estimate import crofton_regions
from bnviz.slices.graph import Op, SliceNet, batch_statistics, conv_matrix, forward
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.plane import Plane, plane_through_images

CASES = [dict(), dict(residual=True), dict(leaky=True, residual=True), dict(maxpool=True),
         dict(maxpool=True, stride2=False, seed=3),
         # a ResNet stem's padded pooling (k3 s2 p1), ceil_mode, a BN after a ReLU
         dict(maxpool=True, stride2=False, size=7, pool=(3, 2, 1, False), seed=4),
         dict(maxpool=True, stride2=False, size=5, pool=(2, 2, 1, True), seed=5),
         dict(bn_after_act=True, residual=True, seed=6)]


def _images(n: int, size: int = 6, seed: int = 1) -> np.ndarray:
    """Gaussian images (the nets' size: kw["size"] where a case sets it)."""
    return np.random.default_rng(seed).normal(0, 1, (n, 1, size, size))


def _net(tmp_path, **kw):
    return load_onnx(conv_net(tmp_path / "net.onnx", **kw))


@pytest.mark.parametrize("kw", CASES)
def test_import_runs_as_the_onnx_reference_evaluator(tmp_path, kw):
    path = conv_net(tmp_path / "net.onnx", **kw)
    x = _images(5, kw.get("size", 6))
    want = onnx.reference.ReferenceEvaluator(str(path)).run(
        None, {"image": x.astype(np.float32)})[0]
    got = forward(load_onnx(path), torch.as_tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_every_region_code_is_the_forward_pass_inside_it(tmp_path, kw, mode):
    net = _net(tmp_path, **kw)
    size = kw.get("size", 6)
    plane = plane_through_images(_images(3, size))
    stats = batch_statistics(net, torch.as_tensor(_images(16, size, seed=7))) \
        if mode == "train" else None
    s = cut_slice(net, plane, plane.default_window(), stats, device="cpu")
    assert all(c > 1 for c in s.counts[:1])
    assert assert_codes_are_the_network(net, s, stats) > 100
    # each layer keeps its distinct codes once (the codes checked above are read through them)
    for lay in s.layers:
        assert len(lay.regions.code_rows) == len(np.unique(lay.regions.packed_codes, axis=0))
    assert len(s.layers[-1].regions.code_rows) < s.counts[-1]  # inherited regions share
    # nested: each region's parent contains its vertex mean
    for prev, lay in zip(s.layers, s.layers[1:], strict=False):
        assert lay.parents.min() >= 0 and lay.parents.max() < len(prev.regions)


def test_regions_tile_the_window(tmp_path):
    net = _net(tmp_path, residual=True)
    plane = plane_through_images(_images(3))
    w = plane.default_window()
    s = cut_slice(net, plane, w, device="cpu")
    area = (w[1] - w[0]) * (w[3] - w[2])
    for lay in s.layers:
        assert lay.regions.areas().min() > 0
        assert abs(lay.regions.areas().sum() - area) < 1e-9 * area


@pytest.mark.parametrize("kw", [dict(), dict(leaky=True), dict(stride2=False, seed=5)])
def test_counts_equal_regioncam_on_the_unrolled_network(tmp_path, kw):
    """Conv and BN unrolled to dense float32 layers for Regioncam on [-E, E]^2; the plane is
    its first linear layer.  Counts within 0.1% (Regioncam works in float32)."""
    net = _net(tmp_path, **kw)
    plane = plane_through_images(_images(3))
    e = float(np.abs(plane.anchors).max()) * 1.25
    s = cut_slice(net, plane, (-e, e, -e, e), device="cpu")
    cam = regioncam.Regioncam(size=e)
    shapes = net.shapes()
    cam.linear(np.stack([plane.u.ravel(), plane.v.ravel()]).astype(np.float32),
               plane.origin.ravel().astype(np.float32))
    want, pending = [], None
    for op in net.ops:
        shape = shapes[op.inputs[0]]
        if op.kind == "conv":
            m = conv_matrix(op, shape)
            pending = (m, np.zeros(m.shape[0]))
        elif op.kind == "bn":
            mean, var = op.attrs["mean"], op.attrs["var"]
            scale = op.attrs["gamma"] / np.sqrt(var + op.attrs["eps"])
            per = int(np.prod(shape[1:]))
            sc, sh = np.repeat(scale, per), np.repeat(op.attrs["beta"] - scale * mean, per)
            m, b = pending
            cam.linear((m * sc[:, None]).T.astype(np.float32), (b * sc + sh).astype(np.float32))
            pending = None
        elif op.kind == "relu":
            if op.attrs["slope"]:
                cam.leaky_relu(op.attrs["slope"])
            else:
                cam.relu()
            want.append(cam.num_faces)
        else:
            break
    got = s.counts[:len(want)]
    assert len(want) >= 1
    for g, w in zip(got, want, strict=True):
        assert abs(g - w) <= max(1, 0.001 * w), (got, want)


def test_max_pooling_regions_are_the_argmax_patterns_of_a_dense_grid(tmp_path):
    """Conv -> BN -> ReLU -> MaxPool: every (ReLU pattern, argmax pattern) a 700 x 700 grid
    meets is the code of one exact region, and every exact region wider than a few grid cells
    is met (the grid misses only slivers)."""
    net = _net(tmp_path, maxpool=True, stride2=False, channels=2, size=4, seed=2)
    plane = plane_through_images(_images(3, size=4))
    w = plane.default_window()
    s = cut_slice(net, plane, w, device="cpu")
    relu_layer, pool_layer = s.layers[0], s.layers[1]
    pool = next(op for op in net.ops if op.kind == "maxpool")
    relu = next(op for op in net.ops if op.kind == "relu")
    shape = net.shapes()[pool.inputs[0]]
    windows = maxcells.pool_windows(pool, shape)[0]
    arg = pool_layer.regions.codes.reshape(len(pool_layer.regions), len(windows), -1).argmax(2)
    exact = np.concatenate([relu_layer.regions.codes[pool_layer.parents],
                            np.take_along_axis(windows[None], arg[:, :, None], 2)[:, :, 0]], 1)
    n = 700
    t = (np.arange(n) + 0.5) / n
    aa, bb = np.meshgrid(w[0] + t * (w[1] - w[0]), w[2] + t * (w[3] - w[2]))
    x = torch.as_tensor(plane.points(np.stack([aa.ravel(), bb.ravel()], 1)))
    v = forward(net, x, keep=True)
    _, idx = F.max_pool2d(v[pool.inputs[0]], 2, 2, return_indices=True)
    flat = idx + torch.arange(shape[0])[None, :, None, None] * shape[1] * shape[2]
    grid = np.concatenate([(v[relu.inputs[0]] > 0).reshape(len(x), -1).numpy(),
                           flat.reshape(len(x), -1).numpy()], 1)
    exact_keys = {tuple(r) for r in exact.astype(np.int64)}
    grid_keys = {tuple(r) for r in np.unique(grid.astype(np.int64), axis=0)}
    assert len(exact_keys) == len(exact)  # one region per pattern (convex cells)
    assert grid_keys <= exact_keys
    cell = ((w[1] - w[0]) / n) * ((w[3] - w[2]) / n)
    big = {tuple(r) for r, a in zip(exact.astype(np.int64), pool_layer.regions.areas(),
                                    strict=True) if a > 50 * cell}
    assert big <= grid_keys and len(big) > 100


def test_chunks_give_the_same_partition(tmp_path, monkeypatch):
    net = _net(tmp_path, residual=True, maxpool=True)
    plane = plane_through_images(_images(3))
    w = plane.default_window()
    whole = cut_slice(net, plane, w, device="cpu")
    monkeypatch.setattr(engine, "CHUNK_BYTES", 20_000)
    parts = cut_slice(net, plane, w, device="cpu")
    assert parts.counts == whole.counts
    for a, b in zip(whole.layers, parts.layers, strict=True):
        assert np.isclose(a.regions.areas().sum(), b.regions.areas().sum())
        key = lambda lay: sorted(map(tuple, np.round(lay.regions.vertex_means(), 9)))  # noqa
        assert key(a) == key(b)
    assert_codes_are_the_network(net, parts)
    assert len(parts.decision_boundary) == len(whole.decision_boundary)


def test_train_mode_statistics_are_torchs_batch_norm_layer_by_layer(tmp_path):
    net = _net(tmp_path, residual=True)
    batch = torch.as_tensor(_images(12, seed=4))
    stats = batch_statistics(net, batch)
    # torch: every BN in training mode (biased variance normalises)
    values = {net.input: batch}
    for op in net.ops:
        xs = [values[i] for i in op.inputs]
        if op.kind == "bn":
            a = op.attrs
            mean, var = stats[op.name]
            np.testing.assert_allclose(mean, xs[0].mean((0, 2, 3)).numpy(), atol=1e-12)
            values[op.output] = F.batch_norm(
                xs[0], None, None, torch.as_tensor(a["gamma"]), torch.as_tensor(a["beta"]),
                training=True, eps=a["eps"])
        else:
            values[op.output] = forward(type(net)((op,), op.inputs[0], op.output,
                                                  net.input_shape), xs[0]) \
                if len(op.inputs) == 1 else xs[0] + xs[1]
    np.testing.assert_allclose(forward(net, batch, stats).numpy(),
                               values[net.output].numpy(), atol=1e-10)


def test_the_grids_count_is_close_to_the_exact_count(tmp_path):
    """The grid's rough count (the density pictures'; the caps read bnviz.slices.cost)."""
    net = _net(tmp_path, residual=True, channels=6, size=8)
    plane = plane_through_images(_images(3, size=8))
    w = plane.default_window()
    exact = cut_slice(net, plane, w, device="cpu").counts[-1]
    est = crofton_regions(net, plane, w, grid=128)
    assert exact / 2 <= est <= 2 * exact


def test_region_cap_names_the_layer(tmp_path):
    net = _net(tmp_path)
    plane = plane_through_images(_images(3))
    with pytest.raises(ValueError, match=r"^a1: .*more than 5 regions.*smaller window$"):
        cut_slice(net, plane, plane.default_window(), device="cpu", max_regions=5)


def test_plane_through_images_goes_through_them():
    x = _images(3)
    plane = plane_through_images(x)
    np.testing.assert_allclose(plane.points(plane.anchors), x, atol=1e-12)
    assert abs(float(plane.u.ravel() @ plane.v.ravel())) < 1e-12
    assert np.allclose(plane.origin, x.mean(0))
    with pytest.raises(ValueError, match="one line"):
        plane_through_images(np.stack([x[0], x[1], 2 * x[1] - x[0]]))


def test_degenerate_plane_through_a_point_is_a_plane(tmp_path):
    """A plane with u = e_i, v = e_j through 0: layer-1 lines of every unit that does not see
    pixel i or j are absent, so the cut is still exact (codes) with many parallel lines."""
    net = _net(tmp_path)
    u = np.zeros((1, 6, 6))
    v = np.zeros((1, 6, 6))
    u[0, 2, 2] = v[0, 3, 3] = 1.0
    plane = Plane(np.zeros((1, 6, 6)), u, v, np.zeros((1, 2)))
    s = cut_slice(net, plane, (-2.0, 2.0, -2.0, 2.0), device="cpu")
    assert_codes_are_the_network(net, s)


def test_a_bias_op_leaves_its_input_to_its_other_readers():
    """A ReLU's output read by a bias op (an ONNX Add of a constant) and by a conv: the bias
    op's output is a new tensor (it was its input itself, so the engine added the bias to
    the ReLU's maps in place, and the conv read them biased: 1 902 of 1 902 regions whose
    code was not the network's)."""
    rng = np.random.default_rng(0)

    def conv(name, i, o, cin):
        return Op("conv", name, (i,), o, {"weight": rng.normal(0, 0.5, (3, cin, 3, 3)),
                                          "bias": rng.normal(0, 0.3, 3), "stride": (1, 1),
                                          "pads": (1, 1, 1, 1), "dilation": (1, 1),
                                          "groups": 1})

    ops = (conv("c1", "image", "h1", 1), Op("relu", "a1", ("h1",), "r1", {"slope": 0.0}),
           Op("bias", "bb", ("r1",), "b", {"bias": np.array([5.0, -5.0, 3.0])}),
           conv("c2", "r1", "h2", 3), Op("add", "ad", ("b", "h2"), "s", {}),
           Op("relu", "a2", ("s",), "r2", {"slope": 0.0}), Op("gap", "gp", ("r2",), "g", {}),
           Op("flatten", "fl", ("g",), "f", {}),
           Op("linear", "fc", ("f",), "logits", {"weight": rng.normal(0, 1, (3, 3)),
                                                 "bias": np.zeros(3)}))
    net = SliceNet(ops, "image", "logits", (1, 6, 6))
    plane = plane_through_images(rng.normal(0, 1, (3, 1, 6, 6)))
    e = plane.default_window()[1] / 2
    s = cut_slice(net, plane, (-e, e, -e, e), device="cpu")
    assert assert_codes_are_the_network(net, s) > 1000
