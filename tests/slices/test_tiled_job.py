"""The slice job (issue 45, items 3 and 6): a window cut as tiles, each stored as its own shard
as soon as it is cut, merged exactly at the end from the tiles' seams.

What it holds: the stored partition (each tile's regions off the tile lines, and the merged
seams) is the untiled cut's, region for region by full code and area, per layer, with the
same counts of facets, decision cells and boundary segments, in eval and train mode, on one
and two worker processes; a job stopped after some tiles (cancelled, failed) keeps them
readable, and the next job of the same parameters cuts only the missing ones; a worker
process killed mid-job has its tile cut again; a full disk fails the job in one line and
keeps the stored tiles; ``bnviz slice --submit`` runs it end to end through the command
line, and a window over the job's cap is refused before anything is queued, one line naming
the cap and the estimate (the command and the page's path)."""

from __future__ import annotations

import errno
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from onnx_nets import conv_net
from slice_compare import full_codes
from tile_faults import die_once

from bnviz import jobs
from bnviz.records.store import open_store
from bnviz.records.types import DistInfo, ParamError, RecordingContext
from bnviz.slices import tiled_job, tiled_plan
from bnviz.slices.engine import Slice, cut_slice
from bnviz.slices.graph import batch_statistics
from bnviz.slices.setup import prepare_slice
from bnviz.slices.tile_pool import TileCut
from bnviz.slices.tile_store import TileStore
from bnviz.slices.tiled_job import TILED_SLICE_JOB
from bnviz.slices.view import batch_indices

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path):
    """A residual ONNX conv net (three ReLU layers and an add: four nonlinear layers), a max
    pooling one, and 20 images of their input."""
    images = np.random.default_rng(0).normal(0, 1, (20, 1, 6, 6)).astype(np.float32)
    np.save(tmp_path / "images.npy", images)
    return {"residual": conv_net(tmp_path / "residual.onnx", residual=True),
            "maxpool": conv_net(tmp_path / "maxpool.onnx", maxpool=True),
            "images": tmp_path / "images.npy"}


def _raw(files, net: str = "residual", **kw) -> dict:
    return {"model": str(files[net]), "data": str(files["images"]), "tiles": 4,
            "workers": 1} | kw


def _untiled(raw: dict) -> list[Slice]:
    """The untiled cut of each of the job's mini-batches (eval mode: one)."""
    params = TILED_SLICE_JOB.check(raw)
    prepared = prepare_slice(tiled_plan.job_params(params))
    net = prepared.nets[0]
    stats = [None]
    if params["bn"] == "train":
        chosen = batch_indices(len(prepared.train), tiled_plan.job_params(params))
        stats = [batch_statistics(net, torch.as_tensor(prepared.train[i], dtype=torch.float64))
                 for i in chosen]
    return [cut_slice(net, prepared.plane, prepared.window, s, "cpu") for s in stats]


def _stored_regions(store: TileStore, part: str, tiles: int) -> list[tuple]:
    """Per layer, the stored partition's regions as (full codes, areas): each tile's regions
    off its seams (their full codes from the tile's own layers), then the merged seams."""
    layers: list[list[tuple]] = []
    for i in [*range(tiles), None]:
        s = store.read_seams(part) if i is None else store.read_tile(part, i)[0]
        masks = [None] * len(s.layers) if i is None else store.read_seam_masks(part, i)
        for k, (codes, lay) in enumerate(zip(full_codes(s), s.layers, strict=True)):
            keep = np.ones(len(codes), bool) if masks[k] is None else ~masks[k]
            if len(layers) <= k:
                layers.append([])
            layers[k].append((codes[keep], lay.regions.areas()[keep]))
    return [tuple(np.concatenate(x) for x in zip(*per, strict=True)) for per in layers]


def _keyed(codes: np.ndarray, areas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = np.ascontiguousarray(codes).view(np.dtype((np.void, codes.shape[1])))[:, 0]
    order = np.argsort(keys)
    return keys[order], areas[order]


def assert_stored_is_untiled(summary: dict, whole: list[Slice], tiles: int) -> None:
    """The job's stored partition, per layer and mini-batch, is the untiled cut's."""
    store = TileStore(Path(summary["folder"]).name)
    index = store.read_index()
    assert [p["regions"] for p in index["parts"]] == [s.counts for s in whole]
    assert summary["regions"] == [whole[0].counts]
    for part, s in zip(index["parts"], whole, strict=True):
        assert part["cells"] == len(s.predicted)
        assert part["segments"] == len(s.decision_boundary)
        relu = [k for k, lay in enumerate(s.layers) if lay.kind == "relu"]
        assert [part["facets"][k] for k in relu] == [len(s.layers[k].facets) for k in relu]
        assert len(part["tiles"]) == tiles
        area = np.prod(np.diff(np.reshape(s.window, (2, 2)), axis=1))
        for (codes, areas), want, lay in zip(_stored_regions(store, part["part"], tiles),
                                             full_codes(s), s.layers, strict=True):
            got_keys, got_areas = _keyed(codes, areas)
            want_keys, want_areas = _keyed(want, lay.regions.areas())
            assert np.array_equal(got_keys, want_keys), lay.name
            np.testing.assert_allclose(got_areas, want_areas, rtol=1e-9, atol=1e-12 * area)


@pytest.mark.parametrize(("net", "bn", "workers"), [("residual", "eval", 1),
                                                    ("maxpool", "train", 2)])
def test_the_job_stores_the_untiled_partition(tmp_home, files, net, bn, workers):
    """Per layer the untiled cut's regions (full code and area), facets, decision cells and
    boundary segments; in train mode for each of two mini-batches."""
    extra = {"bn": "train", "batch": str(files["images"]), "batches": 2,
             "batch_size": 8} if bn == "train" else {}
    raw = _raw(files, net, tiles=9, workers=workers, **extra)
    whole = _untiled(raw)
    assert min(whole[0].counts) > 500
    ctx = RecordingContext()
    summary = TILED_SLICE_JOB.run(TILED_SLICE_JOB.check(raw), ctx, DistInfo())
    assert summary["tiles_cut"] == 9 * len(whole) and summary["tiles_resumed"] == 0
    assert_stored_is_untiled(summary, whole, 9)
    assert ctx.fractions[-1] == 1.0 and ctx.fractions == sorted(ctx.fractions)
    if bn == "train":
        assert summary["regions_per_batch"] == [[s.counts for s in whole]]
    if workers == 2:  # each part's tiles were cut by two processes, not this one
        parts = TileStore(Path(summary["folder"]).name).read_index()["parts"]
        assert [len({t["pid"] for t in p["tiles"]}) for p in parts] == [2, 2]
        assert f":{os.getpid()}" not in str(summary["hosts"])


def test_the_job_chooses_its_tiles_by_the_bound(tmp_home, files, monkeypatch):
    monkeypatch.setattr(tiled_job, "TILE_REGIONS", 1000)
    params = TILED_SLICE_JOB.check(_raw(files, tiles=1))
    assert params["tiles"] > 1 and params["max_regions"] == 20_000_000


def _counting_cuts(monkeypatch) -> list:
    """Every tile cut in this process, by its rectangle."""
    cuts: list = []
    original = TileCut.cut

    def counted(self, rect, progress=None):
        cuts.append(rect)
        return original(self, rect, progress)

    monkeypatch.setattr(TileCut, "cut", counted)
    return cuts


def test_a_cancelled_job_keeps_its_tiles_and_a_rerun_cuts_only_the_rest(inline_jobs, files,
                                                                        monkeypatch):
    """Through the job system: cancelled after its second tile, the job leaves two readable
    shards; its rerun cuts the other seven, and stores the untiled partition."""
    cuts = _counting_cuts(monkeypatch)
    original = TileStore.write_tile
    wrote: list[int] = []

    def cancel_after_two(self, part, index, *args):
        original(self, part, index, *args)
        wrote.append(index)
        if len(wrote) == 2:
            jobs.cancel_job(job.id)

    monkeypatch.setattr(TileStore, "write_tile", cancel_after_two)
    job = jobs.submit_job("slice-tiles", _raw(files, tiles=9))
    job = jobs.wait_job(job.id, timeout=120, poll=0.05)
    assert job.status == "cancelled" and len(cuts) == 2
    store = TileStore(tiled_plan.tiles_key(job.params))
    assert store.stored("a0-b0", 9) == sorted(wrote)
    for i in wrote:  # whole and readable
        assert store.read_tile("a0-b0", i)[0].counts[0] > 0
    monkeypatch.setattr(TileStore, "write_tile", original)
    rerun = jobs.wait_job(jobs.rerun_job(job.id).id, timeout=120, poll=0.05)
    assert rerun.status == "succeeded", rerun.error
    assert len(cuts) == 9 and not set(cuts[:2]) & set(cuts[2:])  # each tile cut once
    assert rerun.summary["tiles_resumed"] == 2 and rerun.summary["tiles_cut"] == 7
    assert any("2 of 9 stored before" in line for line in open_store().logs(rerun.id))
    assert_stored_is_untiled(rerun.summary, _untiled(_raw(files, tiles=9)), 9)


def test_a_full_disk_fails_the_job_in_one_line_and_keeps_the_tiles(inline_jobs, files,
                                                                   monkeypatch):
    """The third shard's write finds the disk full (ENOSPC, half a file written): the job
    fails with the reason in one line, the two shards written stay readable, nothing half
    written is left, and a rerun cuts only the rest."""
    original = TileStore._write
    calls: list[Path] = []

    def full_at_third(self, path, write, what):
        calls.append(path)
        if len(calls) == 3:
            def half(f):
                f.write(b"PK\x03\x04 half a shard")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            return original(self, path, half, what)
        return original(self, path, write, what)

    monkeypatch.setattr(TileStore, "_write", full_at_third)
    job = jobs.wait_job(jobs.submit_job("slice-tiles", _raw(files, tiles=4)).id, timeout=120,
                        poll=0.05)
    assert job.status == "failed" and "\n" not in job.error
    assert "the disk is full" in job.error and "stay readable" in job.error
    store = TileStore(tiled_plan.tiles_key(job.params))
    assert len(store.stored("a0-b0", 4)) == 2
    assert sorted(p.name for p in store.folder.iterdir()) == [
        f"a0-b0-t{i:04d}.npz" for i in store.stored("a0-b0", 4)]
    for i in store.stored("a0-b0", 4):
        assert store.read_tile("a0-b0", i)[0].counts[0] > 0
    monkeypatch.setattr(TileStore, "_write", original)
    cuts = _counting_cuts(monkeypatch)
    rerun = jobs.wait_job(jobs.rerun_job(job.id).id, timeout=120, poll=0.05)
    assert rerun.status == "succeeded" and len(cuts) == 2


def test_a_killed_worker_process_has_its_tile_cut_again(tmp_home, files, monkeypatch, tmp_path):
    """A tile pool's worker killed (SIGKILL) after cutting a tile and before storing it: the
    pool starts another, the tile is cut again, and the job stores every tile once."""
    marker = tmp_path / "killed"
    original = tiled_plan.tile_keeper
    monkeypatch.setattr(tiled_job, "tile_keeper", lambda setup, part: functools.partial(
        die_once, str(marker), 2, original(setup, part)))
    raw = _raw(files, tiles=4, workers=2)
    summary = TILED_SLICE_JOB.run(TILED_SLICE_JOB.check(raw), RecordingContext(), DistInfo())
    assert marker.exists()  # a worker did die
    assert summary["tiles_cut"] == 4 and len(summary["hosts"]) >= 3  # and one replaced it
    assert_stored_is_untiled(summary, _untiled(raw), 4)


def _bnviz(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "bnviz", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_submit_runs_the_slice_as_a_job_end_to_end(jobs_home, files, tmp_path):
    """``bnviz slice ... --submit`` (relative paths: the job gets them whole), then ``bnviz
    jobs wait`` and ``jobs show``: the counts per layer of ``bnviz slice`` itself."""
    flags = ["--model", files["residual"].name, "--data", "images.npy", "--extent", "3"]
    one = _bnviz("slice", *flags, "--json", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    sub = _bnviz("slice", *flags, "--tiles", "4", "--submit", "--json", cwd=tmp_path)
    assert sub.returncode == 0, sub.stderr
    job_id = json.loads(sub.stdout)["id"]
    waited = _bnviz("jobs", "wait", job_id, "--timeout", "240", cwd=tmp_path)
    assert waited.returncode == 0 and "succeeded" in waited.stdout, waited.stdout + waited.stderr
    shown = json.loads(_bnviz("jobs", "show", job_id, "--json", cwd=tmp_path).stdout)
    assert shown["type"] == "slice-tiles" and shown["params"]["model"] == str(files["residual"])
    assert shown["summary"]["regions"] == [json.loads(one.stdout)["regions"]]
    assert (Path(shown["summary"]["folder"]) / "index.json").is_file()


@pytest.mark.parametrize(("flags", "words"), [
    (["--max-regions", "100"], "over a slice job's cap of 100: "),
    (["--tiles", "0"], "--tiles: "), (["--tiles", "257"], "--tiles: "),
    (["--workers", "0"], "--workers: "), (["--workers", "65"], "--workers: "),
    (["--format", "png"], "--format: not with --submit")])
def test_submit_refuses_in_one_line_before_anything_is_queued(jobs_home, files, tmp_path,
                                                               flags, words):
    out = _bnviz("slice", "--model", str(files["residual"]), "--data", str(files["images"]),
                 "--submit", *flags, cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1
    assert out.stderr.startswith("bnviz: error: ") and words in out.stderr, out.stderr
    if "cap" in words:  # the estimate, and the bound the cap acted on
        assert "regions" in out.stderr and ("bound of" in out.stderr or "more than" in
                                            out.stderr or "exactly" in out.stderr)
    assert open_store().list() == []


def test_the_interactive_refusal_offers_the_job(files, tmp_path):
    """Over the command's cap but within the job's: the one line says --submit would cut it."""
    out = _bnviz("slice", "--model", str(files["residual"]), "--data", str(files["images"]),
                 "--max-regions", "100", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "over the cap of 100: " in out.stderr
    assert "or run it as a slice job (--submit, up to 20,000,000)" in out.stderr


def test_the_pages_job_is_refused_over_the_jobs_cap(jobs_home, monkeypatch):
    """The page's "run as a job" path: a window whose bound is over a slice job's cap (here
    lowered to 1,000: the test's networks have fewer regions than the cap in any window) is
    refused before it is queued, one line with the estimate and the cap."""
    from kept_jobs import kept_job

    from bnviz.params import slice as slice_params
    from bnviz.web.callbacks.slice import callbacks as cs

    monkeypatch.setattr(slice_params, "SLICE_JOB_MAX_TOTAL_REGIONS", 1000)
    job_id = kept_job()
    raw = cs.tiled_params(job_id, "bn_init", "zero_bias", "0,1,2", "eval", 1, 0)
    assert "max_regions" not in raw and raw["arms"] == "bn_init,zero_bias"  # the job's own
    with pytest.raises(ParamError) as refused:
        jobs.start_job("slice-tiles", raw)
    line = str(refused.value)
    assert "\n" not in line and "over a slice job's cap of 1,000: " in line
    assert "would have about" in line and "a bound of" in line
    assert open_store().list() == [open_store().get(job_id)]  # (the kept job alone)
