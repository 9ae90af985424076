"""Every expensive answer is admitted, bounded and shared (issue 42, item 3).

The lecture's slides export and the debate page's claims table, posted as the browser posts
them, over real HTTP to the app on a loopback server (werkzeug's threaded server, in this
process, so that the computations can be made cheap and held): three callers at once get no
5xx, and each gets the result or one busy line with its retry time; the computation runs
once, and its result is read from disk by a later caller, also one of another process, with
the memory caches empty.

The slides' path stays real (the callbacks, the job system with its store and result file,
slide_files, the drawing and the zip); only each step's scene and its picture are cheap
stand-ins, counted, and held at a gate until the test opens it. Jobs run in a thread of this
process (the ``inline_jobs`` fixture), as the local worker's job processes run them.
Before issue 42 the export was drawn in the request (three callers: three drawings, each
holding its request until done; the memory cache of one process only) and a claims request
waited for another's computation as long as it took: these tests failed there.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest
from served import callback_request, page_values

from bnviz.lecture import slides
from bnviz.lecture.tour import TOUR
from bnviz.papers import claims as claims_module
from bnviz.service import cache
from bnviz.web.callbacks.lecture import ids as lecture_ids
from bnviz.web.callbacks.papers import ids as papers_ids

ROOT = Path(__file__).resolve().parents[2]
#: A request that gets no answer within this many seconds is a failure (held by a computation).
ANSWER_SECONDS = 30
BUSY = re.compile(r"(try again|retry) in (about )?\d+ s")
FAKE_CLAIM = {"id": "fake-claim", "paper": "Test, 2025", "statement_tex": "x = 1",
              "how": "a stand-in", "paper_value": 1.0, "computed": 1.0, "holds": True}


@pytest.fixture(scope="module")
def dashboard():
    from bnviz.web import app

    return app


@pytest.fixture
def served(dashboard):
    """The app on a loopback port (werkzeug's threaded server); its base URL. Stopped after."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, dashboard.server, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(30)
    server.server_close()


@pytest.fixture
def dependencies(dashboard) -> list[dict]:
    return dashboard.server.test_client().get("/_dash-dependencies").get_json()


def _post(base: str, body: dict) -> tuple[int, dict | str]:
    """POST a callback request; (status, decoded answer), (0, why) when none came."""
    req = urllib.request.Request(base + "/_dash-update-component", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=ANSWER_SECONDS) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except OSError as exc:  # no answer in time: the request was held
        return 0, repr(exc)


def _request(dependencies: list[dict], input_id: str, values: dict[str, dict]) -> dict:
    """The request of the server callback that ``input_id`` fires, with these component
    values (a clientside callback on the same input, such as the export's "starting" line,
    runs in the browser and never reaches the server)."""
    mine = [d for d in dependencies if not d.get("clientside_function")
            and any(i["id"] == input_id for i in d["inputs"])]
    assert len(mine) == 1, [d["output"] for d in mine]
    return callback_request(mine, mine[0]["output"][:10], values)


# ---- the slides export ------------------------------------------------------------------

@pytest.fixture
def cheap_slides(inline_jobs, monkeypatch):
    """Each step's scene and picture made cheap and counted (``calls``); the scene waits at
    ``gate`` (open unless a test closes it)."""
    calls: list[str] = []
    gate = threading.Event()
    gate.set()

    def scene(step):
        assert gate.wait(120), "the test never opened the gate"
        calls.append(step.key)
        return SimpleNamespace(step=step)

    def draw(figure, _scene):
        figure.add_subplot().plot([0, 1], [0, 1])

    monkeypatch.setattr(slides, "compute_scene", scene)
    monkeypatch.setattr(slides, "draw_scene", draw)
    yield SimpleNamespace(calls=calls, gate=gate)
    gate.set()


def _lecture_values() -> dict[str, dict]:
    from bnviz.web.layouts.lecture import page_layout

    values = page_values(page_layout())
    values[lecture_ids.EXPORT] = {**values[lecture_ids.EXPORT], "n_clicks": 1}
    return values


def _zip_of(response: dict) -> bytes | None:
    download = response.get(lecture_ids.DOWNLOAD, {}).get("data")
    if not download:
        return None
    content = download["content"]
    return base64.b64decode(content) if download.get("base64") else content.encode()


def _export(base: str, dependencies: list[dict], values: dict) -> tuple[str, object]:
    """Click "export all" and follow the page's polling to the end, as the browser does:
    ("zip", bytes), ("busy", the line), or ("error", what came)."""
    status, reply = _post(base, _request(dependencies, lecture_ids.EXPORT, values))
    for _ in range(2000):
        if status != 200:
            return "error", (status, reply)
        response = reply["response"]
        data = _zip_of(response)
        if data is not None:
            return "zip", data
        line = json.dumps(response.get(lecture_ids.EXPORT_STATUS, {}).get("children"))
        job = response.get(lecture_ids.EXPORT_JOB, {}).get("data")
        if not job:  # nothing running and no zip: a busy line, or a failure
            return ("busy", line) if BUSY.search(line) else ("error", line)
        time.sleep(0.05)
        poll = dict(values, **{lecture_ids.EXPORT_POLL: {"n_intervals": 1},
                               lecture_ids.EXPORT_JOB: {"data": job}})
        status, reply = _post(base, _request(dependencies, lecture_ids.EXPORT_POLL, poll))
    return "error", "the export never ended"


def _check_zip(data: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
    assert len(names) == 2 * len(TOUR) + 2 and "bnviz-lecture/slides.json" in names


def test_three_concurrent_exports_share_one_drawing(served, dependencies, cheap_slides):
    """Three clicks at once while nothing is drawn yet: each request is answered while the
    slides are still being drawn (none holds its thread for the drawing), each caller then
    gets the zip or a busy line with its retry time, and the slides are drawn once."""
    values = _lecture_values()
    cheap_slides.gate.clear()  # the drawing cannot finish before the three are answered
    first = _request(dependencies, lecture_ids.EXPORT, values)
    try:
        with ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: _post(served, first), range(3)))
    finally:
        cheap_slides.gate.set()
    assert [status for status, _ in answers] == [200] * 3, answers
    jobs = {a["response"].get(lecture_ids.EXPORT_JOB, {}).get("data") for _, a in answers}
    assert len(jobs) == 1 and None not in jobs  # one job, joined by all three
    for _, reply in answers:  # while it runs: its progress bar, and the button disabled
        response = reply["response"]
        assert lecture_ids.EXPORT_PROGRESS in json.dumps(response[lecture_ids.EXPORT_STATUS])
        assert response[lecture_ids.EXPORT] == {"disabled": True}
    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(lambda _: _export(served, dependencies, values), range(3)))
    # (a busy line is an allowed answer; here the three join one job, so each gets the zip)
    assert [kind for kind, _ in outcomes] == ["zip"] * 3, outcomes
    for _, data in outcomes:
        _check_zip(data)
    assert cheap_slides.calls == [step.key for step in TOUR]  # drawn once


def test_a_drawn_export_is_read_from_disk_by_any_process(served, dependencies, cheap_slides,
                                                         inline_jobs):
    """Once drawn, the zip is read, not drawn again: by a later click with this process's
    memory cache emptied, and by another process of the same BNVIZ_HOME."""
    values = _lecture_values()
    kind, data = _export(served, dependencies, values)
    assert kind == "zip", data
    assert len(cheap_slides.calls) == len(TOUR)
    cache._process()[0].clear()  # every memoised result of this process
    again = _post(served, _request(dependencies, lecture_ids.EXPORT, values))
    assert again[0] == 200 and _zip_of(again[1]["response"]) == data  # at once, no job
    assert len(cheap_slides.calls) == len(TOUR)  # nothing drawn again
    script = (
        "import base64, sys\n"
        "from bnviz.lecture import slides\n"
        "def never(*args, **kwargs):\n"
        "    raise SystemExit('the slides were drawn again')\n"
        "slides.compute_scene = slides.slide_files = never\n"
        "from callbacks.lecture.export import export_slides\n"
        "download = export_slides(1, 'light')[0]\n"
        "sys.stdout.write(download['content'])\n")
    other = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                           text=True, timeout=300,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert other.returncode == 0, other.stderr[-2000:]
    assert base64.b64decode(other.stdout) == data


def test_an_export_refused_at_the_jobs_cap_says_when_to_try_again(served, dependencies,
                                                                   cheap_slides, monkeypatch):
    """The jobs' cap full (another page's run): the click is answered 200 with one busy line
    and its retry time, the button usable again, nothing drawn."""
    from bnviz.records.store import open_store

    monkeypatch.setenv("BNVIZ_MAX_RUNS", "1")
    store = open_store()
    other = store.create("density", {"grid": 8})
    assert store.claim(other.id, os.getpid())  # running (the inline worker takes no running job)
    kind, line = _export(served, dependencies, _lecture_values())
    assert kind == "busy" and "busy" in line, line
    assert cheap_slides.calls == []
    store.finish(other.id, "cancelled")


# ---- the claims table -------------------------------------------------------------------

@pytest.fixture
def held_claims(tmp_home, monkeypatch):
    """The claims' computation made cheap, counted and held at a gate; a web request waits
    0.5 s for another's computation."""
    monkeypatch.setenv("BNVIZ_HEAVY_WAIT_SECONDS", "0.5")
    monkeypatch.setenv("BNVIZ_HEAVY_SLOTS", "2")
    calls: list[int] = []
    gate = threading.Event()

    def all_claims(device=None):
        calls.append(1)
        assert gate.wait(120), "the test never opened the gate"
        return {"claims": [FAKE_CLAIM]}

    monkeypatch.setattr(claims_module, "all_claims", all_claims)
    yield SimpleNamespace(calls=calls, gate=gate)
    gate.set()


def _claims_request(dependencies: list[dict]) -> dict:
    from bnviz.web.layouts.papers import layout

    return _request(dependencies, papers_ids.CLAIMS_REQUEST, page_values(layout()))


def _claims_answer(reply: dict) -> str:
    """"table" or "busy" (one line with its retry time, and the interval that asks again
    then), else what came."""
    children = reply["response"][papers_ids.CLAIMS]["children"]
    text = json.dumps(children)
    if "fake-claim" in text and "holds" in text:
        return "table"
    if BUSY.search(text) and papers_ids.CLAIMS_RETRY in text:
        return "busy"
    return text[:300]


def test_three_concurrent_claims_tables(served, dependencies, held_claims):
    """Three requests at once while the table is computed: those not computing it are
    answered a busy line with a retry time while it runs (before: they waited for it), the
    computing one the table; computed once, and read from disk afterwards."""
    body = _claims_request(dependencies)
    answers: list[tuple[int, object]] = []
    pool = ThreadPoolExecutor(3)
    try:
        futures = [pool.submit(_post, served, body) for _ in range(3)]
        deadline = time.monotonic() + ANSWER_SECONDS
        while sum(f.done() for f in futures) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        early = [f.result() for f in futures if f.done()]
    finally:
        held_claims.gate.set()
        answers = [f.result() for f in futures]
        pool.shutdown()
    assert len(early) >= 2, f"the requests were held by the computation: {answers}"
    assert [status for status, _ in answers] == [200] * 3, answers
    kinds = sorted(_claims_answer(reply) for _, reply in answers)
    assert kinds == ["busy", "busy", "table"], kinds
    assert [_claims_answer(reply) for _, reply in early] == ["busy", "busy"]
    assert held_claims.calls == [1]
    status, reply = _post(served, body)  # from disk
    assert status == 200 and _claims_answer(reply) == "table"
    assert held_claims.calls == [1]


def test_the_busy_claims_panel_asks_again_by_itself(dependencies, dashboard):
    """The interval in a busy answer fires the retry callback, whose new store value makes
    the panel ask for the table again."""
    from bnviz.web.callbacks.papers.callbacks import retry_claims

    assert retry_claims(1, "all") == 1 and retry_claims(1, 1) == 2
    assert retry_claims(1, 10**400) == 1 and retry_claims(1, True) == 1  # crafted stores
    retry = [d for d in dependencies
             if any(i["id"] == papers_ids.CLAIMS_RETRY for i in d["inputs"])]
    assert [d["output"] for d in retry] == [f"{papers_ids.CLAIMS_REQUEST}.data"]
