"""What the heaviest request each page allows costs, against its default request.

Each row calls a page's real figure callback (cache cleared) with the largest settings its
caps let through, or just past them, and prints the seconds, the peak memory growth, whether it
was served or refused, and the ratio to the same page's default request timed in the same
process (the baseline).  The caps are in ``bnviz/caps.py`` (``EXPLORER_LIMITS``, 60k
regions a layer; ``JITTER_LIMITS``, 300k regions over all realisations), ``bnviz/views/jitter.py``
(2^17 points for Figure 7) and the partition's work cap (``bnviz.core.cut.WORK_PER_REGION``).

    .venv/bin/python bench/caps.py [--seeds N]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
warnings.filterwarnings("ignore")

from bnviz.service.memory import release_freed_memory  # noqa: E402
from bnviz.web import app  # noqa: E402, F401  (registers the callbacks)
from bnviz.web.callbacks.explorer import callbacks as ce  # noqa: E402
from bnviz.web.callbacks.jitter import callbacks as cj  # noqa: E402


def _explorer(depth, width, mode, seed, view="space", dataset="gaussian", batch=64,
              mu=0.5, sigma=1):
    controls = dict(depth=depth, width=width, activation="leaky_relu", alpha=0.1, mode=mode,
                    weight_seed=seed, dataset=dataset, n_points=2000, data_seed=0,
                    batch_size=batch, batch_seed=0, mu_t=mu, sigma_s=sigma, scope="all",
                    target_layer=1, target_unit=1, layer=1)

    def call():
        ce._explore_cached.cache_clear()
        out = ce.update_views(controls, [], view, True, False)
        return out[4] or "ok"
    return call


def _jitter(depth, width, k, batch_log2=4, n=2000):
    def call():
        cj._computed.cache_clear()
        out = cj.update_jitter("moons", n, depth, width, 0, 0, 0, batch_log2, k, None, None)
        return out[4] or "ok"
    return call


def _figure7(layer, batch_log2=9, virtual=8, depth=6, width=32):
    def call():
        cj._network_figure7.cache_clear()
        out = cj.update_figure7(str(layer), batch_log2, 3, virtual, "moons", 2000, depth,
                                width, 0, 0, None)
        return "ok" if isinstance(out[0], dict) else str(out[1])
    return call


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024


def _time(call) -> tuple[float, float, str]:
    """Seconds, peak resident memory above the start (MB), outcome.  The peak is reset
    before each call (Linux clear_refs), then the freed memory is given back after it, as
    the web server does after a heavy request."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    rss0 = _status_mb("VmRSS")
    t = time.perf_counter()
    outcome = call()
    dt = time.perf_counter() - t
    grew = _status_mb("VmHWM") - rss0
    release_freed_memory()
    return dt, grew, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the refused explorer row")
    args = parser.parse_args()
    pages = {
        "explorer": (_explorer(4, 8, "bn", 0, dataset="moons", batch=None, mu=0, sigma=1), [
            # the slowest found by a random search of 1200 settings at the caps
            ("d12 w48 bn gaussian |B|=64 (served)", _explorer(12, 48, "bn", 68)),
            ("d12 w64 bn blobs |B|=8, layers view (2 partitions)",
             _explorer(12, 64, "bn", 0, view="layers", dataset="blobs", batch=8, mu=1.5)),
            ("d12 w64 zero bias blobs, layers view",
             _explorer(12, 64, "zero_bias", 0, view="layers", dataset="blobs", mu=1.5)),
            *[(f"d12 w64 bn seed {s} (past the region cap)", _explorer(12, 64, "bn", s))
              for s in range(args.seeds)],
        ]),
        "jitter": (_jitter(3, 8, 16), [
            ("d3 w16 K=128", _jitter(3, 16, 128)),
            ("d6 w12 K=128 (past the region cap)", _jitter(6, 12, 128)),
            ("d2 w24 K=128 |B|=64", _jitter(2, 24, 128, batch_log2=6)),
            ("d2 w32 K=128 (past the work cap)", _jitter(2, 32, 128)),
            ("d6 w32 K=128 (past the caps)", _jitter(6, 32, 128)),
            ("d4 w32 K=64 (past the caps)", _jitter(4, 32, 64)),
        ]),
        "figure 7 (network)": (_figure7(1, batch_log2=4, depth=3, width=8), [
            ("layer 6 of d6 w32, |B|=512, B'=8", _figure7(6)),
            ("layer 6 of d6 w32, |B|=512, B'=256", _figure7(6, virtual=256)),
            ("layer 3 of d6 w32, |B|=512, B'=2", _figure7(3, virtual=2)),
        ]),
    }
    print(f"{'page':<20} {'request':<48} {'seconds':>8} {'x default':>10} {'peak +MB':>8}  "
          "outcome")
    for page, (baseline, rows) in pages.items():
        baseline()  # warm up (imports, first torch calls)
        base, _, _ = _time(baseline)
        print(f"{page:<20} {'default':<48} {base:8.3f} {1.0:10.1f} {'':>8}  ok")
        for name, call in rows:
            dt, grew, outcome = _time(call)
            print(f"{page:<20} {name:<48} {dt:8.3f} {dt / base:10.1f} {grew:8.0f}  "
                  f"{outcome[:70]}")


if __name__ == "__main__":
    main()
