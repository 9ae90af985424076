"""Pages keep their state across navigation (issue 16): the explorer's settings (its URL
query) come back when its navbar link is followed from another page, the other pages'
controls keep their values (Dash persistence, per browser tab), and a page's background job
is polled again when the page is opened again."""

from __future__ import annotations

import pytest
from dash.testing.wait import until
from explorer_helpers import walk
from selenium.webdriver.common.by import By

from bnviz.web.app import app
from bnviz.web.callbacks.background import polling_off
from bnviz.web.callbacks.density import ids as density_ids
from bnviz.web.callbacks.jitter import ids as jitter_ids
from bnviz.web.callbacks.papers import ids as papers_ids
from bnviz.web.layouts import density as density_layout
from bnviz.web.layouts import jitter as jitter_layout
from bnviz.web.layouts import papers as papers_layout

TIMEOUT = 45  # a fresh server's first figure, with the suite on every core (pytest-xdist)


def _nav(dash_duo, text: str) -> None:
    dash_duo.driver.find_element(By.LINK_TEXT, text).click()


def _path(dash_duo) -> str:
    return dash_duo.driver.execute_script("return location.pathname + location.search;")


@pytest.mark.browser
def test_explorer_and_jitter_keep_their_state(dash_duo):
    dash_duo.driver.set_window_size(1400, 1000)
    dash_duo.start_server(app)
    dash_duo.wait_for_page(dash_duo.server_url + "/?depth=3&width=5", timeout=TIMEOUT)
    # the page's layout arrives after the React entry point wait_for_page waits for
    dash_duo.wait_for_element("#lecture-open", timeout=TIMEOUT)
    for width in (1280, 1400, 1920):  # the navbar on one line, its Lecture link on screen
        dash_duo.driver.set_window_size(width, 1000)
        height, right, inner = dash_duo.driver.execute_script(
            "return [document.querySelector('.navbar').getBoundingClientRect().height, "
            "document.getElementById('lecture-open').getBoundingClientRect().right, "
            "innerWidth];")
        assert height < 70 and right <= inner, (width, height, right, inner)
    dash_duo.driver.set_window_size(1400, 1000)
    until(lambda: "layer=3" in _path(dash_duo), TIMEOUT)  # the page wrote its state
    _nav(dash_duo, "Jitter (Fig. 6, 7)")
    until(lambda: _path(dash_duo) == "/jitter", TIMEOUT)
    depth = dash_duo.find_element(f"#{jitter_ids.DEPTH}")
    depth.clear()
    depth.send_keys("5\n")
    until(lambda: dash_duo.find_element(f"#{jitter_ids.DEPTH}").get_attribute("value") == "5",
          TIMEOUT)
    _nav(dash_duo, "Partition explorer")
    until(lambda: _path(dash_duo).startswith("/?"), TIMEOUT)
    assert "depth=3" in _path(dash_duo) and "width=5" in _path(dash_duo)
    until(lambda: dash_duo.find_element("#explorer-width").get_attribute("value") == "5",
          TIMEOUT)
    _nav(dash_duo, "Jitter (Fig. 6, 7)")
    until(lambda: _path(dash_duo) == "/jitter", TIMEOUT)
    until(lambda: dash_duo.find_element(f"#{jitter_ids.DEPTH}").get_attribute("value") == "5",
          TIMEOUT)
    # a fresh tab (no session) opens the defaults
    dash_duo.driver.execute_script("sessionStorage.clear();")
    dash_duo.wait_for_page(dash_duo.server_url + "/jitter", timeout=TIMEOUT)
    until(lambda: dash_duo.find_element(f"#{jitter_ids.DEPTH}").get_attribute("value") == "3",
          TIMEOUT)
    assert dash_duo.get_logs() == []


def test_a_kept_job_is_polled_again():
    """Polling starts again for a kept job id and stays off without one (a crafted store
    value only stops it); the pages keep their job and result stores per browser tab."""
    assert polling_off("0123abcd") is False
    for value in (None, "", 5, ["x"], {"id": 1}):
        assert polling_off(value) is True
    kept = {}
    for layout in (density_layout.layout(), jitter_layout.layout(), papers_layout.layout()):
        for component in walk(layout):
            if type(component).__name__ == "Store" and isinstance(component.id, str):
                kept[component.id] = getattr(component, "storage_type", "memory")
    for store in (density_ids.JOB, density_ids.RESULT, jitter_ids.JOB, jitter_ids.TRAINED,
                  papers_ids.SL_JOB, papers_ids.SL_RESULT):
        assert kept[store] == "session", store
