"""What the lecture's browser tests read from a window (the presenter's and the sync tests'):
its script's answer, the step counter, a slider's value and the page root's classes; and a
viewport of an exact size."""

from __future__ import annotations

import time

from bnviz.web.callbacks.lecture import ids

__all__ = ["counter", "js", "root_class", "slider_value", "viewport"]


def js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def counter(driver) -> str:
    return js(driver, f"const c = document.getElementById('{ids.COUNTER}'); "
                      "return c ? c.textContent : '';")


def slider_value(driver, cid: str) -> float | None:
    value = js(driver, f"const h = document.querySelector('#{cid} [role=slider]'); "
                       "return h ? h.getAttribute('aria-valuenow') : null;")
    return None if value is None else float(value)


def root_class(driver) -> str:
    return js(driver, f"return document.getElementById('{ids.ROOT}').className;")


def _settled_inner(driver, seconds: float = 3.0) -> list[int]:
    """[innerWidth, innerHeight] once two reads 50 ms apart agree: a resize lands in the page
    some time after set_window_size returns."""
    deadline, last = time.monotonic() + seconds, None
    while True:
        inner = js(driver, "return [innerWidth, innerHeight];")
        if inner == last or time.monotonic() > deadline:
            return inner
        last = inner
        time.sleep(0.05)


def viewport(driver, width: int, height: int, tries: int = 5) -> None:
    """Make the page's viewport (not the window) ``width`` x ``height``: the window is the
    viewport plus its frame, the frame measured again after each try. One try that read the
    viewport before a resize had landed left a 1920x1080 window at 1920x937 in CI."""
    frame, inner = (0, 0), None
    for _ in range(tries):
        driver.set_window_size(width + frame[0], height + frame[1])
        inner = _settled_inner(driver)
        if inner == [width, height]:
            return
        outer = driver.get_window_size()
        frame = (outer["width"] - inner[0], outer["height"] - inner[1])
    assert inner == [width, height], f"the viewport stayed {inner} after {tries} tries"
