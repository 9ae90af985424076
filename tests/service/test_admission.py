"""Admission control for heavy page work (issue 30, bnviz.service.admission): the bounds hold
across threads and processes, a killed holder leaks no slot, a busy server answers with a
message in the page (callbacks) or 429 (the training route) while light requests go on."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from bnviz.service import admission
from bnviz.service.admission import ServerBusy, admitted

HEAVY, LIGHT = 10.0, 0.01  # estimated seconds


@pytest.fixture
def bounds(tmp_home, monkeypatch):
    """A fresh home (its own slot directory), one global slot, a short wait."""
    monkeypatch.setenv("BNVIZ_HEAVY_SLOTS", "1")
    monkeypatch.setenv("BNVIZ_HEAVY_PER_CLIENT", "1")
    monkeypatch.setenv("BNVIZ_HEAVY_WAIT_SECONDS", "0.6")
    monkeypatch.setenv("BNVIZ_WEB_THREADS", "8")
    return admission.slot_directory()


def _hold(client: str, entered: threading.Event, release: threading.Event,
          errors: list) -> None:
    try:
        with admitted(HEAVY, client):
            entered.set()
            release.wait(10)
    except ServerBusy as exc:
        errors.append(exc)
        entered.set()


def _holder(client: str) -> tuple[threading.Thread, threading.Event, list]:
    entered, release, errors = threading.Event(), threading.Event(), []
    t = threading.Thread(target=_hold, args=(client, entered, release, errors))
    t.start()
    assert entered.wait(5) and not errors
    return t, release, errors


def test_light_work_never_waits_and_work_outside_a_request_is_not_bounded(bounds):
    t, release, _ = _holder("a")
    try:
        t0 = time.monotonic()
        with admitted(LIGHT, "b"):  # light: runs beside the heavy one at once
            pass
        with admitted(HEAVY):  # no request: the command line, a test, a background thread
            pass
        assert time.monotonic() - t0 < 0.3
    finally:
        release.set()
        t.join()


def test_one_global_slot_makes_the_second_heavy_wait_for_the_first(bounds, monkeypatch):
    monkeypatch.setenv("BNVIZ_HEAVY_WAIT_SECONDS", "5")
    t, release, _ = _holder("a")
    threading.Timer(0.4, release.set).start()
    t0 = time.monotonic()
    with admitted(HEAVY, "b"):  # another client: waits for the one slot, then runs
        waited = time.monotonic() - t0
    t.join()
    assert 0.3 < waited < 3


def test_waiting_in_vain_is_a_busy_message_and_the_slot_comes_back(bounds):
    t, release, _ = _holder("a")
    try:
        t0 = time.monotonic()
        with pytest.raises(ServerBusy, match="busy.*waited 0.6 s"), admitted(HEAVY, "b"):
            pass
        assert 0.5 < time.monotonic() - t0 < 2
    finally:
        release.set()
        t.join()
    with admitted(HEAVY, "b"):  # released: the next one runs at once
        pass


def test_a_client_s_excess_is_refused_at_once(bounds, monkeypatch):
    """Per client: one runs, two more may wait; the fourth is refused without waiting."""
    monkeypatch.setenv("BNVIZ_HEAVY_WAIT_SECONDS", "5")
    first, release, _ = _holder("a")
    waiting = []
    for _ in range(2):
        errors: list = []
        w = threading.Thread(target=_hold, args=("a", threading.Event(), release, errors))
        w.start()
        waiting.append((w, errors))
    time.sleep(0.3)
    try:
        t0 = time.monotonic()
        with pytest.raises(ServerBusy, match="already have 3 heavy views"), \
                admitted(HEAVY, "a"):
            pass
        assert time.monotonic() - t0 < 0.3
    finally:
        release.set()
        first.join()
        for w, errors in waiting:
            w.join()
            assert not errors  # the waiting ones ran, one after another


def test_each_process_keeps_two_threads_for_light_requests(bounds, monkeypatch):
    monkeypatch.setenv("BNVIZ_WEB_THREADS", "3")  # 1 heavy request at a time in this process
    monkeypatch.setenv("BNVIZ_HEAVY_SLOTS", "4")
    t, release, _ = _holder("a")
    try:
        assert admission.heavy_in_process() == 1
        with pytest.raises(ServerBusy, match="busy"), admitted(HEAVY, "b"):
            pass
    finally:
        release.set()
        t.join()
    assert admission.heavy_in_process() == 0


def test_work_prepared_ahead_never_waits_in_the_queue(bounds, monkeypatch):
    """The lecture's next step, prepared ahead: with every slot held it is refused at once
    (a person's request would wait), and with one free it runs."""
    monkeypatch.setenv("BNVIZ_HEAVY_WAIT_SECONDS", "5")
    t, release, _ = _holder("a")
    try:
        t0 = time.monotonic()
        with pytest.raises(ServerBusy, match="free now"), admission.ahead_of_time(), \
                admitted(HEAVY, "b"):
            pass
        assert time.monotonic() - t0 < 0.3
    finally:
        release.set()
        t.join()
    with admission.ahead_of_time(), admitted(HEAVY, "b"):
        pass
    t0 = time.monotonic()  # outside the block, work waits for its turn again
    t, release, _ = _holder("a")
    threading.Timer(0.4, release.set).start()
    with admitted(HEAVY, "b"):
        assert time.monotonic() - t0 > 0.3
    t.join()


def test_nested_heavy_work_in_one_thread_is_admitted_once(bounds):
    with admitted(HEAVY, "a"), admitted(HEAVY, "a"):  # one client slot: would deadlock
        pass


def test_the_slots_are_shared_across_processes_and_freed_when_a_holder_is_killed(bounds):
    """Another process holds the one slot (as a web worker computing would): this process's
    heavy work waits in vain; once that process is killed (-9) the kernel frees it."""
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(bounds / 'slot-0')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(ServerBusy), admitted(HEAVY, "a"):
            pass
    finally:
        holder.kill()
        holder.wait(10)
    with admitted(HEAVY, "a"):
        pass
    assert oct(bounds.stat().st_mode & 0o777) == "0o700"


# ---- over HTTP, through the dashboard --------------------------------------------------------

@pytest.fixture
def all_slots_taken(bounds):
    """Every global slot held by this test, as another process's heavy work would."""
    fd = os.open(bounds / "slot-0", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield
    os.close(fd)


def _explorer_body(depth: int, width: int, mu: float) -> str:
    """The explorer's figure callback as the browser sends it, its controls at these
    settings (the page's own control values, callbacks.explorer.state.control_values)."""
    from bnviz.params import PartitionParams
    from bnviz.web.callbacks.explorer import ids
    from bnviz.web.callbacks.explorer.state import CONTROLS, control_values
    from tests.service.test_http_crafted import DEPENDENCIES, _body

    dep = next(d for d in DEPENDENCIES if f"{ids.GRAPH_SPACE}.figure" in d["output"])
    values = control_values(PartitionParams(depth=depth, width=width, mu_t=mu, layer=1))
    by_id = {CONTROLS[name]: value for name, value in values.items()}
    body = _body(dep)
    for item in body["inputs"] + body["state"]:
        item["value"] = by_id.get(item["id"])
    return json.dumps(body)


def test_a_heavy_view_gets_a_busy_message_while_a_light_one_is_drawn(all_slots_taken):
    from bnviz.web import app as dashboard

    client = dashboard.server.test_client()
    t0 = time.monotonic()
    heavy = client.post("/_dash-update-component", data=_explorer_body(12, 48, 0.37),
                        content_type="application/json")
    assert heavy.status_code == 200 and 0.5 < time.monotonic() - t0 < 5
    shown = json.dumps(heavy.get_json()["response"])
    assert "busy with other heavy views" in shown and '"figure"' not in shown
    light = client.post("/_dash-update-component", data=_explorer_body(4, 8, 0.41),
                        content_type="application/json")
    assert light.status_code == 200 and '"figure"' in json.dumps(light.get_json()["response"])


def test_the_training_route_answers_429_with_retry_after_when_busy(all_slots_taken):
    from bnviz.caps import TRAIN_STEPS_PER_FRAME
    from bnviz.params import PartitionParams
    from bnviz.web import app as dashboard
    from bnviz.web.callbacks.explorer.state import control_values
    from bnviz.web.callbacks.explorer.training import ROUTE

    answer = dashboard.server.test_client().post(ROUTE, json={
        "controls": control_values(PartitionParams(depth=6, width=16)), "lr": 0.05,
        "batch": 16, "optimizer": "adam", "steps": TRAIN_STEPS_PER_FRAME[1], "side": True,
        "reset": True, "state": None})
    assert answer.status_code == 429, answer.get_json()
    assert int(answer.headers["Retry-After"]) > 0 and "busy" in answer.get_json()["error"]
