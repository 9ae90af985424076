"""An uploaded network reads nothing but its own bytes and allocates nothing before it is
costed (issue 42).

* ONNX: a tensor whose data lies outside the file, anywhere in the protobuf (a graph's
  initializer, a Constant node's attribute, a list of tensors, an If's branch, a Loop's body,
  a training graph, a local function; by a relative path, an absolute one or a symlink), is
  refused in one line naming where, before any tensor is read. The message holds none of the
  named file's bytes, nor the numbers they make, and is the same whether that file exists.
* safetensors: the architecture the metadata declares is costed (the image jobs' parameter
  count) before anything is built, and the header's names, shapes and types are compared with
  the architecture's (built on the meta device) before any tensor is read.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx_hostile import CANARY, CANARY_NUMBERS, declared_only, models, reshape_net
from onnx_nets import conv_net
from safetensors.torch import save_file

from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.torch_import import load_network


@pytest.fixture
def served_folder(tmp_path, monkeypatch):
    """The process's working folder holds the canary (as a server's holds its config)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "canary.bin").write_bytes(CANARY)
    (work / "link.bin").symlink_to(work / "canary.bin")
    monkeypatch.chdir(work)
    return work


@pytest.mark.parametrize("how", ["relative", "absolute", "symlink", "outside"])
def test_external_data_anywhere_is_refused_without_reading_it(served_folder, tmp_path, how):
    location = {"relative": "canary.bin", "absolute": str(served_folder / "canary.bin"),
                "symlink": "link.bin", "outside": "../work/canary.bin"}[how]
    for place, model in models(location).items():
        path = tmp_path / f"{place.replace(' ', '-')}.onnx"
        path.write_bytes(model.SerializeToString())  # (onnx.save would resolve the data)
        with pytest.raises(ValueError) as present:
            load_onnx(path)
        (served_folder / "canary.bin").rename(served_folder / "gone")
        try:
            with pytest.raises(ValueError) as absent:
                load_onnx(path)
        finally:
            (served_folder / "gone").rename(served_folder / "canary.bin")
        message = str(present.value)
        assert "external data is not accepted" in message, (place, message)
        assert "\n" not in message
        assert CANARY.decode() not in message and \
            not any(n in message for n in CANARY_NUMBERS), (place, message)
        assert str(absent.value) == message, place  # no oracle of the file's existence


def test_other_tensors_bnviz_does_not_read_are_refused(tmp_path):
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    text = helper.make_tensor("label", TensorProto.STRING, [1], vals=[b"x"])
    model = reshape_net(None, [shape, text])
    (tmp_path / "s.onnx").write_bytes(model.SerializeToString())
    with pytest.raises(ValueError, match="initializer 'label': element type 8 is not read"):
        load_onnx(tmp_path / "s.onnx")
    sparse = reshape_net(None, [shape])
    sparse.graph.sparse_initializer.append(helper.make_sparse_tensor(
        numpy_helper.from_array(np.ones(1, np.float32), "sv"),
        numpy_helper.from_array(np.zeros(1, np.int64), "si"), [4]))
    (tmp_path / "sp.onnx").write_bytes(sparse.SerializeToString())
    with pytest.raises(ValueError, match="sparse initializer 'sv' is not read"):
        load_onnx(tmp_path / "sp.onnx")


def test_declared_sizes_over_the_cap_are_refused_before_reading(tmp_path, monkeypatch):
    """A tensor declaring 2**40 floats is costed from its dims, not allocated."""
    huge = declared_only("huge", TensorProto.FLOAT, [2**20, 2**20])
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    (tmp_path / "h.onnx").write_bytes(reshape_net(None, [shape, huge]).SerializeToString())
    with pytest.raises(ValueError, match=r"declare over 4,194,304 MB.*BNVIZ_UPLOAD_MAX_MB"):
        load_onnx(tmp_path / "h.onnx")
    path = conv_net(tmp_path / "net.onnx", channels=16)  # about 45 kB of weights
    load_onnx(path)  # under the default cap
    monkeypatch.setenv("BNVIZ_UPLOAD_MAX_MB", "0.001")
    with pytest.raises(ValueError, match="BNVIZ_UPLOAD_MAX_MB"):
        load_onnx(path)


def _declared(path: Path, arch: str, width: int, size: int = 32) -> Path:
    build = {"arch": arch, "in_ch": 3, "classes": 10, "size": size, "mode": "bn",
             "affine": False, "width": width}
    save_file({"x": torch.zeros(4)}, str(path), metadata={k: json.dumps(v)
                                                           for k, v in build.items()})
    return path


MEASURE = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from bnviz.slices.torch_import import load_network

    def rss():
        status = Path("/proc/self/status").read_text().split("\\n")
        return next(int(x.split()[1]) for x in status if x.startswith("VmHWM")) / 1024

    before, t = rss(), time.perf_counter()
    try:
        load_network(Path(sys.argv[1]))
        said = "loaded"
    except ValueError as exc:
        said = str(exc)
    print(json.dumps({"said": said, "grew_mb": rss() - before,
                      "seconds": time.perf_counter() - t}))
""")


@pytest.mark.parametrize("width", [256, 1024])
def test_a_declared_resnet50_is_refused_before_it_is_built(tmp_path, width):
    """The issue's 1 KB file: the peak memory of the process grows by under 100 MB."""
    path = _declared(tmp_path / "big.safetensors", "resnet50", width)
    assert path.stat().st_size < 1024
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True,
                         text=True, check=True, timeout=120)
    result = json.loads(out.stdout)
    assert "million parameters" in result["said"] and "BNVIZ_UPLOAD_MAX_MB" in result["said"]
    assert result["grew_mb"] < 100, result


def test_the_header_must_be_the_architectures(tmp_path):
    """Names, shapes and element types are compared before any tensor is read."""
    from bnviz.images.networks import build_model
    from bnviz.images.saved import save_network

    build = {"arch": "resnet9", "in_ch": 1, "classes": 3, "size": 8, "mode": "bn",
             "affine": False, "width": 4}
    model = build_model("resnet9", 1, 3, 8, "bn", width=4)
    good = tmp_path / "good.safetensors"
    save_network(model, good, build)
    loaded, _ = load_network(good)
    for k, v in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[k], v), k
    state = {k: v for k, v in model.state_dict().items() if v.dtype != torch.bool}
    meta = {k: json.dumps(v) for k, v in build.items()}
    key = next(k for k in state if k.endswith("weight"))
    for change, says in (({key: state[key].to(torch.int32)}, "holds I32 values"),
                         ({key: state[key][:1]}, "has shape"),
                         ({"stranger": torch.zeros(1)}, "unexpected stranger")):
        bad = tmp_path / "bad.safetensors"
        save_file({**state, **change}, str(bad), metadata=meta)
        with pytest.raises(ValueError, match=says):
            load_network(bad)
    half = tmp_path / "half.safetensors"  # any floating type loads into the float32 module
    save_file({k: v.half() if v.is_floating_point() else v for k, v in state.items()},
              str(half), metadata=meta)
    assert load_network(half)[0].state_dict()[key].dtype == torch.float32
