"""The /slice page's default window holds the three images with a margin, whatever the
network (issue 44, item 4): a job's kept network (digits, 1x8x8), an uploaded ONNX network
and an uploaded safetensors network of another input shape (3x32x32, through glyphs' test
images).  Each is set up in process as the page's job sets it up, from the page's own
starting controls (the layout's values), without a cut.  A fixed half-width of 0.25 held
none of the three: they lie some 5 from their centroid on a digits plane, some 50 on a
3x32x32 one."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest
from kept_jobs import kept_job
from onnx import TensorProto, helper, numpy_helper

from bnviz.images.networks import build_model
from bnviz.images.saved import save_network
from bnviz.params.slice import SlicePageParams
from bnviz.slices.setup import prepare_slice
from bnviz.web.callbacks.slice import callbacks as cs
from bnviz.web.callbacks.slice import ids
from bnviz.web.layouts import slice as page


def _values(component: Any, found: dict[str, Any]) -> dict[str, Any]:
    """Every component's starting value in the layout, by id."""
    if isinstance(component, (list, tuple)):
        for child in component:
            _values(child, found)
        return found
    if getattr(component, "id", None) is not None and hasattr(component, "value"):
        found[component.id] = component.value
    children = getattr(component, "children", None)
    if children is not None:
        _values(children, found)
    return found


def _onnx_3x32x32() -> bytes:
    """Conv(3 -> 2) -> ReLU -> global average pooling -> 36 logits, on 3x32x32 images."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)
             for name, shape in (("w", (2, 3, 3, 3)), ("fc", (36, 2)), ("b", (36,)))]
    nodes = [helper.make_node("Conv", ["image", "w"], ["c"], pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"], axis=1),
             helper.make_node("Gemm", ["f", "fc", "b"], ["logits"], transB=1)]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("image", TensorProto.FLOAT,
                                                     ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 36])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


def _safetensors_3x32x32(tmp_path) -> bytes:
    model = build_model("cnn", 3, 36, 32, "bn", width=4, seed=0)
    path = tmp_path / "net.safetensors"
    save_network(model, path, {"arch": "cnn", "in_ch": 3, "classes": 36, "size": 32,
                               "mode": "bn", "affine": False, "width": 4})
    return path.read_bytes()


def _uploaded(data: bytes, filename: str, arch: str) -> str:
    contents = "data:application/octet-stream;base64," + base64.b64encode(data).decode()
    uploads, message, is_open = cs.upload(contents, filename, arch, None)
    assert not is_open, message
    return uploads[0]["value"]


@pytest.mark.parametrize("source", ["job", "onnx", "safetensors"])
def test_the_default_window_holds_the_three_images_for_every_source(jobs_home, tmp_path,
                                                                    source):
    start = _values(page.layout(), {})
    if source == "job":
        job = kept_job((("zero_bias", "zero_bias"),))
        arm, data, shape = "zero_bias", start[ids.DATA], (1, 8, 8)
    else:
        data, shape, arm = "glyphs", (3, 32, 32), "upload"  # (images of the upload's shape)
        job = _uploaded(_onnx_3x32x32(), "net.onnx", start[ids.UPLOAD_ARCH]) \
            if source == "onnx" else \
            _uploaded(_safetensors_3x32x32(tmp_path), "net.safetensors", "cnn")
    raw = cs.parse_params(job, arm, "", start[ids.IMAGES], start[ids.BN], start[ids.BATCHES],
                          start[ids.EXTENT], data)
    prepared = prepare_slice(SlicePageParams(**raw))
    assert prepared.nets[0].input_shape == shape
    a0, a1, b0, b1 = prepared.window
    anchors = prepared.plane.anchors
    assert anchors.shape == (3, 2)
    # each image inside, a tenth of the images' spread from every edge
    margin = 0.1 * float((anchors.max(0) - anchors.min(0)).max())
    assert (anchors[:, 0] >= a0 + margin).all() and (anchors[:, 0] <= a1 - margin).all(), \
        (prepared.window, anchors.tolist())
    assert (anchors[:, 1] >= b0 + margin).all() and (anchors[:, 1] <= b1 - margin).all()
    # and the images are where the plane says: the plane goes through them
    chosen = prepared.images.test[list(prepared.through)]
    np.testing.assert_allclose(prepared.plane.points(anchors), chosen, atol=1e-9)
