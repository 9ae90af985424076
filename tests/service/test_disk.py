"""Disk: the uploads' quota and retention, and new work refused on a nearly full disk, with
a message, before anything is written (bnviz.service.disk)."""

from __future__ import annotations

import os
import time
from collections import namedtuple
from pathlib import Path

import pytest

from bnviz import jobs
from bnviz.core.network import random_network
from bnviz.records.store import open_store
from bnviz.service import disk
from bnviz.service.disk import DiskFull, enforce_quota
from bnviz.views import training_cache as tc


def _files(folder: Path, sizes_and_ages: list[tuple[int, float]], now: float) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (size, age) in enumerate(sizes_and_ages):
        path = folder / f"f{i}.npz"
        path.write_bytes(b"x" * size)
        os.utime(path, (now - age, now - age))
        paths.append(path)
    return paths


def test_enforce_quota_removes_expired_then_least_recently_used(tmp_path: Path) -> None:
    now = 1e9
    f0, f1, f2, f3 = _files(tmp_path, [(100, 50), (100, 40), (100, 30), (100, 10)], now)
    (tmp_path / "other.txt").write_bytes(b"y" * 1000)  # not matched: never counted
    # nothing expired, 400 bytes in a 250-byte quota: the two least recently used go
    evicted = enforce_quota(tmp_path, 250, retention_seconds=1000, now=now)
    assert evicted.removed == ("f0.npz", "f1.npz") and evicted.kept_bytes == 200
    assert not f0.exists() and not f1.exists() and f2.exists() and f3.exists()
    # within quota, but f2 has not been used for 30 s, past a 20 s retention
    evicted = enforce_quota(tmp_path, 10_000, retention_seconds=20, now=now)
    assert evicted.removed == ("f2.npz",) and f3.exists()
    assert enforce_quota(tmp_path, 10_000, 20, now=now).removed == ()


def _network_file(home: Path, seed: int) -> bytes:
    """The bytes of a small network's .npz, as the jitter page's download writes it."""
    from bnviz.views.train import save_network

    path = home / f"net{seed}.npz"
    save_network(random_network(2, 5, seed=seed, head_outputs=2), path)
    data = path.read_bytes()
    path.unlink()
    return data


def test_uploads_stay_within_their_quota_oldest_use_out_first(tmp_home: Path,
                                                               monkeypatch) -> None:
    def raw(seed: int) -> bytes:
        return _network_file(tmp_home, seed)

    size = len(raw(0))
    monkeypatch.setenv("BNVIZ_UPLOAD_QUOTA_MB", str(2.5 * size / 2**20))  # room for two
    refs = []
    for seed in range(3):
        refs.append(tc.save_uploaded(raw(seed)))
        time.sleep(0.02)  # distinct modification times
    kept = sorted(p.name for p in (tmp_home / "uploads").iterdir())
    assert len(kept) == 2 and tc.trained_path(refs[0]).name not in kept
    with pytest.raises(ValueError, match="no longer on the server"):
        tc.load_trained(refs[0])
    tc.load_trained(refs[1])  # a use: refs[1] is now the most recently used
    time.sleep(0.02)
    refs.append(tc.save_uploaded(raw(3)))
    assert tc.trained_path(refs[1]).is_file() and not tc.trained_path(refs[2]).is_file()
    assert tc.trained_path(refs[3]).is_file()


def test_uploads_past_their_retention_are_removed(tmp_home: Path, monkeypatch) -> None:
    old = tc.save_uploaded(_network_file(tmp_home, 1))
    stamp = time.time() - 3 * 86_400
    os.utime(tc.trained_path(old), (stamp, stamp))
    monkeypatch.setenv("BNVIZ_UPLOAD_RETENTION_DAYS", "2")
    new = tc.save_uploaded(_network_file(tmp_home, 2))
    assert not tc.trained_path(old).exists() and tc.trained_path(new).is_file()


Usage = namedtuple("Usage", "total used free")


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The file system of BNVIZ_HOME reports 100 MB free, under the 500 MB kept spare."""
    monkeypatch.setattr(disk.shutil, "disk_usage", lambda path: Usage(10**12, 10**12,
                                                                       100 * 2**20))


def test_a_nearly_full_disk_refuses_new_work_with_a_message(jobs_home: Path,
                                                            full_disk: None) -> None:
    with pytest.raises(DiskFull, match=r"nearly full \(100 MB free, it keeps 500 MB"):
        jobs.submit_job("smart-init", {"epochs": 1, "runs": 1, "width": 4})
    with pytest.raises(DiskFull):
        jobs.start_job("density", {})
    with pytest.raises(DiskFull):
        tc.save_uploaded(_network_file(jobs_home, 1))
    assert open_store().list() == []  # nothing stored, no worker started
    assert not (jobs_home / "uploads").exists() or not any((jobs_home / "uploads").iterdir())


def test_min_free_zero_takes_work_on_any_disk(jobs_home: Path, full_disk: None,
                                              monkeypatch) -> None:
    monkeypatch.setenv("BNVIZ_MIN_FREE_MB", "0")
    disk.check_free_disk()  # no refusal
