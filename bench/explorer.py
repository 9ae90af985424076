"""Explorer latency: server time of the figure callback and repaint time in the browser.

Serves the real dashboard (``app.server``) with werkzeug on a free loopback port in this
process, opens it in headless Chromium (selenium, the options of tests/conftest.py) and, at
the default lecture setting (depth 4, width 8, 100 moons points), steps the mu slider with
the keyboard across [0, 1.5], one step at a time (each step waits for its picture).  Per step:

* server time: wall time of the ``/_dash-update-component`` request of the figure callback,
  measured in Flask (before/after_request hooks), with its response size; the browser's view
  of the same request (Performance API: responseStart - requestStart, encodedBodySize);
* repaint: performance.now() from the JS-dispatched keydown on the slider thumb to the next
  ``plotly_afterplot`` of the visible graph (end to end: request, server, JSON, plotly), and
  the client-only part (afterplot - responseEnd of the request).

The input-space view is swept once per torch thread count (``--threads``, default: torch's
own and 1): with torch's default of one intra-op thread per core, every parallel torch op
waits for all its threads, so when another process keeps a core busy (the browser on a
lecturer's laptop, a concurrent request, another job) the computation can get an order of
magnitude slower; the load average is printed at the start and the end for that reason.
The "layers" (small multiples) and "unit" (Figure 2a) views are measured the same way.
The computation is cached (``lru_cache`` of 32 settings): steps that hit the cache are
counted and the server time is also reported for cache misses only.  Goals (issue): server
median < 30 ms, repaint < 100 ms.  It only prints.  Run: ``.venv/bin/python bench/explorer.py``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.options import Options  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from bnviz.web import app as dashboard  # noqa: E402
from bnviz.web.callbacks.explorer import callbacks as explorer_callbacks  # noqa: E402
from bnviz.web.callbacks.explorer import ids  # noqa: E402

CHROME_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--disable-quic", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--enable-unsafe-swiftshader")
UPDATE_PATH = "/_dash-update-component"
FIGURE_OUTPUT = f"{ids.GRAPH_SPACE}.figure"  # the figure callback's outputs include this
TAB_GRAPHS = {"space": ids.GRAPH_SPACE, "layers": ids.GRAPH_LAYERS, "unit": ids.GRAPH_UNIT}


# ---- server side ------------------------------------------------------------------------

class RequestLog:
    """Duration and response size of every figure-callback request, recorded around the
    server's WSGI app (the dashboard's Flask app is warmed up at import and takes no new
    request hooks)."""

    def __init__(self, server) -> None:
        self.records: list[dict] = []
        self._lock = threading.Lock()
        self._inner = server.wsgi_app
        server.wsgi_app = self._timed

    def _timed(self, environ, start_response):
        t0 = time.perf_counter()
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(raw)
        status: list[str] = []

        def start(s, headers, *args):
            status.append(s)
            return start_response(s, headers, *args)

        chunks = list(self._inner(environ, start))
        if environ.get("PATH_INFO") == UPDATE_PATH:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            if isinstance(body, dict) and FIGURE_OUTPUT in str(body.get("output", "")):
                record = {"ms": 1e3 * (time.perf_counter() - t0),
                          "bytes": sum(len(c) for c in chunks),
                          "status": int(status[0].split()[0]) if status else 0,
                          "threads": torch.get_num_threads()}
                with self._lock:
                    self.records.append(record)
        return chunks

    def count(self) -> int:
        with self._lock:
            return len(self.records)


def start_server() -> tuple[object, threading.Thread, RequestLog]:
    log = RequestLog(dashboard.server)
    srv = make_server("127.0.0.1", 0, dashboard.server, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, name="bench-server", daemon=True)
    thread.start()
    return srv, thread, log


# ---- browser side -----------------------------------------------------------------------

def start_browser() -> webdriver.Chrome:
    options = Options()
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    chromium = os.environ.get("DASH_TEST_CHROMEPATH") or "/usr/bin/chromium"
    if os.path.exists(chromium):
        options.binary_location = chromium
    driver = webdriver.Chrome(options=options)
    driver.set_window_size(1400, 1000)
    driver.set_script_timeout(60)
    return driver


GD = "document.querySelector('#' + arguments[0] + ' .js-plotly-plot')"

# Install a plotly_afterplot listener on a graph (once) that records performance.now().
LISTEN = f"""
const gd = {GD};
if (!gd || !gd.on) return false;
window.__bench = window.__bench || {{}};
if (!window.__bench[arguments[0]]) {{
  window.__bench[arguments[0]] = [];
  gd.on('plotly_afterplot', () => window.__bench[arguments[0]].push(performance.now()));
}}
return true;
"""

# One slider step: dispatch a keydown on the mu thumb, wait for the graph's next afterplot
# (plus a short quiet period to count extra repaints) and return the timings.
STEP = """
const [graphId, key, sliderId] = arguments;
const done = arguments[arguments.length - 1];
const events = window.__bench[graphId];
const thumb = document.querySelector('#' + sliderId + ' [role=slider]');
const before = events.length;
const n0 = performance.getEntriesByType('resource').length;
const t0 = performance.now();
thumb.dispatchEvent(new KeyboardEvent('keydown', {key: key, bubbles: true, cancelable: true}));
const deadline = t0 + 30000;
(function poll() {
  const now = performance.now();
  if (events.length > before && now - events[before] > 60 || now > deadline) {
    const reqs = performance.getEntriesByType('resource').slice(n0)
      .filter(e => e.name.includes('_dash-update-component'));
    const r = reqs.length ? reqs[reqs.length - 1] : null;
    done({t0: t0, after: events.length > before ? events[before] : null,
           n_after: events.length - before, value: thumb.getAttribute('aria-valuenow'),
           req: r && {request_start: r.requestStart, response_start: r.responseStart,
                       response_end: r.responseEnd, encoded: r.encodedBodySize,
                       transfer: r.transferSize}, n_req: reqs.length});
  } else {
    setTimeout(poll, 2);
  }
})();
"""


def wait_for(fn, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = fn()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(what)


def keys_for(n: int) -> list[str]:
    """n keys that sweep mu from 1 to 0 (Home), then up to 1.5 and down again, alternating
    ten-step (PageUp/Down) and one-step (Arrow) keys so that most values are new ones
    (uncached) rather than revisits."""
    keys, value, up = ["Home"], 0, True
    while len(keys) < n:
        big = len(keys) % 2 == 1
        delta = (10 if big else 1) * (1 if up else -1)
        if not 0 <= value + delta <= 150:
            up = not up
            continue
        value += delta
        keys.append(("PageUp" if big else "ArrowRight") if up
                    else ("PageDown" if big else "ArrowLeft"))
    return keys


def sweep(driver, log: RequestLog, view: str, n_steps: int) -> list[dict]:
    graph = TAB_GRAPHS[view]
    wait_for(lambda: driver.execute_script(LISTEN, graph), 30, f"the {view} graph")
    cache = explorer_callbacks._explore_cached
    rows = []
    for key in keys_for(n_steps):
        n_server = log.count()
        misses = cache.cache_info().misses
        step = driver.execute_async_script(STEP, graph, key, ids.MU)
        wait_for(lambda n=n_server: log.count() > n, 10, "the server record")
        server = log.records[-1]
        step.update(server_ms=server["ms"], server_bytes=server["bytes"],
                    status=server["status"], threads=server["threads"],
                    miss=cache.cache_info().misses > misses, key=key)
        rows.append(step)
    return rows


def switch_view(driver, view: str) -> None:
    driver.execute_script(
        "const a = [...document.querySelectorAll('#' + arguments[0] + ' .nav-link')]"
        ".find(e => e.textContent.trim().startsWith(arguments[1])); a.click();",
        ids.VIEW, {"layers": "Layers side by side", "unit": "One unit",
                   "space": "Input space"}[view])
    wait_for(lambda: driver.execute_script(
        f"const g = {GD}; return !!(g && g.data && g.data.length);", TAB_GRAPHS[view]),
        60, f"the first picture of the {view} view")
    time.sleep(0.3)


# ---- report -----------------------------------------------------------------------------

def pct(values: list[float], q: float) -> float:
    """q-quantile, linear interpolation (q=0.5: the median)."""
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def line(label: str, values: list[float], unit: str = "ms") -> str:
    if not values:
        return f"  {label:<46} (no samples)"
    return (f"  {label:<46} median {pct(values, 0.5):7.1f} {unit}   p90 {pct(values, 0.9):7.1f} "
            f"{unit}   (n={len(values)})")


def report(label: str, rows: list[dict]) -> None:
    ok = [r for r in rows if r["after"] is not None and r["status"] == 200]
    server = [r["server_ms"] for r in ok]
    miss = [r["server_ms"] for r in ok if r["miss"]]
    hit = [r["server_ms"] for r in ok if not r["miss"]]
    browser_server = [r["req"]["response_start"] - r["req"]["request_start"]
                      for r in ok if r["req"]]
    repaint = [r["after"] - r["t0"] for r in ok]
    client = [r["after"] - r["req"]["response_end"] for r in ok if r["req"]]
    kb = [r["server_bytes"] / 1000 for r in ok]
    enc = [r["req"]["encoded"] / 1000 for r in ok if r["req"] and r["req"]["encoded"]]
    values = [float(r["value"]) for r in rows]
    print(f"\n{label}: {len(rows)} mu steps over [{min(values):g}, {max(values):g}], "
          f"{sum(r['miss'] for r in ok)} computed / {len(hit)} from the cache, "
          f"{len(rows) - len(ok)} without a repaint")
    print(line("server time, figure callback (Flask hook)", server))
    print(line("  of which cache misses (computed)", miss))
    print(line("  of which cache hits (figure only)", hit))
    print(line("server time seen by the browser (TTFB)", browser_server))
    print(line("repaint: keydown -> plotly_afterplot", repaint))
    print(line("  of which client (response end -> afterplot)", client))
    print(line("response payload (Flask)", kb, "kB"))
    print(line("response payload (browser encodedBodySize)", enc, "kB"))
    extra = sum(r["n_after"] > 1 for r in ok)
    if extra:
        print(f"  note: {extra} steps repainted more than once")


def parse_threads(text: str, default: int) -> list[int]:
    return [default if t.strip() == "default" else int(t) for t in text.split(",") if t.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="mu steps in the input-space view")
    parser.add_argument("--steps-other", type=int, default=15,
                        help="mu steps in the layers and unit views (0: skip them)")
    parser.add_argument("--threads", default="default,1",
                        help="torch intra-op thread counts to sweep the input-space view with "
                             "(comma-separated; 'default' is torch's own choice)")
    args = parser.parse_args()
    if shutil.which("chromedriver") is None:
        print("chromedriver not found on PATH: cannot run the browser benchmark")
        return
    default_threads = torch.get_num_threads()
    print(f"machine: {platform.machine()} {platform.system()}, os.cpu_count() = {os.cpu_count()}, "
          f"torch {torch.__version__} with {default_threads} threads (default), "
          f"python {platform.python_version()}")
    print("load average (1, 5, 15 min) at start: "
          + ", ".join(f"{x:.2f}" for x in os.getloadavg())
          + "  (busy cores slow the server down: see the docstring)")
    t_start = time.perf_counter()
    srv, thread, log = start_server()
    driver = None
    cache = explorer_callbacks._explore_cached
    try:
        driver = start_browser()
        url = f"http://127.0.0.1:{srv.server_port}/"
        driver.get(url)
        driver.execute_script("performance.setResourceTimingBufferSize(5000);")
        title = wait_for(lambda: driver.execute_script(
            f"const g = {GD}; return g && g.layout && g.layout.title && g.layout.title.text;",
            ids.GRAPH_SPACE), 60, "the first picture")
        version = driver.capabilities.get("browserVersion", "?")
        print(f"browser: headless Chromium {version}, page {url}, first picture '{title}' "
              f"after {time.perf_counter() - t_start:.1f} s")
        summary = driver.find_element("css selector", f"#{ids.SUMMARY}").text.splitlines()[-1]
        print(f"setting: defaults (depth 4, width 8, moons, 100 points, batch = all); {summary}")
        for n in parse_threads(args.threads, default_threads):
            torch.set_num_threads(n)
            cache.cache_clear()
            report(f"view 'space', torch threads {n}", sweep(driver, log, "space", args.steps))
        torch.set_num_threads(default_threads)
        if args.steps_other:
            for view in ("layers", "unit"):
                switch_view(driver, view)
                cache.cache_clear()
                report(f"view '{view}', torch threads {default_threads}",
                       sweep(driver, log, view, args.steps_other))
        print("\ngoals (issue): server median < 30 ms, repaint median < 100 ms")
    finally:
        if driver is not None:
            driver.quit()
        srv.shutdown()
        thread.join(timeout=10)
        print("load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
              + f"; total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
