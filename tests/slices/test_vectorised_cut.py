"""The slice's ReLU layers cut by the vectorised torch cut (the GPU's path, issue 45 item 5),
forced on the CPU: the same partition as the compiled kernel's, region for region (full
code, area, centroid), with the same facets, decision cells and boundary, on the slice
tests' networks in eval and train mode; its refusals name the layer as the compiled cut's
do."""

from __future__ import annotations

import pytest
from slice_compare import assert_same, onnx_case

from bnviz.core.limits import PartitionTooLarge
from bnviz.slices import engine
from bnviz.slices.engine import cut_slice

CASES = {"conv": dict(stride2=False), "residual": dict(residual=True),
         "leaky": dict(leaky=True, residual=True), "maxpool": dict(maxpool=True),
         "bn-after-relu": dict(bn_after_act=True, residual=True, seed=6)}


def _setup(tmp_path, case: str, mode: str):
    return onnx_case(tmp_path, CASES[case], mode)


def _cut(monkeypatch, vectorised: bool, *args, **kw):
    monkeypatch.setattr(engine, "VECTORISED_RELU_CUT", vectorised)
    return cut_slice(*args, device="cpu", **kw)


@pytest.mark.parametrize("mode", ["eval", "train"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_vectorised_relu_cut_is_the_compiled_one(tmp_path, monkeypatch, case, mode):
    net, plane, window, stats = _setup(tmp_path, case, mode)
    compiled = _cut(monkeypatch, False, net, plane, window, stats)
    assert sum(compiled.counts) > 500
    vectorised = _cut(monkeypatch, True, net, plane, window, stats)
    assert vectorised.counts == compiled.counts
    assert_same(vectorised, compiled)


def test_the_vectorised_cut_refuses_as_the_compiled_one(tmp_path, monkeypatch):
    net, plane, window, _ = _setup(tmp_path, "residual", "eval")
    for vectorised in (False, True):
        with pytest.raises(PartitionTooLarge, match=r"^\w+: .*use a smaller window$"):
            _cut(monkeypatch, vectorised, net, plane, window, max_regions=50)
