"""A job's arrays, in one file per job: ``$BNVIZ_HOME/results/<job id>.npz``.

The page jobs (density counts, landscape curves, a trained network) write their result here
through ``ctx.save_result``, atomically (a temporary file in the same folder, then a rename),
so a reader never sees half a file. A Celery worker writes the same path when it shares
``BNVIZ_HOME`` with the web servers (the compose file's ``/data`` volume). Ids are checked
(:func:`~bnviz.records.store.check_job_id`) before they become a path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bnviz.config import bnviz_home
from bnviz.records.store import check_job_id

__all__ = ["checkpoint_path", "has_result", "job_networks", "load_result", "network_path",
           "result_path", "write_network", "write_result"]


def result_path(job_id: str) -> Path:
    """Where a job's result lives (ValueError for anything but a job id)."""
    return bnviz_home() / "results" / f"{check_job_id(job_id)}.npz"


def checkpoint_path(job_id: str) -> Path:
    """Where a running job keeps its last checkpoint (a torch file; removed when it ends)."""
    return bnviz_home() / "checkpoints" / f"{check_job_id(job_id)}.pt"


def network_path(job_id: str, name: str) -> Path:
    """Where a job keeps one of its trained networks (safetensors: weights and BN's running
    statistics), ``name`` being the arm and run, e.g. ``bn-run0``."""
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"bad network name {name!r}")
    return bnviz_home() / "networks" / check_job_id(job_id) / f"{name}.safetensors"


def job_networks(job_id: str) -> list[str]:
    """The names of the networks a job kept, sorted."""
    folder = bnviz_home() / "networks" / check_job_id(job_id)
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.safetensors") if "." not in p.stem)  # (tmp)


def write_network(job_id: str, name: str, write: Callable[[Path], None]) -> Path:
    """``write(path)`` writes a file to a temporary path, which is then moved into place."""
    return _written(network_path(job_id, name), write)


def has_result(job_id: str) -> bool:
    return result_path(job_id).is_file()


def write_result(job_id: str, write: Callable[[Any], None]) -> Path:
    """``write(path)`` writes an .npz to a temporary path; it is then moved into place."""
    return _written(result_path(job_id), write)


def _written(path: Path, write: Callable[[Path], None]) -> Path:
    """``write(tmp)`` beside ``path`` (the same suffix: np.savez keeps it), then renamed into
    place, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def load_result(job_id: str) -> dict[str, np.ndarray]:
    """The arrays of a job's result (OSError when there is none; never unpickled)."""
    with np.load(result_path(job_id), allow_pickle=False) as f:
        return {k: f[k] for k in f.files}
