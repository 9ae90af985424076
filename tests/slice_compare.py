"""Two slices of one window compared region for region (tests of the tiled cut, the slice
job and the vectorised ReLU cut): each layer's regions matched by full code (the parent's
full code, then the layer's own), with their areas and centroids, the facets per unit and
region, the decision cells and the boundary."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from onnx_nets import conv_net
from torch import nn

from bnviz.slices import maxcells
from bnviz.slices.engine import Slice
from bnviz.slices.graph import batch_statistics, forward
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.plane import plane_through_images
from bnviz.slices.torch_import import slice_net

__all__ = ["assert_codes_are_the_network", "assert_same", "full_codes", "onnx_case", "ties_case"]


def assert_codes_are_the_network(net, s, stats=None, margin=1e-7):
    """Every region's own code equals the forward pass at its vertex mean, unit by unit
    where the unit is not within ``margin`` of its switch; returns the units compared."""
    compared = 0
    for lay in s.layers:
        pts = lay.regions.vertex_means()
        x = torch.as_tensor(s.plane.points(pts))
        values = forward(net, x, stats, keep=True)
        op = next(o for o in net.ops if o.name == lay.name)
        h = values[op.inputs[0]].reshape(len(pts), -1).numpy()
        codes = lay.regions.codes
        if lay.kind == "relu":
            sure = np.abs(h) > margin
            assert np.array_equal(codes[sure], (h > 0)[sure])
            compared += int(sure.sum())
        else:
            windows = maxcells.pool_windows(op, tuple(values[op.inputs[0]].shape[1:]))[0]
            vals = np.where(windows[None] >= 0, h[:, np.maximum(windows, 0)], -np.inf)
            top2 = np.sort(vals, axis=2)[:, :, -2:]
            sure = (top2[:, :, 1] - top2[:, :, 0]) > margin
            got = codes.reshape(len(pts), len(windows), -1).argmax(2)
            assert np.array_equal(got[sure], vals.argmax(2)[sure])
            compared += int(sure.sum())
    # the decision cells' classes
    pts = s.predicted.vertex_means()
    logits = forward(net, torch.as_tensor(s.plane.points(pts)), stats).numpy()
    top2 = np.sort(logits, 1)[:, -2:]
    sure = top2[:, 1] - top2[:, 0] > margin
    assert np.array_equal(s.predicted_class[sure], logits.argmax(1)[sure])
    return compared


def onnx_case(tmp_path: Path, kw: dict, mode: str):
    """A slice tests' network (tests/onnx_nets.py's conv_net with ``kw``, 3 channels), a
    seeded plane through three images, half its default window (a few thousand regions) and,
    in train mode, a seeded mini-batch's statistics: (net, plane, window, stats)."""
    kw = dict(kw, channels=3)
    net = load_onnx(conv_net(tmp_path / "net.onnx", **kw))
    size = kw.get("size", 6)
    rng = np.random.default_rng(1)
    plane = plane_through_images(rng.normal(0, 1, (3, 1, size, size)))
    stats = batch_statistics(net, torch.as_tensor(rng.normal(0, 1, (16, 1, size, size)))) \
        if mode == "train" else None
    e = plane.default_window()[1] / 2
    return net, plane, (-e, e, -e, e), stats


def ties_case(order: str, seed: int):
    """test_ties' network (a zero-sum decimal kernel, ReLU and 2x2 max pooling in either
    order, a linear head) on images of flat 4x4 blocks: (net, plane, its default window,
    no statistics)."""
    kernels = np.array([[[0.1, 0.2, -0.3], [0.4, -0.5, 0.1], [0.3, -0.2, -0.1]],
                        [[-0.7, 0.3, 0.2], [0.1, 0.6, -0.4], [0.2, -0.1, -0.2]]])
    conv = nn.Conv2d(1, 2, 3, padding=1, bias=False)
    acts = [nn.ReLU(), nn.MaxPool2d(2)] if order == "relu-pool" else [nn.MaxPool2d(2), nn.ReLU()]
    model = nn.Sequential(conv, *acts, nn.Flatten(), nn.Linear(32, 3)).double()
    with torch.no_grad():
        conv.weight.copy_(torch.as_tensor(kernels)[:, None])
        g = torch.Generator().manual_seed(0)
        model[-1].weight.copy_(torch.randn(3, 32, generator=g, dtype=torch.float64))
        model[-1].bias.zero_()
    blocks = np.random.default_rng(seed).integers(0, 4, (3, 1, 2, 2)).astype(np.float64)
    plane = plane_through_images(np.repeat(np.repeat(blocks, 4, 2), 4, 3))
    return slice_net(model, (1, 8, 8)), plane, plane.default_window(), None


def full_codes(s: Slice) -> list[np.ndarray]:
    """Each layer's regions' full codes: the parent's full code, then the layer's own."""
    prev, out = np.zeros((1, 0), np.uint8), []
    for lay in s.layers:
        prev = np.concatenate([prev[lay.parents], lay.regions.packed_codes], 1)
        out.append(prev)
    return out


def _rows(a: np.ndarray) -> np.ndarray:
    """Rows of an integer array as one sortable key each."""
    a = np.ascontiguousarray(a.astype(np.int64))
    return a.view(np.dtype((np.void, a.shape[1] * 8)))[:, 0] if a.shape[1] else \
        np.zeros(len(a), np.dtype((np.void, 1)))


def _area_centroid(polys) -> np.ndarray:
    """(R, 3): each polygon's area and centroid."""
    v, counts = polys.vertices, np.diff(polys.ptr)
    nxt = np.arange(len(v)) + 1
    nxt[polys.ptr[1:] - 1] = polys.ptr[:-1]
    cross = v[:, 0] * v[nxt, 1] - v[nxt, 0] * v[:, 1]
    poly = np.repeat(np.arange(len(counts)), counts)
    area = 0.5 * np.bincount(poly, weights=cross, minlength=len(counts))
    cx = np.bincount(poly, weights=(v[:, 0] + v[nxt, 0]) * cross, minlength=len(counts))
    cy = np.bincount(poly, weights=(v[:, 1] + v[nxt, 1]) * cross, minlength=len(counts))
    return np.stack([area, cx / (6 * area), cy / (6 * area)], 1)


def _convex(polys) -> bool:
    """Every polygon counter-clockwise and convex (no right turn beyond rounding)."""
    v = polys.vertices
    nxt = np.arange(len(v)) + 1
    nxt[polys.ptr[1:] - 1] = polys.ptr[:-1]
    a, b = v[nxt] - v, v[nxt[nxt]] - v[nxt]
    turn = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    scale = np.hypot(*a.T) * np.hypot(*b.T)
    return bool((turn >= -1e-9 * scale).all())


def _per_key(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys (rows) sorted, and the values summed per key (columns)."""
    uniq, inverse = np.unique(_rows(keys), return_inverse=True)
    sums = np.stack([np.bincount(inverse.ravel(), weights=c, minlength=len(uniq))
                     for c in np.atleast_2d(values.T)], 1)
    return uniq, sums


def _length(seg: np.ndarray) -> np.ndarray:
    return np.hypot(seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1])


def assert_same(tiled: Slice, whole: Slice) -> None:
    """The tiled cut is the untiled one, region for region matched by full code."""
    assert tiled.counts == whole.counts
    a0, a1, b0, b1 = whole.window
    area = (a1 - a0) * (b1 - b0)
    tol = dict(rtol=1e-9, atol=1e-9 * np.sqrt(area))
    codes_t, codes_w = full_codes(tiled), full_codes(whole)
    none = np.zeros((1, 0), np.uint8)
    for i, (lay_t, lay_w) in enumerate(zip(tiled.layers, whole.layers, strict=True)):
        ct, cw = codes_t[i], codes_w[i]
        prev_t, prev_w = (codes_t[i - 1], codes_w[i - 1]) if i else (none, none)
        assert _convex(lay_t.regions)
        kt, st = _per_key(ct, _area_centroid(lay_t.regions))
        kw, sw = _per_key(cw, _area_centroid(lay_w.regions))
        assert len(kt) == len(ct) and np.array_equal(kt, kw), f"{lay_t.name}: codes differ"
        np.testing.assert_allclose(st[:, 0], sw[:, 0], rtol=1e-9, atol=1e-12 * area)
        big = sw[:, 0] > 1e-6 * area  # (a sliver's centroid is ill-conditioned)
        np.testing.assert_allclose(st[big, 1:], sw[big, 1:], **tol)
        np.testing.assert_allclose(lay_t.regions.areas().sum(), area, rtol=1e-12)
        # facets: per unit (window) and region of the previous layer, count and length; a
        # pooling layer's as points (the untiled cut splits a cell's edge where another
        # window's switch meets it: on a tile line, as the ties' are, the tiles' join there)
        relu = lay_t.kind == "relu"
        assert len(lay_t.facets) == len(lay_w.facets) or not relu, lay_t.name
        key = lambda lay, prev: np.concatenate(  # noqa: E731
            [prev[lay.facet_parents].astype(np.int64), lay.facet_units[:, None]], 1)
        ft = _per_key(key(lay_t, prev_t), np.stack([_length(lay_t.facets),
                                                    np.ones(len(lay_t.facets))], 1))
        fw = _per_key(key(lay_w, prev_w), np.stack([_length(lay_w.facets),
                                                    np.ones(len(lay_w.facets))], 1))
        assert np.array_equal(ft[0], fw[0])
        np.testing.assert_allclose(ft[1][:, :1 + relu], fw[1][:, :1 + relu], **tol)
    # decision cells per (last region, class); the boundary per last region
    last_t, last_w = codes_t[-1], codes_w[-1]
    cell = lambda s, last: np.concatenate(  # noqa: E731
        [last[s.predicted_parents].astype(np.int64), s.predicted_class[:, None]], 1)
    assert len(tiled.predicted) == len(whole.predicted)
    pt = _per_key(cell(tiled, last_t), _area_centroid(tiled.predicted)[:, :1])
    pw = _per_key(cell(whole, last_w), _area_centroid(whole.predicted)[:, :1])
    assert np.array_equal(pt[0], pw[0]) and len(pt[0]) == len(tiled.predicted)
    np.testing.assert_allclose(pt[1], pw[1], rtol=1e-9, atol=1e-12 * area)
    assert len(tiled.decision_boundary) == len(whole.decision_boundary)
    bt = _per_key(last_t[tiled.boundary_parents], _length(tiled.decision_boundary)[:, None])
    bw = _per_key(last_w[whole.boundary_parents], _length(whole.decision_boundary)[:, None])
    assert np.array_equal(bt[0], bw[0])
    np.testing.assert_allclose(bt[1], bw[1], **tol)
