"""The cut's float64 products on numpy's BLAS (bnviz.blas.times_transposed): the values of
torch's product, on strided inputs too, and numpy's BLAS used and held to one thread only
where torch runs on one (in a process of its own: the setting is the process's).  The
convolutions' forms that use it against conv2d: test_shapes.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bnviz.blas import times_transposed

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (7, 5, 3), (300, 512, 64), (0, 4, 2)])
def test_the_product_is_torch_s(m, n, k):
    rng = np.random.default_rng(m + n + k)
    x = torch.as_tensor(rng.normal(size=(m, n)))
    w = rng.normal(size=(k, n))
    got = times_transposed(x, w)
    assert got.dtype == torch.float64 and tuple(got.shape) == (m, k)
    want = x @ torch.as_tensor(w).T
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12 * n)


def test_strided_inputs_and_other_dtypes():
    rng = np.random.default_rng(1)
    x4 = torch.as_tensor(rng.normal(size=(6, 3, 2, 2)))
    rows = x4.permute(0, 2, 3, 1).reshape(-1, 3)  # a 1x1 convolution's pixel rows
    w = rng.normal(size=(4, 3))
    np.testing.assert_allclose(times_transposed(rows, w).numpy(),
                               rows.numpy() @ w.T, rtol=1e-12)
    cols = torch.as_tensor(rng.normal(size=(5, 8)))[:, ::2]  # not contiguous
    w2 = rng.normal(size=(3, 4))
    np.testing.assert_allclose(times_transposed(cols, w2).numpy(), cols.numpy() @ w2.T,
                               rtol=1e-12)
    x32 = torch.as_tensor(rng.normal(size=(4, 3)), dtype=torch.float32)
    got = times_transposed(x32, w)  # float32: torch's product, in float32
    assert got.dtype == torch.float32
    np.testing.assert_allclose(got.numpy(), x32.numpy() @ w.T.astype(np.float32), rtol=1e-5)


CHILD = """
import json, sys
import numpy as np, torch
from threadpoolctl import threadpool_info
from bnviz.blas import times_transposed
x, w = torch.ones((64, 32), dtype=torch.float64), np.ones((16, 32))
seen = []
for threads in (2, 1, 2):
    torch.set_num_threads(threads)
    assert float(times_transposed(x, w).sum()) == 64 * 16 * 32
    seen.append(sorted({i["num_threads"] for i in threadpool_info()
                        if i["internal_api"] == "openblas"}))
print(json.dumps(seen))
"""


def test_numpy_s_blas_runs_on_one_thread_where_torch_does():
    """On 2 torch threads the product is torch's and OpenBLAS keeps its default (2 on this
    machine); from the first product on one thread, OpenBLAS is held to one."""
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    usable = len(os.sched_getaffinity(0))
    assert seen == [[min(usable, 64)], [1], [1]]
