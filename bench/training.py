"""Live training's frame rate: the explorer's "Watch it learn" tab playing, in headless Chromium.

Serves the real dashboard on a loopback port in this process (bench/explorer.py's server and
browser), opens the tab at the lecture default (depth 4, width 8, 100 moons points; BN, or BN
vs no BN with ``--side``), presses play for ``--seconds`` and counts the frames the page drew
(``plotly_afterplot`` of the frame's graph), with the requests' durations and the gaps
between a frame's answer and the next request (the browser's part: drawing the frame and the
curves).  Also the server's own time for a frame, measured in this process on the callback
(no browser).  It only prints.  Goal (issue 19): at least 10 frames a second at the default.
Run: ``.venv/bin/python bench/training.py [--side]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from explorer import start_browser, start_server  # noqa: E402

from callbacks.explorer import ids  # noqa: E402

COUNT = f"""
window.__frames = [];
const gd = document.querySelector('#{ids.GRAPH_TRAIN} .js-plotly-plot');
gd.on('plotly_afterplot', () => window.__frames.push(performance.now()));
return true;
"""
REQUESTS = """
return performance.getEntriesByType('resource')
  .filter(e => e.name.includes('_dash-update-component') && e.requestStart > arguments[0])
  .map(e => [e.requestStart, e.responseEnd, e.encodedBodySize]);
"""


def server_frame_ms(side: bool, frames: int = 20) -> float:
    """Median time of the tick callback in this process (no browser, no HTTP)."""
    from fuzzing import in_callback

    from bnviz.params import ExplorerParams
    from callbacks.explorer import training
    from callbacks.explorer.state import control_values

    controls = control_values(ExplorerParams())
    state, times = None, []
    for i in range(frames):
        t0 = time.perf_counter()
        out = in_callback(training.tick, ids.TRAIN_GO + ".data", 1, None, None, controls, 0.05,
                          32, "adam", 5, side, state, i, False)
        times.append(time.perf_counter() - t0)
        state = json.loads(json.dumps(out[0]))
    return 1e3 * statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--side", action="store_true", help="BN vs no BN (three panels)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    print(f"server, per frame (callback in this process): {server_frame_ms(args.side):.1f} ms")
    srv, _thread, _log = start_server()
    driver = start_browser()
    driver.set_window_size(1280, 720)
    try:
        driver.get(f"http://127.0.0.1:{srv.server_port}/?view=training")
        time.sleep(5)
        if args.side:
            driver.find_element("id", ids.TRAIN_SIDE).click()
            time.sleep(1)
        driver.execute_script(COUNT)
        t0 = driver.execute_script("return performance.now()")
        driver.find_element("id", ids.TRAIN_PLAY).click()
        time.sleep(args.seconds)
        driver.find_element("id", ids.TRAIN_PLAY).click()
        frames = driver.execute_script("return window.__frames")
        reqs = sorted(driver.execute_script(REQUESTS, t0))
        counter = driver.find_element("id", ids.TRAIN_COUNTER).text
    finally:
        driver.quit()
        srv.shutdown()
    played = [f for f in frames if f - t0 <= 1e3 * args.seconds]
    gaps = [reqs[i + 1][0] - reqs[i][1] for i in range(len(reqs) - 1)]
    print(f"{'BN vs no BN' if args.side else 'BN'}, 1280x720, {args.seconds:.0f} s of play: "
          f"{len(played)} frames drawn, {len(played) / args.seconds:.1f} frames/s")
    print(f"requests: {len(reqs)}, median {statistics.median(r[1] - r[0] for r in reqs):.0f} ms,"
          f" {statistics.median(r[2] for r in reqs) / 1e3:.0f} kB; median gap from an answer to"
          f" the next request (the browser's drawing) {statistics.median(gaps):.0f} ms")
    print(f"last counter: {counter}")


if __name__ == "__main__":
    main()
