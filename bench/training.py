"""Live training's frame rate: the explorer's "Watch it learn" tab playing, in headless Chromium.

Serves the real dashboard on a loopback port in this process (bench/explorer.py's server and
browser), opens the tab at the lecture default (depth 4, width 8, 100 moons points; BN, or BN
vs no BN with ``--side``), presses play for ``--seconds`` and counts the frames the page drew
(each ``Plotly.react`` of the frame's graph that finished), with the requests' durations and
the gaps between a frame's answer and the next request (the player asks for the next frame
as soon as an answer is in, at most one every FRAME_MS).  Also the server's own time for a
frame, measured in this process (:func:`callbacks.explorer.training.frame_answer`, no
browser, no HTTP).  It only prints.  Goal (issue 19): at least 10 frames a second at the default.
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

from bnviz.web.callbacks.explorer import ids  # noqa: E402

COUNT = f"""
window.__frames = [];
const gd = document.querySelector('#{ids.GRAPH_TRAIN} .js-plotly-plot');
const react = Plotly.react;
Plotly.react = async function (div, ...rest) {{
    const out = await react.call(this, div, ...rest);
    if (div === gd) {{ window.__frames.push(performance.now()); }}
    return out;
}};
return true;
"""
REQUESTS = """
return performance.getEntriesByType('resource')
  .filter(e => e.name.includes('/api/training/frame') && e.requestStart > arguments[0])
  .map(e => [e.requestStart, e.responseEnd, e.encodedBodySize]);
"""


def server_frame_ms(side: bool, frames: int = 20) -> float:
    """Median time of one frame answer in this process (no browser, no HTTP)."""
    from bnviz.params import PartitionParams
    from bnviz.web.callbacks.explorer.state import control_values
    from bnviz.web.callbacks.explorer.training import frame_answer

    body = {"controls": control_values(PartitionParams()), "lr": 0.05, "batch": 32,
            "optimizer": "adam", "steps": 5, "side": side, "state": None}
    times = []
    for _ in range(frames):
        t0 = time.perf_counter()
        status, answer = frame_answer(body)
        times.append(time.perf_counter() - t0)
        assert status == 200, answer
        body["state"] = json.loads(json.dumps(answer["state"]))
    return 1e3 * statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--side", action="store_true", help="BN vs no BN (three panels)")
    args = parser.parse_args()
    print(f"server, per frame (frame_answer in this process): {server_frame_ms(args.side):.1f} ms")
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
          f" the next request {statistics.median(gaps):.0f} ms")
    print(f"last counter: {counter}")


if __name__ == "__main__":
    main()
