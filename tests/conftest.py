"""Shared pytest configuration for bnviz.

- Browser gate: tests marked ``browser`` or using one of dash's browser fixtures
  (``dash_duo``, ``dash_br``, ...) need Chromium and ChromeDriver. Without them the
  tests are skipped on a developer machine, but FAIL when ``CI=true`` so that CI can
  never go green by silently skipping the browser tests.
- ``pytest_setup_options``: the hook dash's pytest plugin calls to get the webdriver
  options (see ``dash/testing/newhooks.py``); it makes Chromium work as root in a
  container with no GPU and no network.
- ``tmp_home``: points ``BNVIZ_HOME`` at a fresh temporary directory.
- ``jobs_home``: ``tmp_home`` on the embedded job backend; kills the local workers a test
  started.
- ``inline_jobs``: jobs run in a thread of the test process instead of the local worker's
  processes, reporting at every step (a test can wrap what a job calls and see it mid-way).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

# The app's background computation of the lecture tour at import would compete with the
# tests for the CPU; the lecture tests compute the steps they show.
os.environ.setdefault("BNVIZ_PRECOMPUTE_TOUR", "0")

# The exact engine's compiled kernels, loaded as a server loads them (bnviz.core.kernels), so
# that the in-process tests cut as a page does; tests/engine_cases.py also runs the vectorised
# cut, and the command-line tests' processes never load them.
from bnviz.core import kernels  # noqa: E402

kernels.require()

# dash's test servers take ports from 58050 up, inside Linux's ephemeral range (32768-60999),
# where any loopback client of the suite may hold one as its own end, and the server's bind
# then fails ("threaded server failed to start"). Below that range the kernel hands out none.
from dash.testing.application_runners import BaseDashRunner  # noqa: E402

BaseDashRunner._next_port = 30050 + 200 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:])

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
        if item.get_closest_marker("browser") is not None:
            # one xdist worker runs every browser test (dash's test server has one port)
            item.add_marker(pytest.mark.xdist_group("browser"))
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
    """Chrome options for dash's browser fixtures (root, container, no GPU, offline; WebGL
    in software, which the live training's frames use, without Chrome's deprecated automatic
    fallback)."""
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
        "--enable-unsafe-swiftshader",
    ):
        options.add_argument(arg)
    if "DASH_TEST_CHROMEPATH" not in os.environ and os.path.exists(DEBIAN_CHROMIUM):
        options.binary_location = DEBIAN_CHROMIUM
    return options


def _stop_local_worker(home: Path) -> None:
    """Stop the local job worker a test started under ``home`` (the worker kills its job
    processes) and wait until it is gone."""
    from bnviz.records.store import pid_alive  # a zombie (nobody reaps orphans) is dead

    pids = set()
    for name in ("worker.lock", "worker.spawned"):  # running, or still importing torch
        path = home / "jobs" / name
        text = path.read_text().strip() if path.exists() else ""
        if text.isdigit():
            pids.add(int(text))
    for pid in pids:
        try:  # the pid of a worker that ended may be another process's now
            if b"worker" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
        except OSError:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 25  # it gives its jobs 10 s to go back to the queue
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.1)


@pytest.fixture
def tmp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fresh ``BNVIZ_HOME`` for the test; yields its path. A local job worker started under
    it (a page's background job starts one) is stopped afterwards: tests leave no process."""
    home = tmp_path / "bnviz-home"
    home.mkdir()
    monkeypatch.setenv("BNVIZ_HOME", str(home))
    yield home
    _stop_local_worker(home)


@pytest.fixture
def jobs_home(tmp_home: Path, monkeypatch: pytest.MonkeyPatch):
    """A fresh BNVIZ_HOME and BNVIZ_DATA for job tests, on the embedded backend; local
    workers started during the test (and their job processes) are killed afterwards."""
    data = tmp_home / "data"
    data.mkdir()
    monkeypatch.setenv("BNVIZ_DATA", str(data))
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL", "BNVIZ_DEVICE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BNVIZ_WORKER_IDLE_SECONDS", "30")
    monkeypatch.setenv("BNVIZ_TORCH_THREADS", "1")
    yield tmp_home  # tmp_home stops the local worker started under it


@pytest.fixture
def inline_jobs(jobs_home: Path, monkeypatch: pytest.MonkeyPatch):
    """jobs_home whose jobs run in one thread of this process (``bnviz.jobs.runner.run_job``,
    as the local worker's job processes do), so that a test can monkeypatch what a job calls;
    progress is written and the cancel flag read at every report. At the end, the jobs still
    queued or running are cancelled and the thread is stopped."""
    from bnviz import jobs
    from bnviz.jobs import runner
    from bnviz.records.store import ACTIVE, open_store

    monkeypatch.setattr(runner, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(runner, "CANCEL_CHECK_SECONDS", 0.0)
    stop = threading.Event()
    started: list[threading.Thread] = []

    def work() -> None:
        store = open_store()
        while not stop.is_set():
            job_id = store.claim_next(os.getpid())
            if job_id is None:
                stop.wait(0.02)
            else:
                runner.run_job(job_id, store, claim=False)

    def ensure_worker() -> int:
        if not started:
            started.append(threading.Thread(target=work, name="bnviz-inline-jobs", daemon=True))
            started[0].start()
        return os.getpid()

    monkeypatch.setattr(jobs, "ensure_local_worker", ensure_worker)
    yield jobs_home
    store = open_store()
    for job in store.list(1000):
        if job.status in ACTIVE:
            store.request_cancel(job.id)
    stop.set()
    for thread in started:
        thread.join(60)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory):
    """A real redis-server on loopback for the test session; yields its URL. Skipped on a
    developer machine without redis-server, a failure in CI (.ci/run installs it)."""
    exe = shutil.which("redis-server")
    if exe is None:
        if _in_ci():
            pytest.fail("CI=true but redis-server is not installed (.ci/run installs it)",
                        pytrace=False)
        pytest.skip("redis-server not installed")
    from served import free_port

    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail("redis-server did not start", pytrace=False)
        time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def lecture_home(tmp_path_factory):
    """One BNVIZ_HOME for the lecture tests of a session: the tour's papers' results
    (Santurkar's landscape, Ergen's training) are computed there once, not in ~/.bnviz."""
    home = tmp_path_factory.getbasetemp() / "lecture-home"
    home.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BNVIZ_HOME", str(home))
        yield home


@pytest.fixture(scope="module")
def one_torch_thread():
    """One intra-op torch thread for a test module, as the server runs
    (app.configure_torch): on a busy machine torch's thread pool makes small computations
    10-50x slower. Modules ask for it with ``pytestmark``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
