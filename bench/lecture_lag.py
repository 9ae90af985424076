"""Presenter-to-projector lag, for bench/lecture.py: two windows of one headless Chromium on
one lecture session, as a lecturer opens them (the presenter view makes the session, its
"projector" link opens the projector at it). The presenter steps with PageDown, ``dwell``
seconds on each step first; the lag is the time from the key's dispatch in the presenter to
the projector's next ``plotly_afterplot`` of that step (both read on the machine's clock,
``performance.timeOrigin + performance.now()``); the time to the projector's step counter
showing the step says how much of it is the state's way and how much the drawing.

Two ways the state travels (assets/presenter.js): over the BroadcastChannel of one browser,
and through the server alone (the channel taken away in both windows before their scripts
run), as a laptop and the hall's computer do.
"""

from __future__ import annotations

import time

import explorer as explorer_bench  # bench/explorer.py

from bnviz.lecture.tour import TOUR
from bnviz.web.callbacks.lecture import ids

__all__ = ["lag_pass"]

#: What takes a window's BroadcastChannel away before the page's scripts run.
NO_CHANNEL = "delete window.BroadcastChannel;"
#: The projector's draws ([clock ms, the state drawn]) and its counter's changes ([clock ms,
#: its text]), from the listener on.
LISTEN_DRAWS = f"""
const gd = document.querySelector('#{ids.GRAPH} .js-plotly-plot');
const counter = document.getElementById('{ids.COUNTER}');
if (!gd || !gd.on || !counter) {{ return false; }}
const clock = () => performance.timeOrigin + performance.now();
if (!window.__drawn) {{
    window.__drawn = [];
    window.__counted = [];
    gd.on('plotly_afterplot', () => window.__drawn.push(
        [clock(), (gd.layout && gd.layout.meta && gd.layout.meta.state) || '']));
    new MutationObserver(() => window.__counted.push([clock(), counter.textContent]))
        .observe(counter, {{childList: true, characterData: true, subtree: true}});
}}
return true;"""
#: The presenter's PageDown; its clock ms.
PRESS = """
const t0 = performance.timeOrigin + performance.now();
document.body.dispatchEvent(new KeyboardEvent('keydown', {key: 'PageDown', bubbles: true,
                                                          cancelable: true}));
return t0;"""
#: In the projector, from clock arguments[0]: ms to the first draw of step arguments[1], and
#: to its counter showing that step (the state arrived).
FOLLOWED = """
const [t0, step] = arguments;
const done = arguments[arguments.length - 1];
(function poll() {
    const hit = window.__drawn.find(d => d[0] >= t0 && d[1] === 'step=' + step);
    const shown = window.__counted.find(c => c[0] >= t0 && c[1].startsWith(step + ' /'));
    const now = performance.timeOrigin + performance.now();
    if (hit || now - t0 > 30000) {
        done([hit ? hit[0] - t0 : null, shown ? shown[0] - t0 : null]);
    } else { setTimeout(poll, 5); }
})();"""


def _window(driver, url: str, channel: bool) -> str:
    """A new window at ``url`` (without the channel when not ``channel``), at step 1."""
    driver.switch_to.new_window("window")
    if not channel:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NO_CHANNEL})
    driver.set_window_size(1280, 720)
    driver.get(url)
    explorer_bench.wait_for(lambda: driver.execute_script(
        f"const c = document.getElementById('{ids.COUNTER}'); "
        "return !!c && c.textContent.startsWith('1 /');"), 60, "step 1")
    return driver.current_window_handle


def lag_pass(driver, base: str, dwell: float,
             channel: bool) -> tuple[list[float | None], list[float | None]]:
    """Each step's (2..last) lag to the projector's draw, and to its counter showing the
    step (ms; None: not in 30 s)."""
    home = driver.current_window_handle
    driver.get("about:blank")  # a lecture page here would be joined (its step, not 1)
    presenter = _window(driver, base + "/lecture/presenter?step=1", channel)
    link = explorer_bench.wait_for(lambda: driver.execute_script(
        f"const a = document.getElementById('{ids.PROJECTOR_LINK}'); "
        "return a && a.href.includes('session=') ? a.href : null;"), 30, "the session link")
    projector = _window(driver, link, channel)
    explorer_bench.wait_for(lambda: driver.execute_script(LISTEN_DRAWS), 60, "the projector")
    drawn: list[float | None] = []
    counted: list[float | None] = []
    try:
        for step in range(2, len(TOUR) + 1):
            time.sleep(dwell)
            driver.switch_to.window(presenter)
            t0 = driver.execute_script(PRESS)
            driver.switch_to.window(projector)
            ms_drawn, ms_counted = driver.execute_async_script(FOLLOWED, t0, step)
            drawn.append(ms_drawn)
            counted.append(ms_counted)
    finally:
        for handle in (projector, presenter):
            driver.switch_to.window(handle)
            driver.close()
        driver.switch_to.window(home)
    return drawn, counted
