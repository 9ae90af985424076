"""A slice job on two Celery workers (issue 45, item 2): its tiles are handed out as tasks of
their own, so both workers cut them (the tiles' index names each tile's process), and a
worker killed (SIGKILL) in the middle of a tile has that tile cut again by the job, which
sees the claim's process gone: the job succeeds with the untiled cut's counts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from celery_workers import ROOT, celery_env, start_worker, stop_worker
from onnx_nets import conv_net

from bnviz.params.slice import SliceSetup
from bnviz.records.redis_store import RedisStore
from bnviz.slices.engine import cut_slice
from bnviz.slices.setup import prepare_slice
from bnviz.slices.tile_store import TileStore

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("celery")]

TILES = 16


def _wait(what: str, predicate, timeout: float = 180.0, poll: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}")


def _stop_mid_tile(tiles: TileStore, pid: int) -> int:
    """Stop (SIGSTOP) the worker ``pid`` while it holds a tile's claim and that tile has no
    shard: it is in the middle of the tile.  Returns the tile."""

    def mid_tile() -> int | None:
        for i in range(TILES):
            owner = tiles.claimant("a0-b0", i)
            if owner and owner.get("pid") == pid and not tiles.has("a0-b0", i):
                os.kill(pid, signal.SIGSTOP)
                owner = tiles.claimant("a0-b0", i)
                if owner and owner.get("pid") == pid and not tiles.has("a0-b0", i):
                    return i + 1  # (0 would read as "not yet")
                os.kill(pid, signal.SIGCONT)  # it had just finished: the next one
        return None

    return _wait("the second worker to be in the middle of a tile", mid_tile) - 1


def test_two_workers_share_the_tiles_and_a_killed_workers_tile_is_cut_again(
        jobs_home, redis_server, tmp_path):
    net = conv_net(tmp_path / "net.onnx", residual=True, channels=6, size=8)
    images = np.random.default_rng(0).normal(0, 1, (20, 1, 8, 8)).astype(np.float32)
    np.save(tmp_path / "images.npy", images)
    env = celery_env(redis_server, 2)
    store = RedisStore(env["BNVIZ_BROKER_URL"])
    workers = [start_worker(env, jobs_home / f"celery-{k}.log") for k in (1, 2)]
    try:
        submitted = subprocess.run(
            [sys.executable, "-m", "bnviz", "slice", "--model", str(net), "--data",
             str(tmp_path / "images.npy"), "--extent", "12", "--tiles", str(TILES),
             "--submit", "--json"], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=300)
        assert submitted.returncode == 0, submitted.stderr
        job_id = json.loads(submitted.stdout)["id"]
        job = _wait("the job to run", lambda: (j := store.get(job_id)) and j.pid and j)
        parent = next(w for w in workers if w.pid == job.pid)
        helper = next(w for w in workers if w is not parent)
        folder = _wait("the tiles' folder", lambda: next(
            (jobs_home / "results" / "slice-tiles").glob("*"), None))
        tiles = TileStore(folder.name, folder.parent)
        _wait("a tile of the second worker", lambda: any(
            tiles.read_info("a0-b0", i)["pid"] == helper.pid
            for i in tiles.stored("a0-b0", TILES)))
        victim = _stop_mid_tile(tiles, helper.pid)
        os.killpg(helper.pid, signal.SIGKILL)
        helper.wait(10)
        job = _wait("the job to end", lambda: (j := store.get(job_id)) and j.ended and j)
        assert job.status == "succeeded", job.error
        index = tiles.read_index()
        cut_by = [t["pid"] for t in index["parts"][0]["tiles"]]
        assert set(cut_by) == {parent.pid, helper.pid}  # both workers cut tiles
        assert cut_by[victim] == parent.pid  # the killed worker's tile, cut again
        assert any(f"tile {victim} of a0-b0: its worker" in line and "cutting it again" in line
                   for line in store.logs(job_id))
        prepared = prepare_slice(SliceSetup(model=str(net), data=str(tmp_path / "images.npy"),
                                            extent=12.0))
        whole = cut_slice(prepared.nets[0], prepared.plane, prepared.window, None, "cpu")
        assert job.summary["regions"] == [whole.counts]
        assert Path(job.summary["folder"]) == folder
    finally:
        for proc in workers:
            stop_worker(proc)
