"""``bnviz slice`` end to end, and what it refuses: one line on stderr, exit 2, nothing
written.  Also: the image jobs keep each arm's network, which the slice reads back."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from onnx_nets import conv_net

from bnviz.cli import main
from bnviz.images.saved import save_network
from bnviz.params.jobs import ARMS
from bnviz.slices.torch_import import load_network


def _run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    net = conv_net(tmp_path / "net.onnx", residual=True)
    images = np.random.default_rng(0).normal(0, 1, (20, 1, 6, 6)).astype(np.float32)
    np.save(tmp_path / "images.npy", images)
    return tmp_path, net, tmp_path / "images.npy"


def test_json_summary_counts_every_nonlinear_layer(files, capsys):
    tmp, net, data = files
    code, out, err = _run(capsys, "slice", "--model", str(net), "--data", str(data),
                          "--images", "0,1,2", "--json")
    assert code == 0, err
    s = json.loads(out)
    assert len(s["regions"]) == 4 and s["regions"][0] > 1  # a1, a2, ar1, ares
    assert s["seconds"] > 0 and s["bn"] == "eval" and len(s["anchors"]) == 3
    # the estimate before the cut, its standard error and the bound the cap acted on
    assert s["estimate_bound"] >= s["regions"][-1] and s["estimate_error"] >= 0
    assert s["estimate"] + 3 * s["estimate_error"] <= s["estimate_bound"]


def test_train_mode_with_batches_gives_the_jitter(files, capsys):
    tmp, net, data = files
    code, out, err = _run(capsys, "slice", "--model", str(net), "--data", str(data),
                          "--bn", "train", "--batch", str(data), "--batches", "3",
                          "--batch-size", "8", "--geometry", str(tmp / "g.npz"))
    assert code == 0, err
    s = json.loads(out)
    assert len(s["regions_per_batch"]) == 3 and "not in the batch" in s["note"]
    assert 0 <= s["disagreement_area"] <= 1
    with np.load(tmp / "g.npz") as g:
        assert len(g["layer0_ptr"]) - 1 == s["regions"][0]


@pytest.mark.parametrize("argv,message", [
    (["--model", "{tmp}/images.npy"], "not an ONNX model"),
    (["--model", "{tmp}/sig.onnx"], "operator Sigmoid is not supported"),
    (["--model", "{tmp}/net.onnx", "--data", "{tmp}/wrong.npy"], "the network takes (1, 6, 6)"),
    (["--model", "{tmp}/net.onnx", "--plane", "{tmp}/dep.npz", "--extent", "1"],
     "not independent"),
    (["--model", "{tmp}/net.onnx", "--max-regions", "10"], "over the cap of 10"),
])
def test_bad_input_is_one_line_and_writes_nothing(files, capsys, argv, message):
    tmp, net, data = files
    conv_net(tmp / "sig.onnx", extra_op="Sigmoid")
    np.save(tmp / "wrong.npy", np.zeros((4, 3, 6, 6), np.float32))
    u = np.random.default_rng(1).normal(0, 1, (1, 6, 6))
    np.savez(tmp / "dep.npz", origin=np.zeros((1, 6, 6)), u=u, v=2 * u)
    args = [a.format(tmp=tmp) for a in argv]
    if "--data" not in args:
        args += ["--data", str(data)]
    out_file = tmp / "out.json"
    code, out, err = _run(capsys, "slice", *args, "--out", str(out_file))
    assert code == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert not out_file.exists()


def test_too_many_regions_gives_the_count_or_the_estimate_and_its_bound(files, capsys):
    """Refused before any cut, one line: a small window counted exactly, a larger one
    estimated, with its standard error and the bound the cap acted on."""
    tmp, net, data = files
    code, out, err = _run(capsys, "slice", "--model", str(net), "--data", str(data),
                          "--max-regions", "10")
    assert code == 2 and err.count("\n") == 1
    assert "regions (counted exactly), over the cap of 10:" in err
    code, out, err = _run(capsys, "slice", "--model", str(net), "--data", str(data),
                          "--extent", "20", "--max-regions", "1000")
    assert code == 2 and err.count("\n") == 1
    assert "would have about" in err and "regions, standard error" in err
    assert re.search(r"a bound of [\d,]+ \(the estimate \+ [34]\.\d standard errors\), "
                     r"over the cap of 1,000:", err), err


def test_a_kept_network_slices_as_the_model_it_was(tmp_path, capsys):
    from bnviz.images.networks import build_model

    model = build_model("resnet9", 1, 10, 8, "bn", width=4, seed=3)
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(16, 1, 8, 8))
    model.eval()
    path = tmp_path / "r9.safetensors"
    save_network(model, path, {"arch": "resnet9", "in_ch": 1, "classes": 10, "size": 8,
                               "mode": "bn", "affine": False, "width": 4})
    back, build = load_network(path)
    x = torch.randn(5, 1, 8, 8)
    assert torch.equal(back(x), model(x)) and build["width"] == 4
    code, out, err = _run(capsys, "slice", "--weights", str(path), "--arch", "resnet9",
                          "--extent", "0.05", "--json")
    assert code == 0, err
    assert json.loads(out)["regions"][0] >= 1
    code, out, err = _run(capsys, "slice", "--weights", str(path), "--arch", "cnn")
    assert code == 2 and "holds a resnet9, not a cnn" in err


def test_image_jobs_keep_each_arms_network(jobs_home):
    from bnviz.images.experiments import run_experiment
    from bnviz.images.params import check_params
    from bnviz.records.types import RecordingContext

    params = check_params("smart-init", {"dataset": "digits", "max_train": 40, "runs": 1,
                                         "epochs": 1, "width": 4})
    ctx = RecordingContext()
    run_experiment("smart-init", params, ctx)
    assert sorted(ctx.networks) == sorted(f"{arm}-run0" for arm in ARMS["smart-init"])
    path = jobs_home / "n.safetensors"
    path.write_bytes(ctx.networks["bn_init-run0"])
    model, build = load_network(path)
    assert build["mode"] == "frozen" and not model.training


def test_concentration_refuses_before_training(capsys):
    code, out, err = _run(capsys, "slice", "--concentration", "1")
    assert code == 2 and "2 to 100 triples" in err
    code, out, err = _run(capsys, "slice", "--concentration", "5", "--train-type", "density")
    assert code == 2 and "--train-type" in err


@pytest.fixture
def no_data_set(monkeypatch):
    """Any data set loaded by name fails the test: --plane and --batch need none."""
    import bnviz.data.imagedata as imagedata

    def refuse(*args, **kwargs):
        raise AssertionError("a data set was loaded")

    monkeypatch.setattr(imagedata, "load_image_data", refuse)


@pytest.mark.parametrize("bn", ["eval", "train"])
@pytest.mark.parametrize("fmt", ["summary", "json", "png", "svg"])
def test_every_format_on_a_plane_of_another_shape(tmp_path, capsys, no_data_set, fmt, bn):
    """Issue 44: png and svg crashed with an ImportError after the whole cut, and --plane on
    a network whose input is not digits' 1x8x8 loaded digits and refused its shape."""
    net = conv_net(tmp_path / "net.onnx", size=6, maxpool=True, seed=3)
    rng = np.random.default_rng(2)
    np.savez(tmp_path / "plane.npz", origin=rng.normal(0, 1, (1, 6, 6)),
             u=rng.normal(0, 1, (1, 6, 6)), v=rng.normal(0, 1, (1, 6, 6)))
    np.save(tmp_path / "batch.npy", rng.normal(0, 1, (16, 1, 6, 6)).astype(np.float32))
    out = tmp_path / f"out.{fmt}"
    extra = ["--batch", str(tmp_path / "batch.npy"), "--batch-size", "8", "--batches", "2"] \
        if bn == "train" else []
    code, _, err = _run(capsys, "slice", "--model", str(net), "--plane",
                        str(tmp_path / "plane.npz"), "--extent", "1.5", "--bn", bn, *extra,
                        "--format", fmt, "--out", str(out))
    assert code == 0, err
    data = out.read_bytes()
    if fmt == "png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000
    elif fmt == "svg":
        assert b"<svg" in data[:400] and data.count(b"<path") > 3
    else:
        s = json.loads(data)
        assert s["bn"] == bn and min(s["regions"]) > 1
        assert len(s.get("regions_per_batch", [])) == (2 if bn == "train" else 0)


def test_train_mode_on_an_onnx_without_bn_is_refused(tmp_path, capsys):
    """torch.onnx.export folds BN into the convolutions by default: --bn train on such a
    file ran as eval mode and said train."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 1, (4, 1, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.normal(0, 1, (3, 4)).astype(np.float32), "fc")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "folded", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", 1, 6, 6])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, ["N", 3])], inits)
    path = tmp_path / "folded.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    np.save(tmp_path / "batch.npy", rng.normal(0, 1, (16, 1, 6, 6)).astype(np.float32))
    code, out, err = _run(capsys, "slice", "--model", str(path), "--data",
                          str(tmp_path / "batch.npy"), "--bn", "train", "--batch-size", "8")
    assert code == 2 and err.count("\n") == 1 and out == ""
    assert "no BatchNormalization node" in err and "TrainingMode.PRESERVE" in err
    assert _run(capsys, "slice", "--model", str(path), "--data",
                str(tmp_path / "batch.npy"))[0] == 0  # eval mode is what the file holds


@pytest.mark.parametrize("head", ["Softmax", "LogSoftmax"])
def test_a_softmax_at_the_output_changes_no_region(tmp_path, capsys, head):
    """Most exported classifiers end in a (log-)softmax: the same argmax, the same regions."""
    import onnx
    from onnx import helper

    plain = conv_net(tmp_path / "plain.onnx", maxpool=True)
    model = onnx.load(str(plain))
    logits = model.graph.output[0].name
    model.graph.node.append(helper.make_node(head, [logits], ["probabilities"], axis=1))
    model.graph.output[0].name = "probabilities"
    onnx.save(model, str(tmp_path / "head.onnx"))
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(0, 1, (8, 1, 6, 6)))
    answers = []
    for name in ("plain.onnx", "head.onnx"):
        code, out, err = _run(capsys, "slice", "--model", str(tmp_path / name), "--data",
                              str(tmp_path / "x.npy"), "--json")
        assert code == 0, err
        s = json.loads(out)
        answers.append((s["regions"], s["layers"], s["decision_boundary_segments"],
                        s["classes"]))
    assert answers[0] == answers[1]
    inner = onnx.load(str(plain))  # anywhere else it is refused
    first = inner.graph.node[0]
    inner.graph.node.insert(1, helper.make_node(head, [first.output[0]], ["soft"], axis=1))
    inner.graph.node[2].input[0] = "soft"
    onnx.save(inner, str(tmp_path / "inner.onnx"))
    code, _, err = _run(capsys, "slice", "--model", str(tmp_path / "inner.onnx"), "--data",
                        str(tmp_path / "x.npy"))
    assert code == 2 and "read only at the output" in err


def test_the_json_and_geometry_reproduce_the_slice(files, capsys):
    """Issue 44: the plane, the window, the seed, the batches and the version are in the
    JSON and the geometry file, so a slice is cut again from them alone."""
    import hashlib

    tmp, net, data = files
    code, out, err = _run(capsys, "slice", "--model", str(net), "--data", str(data),
                          "--bn", "train", "--batch", str(data), "--batch-size", "8",
                          "--batches", "2", "--seed", "5", "--geometry", str(tmp / "g.npz"))
    assert code == 0, err
    first = json.loads(out)
    prov = first["provenance"]
    assert prov["seed"] == 5 and prov["bnviz_version"] and "exact cuts" in prov["seconds_measure"]
    assert prov["batch_source"] == "sha256:" + hashlib.sha256(data.read_bytes()).hexdigest()
    assert len(prov["batch_indices"]) == 2 and all(len(b) == 8 for b in prov["batch_indices"])
    shape = prov["plane"]["shape"]
    np.savez(tmp / "plane.npz", **{k: np.reshape(prov["plane"][k], shape)
                                   for k in ("origin", "u", "v")})
    with np.load(tmp / "g.npz") as g:
        assert json.loads(str(g["provenance"])) == prov
        assert np.array_equal(g["plane_u"].ravel(), prov["plane"]["u"])
    # the same batches, from the indices alone, and the same window: the same partition
    images = np.load(data)
    for k, chosen in enumerate(prov["batch_indices"]):
        np.save(tmp / f"batch{k}.npy", images[chosen])
        a0, a1, b0, b1 = prov["window"]
        assert a0 == -a1 and b0 == -b1 and a1 == b1
        code, out, err = _run(capsys, "slice", "--model", str(net), "--plane",
                              str(tmp / "plane.npz"), "--extent", repr(a1), "--bn", "train",
                              "--batch", str(tmp / f"batch{k}.npy"), "--batch-size", "8")
        assert code == 0, err
        assert json.loads(out)["regions"] == first["regions_per_batch"][k]


@pytest.mark.parametrize("bn", ["eval", "train"])
def test_tiles_on_two_workers_give_the_one_cut(files, capsys, bn):
    """Issue 45: --tiles N --workers 2 is the same partition as one cut: every layer's count,
    every batch's, and the decision boundary's jitter."""
    tmp, net, data = files
    base = ["slice", "--model", str(net), "--data", str(data), "--bn", bn, "--json"]
    if bn == "train":
        base += ["--batch", str(data), "--batches", "2", "--batch-size", "8"]
    code, out, err = _run(capsys, *base)
    assert code == 0, err
    one = json.loads(out)
    code, out, err = _run(capsys, *base, "--tiles", "4", "--workers", "2")
    assert code == 0, err
    tiled = json.loads(out)
    assert tiled["regions"] == one["regions"]
    assert tiled.get("regions_per_batch") == one.get("regions_per_batch")
    assert tiled.get("disagreement_area") == one.get("disagreement_area")


@pytest.mark.parametrize(("flag", "value"), [("--tiles", "0"), ("--tiles", "257"),
                                             ("--workers", "0"), ("--workers", "65")])
def test_tiles_and_workers_out_of_range_are_one_line(files, capsys, flag, value):
    tmp, net, data = files
    code, out, err = _run(capsys, "slice", "--model", str(net), "--data", str(data), flag,
                          value)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and flag.strip("-") in err and "Traceback" not in err
