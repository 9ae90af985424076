"""What a slice refuses, and how: hostile files (ONNX and safetensors that do not fit, too
large, unreadable), crafted page values (hover, click, layer, data set), all one line or no
change, never a traceback, and nothing kept of a refused upload."""

from __future__ import annotations

import base64
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_nets import conv_net

from bnviz.slices.onnx_import import load_onnx
from bnviz.web.callbacks.slice import callbacks as cs


def _model(path, nodes, inits, shape=(1, 1, 4, 4), out=3):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, out])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _gemm(name_in: str, features: int, out: int = 3):
    w = numpy_helper.from_array(np.ones((out, features), np.float32), "w")
    return helper.make_node("Gemm", [name_in, "w"], ["y"], transB=1), w


def test_an_onnx_without_nonlinear_layers_is_refused(tmp_path):
    flat = helper.make_node("Flatten", ["x"], ["f"], axis=1)
    gemm, w = _gemm("f", 16)
    with pytest.raises(ValueError, match="no ReLU or max pooling"):
        load_onnx(_model(tmp_path / "lin.onnx", [flat, gemm], [w]))


def test_a_constant_added_that_is_not_per_channel_is_refused(tmp_path):
    c = numpy_helper.from_array(np.ones(4, np.float32), "c")  # (W,): broadcast over columns
    nodes = [helper.make_node("Add", ["x", "c"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"], axis=1)]
    gemm, w = _gemm("f", 16)
    with pytest.raises(ValueError, match=r"constant of shape \(4,\).*per channel"):
        load_onnx(_model(tmp_path / "add.onnx", [*nodes, gemm], [c, w]))


def test_a_reshape_not_to_n_by_features_is_refused(tmp_path):
    shape = numpy_helper.from_array(np.array([5, -1], np.int64), "shape")
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["f"])]
    gemm, w = _gemm("f", 16)
    with pytest.raises(ValueError, match=r"Reshape to \(N, -1\)"):
        load_onnx(_model(tmp_path / "reshape.onnx", [*nodes, gemm], [shape, w]))


def test_external_data_is_never_read(tmp_path):
    path = conv_net(tmp_path / "net.onnx")
    model = onnx.load(str(path))
    onnx.save_model(model, str(tmp_path / "ext.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    with pytest.raises(ValueError, match="external data"):
        load_onnx(tmp_path / "ext.onnx")


def test_a_network_too_large_to_slice_is_refused_from_its_shapes(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"], axis=1)]
    gemm, w = _gemm("f", 1)
    with pytest.raises(ValueError, match="larger than a slice reads"):
        load_onnx(_model(tmp_path / "big.onnx", [*nodes, gemm], [w], shape=(1, 1, 600, 600)))


def test_a_malformed_attribute_is_one_line(tmp_path):
    nodes = [helper.make_node("Constant", [], ["k"], value_float=1.0),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"], axis=1)]
    gemm, w = _gemm("f", 16)
    with pytest.raises(ValueError) as info:
        load_onnx(_model(tmp_path / "const.onnx", [*nodes, gemm], [w]))
    assert "\n" not in str(info.value)


def _contents(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def test_refused_uploads_keep_nothing(jobs_home, tmp_path):
    from safetensors.numpy import save_file

    save_file({"w": np.ones(3, np.float32)}, str(tmp_path / "m.safetensors"),
              metadata={"arch": json.dumps("resnet9"), "in_ch": json.dumps(1),
                        "classes": json.dumps(10), "size": json.dumps("8"),
                        "mode": json.dumps("bn"), "affine": json.dumps(False),
                        "width": json.dumps(10**9)})
    bad_meta = (tmp_path / "m.safetensors").read_bytes()
    for data, name, words in (
            (bad_meta, "m.safetensors", "metadata is not a bnviz network"),
            ((tmp_path / "m.safetensors").read_bytes()[:40], "m.safetensors", "safetensors"),
            (b"\x08\x07" * 50, "x.onnx", "ONNX"),
    ):
        uploads, message, is_open = cs.upload(_contents(data), name, "resnet9", None)
        assert is_open and words in message and "\n" not in message, message
    assert not list((jobs_home / "uploads").glob("*")) if (jobs_home / "uploads").exists() \
        else True
    _, message, is_open = cs.upload("no comma", "x.onnx", "resnet9", None)
    assert is_open and "could not be read" in message


def test_deeply_nested_metadata_is_one_line_not_a_recursion_error(jobs_home, tmp_path):
    """An uploaded network's metadata is outside JSON: read by the one strict reader
    (bnviz.service.guard.strict_json), so 100,000 levels of nesting are refused in one line,
    not a RecursionError past ``except ValueError`` (issue 32)."""
    from safetensors.numpy import save_file

    from bnviz.slices.torch_import import load_network

    meta = {k: json.dumps(v) for k, v in (("arch", "resnet9"), ("in_ch", 1), ("classes", 10),
                                           ("size", 8), ("mode", "bn"), ("affine", False))}
    meta["width"] = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.safetensors"
    save_file({"w": np.ones(3, np.float32)}, str(path), metadata=meta)
    with pytest.raises(ValueError, match="unreadable metadata") as info:
        load_network(path)
    assert "\n" not in str(info.value)
    uploads, message, is_open = cs.upload(_contents(path.read_bytes()), "deep.safetensors",
                                          "resnet9", None)
    assert is_open and "\n" not in message, message


@pytest.mark.parametrize("data", [None, 3, "x", {"points": "x"}, {"points": [1]},
                                  {"points": [{"x": "nan", "y": 1}]},
                                  {"points": [{"x": 1e400, "y": [1]}]}])
def test_crafted_hover_and_click_data_change_nothing(jobs_home, data):
    from dash import no_update

    assert cs.hover(data, "0123456789ab") is no_update
    assert cs.click(data, "0123456789ab", [5]) is no_update
    assert cs.hover(data, ["a"]) is no_update


@pytest.mark.parametrize("layer", [None, "x", -5, 10**400, [1], 2.5])
def test_crafted_results_and_layers_draw_a_placeholder(jobs_home, layer):
    fig, *_ = cs.show(["not", "an id"], layer)
    assert "cut" in fig["layout"]["annotations"][0]["text"]


def test_an_uploads_data_set_is_a_name_never_a_path(jobs_home, tmp_path):
    np.save(tmp_path / "secret.npy", np.zeros((3, 1, 4, 4)))
    thumbs, message, is_open = cs.thumbs("0,1,2", "up-0123456789abcdef01234567",
                                         str(tmp_path / "secret.npy"))
    assert thumbs == [] and is_open and "secret" not in str(thumbs)
    assert cs.arms(["a list"], None, None) == ([], None, [], None)
