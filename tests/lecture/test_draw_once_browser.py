"""Each tour step is drawn once (issue 46, item 5): stepping with PageDown from step 1 to the
last, at the projector's 1280x720, the lecture graph fires plotly.js's ``plotly_afterplot``
exactly once per step.

Before, 10 of the 16 steps were drawn twice, 180-400 ms apart: the step's figure was drawn at
its final size, then the graph's box changed (the dock goes beside a square figure and under
a wide one), dash's Graph saw the box resize and had plotly.js draw the same figure again at
the size it already had. A lecturer dwells on a step, so the next one is prepared before each
key, as in a lecture; a step counts as settled once its server answer came (the URL names
it) and the step after it is prepared, and then nothing more is drawn for a second. A box
that really changes size (the window's) is drawn again, at its new size.
"""

from __future__ import annotations

import time

import pytest
from dash.testing.wait import until
from lecture_windows import js, viewport
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from bnviz.lecture.tour import TOUR
from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("lecture_home")]

TIMEOUT = 60  # a fresh home computes the papers' networks at their steps
#: Seconds without a draw after a step settled before its draws are counted (plotly.js's
#: resize waits 100 ms; the second draws came 180-400 ms after the first).
QUIET = 1.0

#: Counts the graph's plotly_afterplot events, each with the state it drew.
COUNT_JS = f"""
const gd = document.querySelector('#{ids.GRAPH} .js-plotly-plot');
if (!gd || !gd.on) {{ return false; }}
if (!window.__draws) {{
    window.__draws = [];
    gd.on('plotly_afterplot', () => window.__draws.push(
        (gd.layout && gd.layout.meta && gd.layout.meta.state) || ''));
}}
return true;"""
STATE_JS = f"""
const gd = document.querySelector('#{ids.GRAPH} .js-plotly-plot');
return {{search: location.search,
         drawn: gd && gd.layout && gd.layout.meta ? gd.layout.meta.state : null,
         prepared: window.bnvizLecture ? window.bnvizLecture.prepared() : null,
         draws: (window.__draws || []).length}};"""

#: Whether the figure's drawn size (its SVG's) is its box's, in width and height.
SIZES_JS = f"""
const gd = document.querySelector('#{ids.GRAPH} .js-plotly-plot');
const svg = gd.querySelector('.main-svg');
const box = gd.getBoundingClientRect();
return [Math.abs(svg.width.baseVal.value - box.width) <= 1,
        Math.abs(svg.height.baseVal.value - box.height) <= 1];"""


def _settled(driver, step: int) -> None:
    """The step's server answer came and the step after it is prepared; then no draw for
    QUIET seconds."""
    def answered() -> bool:
        s = js(driver, STATE_JS)
        return (f"step={step}&" in s["search"] + "&" and s["drawn"] == f"step={step}"
                and (step == len(TOUR) or s["prepared"] == step + 1))

    until(answered, TIMEOUT, msg=f"step {step} did not settle")
    seen = [js(driver, STATE_JS)["draws"]]
    while True:
        time.sleep(QUIET)
        seen.append(js(driver, STATE_JS)["draws"])
        if seen[-1] == seen[-2]:
            return


def test_each_step_is_drawn_once(dash_duo):
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    driver = dash_duo.driver
    driver.get(dash_duo.server_url + "/lecture?step=1")
    until(lambda: js(driver, COUNT_JS), TIMEOUT, msg="the lecture graph was not drawn")
    _settled(driver, 1)
    draws: dict[int, list[str]] = {}
    for step in range(2, len(TOUR) + 1):
        js(driver, "window.__draws.length = 0;")
        js(driver, "document.activeElement && document.activeElement.blur();")
        ActionChains(driver).send_keys(Keys.PAGE_DOWN).perform()
        _settled(driver, step)
        draws[step] = js(driver, "return window.__draws.slice();")
    twice = {step: states for step, states in draws.items() if len(states) != 1}
    assert twice == {}, f"steps not drawn exactly once (step: the states drawn): {twice}"
    assert all(states == [f"step={step}"] for step, states in draws.items()), draws
    # a box that really changed size is still drawn again, at its new size
    js(driver, "window.__draws.length = 0;")
    viewport(dash_duo.driver, 1600, 900)
    until(lambda: js(driver, SIZES_JS) == [True, True], TIMEOUT,
          msg=f"the graph was not drawn at its new size: {js(driver, SIZES_JS)}")
    assert js(driver, "return window.__draws.length;") >= 1
    assert dash_duo.get_logs() == []
