"""Property tests (hypothesis) of the debate page's callbacks and the `claims` CLI: random
values of every kind, no exception escapes, every rejection one clear line, and nothing
expensive starts from a bad value."""

from __future__ import annotations

from dash import no_update
from fuzzing import FUZZ, HEX24, HUGE, JUNK, TOO_BIG, assert_clear, good, mixed, run_cli
from hypothesis import given
from hypothesis import strategies as st

from bnviz import jobs
from bnviz.jobs.registry import get_job_type
from bnviz.records.store import Job
from bnviz.web import app  # noqa: F401  (registers the callbacks)
from bnviz.web.callbacks.papers import callbacks as cp
from bnviz.web.callbacks.papers.content import DJ_EXAMPLE

NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                   st.sampled_from([HUGE, -HUGE, TOO_BIG]))
CELL = st.one_of(NUMBER, JUNK, NUMBER.map(str))
ROW = st.one_of(st.fixed_dictionaries({"x1": CELL, "x2": CELL, "y": CELL}), JUNK,
                st.dictionaries(st.text(max_size=3), CELL, max_size=3))
ROWS = st.one_of(st.lists(ROW, max_size=60), JUNK, st.just(DJ_EXAMPLE),
                 st.lists(st.fixed_dictionaries({
                     "x1": st.floats(-5, 5), "x2": st.floats(-5, 5), "y": st.floats(-20, 20)}),
                     min_size=3, max_size=8))


@FUZZ
@given(rows=ROWS, w01=st.one_of(NUMBER, JUNK), w02=st.one_of(NUMBER, JUNK),
       sigma=st.one_of(st.sampled_from(["biased", "unbiased"]), JUNK),
       affine=st.one_of(st.booleans(), JUNK))
def test_weight_plane_never_raises(rows, w01, w02, sigma, affine):
    fig, numbers, message, shown = cp.update_weight_plane(rows, w01, w02, sigma, affine)
    if fig is no_update:
        assert shown is True and numbers is no_update
        assert_clear(message)
    else:
        assert shown is False and message == ""
        assert {"W* (minimum of C)", "W0"} <= {t.get("name") for t in fig["data"]}


@FUZZ
@given(click=st.one_of(JUNK, st.fixed_dictionaries({"points": st.lists(
    st.fixed_dictionaries({"x": st.one_of(NUMBER, JUNK), "y": st.one_of(NUMBER, JUNK)}),
    max_size=2)})))
def test_click_never_raises(click):
    w = cp.move_w0(click)
    assert w == (no_update, no_update) or all(isinstance(v, float) and abs(v) <= 100
                                               for v in w)


LANDSCAPE_VALID = {"depth": good(st.integers(1, 3)), "width": good(st.integers(2, 8)),
                   "steps": good(st.integers(1, 5)), "lr": good(st.floats(0.001, 1.0)),
                   "noisy": st.booleans()}
LANDSCAPE_BAD = {"depth": st.one_of(JUNK, st.sampled_from([0, 9, HUGE, TOO_BIG, 2.5])),
                 "width": st.one_of(JUNK, st.sampled_from([1, 65, HUGE, TOO_BIG])),
                 "steps": st.one_of(JUNK, st.sampled_from([0, 2001, -1, TOO_BIG])),
                 "lr": st.one_of(JUNK, st.sampled_from([0, -1, 3, HUGE, TOO_BIG, "nan"])),
                 "noisy": JUNK}


@FUZZ
@given(c=mixed(LANDSCAPE_VALID, LANDSCAPE_BAD))
def test_landscape_start_refuses_or_starts(tmp_home, monkeypatch, c):
    started = []
    monkeypatch.setattr(jobs, "start_job", lambda job_type, params: started.append(
        (job_type, get_job_type(job_type).check(params))) or Job("0" * 12, job_type, params))
    key, poll_off, message, shown = cp.start_landscape_run(
        1, c["depth"], c["width"], c["steps"], c["lr"], c["noisy"])
    if key is no_update:
        assert shown is True and not started
        assert_clear(message)
    else:
        (job_type, params), = started
        assert job_type == "landscape-2d" and params["steps"] <= 5 and shown is False


@FUZZ
@given(job=st.one_of(JUNK, HEX24))
def test_landscape_poll_and_show_never_raise(tmp_home, job):
    value, status, result, poll_off = cp.poll_landscape(1, job)
    assert poll_off is True  # nothing of these runs is going on
    out = cp.show_landscape(job)
    assert out == (no_update,) * 5 or (out[4] is True and assert_clear(out[3]))


@FUZZ
@given(argv=st.lists(st.sampled_from(["--id", "--json", "--device", "nope", "cpu", "meta",
                                      "santurkar-thm41", "--out", "-x", ""]), max_size=4))
def test_claims_cli_never_raises(capsysbinary, monkeypatch, tmp_path, argv):
    from bnviz.papers import claims

    monkeypatch.chdir(tmp_path)  # --out writes a file: never into the repository

    cheap = ("santurkar-thm41", "dannemann-gradient")  # the others stand in with a cheap one
    monkeypatch.setattr(claims, "_CLAIMS", {
        cid: f if cid in cheap else claims._CLAIMS["santurkar-thm41"]
        for cid, f in claims._CLAIMS.items()})
    rc, out, err = run_cli(capsysbinary, ["claims", *argv])
    if rc == 0:
        assert (out or any(tmp_path.iterdir())) and not err
    else:
        assert rc == 2 and err.startswith("bnviz: error:") and err.count("\n") == 1


@FUZZ
@given(dist=st.one_of(st.sampled_from(["gaussian", "exponential", "uniform"]), JUNK),
       batch=st.one_of(st.sampled_from(["4", "16", "256", 64]), JUNK),
       eta=st.one_of(st.floats(0.1, 6), NUMBER, JUNK), zeta=st.one_of(st.floats(0, 1), NUMBER,
                                                                        JUNK),
       printed=st.one_of(st.booleans(), JUNK))
def test_luo_never_raises(dist, batch, eta, zeta, printed):
    out = cp.update_luo(dist, batch, eta, zeta, printed)
    if out[0] is no_update:
        assert out[5] is True
        assert_clear(out[4])
    else:
        assert out[4:] == ("", False)


@FUZZ
@given(dataset=st.one_of(st.sampled_from(["blobs", "moons"]), JUNK),
       n=st.one_of(st.sampled_from([8, "12", 3, 61]), NUMBER, JUNK),
       beta=st.one_of(st.sampled_from([0.5, "1", 0, 11]), NUMBER, JUNK))
def test_ergen_never_raises(tmp_home, monkeypatch, dataset, n, beta):
    trained = []
    monkeypatch.setattr(cp, "_ergen", lambda *a: trained.append(a) or cp._ergen_real(
        "blobs", 12, 0.5))  # one training (cached in tmp_home): this test is about the checks
    out = cp.update_ergen(dataset, n, beta)
    if out[0] is no_update:
        assert out[4] is True and not trained
        assert_clear(out[3])
    else:
        assert out[3:] == ("", False) and 4 <= trained[0][1] <= 60


cp._ergen_real = cp._ergen  # the cached function, called by the stub above


@FUZZ
@given(batch=st.one_of(st.sampled_from(["4", "16", 256, 3, 257, "x"]), NUMBER, JUNK))
def test_normalisation_comparison_never_raises(monkeypatch, batch):
    trained = []
    monkeypatch.setattr(cp, "_normalisations", lambda m: trained.append(m) or _SMALL_RUN)
    fig, table, message, shown = cp.show_normalisations(1, batch)
    if fig is no_update:
        assert shown is True and not trained
        assert_clear(message)
    else:
        assert 4 <= trained[0] <= 256 and (message, shown) == ("", False)


def _small_run():
    from bnviz.papers.luo import compare_normalisations

    return compare_normalisations(batch_size=8, n=32, steps=10, depth=1, width=4,
                                  device="cpu")


_SMALL_RUN = _small_run()
