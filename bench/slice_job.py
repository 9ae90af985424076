"""A slice job on a real window: what cutting millions of regions as stored tiles costs.

The digits ResNet9 of the bench's slices (width 16, the seed's untrained network, eval mode;
kept as a safetensors file as the image jobs keep theirs) through test images 0, 1, 2, on a
square window ``--fraction`` of the default window's half-width about the images'
centroid (1: the default window, about 7 million regions), cut by the slice job's own code
(:mod:`bnviz.slices.tiled_job`, in this process as a job's process runs it: the estimate and
the tiles chosen by the check, the tiles cut on ``--workers`` processes, each stored as it
is done, then the seams merged) in ``--home`` (default: a fresh folder).  Printed: the
estimate and the tiles, the wall time of the check, the cut and the merge, the counts per
layer, the tiles' seconds, the peak RSS of this process, of the largest worker and of all
of them together (psutil, sampled every 0.2 s), the folder's size, and the merge alone in a
fresh process (every tile stored) with its RSS before it and its peak (sampled).
Prints the machine's load average before and after: the machine is shared.

Run: ``.venv/bin/python bench/slice_job.py --fraction 0.3 --workers 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class PeakRSS:
    """Peak resident memory of this process and its descendants while entered (sampled)."""

    def __enter__(self) -> PeakRSS:
        self.own = self.worker = self.total = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        me = psutil.Process()
        while not self.stop.wait(0.2):
            rss = []
            for p in [me, *me.children(recursive=True)]:
                try:
                    rss.append(p.memory_info().rss)
                except psutil.Error:
                    pass
            self.own = max(self.own, rss[0])
            self.worker = max([self.worker, *rss[1:]])
            self.total = max(self.total, sum(rss))

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def network(home: Path) -> Path:
    """The untrained digits ResNet9 of width 16, kept as the image jobs keep networks."""
    from bnviz.images.networks import build_model
    from bnviz.images.saved import save_network

    path = home / "resnet9-w16.safetensors"
    if not path.exists():
        model = build_model("resnet9", 1, 10, 8, "bn", width=16, seed=0).eval()
        save_network(model, path, {"arch": "resnet9", "in_ch": 1, "classes": 10, "size": 8,
                                   "mode": "bn", "affine": False, "width": 16})
    return path


def mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fraction", type=float, default=0.3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--tiles", type=int, default=1, help="1: the job chooses")
    p.add_argument("--home", type=Path, default=None)
    p.add_argument("--merge-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="bnviz-slice-job-"))
    home.mkdir(parents=True, exist_ok=True)  # a --home that is not there yet
    os.environ["BNVIZ_HOME"] = str(home)
    from bnviz.records.types import DistInfo, RecordingContext
    from bnviz.slices.setup import prepare_slice
    from bnviz.slices.tiled_job import TILED_SLICE_JOB
    from bnviz.slices.tiled_plan import job_params

    raw = {"weights": str(network(home)), "arch": "resnet9", "data": "digits",
           "images": "0,1,2", "tiles": args.tiles, "workers": args.workers}
    if args.merge_only:  # every tile stored: the networks read, then the merge alone
        from bnviz.slices.tiled_job import merge_stored
        from bnviz.slices.tiled_plan import tiled_setup

        setup = tiled_setup(json.loads((home / "params.json").read_text()), "cpu")
        # sampled, not ru_maxrss: Linux keeps a process's high-water mark across exec, so a
        # child of the large job process would report the job's peak as its own
        before = psutil.Process().memory_info().rss
        with PeakRSS() as peak:
            summary = merge_stored(setup, RecordingContext())
        print(json.dumps({"merge_seconds": summary["merge_seconds"], "before": before,
                          "peak_rss": max(peak.own, before)}))
        return
    default = prepare_slice(job_params(raw)).window
    raw["extent"] = args.fraction * max(abs(v) for v in default)
    print(f"load before: {load()}; home {home}")
    print(f"window: +-{raw['extent']:.4f} ({args.fraction} of the default half-width "
          f"{max(abs(v) for v in default):.4f})", flush=True)
    t0 = time.perf_counter()
    params = TILED_SLICE_JOB.check(raw)
    check = time.perf_counter() - t0
    (home / "params.json").write_text(json.dumps(params))
    print(f"check (networks, estimate): {check:.1f} s; {params['tiles']} tiles", flush=True)
    ctx = RecordingContext()
    t0 = time.perf_counter()
    with PeakRSS() as peak:
        summary = TILED_SLICE_JOB.run(params, ctx, DistInfo())
    wall = time.perf_counter() - t0
    folder = Path(summary["folder"])
    size = sum(f.stat().st_size for f in folder.iterdir())
    index = json.loads((folder / "index.json").read_text())
    tiles = index["parts"][0]["tiles"]
    regions = summary["regions"][0]
    each = [t["seconds"] for t in tiles]
    print(f"cut and merge: {wall:.1f} s wall ({summary['merge_seconds']:.1f} s of it the "
          f"merge); the tiles' own seconds {summary['seconds']:.1f} (min {min(each):.1f}, "
          f"max {max(each):.1f})")
    print(f"regions per layer: {regions}; last layer {regions[-1]:,}; cells "
          f"{index['parts'][0]['cells']:,}; boundary segments {index['parts'][0]['segments']:,}")
    print(f"regions a second (last layer, wall): {regions[-1] / wall:,.0f}")
    print(f"peak RSS: this process {mb(peak.own)}, the largest worker {mb(peak.worker)}, all "
          f"together {mb(peak.total)}; tiles on disk {mb(size)} "
          f"({size / regions[-1]:.0f} bytes a last-layer region)")
    out = subprocess.run([sys.executable, __file__, "--merge-only", "--home", str(home)],
                         capture_output=True, text=True, check=True)
    merge = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"the merge alone, in a fresh process: {merge['merge_seconds']:.1f} s, peak RSS "
          f"{mb(merge['peak_rss'])}, of which {mb(merge['before'])} before it (torch, the "
          f"network): the merge's own {mb(merge['peak_rss'] - merge['before'])}")
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
