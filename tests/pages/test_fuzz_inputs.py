"""Property-based fuzzing of every user-controlled input (issue 7).

Hypothesis feeds random values (valid ones, boundaries, None, NaN, +-inf, huge integers,
negative numbers, empty and random text, lists and dicts where a scalar is expected,
booleans) to the page callbacks, which are called directly (a dash ``@callback`` returns
the function itself), and to the command line (``bnviz.cli.main``, in-process). The
properties:

* nothing raises;
* a rejection is one clear line for the user: not empty, no newline, no traceback, no
  exception repr, at most MAX_MESSAGE characters; and a refused request keeps the page's
  state (``no_update``);
* a request over a cost cap is refused with a message before anything is computed;
* the CLI exits with 0 or 2 (1 only for ``jobs wait`` of a job that did not succeed), and
  on 2 it prints exactly one ``bnviz: error: ...`` line on stderr.

Valid values are kept small, so accepted requests are cheap. Nothing starts a background
computation: training, density runs and the job worker are replaced by stubs that record
what they were given, and every job submitted is cancelled.

The bugs this fuzzing found (B1-B10) were fixed while it was written; each one's minimal
reproducers are kept at the end as regression tests, and the strategies above feed their
triggers too. A bug found later: keep its reproducer there marked
``xfail(strict=True, reason="BUG: ...")``, and leave its trigger out of the strategies
(saying so) until it is fixed.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path
from urllib.parse import urlencode

import dash_bootstrap_components as dbc
import numpy as np
import pytest
from dash import html, no_update
from dash._pages import _parse_query_string
from dash.development.base_component import Component
from fuzzing import (
    FEW,
    FUZZ,
    HEX12,
    HEX24,
    HUGE,
    JUNK,
    NUMBERS,
    TEXTS,
    TOO_BIG,
    _number,
    _whole_in,
    alert_of,
    assert_clear,
    assert_cli_outcome,
    bad_number,
    click,
    data_url,
    good,
    in_callback,
    mixed,
    run_cli,
    upload,
)
from hypothesis import event, given
from hypothesis import strategies as st

import bnviz.images.params as bx
from bnviz import jobs
from bnviz.core.network import ACTIVATIONS, MODES
from bnviz.data.datasets import DATASETS
from bnviz.images.networks import ARCHS
from bnviz.images.params import JOB_TYPES, PARAMS
from bnviz.jobs.store import Job
from bnviz.jobs.types import get_job_type
from bnviz.views.density import MAX_DENSITY_WORK, density_work
from bnviz.views.explorer import (
    EXPLORER_LIMITS,
    MAX_EXTRA_POINTS,
    PRESETS,
    SCOPES,
    ExplorerSettings,
)
from callbacks import density as cd
from callbacks import explorer as ce
from callbacks import jitter as cj
from callbacks import jobs as cjobs
from layouts import density as density_layout
from layouts import jitter as jitter_layout
from layouts import jobs as jobs_layout
from layouts.ids import Explorer as EIDS
from layouts.ids import Jobs as JIDS

# =========================================================================== explorer

LIM = EXPLORER_LIMITS
EXPLORER_VALID = {
    "depth": good(st.integers(1, 3)), "width": good(st.integers(2, 5)),
    "activation": st.sampled_from(ACTIVATIONS), "alpha": good(st.floats(0.01, 0.99)),
    "mode": st.sampled_from(MODES), "weight_seed": good(st.integers(0, 2**31 - 1)),
    "dataset": st.sampled_from(DATASETS), "n_points": good(st.integers(2, 120)),
    "data_seed": good(st.integers(0, 5)),
    "batch_size": st.one_of(st.sampled_from(["all", "ALL", " none ", None, ""]),
                            good(st.integers(2, 20))),
    "batch_seed": good(st.integers(0, 5)), "mu_t": good(st.floats(0, 1.5)),
    "sigma_s": good(st.floats(-2, 2)), "scope": st.sampled_from(SCOPES),
    "target_layer": good(st.integers(1, 12)), "target_unit": good(st.integers(1, 64)),
    "layer": good(st.integers(1, 12)),
}
EXPLORER_BAD = {name: JUNK for name in EXPLORER_VALID}
# depth and width drive the cost: junk never holds a valid but large one
EXPLORER_BAD["depth"] = bad_number(*LIM["depth"])
EXPLORER_BAD["width"] = bad_number(*LIM["width"])
VALID_CONTROLS = ce.control_values(ExplorerSettings(depth=2, width=3, n_points=30, layer=2))

COORD = st.one_of(st.floats(-3, 3), st.sampled_from([math.nan, math.inf, -math.inf, 1e7,
                                                     HUGE, TOO_BIG, True, None, "x", "1"]))
#: Added points as the page stores them ([[x, y], ...]), and as a crafted request may.
EXTRA = st.one_of(
    st.none(), st.just([]),
    st.lists(st.lists(st.floats(-3, 3), min_size=2, max_size=2), max_size=5),
    st.lists(st.lists(COORD, min_size=2, max_size=2), min_size=1, max_size=3),
    st.lists(st.lists(st.floats(-3, 3), min_size=1, max_size=4), min_size=1, max_size=3),
    st.lists(JUNK, min_size=1, max_size=3), JUNK,
    st.just([[0.0, 0.0]] * (MAX_EXTRA_POINTS + 1)))


def _points(extra) -> list | None:
    """Added points as the page keeps them: a list of finite (x, y) pairs, as floats (a
    JSON integer arrives exact), else None."""
    if not isinstance(extra, list) or len(extra) > MAX_EXTRA_POINTS:
        return None
    for p in extra:
        if not (isinstance(p, list) and len(p) == 2 and all(
                isinstance(v, int | float) and not isinstance(v, bool)
                and _number(v) is not None for v in p)):
            return None
        if not all(math.isfinite(_number(v)) for v in p):
            return None
    return [[float(x), float(y)] for x, y in extra]


@FUZZ
@given(controls=mixed(EXPLORER_VALID, EXPLORER_BAD), extra=EXTRA,
       view=st.one_of(st.sampled_from(["space", "layers", "unit"]), JUNK),
       tls=JUNK, projector=JUNK,
       preset=st.one_of(st.sampled_from(sorted(PRESETS)), JUNK))
def test_update_views_answers_every_control_value(controls, extra, view, tls, projector,
                                                  preset):
    out = ce.update_views(controls, extra, view, tls, projector, preset)
    assert len(out) == 7
    space, layers, unit, summary, message, is_open, query = out
    event("refused" if is_open else "drawn")
    if is_open:
        assert_clear(message)
        assert all(o is no_update for o in (space, layers, unit, summary, query))
    else:
        assert message == "" and isinstance(query, str)
        assert summary is not no_update
        assert any(isinstance(f, dict) for f in (space, layers, unit))


@FUZZ
@given(depth=JUNK, width=JUNK, layer=JUNK, target_layer=JUNK, target_unit=JUNK)
def test_sync_ranges_never_raises(depth, width, layer, target_layer, target_unit):
    out = ce.sync_ranges(depth, width, layer, target_layer, target_unit)
    assert len(out) == 7
    if out[0] is not no_update:  # the ranges follow a valid depth and width only
        assert 1 <= out[0] <= LIM["depth"][1] and 2 <= out[5] <= LIM["width"][1]
        for value, hi in ((out[2], out[0]), (out[4], out[0]), (out[6], out[5])):
            assert value is no_update or 1 <= value <= hi


@FUZZ
@given(clicks=JUNK, seed=JUNK)
def test_seed_buttons_always_give_a_valid_seed(clicks, seed):
    for fn in (ce.resample_weights, ce.draw_another_batch):
        nxt = fn(clicks, seed)
        assert isinstance(nxt, int) and 0 <= nxt <= LIM["weight_seed"][1]


@FUZZ
@given(clicks=st.lists(JUNK, min_size=len(PRESETS), max_size=len(PRESETS)),
       key=st.sampled_from(sorted(PRESETS)))
def test_presets_with_any_click_counts(clicks, key):
    prop = f'{{"key":"{key}","type":"{EIDS.PRESET}"}}.n_clicks'
    out = in_callback(ce.apply_preset, prop, clicks)
    assert set(out) == {*ce.CONTROLS, "view", "tls", "caption", "preset", "extra", "layer_max"}
    if out["preset"] is not no_update:
        assert out["preset"] == key
        ExplorerSettings.parse(out | {"sigma_s": 2.0 ** out["sigma_s"],
                                      "target_unit": out["target_unit"] - 1})


@FUZZ
@given(trigger=st.sampled_from([EIDS.ANIMATE, EIDS.ANIMATE_TIMER]),
       mu=st.one_of(st.floats(0, 1.5), JUNK), disabled=JUNK)
def test_animate_never_raises(trigger, mu, disabled):
    value, stop = in_callback(ce.animate_mu, trigger + ".n_intervals", 1, 1, mu, disabled)
    assert value is no_update or (isinstance(value, float) and 0 <= value <= 1)
    assert isinstance(stop, bool)


@FUZZ
@given(x=st.one_of(st.floats(-3, 3), JUNK), y=st.one_of(st.floats(-3, 3), JUNK),
       shape=st.sampled_from(["point", "no points", "empty", "junk"]),
       extra=st.one_of(EXTRA, st.just([[0.0, 0.0]] * MAX_EXTRA_POINTS)))
def test_clicks_with_any_click_data(x, y, shape, extra):
    data = {"point": {"points": [{"x": x, "y": y}]}, "no points": {"points": []},
            "empty": {}, "junk": [x, y]}[shape]
    new, status = in_callback(ce.add_points, EIDS.GRAPH_SPACE + ".clickData", data, None,
                              None, None, extra)
    if new is no_update:
        assert status is no_update or assert_clear(status)
    else:  # valid points ending with the finite clicked one (B7), within the cap
        assert _points(new) == new and len(new) <= MAX_EXTRA_POINTS
        assert "added points" in status
        if _points(extra) is not None:  # the points the page had are kept
            assert new[:-1] == _points(extra)


# ---- uploads

CSV_CELL = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-5, 5).map(str),
    st.floats(-3, 3).map(lambda v: f"{v:.3f}"),
    st.sampled_from(["", " ", "x", "y", "label", "abc", '"1"', '"1,2"', "1e400", "0x1", "NaN",
                     "-", '"', "1;2", "\t", "\x00", "1.5"]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8))
GOOD_ROW = st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(
    lambda p: [f"{p[0]:.4f}", f"{p[1]:.4f}"])


@st.composite
def csv_bytes(draw) -> bytes:
    header = draw(st.sampled_from([None, "x,y", "x,y,label", "X , Y", "a,b", "x"]))
    if draw(st.booleans()):
        rows = draw(st.lists(GOOD_ROW, min_size=1, max_size=20))
        if draw(st.booleans()):  # one damaged row
            rows[draw(st.integers(0, len(rows) - 1))] = draw(
                st.lists(CSV_CELL, min_size=1, max_size=4))
    else:
        rows = draw(st.lists(st.lists(CSV_CELL, min_size=1, max_size=4), max_size=12))
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = eol.join(([header] if header else []) + [",".join(r) for r in rows])
    text += draw(st.sampled_from(["", eol, eol * 3]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


GOOD_CSV = st.builds(
    lambda header, rows: ((header + "\n" if header else "")
                          + "".join(",".join(r) + "\n" for r in rows)).encode(),
    st.sampled_from(["", "x,y", "X,Y"]), st.lists(GOOD_ROW, min_size=1, max_size=30))
HUGE_UPLOAD = "data:text/csv;base64," + "!" * (ce.MAX_UPLOAD_BYTES * 4 // 3 + 8)
MIMES = st.sampled_from(["text/csv", "application/vnd.ms-excel", "application/octet-stream",
                         ""])
UPLOADS = st.one_of(
    st.builds(data_url, GOOD_CSV, MIMES),
    st.builds(data_url, csv_bytes(), MIMES),
    st.builds(data_url, st.binary(max_size=300), MIMES),
    st.text(max_size=60).map(lambda t: "data:text/csv;base64," + t),  # malformed base64
    st.text(max_size=30),  # not a data URL
    st.sampled_from([None, "", ",", "data:text/csv;base64,", "data:text/csv,1,2", HUGE_UPLOAD]),
    JUNK)
FILENAMES = st.one_of(
    st.sampled_from(["points.csv", "P.CSV", "data.txt", "noext", "", None, "\u00e4 \u00f6.csv",
                     ".csv", "a\nb.csv", "x" * 300 + ".csv"]),
    st.text(max_size=30).map(lambda s: s + ".csv"), JUNK)
OLD_POINTS = st.one_of(EXTRA, st.just([[0.5, 0.5]] * (MAX_EXTRA_POINTS - 1)))


@FUZZ
@given(contents=UPLOADS, filename=st.one_of(st.just("points.csv"), FILENAMES), extra=OLD_POINTS)
def test_uploads_are_parsed_or_refused_with_a_reason(contents, filename, extra):
    new, status = upload(contents, filename, extra)
    event("refused" if new is no_update else "added")
    if new is no_update:  # refused: the old points stay, the reason is shown in red
        assert isinstance(status, html.Span) and status.className == "text-danger"
        text = assert_clear(status)
        if contents is HUGE_UPLOAD:  # refused by its size, before decoding
            assert "larger than" in text
    else:  # valid points (the page's ones first, when they were valid), within the cap
        old = _points(extra) or []
        added = new[len(old):]
        assert new[:len(old)] == old and added and len(new) <= MAX_EXTRA_POINTS
        assert _points(new) == new and all(abs(v) <= 1e6 for p in added for v in p)
        assert assert_clear(status).startswith(f"added {len(added)} points from ")


def test_upload_over_the_size_cap_is_refused_before_decoding():
    big = b"x,y\n" + b"0.125,0.25\n" * (ce.MAX_UPLOAD_BYTES // 11 + 10)  # valid, > 1 MB
    for contents in (data_url(big), HUGE_UPLOAD):
        new, status = upload(contents, "big.csv", [[1.0, 2.0]])
        assert new is no_update and "larger than 1000 kB" in assert_clear(status)


def test_clear_always_empties():
    assert in_callback(ce.add_points, EIDS.CLEAR_POINTS + ".n_clicks", None, None, 3, None,
                       [[1.0, 1.0]]) == ([], "")


# ---- the page's state in the URL

QUERY_KEYS = st.one_of(
    st.sampled_from([*VALID_CONTROLS, "extent", "view", "tls", "projector", "pts", "preset",
                     "job"]),
    st.text(max_size=10))
QUERY_VALUES = st.one_of(
    st.sampled_from(["3", "0", "-1", "all", "bn", "relu", "fig1", "fig9", "layers", "unit",
                     "1", "1,2;3,4", "nan,1", "1,2,3;", ";;", "1e400,0", "inf", "1e9,1",
                     "0.25", "12", "64", "2000"]),
    TEXTS)


@st.composite
def url_queries(draw) -> dict:
    """A query as Dash Pages hands it to the layout: repeated keys arrive as lists."""
    if draw(st.booleans()):
        search = "?" + urlencode(draw(st.lists(st.tuples(QUERY_KEYS, QUERY_VALUES),
                                               max_size=8)))
    else:
        search = "?" + draw(st.text(max_size=80))
    return _parse_query_string(search)


@FUZZ
@given(query=url_queries())
def test_tampered_url_still_renders_the_explorer(query):
    page = ce.page_layout(**query)
    assert isinstance(page, html.Div) and page.id == EIDS.ROOT
    alert = alert_of(page, EIDS.MESSAGE)
    assert alert.is_open == bool(alert.children)
    if alert.children:
        assert_clear(alert.children)


@FUZZ
@given(query=url_queries())
def test_tampered_url_still_renders_the_other_pages(query):
    for layout in (jobs_layout.layout, jitter_layout.layout, density_layout.layout):  # B1
        assert isinstance(layout(**query), Component)


@FUZZ
@given(on=JUNK)
def test_projector_mode_with_any_value(on):
    assert ce.projector_mode(on) in ("projector", "")


# =========================================================================== jitter


#: The job id the stubs below answer with.
STUB_ID = "5" * 12


def recording_starts(monkeypatch, job_type: str) -> list[dict]:
    """The pages' background starts of ``job_type`` are recorded instead of started (the
    job type's own parameter check still runs, as in bnviz.jobs.start_job)."""
    calls: list[dict] = []

    def start_job(started_type: str, params: dict) -> Job:
        assert started_type == job_type
        calls.append(get_job_type(started_type).check(params))
        return Job(STUB_ID, started_type, calls[-1])

    monkeypatch.setattr(jobs, "start_job", start_job)
    return calls


@pytest.fixture
def training_stub(tmp_home, monkeypatch):
    """Training requests are recorded instead of started."""
    return recording_starts(monkeypatch, "jitter-training")


JITTER_VALID = {
    "dataset": st.sampled_from(DATASETS), "n": good(st.integers(8, 48)),
    "depth": good(st.integers(1, 2)), "width": good(st.integers(2, 4)),
    "seed": good(st.integers(0, 3)), "batch": good(st.integers(1, 3)),
    "k": good(st.integers(1, 3)),
    "virtual": st.one_of(st.none(), st.just(""), good(st.integers(2, 8))),
}
JITTER_BAD = {
    "dataset": JUNK, "n": bad_number(8, 2000), "depth": bad_number(1, 6),
    "width": bad_number(2, 32), "seed": JUNK, "batch": bad_number(1, 9),
    "k": bad_number(1, 128), "virtual": JUNK,
}
#: A trained network's reference as the page stores it, and as a crafted request may.
TRAINED = st.one_of(st.none(), st.just(""), st.just("0" * 24), HEX24, JUNK,
                    HEX24.map("upload:".__add__), HEX12.map("job:".__add__))


@FEW
@given(c=mixed(JITTER_VALID, JITTER_BAD), trained=TRAINED)
def test_update_jitter_answers_every_control_value(tmp_home, c, trained):
    out = cj.update_jitter(c["dataset"], c["n"], c["depth"], c["width"], c["seed"],
                           c["batch"], c["k"], c["virtual"], trained)
    assert len(out) == 6
    event("refused" if out[5] else "drawn")
    if out[5]:
        assert_clear(out[4])
        assert all(o is no_update for o in out[:4])
    else:
        assert out[4] == "" and all(isinstance(f, dict) for f in out[:3])


@FUZZ
@given(c=mixed({**JITTER_VALID, "steps": good(st.integers(1, 5000)),
                "optimizer": st.sampled_from(["adam", "sgd"]),
                "lr": good(st.floats(1e-6, 10))},
               {**JITTER_BAD, "steps": bad_number(1, 5000),
                "optimizer": JUNK, "lr": JUNK}))
def test_training_requests_are_checked(training_stub, c):
    training_stub.clear()
    out = cj.start(1, c["dataset"], c["n"], c["depth"], c["width"], c["seed"], c["batch"],
                   c["steps"], c["optimizer"], c["lr"])
    assert len(out) == 4
    event("refused" if out[3] is True else "started")
    if out[3] is True:
        assert_clear(out[2])
        assert out[0] is no_update and not training_stub
    else:  # started: every parameter is within the training caps
        p, = training_stub
        assert out[0] == STUB_ID and out[1] is False
        assert 1 <= p["steps"] <= 5000 and 0 < p["lr"] <= 10 and math.isfinite(p["lr"])
        assert p["optimizer"] in ("adam", "sgd") and p["n"] <= 2000
        assert p["depth"] <= 6 and p["width"] <= 32 and p["batch_size"] <= p["n"]


@FUZZ
@given(job=st.one_of(HEX12, HEX24, JUNK))
def test_training_progress_of_any_job_id(tmp_home, job):
    out = cj.poll(1, job)
    assert len(out) == 5
    if isinstance(out[2], html.Span):
        assert_clear(out[2])


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


_rng = np.random.default_rng(0)
NET = {"W1": _rng.normal(size=(4, 2)), "W2": _rng.normal(size=(4, 4)),
       "head_W": _rng.normal(size=(2, 4)), "head_b": np.zeros(2)}
_npy = io.BytesIO()
np.save(_npy, np.ones((3, 2)))
NPZ_BLOBS = [
    _npz(**NET),
    _npz(W1=NET["W1"], W2=NET["W2"]),  # no head
    _npz(W1=_rng.normal(size=(40, 2)), head_W=np.ones((2, 40))),  # too wide
    _npz(**{f"W{i}": np.eye(2) for i in range(1, 9)}, head_W=np.ones((2, 2))),  # too deep
    _npz(W1=np.full((4, 2), np.nan), head_W=np.ones((2, 4))),  # NaN weights
    _npz(W1=np.zeros((4, 2)), head_W=np.ones((2, 4))),  # every unit dead
    _npz(W1=np.ones((4, 2), dtype=bool), head_W=np.ones((2, 4), dtype=np.int8)),
    _npz(W1=_rng.normal(size=(4, 3)), head_W=np.ones((2, 4))),  # wrong input size
    _npz(W1=NET["W1"], W3=np.eye(4), head_W=np.ones((2, 4))),  # a gap
    _npz(W1=np.array([{}, 1], dtype=object), head_W=np.ones((2, 2))),  # pickled objects
    _npz(W1=np.array([["a", "b"]] * 4), head_W=np.ones((2, 4))),  # text
    _npy.getvalue(), b"", b"PK\x03\x04" + b"\x00" * 40,
]
NPZ_UPLOADS = st.one_of(
    st.sampled_from(NPZ_BLOBS[:5]).map(data_url),
    st.builds(lambda b, cut: data_url(b[:cut], "application/octet-stream"),
              st.sampled_from(NPZ_BLOBS), st.one_of(st.just(10**9), st.integers(0, 3000))),
    st.builds(data_url, st.binary(max_size=200)),
    st.text(max_size=40).map(lambda t: "data:;base64," + t),
    st.sampled_from([None, "", ",", "no comma"]), JUNK)
NPZ_NAMES = st.one_of(st.sampled_from(["net.npz", "NET.NPZ", "net.csv", "", None, "a\nb.npz"]),
                      JUNK, st.text(max_size=20).map(lambda s: s + ".npz"))


@FUZZ
@given(contents=st.one_of(st.just(data_url(NPZ_BLOBS[0])), NPZ_UPLOADS),
       filename=st.one_of(st.just("net.npz"), NPZ_NAMES))
def test_network_uploads_are_loaded_or_refused(tmp_home, contents, filename):
    key, status = cj.load(contents, filename)
    event("refused" if key is no_update else "loaded")
    if key is no_update:
        assert isinstance(status, html.Span) and status.className == "text-danger"
        assert_clear(status)
        return
    assert re.fullmatch(r"upload:[0-9a-f]{24}", key)
    assert assert_clear(status).startswith("loaded ")
    assert len(contents) <= cj.MAX_NETWORK_BYTES * 4 // 3 + 100  # the upload cap (B9)
    # the page then draws with the loaded network, and can save it again
    out = cj.update_jitter("moons", 32, 2, 4, 0, 2, 2, None, key)
    assert out[5] is False or assert_clear(out[4])
    assert cj.save(1, key)[0]["filename"] == "bnviz-trained.npz"


@FUZZ
@given(trained=st.one_of(st.just("loaded"), HEX24, JUNK))
def test_save_of_any_trained_key(tmp_home, trained):
    if trained == "loaded":
        trained, _ = cj.load(data_url(NPZ_BLOBS[0]), "net.npz")
    sent, message, shown = cj.save(1, trained)
    if sent is no_update:  # a bad key, or no file: said in the page
        assert shown is True and assert_clear(message)
    else:
        assert sent["filename"] == "bnviz-trained.npz" and message is no_update


@FUZZ
@given(c=mixed({"source": st.sampled_from([None, "paper", 1, 2, "1", "2"]),
                "batch": good(st.integers(1, 4)), "train": good(st.integers(2, 3)),
                "virtual": good(st.integers(2, 16)), **JITTER_VALID},
               {"source": JUNK, "batch": bad_number(1, 9), "train": bad_number(2, 5),
                "virtual": JUNK, **JITTER_BAD}),
       trained=TRAINED)
def test_figure7_answers_every_control_value(tmp_home, c, trained):
    fig, table = cj.update_figure7(c["source"], c["batch"], c["train"], c["virtual"],
                                   c["dataset"], c["n"], c["depth"], c["width"], c["seed"],
                                   trained)
    event("refused" if fig is no_update else "drawn")
    if fig is no_update:
        assert isinstance(table, html.Div) and table.className == "text-danger"
        assert_clear(table)
    else:
        assert isinstance(fig, dict) and isinstance(table, html.Table)


@FUZZ
@given(values=st.lists(JUNK, min_size=6, max_size=6))
def test_back_to_initialisation_with_any_value(values):
    assert cj.back_to_initialisation(*values) == (None, "at initialisation", 0)


# =========================================================================== density


@pytest.fixture
def density_stub(tmp_home, monkeypatch):
    """Density runs are recorded instead of started (the real cap check still runs)."""
    return recording_starts(monkeypatch, "density")


@FUZZ
@given(c=mixed({"depth": good(st.integers(1, 16)), "width": good(st.integers(2, 1024)),
                "dataset": st.sampled_from(DATASETS), "n": good(st.integers(2, 2000)),
                "seed": good(st.integers(0, 2**31 - 1)), "grid": good(st.integers(16, 512)),
                "eps": good(st.floats(1, 8))},
               {"depth": JUNK, "width": JUNK, "dataset": JUNK, "n": JUNK, "seed": JUNK,
                "grid": JUNK, "eps": JUNK}))
def test_density_requests_are_checked_and_capped(density_stub, c):
    density_stub.clear()
    out = cd.compute(1, c["depth"], c["width"], c["dataset"], c["n"], c["seed"], c["grid"],
                     c["eps"])
    sizes = (c["grid"], c["depth"], c["width"])
    over_cap = (_whole_in(c["grid"], 16, 512) and _whole_in(c["depth"], 1, 16)
                and _whole_in(c["width"], 2, 1024)
                and density_work(*(int(_number(v)) for v in sizes)) > MAX_DENSITY_WORK)
    event("refused" if out[3] else "started")
    if over_cap:
        event("over the cap")
    if out[3]:
        assert_clear(out[2])
        assert out[0] is no_update and not density_stub
    else:
        p, = density_stub
        assert out == (STUB_ID, False, "", False)
        assert density_work(p["grid"], p["depth"], p["width"]) <= MAX_DENSITY_WORK
    if over_cap:  # refused with a message, before computing anything
        assert out[3] and not density_stub
        eps = _number(c["eps"])
        if (eps is not None and 1 <= eps <= 8 and c["dataset"] in DATASETS
                and _whole_in(c["n"], 2, 2000) and _whole_in(c["seed"], 0, 2**31 - 1)):
            assert "cap" in out[2]


def test_density_request_at_the_cost_cap(density_stub):
    # the paper's scale (11 x 1024) at grid 512 is accepted; 16 layers is over the cap
    assert cd.compute(1, 11, 1024, "star", 50, 0, 512, 1)[3] is False and density_stub
    density_stub.clear()
    out = cd.compute(1, 16, 1024, "star", 50, 0, 512, 1)
    assert out[3] is True and "cap" in assert_clear(out[2]) and not density_stub


@pytest.fixture
def density_result(inline_jobs) -> str:
    """A real (tiny) density job and its result; returns its id."""
    job = jobs.start_job("density", {"depth": 2, "width": 4, "activation": "leaky_relu",
                                     "dataset": "star", "n": 20, "seed": 0, "grid": 16,
                                     "eps": 1.0})
    assert jobs.wait_job(job.id, timeout=60, poll=0.05).status == "succeeded"
    return job.id


@FUZZ
@given(result=st.one_of(st.just("stored"), HEX12, HEX24, JUNK),
       layers=st.one_of(st.sampled_from(["1", "1,2", "2,1", " 1 , 2 ", "0", "3", "1,,2", ",",
                                         "1,2,1,2,1,2,1", "-1", "1.5", "9" * 30]), JUNK),
       radius=st.one_of(good(st.floats(0.01, 3)), JUNK))
def test_density_results_are_shown_or_refused(density_result, result, layers, radius):
    result = density_result if result == "stored" else result
    out = cd.show(result, layers, radius)
    assert len(out) == 4
    if out[3] is True:
        event("refused")
        assert_clear(out[2])
        assert out[0] is no_update and out[1] is no_update
    elif all(o is no_update for o in out):  # no result to show
        event("nothing")
        assert result != density_result
    else:
        event("drawn")
        assert out[2] == "" and isinstance(out[0], dict) and isinstance(out[1], dict)


@FUZZ
@given(job=st.one_of(st.just("stored"), HEX12, HEX24, JUNK))
def test_density_progress_of_any_job_id(density_result, job):
    job = density_result if job == "stored" else job
    out = cd.poll(1, job)
    assert len(out) == 4
    if isinstance(out[1], html.Span):
        assert_clear(out[1])
    if job == density_result:
        assert out[:3] == (100, "done", job)


@FUZZ
@given(job=JUNK)
def test_density_cancel_of_anything(tmp_home, job):
    assert cd.cancel(1, job) in ("cancelling...", "nothing to cancel")


# =========================================================================== jobs


def _end_open_jobs() -> None:
    for job in jobs.list_jobs(1000):
        if job.status in ("queued", "running"):
            jobs.cancel_job(job.id)


@pytest.fixture
def job_id(jobs_home, monkeypatch) -> str:
    """No worker process is started; one real (cancelled) job exists; returns its id."""
    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    job = jobs.submit_job("smart-init", {"dataset": "digits", "epochs": 1, "runs": 1})
    jobs.cancel_job(job.id)
    yield job.id
    _end_open_jobs()


JOB_VALID = {
    "dataset": st.sampled_from(["digits", "digits", " DIGITS ", "cifar10", "svhn",
                                "folder:imgs"]),
    "arch": st.sampled_from(ARCHS), "width": good(st.integers(1, 64)),
    "epochs": good(st.integers(1, 1000)), "runs": good(st.integers(1, 50)),
    "batch_size": good(st.integers(2, 4096)), "lr": good(st.floats(1e-6, 10)),
    "seed": good(st.integers(0, 5)),
    "max_train": st.one_of(st.just(0), good(st.integers(2, 10_000_000))),
    "image_size": good(st.integers(8, 512)), "gpus": good(st.integers(1, 64)),
    "noise": good(st.floats(0, 10)), "images": good(st.integers(1, 10_000)),
    "samples": good(st.integers(2, 4096)),
    "eps": st.one_of(st.sampled_from(["0.01,0.1", "0.3", " 1 , 2 ", "1e-6,100"]),
                     st.lists(st.floats(1e-6, 100), min_size=1, max_size=16)),
    "etas": good(st.integers(2, 16)), "measure_every": good(st.integers(1, 10_000)),
}
JOB_BAD = {name: st.one_of(JUNK, st.just(None), st.just("")) for name in JOB_VALID}
JOB_BAD["dataset"] = st.one_of(JUNK, st.sampled_from(["folder:../x", "folder:", "imagenet",
                                                      "folder:a/b", "folder:a\n", "folder:."]))
JOB_BAD["eps"] = st.one_of(JUNK, st.lists(NUMBERS, max_size=20), st.just(",,"))


def _work(job_type: str, p: dict) -> float:
    arms = len(bx.ARMS[job_type])
    if job_type == "concentration":
        return p["images"] * p["samples"] * len(p["eps"]) * p["runs"] * arms * 2
    work = p["epochs"] * p["runs"] * arms * (p["max_train"] or bx.TRAIN_SIZES[p["dataset"]])
    if job_type == "landscape":
        work *= 1 + (p["etas"] + 12) / p["measure_every"]
    return work


@FUZZ
@given(job_type=st.one_of(st.sampled_from(JOB_TYPES), JUNK),
       values=mixed(JOB_VALID, JOB_BAD))
def test_job_submissions_are_checked_and_capped(jobs_home, job_id, job_type, values):
    names = [spec.name for spec in PARAMS]
    form = [values[name] for name in names]  # as dash sends the pattern-matched inputs
    out = cjobs.submit_and_open(1, job_type, form)
    assert len(out) == 5
    message, colour, is_open, opened, _options = out
    assert is_open is True
    event(colour)
    if colour == "success":
        assert re.fullmatch(r"submitted job [0-9a-f]{12}", message) and opened in message
        job = jobs.get_job(opened)
        assert jobs.cancel_job(opened) == "cancelled"
        assert _work(job.type, job.params) <= (bx.MAX_CONCENTRATION_PASSES
                                               if job.type == "concentration" else
                                               bx.MAX_TRAINING_IMAGES)
        for spec in PARAMS:
            v = job.params.get(spec.name)
            if spec.kind in ("int", "float") and v is not None:
                assert spec.lo <= v <= spec.hi and math.isfinite(v)
    else:
        assert colour in ("danger", "warning") and opened is no_update
        assert_clear(message, jobs_home)


@FUZZ
@given(job_type=st.one_of(st.sampled_from(JOB_TYPES), JUNK),
       form=st.one_of(JUNK, st.lists(JUNK, max_size=len(PARAMS) + 3)))
def test_job_form_of_any_shape(jobs_home, job_id, job_type, form):
    message, colour, is_open, opened, _options = cjobs.submit_and_open(1, job_type, form)
    if colour == "success":
        assert jobs.cancel_job(opened) == "cancelled"
    else:
        assert colour in ("danger", "warning") and assert_clear(message, jobs_home)


@FUZZ
@given(trigger=st.sampled_from([JIDS.CANCEL, JIDS.RERUN]),
       target=st.one_of(st.sampled_from(["real", "REAL", " real "]), HEX12, JUNK))
def test_cancel_and_rerun_of_any_job_id(job_id, trigger, target):
    target = {"real": job_id, "REAL": job_id.upper(), " real ": f" {job_id} "}.get(
        target, target) if isinstance(target, str) else target
    out = in_callback(cjobs.act, trigger + ".n_clicks", 1, 1, target)
    message, colour, is_open, opened, _options = out
    assert is_open is True
    if colour == "success":
        assert trigger == JIDS.RERUN and opened in message
        assert jobs.cancel_job(opened) == "cancelled"
    elif colour in ("danger", "warning"):
        assert_clear(message)
    else:
        assert colour == "info" and trigger == JIDS.CANCEL  # the real job: cancelled already
        assert message == f"job {target}: cancelled"


@FUZZ
@given(target=st.one_of(st.just("real"), HEX12, JUNK), shown=JUNK)
def test_job_details_of_any_job_id(job_id, target, shown):
    target = job_id if target == "real" else target
    info, figure, log, key = cjobs.show_job(1, target, shown)
    if isinstance(info, dbc.Alert):
        assert info.color in ("danger", "warning") and key is None
        assert_clear(info.children)
    elif target == job_id:
        assert key[0] == job_id and isinstance(figure, dict) and isinstance(log, str)


@FUZZ
@given(targets=st.one_of(st.none(), st.lists(st.one_of(st.just("real"), HEX12, JUNK),
                                             max_size=10), JUNK), n=JUNK)
def test_overlay_of_any_job_ids(job_id, targets, n):
    if isinstance(targets, list):
        targets = [job_id if t == "real" else t for t in targets]
    assert isinstance(cjobs.overlay(targets, n), dict)


@FUZZ
@given(n=JUNK, job_type=JUNK)
def test_jobs_table_and_form_with_any_value(job_id, n, job_type):
    table, options, overlay_options, backend = cjobs.refresh(n)
    assert options == overlay_options and any(o["value"] == job_id for o in options)
    assert len(cjobs.show_type_params(job_type)) == len(PARAMS)


# =========================================================================== CLI

BAD_VALUES = ["-1", "0", "1.5", "abc", "", " ", "nan", "inf", "-inf", "1e400", "1e30",
              str(HUGE), "0x10", "--", "\u0663", "1_0"]
UNKNOWN_TOKENS = ["--bogus", "--depthx", "-z", "extra", "--", "-", "--json=1", "=", "%s"]
DEVICES = ["cpu", "cuda", "", "foo", "cpu:0", "cuda:9", "gpu", "CPU", " cpu", "meta", "xla",
           "mps", "vulkan", "hpu", "cuda:-1"]


def num(lo: int, hi: int, *bad: str):
    return st.one_of(st.integers(lo, hi).map(str), st.sampled_from([*BAD_VALUES, *bad]))


def real(lo: float, hi: float, *bad: str):
    return st.one_of(st.floats(lo, hi).map(lambda v: f"{v:.6g}"),
                     st.sampled_from([*BAD_VALUES, *bad]))


def choice(options):
    return st.one_of(st.sampled_from(list(options)), st.sampled_from(["", "x", "BN", "none"]))


CLI_FILES = {
    "good.csv": b"x,y,label\n0.1,0.2,0\n-1,1,1\n0.5,-0.5,0\n1,1,1\n",
    "nan.csv": b"x,y\nnan,1\n2,3\n",
    "text.csv": b"a,b\nhello,world\n",
    "wide.csv": b"1,2,3,4\n5,6,7,8\n",
    "empty.csv": b"",
    "crlf.csv": b"x,y\r\n1,2\r\n3,4\r\n",
    "mac.csv": b"x,y\r1,2\r3,4\r",
    "junk.npy": b"\x93NUMPY junk",
    "net.npz": _npz(**NET),
    "nohead.npz": _npz(W1=NET["W1"], W2=NET["W2"]),
    "huge.npz": _npz(W1=np.ones((300, 2)), head_W=np.ones((2, 300))),
    "nan.npz": _npz(W1=np.full((4, 2), np.nan), head_W=np.ones((2, 4))),
    "three.npz": _npz(W1=np.ones((4, 3)), head_W=np.ones((2, 4))),
    "junk.npz": b"PK\x03\x04 junk",
    "notes.txt": b"hello",
}


@pytest.fixture
def cli_dir(tmp_path) -> Path:
    for name, raw in CLI_FILES.items():
        (tmp_path / name).write_bytes(raw)
    good = np.random.default_rng(1).normal(size=(30, 2))
    np.save(tmp_path / "good.npy", good)
    np.save(tmp_path / "three.npy", np.ones((5, 3)))
    (tmp_path / "folder.csv").mkdir()
    return tmp_path


IN_FILES = st.sampled_from([*CLI_FILES, "good.npy", "three.npy", "folder.csv", "missing.csv",
                            "missing.npz", "."])
OUT_FILES = st.sampled_from(["out.json", "out.png", "out.svg", "out.npz", ".",
                             "missing/out.json", "good.csv"])
PATH_FLAGS = {"--weights", "--data", "--out", "--save"}


def options(flags: dict):
    """Lists of [flag, value] (value None: a switch) plus unknown tokens and a dangling flag."""
    pair = st.sampled_from(sorted(flags)).flatmap(
        lambda f: st.just([f]) if flags[f] is None else flags[f].map(lambda v: [f, v]))
    # a flag without its value takes the next token (never a path: nothing is written here)
    dangling = st.sampled_from(sorted(set(flags) - PATH_FLAGS)).map(lambda f: [f])
    return st.lists(st.one_of(pair, pair, pair, st.sampled_from(UNKNOWN_TOKENS).map(
        lambda t: [t]), dangling), max_size=6)


def resolve(tokens: list[list[str]], folder: Path) -> list[str]:
    """Flatten, with file names turned into paths inside the test's folder."""
    argv = []
    for group in tokens:
        if len(group) == 2 and group[0] in PATH_FLAGS:
            group = [group[0], str(folder / group[1])]
        argv += group
    return argv


SMALL_PARTITION = ["--depth", "2", "--width", "3", "--n", "30"]
PARTITION_FLAGS = {
    "--depth": num(1, 3, "17"), "--width": num(2, 5, "257"),
    "--activation": choice(ACTIVATIONS), "--alpha": real(0.01, 0.99, "1", "-0.5"),
    "--mode": choice(MODES), "--dataset": choice(DATASETS), "--n": num(2, 60, "1000001"),
    "--seed": num(0, 5), "--batch-seed": num(0, 5),
    "--batch-size": st.one_of(st.sampled_from(["all", "None", "FULL"]), num(1, 80)),
    "--extent": real(0.5, 5, "1e7"), "--head": num(0, 2, "3"),
    "--weights": st.sampled_from(["net.npz", "nohead.npz", "huge.npz", "nan.npz",
                                  "three.npz", "junk.npz", "good.csv", "missing.npz", "."]),
    "--data": IN_FILES, "--mu-scale": real(0, 1.5, "1.6"), "--sigma-scale": real(0.25, 4, "5"),
    "--scope": choice(SCOPES), "--target-layer": num(1, 4), "--target-unit": num(0, 6),
    "--recompute-statistics": None, "--format": choice(["json", "svg", "png"]),
    "--out": OUT_FILES, "--device": st.sampled_from(DEVICES),
}


@FEW
@given(tokens=options(PARTITION_FLAGS))
def test_cli_partition(capsysbinary, cli_dir, tokens):
    argv = ["partition", *SMALL_PARTITION, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


SMALL_JITTER = ["--n", "32", "--depth", "1", "--width", "3", "--batch-size", "4",
                "--realizations", "2"]
JITTER_FLAGS = {
    "--dataset": choice(DATASETS), "--n": num(8, 40, "2001"), "--depth": num(1, 2, "7"),
    "--width": num(2, 4, "33"), "--activation": choice(ACTIVATIONS), "--seed": num(0, 5),
    "--batch-size": num(2, 8, "513"), "--realizations": num(1, 3, "129"),
    "--virtual-batch-size": num(2, 8, "1"), "--train-steps": num(0, 3, "5001"),
    "--optimizer": choice(["sgd", "adam"]), "--lr": real(1e-4, 1),
    "--weights": st.sampled_from(["net.npz", "nohead.npz", "huge.npz", "nan.npz",
                                  "three.npz", "junk.npz", "missing.npz"]),
    "--save": OUT_FILES, "--extent": real(0.5, 5, "1e7"), "--json": None,
    "--format": choice(["json", "png", "svg"]), "--out": OUT_FILES,
    "--device": st.sampled_from(DEVICES),
}


@FEW
@given(tokens=options(JITTER_FLAGS))
def test_cli_jitter(capsysbinary, cli_dir, tokens):
    argv = ["jitter", *SMALL_JITTER, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


SMALL_DENSITY = ["--depth", "2", "--width", "6", "--grid", "16", "--n", "20"]
DENSITY_FLAGS = {
    "--depth": num(1, 3, "17"), "--width": num(2, 8, "4097"),
    "--activation": choice(ACTIVATIONS), "--dataset": choice(DATASETS), "--n": num(2, 30),
    "--seed": num(0, 5), "--mode": choice(MODES),
    "--layers": st.one_of(st.sampled_from(["1", "1,2", "2,1", "0", "99", "a", "", ",", "1,,2",
                                           "-1", " 1 , 2", "1.5", "9" * 5000]),
                          st.text("0123456789,- x", max_size=10)),
    "--grid": num(16, 24, "1", "3000"), "--eps": real(1, 2, "0.5", "20"),
    "--radius": real(0.01, 1), "--extent": real(0.5, 5, "1e7"), "--json": None,
    "--format": choice(["json", "png", "svg"]), "--out": OUT_FILES,
    "--device": st.sampled_from(DEVICES),
}


@FEW
@given(tokens=options(DENSITY_FLAGS))
def test_cli_density(capsysbinary, cli_dir, tokens):
    argv = ["density", *SMALL_DENSITY, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


def test_cli_density_over_the_cost_cap_is_refused(capsysbinary):
    for sizes in (["--depth", "16", "--width", "4096", "--grid", "2048"],
                  ["--depth", "11", "--width", "1024", "--grid", "2048"]):
        rc, out, err = run_cli(capsysbinary, ["density", *sizes])
        assert_cli_outcome(rc, out, err)
        assert rc == 2 and "cap" in err
    # beyond the grid's own range, the range is what the message names
    rc, out, err = run_cli(capsysbinary, ["density", "--depth", "11", "--grid", "100000"])
    assert_cli_outcome(rc, out, err)
    assert rc == 2 and "--grid: enter a whole number from 2 to 2048" in err
    rc, out, err = run_cli(capsysbinary, ["density", "--grid", str(HUGE)])
    assert_cli_outcome(rc, out, err)
    assert rc == 2


SMALL_BNSTATS = ["--batch-size", "4", "--train-size", "100", "--samples", "50"]
BNSTATS_FLAGS = {
    "--batch-size": num(2, 8, "100001"), "--train-size": num(10, 200, "100001"),
    "--samples": num(10, 200, "9", "200001"), "--virtual-batch-size": num(2, 8),
    "--seed": num(0, 5), "--json": None, "--out": OUT_FILES,
}


@FEW
@given(tokens=options(BNSTATS_FLAGS))
def test_cli_bnstats(capsysbinary, cli_dir, tokens):
    argv = ["bnstats", *SMALL_BNSTATS, *resolve(tokens, cli_dir)]
    assert_cli_outcome(*run_cli(capsysbinary, argv))


JOB_FLAG_VALUES = {
    spec.flag: st.one_of(JOB_VALID[spec.name].map(
        lambda v: ",".join(map(str, v)) if isinstance(v, list) else str(v)),
        st.sampled_from(BAD_VALUES))
    for spec in PARAMS}
JOB_IDS = st.one_of(st.sampled_from(["real", "REAL", "000000000000", "abc", "", "../x", " "]),
                    HEX12, st.text("0123456789abcdefXYZ", max_size=14))


@st.composite
def jobs_argv(draw) -> list[str]:
    cmd = draw(st.sampled_from(["submit", "submit", "list", "show", "wait", "cancel", "rerun",
                                "bogus", None]))
    argv = ["jobs"] + ([cmd] if cmd else [])
    if cmd == "submit":
        argv.append(draw(st.sampled_from([*JOB_TYPES, "nope", ""])))
        argv += draw(options({**JOB_FLAG_VALUES, "--json": None}).map(
            lambda groups: [t for g in groups for t in g]))
    elif cmd == "list":
        argv += draw(options({"--json": None, "--limit": num(-5, 5)}).map(
            lambda groups: [t for g in groups for t in g]))
    elif cmd in ("show", "wait", "cancel", "rerun"):
        if draw(st.integers(0, 9)):  # sometimes the id is missing
            argv.append(draw(JOB_IDS))
        flags = {"--json": None}
        if cmd == "wait":
            flags["--timeout"] = st.sampled_from(["0", "0.05", "-1", "nan", "inf", "abc", ""])
        argv += draw(options(flags).map(lambda groups: [t for g in groups for t in g]))
    return argv


@FUZZ
@given(argv=jobs_argv())
def test_cli_jobs(capsysbinary, job_id, argv):
    argv = [{"real": job_id, "REAL": job_id.upper()}.get(t, t) for t in argv]
    rc, out, err = run_cli(capsysbinary, argv)
    _end_open_jobs()  # what was submitted or re-run never runs
    is_wait = len(argv) > 1 and argv[1] == "wait"
    assert_cli_outcome(rc, out, err, allowed=(0, 1, 2) if is_wait else (0, 2))
    if rc == 1:  # the job ended without succeeding (the real one was cancelled)
        assert job_id.encode() in out


@FUZZ
@given(argv=st.lists(st.sampled_from(["", "nope", "--bogus", "-x", "jobs", "PARTITION",
                                      "--depth", "1", "data", "-"]), max_size=3))
def test_cli_top_level(capsysbinary, argv):
    assert_cli_outcome(*run_cli(capsysbinary, argv))


# =========================================================================== found, fixed
# Bugs this fuzzing found, fixed while it was written: each test is a bug's reproducers,
# kept as a regression test (the fuzz tests above feed these inputs too).


@pytest.mark.parametrize("layout", [jitter_layout.layout, density_layout.layout],
                         ids=["jitter", "density"])
def test_b1_jitter_and_density_pages_with_a_query_string(layout):
    """B1: these layouts took no arguments, but Dash Pages calls layout(**query): any query
    string (?utm_source=x) raised TypeError and the page did not render."""
    assert isinstance(layout(**_parse_query_string("?utm_source=newsletter&x=1&x=2")),
                      Component)


MAC_CSV = b"x,y\r1,2\r3,4\r"


@pytest.mark.parametrize("raw", [MAC_CSV, b"1," + b"9" * 140_000 + b"\n"],
                         ids=["cr-line-endings", "field-over-128kB"])
def test_b2_upload_with_a_csv_error(raw):
    """B2: csv.Error (not a ValueError) escaped the upload callback: a CSV with classic Mac
    line endings, or a field over csv's 128 kB limit."""
    new, status = upload(data_url(raw), "points.csv", [])
    if new is no_update:
        assert_clear(status)
    else:
        assert new == [[1.0, 2.0], [3.0, 4.0]]


def test_b2_cli_data_with_cr_line_endings(capsysbinary, tmp_path):
    """B2: `partition --data mac.csv` printed a traceback."""
    path = tmp_path / "mac.csv"
    path.write_bytes(MAC_CSV)
    rc, out, err = run_cli(capsysbinary, ["partition", *SMALL_PARTITION, "--data", str(path),
                                          "--device", "cpu"])
    assert_cli_outcome(rc, out, err)
    assert rc == 0


@pytest.mark.parametrize("argv", [
    ["partition", "--depth", "1", "--width", "2", "--device", "meta"],
    ["partition", "--depth", "1", "--width", "2", "--device", "xla"],
    ["jitter", *SMALL_JITTER, "--device", "meta"],
    ["density", *SMALL_DENSITY, "--device", "meta"],
], ids=["partition-meta", "partition-xla", "jitter-meta", "density-meta"])
def test_b3_cli_device_without_a_backend(capsysbinary, argv):
    """B3: a device type torch knows but bnviz cannot use (meta, xla, mps, ...) failed deep
    in torch with a traceback and exit code 1."""
    rc, out, err = run_cli(capsysbinary, argv)
    assert_cli_outcome(rc, out, err)
    assert rc == 2


@pytest.mark.parametrize("x", [math.nan, math.inf, TOO_BIG], ids=["nan", "inf", "10**400"])
def test_b5_b7_click_with_a_non_finite_coordinate(x):
    """B5: a click at 10**400 raised OverflowError. B7: a click at NaN or inf was stored as
    an added point, and every redraw was then refused until 'clear'."""
    assert click(x, 0.0, [[1.0, 1.0]]) == (no_update, no_update)


@pytest.mark.parametrize("call", [
    lambda: cj.load([","], "net.npz"),
    lambda: cj.load(data_url(_npz(**NET)), 5),
    lambda: cj.save(1, "abc"),
], ids=["load-contents-list", "load-filename-int", "save-bad-key"])
def test_b6_jitter_upload_and_save_with_wrong_types(tmp_home, call):
    """B6 (in part): the jitter page's load and save raised on a value of the wrong type."""
    out = call()
    if isinstance(out, tuple):
        assert out[0] is no_update and assert_clear(out[1])
    else:
        assert out is no_update


def test_b6b_save_a_removed_network(tmp_home):
    """B6b: 'save' of a trained network whose file is gone (cache cleared, or a second
    server without the same disk) raised FileNotFoundError."""
    key, _ = cj.load(data_url(_npz(**NET)), "net.npz")
    cj.trained_path(key).unlink()
    sent, message, shown = cj.save(1, key)
    assert sent is no_update and shown is True and "no longer on this server" in message


def test_b8_cli_jitter_huge_seed(capsysbinary):
    """B8: `jitter --seed 10**30` was refused with torch's 'Overflow when unpacking long
    long', which did not say which option was wrong."""
    rc, out, err = run_cli(capsysbinary, ["jitter", *SMALL_JITTER, "--seed", str(HUGE)])
    assert_cli_outcome(rc, out, err)
    assert rc == 2 and "seed" in err


def _npz_compressed(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


@pytest.mark.parametrize("raw", [
    _npz(**NET, extra=np.ones(300_000)),  # a 2.4 MB upload
    _npz_compressed(**NET, extra=np.zeros(4_000_000)),  # ~40 kB that loads as 32 MB
], ids=["2MB-upload", "40kB-zip-of-32MB"])
def test_b9_network_upload_size_cap(tmp_home, raw):
    """B9: the jitter page's network upload had no size cap: any upload was decoded,
    written and loaded in full, extra arrays included (a zip bomb expanded in memory)."""
    key, status = cj.load(data_url(raw), "net.npz")
    assert key is no_update
    assert_clear(status)


B10_SETTINGS = [
    # reachable with the page's own controls: abs, width 8, depth 2, "resample" five times,
    # 50 points, the mu slider at 0.02 (?depth=2&width=8&activation=abs&weight_seed=5&...)
    ExplorerSettings(depth=2, width=8, activation="abs", weight_seed=5, n_points=50,
                     mu_t=0.02, layer=2),
    ExplorerSettings(depth=1, width=4, activation="relu", mode="random_bias", weight_seed=1,
                     mu_t=1e-9, layer=1),
]


@pytest.mark.parametrize("settings", B10_SETTINGS, ids=["ui-reachable", "tiny-mu"])
def test_b10_partition_breakdown_in_the_explorer(monkeypatch, settings):
    """B10: the exact partition broke down numerically (RuntimeError 'a face with fewer
    than 3 corners') and the explorer callback let it escape (a server error)."""
    monkeypatch.setenv("BNVIZ_DEVICE", "cpu")
    out = ce.update_views(ce.control_values(settings), [], "space", False, False)
    assert out[5] is False or assert_clear(out[4])


def test_b10_partition_breakdown_in_the_cli(capsysbinary):
    """B10: the same breakdown printed a traceback with exit code 1 in the CLI."""
    assert_cli_outcome(*run_cli(capsysbinary, [
        "partition", "--depth", "1", "--width", "4", "--activation", "relu", "--mode",
        "random_bias", "--seed", "1", "--mu-scale", "1e-9", "--device", "cpu"]))


@pytest.fixture
def no_background_runs(training_stub, density_stub):
    """Should a callback accept one of these requests, nothing is started."""


@pytest.mark.parametrize("call", [
    lambda: ce.sync_ranges(TOO_BIG, 4, 1, 1, 1),
    lambda: ce.sync_ranges(4, 4, TOO_BIG, 1, 1),
    lambda: ce.resample_weights(1, TOO_BIG),
    lambda: ce.draw_another_batch(1, TOO_BIG),
    lambda: in_callback(ce.animate_mu, EIDS.ANIMATE_TIMER + ".n_intervals", 1, 1, TOO_BIG,
                        False),
    lambda: cj.start(1, "moons", 16, 1, 2, 0, 2, 5, "adam", TOO_BIG),
    lambda: cd.compute(1, 2, 2, "moons", 16, 0, 16, TOO_BIG),
    lambda: cd.show("0" * 24, "1", TOO_BIG),
    lambda: ce.update_views(VALID_CONTROLS, [[0.0, TOO_BIG]], "space", False, False),
], ids=["sync-ranges-depth", "sync-ranges-layer", "resample", "new-batch", "animate",
        "jitter-lr", "density-eps", "density-radius", "explorer-points"])
def test_b5_integer_beyond_float_range(no_background_runs, call):
    """B5: float() of an integer beyond float range raised OverflowError, which these
    callbacks did not catch (JSON integers are parsed exactly: a request can send 10**400)."""
    call()


@pytest.mark.parametrize("call", [
    lambda: ce.update_views(VALID_CONTROLS, 5, "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [[[0], [1]]], "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [[0.5], [0.5]], "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [["0.5", "0.5"]], "space", False, False),
    lambda: ce.update_views(VALID_CONTROLS, [], "space", False, False, ["fig1"]),
    lambda: click(0.5, 0.5, 5),
    lambda: upload([","], "points.csv", []),
    lambda: upload(data_url(b"1,2\n"), 5, []),
    lambda: in_callback(ce.animate_mu, EIDS.ANIMATE_TIMER + ".n_intervals", 1, 1, "abc",
                        False),
    lambda: cj.poll(1, "abc"),
    lambda: cj.save(1, 5),
    lambda: cj.update_jitter("moons", 32, 1, 3, 0, 2, 1, None, 5),
    lambda: cj.update_jitter("moons", 32, 1, 3, 0, 2, 1, None, []),
    lambda: cj.update_figure7(1, 2, 2, 2, "moons", 32, 1, 3, 0, 5),
    lambda: cj.update_figure7(1, 2, 2, 2, "moons", 32, 1, 3, 0, {}),
    lambda: cd.poll(1, "abc"),
    lambda: cd.show(5, "1", 0.1),
    lambda: cjobs.overlay(5, 1),
    lambda: cjobs.submit(1, "smart-init", None),
], ids=["explorer-points-int", "explorer-points-nested", "explorer-points-ragged",
        "explorer-points-text", "explorer-preset-list", "click-points-int",
        "upload-contents-list", "upload-filename-int", "animate-mu-text", "jitter-poll-key",
        "jitter-save-int", "jitter-trained-int", "jitter-trained-list", "figure7-trained-int",
        "figure7-trained-dict", "density-poll-key",
        "density-result-int", "jobs-overlay-int", "jobs-form-none"])
def test_b6_wrong_type_in_client_state(tmp_home, no_background_runs, call):
    """B6: a value of the wrong type, or a malformed key, in client-side state (a
    dcc.Store, an Upload, a multi Dropdown, a Slider) raised instead of being refused."""
    call()


LONG = "x" * 2000


@pytest.mark.parametrize("shown", [
    lambda: alert_of(ce.page_layout(activation=LONG), EIDS.MESSAGE).children,
    lambda: ce.update_views({**VALID_CONTROLS, "batch_size": LONG}, [], "space", 0, 0)[4],
    lambda: upload(data_url(("h" * 2000 + "\n1,2\n").encode()), "p.csv", [])[1],
    lambda: cjobs.show_job(1, LONG, None)[0].children,
    lambda: cjobs.submit(1, "smart-init", ["digits", "resnet9", LONG]
                         + [None] * (len(PARAMS) - 3))[0],
], ids=["explorer-url", "explorer-control", "csv-header", "job-id", "job-parameter"])
def test_b4_long_value_gives_a_short_message(jobs_home, shown):
    """B4: messages echoed the user's whole value (its repr, untruncated), so a long value
    made a message of any length (a 2000-character value gave a >2000-character alert)."""
    assert_clear(shown())
