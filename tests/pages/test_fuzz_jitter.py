"""Property-based fuzzing of the jitter page's inputs (issue 7): the Figure 6 and Figure 7
controls, training requests, and network uploads and downloads.

The properties every page fuzz test checks, and how a bug it finds is kept, are in
tests/pagefuzz.py."""

from __future__ import annotations

import io
import math
import re

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
    JUNK,
    TOO_BIG,
    assert_clear,
    bad_number,
    data_url,
    good,
    mixed,
)
from hypothesis import event, given
from hypothesis import strategies as st
from pagefuzz import (
    NET,
    STUB_ID,
    npz_bytes,
)

from bnviz.data.datasets import DATASETS
from bnviz.web.callbacks.background import job_id_of
from bnviz.web.callbacks.jitter import callbacks as cj
from bnviz.web.layouts import density as density_layout
from bnviz.web.layouts import jitter as jitter_layout

JITTER_VALID = {
    "dataset": st.sampled_from(DATASETS), "n_points": good(st.integers(8, 48)),
    "depth": good(st.integers(1, 2)), "width": good(st.integers(2, 4)),
    "weight_seed": good(st.integers(0, 3)), "data_seed": good(st.integers(0, 3)),
    "batch_seed": good(st.integers(0, 3)), "batch": good(st.integers(1, 3)),
    "k": good(st.integers(1, 3)),
    "virtual": st.one_of(st.none(), st.just(""), good(st.integers(2, 8))),
}


JITTER_BAD = {
    "dataset": JUNK, "n_points": bad_number(8, 2000), "depth": bad_number(1, 6),
    "width": bad_number(2, 32), "weight_seed": JUNK, "data_seed": JUNK, "batch_seed": JUNK,
    "batch": bad_number(1, 9),
    "k": bad_number(1, 128), "virtual": JUNK,
}


#: A trained network's reference as the page stores it, and as a crafted request may.
TRAINED = st.one_of(st.none(), st.just(""), st.just("0" * 24), HEX24, JUNK,
                    HEX24.map("upload:".__add__), HEX12.map("job:".__add__))


@FEW
@given(c=mixed(JITTER_VALID, JITTER_BAD), trained=TRAINED)
def test_update_jitter_answers_every_control_value(tmp_home, c, trained):
    out = cj.update_jitter(c["dataset"], c["n_points"], c["depth"], c["width"],
                           c["weight_seed"], c["data_seed"], c["batch_seed"], c["batch"],
                           c["k"], c["virtual"], trained)
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
    out = cj.start(1, c["dataset"], c["n_points"], c["depth"], c["width"], c["weight_seed"],
                   c["data_seed"], c["batch"], c["steps"], c["optimizer"], c["lr"])
    assert len(out) == 4
    event("refused" if out[3] is True else "started")
    if out[3] is True:
        assert_clear(out[2])
        assert out[0] is no_update and not training_stub
    else:  # started: every parameter is within the training caps
        p, = training_stub
        assert job_id_of(out[0]) == STUB_ID and out[1] is False
        assert 1 <= p["train_steps"] <= 5000 and 0 < p["lr"] <= 10 and math.isfinite(p["lr"])
        assert p["optimizer"] in ("adam", "sgd") and p["n_points"] <= 2000
        assert p["depth"] <= 6 and p["width"] <= 32 and p["batch_size"] <= p["n_points"]


@FUZZ
@given(job=st.one_of(HEX12, HEX24, JUNK))
def test_training_progress_of_any_job_id(tmp_home, job):
    out = cj.poll(1, job)
    assert len(out) == 5
    if isinstance(out[2], html.Span):
        assert_clear(out[2])


_rng = np.random.default_rng(0)


_npy = io.BytesIO()
np.save(_npy, np.ones((3, 2)))


NPZ_BLOBS = [
    npz_bytes(**NET),
    npz_bytes(W1=NET["W1"], W2=NET["W2"]),  # no head
    npz_bytes(W1=_rng.normal(size=(40, 2)), head_W=np.ones((2, 40))),  # too wide
    npz_bytes(**{f"W{i}": np.eye(2) for i in range(1, 9)}, head_W=np.ones((2, 2))),  # too deep
    npz_bytes(W1=np.full((4, 2), np.nan), head_W=np.ones((2, 4))),  # NaN weights
    npz_bytes(W1=np.zeros((4, 2)), head_W=np.ones((2, 4))),  # every unit dead
    npz_bytes(W1=np.ones((4, 2), dtype=bool), head_W=np.ones((2, 4), dtype=np.int8)),
    npz_bytes(W1=_rng.normal(size=(4, 3)), head_W=np.ones((2, 4))),  # wrong input size
    npz_bytes(W1=NET["W1"], W3=np.eye(4), head_W=np.ones((2, 4))),  # a gap
    npz_bytes(W1=np.array([{}, 1], dtype=object), head_W=np.ones((2, 2))),  # pickled objects
    npz_bytes(W1=np.array([["a", "b"]] * 4), head_W=np.ones((2, 4))),  # text
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
    assert len(contents) <= cj.JITTER_MAX_NETWORK_BYTES * 4 // 3 + 100  # the upload cap (B9)
    # the page then draws with the loaded network, and can save it again
    out = cj.update_jitter("moons", 32, 2, 4, 0, 0, 0, 2, 2, None, key)
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
                                   c["dataset"], c["n_points"], c["depth"], c["width"],
                                   c["weight_seed"], c["data_seed"], trained)
    event("refused" if fig is no_update else "drawn")
    if fig is no_update:
        assert isinstance(table, html.Div) and table.className == "text-danger"
        assert_clear(table)
    else:
        assert isinstance(fig, dict) and isinstance(table, html.Table)


@FUZZ
@given(values=st.lists(JUNK, min_size=7, max_size=7))
def test_back_to_initialisation_with_any_value(values):
    assert cj.back_to_initialisation(*values) == (None, "at initialisation", 0)


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


@pytest.mark.parametrize("call", [
    lambda: cj.load([","], "net.npz"),
    lambda: cj.load(data_url(npz_bytes(**NET)), 5),
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
    key, _ = cj.load(data_url(npz_bytes(**NET)), "net.npz")
    cj.trained_path(key).unlink()
    sent, message, shown = cj.save(1, key)
    assert sent is no_update and shown is True and "no longer on this server" in message


def _npz_compressed(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


@pytest.mark.parametrize("raw", [
    npz_bytes(**NET, extra=np.ones(300_000)),  # a 2.4 MB upload
    _npz_compressed(**NET, extra=np.zeros(4_000_000)),  # ~40 kB that loads as 32 MB
], ids=["2MB-upload", "40kB-zip-of-32MB"])
def test_b9_network_upload_size_cap(tmp_home, raw):
    """B9: the jitter page's network upload had no size cap: any upload was decoded,
    written and loaded in full, extra arrays included (a zip bomb expanded in memory)."""
    key, status = cj.load(data_url(raw), "net.npz")
    assert key is no_update
    assert_clear(status)


@pytest.mark.parametrize("call", [
    lambda: cj.start(1, "moons", 16, 1, 2, 0, 0, 2, 5, "adam", TOO_BIG),
], ids=["jitter-lr"])
def test_b5_integer_beyond_float_range(training_stub, call):
    """B5: float() of an integer beyond float range raised OverflowError, which these
    callbacks did not catch (JSON integers are parsed exactly: a request can send 10**400)."""
    call()


@pytest.mark.parametrize("call", [
    lambda: cj.poll(1, "abc"),
    lambda: cj.save(1, 5),
    lambda: cj.update_jitter("moons", 32, 1, 3, 0, 0, 0, 2, 1, None, 5),
    lambda: cj.update_jitter("moons", 32, 1, 3, 0, 0, 0, 2, 1, None, []),
    lambda: cj.update_figure7(1, 2, 2, 2, "moons", 32, 1, 3, 0, 0, 5),
    lambda: cj.update_figure7(1, 2, 2, 2, "moons", 32, 1, 3, 0, 0, {}),
], ids=["jitter-poll-key", "jitter-save-int", "jitter-trained-int", "jitter-trained-list",
        "figure7-trained-int", "figure7-trained-dict"])
def test_b6_wrong_type_in_client_state(training_stub, call):
    """B6: a value of the wrong type, or a malformed key, in client-side state (a
    dcc.Store, an Upload, a multi Dropdown, a Slider) raised instead of being refused."""
    call()
