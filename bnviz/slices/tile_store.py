"""A slice job's tiles on disk: one .npz shard per tile, written as soon as the tile is cut,
and a small JSON index; the format a slice of millions of regions streams from.

The folder is ``$BNVIZ_HOME/results/slice-tiles/<key>``, ``key`` a digest of what determines
the cut (:func:`bnviz.slices.tiled_job.tiles_key`: the parameters, the files' contents), not
the job's id: a job cancelled, failed, killed or run again with the same parameters finds the
tiles already cut and cuts only the rest.  Files (``part`` is ``a<arm>-b<mini-batch>``):

* ``<part>-t<index>.npz``, one tile: per nonlinear layer ``l<k>_`` its regions (``ptr``,
  ``vertices``: CSR polygons; ``codes``: the layer's own packed codes; ``parents``), facets
  (``facets``, ``facet_units``, ``facet_parents``) and ``seam`` (the regions on a tile line:
  :mod:`bnviz.slices.tile_seams`); the decision cells (``cells_*``) and boundary
  (``boundary``, ``boundary_parents``); the same for the tile's seams alone under ``s_``
  (what the merge reads, and nothing else); ``info``, one JSON text: the layers' names,
  kinds and shapes, the counts off the tile lines, the seconds, the host and process that
  cut it.  Every array is a plain one (``np.load(..., allow_pickle=False)`` reads it).
* ``<part>-seams.npz``: the merge of every tile's seams (the same layout, no ``s_``): the
  window's regions that span tiles, whole.  The window's partition is each tile's regions
  off the seams (``seam`` False) and these.
* ``index.json``: the parameters, the window, the tiles' rectangles, and per part the counts
  per layer (regions, facets, decision cells and segments), each tile's host, process and
  seconds.
* ``<part>-t<index>.claim``: on Celery, the worker that is cutting the tile (created with
  O_EXCL: one worker a tile), removed once the shard is there.

Each file is written to a temporary name and renamed into place, so a shard is whole or
absent; a worker killed while writing leaves a temporary file, which the next run removes.
Full disk: :class:`TileStoreError`, one line, and the shards written stay readable.
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from bnviz.config import bnviz_home
from bnviz.core.partition import Polygons
from bnviz.service.guard import strict_json
from bnviz.slices.engine import Slice, SliceLayer
from bnviz.slices.plane import Plane

__all__ = ["TileStore", "TileStoreError", "part_name", "tiles_root"]

_KEY = re.compile(r"^[0-9a-f]{16,64}$")


class TileStoreError(OSError):
    """A tile could not be stored (a full disk): the message is one line for the user."""


def tiles_root() -> Path:
    """Where every slice job keeps its tiles."""
    return bnviz_home() / "results" / "slice-tiles"


def part_name(arm: int, batch: int) -> str:
    """A partition of a slice job: its network (arm) and its mini-batch."""
    return f"a{int(arm)}-b{int(batch)}"


def _arrays(s: Slice, prefix: str = "") -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for k, lay in enumerate(s.layers):
        p = f"{prefix}l{k}_"
        out |= {p + "ptr": lay.regions.ptr, p + "vertices": lay.regions.vertices,
                p + "codes": lay.regions.packed_codes, p + "parents": lay.parents,
                p + "facets": lay.facets.reshape(-1, 4), p + "facet_units": lay.facet_units,
                p + "facet_parents": lay.facet_parents}
    cells = s.predicted
    return out | {prefix + "cells_ptr": cells.ptr, prefix + "cells_vertices": cells.vertices,
                  prefix + "cells_codes": cells.packed_codes,
                  prefix + "cells_class": s.predicted_class,
                  prefix + "cells_parents": s.predicted_parents,
                  prefix + "boundary": s.decision_boundary.reshape(-1, 4),
                  prefix + "boundary_parents": s.boundary_parents,
                  prefix + "window": np.asarray(s.window, np.float64)}


def _layers_info(s: Slice) -> list[dict[str, Any]]:
    return [{"name": lay.name, "kind": lay.kind, "shape": list(lay.shape),
             "units": lay.regions.n_units, "window_size": lay.window_size} for lay in s.layers]


def _slice(f: Any, layers: list[dict[str, Any]], plane: Plane | None, prefix: str = "") -> Slice:
    out = []
    for k, lay in enumerate(layers):
        p = f"{prefix}l{k}_"
        regions = Polygons(f[p + "ptr"], f[p + "vertices"], f[p + "codes"], lay["units"])
        out.append(SliceLayer(lay["name"], lay["kind"], tuple(lay["shape"]), regions,
                              f[p + "parents"], f[p + "facets"], f[p + "facet_units"],
                              f[p + "facet_parents"], lay["window_size"]))
    cells = Polygons(f[prefix + "cells_ptr"], f[prefix + "cells_vertices"],
                     f[prefix + "cells_codes"], 0)
    return Slice(plane, tuple(float(v) for v in f[prefix + "window"]), out,
                 f[prefix + "boundary"], cells, f[prefix + "cells_class"], 0.0, "",
                 f[prefix + "cells_parents"], f[prefix + "boundary_parents"])


class TileStore:
    """One slice job's folder of tiles (module docstring); ``key`` names it."""

    def __init__(self, key: str, root: Path | None = None):
        if not _KEY.match(key):
            raise ValueError(f"bad tiles key {key!r}")
        self.key = key
        self.folder = (root or tiles_root()) / key

    def shard(self, part: str, index: int) -> Path:
        return self.folder / f"{part}-t{int(index):04d}.npz"

    def seams(self, part: str) -> Path:
        return self.folder / f"{part}-seams.npz"

    @property
    def index(self) -> Path:
        return self.folder / "index.json"

    def has(self, part: str, index: int) -> bool:
        return self.shard(part, index).is_file()

    def stored(self, part: str, count: int) -> list[int]:
        """The tiles of ``part`` (of ``count``) whose shards are there."""
        return [i for i in range(count) if self.has(part, i)]

    def remove_temporary(self) -> None:
        """What a worker killed while writing left behind."""
        for path in self.folder.glob("*.tmp*"):
            path.unlink(missing_ok=True)

    def _write(self, path: Path, write: Any, what: str) -> None:
        """``write(file)`` to a temporary name beside ``path``, then renamed into place; a
        full disk (or any other OSError) is :class:`TileStoreError`, one line."""
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp{path.suffix}")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as f:
                write(f)
            tmp.replace(path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            why = "the disk is full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else \
                (exc.strerror or str(exc))
            raise TileStoreError(f"cannot store {what} in {self.folder}: {why}; the tiles "
                                 "stored there stay readable, and a rerun cuts only the "
                                 "others") from None

    def write_tile(self, part: str, index: int, tile: Slice, seams: Slice,
                   seam: list[np.ndarray], info: dict[str, Any]) -> None:
        """Store one tile: its slice, its seams (``seams``, and the mask ``seam`` of its
        regions on a tile line, per layer) and ``info`` (module docstring)."""
        arrays = _arrays(tile) | _arrays(seams, "s_")
        arrays |= {f"l{k}_seam": mask for k, mask in enumerate(seam)}
        text = json.dumps(info | {"layers": _layers_info(tile)})
        self._write(self.shard(part, index),
                    lambda f: np.savez_compressed(f, info=np.asarray(text), **arrays),
                    f"tile {index} of {part}")

    def write_seams(self, part: str, merged: Slice) -> None:
        """Store the merge of a part's seams."""
        text = json.dumps({"layers": _layers_info(merged)})
        self._write(self.seams(part),
                    lambda f: np.savez_compressed(f, info=np.asarray(text), **_arrays(merged)),
                    f"the seams of {part}")

    def write_index(self, index: dict[str, Any]) -> None:
        text = json.dumps(index, indent=1)
        self._write(self.index, lambda f: f.write(text.encode()), "the index")

    def read_info(self, part: str, index: int) -> dict[str, Any]:
        with np.load(self.shard(part, index), allow_pickle=False) as f:
            return strict_json(str(f["info"]))

    def read_tile(self, part: str, index: int, plane: Plane | None = None,
                  seams: bool = False) -> tuple[Slice, dict[str, Any]]:
        """A stored tile's slice (``seams``: its seams alone, what the merge reads) and its
        info; each array read from the shard only when asked for."""
        with np.load(self.shard(part, index), allow_pickle=False) as f:
            info = strict_json(str(f["info"]))
            return _slice(f, info["layers"], plane, "s_" if seams else ""), info

    def read_seam_masks(self, part: str, index: int) -> list[np.ndarray]:
        with np.load(self.shard(part, index), allow_pickle=False) as f:
            info = strict_json(str(f["info"]))
            return [f[f"l{k}_seam"] for k in range(len(info["layers"]))]

    def read_seams(self, part: str, plane: Plane | None = None) -> Slice:
        with np.load(self.seams(part), allow_pickle=False) as f:
            return _slice(f, strict_json(str(f["info"]))["layers"], plane)

    def read_index(self) -> dict[str, Any]:
        return strict_json(self.index.read_text())

    # -- claims: which Celery worker cuts a tile
    def claim(self, part: str, index: int, owner: dict[str, Any]) -> bool:
        """Take tile ``index`` of ``part`` for ``owner`` (host, pid...): False when another
        worker has it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self._claim(part, index), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            json.dump(owner, f)
        return True

    def claimant(self, part: str, index: int) -> dict[str, Any] | None:
        """Who has the tile (None: nobody; {} while a claim is being written)."""
        try:
            text = self._claim(part, index).read_text()
        except FileNotFoundError:
            return None
        try:
            return strict_json(text)
        except ValueError:
            return {}

    def release(self, part: str, index: int) -> None:
        self._claim(part, index).unlink(missing_ok=True)

    def _claim(self, part: str, index: int) -> Path:
        return self.folder / f"{part}-t{int(index):04d}.claim"
