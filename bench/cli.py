"""The command line as a user runs it: start-up and a large partition end to end.

* start-up: ``bnviz --help``, ``bnviz partition --help`` and an argument error, against the
  bare interpreter (``python -c pass``) as the baseline, median of ``--repeats`` runs;
* ``bnviz partition`` of a 128x4 random-bias net (He-normal, the default box), with each
  output: the summary, ``--format json-full``, ``--geometry`` .npz, .parquet, .geojson; the
  wall time, the peak memory (max RSS of the process) and the engine's own ``seconds``.

Each command is a fresh process (``/usr/bin/time`` reads its peak memory).
Run: ``.venv/bin/python bench/cli.py [--repeats 5] [--width 128 --depth 4]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PY = sys.executable


def timed(argv: list[str]) -> tuple[float, float, bytes]:
    """(wall seconds, peak RSS in MB, stdout) of one process."""
    with tempfile.NamedTemporaryFile() as report:
        proc = subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%e %M", *argv],
                              capture_output=True, check=False)
        wall, rss_kb = Path(report.name).read_text().split()[-2:]
    return float(wall), float(rss_kb) / 1024, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--depth", type=int, default=4)
    args = parser.parse_args()

    print("start-up (median of", args.repeats, "runs)")
    base = statistics.median(timed([PY, "-c", "pass"])[0] for _ in range(args.repeats))
    print(f"  {'python -c pass (baseline)':<36} {base:6.3f} s")
    for cmd in (["--help"], ["partition", "--help"], ["partition", "--depth", "x"],
                ["partition", "--geometry", "a.shp"]):
        t = statistics.median(timed([PY, "-m", "bnviz", *cmd])[0] for _ in range(args.repeats))
        print(f"  {'bnviz ' + ' '.join(cmd):<36} {t:6.3f} s  (+{t - base:.3f} s)")

    net = ["--depth", str(args.depth), "--width", str(args.width), "--mode", "random_bias"]
    print(f"\nbnviz partition {' '.join(net)}")
    with tempfile.TemporaryDirectory() as tmp:
        outputs = {"summary (default)": [], "--format json-full": ["--format", "json-full",
                                                                   "--out", f"{tmp}/p.json"],
                   "--geometry .npz": ["--geometry", f"{tmp}/p.npz"],
                   "--geometry .parquet": ["--geometry", f"{tmp}/p.parquet"],
                   "--geometry .geojson": ["--geometry", f"{tmp}/p.geojson"]}
        print(f"  {'output':<22} {'wall s':>7} {'peak MB':>8} {'engine s':>9} {'file MB':>8}")
        for name, extra in outputs.items():
            wall, rss, out = timed([PY, "-m", "bnviz", "partition", *net, *extra])
            summary = json.loads(out) if out.strip() else {}
            files = [Path(a) for a in extra if a.startswith(tmp)]
            size = files[0].stat().st_size / 2**20 if files else len(out) / 2**20
            print(f"  {name:<22} {wall:7.2f} {rss:8.0f} {summary.get('seconds', float('nan')):9.2f}"
                  f" {size:8.2f}")


if __name__ == "__main__":
    main()
