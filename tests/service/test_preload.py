"""gunicorn imports the app in its master and forks ready workers (``preload_app``, issue 43
item 7): what the master holds until the fork (bnviz.server.background) starts in each worker,
never in the master: the exact engine's kernels and the lecture tour's threads, torch's
threads as BNVIZ_TORCH_THREADS says (the master keeps one: a child forked after torch's
OpenMP pool ran hangs), and /healthz's helper pool (the master's left a worker's first
/healthz waiting 2 s and saying the job store could not be reached)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from served import free_port
from stackrun import start, stop_group

from bnviz.core import kernels
from bnviz.lecture import scenes
from bnviz.papers import claims
from bnviz.server import background, health
from bnviz.service import kernel_loading

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("bnviz-kernels", "bnviz-tour")


def _ours() -> list[str]:
    return [t.name for t in threading.enumerate() if t.is_alive() and t.name in NAMES]


@pytest.fixture
def unheld(monkeypatch):
    """The module state as a fresh process has it (restored afterwards), the kernels not
    loaded, the tour's work and the kernels' load stubbed (a thread that waits for ``go``)."""
    import torch

    go = threading.Event()
    for module, name, value in ((background, "_held", False), (background, "_asked", []),
                                (background, "_torch_threads", None),
                                (kernel_loading, "_held", False),
                                (kernel_loading, "_asked", False),
                                (kernel_loading, "_kernels", None),
                                (health, "_pool", health._pool),  # noqa: SLF001
                                (health, "_pending", [])):
        monkeypatch.setattr(module, name, value)
    monkeypatch.setattr(kernels, "ready", lambda: None)
    monkeypatch.setattr(kernels, "load_quietly", lambda: go.wait(30))
    monkeypatch.setattr(scenes, "precompute_tour", lambda: go.wait(30))
    monkeypatch.setattr(claims, "shared_claims", lambda: ())
    monkeypatch.setenv("BNVIZ_PRECOMPUTE_TOUR", "1")
    threads = torch.get_num_threads()
    yield go
    go.set()
    torch.set_num_threads(threads)


def test_a_forked_child_gets_its_own_health_pool():
    """/healthz's helper pool is made anew in a forked child (health.py's at-fork hook): the
    parent's counts the parent's threads, and a worker's first /healthz waited on them."""
    parent = id(health._pool)  # noqa: SLF001
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running the parent's exit handlers
        os.write(write, b"1" if id(health._pool) != parent and not health._pending else b"0")  # noqa: SLF001
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    os.close(read)
    assert id(health._pool) == parent  # noqa: SLF001


def test_held_starts_wait_for_the_fork_and_start_there(unheld, monkeypatch):
    import torch

    monkeypatch.setenv("BNVIZ_TORCH_THREADS", "3")
    background.hold_until_fork()
    background.hold_until_fork()  # gunicorn reads its configuration again on HUP
    assert os.environ["BNVIZ_TORCH_THREADS"] == "1"  # what app.py's import configures
    reported: list[str] = []
    assert kernel_loading.start_kernel_loading() is None
    assert background.start_tour_precompute(reported.append) is None
    assert _ours() == []  # the master starts nothing

    started = background.start_held()  # in the forked worker
    assert sorted(t.name for t in started) == list(NAMES)
    assert os.environ["BNVIZ_TORCH_THREADS"] == "3" and torch.get_num_threads() == 3
    assert background.start_held() == []  # once
    unheld.set()
    for t in started:
        t.join(30)
    assert reported == []


def test_unheld_starts_are_immediate(unheld):
    """Without gunicorn (``python app.py``, a job's process) nothing is held."""
    thread = kernel_loading.start_kernel_loading()
    assert thread is not None and thread.name == "bnviz-kernels"
    tour = background.start_tour_precompute(lambda text: pytest.fail(text))
    assert tour is not None and tour.name == "bnviz-tour"
    unheld.set()
    thread.join(30)
    tour.join(30)


CHILD = """
import os, sys, threading, time
from bnviz.server import background
background.hold_until_fork()
import torch
from bnviz.web import app
names = ("bnviz-kernels", "bnviz-tour")
ours = lambda: sorted(t.name for t in threading.enumerate() if t.is_alive() and t.name in names)
assert ours() == [], ours()
assert torch.get_num_threads() == 1, torch.get_num_threads()
pid = os.fork()
if pid == 0:
    code = 1
    try:
        background.start_held()
        assert torch.get_num_threads() == 2, torch.get_num_threads()
        assert ours() == list(names), ours()
        x = torch.rand(600, 600, dtype=torch.float64)
        (x @ x).exp().sum()  # a parallel operation, on the worker's 2 threads
        started = time.monotonic()
        answer = app.server.test_client().get("/healthz").get_json()
        print("healthz", answer["status"], answer["problems"],
              round(time.monotonic() - started, 2), flush=True)
        assert "cannot be reached" not in " ".join(answer["problems"]), answer
        code = 0
    finally:
        sys.stdout.flush()
        os._exit(code)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.slow
def test_a_worker_forked_from_the_preloaded_app(tmp_home):
    env = {**os.environ, "BNVIZ_TORCH_THREADS": "2", "BNVIZ_PRECOMPUTE_TOUR": "1",
           "PYTHONPATH": str(ROOT)}
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL"):
        env.pop(name, None)
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert "healthz" in out.stdout


@pytest.mark.slow
def test_gunicorn_forks_workers_that_answer_at_once(tmp_path):
    """The real server (gunicorn.conf.py, 2 workers, 2 torch threads each): /healthz's first
    answer finds the job store (the time from "Listening at" is printed, not asserted:
    bench/startstop.py measures it)."""
    port = free_port()
    env = dict(os.environ, BNVIZ_BIND=f"127.0.0.1:{port}", BNVIZ_HOME=str(tmp_path / "home"),
               BNVIZ_WEB_WORKERS="2", BNVIZ_TORCH_THREADS="2", BNVIZ_ACCESS_LOG="0")
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL"):
        env.pop(name, None)
    log = tmp_path / "gunicorn.log"
    proc = start([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                  "bnviz.web.app:server"], env, log)
    try:
        deadline = time.monotonic() + 180
        while "Listening at" not in log.read_text():
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.02)
        listening = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=60) as r:
            answer = json.load(r)
        print(f"first /healthz {time.monotonic() - listening:.2f} s after Listening at")
    finally:
        code = stop_group(proc)
    text = log.read_text()
    assert not [p for p in answer["problems"] if "cannot be reached" in p], answer
    assert code == 0, text[-3000:]
    assert "terminate called" not in text and "SIGABRT" not in text, text[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(2))
def test_a_stop_as_the_first_answer_comes_reaches_every_worker(round_, tmp_path):
    """SIGTERM to the whole group (a terminal's Ctrl-C) the moment / first answers: the
    second worker is being forked then. It must stop with the rest, not serve on until the
    master's graceful_timeout (30 s) kills it, as it did while it still had the master's
    signal handlers (gunicorn.conf.py, STOP_SIGNALS)."""
    port = free_port()
    env = dict(os.environ, BNVIZ_PORT=str(port), BNVIZ_HOME=str(tmp_path / "home"),
               BNVIZ_WEB_WORKERS="2", BNVIZ_ACCESS_LOG="0")
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL", "BNVIZ_NGINX", "BNVIZ_BIND"):
        env.pop(name, None)
    log = tmp_path / "serve.log"
    proc = start([sys.executable, "-m", "bnviz", "serve", "--no-nginx"], env, log)
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.01)
        stopping = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        code = proc.wait(60)
        stopped = time.monotonic() - stopping
    finally:
        stop_group(proc)
    text = log.read_text()
    print(f"stopped in {stopped:.1f} s")
    assert stopped < 15, text[-3000:]  # half the graceful timeout: no worker missed the stop
    assert code == 0, text[-3000:]
    assert "terminate called" not in text and "SIGABRT" not in text, text[-3000:]


def test_the_kernels_are_cached_only_when_every_entry_point_is(monkeypatch, tmp_path):
    """kernels._cached (whether require must say "compiling") looks at the index file of
    every entry point warm_up compiles: one missing (a kernel added since the cache was
    made), and it says so; it had looked at clip_faces' and chords' alone."""
    from bnviz.core import clipping, compiled_network

    kernels.require()
    assert kernels._cached()
    for f in (clipping.clip_faces, compiled_network.add_unit_steps,
              compiled_network.common_codes, compiled_network.cut_network,
              compiled_network.swap_middle_axes):
        with monkeypatch.context() as m:
            m.setattr(f._cache._cache_file, "_index_path", str(tmp_path / "missing.nbi"))
            assert not kernels._cached()
