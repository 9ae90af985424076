"""Shared pytest configuration for bnviz.

- Browser gate: tests marked ``browser`` or using one of dash's browser fixtures
  (``dash_duo``, ``dash_br``, ...) need Chromium and ChromeDriver. Without them the
  tests are skipped on a developer machine, but FAIL when ``CI=true`` so that CI can
  never go green by silently skipping the browser tests.
- ``pytest_setup_options``: the hook dash's pytest plugin calls to get the webdriver
  options (see ``dash/testing/newhooks.py``); it makes Chromium work as root in a
  container with no GPU and no network.
- ``tmp_home``: points ``BNVIZ_HOME`` at a fresh temporary directory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# dash's browser fixtures (dash/testing/plugin.py); any test using one needs a browser.
BROWSER_FIXTURES = frozenset(
    {"dash_duo", "dash_duo_mp", "dash_br", "dashr", "dashr_server", "dashjl"}
)
CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DEBIAN_CHROMIUM = "/usr/bin/chromium"


def _find_chromium() -> str | None:
    env = os.environ.get("DASH_TEST_CHROMEPATH")
    if env and os.access(env, os.X_OK):
        return env
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _missing_browser_parts() -> list[str]:
    missing = []
    if _find_chromium() is None:
        missing.append("chromium")
    if shutil.which("chromedriver") is None:
        missing.append("chromedriver")
    return missing


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses a dash browser fixture as ``browser``; skip them
    locally when Chromium/ChromeDriver are absent (in CI they fail in setup instead)."""
    missing = _missing_browser_parts()
    for item in items:
        if BROWSER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)
        if missing and not _in_ci() and item.get_closest_marker("browser") is not None:
            item.add_marker(
                pytest.mark.skip(reason=f"browser test: {', '.join(missing)} not found on PATH")
            )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is None or not _in_ci():
        return
    missing = _missing_browser_parts()
    if missing:
        pytest.fail(
            f"CI=true but {', '.join(missing)} not found on PATH: browser tests cannot run. "
            "Install Debian's chromium and chromium-driver (.ci/run does this).",
            pytrace=False,
        )


def pytest_setup_options():
    """Chrome options for dash's browser fixtures (root, container, no GPU, offline)."""
    from selenium.webdriver.chrome.options import Options

    options = Options()
    for arg in (
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ):
        options.add_argument(arg)
    if "DASH_TEST_CHROMEPATH" not in os.environ and os.path.exists(DEBIAN_CHROMIUM):
        options.binary_location = DEBIAN_CHROMIUM
    return options


@pytest.fixture
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``BNVIZ_HOME`` for the test; returns its path."""
    home = tmp_path / "bnviz-home"
    home.mkdir()
    monkeypatch.setenv("BNVIZ_HOME", str(home))
    return home
