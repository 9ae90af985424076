"""Lecture view speed, in the browser: how long each tour step takes to appear and how many
times it is drawn, the presenter-to-projector lag, a slider step's repaint at the default
network (4x8, 100 moons points) against the explorer page's mu slider measured the same way
in the same process (the baseline), the training playback, and "export all" cold and warm.

Serves the real dashboard with werkzeug on a loopback port in this process (as
bench/explorer.py does, whose browser and timing helpers it uses) and opens it in headless
Chromium at 1280x720:

* tour: PageDown from step 1 to the last, twice (``--passes``) with ``--dwell`` seconds on
  each step first (the next step is prepared in the browser meanwhile), then once straight
  through (the baseline: nothing prepared), each time from the key's dispatch to the
  lecture graph's next ``plotly_afterplot``: its median and p90; and, in the passes that
  dwell, the graph's draws per step (its afterplots from one key to the next: 1 is the goal,
  issue 46); the steps are precomputed first (``bnviz.lecture.scenes.precompute_tour``, as a
  server does at start);
* lag: a presenter and a projector window on one session (bench/lecture_lag.py), the
  presenter stepping through the tour with ``--dwell`` seconds on each step; from its key to
  the projector's afterplot of the step, over the one browser's BroadcastChannel and through
  the server alone (two machines);
* slider: ``--steps`` arrow-key steps of the mu slider at the explorer's default state opened
  in the lecture view (``/lecture?step=0``), keydown -> afterplot, then the same on the
  explorer page (``/``); the ratio lecture / explorer is printed.
* playback: `p` on the training step until its last recorded frame is drawn, against its
  nominal duration (frames x 120 ms at x1);
* export: the page's "export all" button, click -> the zip in the browser, cold (a jobs
  store with no stored zip: a BNVIZ_HOME of its own that shares this one's cache of the
  papers' results, as a restarted server has it; the local job worker starts and draws every
  slide) and warm (the second click: the stored zip, nothing drawn).

Everything is measured twice: on the machine as it is, then beside a CPU hog (one busy
process per core, ``--no-hog`` skips it), as on a lecture laptop that shares its screen and
records; the load average is printed with each. Goals (issues 16, 31, 46): a tour step p90
under 300 ms, one draw per step, a slider step median under 120 ms (quiet), the playback
under 1.5x its nominal duration with the hog, export under 10 s, a warm export instant. It
only prints. Run:
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
from lecture_export import export_times  # noqa: E402  (bench/lecture_export.py)
from lecture_lag import lag_pass  # noqa: E402  (bench/lecture_lag.py)

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
    done({ms: events.length > before ? events[before] - t0 : null, before: before,
          counter: document.getElementById('lecture-counter').textContent});
  } else { setTimeout(poll, 2); }
})();
"""


def tour_pass(driver, base: str, dwell: float) -> tuple[list[float], list[int]]:
    """PageDown through the tour, ``dwell`` seconds on each step before the key (a lecturer
    talks for minutes; the next step is prepared meanwhile); 0 clicks straight through.
    The ms from each key to its step drawn, and the draws of each step (the graph's
    afterplots from its key to the next key, or to ``dwell`` seconds after the last)."""
    driver.get(base + "/lecture?step=1")
    explorer_bench.wait_for(lambda: driver.execute_script(explorer_bench.LISTEN, ids.GRAPH),
                            60, "the lecture graph")
    time.sleep(0.5)
    out, starts = [], []
    for step in range(2, len(TOUR) + 1):
        time.sleep(dwell)
        r = driver.execute_async_script(PAGE_KEY, ids.GRAPH, "PageDown")
        if not r["counter"].startswith(f"{step} /"):
            raise RuntimeError(f"expected step {step}, the page shows {r['counter']}")
        out.append(r["ms"])
        starts.append(r["before"])
    time.sleep(dwell)
    starts.append(driver.execute_script(f"return window.__bench['{ids.GRAPH}'].length;"))
    return out, [b - a for a, b in zip(starts, starts[1:], strict=False)]


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


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _measured(ms: list[float | None]) -> list[float]:
    return [m for m in ms if m is not None]


def measure(driver, base: str, args, label: str) -> None:
    print(f"\n==== {label}: load average {_load()}")
    for p, dwell in enumerate([args.dwell] * args.passes + [0.0]):
        ms, draws = tour_pass(driver, base, dwell)
        worst = max(range(len(ms)), key=lambda i: ms[i])
        how = (f"{dwell:g} s on each step first" if dwell else
               "straight through, no time to prepare the next step (the baseline)")
        print(f"tour pass {p + 1}, {how}: PageDown -> step drawn, steps 2-{len(TOUR)}")
        print(explorer_bench.line("step appears", ms))
        print(f"  median {explorer_bench.pct(ms, 0.5):.0f} ms, p90 "
              f"{explorer_bench.pct(ms, 0.9):.0f} ms; slowest: step {worst + 2} "
              f"({TOUR[worst + 1].key}) {ms[worst]:.0f} ms; over 300 ms: "
              f"{sum(m > 300 for m in ms)} of {len(ms)}")
        if dwell:
            more = {n: d for n, d in enumerate(draws, 2) if d != 1}
            print(f"  draws per step: 1 for {len(draws) - len(more)} of {len(draws)} steps"
                  + (f"; others (step: draws) {more}" if more else ""))
    for channel in (True, False):
        lags, counted = lag_pass(driver, base, args.dwell, channel)
        how = ("one browser (BroadcastChannel)" if channel else
               "through the server alone (two machines)")
        missed = sum(m is None for m in lags)
        print(f"presenter -> projector, {how}: PageDown in the presenter -> the projector's "
              f"step drawn, steps 2-{len(TOUR)}" + (f"; not drawn in 30 s: {missed}"
                                                    if missed else ""))
        drawn = _measured(lags)
        print(explorer_bench.line("lag", drawn))
        print(f"  median {explorer_bench.pct(drawn, 0.5):.0f} ms, p90 "
              f"{explorer_bench.pct(drawn, 0.9):.0f} ms, max {max(drawn):.0f} ms; to the "
              f"projector's counter: median "
              f"{explorer_bench.pct(_measured(counted), 0.5):.0f} ms")
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
    cold, warm = export_times(driver, base)
    print(f"export all, click -> the zip in the browser: cold (no stored zip; the job worker "
          f"starts and draws every slide) {cold:.1f} s, warm (the second click: the stored "
          f"zip) {warm:.2f} s")
    print(f"load average at the end {_load()}")


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
