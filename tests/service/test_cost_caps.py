"""What one request may cost: the partition's work cap, the jitter and Figure 7 bounds, and
the server-wide cap on background runs.  Each test proves that the cap, not something else,
is what refuses, and that what it lets through is unchanged."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import torch
from dash import no_update

import bnviz.core.cut as cut
from bnviz import runs
from bnviz.core.limits import PartitionTooLarge
from bnviz.core.network import random_network
from bnviz.core.partition import compute_partition, decision_boundaries
from bnviz.views.jitter import (
    CALIBRATION_BATCHES,
    MIN_NETWORK_SAMPLES,
    NETWORK_STATS_MAX_POINTS,
    JitterSettings,
    _draw_batches,
    binary_task,
    calibration_batches,
    network_unit_statistics,
    realisation_statistics,
    run_jitter,
)

BOX = (-3.0, 3.0, -3.0, 3.0)


def _realisations(k: int, width: int, depth: int = 2, batch: int = 16):
    """A BN network with a head and K mini-batch realisations of its statistics."""
    data = binary_task("moons", 400, 0)
    net = random_network(depth, width, seed=3, head_outputs=2)
    batches = _draw_batches(400, batch, k, seed=1, device="cpu")
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
        run_jitter(JitterSettings(n=400, depth=2, width=32, realizations=128), device="cpu")
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
    report, samples = network_unit_statistics(net, data.points, 2, 16, samples=50, seed=7,
                                              device="cpu")
    batches = _draw_batches(300, 16, 50, 7, "cpu")
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
    batches = _draw_batches(100, 10, 4, 0, "cpu")
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


# ---- background runs: the server-wide cap -------------------------------------------------

@pytest.fixture
def held_runs(tmp_home, monkeypatch):
    """Start runs whose work waits until released; yields (start, release)."""
    monkeypatch.setenv("BNVIZ_MAX_RUNS", "2")
    gate = threading.Event()

    def work(progress, tmp):
        progress(0)
        gate.wait(30)
        np.savez(tmp, x=np.zeros(1))
        return runs.RunStatus("done", 1, 1)

    started: list[str] = []

    def start(i: int) -> str:
        # runs are known process-wide by their key: this test's own keys, never a run that
        # an earlier test left finishing in its thread
        key = runs.start_run("density", {"i": i, "home": str(tmp_home)}, 1, work)
        started.append(key)
        return key

    yield start, gate
    gate.set()
    for key in started:  # let the threads end before the next test
        _wait_state(key, "done")


def _wait_state(key: str, state: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while runs.run_status("density", key).state != state:
        assert time.monotonic() < deadline, runs.run_status("density", key)
        time.sleep(0.02)


def test_runs_beyond_the_cap_are_refused_with_a_message(held_runs, tmp_home):
    start, gate = held_runs
    a, b = start(1), start(2)
    assert runs.running_runs() == 2
    with pytest.raises(runs.ServerBusy, match="busy: 2 background computations"):
        start(3)
    assert start(1) == a  # the same run again is not a new one: no refusal
    assert runs.run_status("density", runs.run_key({"i": 3, "home": str(tmp_home)})
                           ).state == "none"  # a refused run leaves nothing
    gate.set()
    _wait_state(a, "done")
    _wait_state(b, "done")
    assert runs.running_runs() == 0
    c = start(3)  # room again
    _wait_state(c, "done")


def test_runs_of_other_processes_count_and_stale_ones_do_not(held_runs, tmp_home):
    """Another gunicorn worker's run is seen through its progress file; a file that has not
    moved for STALE_SECONDS (its process died) frees its place."""
    start, gate = held_runs
    folder = tmp_home / "trained"
    folder.mkdir()
    other = folder / ("a" * 24 + ".progress.json")
    other.write_text(json.dumps({"state": "running", "step": 3, "steps": 9,
                                 "updated": time.time()}))
    (folder / ("b" * 24 + ".progress.json")).write_text(json.dumps(
        {"state": "running", "step": 1, "steps": 9,
         "updated": time.time() - runs.STALE_SECONDS - 1}))
    (folder / ("c" * 24 + ".progress.json")).write_text("{not json")
    start(1)
    with pytest.raises(runs.ServerBusy):
        start(2)
    other.write_text(json.dumps({"state": "failed", "error": "x", "updated": time.time()}))
    start(2)


def test_density_and_training_pages_show_busy(held_runs, monkeypatch):
    from callbacks import density as cd
    from callbacks import jitter as cj

    start, _ = held_runs
    start(1), start(2)
    seed = 918_273  # settings no other test starts (runs are known process-wide by key)
    key, poll_off, message, shown = cd.compute(1, 2, 4, "moons", 50, seed, 16, 1)
    assert key is no_update and shown is True and message.startswith("the server is busy")
    key, poll_off, message, shown = cj.start(1, "moons", 100, 2, 4, seed, 4, 10, "adam", 0.01)
    assert key is no_update and shown is True and message.startswith("the server is busy")


def test_max_runs_setting(monkeypatch):
    monkeypatch.setenv("BNVIZ_MAX_RUNS", "5")
    assert runs.max_runs() == 5
    monkeypatch.setenv("BNVIZ_MAX_RUNS", "0")
    assert runs.max_runs() == 1
    monkeypatch.setenv("BNVIZ_MAX_RUNS", "many")
    assert runs.max_runs() == max(2, __import__("os").cpu_count() or 1)
    monkeypatch.delenv("BNVIZ_MAX_RUNS")
    assert runs.max_runs() >= 2


def test_explorer_mean_boundary_distance_is_the_all_pairs_minimum():
    """The explorer's mean distance (R-tree on the CPU) equals the all-pairs minimum."""
    from bnviz.core.geometry import nearest_by_all_pairs
    from bnviz.views.explorer import ExplorerSettings, explore

    r = explore(ExplorerSettings(depth=3, width=8, n_points=300), device="cpu")
    facets = np.concatenate([lp.facets for lp in r.partition.layers])
    want = nearest_by_all_pairs(torch.as_tensor(r.data.points), torch.as_tensor(facets))
    assert r.mean_boundary_distance == pytest.approx(float(want.mean()), rel=1e-12)


# ---- memory given back after heavy requests -----------------------------------------------

def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="glibc, /proc")
def test_release_freed_memory_returns_heap_holes_to_the_os():
    """Blocks freed below a live one stay in the heap (resident) until malloc_trim returns
    them; the dynamic mmap threshold is raised first, as a large tensor's free does."""
    from bnviz.service.memory import release_freed_memory

    big = bytearray(24 << 20)
    del big  # an mmapped block freed: later 1 MB blocks come from the heap
    blocks, pins = [], []
    for _ in range(200):  # zero-filled, so resident; each followed by a live small block
        blocks.append(bytearray(1 << 20))
        pins.append(bytearray(64 << 10))
    before = _rss_mb()
    del blocks  # holes between live blocks: free() cannot shrink the heap's top
    held = _rss_mb()
    assert release_freed_memory() is True
    after = _rss_mb()
    assert held > before - 50  # free() alone kept (almost) all of it
    assert after < held - 150, (before, held, after)
    del pins


def test_heavy_post_requests_release_memory_after_the_response(monkeypatch):
    """The server hook: a POST that took >= 0.25 s releases memory once its response is
    closed (sent); a quick POST or a GET does not."""
    import app as dashboard
    from bnviz.service import memory

    calls = []
    monkeypatch.setattr(memory, "release_freed_memory", lambda: calls.append(1) or True)
    server = dashboard.server
    if "bnviz_test_slow" not in server.view_functions:
        server.add_url_rule("/_test_slow", "bnviz_test_slow",
                            lambda: (time.sleep(float(__import__("flask").request.args["s"])),
                                     "done")[1], methods=["GET", "POST"])
    client = server.test_client()
    for method, seconds, want in (("post", 0.0, 0), ("get", 0.3, 0), ("post", 0.3, 1)):
        calls.clear()
        response = getattr(client, method)(f"/_test_slow?s={seconds}")
        assert response.status_code == 200 and calls == []  # not before it is sent
        response.close()
        assert len(calls) == want, (method, seconds)
