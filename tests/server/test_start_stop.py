"""``make run``'s server (``bnviz serve --no-nginx``: gunicorn alone) stops cleanly while its
workers' background threads still compute (issue 43: two stops in three printed "terminate
called without an active exception" as a worker died on SIGABRT, its precompute thread still
inside torch). The start and stop times are printed (bench/ measures them), not asserted."""

from __future__ import annotations

import os
import signal
import sys
import time
import urllib.request

import pytest
from served import free_port
from stackrun import group_pids, start, stop_group

# with the stack's tests on one worker: one server stack at a time beside the browser
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]


def test_a_stop_while_the_tour_precomputes_aborts_no_worker(tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "BNVIZ_PORT": str(port), "BNVIZ_HOME": str(tmp_path / "home"),
           "BNVIZ_WEB_WORKERS": "2", "BNVIZ_PRECOMPUTE_TOUR": "1"}
    env.pop("BNVIZ_NGINX", None)
    started = time.monotonic()
    proc = start([sys.executable, "-m", "bnviz", "serve", "--no-nginx"], env, log)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() - started < 180, log.read_text()[-3000:]
            time.sleep(0.1)
        first = time.monotonic() - started
        stopping = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)  # the tour's steps take longer than this start
        code = proc.wait(60)
        stopped = time.monotonic() - stopping
        deadline = time.monotonic() + 30
        while group_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop_group(proc)
    text = log.read_text()
    print(f"first 200 {first:.1f} s after the start, stopped in {stopped:.1f} s")
    assert code == 0, text[-3000:]
    assert "terminate called" not in text and "SIGABRT" not in text, text[-3000:]
    assert "still running" in text  # the workers left with the precompute still going
    assert not group_pids(proc.pid)
