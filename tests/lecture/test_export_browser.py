"""The lecture's "export all" in the browser at the projector's 1280x720 (issues 42 and 46):
from the click on, before the server has answered, the button is disabled and the dock says
the export starts; while the slides' job runs, it shows the steps drawn of the tour's and a
bar; once done, the zip is downloaded, the line says what was exported and the button works
again.

The job runs in a thread of this process (``inline_jobs``), the slides' path real but each
step's scene and picture cheap, and held after a few steps so that the page is seen mid-way;
the server's first answer to the click is held too, until the page was seen before it.
"""

from __future__ import annotations

import io
import threading
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from dash.testing.wait import until
from lecture_windows import viewport

from bnviz import jobs
from bnviz.lecture import slides
from bnviz.lecture.tour import TOUR
from bnviz.web.app import app
from bnviz.web.callbacks.lecture import ids
from bnviz.web.callbacks.lecture.export import FILENAME
from tests.lecture.test_lecture_browser import TIMEOUT

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


@pytest.fixture
def held_start(monkeypatch):
    """The server's start of the export (bnviz.jobs.start_job) waits for the test."""
    gate = threading.Event()
    start = jobs.start_job

    def held(*args, **kwargs):
        assert gate.wait(120), "the test never let the export start"
        return start(*args, **kwargs)

    monkeypatch.setattr(jobs, "start_job", held)
    yield gate
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
                                                                        held_slides,
                                                                        held_start):
    dash_duo.start_server(app)
    viewport(dash_duo.driver, 1280, 720)
    dash_duo.wait_for_page(dash_duo.server_url + "/lecture?step=1", timeout=TIMEOUT)
    until(lambda: dash_duo.find_element(f"#{ids.COUNTER}").text.startswith("1 /"), TIMEOUT)
    assert _export_state(dash_duo)["disabled"] is False
    dash_duo.find_element(f"#{ids.EXPORT}").click()
    # the click's own answer, while the server's is held back
    until(lambda: _export_state(dash_duo)["disabled"], TIMEOUT,
          msg="the button stays enabled until the server answers")
    state = _export_state(dash_duo)
    assert state["text"] == f"slides: 0 of {len(TOUR)} steps drawn; starting the export...", \
        state
    held_start.set()
    drawn = f"slides: {HELD_AFTER} of {len(TOUR)} steps drawn"  # where the drawing waits
    until(lambda: _export_state(dash_duo)["text"].startswith(drawn), TIMEOUT,
          msg=f"no progress shown while the slides are drawn: {_export_state(dash_duo)}")
    state = _export_state(dash_duo)
    assert state["disabled"] is True and state["barShown"] and state["bar"] > 0, state
    assert state["scroll"] == [1280, 720], state  # the projector's screen does not scroll
    held_slides.gate.set()
    until(lambda: _export_state(dash_duo)["text"].startswith(f"slides: {len(TOUR)} steps"),
          TIMEOUT, msg="the export did not end")
    state = _export_state(dash_duo)
    assert state["disabled"] is False and state["bar"] is None, state
    assert held_slides.calls == [step.key for step in TOUR]
    # the zip reached the browser's downloads, every step's slide in it
    zipped = Path(dash_duo.download_path) / FILENAME
    until(lambda: zipped.exists() and zipfile.is_zipfile(zipped), TIMEOUT,
          msg="the zip was not downloaded")
    with zipfile.ZipFile(io.BytesIO(zipped.read_bytes())) as zf:
        assert len(zf.namelist()) == 2 * len(TOUR) + 2
    assert dash_duo.get_logs() == []
