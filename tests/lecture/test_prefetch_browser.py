"""The next step prepared in the browser (issue 31), in headless Chromium: once the page has
settled on a step, the next one is prepared; PageDown draws it while the server's answer for
it is still held back (so it came from the browser), and the server's answer, when it comes,
is not drawn again."""

from __future__ import annotations

import pytest
from dash.testing.wait import until
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids

pytestmark = pytest.mark.browser

TIMEOUT = 30

#: Holds back the answers of the callback that draws a step (its request names the figure
#: store as an output) until released, and counts plotly.js's draws of the lecture graph.
HOLD_JS = """
window.__held = [];
window.__draws = 0;
const plain = window.fetch;
window.fetch = function (url, opts) {
    const body = opts && typeof opts.body === 'string' ? opts.body : '';
    if (String(url).includes('_dash-update-component') && body.includes('"lecture-figure')) {
        return new Promise(resolve => window.__held.push(() => resolve(plain(url, opts))));
    }
    return plain.apply(this, arguments);
};
const react = window.Plotly.react;
window.Plotly.react = function (gd) {
    if (gd && gd.closest && gd.closest('#lecture-graph')) { window.__draws += 1; }
    return react.apply(this, arguments);
};
"""

STATE_JS = """
const g = document.querySelector('#lecture-graph .js-plotly-plot');
const c = document.getElementById('lecture-counter');
if (!c || !window.bnvizLecture) { return {}; }
return {state: g && g.layout && g.layout.meta ? g.layout.meta.state : null,
        counter: c.textContent,
        held: window.__held ? window.__held.length : -1, draws: window.__draws,
        prepared: window.bnvizLecture.prepared()};"""


def _state(dash_duo) -> dict:
    return dash_duo.driver.execute_script(STATE_JS) or {}


def test_the_next_step_is_drawn_before_the_servers_answer(dash_duo):
    dash_duo.start_server(app)
    dash_duo.driver.get(dash_duo.server_url + "/lecture?step=2")
    until(lambda: _state(dash_duo).get("state") == "step=2", TIMEOUT)
    until(lambda: _state(dash_duo).get("prepared") == 3, TIMEOUT, msg="step 3 was not prepared")
    dash_duo.driver.execute_script(HOLD_JS)
    ActionChains(dash_duo.driver).send_keys(Keys.PAGE_DOWN).perform()
    # step 3 is drawn, with its title and counter, while its answer is held back
    until(lambda: _state(dash_duo).get("state") == "step=3", TIMEOUT,
          msg="PageDown did not draw the prepared step")
    shown = _state(dash_duo)
    assert shown["held"] == 1 and shown["counter"].startswith("3 /"), shown
    assert dash_duo.find_element(f"#{ids.TITLE}").text.strip()
    draws = shown["draws"]
    assert draws == 1, shown
    # the answer, released, names the same state: the graph is not drawn again; the URL
    # takes the step, and step 4 is prepared in its turn
    dash_duo.driver.execute_script("window.__held.splice(0).forEach(f => f());")
    until(lambda: "step=3" in dash_duo.driver.execute_script("return location.search;"),
          TIMEOUT)
    until(lambda: _state(dash_duo).get("prepared") == 4, TIMEOUT, msg="step 4 was not prepared")
    assert _state(dash_duo)["draws"] == draws
    assert dash_duo.get_logs() == []
