"""The lecture's one state in two windows, both ways (issue 46), in headless Chromium with two
windows (dash_duo): in one browser (a BroadcastChannel) and as two machines would (the
channel taken away: only the server's session link joins them). Stepping either window moves
the other; no window ever shows an older step than one it showed (each window's counter is
recorded as it changes); a reopened or reloaded presenter joins the projector's state."""

from __future__ import annotations

import pytest
from dash.testing.wait import until
from lecture_windows import counter as _counter
from lecture_windows import js as _js
from lecture_windows import root_class as _root_class
from lecture_windows import slider_value as _slider_value
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids

pytestmark = pytest.mark.browser

#: Seconds to wait for a page or a step under load (the other window follows within about
#: a second when the machine is quiet; a loaded 2-core machine takes longer: no timing is
#: asserted).
TIMEOUT = 40
#: What takes a window's BroadcastChannel away before the page's scripts run (two machines).
NO_CHANNEL = "delete window.BroadcastChannel;"
#: Records every step the window's counter shows, in order (window.__steps).
RECORD = f"""
if (!window.__steps) {{
    window.__steps = [];
    const note = () => {{
        const m = (document.getElementById('{ids.COUNTER}') || {{}}).textContent;
        const n = m && m.match(/^(\\d+) \\//);
        if (n) {{ window.__steps.push(parseInt(n[1], 10)); }}
    }};
    note();
    new MutationObserver(note).observe(document.getElementById('{ids.COUNTER}'),
                                       {{childList: true, characterData: true, subtree: true}});
}}"""


def _at(driver, step: int, msg: str = "") -> None:
    until(lambda: _counter(driver).startswith(f"{step} /"), TIMEOUT,
          msg=msg or f"the window did not show step {step} (it shows {_counter(driver)!r})")


def _keys(driver, *keys) -> None:
    """Keys to the page (not a slider): focus the title first."""
    _js(driver, "document.activeElement && document.activeElement.blur();")
    ActionChains(driver).send_keys(*keys).perform()


def _hidden(driver, cid: str) -> bool:
    return _js(driver, f"return document.getElementById('{cid}').hidden;")


def _open(dash_duo, url: str, step: int, channel: bool = True, new_window: bool = False):
    """Open ``url`` (in a new window), wait for ``step``, record its counter; the handle."""
    driver = dash_duo.driver
    if new_window:
        driver.switch_to.new_window("window")
    if not channel:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                               {"source": NO_CHANNEL})
    driver.set_window_size(1280, 720)
    driver.get(url)
    _at(driver, step)
    assert _js(driver, "return 'BroadcastChannel' in window;") is channel
    _js(driver, RECORD)
    return driver.current_window_handle


def _never_back(driver) -> list[int]:
    steps = _js(driver, "return window.__steps;")
    assert steps == sorted(steps), f"the window went back to an older step: {steps}"
    return steps


def _step_three_then_follow(driver, projector: str, presenter: str) -> None:
    """Three PageDowns in the projector move the presenter to 4; a PageDown in the presenter
    then goes on to 5 in both, never back."""
    driver.switch_to.window(projector)
    _keys(driver, Keys.PAGE_DOWN, Keys.PAGE_DOWN, Keys.PAGE_DOWN)
    _at(driver, 4)
    driver.switch_to.window(presenter)
    _at(driver, 4, "the presenter did not follow the projector's steps")
    _keys(driver, Keys.PAGE_DOWN)
    _at(driver, 5, "the presenter's PageDown did not go on from the projector's step")
    driver.switch_to.window(projector)
    _at(driver, 5, "the projector did not follow the presenter's PageDown")
    assert _never_back(driver)[-1] == 5
    driver.switch_to.window(presenter)
    assert _never_back(driver)[-1] == 5


def test_two_windows_of_one_browser_share_one_state(dash_duo):
    dash_duo.start_server(app)
    driver = dash_duo.driver
    base = dash_duo.server_url
    projector = _open(dash_duo, base + "/lecture?step=1", 1)
    presenter = _open(dash_duo, base + "/lecture/presenter?step=1", 1, new_window=True)
    _step_three_then_follow(driver, projector, presenter)

    # the theme and the blank screen, from either window
    driver.switch_to.window(projector)
    _keys(driver, "t")
    until(lambda: "lecture-dark" in _root_class(driver), TIMEOUT)
    _keys(driver, "b")
    assert not _hidden(driver, ids.BLANK)
    driver.switch_to.window(presenter)
    until(lambda: "lecture-dark" in _root_class(driver), TIMEOUT,
          msg="the presenter's theme did not follow the projector's")
    until(lambda: not _hidden(driver, ids.BLANKED), TIMEOUT,
          msg="the presenter does not say the projector is blank")
    assert _hidden(driver, ids.BLANK)  # the presenter never blanks itself
    _keys(driver, "b")  # the presenter brings the projector back
    until(lambda: _hidden(driver, ids.BLANKED), TIMEOUT)
    driver.switch_to.window(projector)
    until(lambda: _hidden(driver, ids.BLANK), TIMEOUT, msg="the projector stayed blank")

    # the presenter opened again at its first link (step 1) joins the projector's step 5,
    # then a step made in the projector, and a reload
    driver.switch_to.window(presenter)
    driver.get(base + "/lecture/presenter?step=1")
    _at(driver, 5, "the reopened presenter did not join the projector's step")
    until(lambda: "lecture-dark" in _root_class(driver), TIMEOUT)
    driver.switch_to.window(projector)
    _keys(driver, Keys.PAGE_DOWN)
    _at(driver, 6)
    driver.switch_to.window(presenter)
    _at(driver, 6)
    driver.refresh()
    _at(driver, 6, "the reloaded presenter did not join the projector's step")
    driver.switch_to.window(projector)
    assert _never_back(driver)[-1] == 6


def test_two_machines_share_one_state_through_the_session_link(dash_duo):
    dash_duo.start_server(app)
    driver = dash_duo.driver
    base = dash_duo.server_url
    presenter = _open(dash_duo, base + "/lecture/presenter?step=1", 1, channel=False)
    until(lambda: "session=" in dash_duo.find_element(f"#{ids.SESSION_LINK}").text, TIMEOUT)
    link = dash_duo.find_element(f"#{ids.SESSION_LINK}").text
    session = link.split("session=")[1]
    assert f"session={session}" in _js(driver, "return location.search;")
    assert f"session={session}" in dash_duo.find_element(
        f"#{ids.PROJECTOR_LINK}").get_attribute("href")
    # the hall's computer: the session link only (no step), a browser of its own
    projector = _open(dash_duo, link, 1, channel=False, new_window=True)
    _step_three_then_follow(driver, projector, presenter)

    # a slider moved in the presenter, the theme changed in the projector
    driver.switch_to.window(presenter)
    before = _slider_value(driver, ids.MU)
    _js(driver, f"document.querySelector('#{ids.MU} [role=slider]').focus();")
    ActionChains(driver).send_keys(Keys.ARROW_RIGHT * 4).perform()
    until(lambda: _slider_value(driver, ids.MU) != before, TIMEOUT)
    moved = _slider_value(driver, ids.MU)
    driver.switch_to.window(projector)
    until(lambda: _slider_value(driver, ids.MU) == pytest.approx(moved), TIMEOUT,
          msg="the projector's slider did not follow through the server")
    _keys(driver, "t")
    until(lambda: "lecture-dark" in _root_class(driver), TIMEOUT)
    driver.switch_to.window(presenter)
    until(lambda: "lecture-dark" in _root_class(driver), TIMEOUT,
          msg="the presenter's theme did not follow through the server")

    # the presenter reopened at its first link joins: step 5, the slider, the theme
    driver.get(f"{base}/lecture/presenter?step=1&session={session}")
    _at(driver, 5, "the reopened presenter did not join the session's step")
    until(lambda: _slider_value(driver, ids.MU) == pytest.approx(moved)
          and "lecture-dark" in _root_class(driver), TIMEOUT)
    driver.switch_to.window(projector)
    _never_back(driver)
