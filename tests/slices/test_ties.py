"""Ties in a slice (issue 44, item 4): one region, one code.

Images made of flat 4x4 blocks (repeated pixel values), a convolution whose kernel sums to
zero in decimal (0.1 + 0.2 - 0.3: not exactly zero in binary): on a flat patch every
pre-activation is zero in exact arithmetic, and so is every pooled value of a window inside a
block (a tie of all its inputs).  In float64 they are rounding, some 1e-17, whose sign drew a
line of its own through the plane and broke the tie: the same region came out as two, with
two codes.  The exact cut is compared with an independent count: a dense float64 grid's
patterns, a value counting as zero (and pooled values as tied, the first winning) within
1e-9 of the terms it sums at that point (torch, the kernel taken in absolute value)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from bnviz.slices.engine import cut_slice
from bnviz.slices.plane import plane_through_images
from bnviz.slices.torch_import import slice_net

#: Each output channel's kernel: decimal taps whose sum is zero (in exact arithmetic).
KERNELS = np.array([[[0.1, 0.2, -0.3], [0.4, -0.5, 0.1], [0.3, -0.2, -0.1]],
                    [[-0.7, 0.3, 0.2], [0.1, 0.6, -0.4], [0.2, -0.1, -0.2]]])
GRID = 700
#: A value is zero (and pooled values tied) within this much of the terms summed at a point.
TOLERANCE = 1e-9


def _model(order: str) -> nn.Sequential:
    """conv (2 channels, no bias) -> ReLU -> 2x2 max pooling (or pooling first) -> linear."""
    g = torch.Generator().manual_seed(0)
    conv = nn.Conv2d(1, 2, 3, padding=1, bias=False)
    acts = [nn.ReLU(), nn.MaxPool2d(2)] if order == "relu-pool" else [nn.MaxPool2d(2), nn.ReLU()]
    model = nn.Sequential(conv, *acts, nn.Flatten(), nn.Linear(2 * 4 * 4, 3)).double()
    with torch.no_grad():
        conv.weight.copy_(torch.as_tensor(KERNELS)[:, None])
        model[-1].weight.copy_(torch.randn(3, 32, generator=g, dtype=torch.float64))
        model[-1].bias.zero_()
    return model


def _images(seed: int) -> np.ndarray:
    """Three 8x8 images of flat 4x4 blocks of small whole values."""
    blocks = np.random.default_rng(seed).integers(0, 4, (3, 1, 2, 2)).astype(np.float64)
    return np.repeat(np.repeat(blocks, 4, 2), 4, 3)


def _canonical(model: nn.Sequential, x: torch.Tensor) -> list[np.ndarray]:
    """Each nonlinear layer's pattern at the images ``x``: ReLU units active above the
    tolerance, each pooling window's first input within the tolerance of its maximum."""
    conv = model[0]
    h = conv(x)
    terms = F.conv2d(x.abs(), conv.weight.abs(), padding=1)
    codes = []
    for layer in model[1:3]:
        if isinstance(layer, nn.ReLU):
            codes.append((h > TOLERANCE * terms).reshape(len(x), -1))
            h = torch.relu(h)
        else:
            n, c = h.shape[:2]
            win = h.reshape(n, c, 4, 2, 4, 2).permute(0, 1, 2, 4, 3, 5).reshape(n, c * 16, 4)
            scale = terms.reshape(n, c, 4, 2, 4, 2).permute(0, 1, 2, 4, 3, 5)
            scale = scale.reshape(n, c * 16, 4).amax(2, keepdim=True)
            top = win.max(2, keepdim=True).values
            codes.append((win >= top - TOLERANCE * scale).int().argmax(2))
            h, terms = top[:, :, 0].reshape(n, c, 4, 4), scale[:, :, 0].reshape(n, c, 4, 4)
    return [c.numpy().astype(np.int64) for c in codes]


def _engine_codes(s, q: int) -> list[np.ndarray]:
    """Region ``q`` of the last layer's code, layer by layer (argmax positions for pooling)."""
    out = []
    for layer in reversed(s.layers):
        code = layer.regions.codes[q].astype(np.int64)
        if layer.kind == "maxpool":
            code = code.reshape(-1, layer.window_size).argmax(1)
        out.append(code)
        q = layer.parents[q]
    return out[::-1]


@pytest.mark.parametrize(("order", "seed"), [("relu-pool", 4), ("relu-pool", 12),
                                             ("pool-relu", 4), ("pool-relu", 9)])
def test_a_tie_is_one_region_with_one_code(order, seed):
    """(Seeds whose regions all span 20 grid cells, so the grid's count is the count.)"""
    model = _model(order)
    net = slice_net(model, (1, 8, 8))
    plane = plane_through_images(_images(seed))
    w = plane.default_window()
    s = cut_slice(net, plane, w, device="cpu")
    last = s.layers[-1].regions
    n = len(last)
    # one region, one polygon, one code; none of zero area
    codes = np.stack([np.concatenate(_engine_codes(s, q)) for q in range(n)])
    assert len(np.unique(codes, axis=0)) == n, "two regions share a code"
    corners = {tuple(np.round(last.vertices[last.ptr[q]:last.ptr[q + 1]], 9).ravel())
               for q in range(n)}
    assert len(corners) == n, "two regions share a polygon"
    area = (w[1] - w[0]) * (w[3] - w[2])
    assert last.areas().min() > 1e-9 * area
    # the count is the grid's: every region is met, and the grid meets no other pattern
    t = (np.arange(GRID) + 0.5 + 0.1234567) / GRID
    u = (np.arange(GRID) + 0.5 - 0.2718281) / GRID
    aa, bb = np.meshgrid(w[0] + t * (w[1] - w[0]), w[2] + u * (w[3] - w[2]))
    ab = np.stack([aa.ravel(), bb.ravel()], 1)
    seen = set()
    with torch.no_grad():
        for k in range(0, len(ab), 100_000):
            x = torch.as_tensor(plane.points(ab[k:k + 100_000]))
            seen |= {tuple(r) for r in np.concatenate(_canonical(model, x), 1)}
    assert n == len(seen), f"{n} regions, the grid meets {len(seen)} patterns"
    assert seen == {tuple(r) for r in codes}
    # each region's code is the canonical pattern at a point inside it (its centroid)
    inside = np.array([last.vertices[last.ptr[q]:last.ptr[q + 1]].mean(0) for q in range(n)])
    with torch.no_grad():
        at = np.concatenate(_canonical(model, torch.as_tensor(plane.points(inside))), 1)
    assert (at == codes).all(1).all(), f"{int((at != codes).any(1).sum())} regions' codes"
    cell = (w[1] - w[0]) * (w[3] - w[2]) / GRID**2
    assert last.areas().min() > 20 * cell  # (so the grid could not miss a region)


@pytest.mark.parametrize("order", ["relu-pool", "pool-relu"])
def test_the_snaps_compiled_tests_are_torchs(order, monkeypatch):
    """The snap's first test and the regions' bounds by the compiled kernels (a CPU's) or by
    torch's ops (a GPU's, or a process without the kernels): the same ties snapped, so the
    same regions, codes and polygons, on the planes of the test above."""
    from bnviz.slices import ties

    net = slice_net(_model(order), (1, 8, 8))
    for seed in (4, 9, 12):
        plane = plane_through_images(_images(seed))
        w = plane.default_window()
        compiled = cut_slice(net, plane, w, device="cpu")
        with monkeypatch.context() as m:
            m.setattr(ties, "_compiled_for", lambda x: None)
            by_torch = cut_slice(net, plane, w, device="cpu")
        assert compiled.counts == by_torch.counts
        for a, b in zip(compiled.layers, by_torch.layers, strict=True):
            np.testing.assert_array_equal(a.regions.codes, b.regions.codes)
            np.testing.assert_array_equal(a.regions.vertices, b.regions.vertices)
            np.testing.assert_array_equal(a.parents, b.parents)
