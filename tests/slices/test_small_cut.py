"""A small slice never loads numba (issue 45's fixed cost): the max-pooling and decision
cells run the kernel's own Python, the ReLU layers the vectorised cut, below
``SMALL_CUT_REGIONS`` polygons. The uncompiled cells are the compiled ones, output for
output, and a whole ``bnviz slice`` process of a tiny window imports no numba."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from onnx_nets import conv_net

from bnviz.slices import engine, maxcells
from bnviz.slices.engine import cut_slice
from bnviz.slices.graph import batch_statistics
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.plane import plane_through_images


@pytest.mark.parametrize("mode", ["eval", "train"])
def test_the_uncompiled_cells_are_the_compiled_ones(tmp_path, monkeypatch, mode):
    net = load_onnx(conv_net(tmp_path / "net.onnx", channels=3, maxpool=True, residual=True,
                             leaky=True))
    rng = np.random.default_rng(2)
    plane = plane_through_images(rng.normal(0, 1, (3, 1, 6, 6)))
    stats = batch_statistics(net, torch.as_tensor(rng.normal(0, 1, (16, 1, 6, 6)))) \
        if mode == "train" else None
    compiled = maxcells._jitted()
    calls = []

    def both(*args):
        got, want = maxcells._max_cells(*args), compiled(*args)
        assert len(got) == len(want) == 8
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        calls.append(len(args[0]) - 1)
        return want

    monkeypatch.setattr(engine, "max_cells", both)
    e = plane.default_window()[1] / 2
    s = cut_slice(net, plane, (-e, e, -e, e), stats, device="cpu")
    assert len(calls) == 2  # the pooling layer and the decision cells
    assert max(calls) > maxcells.SMALL_CUT_REGIONS  # past the small cut's bound too
    assert any(len(lay.facets) for lay in s.layers if lay.kind == "maxpool")  # switches


def test_a_small_cut_takes_the_uncompiled_paths(tmp_path, monkeypatch):
    net = load_onnx(conv_net(tmp_path / "net.onnx", channels=3, maxpool=True))
    plane = plane_through_images(np.random.default_rng(3).normal(0, 1, (3, 1, 6, 6)))
    monkeypatch.setattr(maxcells, "_compiled", None)  # as a fresh process has it
    monkeypatch.setattr(maxcells, "_jitted", lambda: pytest.fail("numba was loaded"))
    monkeypatch.setattr(engine.kernels, "require", lambda: pytest.fail("numba was loaded"))
    s = cut_slice(net, plane, (-1e-3, 1e-3, -1e-3, 1e-3), device="cpu")
    assert max(s.counts) <= maxcells.SMALL_CUT_REGIONS


CHECK = """
import sys
from bnviz.cli import main
code = main(sys.argv[1:])
print("NUMBA" if "numba" in sys.modules else "NO-NUMBA", code)
print(sorted(m for m in ("scipy", "numpy.f2py") if m in sys.modules))
"""


def test_a_tiny_window_s_whole_process_imports_no_numba(tmp_path):
    model = conv_net(tmp_path / "net.onnx", channels=8, size=12, residual=True, maxpool=True,
                     leaky=True)
    plane = plane_through_images(np.random.default_rng(0).normal(0, 1, (3, 1, 12, 12)))
    np.savez(tmp_path / "plane.npz", origin=plane.origin, u=plane.u, v=plane.v)
    out = subprocess.run(
        [sys.executable, "-c", CHECK, "slice", "--model", str(model), "--plane",
         str(tmp_path / "plane.npz"), "--extent", "0.005", "--format", "summary", "--quiet"],
        capture_output=True, text=True, timeout=120, check=True).stdout.splitlines()
    summary = json.loads(out[0])
    assert summary["regions"][-1] >= 1 and summary["decision_boundary_segments"] >= 0
    assert out[1] == "NO-NUMBA 0"
    # nor scipy (the by-unit matrices' sparse format, and the numpy.f2py it pulls in:
    # 0.13-0.16 s of the process)
    assert out[2] == "[]"
