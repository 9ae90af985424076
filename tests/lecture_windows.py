"""What the lecture's browser tests read from a window (the presenter's and the sync tests'):
its script's answer, the step counter, a slider's value and the page root's classes."""

from __future__ import annotations

from bnviz.web.callbacks.lecture import ids

__all__ = ["counter", "js", "root_class", "slider_value"]


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
