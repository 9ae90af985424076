"""No cut waits for the compiler (bnviz.core.kernels: "no page waits for the compiler"): once a
process has loaded the kernels (and the max-pool cells' kernel, as a tile worker and the image
do), cutting networks of every kind of op the engine passes to them adds no new numba
signature.  An array of another type (a read-only one, int32 where int64 was warmed) is a new
signature to numba, compiled in the middle of the cut: 0.1 s to seconds, once per machine.
Run in a fresh process, so that what earlier tests compiled cannot hide one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, sys
from pathlib import Path
import numpy as np, torch
from torch import nn
torch.set_num_threads(1)
from numba.core.registry import CPUDispatcher
from bnviz.core import clipping, kernels
from bnviz.slices import maxcells
from bnviz.slices.engine import cut_slice
from bnviz.slices.onnx_import import load_onnx
from bnviz.slices.plane import plane_through_images
from bnviz.slices.torch_import import slice_net
from onnx_nets import conv_net

compiled = kernels.require()
maxcells.warm_up()

def signatures():
    found = {f"{m.__name__}.{k}": [str(s) for s in v.signatures]
             for m in (compiled, clipping, maxcells) for k, v in vars(m).items()
             if isinstance(v, CPUDispatcher)}
    return found

before = signatures()
folder = Path(sys.argv[1])
nets = [load_onnx(conv_net(folder / "a.onnx", residual=True, maxpool=True, leaky=True)),
        load_onnx(conv_net(folder / "b.onnx", bn_after_act=True))]
torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(4, 4, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(4, 3)).double().eval()
nets.append(slice_net(model, (1, 6, 6)))
rng = np.random.default_rng(0)
for net in nets:
    plane = plane_through_images(rng.normal(0, 1, (3, *net.input_shape)))
    cut_slice(net, plane, plane.default_window(), device="cpu")
after = signatures()
print(json.dumps({k: [s for s in v if s not in before.get(k, [])] for k, v in after.items()}))
"""


def test_a_cut_compiles_nothing_once_the_kernels_are_loaded(tmp_path):
    tests = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=600, cwd=tests.parent,
                          env={**os.environ,
                               "PYTHONPATH": f"{tests.parent}:{tests}"})
    assert done.returncode == 0, done.stderr[-2000:]
    new = {k: v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items() if v}
    assert not new, f"compiled in the middle of a cut: {new}"
