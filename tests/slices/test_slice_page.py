"""The /slice page: its job (the networks a job kept, cut through three test images), its
callbacks called directly (bad input, figures, hover, click), and a browser test at 1280x720
that trains smart-init on digits from the jobs page, opens /slice, picks three digits and
sees BN's partition in eval and train mode beside the network without BN."""

from __future__ import annotations

import pytest
from dash.testing.wait import until
from kept_jobs import kept_job
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from bnviz.records.store import open_store
from bnviz.records.types import ParamError, RecordingContext
from bnviz.slices.inspect import region_info
from bnviz.slices.job import SLICE_JOB, load_slices
from bnviz.web.callbacks.slice import callbacks as cs
from bnviz.web.callbacks.slice import ids


def _params(job_id: str, **kw) -> dict:
    return cs.parse_params(job_id, kw.get("arm", "bn_init"), kw.get("other", "zero_bias"),
                           kw.get("images", "0,1,2"), kw.get("bn", "eval"),
                           kw.get("batches", 1), kw.get("extent", 0.1))


def test_the_job_cuts_both_networks_and_the_page_draws_them(jobs_home):
    job_id = kept_job()
    assert cs.sources(None, None, None)[1] == job_id
    options, first, others, beside = cs.arms(job_id, None, None)
    assert (first, beside) == ("bn_init", "zero_bias")
    params = SLICE_JOB.check(_params(job_id, bn="train", batches=2))
    ctx = RecordingContext()
    summary = SLICE_JOB.run(params, ctx, None)
    assert summary["frozen"] == ["bn_init"] and "frozen BN" in cs.done_text(summary)
    stored = ctx.result
    assert list(stored["arms"]) == ["bn_init", "zero_bias"]
    assert "a0_boundary1" in stored and stored["a0_density"].shape == (10,)
    fig = cs.slice_figure(stored, 2)
    assert "bn_init</b>: layer 3" in fig["layout"]["annotations"][0]["text"]
    assert len(cs.density_figure(stored)["data"]) == 2
    # a click: the region's code, as the stored codes say
    info = region_info(stored, 1, 0, 0.01, -0.02)
    assert info["region"] >= 0 and len(info["codes"]) == 1 and info["area"] > 0


@pytest.mark.parametrize(("kw", "words"), [
    ({"images": "0,1"}, "images: three different"), ({"images": "0,0,1"}, "three different"),
    ({"bn": "eval", "batches": 3}, "train mode"), ({"arm": "x/y"}, "network"),
    ({"extent": -1}, "window")])
def test_bad_controls_are_one_line(jobs_home, kw, words):
    with pytest.raises(ValueError, match=words):
        _params("abc", **kw)


def test_too_many_regions_is_refused_before_it_is_queued(jobs_home):
    job_id = kept_job()
    with pytest.raises(ParamError, match="would have about"):
        SLICE_JOB.check(_params(job_id, extent=0))  # the default window: too many


def test_an_upload_is_checked_kept_and_sliced(jobs_home, tmp_path):
    from onnx_nets import conv_net

    good = conv_net(tmp_path / "net.onnx", size=8).read_bytes()
    contents = "data:application/octet-stream;base64," + __import__("base64").b64encode(
        good).decode()
    uploads, message, is_open = cs.upload(contents, "net.onnx", "resnet9", None)
    assert not is_open and uploads[0]["value"].startswith("up-")
    reference = uploads[0]["value"]
    options, value = cs.sources(None, uploads, None)
    assert value == reference or reference in [o["value"] for o in options]
    assert cs.arms(reference, None, None)[1] == "upload"
    params = SLICE_JOB.check(cs.parse_params(reference, "upload", "", "0,1,2", "eval", 1,
                                             0.2, "digits"))
    ctx = RecordingContext()
    SLICE_JOB.run(params, ctx, None)
    assert list(ctx.result["arms"]) == ["upload"]
    # refusals: one line, nothing kept
    bad = "data:;base64," + __import__("base64").b64encode(b"not a network").decode()
    for name, words in (("x.onnx", "not an ONNX model"), ("x.txt", "upload an .onnx"),
                        ("x.safetensors", "not a safetensors file")):
        _, message, is_open = cs.upload(bad, name, "resnet9", uploads)
        assert is_open and words in message and "\n" not in message
    kept = list((jobs_home / "uploads").glob("slice-*"))
    assert len(kept) == 1 and kept[0].suffix == ".onnx"


def test_a_gone_or_old_result_draws_a_placeholder(jobs_home):
    fig, density, _, _ = cs.show("0123456789ab", 1)
    assert "cut" in fig["layout"]["annotations"][0]["text"]
    with pytest.raises(OSError):
        load_slices("0123456789ab")


# --------------------------------------------------------------------------- in a browser


def _text(dash_duo, id_: str) -> str:
    return dash_duo.driver.execute_script(
        f"const e = document.getElementById('{id_}'); return e ? e.textContent : '';")


def _type(dash_duo, id_: str, value: str) -> None:
    box = dash_duo.find_element(f"#{id_}")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(Keys.BACKSPACE)
    box.send_keys(value, Keys.TAB)


@pytest.mark.browser
def test_train_on_the_jobs_page_then_slice_bn_beside_no_bn(dash_duo, jobs_home, monkeypatch):
    from bnviz.web.app import app
    from bnviz.web.callbacks.jobs import ids as job_ids

    monkeypatch.setenv("BNVIZ_LOCAL_WORKERS", "1")
    dash_duo.driver.set_window_size(1280, 720)
    dash_duo.start_server(app)
    dash_duo.driver.get(f"{dash_duo.server_url}/jobs")
    for name, value in (("epochs", "1"), ("runs", "1"), ("width", "4"), ("max_train", "200")):
        box = dash_duo.driver.find_element(
            By.XPATH, f"""//*[@id='{{"name":"{name}","type":"{job_ids.PARAM}"}}']""")
        box.send_keys(Keys.CONTROL, "a")
        box.send_keys(Keys.BACKSPACE)
        box.send_keys(value)
    submit = dash_duo.find_element(f"#{job_ids.SUBMIT}")
    dash_duo.driver.execute_script("arguments[0].click();", submit)  # below the fold
    dash_duo.wait_for_contains_text(f"#{job_ids.MESSAGE}", "submitted job", timeout=20)
    until(lambda: "succeeded" in _text(dash_duo, job_ids.TABLE), 120,
          msg="the smart-init job did not finish")
    link = dash_duo.driver.find_element(By.LINK_TEXT, "Slices")
    dash_duo.driver.execute_script("arguments[0].click();", link)  # (the jobs page scrolled)
    until(lambda: dash_duo.driver.current_url.endswith("/slice"), 20)
    until(lambda: "smart-init" in _text(dash_duo, ids.SOURCE), 20)
    _type(dash_duo, ids.IMAGES, "3,4,5")
    until(lambda: "#3" in _text(dash_duo, ids.THUMBS), 20, msg="no thumbnails of 3,4,5")
    _type(dash_duo, ids.EXTENT, "0.1")
    dash_duo.find_element(f"#{ids.COMPUTE}").click()
    until(lambda: "done" in _text(dash_duo, ids.STATUS), 120,
          msg=f"the slice did not finish: {_text(dash_duo, ids.STATUS)}")

    def titles() -> str:
        return dash_duo.driver.execute_script(
            f"const g = document.getElementById('{ids.GRAPH}').querySelector('.js-plotly-plot');"
            "return g && g.layout ? g.layout.annotations.map(a => a.text).join(' | ') : '';")

    until(lambda: "bn_init" in titles() and "zero_bias" in titles(), 20, msg=titles())
    assert "regions" in titles()
    # the page fits a projector's screen: no scrolling
    assert dash_duo.driver.execute_script(
        "return document.documentElement.scrollHeight <= window.innerHeight + 1;")
    # hover: the image at that point; click: its region's code
    plot = dash_duo.find_element(f"#{ids.GRAPH} .nsewdrag")
    ActionChains(dash_duo.driver).move_to_element_with_offset(plot, 10, 10).perform()
    until(lambda: "class" in _text(dash_duo, ids.HOVER), 20, msg="no hover image")
    ActionChains(dash_duo.driver).move_to_element_with_offset(plot, 12, 14).click().perform()
    until(lambda: "region" in _text(dash_duo, ids.REGION), 20, msg="no region on click")
    # train mode with two mini-batches: two boundaries each, their disagreement
    dash_duo.driver.find_element(By.XPATH, "//label[text()='train']").click()
    _type(dash_duo, ids.BATCHES, "2")
    dash_duo.find_element(f"#{ids.COMPUTE}").click()
    until(lambda: "disagree" in titles(), 120, msg=titles())
    assert "frozen BN" in _text(dash_duo, ids.STATUS)
    assert dash_duo.get_logs() == []


def test_the_job_reports_progress_and_stops_on_a_cancel(jobs_home):
    from bnviz.records.types import Cancelled

    job_id = kept_job()
    params = SLICE_JOB.check(_params(job_id))
    ctx = RecordingContext()
    SLICE_JOB.run(params, ctx, None)
    f = ctx.fractions
    assert f == sorted(f) and f[-1] == 1.0 and len(f) > 10  # layer by layer
    stopped = RecordingContext(cancel_at=0.3)
    with pytest.raises(Cancelled):
        SLICE_JOB.run(params, stopped, None)
    assert stopped.result is None and max(stopped.fractions) < 0.5


def test_the_layout_builds():
    from bnviz.web.layouts.slice import layout

    tree = layout()
    assert ids.GRAPH in str(tree) and ids.UPLOAD in str(tree)


def test_a_job_that_has_not_succeeded_is_named_with_its_status(jobs_home):
    """The slices read a job's record from the store: one still running is refused by its
    status (not as a job that kept no network), an unknown or malformed id in one line."""
    from bnviz.slices.sources import job_network

    store = open_store()
    job = store.create("smart-init", {"dataset": "digits", "arch": "resnet9", "width": 4})
    store.claim(job.id, 1)
    with pytest.raises(ValueError, match=rf"^job {job.id} is running: a job's networks are "
                                         r"sliced once it has succeeded$"):
        job_network(job.id)
    with pytest.raises(ValueError, match=r"^no job 0123456789ab$"):
        job_network("0123456789ab")
    with pytest.raises(ValueError, match="not a job id"):
        job_network("../../etc")


@pytest.mark.browser
@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)])
def test_the_stored_experiment_shows_every_network(dash_duo, size):
    """Issue 44: /slice shows the stored concentration experiment's value of every network
    (4 arms x 5 networks x 2 kinds of off-data images, in 4 panels), folded until asked for,
    inside the page's width."""
    from bnviz.web.app import app

    dash_duo.driver.set_window_size(*size)
    dash_duo.start_server(app)
    dash_duo.wait_for_page(dash_duo.server_url + "/slice", timeout=20)
    summary = dash_duo.wait_for_element(f"#{ids.EXPERIMENT_BOX} summary", timeout=20)
    dash_duo.driver.execute_script("arguments[0].scrollIntoView(); arguments[0].click();",
                                   summary)
    dash_duo.wait_for_element(f"#{ids.EXPERIMENT_GRAPH} .main-svg", timeout=20)
    until(lambda: dash_duo.driver.execute_script(
        f"return document.querySelectorAll('#{ids.EXPERIMENT_GRAPH} .scatterlayer .point')"
        ".length") >= 160, 20, msg="not every network's dot is drawn")
    box = dash_duo.driver.execute_script(
        f"const r = document.getElementById('{ids.EXPERIMENT_GRAPH}').getBoundingClientRect();"
        "return [r.width, r.height, document.documentElement.scrollWidth - innerWidth];")
    assert box[0] > 500 and box[1] > 300 and box[2] <= 0
    assert "networks an arm" in _text(dash_duo, ids.EXPERIMENT)
