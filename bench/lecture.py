"""Lecture view speed, in the browser: how long each tour step takes to appear, and a slider
step's repaint at the default network (4x8, 100 moons points), against the explorer page's
mu slider measured the same way in the same process (the baseline).

Serves the real dashboard with werkzeug on a loopback port in this process (as
bench/explorer.py does, whose browser and timing helpers it uses) and opens it in headless
Chromium at 1280x720:

* tour: PageDown from step 1 to the last, twice (``--passes``), each time from the key's
  dispatch to the lecture graph's next ``plotly_afterplot``; the steps are precomputed first
  (``bnviz.lecture.scenes.precompute_tour``, as a server does at start);
* slider: ``--steps`` arrow-key steps of the mu slider at the explorer's default state opened
  in the lecture view (``/lecture?step=0``), keydown -> afterplot, then the same on the
  explorer page (``/``); the ratio lecture / explorer is printed.

Goals (issue 16): every tour step under 300 ms, a slider step under 100 ms median. It only
prints. Run: ``.venv/bin/python bench/lecture.py [--steps 30] [--passes 2]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import explorer as explorer_bench  # noqa: E402  (bench/explorer.py)

from bnviz.lecture.scenes import precompute_tour  # noqa: E402
from bnviz.lecture.tour import TOUR  # noqa: E402
from callbacks.explorer import ids as explorer_ids  # noqa: E402
from callbacks.lecture import ids  # noqa: E402

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


def tour_pass(driver, base: str) -> list[float]:
    driver.get(base + "/lecture?step=1")
    explorer_bench.wait_for(lambda: driver.execute_script(explorer_bench.LISTEN, ids.GRAPH),
                            60, "the lecture graph")
    time.sleep(0.5)
    out = []
    for step in range(2, len(TOUR) + 1):
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="mu slider steps per page")
    parser.add_argument("--passes", type=int, default=2, help="passes through the tour")
    args = parser.parse_args()
    t0 = time.perf_counter()
    precompute_tour()
    print(f"precomputing the {len(TOUR)} steps: {time.perf_counter() - t0:.1f} s")
    srv, thread, _log = explorer_bench.start_server()
    base = f"http://127.0.0.1:{srv.server_port}"
    driver = explorer_bench.start_browser()
    driver.set_window_size(1280, 720)
    try:
        for p in range(args.passes):
            ms = tour_pass(driver, base)
            worst = max(range(len(ms)), key=lambda i: ms[i])
            print(f"\ntour pass {p + 1}: PageDown -> step drawn, steps 2-{len(TOUR)}")
            print(explorer_bench.line("step appears", ms))
            print(f"  slowest: step {worst + 2} ({TOUR[worst + 1].key}) {ms[worst]:.0f} ms; "
                  f"over 300 ms: {sum(m > 300 for m in ms)} of {len(ms)}")
        lecture = slider_sweep(driver, base + "/lecture?step=0", ids.GRAPH, ids.MU,
                               args.steps)
        explorer = slider_sweep(driver, base + "/", explorer_ids.GRAPH_SPACE,
                                explorer_ids.MU, args.steps)
        print("\nmu slider step at the default network (4x8, 100 points), keydown -> "
              "afterplot")
        print(explorer_bench.line("lecture view", lecture))
        print(explorer_bench.line("explorer page (baseline)", explorer))
        print(f"  ratio lecture / explorer (medians): "
              f"{explorer_bench.pct(lecture, 0.5) / explorer_bench.pct(explorer, 0.5):.2f}")
    finally:
        driver.quit()
        srv.shutdown()
        thread.join(timeout=5)


if __name__ == "__main__":
    main()
