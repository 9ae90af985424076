"""Lecture view speed, in the browser: how long each tour step takes to appear, and a slider
step's repaint at the default network (4x8, 100 moons points), against the explorer page's
mu slider measured the same way in the same process (the baseline).

Serves the real dashboard with werkzeug on a loopback port in this process (as
bench/explorer.py does, whose browser and timing helpers it uses) and opens it in headless
Chromium at 1280x720:

* tour: PageDown from step 1 to the last, twice (``--passes``) with ``--dwell`` seconds on
  each step first (the next step is prepared in the browser meanwhile), then once straight
  through (the baseline: nothing prepared), each time from the key's dispatch to the
  lecture graph's next ``plotly_afterplot``; the steps are precomputed first
  (``bnviz.lecture.scenes.precompute_tour``, as a server does at start);
* slider: ``--steps`` arrow-key steps of the mu slider at the explorer's default state opened
  in the lecture view (``/lecture?step=0``), keydown -> afterplot, then the same on the
  explorer page (``/``); the ratio lecture / explorer is printed.

* playback: `p` on the training step until its last recorded frame is drawn, against its
  nominal duration (frames x 120 ms at x1);
* export: "export all"'s work (``bnviz.lecture.slides.slides_zip``) in this process.

Everything is measured twice: on the machine as it is, then beside a CPU hog (one busy
process per core, ``--no-hog`` skips it), as on a lecture laptop that shares its screen and
records; the load average is printed with each. Goals (issues 16, 31): a tour step p90
under 300 ms, a slider step median under 120 ms (quiet), the playback under 1.5x its nominal
duration with the hog, export under 10 s. It only prints. Run:
``.venv/bin/python bench/lecture.py [--steps 30] [--passes 2] [--dwell 1.5] [--no-hog]``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import explorer as explorer_bench  # noqa: E402  (bench/explorer.py)

from bnviz.lecture.scenes import precompute_tour  # noqa: E402
from bnviz.lecture.tour import TOUR  # noqa: E402
from bnviz.web.callbacks.explorer import ids as explorer_ids  # noqa: E402
from bnviz.web.callbacks.lecture import ids  # noqa: E402

# One key on the page (the document): keydown -> the graph's next afterplot.
PAGE_KEY = """
const [graphId, key] = arguments;
const done = arguments[arguments.length - 1];
const events = window.__bench[graphId];
const before = events.length;
const t0 = performance.now();
document.body.dispatchEvent(new KeyboardEvent('keydown', {key: key, bubbles: true,
                                                          cancelable: true}));
(function poll() {
  const now = performance.now();
  if (events.length > before && now - events[before] > 60 || now - t0 > 30000) {
    done({ms: events.length > before ? events[before] - t0 : null,
          counter: document.getElementById('lecture-counter').textContent});
  } else { setTimeout(poll, 2); }
})();
"""


def tour_pass(driver, base: str, dwell: float) -> list[float]:
    """PageDown through the tour, ``dwell`` seconds on each step before the key (a lecturer
    talks for minutes; the next step is prepared meanwhile); 0 clicks straight through."""
    driver.get(base + "/lecture?step=1")
    explorer_bench.wait_for(lambda: driver.execute_script(explorer_bench.LISTEN, ids.GRAPH),
                            60, "the lecture graph")
    time.sleep(0.5)
    out = []
    for step in range(2, len(TOUR) + 1):
        time.sleep(dwell)
        r = driver.execute_async_script(PAGE_KEY, ids.GRAPH, "PageDown")
        if not r["counter"].startswith(f"{step} /"):
            raise RuntimeError(f"expected step {step}, the page shows {r['counter']}")
        out.append(r["ms"])
    return out


def slider_sweep(driver, url: str, graph: str, slider: str, n: int) -> list[float]:
    driver.get(url)
    explorer_bench.wait_for(lambda: driver.execute_script(explorer_bench.LISTEN, graph), 60,
                            f"the graph {graph}")
    time.sleep(0.5)
    out = []
    for key in explorer_bench.keys_for(n):
        r = driver.execute_async_script(explorer_bench.STEP, graph, key, slider)
        if r["after"] is not None:
            out.append(r["after"] - r["t0"])
    return out


#: `p` on the training step: keydown -> the last recorded frame drawn (its annotation's step).
PLAYBACK = """
const done = arguments[arguments.length - 1];
const gd = document.querySelector('#lecture-graph .js-plotly-plot');
const n = gd.layout.meta.frames;
const last = () => gd.layout.annotations.slice(-1)[0].text;
const end = gd._transitionData._frames[n - 1].layout.annotations.slice(-1)[0].text;
const t0 = performance.now();
document.body.dispatchEvent(new KeyboardEvent('keydown', {key: 'p', bubbles: true,
                                                          cancelable: true}));
(function poll() {
  if (last() === end) { done({ms: performance.now() - t0, frames: n}); }
  else if (performance.now() - t0 > 120000) { done({ms: null, frames: n}); }
  else { setTimeout(poll, 5); }
})();
"""


def playback(driver, base: str) -> tuple[float | None, float]:
    """(ms to the training step's last frame, its nominal ms)."""
    from bnviz.lecture.tour import step_by_key
    from bnviz.web.callbacks.lecture.callbacks import ANIMATIONS

    driver.get(base + f"/lecture?step={step_by_key('train').number}")
    explorer_bench.wait_for(lambda: driver.execute_script(explorer_bench.LISTEN, ids.GRAPH),
                            60, "the lecture graph")
    time.sleep(1.0)
    r = driver.execute_async_script(PLAYBACK)
    return r["ms"], (r["frames"] - 1) * ANIMATIONS["frames"]["ms"]


def _busy() -> None:
    while True:
        pass


def start_hog() -> list[multiprocessing.Process]:
    """One busy process per core (daemonic: they end with this process at the latest)."""
    procs = [multiprocessing.Process(target=_busy, daemon=True)
             for _ in range(os.cpu_count() or 1)]
    for p in procs:
        p.start()
    time.sleep(3)  # the load average starts to show them
    return procs


def measure(driver, base: str, args, label: str) -> None:
    from bnviz.lecture.slides import slides_zip

    print(f"\n==== {label}: load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    for p, dwell in enumerate([args.dwell] * args.passes + [0.0]):
        ms = tour_pass(driver, base, dwell)
        worst = max(range(len(ms)), key=lambda i: ms[i])
        how = (f"{dwell:g} s on each step first" if dwell else
               "straight through, no time to prepare the next step (the baseline)")
        print(f"tour pass {p + 1}, {how}: PageDown -> step drawn, steps 2-{len(TOUR)}")
        print(explorer_bench.line("step appears", ms))
        print(f"  p90 {explorer_bench.pct(ms, 0.9):.0f} ms; slowest: step {worst + 2} "
              f"({TOUR[worst + 1].key}) {ms[worst]:.0f} ms; over 300 ms: "
              f"{sum(m > 300 for m in ms)} of {len(ms)}")
    lecture = slider_sweep(driver, base + "/lecture?step=0", ids.GRAPH, ids.MU, args.steps)
    explorer = slider_sweep(driver, base + "/", explorer_ids.GRAPH_SPACE, explorer_ids.MU,
                            args.steps)
    print("mu slider step at the default network (4x8, 100 points), keydown -> afterplot")
    print(explorer_bench.line("lecture view", lecture))
    print(explorer_bench.line("explorer page (baseline)", explorer))
    print(f"  ratio lecture / explorer (medians): "
          f"{explorer_bench.pct(lecture, 0.5) / explorer_bench.pct(explorer, 0.5):.2f}")
    took, nominal = playback(driver, base)
    shown = "did not end" if took is None else f"{took / 1000:.2f} s ({took / nominal:.2f}x)"
    print(f"training playback: {shown}, nominal {nominal / 1000:.2f} s")
    slides_zip.cache_clear()  # made once per theme in a process: measure the making
    t0 = time.perf_counter()
    slides_zip("light")
    print(f"export all (slides_zip, light, not cached): {time.perf_counter() - t0:.1f} s")
    print(f"load average at the end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="mu slider steps per page")
    parser.add_argument("--passes", type=int, default=2, help="passes through the tour")
    parser.add_argument("--dwell", type=float, default=1.5,
                        help="seconds on each step before the next key")
    parser.add_argument("--hog", action=argparse.BooleanOptionalAction, default=True,
                        help="measure again beside a CPU hog")
    args = parser.parse_args()
    t0 = time.perf_counter()
    precompute_tour()
    print(f"precomputing the {len(TOUR)} steps: {time.perf_counter() - t0:.1f} s")
    srv, thread, _log = explorer_bench.start_server()
    base = f"http://127.0.0.1:{srv.server_port}"
    driver = explorer_bench.start_browser()
    driver.set_window_size(1280, 720)
    hog: list = []
    try:
        measure(driver, base, args, "as the machine is")
        if args.hog:
            hog = start_hog()
            measure(driver, base, args, f"beside a CPU hog ({len(hog)} busy processes)")
    finally:
        for p in hog:
            p.terminate()
        driver.quit()
        srv.shutdown()
        thread.join(timeout=5)


if __name__ == "__main__":
    main()
