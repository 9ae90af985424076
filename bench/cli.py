"""The command line as a user waits for it: whole processes, cold and warm, beside Regioncam.

Every figure is the wall time of a fresh process (``/usr/bin/time``), as a user sees it:

* start-up: ``bnviz --help``, ``bnviz partition --help`` and an argument error, against the
  bare interpreter (``python -c pass``);
* ``bnviz partition`` at 8x2, 16x3, 32x4 and 128x4 (He-normal weights with N(0, 1) biases,
  ReLU, [-1, 1]^2, the same network written to an .npz that both read) beside Regioncam's
  whole process (python, numpy, regioncam, the cut) on that .npz, with the ratio and both
  region counts;
* ``bnviz figure9``, ``bnviz train`` at its defaults and ``bnviz replicate --json``.

Cold: the first run with an empty numba cache (``NUMBA_CACHE_DIR`` a new folder, as after a
fresh ``pip install``); warm: the best of ``--repeats`` runs after it.  The load average is
printed before and after: on a busy machine every figure grows.
Run: ``.venv/bin/python bench/cli.py [--repeats 3] [--skip-slow]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

PY = sys.executable
SIZES = ((8, 2), (16, 3), (32, 4), (128, 4))

#: Regioncam's whole process on the network of an .npz (W1..WL, c1..cL), ReLU, [-1, 1]^2.
REGIONCAM = """
import sys
import numpy as np
import regioncam
f = np.load(sys.argv[1])
cam = regioncam.Regioncam(size=1.0)
layer = 1
while f"W{layer}" in f.files:
    cam.linear(f[f"W{layer}"].T.astype(np.float32), f[f"c{layer}"].astype(np.float32))
    cam.relu()
    layer += 1
print(cam.num_faces)
"""


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, bytes]:
    """(wall seconds, stdout) of one process."""
    with tempfile.NamedTemporaryFile() as report:
        proc = subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%e", *argv],
                              capture_output=True, check=False, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-300:]}")
        return float(Path(report.name).read_text().split()[-1]), proc.stdout


def cold_warm(argv: list[str], repeats: int) -> tuple[float, float, bytes]:
    """(cold seconds: empty numba cache, warm seconds: best of ``repeats``, last stdout)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        cold, _ = timed(argv, env)
        runs = [timed(argv, env) for _ in range(repeats)]
    return cold, min(t for t, _ in runs), runs[-1][1]


def network_file(path: Path, width: int, depth: int, seed: int = 0) -> None:
    """He-normal weights, N(0, 1) biases (bnviz's random_bias network)."""
    rng = np.random.default_rng(seed)
    arrays, d_in = {}, 2
    for layer in range(1, depth + 1):
        arrays[f"W{layer}"] = rng.normal(0.0, np.sqrt(2.0 / d_in), (width, d_in))
        arrays[f"c{layer}"] = rng.normal(0.0, 1.0, width)
        d_in = width
    np.savez(path, **arrays)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-slow", action="store_true",
                        help="only start-up and partition (no figure9, train, replicate)")
    args = parser.parse_args()
    bnviz = [PY, "-m", "bnviz"]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} (1 min) at the start")

    print(f"\nstart-up (best of {args.repeats})")
    base = min(timed([PY, "-c", "pass"])[0] for _ in range(args.repeats))
    print(f"  {'python -c pass (baseline)':<36} {base:6.2f} s")
    for cmd in (["--help"], ["partition", "--help"], ["partition", "--depth", "x"]):
        t = min(timed([*bnviz, *cmd] if cmd[-1] != "x" else [PY, "-c",
                      "import sys; from bnviz.cli import main; main(sys.argv[1:])", *cmd])[0]
                for _ in range(args.repeats))
        print(f"  {'bnviz ' + ' '.join(cmd):<36} {t:6.2f} s")

    print("\nbnviz partition vs Regioncam, whole processes, ReLU, [-1, 1]^2 "
          "(ratio = bnviz / Regioncam, warm)")
    print(f"  {'net':>6} {'regions':>8} {'Regioncam':>9} {'bnviz cold':>10} {'bnviz warm':>10}"
          f" {'Regioncam s':>11} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "regioncam_cut.py"
        script.write_text(REGIONCAM)
        for width, depth in SIZES:
            net = Path(tmp) / f"net{width}x{depth}.npz"
            network_file(net, width, depth)
            cold, warm, out = cold_warm([*bnviz, "partition", "--weights-file", str(net), "--mode",
                                         "random_bias", "--activation", "relu", "--extent",
                                         "1"], args.repeats)
            ours = json.loads(out)["regions"]
            theirs_runs = [timed([PY, str(script), str(net)]) for _ in range(args.repeats)]
            theirs = min(t for t, _ in theirs_runs)
            faces = int(theirs_runs[-1][1])
            print(f"  {width:>3}x{depth:<2} {ours:>8} {faces:>9} {cold:>9.2f}s {warm:>9.2f}s"
                  f" {theirs:>10.2f}s {warm / theirs:>6.2f}")

    if not args.skip_slow:
        print(f"\nother commands (cold: empty numba cache; warm: best of {args.repeats})")
        with tempfile.TemporaryDirectory() as tmp:
            for cmd in (["figure9", "--json"], ["train", "--json"], ["replicate", "--json"],
                        ["figure9", "--out", f"{tmp}/f9.png"]):
                cold, warm, _ = cold_warm([*bnviz, *cmd], args.repeats)
                print(f"  {'bnviz ' + ' '.join(c if tmp not in c else 'f9.png' for c in cmd):<36}"
                      f" cold {cold:6.2f} s   warm {warm:6.2f} s")
    print(f"\nload average {os.getloadavg()[0]:.2f} (1 min) at the end")


if __name__ == "__main__":
    main()
