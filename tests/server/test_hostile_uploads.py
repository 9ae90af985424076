"""Hostile network uploads over HTTP, against ``bnviz serve`` (nginx, gunicorn) with a jobs
token, as an anonymous attacker sends them through the /slice page's upload callback
(issue 42):

* ONNX files whose tensors keep their data outside the file, pointing at a canary in the
  server's working folder (relative, absolute, symlinked, inside a subgraph): each refused in
  one line; the canary's bytes are in no answer and no log line, and the answer is the same
  whether the canary exists;
* a safetensors file of 1 KB whose metadata declares a resnet50 of width 256 or 1024:
  refused within a second, the web workers' peak memory growing by under 100 MB.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import numpy as np
import pytest
import torch
from onnx_hostile import CANARY, CANARY_NUMBERS, models
from safetensors.torch import save_file
from served import callback_request, free_port
from stackrun import ROOT, group_pids, start, stop_group, wait_answering

from bnviz.web.callbacks.slice import ids

# with the stack's tests on one worker: one server stack at a time beside the browser
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]
TOKEN = "t0k3n-for-the-hostile-upload-test"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    port = free_port()
    log = home / "serve.log"
    env = {k: v for k, v in os.environ.items()
           if k not in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL", "BNVIZ_NGINX")}
    env.update(BNVIZ_HOST="127.0.0.1", BNVIZ_PORT=str(port), BNVIZ_HOME=str(home),
               BNVIZ_WEB_WORKERS="1", BNVIZ_JOBS_TOKEN=TOKEN, BNVIZ_PRECOMPUTE_TOUR="0")
    proc = start([sys.executable, "-m", "bnviz", "serve", "--no-worker"], env, log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(proc, base + "/healthz", log)
        with urllib.request.urlopen(base + "/_dash-dependencies", timeout=60) as r:
            deps = json.load(r)
        yield base, proc, log, deps
    finally:
        stop_group(proc)


def _upload(base: str, deps: list[dict], data: bytes, filename: str) -> tuple[float, bytes]:
    """The page's upload callback, as the browser posts it: the seconds and the raw reply."""
    dep = next(d for d in deps if any(i["id"] == ids.UPLOAD for i in d["inputs"]))
    values = {ids.UPLOAD: {"contents": "data:application/octet-stream;base64," +
                           base64.b64encode(data).decode(), "filename": filename},
              ids.UPLOAD_ARCH: {"value": "resnet50"}, ids.UPLOADS: {"data": None}}
    payload = callback_request(deps, dep["output"], values)
    req = urllib.request.Request(base + "/_dash-update-component", json.dumps(payload).encode(),
                                 {"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.status == 200
        return time.perf_counter() - started, r.read()


def _refusal(reply: bytes) -> str:
    response = json.loads(reply)["response"]
    return response[ids.MESSAGE]["children"]


def test_onnx_external_data_reads_nothing_of_the_server(stack, tmp_path):
    base, _, log, deps = stack
    name = f".bnviz-canary-{uuid.uuid4().hex[:8]}"
    canary, link = ROOT / f"{name}.bin", ROOT / f"{name}.link"
    canary.write_bytes(CANARY)
    link.symlink_to(canary)
    try:
        places = {**{f"{p} (relative)": m for p, m in models(canary.name).items()},
                  "constant (absolute)": models(str(canary))["constant"],
                  "constant (symlink)": models(link.name)["constant"],
                  "if branch (symlink)": models(link.name)["if branch"]}
        replies = {}
        for place, model in places.items():
            _, reply = _upload(base, deps, model.SerializeToString(), "net.onnx")
            assert "upload refused" in _refusal(reply) and \
                "external data is not accepted" in _refusal(reply), (place, _refusal(reply))
            assert CANARY not in reply and not any(n.encode() in reply
                                                   for n in CANARY_NUMBERS), place
            replies[place] = reply
        canary.unlink()
        for place, model in places.items():
            _, reply = _upload(base, deps, model.SerializeToString(), "net.onnx")
            assert reply == replies[place], place  # no oracle of the file's existence
    finally:
        canary.unlink(missing_ok=True)
        link.unlink(missing_ok=True)
    text = log.read_bytes()
    assert CANARY not in text and not any(n.encode() in text for n in CANARY_NUMBERS)


def _peak_rss_mb(pgid: int) -> float:
    """The summed peak memory (VmHWM) of the serving group's gunicorn processes."""
    total = 0.0
    for pid in group_pids(pgid):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if b"gunicorn" in cmd:
            total += next(int(x.split()[1]) for x in status.splitlines()
                          if x.startswith("VmHWM")) / 1024
    return total


@pytest.mark.parametrize("width", [256, 1024])
def test_a_declared_giant_is_refused_within_a_second(stack, tmp_path, width):
    base, proc, _, deps = stack
    build = {"arch": "resnet50", "in_ch": 16, "classes": 10_000, "size": 512, "mode": "bn",
             "affine": False, "width": width}
    path = tmp_path / "giant.safetensors"
    save_file({"x": torch.zeros(4)}, str(path),
              metadata={k: json.dumps(v) for k, v in build.items()})
    data = path.read_bytes()
    assert len(data) < 1024
    _upload(base, deps, np.zeros(4, np.uint8).tobytes(), "warm.safetensors")  # (warm path)
    before = _peak_rss_mb(proc.pid)
    seconds, reply = _upload(base, deps, data, "giant.safetensors")
    grew = _peak_rss_mb(proc.pid) - before
    print(f"resnet50 width {width}: refused in {seconds:.3f} s, peak RSS +{grew:.1f} MB")
    assert "million parameters" in _refusal(reply)
    assert seconds < 1.0 and grew < 100, (seconds, grew)
