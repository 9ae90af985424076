"""What one request may cost: the partition's work cap, the jitter and Figure 7 bounds, and
the server-wide cap on background jobs.  Each test proves that the cap, not something else,
is what refuses, and that what it lets through is unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from dash import no_update

import bnviz.core.cut as cut
from bnviz import jobs
from bnviz.core.limits import PartitionTooLarge
from bnviz.core.network import random_network
from bnviz.core.partition import compute_partition, decision_boundaries
from bnviz.params import JitterParams
from bnviz.records.store import open_store
from bnviz.views.jitter import network_unit_statistics, run_jitter
from bnviz.views.realisations import (
    CALIBRATION_BATCHES,
    MIN_NETWORK_SAMPLES,
    NETWORK_STATS_MAX_POINTS,
    binary_task,
    calibration_batches,
    draw_batches,
    realisation_statistics,
)

BOX = (-3.0, 3.0, -3.0, 3.0)


def _realisations(k: int, width: int, depth: int = 2, batch: int = 16):
    """A BN network with a head and K mini-batch realisations of its statistics."""
    data = binary_task("moons", 400, 0)
    net = random_network(depth, width, seed=3, head_outputs=2)
    batches = draw_batches(400, batch, k, seed=1, device="cpu")
    mu, sigma = realisation_statistics(net, data.points, batches, None, seed=1, device="cpu")
    return net, mu, sigma


# ---- the partition's work cap ------------------------------------------------------------

def test_work_cap_refuses_many_lines_per_region_that_the_region_cap_lets_through(monkeypatch):
    """BN makes layer 1 central: K realisations x 2 x width wedges, each crossed by most of
    layer 2's lines.  Few regions, but (lines per region)^2 pairs and ^3 signs: the work cap
    refuses at layer 2, and with the work cap lifted the same call succeeds under the same
    region cap (so the region cap did not refuse it)."""
    net, mu, sigma = _realisations(k=8, width=32)
    with pytest.raises(PartitionTooLarge, match=r"^layer 2: this layer would (try|evaluate) "
                                                 r"\d+ (pairs of lines|signs of new vertices)"
                                                 r", over the cap of 360000"):
        decision_boundaries(net, mu, sigma, BOX, "cpu", max_regions=30_000)
    monkeypatch.setattr(cut, "WORK_PER_REGION", 10_000)
    out = decision_boundaries(net, mu, sigma, BOX, "cpu", max_regions=30_000)
    assert len(out) == 8 and all(len(b) > 0 for b in out)


def test_work_cap_stops_before_the_sign_table_is_built(monkeypatch):
    """The refusal comes before the expensive stage: the sign vectors of the new vertices
    (packed by pack_local after the check) are never computed for the layer refused."""
    net, mu, sigma = _realisations(k=8, width=32)
    calls = []
    real = cut.pack_local
    monkeypatch.setattr(cut, "pack_local",
                        lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    with pytest.raises(PartitionTooLarge):
        decision_boundaries(net, mu, sigma, BOX, "cpu", max_regions=30_000)
    layer1_calls = len(calls)
    monkeypatch.setattr(cut, "WORK_PER_REGION", 10_000)
    calls.clear()
    decision_boundaries(net, mu, sigma, BOX, "cpu", max_regions=30_000)
    assert len(calls) > layer1_calls  # layer 2 packs signs only when allowed


def test_region_cap_is_exact_after_the_cut(monkeypatch):
    """R + M below the cap is only a lower bound: the faces actually made are checked too.
    A cap of exactly the regions made (counted by compute_partition with realisation 0's
    statistics) passes, one less is refused (work cap lifted)."""
    monkeypatch.setattr(cut, "WORK_PER_REGION", 10_000)
    net, mu, sigma = _realisations(k=1, width=8, depth=3)
    stats = [partition_stats(mu, sigma, i, net) for i in range(net.depth)]
    regions = len(compute_partition(net, np.zeros((2, 2)), BOX, stats=stats, device="cpu"
                                ).layers[-1].regions)
    decision_boundaries(net, mu, sigma, BOX, "cpu", max_regions=regions)
    with pytest.raises(PartitionTooLarge,
                       match=rf"^layer 3 has {regions} regions, over the cap of {regions - 1}:"):
        decision_boundaries(net, mu, sigma, BOX, "cpu", max_regions=regions - 1)


def partition_stats(mu, sigma, layer, net):
    """Realisation 0's statistics of a layer as compute_partition's LayerStatistics."""
    from bnviz.core.network import LayerStatistics

    d = net.widths[layer]
    m, s = mu[0, layer, :d].numpy(), sigma[0, layer, :d].numpy()
    return LayerStatistics(layer + 1, m, s, m, s, np.ones(d), np.zeros(d), np.zeros((1, 2)))


# ---- jitter --------------------------------------------------------------------------------

def test_jitter_refusal_names_the_realisations():
    with pytest.raises(PartitionTooLarge) as err:
        run_jitter(JitterParams(n_points=400, depth=2, width=32, realizations=128), device="cpu")
    text = str(err.value)
    assert text.startswith("128 realisations together: layer 2:")
    assert text.endswith("or the number of realisations") and "\n" not in text


def test_calibration_batches_bounded_by_points():
    assert calibration_batches(16) == CALIBRATION_BATCHES
    assert calibration_batches(512) == NETWORK_STATS_MAX_POINTS // 512
    assert calibration_batches(10**9) == MIN_NETWORK_SAMPLES
    for b in (2, 64, 256, 300, 512):
        assert calibration_batches(b) * b <= max(NETWORK_STATS_MAX_POINTS,
                                                 MIN_NETWORK_SAMPLES * b)


def test_network_figure7_runs_only_the_layers_it_needs():
    """Truncating the network at the layer asked for changes nothing: the samples equal the
    full network's batched statistics on the same mini-batches (layers above cannot
    influence layers below)."""
    data = binary_task("moons", 300, 2)
    net = random_network(5, 6, seed=4, head_outputs=2)
    report, samples = network_unit_statistics(net, data.points, 2, 16, samples=50, batch_seed=7,
                                              device="cpu")
    batches = draw_batches(300, 16, 50, 7, "cpu")
    mu, sigma = realisation_statistics(net, data.points, batches, None, 7, "cpu")
    np.testing.assert_array_equal(samples["mu"], mu[:, 1, :3].numpy())
    np.testing.assert_array_equal(samples["sigma2"], sigma[:, 1, :3].pow(2).numpy())
    assert report["samples"] == 50


def test_network_figure7_caps_points_per_request():
    data = binary_task("moons", 2000, 0)
    net = random_network(2, 4, seed=1, head_outputs=2)
    report, samples = network_unit_statistics(net, data.points, 1, 512, samples=2000,
                                              virtual_batch_size=8, device="cpu")
    assert report["samples"] == NETWORK_STATS_MAX_POINTS // 512 == samples["mu"].shape[0]
    assert samples["mu_noise"].shape == samples["mu"].shape


def test_batch_statistics_against_numpy():
    """The one-pass var_mean and in-place normalisation give eq. 3 exactly (float64 rounding):
    each batch's mean and biased variance, layer by layer, recomputed in numpy."""
    data = binary_task("circles", 100, 1)
    net = random_network(3, 5, seed=2, head_outputs=2)
    batches = draw_batches(100, 10, 4, 0, "cpu")
    mu, sigma = realisation_statistics(net, data.points, batches, None, 0, "cpu")
    for k, idx in enumerate(batches.numpy()):
        z = data.points[idx]
        for layer, w in enumerate(net.weights):
            u = z @ w.T
            m, v = u.mean(0), u.var(0)
            np.testing.assert_allclose(mu[k, layer].numpy(), m, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(sigma[k, layer].numpy() ** 2, v, rtol=1e-10)
            h = (u - m) / np.sqrt(v)
            z = np.where(h > 0, h, net.negative_slope * h)


# ---- background jobs: the server-wide cap -------------------------------------------------

DENSITY = {"depth": 2, "width": 4, "activation": "leaky_relu", "dataset": "moons",
           "n_points": 50, "weight_seed": 0, "data_seed": 0, "grid": 16, "eps": 1.0}


@pytest.fixture
def capped(jobs_home, monkeypatch):
    """BNVIZ_MAX_RUNS = 2, and no worker: started jobs stay queued until the test ends them."""
    monkeypatch.setenv("BNVIZ_MAX_RUNS", "2")
    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    return jobs_home


def _start(seed: int) -> jobs.Job:
    return jobs.start_job("density", {**DENSITY, "weight_seed": seed})


def test_jobs_beyond_the_cap_are_refused_with_a_message(capped):
    a, b = _start(1), _start(2)
    assert [j.status for j in (a, b)] == ["queued", "queued"]
    with pytest.raises(jobs.QueueFull, match="busy: 2 background computations"):
        _start(3)
    assert _start(1).id == a.id  # the same computation again is not a new one: no refusal
    assert {j.id for j in open_store().list()} == {a.id, b.id}  # a refused start leaves nothing
    assert jobs.cancel_job(a.id) == "cancelled"  # an ended job frees its place
    c = _start(3)
    assert c.id not in (a.id, b.id)
    with pytest.raises(jobs.QueueFull):
        _start(4)


def test_the_cap_counts_every_queued_or_running_job(capped, monkeypatch):
    """One kind of thing is counted: jobs in the store, whoever started them (an image job
    from the CLI, a job another web process started); a job whose process died is queued
    again and still counts, until its last attempt fails it and frees its place; a succeeded
    one does not count."""
    store = open_store()
    image = jobs.submit_job("smart-init", {"epochs": 1, "runs": 1, "width": 4})
    running = store.create("landscape-2d", {"steps": 1})  # started elsewhere, running here
    assert store.claim(running.id, os.getpid())
    with pytest.raises(jobs.QueueFull, match="busy: 2"):
        _start(1)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store.update(running.id, pid=dead.pid)  # its process died
    with pytest.raises(jobs.QueueFull, match="busy: 2"):
        _start(1)
    assert store.get(running.id).status == "queued"  # reaped: queued again, still counted
    assert store.claim(running.id, dead.pid)  # its second start dies too: its last one
    monkeypatch.setenv("BNVIZ_JOB_ATTEMPTS", "2")
    first = _start(1)
    assert store.get(running.id).status == "failed"
    with pytest.raises(jobs.QueueFull):
        _start(2)
    assert store.claim(first.id, os.getpid())
    assert store.finish(first.id, "succeeded")
    assert store.finish(image.id, "cancelled")
    _start(2)


def test_density_and_training_pages_show_busy(capped):
    from bnviz.web.callbacks.density import callbacks as cd
    from bnviz.web.callbacks.jitter import callbacks as cj

    _start(1), _start(2)
    key, poll_off, message, shown = cd.compute(1, 2, 4, "moons", 50, 3, 3, 16, 1)
    assert key is no_update and shown is True and message.startswith("the server is busy")
    key, poll_off, message, shown = cj.start(1, "moons", 100, 2, 4, 3, 3, 4, 10, "adam",
                                             0.01)
    assert key is no_update and shown is True and message.startswith("the server is busy")
    assert len(open_store().list()) == 2


def test_max_runs_setting(monkeypatch):
    from bnviz.config import SettingError

    monkeypatch.setenv("BNVIZ_MAX_RUNS", "5")
    assert jobs.max_runs() == 5
    for bad in ("0", "many", "2.5"):  # a bad setting is named, never silently replaced
        monkeypatch.setenv("BNVIZ_MAX_RUNS", bad)
        with pytest.raises(SettingError, match="BNVIZ_MAX_RUNS"):
            jobs.max_runs()
    monkeypatch.delenv("BNVIZ_MAX_RUNS")
    assert jobs.max_runs() == max(2, os.cpu_count() or 1)


def test_explorer_mean_boundary_distance_is_the_all_pairs_minimum():
    """The explorer's mean distance (R-tree on the CPU) equals the all-pairs minimum."""
    from bnviz.core.geometry import nearest_by_all_pairs
    from bnviz.params import PartitionParams
    from bnviz.views.explorer import explore

    r = explore(PartitionParams(depth=3, width=8, n_points=300), device="cpu")
    facets = np.concatenate([lp.facets for lp in r.partition.layers])
    want = nearest_by_all_pairs(torch.as_tensor(r.data.points), torch.as_tensor(facets))
    assert r.mean_boundary_distance == pytest.approx(float(want.mean()), rel=1e-12)


# ---- memory given back after heavy requests -----------------------------------------------

_HEAP_HOLES = """
import json
from bnviz.service.memory import release_freed_memory

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

big = bytearray(24 << 20)
del big  # an mmapped block freed: later 1 MB blocks come from the heap
blocks, pins = [], []
for _ in range(200):  # zero-filled, so resident; each followed by a live small block
    blocks.append(bytearray(1 << 20))
    pins.append(bytearray(64 << 10))
before = rss_mb()
del blocks  # holes between live blocks: free() cannot shrink the heap's top
held = rss_mb()
released = release_freed_memory()
print(json.dumps({"before": before, "held": held, "after": rss_mb(), "released": released}))
"""


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="glibc, /proc")
def test_release_freed_memory_returns_heap_holes_to_the_os():
    """Blocks freed below a live one stay in the heap (resident) until malloc_trim returns
    them; the dynamic mmap threshold is raised first, as a large tensor's free does. Run in a
    fresh interpreter: late in a long test session the heap is fragmented, and free() alone
    then hands back part of the blocks, which says nothing about malloc_trim."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _HEAP_HOLES], capture_output=True, text=True,
                         timeout=60, check=True)
    m = json.loads(out.stdout)
    assert m["released"] is True
    assert m["held"] > m["before"] - 50, m  # free() alone kept (almost) all of it
    assert m["after"] < m["held"] - 150, m


def test_heavy_post_requests_release_memory_after_the_response(monkeypatch):
    """The server hook: a POST that took >= 0.25 s releases memory once its response is
    closed (sent); a quick POST or a GET does not."""
    from types import SimpleNamespace

    from flask import Flask

    from bnviz.service import memory
    from bnviz.web import app as dashboard

    calls = []
    monkeypatch.setattr(memory, "release_freed_memory", lambda: calls.append(1) or True)
    # the dashboard's own server has handled its warm-up request and takes no new routes:
    # the same hook on a fresh app
    fresh = SimpleNamespace(server=Flask(__name__))
    fresh.server.add_url_rule("/_test_slow", "bnviz_test_slow",
                              lambda: (time.sleep(float(__import__("flask").request.args["s"])),
                                       "done")[1], methods=["GET", "POST"])
    dashboard.add_memory_release(fresh)
    client = fresh.server.test_client()
    for method, seconds, want in (("post", 0.0, 0), ("get", 0.3, 0), ("post", 0.3, 1)):
        calls.clear()
        response = getattr(client, method)(f"/_test_slow?s={seconds}")
        assert response.status_code == 200 and calls == []  # not before it is sent
        response.close()
        assert len(calls) == want, (method, seconds)
