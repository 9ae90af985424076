"""The map of a slice job (issue 45, item 4): what a researcher waits for on /slice's map tab.

For a finished slice job in ``BNVIZ_HOME`` (``--job``; default: the newest), in this process
as a web worker runs the map's callback (callbacks/slice/map.py ``draw_map``):

* the whole window's map: cold (its map tiles rasterised from the job's stored tiles, then
  kept in the shared disk cache), and warm (from that cache, in a fresh memory cache);
* zooms to the centre by factors of 2 until the view is cut again exactly, each cold: the
  zoom level, the regions in view, the seconds, raster or exact;
* with ``--browser``, the same in Chromium at 1280x720: the tab opened to the map's
  ``plotly_afterplot``, and a zoom (``Plotly.relayout``) to the first exact view's
  ``plotly_afterplot``, against the whole window's redraw, each the median of ``--runs``.

Prints the machine's load average (the machine is shared) and the datashader warm-up.

Run: ``BNVIZ_HOME=... .venv/bin/python bench/slice_map.py [--job ID] [--browser]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--job", default=None)
    p.add_argument("--browser", action="store_true")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()

    from bnviz.service.cache import shared_cache
    from bnviz.slices import slice_map
    from bnviz.web.callbacks.slice import map as cm

    print(f"load average before: {load()}")
    maps = slice_map.finished_maps()
    job = args.job or maps[0]["id"]
    source = cm._source(job)
    total = sum(int(r[:, -1].sum()) for r in source.regions.values())
    exact = slice_map.exact_regions(source, source.window)
    print(f"job {job}: {len(source.tiles)} tiles, {len(source.parts)} partition(s), "
          f"{len(source.layers)} layers, {total:,} regions of the last layer in its tiles "
          f"({'?' if exact is None else f'{exact:,}'} merged: a region a tile line cuts is "
          "in several tiles)")
    _, warm = timed(slice_map.warm_rasteriser)
    print(f"datashader import and compile: {warm:.2f} s")
    cache = shared_cache()
    for key in [k for k in cache.iterkeys() if k[0] == "slice-map" and k[2] == source.key]:
        del cache[key]
    part, layer = source.parts[0], len(source.layers)
    (_, note, view), cold = timed(cm.draw_map, job, part, layer, None, None)
    print(f"whole window, cold: {cold:.2f} s  ({note})")
    (_, note, view), warm = timed(cm.draw_map, job, part, layer, None, None)
    print(f"whole window, warm (map tiles from the disk cache): {warm:.2f} s")
    _, opened = timed(slice_map.prepare_recut, source.key)
    print(f"the job's networks opened for a re-cut (in the background once the tab lists "
          f"the job): {opened:.2f} s")
    w = source.window
    ca, cb = (w[0] + w[1]) / 2, (w[2] + w[3]) / 2
    factor, exact_rect = 1, None
    while exact_rect is None and factor <= 2 ** 14:
        factor *= 2
        ha, hb = (w[1] - w[0]) / (2 * factor), (w[3] - w[2]) / (2 * factor)
        zoom = {"xaxis.range[0]": ca - ha, "xaxis.range[1]": ca + ha,
                "yaxis.range[0]": cb - hb, "yaxis.range[1]": cb + hb}
        (_, note, view), sec = timed(cm.draw_map, job, part, layer, zoom, view)
        print(f"zoom x{factor}: {sec:.2f} s  {note}")
        if view["exact"]:
            exact_rect = zoom
    print(f"load average after: {load()}")
    if args.browser and exact_rect is not None:
        browser(job, exact_rect, args.runs)


def browser(job: str, zoom: dict, runs: int) -> None:
    """The page's waits in Chromium at 1280x720, from a server in this process."""
    import threading

    from selenium import webdriver
    from werkzeug.serving import make_server

    from bnviz.web.app import app
    from bnviz.web.callbacks.slice import ids

    server = make_server("127.0.0.1", 0, app.server, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(a)
    driver = webdriver.Chrome(options=options)
    driver.set_window_size(1280, 720)
    graph = f"document.querySelector('#{ids.MAP_GRAPH} .js-plotly-plot')"
    # the relayout's own redraw comes first; the wait ends once the graph (found afresh: the
    # page may mount it again) shows the server's answer, read every 10 ms in the page
    start = ("window.__t0 = performance.now(); window.__want = arguments[0];"
             "window.__done = null; const poll = () => { const g = " + graph + ";"
             " const exact = !!(g && g.data && g.data.some(t => t.name === 'facets'));"
             " const map = !!(g && g.layout && g.layout.images && g.layout.images.length);"
             " if ((window.__want === 'exact' && exact) || (window.__want === 'map' && map"
             " && !exact)) { window.__done = performance.now() - window.__t0; }"
             " else { setTimeout(poll, 10); } }; Plotly.relayout(" + graph + ", arguments[1]);"
             " setTimeout(poll, 10);")

    def change(want: str, layout: dict) -> float:
        driver.execute_script(start, want, layout)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = driver.execute_script("return window.__done;")
            if done is not None:
                return done / 1000
            time.sleep(0.05)
        note = driver.execute_script(f"return document.getElementById('{ids.MAP_NOTE}')"
                                     ".textContent;")
        raise TimeoutError(f"the graph did not show the {want} view within 60 s: {note}")

    try:
        opened, zoomed, whole = [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            driver.get(f"http://127.0.0.1:{server.server_port}/slice")
            while not driver.find_elements("link text", "map of a slice job"):
                time.sleep(0.02)
            driver.find_element("link text", "map of a slice job").click()
            while not driver.execute_script(
                    f"const g = {graph}; return !!(g && g.layout && g.layout.images && "
                    "g.layout.images.length);"):
                time.sleep(0.02)
            opened.append(time.perf_counter() - t0)
            settled = 0  # the page's first callbacks all answered (no graph loading)
            while settled < 5:
                busy = driver.execute_script(
                    "return !!document.querySelector('[data-dash-is-loading=\"true\"]');")
                settled = 0 if busy else settled + 1
                time.sleep(0.1)
            rng = {"xaxis.range": [zoom["xaxis.range[0]"], zoom["xaxis.range[1]"]],
                   "yaxis.range": [zoom["yaxis.range[0]"], zoom["yaxis.range[1]"]]}
            zoomed.append(change("exact", rng))
            whole.append(change("map", {"xaxis.autorange": True, "yaxis.autorange": True}))
        med = statistics.median
        print(f"Chromium 1280x720, median of {runs}: page open to the map drawn "
              f"{med(opened):.2f} s; zoom to the exact view (relayout to its redraw) "
              f"{med(zoomed):.2f} s; back to the whole map {med(whole):.2f} s")
    finally:
        driver.quit()
        server.shutdown()


if __name__ == "__main__":
    main()
