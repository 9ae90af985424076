"""The lecture's "export all" in the browser at the projector's 1280x720 (issue 42): while
the slides' job runs, the button is disabled and the dock shows its progress; once done, the
line says what was exported and the button works again.

The job runs in a thread of this process (``inline_jobs``), the slides' path real but each
step's scene and picture cheap, and held after a few steps so that the page is seen mid-way.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from dash.testing.wait import until

from bnviz.lecture import slides
from bnviz.lecture.tour import TOUR
from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids
from tests.lecture.test_lecture_browser import TIMEOUT, _viewport

pytestmark = pytest.mark.browser

#: The steps drawn before the drawing waits for the test.
HELD_AFTER = 4


@pytest.fixture
def held_slides(inline_jobs, monkeypatch):
    gate = threading.Event()
    calls: list[str] = []

    def scene(step):
        if len(calls) >= HELD_AFTER:
            assert gate.wait(120), "the test never let the drawing go on"
        calls.append(step.key)
        return SimpleNamespace(step=step)

    monkeypatch.setattr(slides, "compute_scene", scene)
    monkeypatch.setattr(slides, "draw_scene",
                        lambda figure, _scene: figure.add_subplot().plot([0, 1], [0, 1]))
    yield SimpleNamespace(gate=gate, calls=calls)
    gate.set()


def _export_state(dash_duo) -> dict:
    return dash_duo.driver.execute_script(f"""
        const button = document.getElementById('{ids.EXPORT}');
        const bar = document.getElementById('{ids.EXPORT_PROGRESS}');
        const status = document.getElementById('{ids.EXPORT_STATUS}');
        const r = bar && bar.getBoundingClientRect();
        return {{disabled: button.disabled, text: status.innerText,
                 bar: bar ? bar.value : null,
                 barShown: !!r && r.width > 0 && r.bottom <= innerHeight,
                 scroll: [document.documentElement.scrollWidth,
                          document.documentElement.scrollHeight]}};""")


def test_the_export_button_is_disabled_while_it_runs_and_shows_progress(dash_duo,
                                                                        held_slides):
    dash_duo.start_server(app)
    _viewport(dash_duo, 1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=1", timeout=TIMEOUT)
    until(lambda: dash_duo.find_element(f"#{ids.COUNTER}").text.startswith("1 /"), TIMEOUT)
    assert _export_state(dash_duo)["disabled"] is False
    dash_duo.find_element(f"#{ids.EXPORT}").click()
    until(lambda: (_export_state(dash_duo)["bar"] or 0) > 0, TIMEOUT,
          msg="no progress shown while the slides are drawn")
    state = _export_state(dash_duo)
    assert state["disabled"] is True and state["barShown"], state
    assert state["text"].startswith("slides: drawing step"), state
    assert state["scroll"] == [1280, 720], state  # the projector's screen does not scroll
    held_slides.gate.set()
    until(lambda: _export_state(dash_duo)["text"].startswith(f"slides: {len(TOUR)} steps"),
          TIMEOUT, msg="the export did not end")
    state = _export_state(dash_duo)
    assert state["disabled"] is False and state["bar"] is None, state
    assert held_slides.calls == [step.key for step in TOUR]
    assert dash_duo.get_logs() == []
