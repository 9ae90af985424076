"""Tests of the density page (BN paper Figure 3; issue 5): its callbacks and the browser.

The page runs the three-mode concentration of ``bnviz.views.density`` as a ``density`` job
(``bnviz.jobs``, through ``callbacks.background``): compute starts it (or finds it done, by
its parameters), poll reports its progress from the job store, cancel sets the store's cancel
flag (from any process), show draws a 3 x layers grid of heatmaps (each normalised by its
maximum, which is printed) with the data on top and the near-data ratio per layer.  These
tests drive the callbacks as Dash calls them and check what they return against the stored
counts and an own numpy near-data ratio; the browser test at the end drives the page itself.

Jobs run on the real local worker (a process per job) where the test is about processes: end
to end, cancelling a long run, a cancel from another process, a killed web process. Elsewhere
they run in a thread of the test process (``inline_jobs``): where a run must be seen mid-way,
the engine's ``concentration`` is wrapped in a gate that holds each mode until the test lets
it go, so what is observed does not depend on timing.  Runs use small networks (depth <= 4,
width <= 32, grid <= 64: well under a second), except the cancel tests, which need one that
takes seconds.
"""

from __future__ import annotations

import base64
import os
import queue
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from dash import html, no_update
from dash.testing.wait import until

import bnviz.views.density
from bnviz import jobs
from bnviz.config import bnviz_home
from bnviz.core.network import MODES
from bnviz.data.datasets import DATASETS, make_dataset
from bnviz.records import store as store_module
from bnviz.records.results import result_path
from bnviz.records.store import Job, job_key, open_store, pid_alive
from bnviz.service.clients import cancel_key
from bnviz.views.density import (
    MAX_DENSITY_WORK,
    check_density_params,
    density_work,
    load_density,
)
from bnviz.web.callbacks.background import job_id_of
from bnviz.web.callbacks.density import callbacks as cd
from bnviz.web.callbacks.density import ids
from bnviz.web.callbacks.density.figures import density_figure

ROOT = Path(__file__).resolve().parents[2]
BOX = (-3.0, 3.0, -3.0, 3.0)
RUN_TIMEOUT = 90.0  # seconds for a small run to finish (a job process imports torch first)
#: The controls as the page sends them: selects give strings, number inputs numbers.
SMALL = {"depth": 3, "width": "16", "dataset": "star", "n_points": 50, "weight_seed": 0,
         "data_seed": 0, "grid": "48", "eps": 1}
#: The controls in the order the callbacks take them.
CONTROLS = ("depth", "width", "dataset", "n_points", "weight_seed", "data_seed", "grid", "eps")
#: A run that takes seconds (about 2 s a mode on one thread): time to cancel it mid-way.
LONG = {"depth": 8, "width": "256", "dataset": "star", "n_points": 50, "weight_seed": 0,
        "data_seed": 0, "grid": "256", "eps": 1}
ANNOTATION = re.compile(r"layer (\d+) \(max (\d+)\)")


# --------------------------------------------------------------------------- helpers


#: What each start put in the page's job store ("<id>.<cancel key>"), by job id: the tests
#: name jobs by id, and cancel with the store's value as the tab does.
STARTED: dict[str, str] = {}


def compute(**over):
    """The compute callback with the SMALL controls, some overridden; the job store's value
    comes back as the job's id (the whole value in STARTED)."""
    c = {**SMALL, **over}
    out = cd.compute(1, *(c[k] for k in CONTROLS))
    if isinstance(out[0], str):
        STARTED[job_id_of(out[0])] = out[0]
        return (job_id_of(out[0]), *out[1:])
    return out


def params(**over) -> dict:
    c = {**SMALL, **over}
    return cd.parse_params(*(c[k] for k in CONTROLS))


def wait_run(job_id: str, timeout: float = RUN_TIMEOUT) -> Job:
    """The job once it has ended (fail after ``timeout`` seconds)."""
    try:
        return jobs.wait_job(job_id, timeout, poll=0.02)
    except TimeoutError as exc:
        pytest.fail(f"density job {job_id}: {exc}")


def wait_running(job_id: str, timeout: float = RUN_TIMEOUT) -> Job:
    """The job once its process has reported progress (fail after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        job = jobs.get_job(job_id)
        if job.status == "running" and job.progress > 0:
            return job
        assert not job.ended, job
        if time.monotonic() > deadline:
            pytest.fail(f"density job {job_id} not running after {timeout} s: {job}")
        time.sleep(0.05)


def stored_jobs() -> list[Job]:
    return open_store().list()


def decode_typed(spec) -> np.ndarray:
    """A plotly typed-array spec ({'dtype', 'bdata'[, 'shape': 'r, c']}) or a plain list."""
    if isinstance(spec, dict):
        a = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=spec["dtype"])
        if "shape" in spec:
            a = a.reshape([int(v) for v in str(spec["shape"]).split(",")])
        return a
    return np.asarray(spec, dtype=np.float64)


def centres(g: int) -> np.ndarray:
    return BOX[0] + (np.arange(g) + 0.5) * (BOX[1] - BOX[0]) / g


def data_distance(g: int, data: np.ndarray) -> np.ndarray:
    """(g, g) distance of each grid centre (row i at y = centres[i]) to the nearest point."""
    c = centres(g)
    gx, gy = np.meshgrid(c, c)  # gx[i, j] = c[j], gy[i, j] = c[i]
    d2 = (gx[..., None] - data[:, 0]) ** 2 + (gy[..., None] - data[:, 1]) ** 2
    return np.sqrt(d2.min(-1))


def np_near_ratios(counts: np.ndarray, data: np.ndarray, radius: float) -> np.ndarray:
    """Own reference: mean count within ``radius`` of a data point / mean count in the box."""
    near = data_distance(counts.shape[-1], data) <= radius
    c = counts.astype(np.float64)
    return c[..., near].mean(-1) / c.mean((-2, -1))


def text_of(children) -> str:
    return children.children if isinstance(children, html.Span) else children


def density_files(home: Path) -> list[str]:
    """The result folder's files (each job's one result, no temporary file)."""
    d = home / "results"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def python(code: str, home: Path) -> subprocess.Popen:
    """Another process of this server (``code`` with the page's modules importable)."""
    env = dict(os.environ, BNVIZ_HOME=str(home), PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


class Gate:
    """Wraps ``concentration``: each call (one per mode) waits until the test releases it."""

    def __init__(self, real):
        self.real = real
        self.entered: queue.Queue[int] = queue.Queue()
        self.go: queue.Queue[bool] = queue.Queue()
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        self.entered.put(self.calls)
        if not self.go.get(timeout=RUN_TIMEOUT):
            raise RuntimeError("gate closed")
        return self.real(*args, **kwargs)

    def wait_entered(self) -> int:
        return self.entered.get(timeout=RUN_TIMEOUT)

    def release(self) -> None:
        self.go.put(True)


#: One intra-op thread, as the server runs (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def gate(inline_jobs, monkeypatch: pytest.MonkeyPatch):
    g = Gate(bnviz.views.density.concentration)
    monkeypatch.setattr(bnviz.views.density, "concentration", g)
    yield g
    for _ in range(3):  # never leave a run thread waiting
        g.release()


# --------------------------------------------------------------------------- 1. parsing


def test_parse_params_good_values():
    p = params()
    assert p == {"depth": 3, "width": 16, "activation": "leaky_relu", "dataset": "star",
                 "n_points": 50, "weight_seed": 0, "data_seed": 0, "grid": 48, "eps": 1.0}
    assert all(type(p[k]) is int for k in ("depth", "width", "n_points", "weight_seed",
                                           "data_seed", "grid"))
    # the range ends, and numbers as text (selects) or floats (number inputs) alike; all the
    # largest together are over the cost cap, which is checked here too (before any work)
    assert params(depth=16, width="1024", n_points="2000", weight_seed=2**31 - 1,
                  data_seed=2**31 - 1, grid="256", eps=8.0) == {
        "depth": 16, "width": 1024, "activation": "leaky_relu", "dataset": "star",
        "n_points": 2000, "weight_seed": 2**31 - 1, "data_seed": 2**31 - 1, "grid": 256,
        "eps": 8.0}
    assert params(depth=11, width=1024, grid="512")["grid"] == 512
    with pytest.raises(ValueError, match=r"^grid\^2 x depth x width\^2 is over the cap"):
        params(depth=16, width="1024", grid="512")
    assert params(depth=1, width=2, n_points=2, grid=16, eps="1.5")["eps"] == 1.5
    # the same settings, however typed, give the same job key (so the same computation)
    same = params(depth=3.0, width=16, grid=48.0, eps="1")
    assert same == params()
    assert job_key("density", check_density_params(same)) == job_key(
        "density", check_density_params(params()))
    for name in DATASETS:
        assert params(dataset=name)["dataset"] == name


@pytest.mark.parametrize(("control", "value", "words"), [
    ("depth", 0, "depth"), ("depth", 17, "depth"), ("depth", "x", "depth"),
    ("depth", None, "depth"), ("depth", 2.5, "depth"), ("depth", 10**400, "depth"),
    ("width", 1, "width"), ("width", "5000", "width"), ("width", "", "width"),
    ("n_points", 1, "points"), ("n_points", 2001, "points"), ("n_points", "many", "points"),
    ("weight_seed", -1, "weight seed"), ("weight_seed", 2**31, "weight seed"),
    ("data_seed", -1, "data seed"), ("data_seed", 2**31, "data seed"),
    ("grid", "8", "grid"), ("grid", "1024", "grid"), ("grid", "inf", "grid"),
    ("eps", 0, "ε"), ("eps", 9, "ε"), ("eps", "nan", "ε"), ("eps", "x", "ε"),
    ("eps", None, "ε"), ("eps", 0.5, "ε"),
    ("dataset", "mnist", "data set"), ("dataset", None, "data set"),
])
def test_parse_params_rejects_bad_values(control, value, words):
    with pytest.raises(ValueError) as info:
        params(**{control: value})
    message = str(info.value)
    assert message.startswith(words + ":"), message  # names the control first
    assert "Traceback" not in message and len(message.splitlines()) == 1


@pytest.mark.parametrize(("text", "depth", "expected"), [
    ("1,7,11", 11, [1, 7, 11]), ("11, 1 ,7", 11, [1, 7, 11]), ("2,2,1", 3, [1, 2]),
    ("3", 3, [3]), ("1,2,3,4,5,6", 6, [1, 2, 3, 4, 5, 6]), ("1,,3,", 3, [1, 3]),
])
def test_parse_layers_good_values(text, depth, expected):
    assert cd.parse_layers(text, depth) == expected


@pytest.mark.parametrize(("text", "depth"), [
    ("", 11), (" , ", 11), ("a,b", 11), ("1.5", 11), ("0", 11), ("-1,2", 11), ("4", 3),
    ("1,7,11", 3), ("1,2,3,4,5,6,7", 11), (None, 11),
])
def test_parse_layers_rejects_bad_values(text, depth):
    with pytest.raises(ValueError, match=r"^layers: "):
        cd.parse_layers(text, depth)


# --------------------------------------------------------------------------- 2. end to end


def test_compute_poll_show_end_to_end(jobs_home):
    """On the real local worker: a job process computes and writes the result file."""
    home = jobs_home
    key, poll_off, message, is_open = compute()
    assert (poll_off, message, is_open) == (False, "", False)
    job = jobs.get_job(key)
    assert (job.type, job.params) == ("density", check_density_params(params()))
    assert wait_run(key).status == "succeeded"
    assert cd.poll(1, key) == (100, "done", key, True)
    assert density_files(home) == [f"{key}.npz"]  # no temporary file left
    assert jobs.get_job(key).pid != os.getpid()  # computed in a job process

    stored = load_density(key)
    counts, data = stored["counts"], stored["data"]
    assert counts.shape == (3, 3, 48, 48)
    assert [str(m) for m in stored["modes"]] == list(MODES)
    np.testing.assert_array_equal(data, make_dataset("star", 50, 0).points)
    assert all(counts[m, j].max() > 0 for m in range(3) for j in range(3))

    heat, ratio, message, is_open = cd.show(key, "3, 1,2", 0.15)
    assert (message, is_open) == ("", False)
    layers = [1, 2, 3]
    traces = heat["data"]
    assert [t["type"] for t in traces] == ["heatmap", "scatter"] * 9  # data on each panel
    maxima = []
    for r in range(3):
        for c, layer in enumerate(layers):
            k = r * 3 + c + 1
            hm, dots = traces[2 * (k - 1)], traces[2 * (k - 1) + 1]
            axes = ("x", "y") if k == 1 else (f"x{k}", f"y{k}")
            assert (hm["xaxis"], hm["yaxis"]) == axes == (dots["xaxis"], dots["yaxis"])
            panel = counts[r, layer - 1]
            z = decode_typed(hm["z"])
            assert z.shape == (48, 48)
            assert z.max() == 255 and z.min() >= 0  # normalised by its own maximum
            np.testing.assert_array_equal(z, np.round(255.0 * panel / panel.max()))
            assert (hm["zmin"], hm["zmax"]) == (0, 255)
            # row 0 of the counts is the bottom of the box: the heatmap starts there
            assert hm["x0"] == pytest.approx(centres(48)[0])
            assert hm["y0"] == pytest.approx(centres(48)[0])
            assert hm["dx"] == hm["dy"] == pytest.approx(6 / 48)
            np.testing.assert_allclose(decode_typed(dots["x"]), data[:, 0], atol=1e-6)
            np.testing.assert_allclose(decode_typed(dots["y"]), data[:, 1], atol=1e-6)
            maxima.append((layer, int(panel.max())))
            # the panel sits in row r (top to bottom) and column c of the grid
            lay = heat["layout"]
            xa = lay["xaxis" if k == 1 else f"xaxis{k}"]
            ya = lay["yaxis" if k == 1 else f"yaxis{k}"]
            assert c / 3 <= xa["domain"][0] < xa["domain"][1] <= (c + 1) / 3
            assert 1 - (r + 1) / 3 <= ya["domain"][0] < ya["domain"][1] <= 1 - r / 3
    texts = [a["text"] for a in heat["layout"]["annotations"]]
    printed = [(int(m[1]), int(m[2])) for t in texts if (m := ANNOTATION.fullmatch(t))]
    assert printed == maxima  # 'layer L (max M)' with M the panel's largest count
    # each row's name, on two lines where it has two words
    assert [t for t in texts if not ANNOTATION.fullmatch(t)] == [
        "BN" if m == "bn" else m.replace("_", "<br>") for m in MODES]

    lines = ratio["data"]
    assert [t["name"] for t in lines] == ["BN" if m == "bn" else m.replace("_", " ") for m in MODES]
    assert len({t["line"]["color"] for t in lines}) == 3
    assert np.abs(data_distance(48, data) - 0.15).min() > 1e-6  # no ties at the radius
    expected = np_near_ratios(counts, data, 0.15)
    for row, t in zip(expected, lines, strict=True):
        assert list(t["x"]) == [1, 2, 3]  # every layer, whatever the heatmaps show
        np.testing.assert_allclose(np.asarray(t["y"], dtype=np.float64), row, rtol=1e-9)

    # other layers shown and another radius: redrawn from the same result, nothing recomputed
    assert np.abs(data_distance(48, data) - 1.0).min() > 1e-6
    heat, ratio, message, is_open = cd.show(key, "2", 1.0)
    assert (message, is_open) == ("", False)
    assert [t["type"] for t in heat["data"]] == ["heatmap", "scatter"] * 3
    printed = [ANNOTATION.fullmatch(a["text"]) for a in heat["layout"]["annotations"]]
    assert [(int(m[1]), int(m[2])) for m in printed if m] == [(2, int(counts[r, 1].max()))
                                                             for r in range(3)]
    for row, t in zip(np_near_ratios(counts, data, 1.0), ratio["data"], strict=True):
        np.testing.assert_allclose(np.asarray(t["y"], dtype=np.float64), row, rtol=1e-9)
    assert density_files(home) == [f"{key}.npz"]


def test_poll_reports_each_mode_as_it_runs(gate):
    key, *_ = compute()
    seen = []
    for call in (1, 2, 3):
        assert gate.wait_entered() == call  # mode `call` is about to be computed
        value, status, result, poll_off = cd.poll(1, key)
        assert (result, poll_off) == (no_update, False)  # running: keep polling
        seen.append(value)
        assert status == f"computing: {value}% (3 modes)"
        gate.release()
    assert seen == [0, 33, 66]
    assert wait_run(key).status == "succeeded"
    assert cd.poll(1, key) == (100, "done", key, True)


def test_poll_without_a_job_stops_polling():
    assert cd.poll(1, None) == (no_update, no_update, no_update, True)


def test_show_without_a_result_changes_nothing():
    assert cd.show(None, "1,2", 0.15) == (no_update,) * 4


# --------------------------------------------------------------------------- 3. caching


def test_results_are_cached_by_their_settings(inline_jobs):
    home = inline_jobs
    key, *_ = compute()
    assert wait_run(key).status == "succeeded"
    path = result_path(key)
    mtime = path.stat().st_mtime_ns

    # the same settings (typed differently): the same job, done at once, nothing started
    assert compute(width=16, grid=48.0, eps="1.0") == (key, False, "", False)
    assert cd.poll(1, key) == (100, "done", key, True)
    assert [j.id for j in stored_jobs()] == [key]
    assert path.stat().st_mtime_ns == mtime

    # after a restart (new store objects, as a new server process opens) it is found done
    store_module._STORES.clear()
    assert cd.poll(1, key) == (100, "done", key, True)
    assert compute() == (key, False, "", False)
    assert [j.id for j in stored_jobs()] == [key]
    assert path.stat().st_mtime_ns == mtime
    assert cd.show(key, "1,3", 0.15)[2:] == ("", False)

    # other settings are another job
    other, *_ = compute(weight_seed=1)
    assert other != key
    assert wait_run(other).status == "succeeded"
    assert density_files(home) == sorted([f"{key}.npz", f"{other}.npz"])


def test_a_deleted_result_is_computed_again(inline_jobs):
    key, *_ = compute()
    assert wait_run(key).status == "succeeded"
    result_path(key).unlink()
    value, status, result, poll_off = cd.poll(1, key)  # the page that still polls it
    assert (value, result, poll_off) == (0, no_update, True) and text_of(status) == "not found"
    again, *_ = compute()
    assert again != key  # a new job for the same settings
    assert jobs.get_job(again).key == jobs.get_job(key).key
    assert wait_run(again).status == "succeeded"
    assert result_path(again).exists()
    assert compute()[0] == again  # and that one is reused from now on


# --------------------------------------------------------------------------- 4. cancel


def test_cancel_stops_a_long_run_and_the_page_goes_on(jobs_home):
    """On the real local worker: the job process sees the flag and stops, leaving no result."""
    home = jobs_home
    p = params(**LONG)
    assert density_work(p["grid"], p["depth"], p["width"]) < MAX_DENSITY_WORK
    key, poll_off, message, is_open = compute(**LONG)
    assert (poll_off, message, is_open) == (False, "", False)
    running = wait_running(key)
    assert cd.cancel(1, STARTED[key]) == "cancelling..."
    assert wait_run(key).status == "cancelled"
    value, status, result, poll_off = cd.poll(1, key)
    assert (value, result, poll_off) == (0, no_update, True)
    assert isinstance(status, html.Span) and status.children == "cancelled"
    assert "text-danger" in status.className
    assert not result_path(key).exists()
    assert density_files(home) == []  # no half result
    deadline = time.monotonic() + 20
    while pid_alive(running.pid):  # the job process has ended
        assert time.monotonic() < deadline, running.pid
        time.sleep(0.1)

    # the app stays responsive: another computation runs and is shown
    other, *_ = compute(depth=2, width="8")
    assert wait_run(other).status == "succeeded"
    assert cd.poll(1, other) == (100, "done", other, True)
    heat, ratio, message, is_open = cd.show(other, "1,2", 0.15)
    assert (message, is_open) == ("", False) and len(heat["data"]) == 12


_CANCELLER = """
import sys
from bnviz.web.callbacks.density import callbacks as cd
print("ready", flush=True)
print(cd.cancel(1, sys.stdin.readline().strip()), flush=True)  # the store's value
"""


def test_a_cancel_from_another_web_process_stops_the_job(jobs_home):
    """The page's cancel in a second process (another gunicorn worker: what the browser's
    next request may reach) stops a job this process started."""
    other = python(_CANCELLER, jobs_home)
    try:
        assert other.stdout.readline().strip() == "ready"  # imported before the job starts
        key, *_ = compute(**LONG)
        wait_running(key)
        other.stdin.write(STARTED[key] + "\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "cancelling..."
    finally:
        other.communicate(timeout=60)
    assert wait_run(key).status == "cancelled"
    assert text_of(cd.poll(1, key)[1]) == "cancelled"
    assert not result_path(key).exists()


def test_cancel_is_honoured_before_the_next_mode(gate):
    key, *_ = compute()
    assert gate.wait_entered() == 1
    assert cd.cancel(1, STARTED[key]) == "cancelling..."
    gate.release()
    assert wait_run(key).status == "cancelled"
    assert gate.calls == 1  # the other two modes were never started
    assert not result_path(key).exists()
    # the same settings again start afresh: a cancelled job is not reused
    again, *_ = compute()
    assert again != key
    for _ in range(3):
        gate.release()
    assert wait_run(again).status == "succeeded"
    assert cd.poll(1, again) == (100, "done", again, True)


@pytest.mark.parametrize("job", [None, "", "0" * 24, "0" * 12, "../../etc/passwd", 5])
def test_cancel_without_a_job_says_so(inline_jobs, job):
    assert cd.cancel(1, job) == "nothing to cancel"


def test_cancel_after_the_run_finished_says_nothing_to_cancel(inline_jobs):
    key, *_ = compute()
    assert wait_run(key).status == "succeeded"
    assert cd.cancel(1, STARTED[key]) == "nothing to cancel"
    assert jobs.get_job(key).status == "succeeded"


def test_compute_right_after_cancel_computes(gate):
    key, *_ = compute()
    assert gate.wait_entered() == 1
    cd.cancel(1, STARTED[key])
    again, *_ = compute()  # the lecturer changes their mind and clicks compute
    assert again != key  # the job being cancelled is not the one returned
    for _ in range(4):
        gate.release()
    assert wait_run(key).status == "cancelled"
    assert wait_run(again).status == "succeeded"


# --------------------------------------------------------------------------- 5. caps, input


def test_compute_over_the_cost_cap_starts_nothing(inline_jobs):
    assert density_work(512, 16, 1024) > MAX_DENSITY_WORK
    key, poll_off, message, is_open = compute(depth=16, width="1024", grid="512")
    assert (key, poll_off, is_open) == (no_update, no_update, True)
    assert "cap" in message and "grid" in message and "width" in message
    assert stored_jobs() == []
    assert density_files(inline_jobs) == []
    # the paper's own size (11 x 1024 at grid 512) is allowed
    assert density_work(512, 11, 1024) <= MAX_DENSITY_WORK


@pytest.mark.parametrize(("control", "value", "words"), [
    ("depth", "x", "depth"), ("width", 1, "width"), ("eps", "nan", "ε"),
    ("dataset", "nope", "data set"), ("grid", None, "grid"),
])
def test_compute_with_bad_input_shows_a_message(inline_jobs, control, value, words):
    key, poll_off, message, is_open = compute(**{control: value})
    assert (key, poll_off, is_open) == (no_update, no_update, True)
    assert message.startswith(words + ":")
    assert stored_jobs() == []
    assert density_files(inline_jobs) == []


@pytest.fixture
def done_key(inline_jobs) -> str:
    key, *_ = compute()
    assert wait_run(key).status == "succeeded"
    return key


@pytest.mark.parametrize(("layers", "radius", "words"), [
    ("", 0.15, "layers"), ("a,b", 0.15, "layers"), ("0", 0.15, "layers"),
    ("4", 0.15, "layers"), ("1,2,3,1,2,3,4", 0.15, "layers"), (None, 0.15, "layers"),
    ("1,2", 0, "r"), ("1,2", -1, "r"), ("1,2", "nan", "r"), ("1,2", "inf", "r"),
])
def test_show_with_bad_input_shows_a_message(done_key, layers, radius, words):
    heat, ratio, message, is_open = cd.show(done_key, layers, radius)
    assert (heat, ratio, is_open) == (no_update, no_update, True)
    assert message.startswith(words + ":"), message


@pytest.mark.parametrize("radius", [None, "abc"])
def test_show_with_no_radius_names_the_control(done_key, radius):
    heat, ratio, message, is_open = cd.show(done_key, "1,2", radius)
    assert (heat, ratio, is_open) == (no_update, no_update, True)
    assert message.startswith("r:"), message


def test_show_with_a_deleted_result_shows_a_message(done_key):
    result_path(done_key).unlink()
    heat, ratio, message, is_open = cd.show(done_key, "1,2", 0.15)
    assert (heat, ratio, is_open) == (no_update, no_update, True)
    assert isinstance(message, str) and message


def test_show_with_a_deleted_result_does_not_show_server_paths(done_key):
    result_path(done_key).unlink()
    message = cd.show(done_key, "1,2", 0.15)[2]
    assert str(bnviz_home()) not in message and "Errno" not in message


@pytest.mark.parametrize("result", ["../../etc/passwd", "not-a-key", "0" * 24, "0" * 12])
def test_show_with_a_bad_result_key_shows_a_message(inline_jobs, result):
    heat, ratio, message, is_open = cd.show(result, "1,2", 0.15)
    assert (heat, ratio, is_open) == (no_update, no_update, True)
    assert message


def test_an_empty_panel_prints_its_maximum_zero():
    counts = np.zeros((1, 1, 4, 4), np.int32)
    fig = density_figure(counts, ["bn"], [1], np.zeros((2, 2)), BOX)
    assert "layer 1 (max 0)" in [a["text"] for a in fig["layout"]["annotations"]]
    assert decode_typed(fig["data"][0]["z"]).max() == 0


# --------------------------------------------------------------------------- 6. other processes


def _claimed_by(pid: int, progress: float) -> str:
    """A density job as a job process ``pid`` of this host runs it, ``progress`` done."""
    store = open_store()
    job = store.create("density", check_density_params(params()))
    assert store.claim(job.id, pid)
    store.update(job.id, progress=progress)
    return job.id


def test_progress_of_a_job_in_another_process(jobs_home, monkeypatch):
    other = python("import time; time.sleep(60)", jobs_home)
    try:
        key = _claimed_by(other.pid, 0.4)
        assert cd.poll(1, key) == (40, "computing: 40% (3 modes)", no_update, False)
        # any process can ask it to stop, given the starting tab's key (issue 30)
        assert cd.cancel(1, key) == "only the tab that started this run can cancel it"
        assert not jobs.get_job(key).cancel_requested
        assert cd.cancel(1, f"{key}.{cancel_key(key)}") == "cancelling..."
        assert jobs.get_job(key).cancel_requested
        # the process died before it stopped: the next reader ends the job
        os.kill(other.pid, signal.SIGKILL)
        other.wait(10)
        value, status, result, poll_off = cd.poll(1, key)
        assert (value, result, poll_off) == (0, no_update, True)
        assert text_of(status) == "cancelled"

        # a process that died while running: the next reader queues the job again (no job
        # lost: a worker takes it; attempt 1 of BNVIZ_JOB_ATTEMPTS)
        other = python("import time; time.sleep(60)", jobs_home)
        key = _claimed_by(other.pid, 0.1)
        os.kill(other.pid, signal.SIGKILL)
        other.wait(10)
        text = text_of(cd.poll(1, key)[1])
        assert text == "waiting for a worker..." or text.startswith("computing"), text
        assert jobs.get_job(key).status in ("queued", "running", "succeeded")
        assert "queued again (attempt 1 of 3)" in "\n".join(open_store().logs(key))
        # ... and fails it, saying why, once it has been started BNVIZ_JOB_ATTEMPTS times
        monkeypatch.setenv("BNVIZ_JOB_ATTEMPTS", "1")
        other = python("import time; time.sleep(60)", jobs_home)
        key = _claimed_by(other.pid, 0.1)
        os.kill(other.pid, signal.SIGKILL)
        other.wait(10)
        text = text_of(cd.poll(1, key)[1])
        assert text.startswith("failed: the worker running this job stopped (its process "
                               "ended)") and str(other.pid) not in text, text  # no pid shown
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()

    # a failure or a cancellation written by another process is shown as such
    store = open_store()
    for end, error, shown in (("failed", "RuntimeError: x\nmore", "failed: RuntimeError: x"),
                              ("cancelled", "cancelled by the user", "cancelled")):
        key = _claimed_by(os.getpid(), 0.5)
        assert store.finish(key, end, error)
        assert text_of(cd.poll(1, key)[1]) == shown
    # a job id nobody knows, and a job of another page's type
    assert text_of(cd.poll(1, "f" * 12)[1]) == "not found"
    landscape = store.create("landscape-2d", {})
    assert text_of(cd.poll(1, landscape.id)[1]) == "not found"
    assert cd.cancel(1, landscape.id) == "nothing to cancel"


def test_a_long_job_is_not_reported_dead_by_another_worker(jobs_home):
    """A job that has run for long (far past the old 300 s of silence) with its process
    alive and its heartbeat fresh is running, whoever asks."""
    key = _claimed_by(os.getpid(), 0.66)
    store = open_store()
    store.update(key, started=time.time() - 1000, heartbeat=time.time())
    store_module._STORES.clear()  # another web process: its own store objects
    value, status, result, poll_off = cd.poll(1, key)
    assert (value, status, poll_off) == (66, "computing: 66% (3 modes)", False)


_WEB_PROCESS = """
from bnviz.web.callbacks.density import callbacks as cd
print(cd.compute(1, 3, "16", "star", 50, 0, 0, "48", 1)[0], flush=True)
import time
time.sleep(60)
"""


def test_a_killed_web_process_does_not_block_its_job(jobs_home):
    """The web process that started a job is killed at once: the job runs on in the worker,
    and the same settings started from another web process are that job, not a refusal."""
    web = python(_WEB_PROCESS, jobs_home)
    try:
        key = job_id_of(web.stdout.readline().strip())
        os.kill(web.pid, signal.SIGKILL)
        web.wait(10)
    finally:
        if web.poll() is None:
            web.kill()
            web.wait()
    assert compute() == (key, False, "", False)
    assert wait_run(key).status == "succeeded"
    assert cd.poll(1, key) == (100, "done", key, True)


# --------------------------------------------------------------------------- 7. browser
# Needs Chromium and ChromeDriver (marked ``browser`` by conftest.py through ``dash_duo``).

TIMEOUT = 30  # seconds: the first figure of a fresh server includes the torch warm-up


def _js(dash_duo, script: str, *args):
    return dash_duo.driver.execute_script(script, *args)


def _traces(dash_duo, graph: str, kind: str) -> int | None:
    return _js(dash_duo, f"const g = document.querySelector('#{graph} .js-plotly-plot'); "
                         f"return g && g.data ? g.data.filter(t => t.type === '{kind}').length "
                         ": null;")


def _annotations(dash_duo) -> list[str]:
    return _js(dash_duo, f"const g = document.querySelector('#{ids.HEATMAPS} .js-plotly-plot');"
                         " return g && g.layout && g.layout.annotations ? "
                         "g.layout.annotations.map(a => a.text) : [];")


def _type(dash_duo, css: str, text: str) -> None:
    """Replace an input's text and commit it with Enter (the inputs are debounced)."""
    from selenium.webdriver.common.keys import Keys

    el = dash_duo.find_element(css)
    el.send_keys(Keys.CONTROL, "a")
    el.send_keys(Keys.BACKSPACE)
    el.send_keys(text, Keys.ENTER)


def _status(dash_duo) -> str:
    return dash_duo.find_element(f"#{ids.STATUS}").text


def test_density_page_in_the_browser(dash_duo, jobs_home):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from bnviz.web.app import app

    dash_duo.driver.set_window_size(1400, 1000)
    dash_duo.start_server(app)
    # Bootstrap's smooth scrolling makes clicks below the fold land before the scroll ends
    _js(dash_duo, "document.documentElement.style.scrollBehavior = 'auto';")
    dash_duo.driver.find_element(By.LINK_TEXT, "Density (Fig. 3)").click()
    until(lambda: dash_duo.driver.current_url.endswith("/density"), TIMEOUT,
          msg="the navbar link did not open /density")
    _js(dash_duo, "document.documentElement.style.scrollBehavior = 'auto';")
    dash_duo.wait_for_element(f"#{ids.COMPUTE}", timeout=TIMEOUT)

    Select(dash_duo.find_element(f"#{ids.WIDTH}")).select_by_value("16")
    _type(dash_duo, f"#{ids.DEPTH}", "3")
    _type(dash_duo, f"#{ids.LAYERS}", "1,2,3")
    Select(dash_duo.find_element(f"#{ids.GRID}")).select_by_value("64")
    until(lambda: dash_duo.find_element(f"#{ids.DEPTH}").get_attribute("value") == "3",
          TIMEOUT)
    dash_duo.find_element(f"#{ids.COMPUTE}").click()
    until(lambda: _status(dash_duo) == "done", TIMEOUT,
          msg=f"the run did not finish (status {_status(dash_duo)!r})")
    until(lambda: _traces(dash_duo, ids.HEATMAPS, "heatmap") == 9, TIMEOUT,
          msg=f"not 9 heatmaps: {_traces(dash_duo, ids.HEATMAPS, 'heatmap')}")
    assert _traces(dash_duo, ids.HEATMAPS, "scatter") == 9  # the data on every panel
    until(lambda: _traces(dash_duo, ids.RATIOS, "scatter") == 3, TIMEOUT,
          msg="the near-data ratio plot has not 3 lines")
    bar = dash_duo.find_element(f"#{ids.PROGRESS} .progress-bar, #{ids.PROGRESS}.progress-bar")
    assert bar.get_attribute("aria-valuenow") == "100"
    assert not dash_duo.find_elements(f"#{ids.MESSAGE}.show")

    # the job's result was stored under BNVIZ_HOME; the printed maxima are those of its counts
    (job,) = stored_jobs()
    assert job.params == check_density_params(cd.parse_params(3, "16", "star", 50, 0, 0, "64",
                                                                         1))
    key = job.id
    assert (jobs_home / "results" / f"{key}.npz").exists()
    counts = load_density(key)["counts"]
    expected = [f"layer {j} (max {counts[m, j - 1].max()})" for m in range(3) for j in (1, 2, 3)]
    assert [t for t in _annotations(dash_duo) if t.startswith("layer")] == expected

    _type(dash_duo, f"#{ids.LAYERS}", "1,3")
    until(lambda: _traces(dash_duo, ids.HEATMAPS, "heatmap") == 6, TIMEOUT,
          msg=f"not 6 heatmaps: {_traces(dash_duo, ids.HEATMAPS, 'heatmap')}")
    expected = [f"layer {j} (max {counts[m, j - 1].max()})" for m in range(3) for j in (1, 3)]
    assert [t for t in _annotations(dash_duo) if t.startswith("layer")] == expected
    assert dash_duo.get_logs() == []


# --------------------------------------------------------------------------- 8. who may write


def test_with_a_jobs_token_start_and_cancel_need_it(jobs_home, monkeypatch):
    """issue 30: with BNVIZ_JOBS_TOKEN set, the page's start and cancel are refused without
    it (nothing is stored), in the callbacks and through the whole HTTP stack."""
    import json

    from bnviz.web import app as dashboard
    from bnviz.web.callbacks.background import TOKEN_NEEDED

    monkeypatch.setenv("BNVIZ_JOBS_TOKEN", "s3cret")
    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)  # nothing runs
    c = SMALL
    controls = tuple(c[k] for k in CONTROLS)
    for token in (None, "", "wrong"):
        assert cd.compute(1, *controls, token=token) == (no_update, no_update, TOKEN_NEEDED,
                                                         True)
    assert jobs.list_jobs(10) == []
    # a crafted request through the guard, Flask and Dash: the same refusal, nothing stored
    deps = dashboard.server.test_client().get("/_dash-dependencies").get_json()
    dep = next(d for d in deps if d["output"].startswith(f"..{ids.JOB}.data"))
    values = [1, None, *controls]
    body = {"output": dep["output"], "outputs": [
        {"id": o.split(".")[0], "property": o.split(".")[1].split("@")[0]}
        for o in dep["output"].strip(".").split("...")],
        "inputs": [{"id": d["id"], "property": d["property"], "value": v}
                   for d, v in zip(dep["inputs"], values, strict=False)],
        "state": [{"id": d["id"], "property": d["property"], "value": v}
                  for d, v in zip(dep["state"], values[len(dep["inputs"]):], strict=False)],
        "changedPropIds": [f"{ids.COMPUTE}.n_clicks"]}
    r = dashboard.server.test_client().post("/_dash-update-component", data=json.dumps(body),
                                            content_type="application/json")
    assert r.status_code == 200 and "jobs token" in r.get_data(as_text=True)
    assert jobs.list_jobs(10) == []
    # with the token: started; cancelled only with it
    value, *_ = cd.compute(1, *controls, token="s3cret")
    assert jobs.get_job(job_id_of(value)).status == "queued"
    assert "jobs token" in cd.cancel(1, value)  # the tab's own key is not enough now
    assert not jobs.get_job(job_id_of(value)).cancel_requested
    assert cd.cancel(1, value, token="s3cret") == "cancelling..."


def test_without_a_token_only_the_starting_tab_cancels(jobs_home, monkeypatch):
    """issue 30: anyone can list the jobs (GET /api/jobs), but a run is cancelled only with
    the key its start gave the tab: not with the bare id, another job's key or a made-up one."""
    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    value, *_ = cd.compute(*[1], *(SMALL[k] for k in CONTROLS))
    job_id, key = value.split(".")
    other, *_ = compute(data_seed=3)
    refused = "only the tab that started this run can cancel it"
    for crafted in (job_id, f"{job_id}.", f"{job_id}.{'0' * 24}", f"{job_id}.{key[:-1]}",
                    f"{job_id}.{STARTED[other].split('.')[1]}"):
        assert cd.cancel(1, crafted) == refused, crafted
    assert not jobs.get_job(job_id).cancel_requested
    assert cd.cancel(1, value) == "cancelling..."
    # the key survives a restart: it is made from the installation's secret, kept in the home
    assert (jobs_home / "secret").stat().st_mode & 0o777 == 0o600
    assert cancel_key(job_id) == key
