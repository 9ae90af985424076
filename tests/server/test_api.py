"""The jobs' JSON HTTP API (bnviz.server.api) through the whole WSGI app (request guard,
ProxyFix when configured, Flask, the blueprint): every status code it answers, the token on
and off, the per-client limit (behind a proxy and not), the 64 kB body cap, and random JSON
bodies that never get a 5xx.

Jobs go to a temporary store and no worker starts (``ensure_local_worker`` is a no-op), so a
submitted job stays queued; one test runs a tiny job to its end on the in-process worker
(``inline_jobs``).
"""

from __future__ import annotations

import io
import json
import re
import string
import time

import pytest
from fuzzing import FUZZ
from hypothesis import given
from hypothesis import strategies as st
from werkzeug.test import EnvironBuilder, run_wsgi_app

from bnviz import jobs
from bnviz.messages import TRACEBACK_HINT
from bnviz.params.jobs import ARMS, JOB_OPTIONS
from bnviz.records.store import open_store
from bnviz.service.clients import client_id, trust_proxy
from bnviz.service.guard import RequestGuard
from bnviz.web import app as dashboard

TINY = {"epochs": 1, "runs": 1, "width": 4}
TOKEN = "s3cret-token"
PUBLIC = {"id", "type", "params", "status", "progress", "device", "error", "created",
          "started", "finished", "heartbeat", "cancel_requested", "backend", "rerun_of",
          "summary", "attempts", "seconds"}


@pytest.fixture
def api(jobs_home, monkeypatch):
    """A test client of the real app; jobs are stored and never run."""
    for name in ("BNVIZ_JOBS_TOKEN", "BNVIZ_BEHIND_PROXY", "BNVIZ_JOBS_PER_CLIENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(jobs, "ensure_local_worker", lambda: None)
    return dashboard.server.test_client()


def submit(client, body=None, token=None, addr="10.0.0.1", **headers):
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return client.post("/api/jobs", json={"type": "smart-init", "params": TINY}
                       if body is None else body, headers=headers,
                       environ_base={"REMOTE_ADDR": addr})


def error_of(response, status: int) -> str:
    """The one-line JSON error of a response with this status."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    message = response.get_json()["error"]
    assert isinstance(message, str) and message and "\n" not in message
    assert "Traceback" not in message and "<!doctype" not in message.lower()
    return message


# --------------------------------------------------------------------------- the happy path


def test_submit_list_show_cancel(api):
    r = submit(api)
    assert r.status_code == 201 and r.mimetype == "application/json"
    job_id = r.get_json()["id"]
    assert r.get_json() == {"id": job_id, "status": "queued"}
    assert r.headers["Location"] == f"/api/jobs/{job_id}"
    stored = open_store().get(job_id)
    assert stored.client == client_id("10.0.0.1") and "10.0.0.1" not in stored.client
    assert stored.params["epochs"] == 1 and stored.params["dataset"] == "digits"

    listed = api.get("/api/jobs").get_json()["jobs"]
    assert [j["id"] for j in listed] == [job_id] and set(listed[0]) == PUBLIC
    shown = api.get(r.headers["Location"])
    assert shown.status_code == 200
    body = shown.get_json()
    assert set(body) == PUBLIC | {"metrics", "log"} and body["status"] == "queued"
    assert body["metrics"] == [] and body["log"] == []

    r = api.delete(f"/api/jobs/{job_id}")
    assert r.status_code == 200 and r.get_json() == {"id": job_id, "status": "cancelled"}
    assert api.get(f"/api/jobs/{job_id}").get_json()["status"] == "cancelled"
    again = api.delete(f"/api/jobs/{job_id.upper()}")  # an ended job stays as it is
    assert again.get_json() == {"id": job_id, "status": "cancelled"}


def test_a_job_runs_to_its_end_through_the_api(inline_jobs, monkeypatch):
    monkeypatch.delenv("BNVIZ_JOBS_TOKEN", raising=False)
    client = dashboard.server.test_client()
    job_id = submit(client).get_json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        body = client.get(f"/api/jobs/{job_id}?log=5").get_json()
        if body["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.2)
    assert body["status"] == "succeeded", body["error"]
    assert {row["arm"] for row in body["metrics"]} == set(ARMS["smart-init"])
    assert len(body["log"]) == 5 and body["log"][-1].startswith("done in")
    assert body["summary"]["arms"]["bn_init"]["final"] is not None


def test_list_limit_and_status(api, monkeypatch):
    monkeypatch.setenv("BNVIZ_JOBS_PER_CLIENT", "10")
    ids = [submit(api).get_json()["id"] for _ in range(3)]
    api.delete(f"/api/jobs/{ids[0]}")
    assert [j["id"] for j in api.get("/api/jobs").get_json()["jobs"]] == ids[::-1]
    assert [j["id"] for j in api.get("/api/jobs?limit=1").get_json()["jobs"]] == [ids[2]]
    assert len(api.get("/api/jobs?limit=1000").get_json()["jobs"]) == 3
    queued = api.get("/api/jobs?status=queued").get_json()["jobs"]
    assert [j["id"] for j in queued] == [ids[2], ids[1]]
    cancelled = api.get("/api/jobs?status=cancelled&limit=5").get_json()["jobs"]
    assert [j["id"] for j in cancelled] == [ids[0]]
    for query in ("limit=0", "limit=1001", "limit=x", "limit=", "limit=1.5", "status=done",
                  "status="):
        assert error_of(api.get(f"/api/jobs?{query}"), 400).split(":")[0] in query
    assert error_of(api.get(f"/api/jobs/{ids[1]}?log=-1"), 400).startswith("log:")
    assert error_of(api.get(f"/api/jobs/{ids[1]}?log=5001"), 400).startswith("log:")


def test_a_job_is_shown_without_the_servers_internals(api):
    job_id = submit(api).get_json()["id"]
    store = open_store()
    store.add_log(job_id, 'Traceback (most recent call last):\n  File "/srv/app/x.py", line 1')
    store.add_log(job_id, "reading /srv/data/cifar-10-batches-py/data_batch_1")
    store.add_metric(job_id, {"arm": "bn_init", "run": 0, "epoch": 1, "train_loss": float("nan"),
                              "test_accuracy": 0.5})
    store.finish(job_id, "failed", "OSError: /srv/home/results/x.npz: disk full")
    body = api.get(f"/api/jobs/{job_id}").get_json()
    assert body["log"] == [TRACEBACK_HINT, "reading …/data_batch_1"]
    assert body["error"] == "OSError: …/x.npz: disk full"
    assert body["metrics"][0]["train_loss"] is None  # NaN is not JSON
    listed = api.get("/api/jobs").get_json()["jobs"][0]
    assert listed["error"] == body["error"] and "/srv/" not in json.dumps(listed)
    assert not {"host", "pid", "client", "key"} & set(body)


# --------------------------------------------------------------------------- client errors


@pytest.mark.parametrize(("data", "words"), [
    (b"{", "not valid JSON"), (b"\xff\xfe", "not valid JSON"), (b"", "not valid JSON"),
    (b'{"type": NaN}', "not valid JSON"), (b"[" * 5000 + b"]" * 5000, "not valid JSON"),
    (b"[]", "must be a JSON object"), (b'"smart-init"', "must be a JSON object"),
    (b"null", "must be a JSON object"), (b"3", "must be a JSON object"),
    (b"{}", "missing job type"), (b'{"params": {}}', "missing job type"),
    (b'{"type": "nope"}', "unknown job type 'nope'"),
    (b'{"type": "density"}', "unknown job type 'density'"),  # a page's type: not by API
    (b'{"type": ["smart-init"]}', "unknown job type"),
    (b'{"type": "smart-init", "params": []}', '"params" must be a JSON object'),
    (b'{"type": "smart-init", "params": "epochs=1"}', '"params" must be a JSON object'),
    (b'{"type": "smart-init", "priority": 1}', "unknown field 'priority'"),
    (b'{"type": "smart-init", "params": {"epochs": 0}}', "epochs: enter a whole number"),
    (b'{"type": "smart-init", "params": {"noise": 0.2}}', "noise is not a parameter of"),
    (b'{"type": "smart-init", "params": {"bogus": 1}}', "unknown parameter 'bogus'"),
    (b'{"type": "smart-init", "params": {"dataset": "cifar10"}}', "not found"),
    (b'{"type": "smart-init", "params": {"epochs": 1e400}}', "epochs: enter a whole"),
    (b'{"type": "smart-init", "params": {"width": 64, "epochs": 1000, "runs": 8}}',
     "over the cap of 2 hours (BNVIZ_JOB_MAX_HOURS)"),  # about 5 hours, refused unstored
])
def test_bad_bodies_get_400_with_one_line(api, data, words):
    r = api.post("/api/jobs", data=data, content_type="application/json")
    message = error_of(r, 400)
    assert words in message
    # the API's own field names, never the command line's flags (issue 28)
    assert not re.search(r"(^|[\s(])--[a-z]", message), message
    assert open_store().list() == []


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_body_that_is_not_json_gets_415(api, content_type):
    body = json.dumps({"type": "smart-init"})
    r = api.post("/api/jobs", data=body, content_type=content_type) if content_type else \
        api.post("/api/jobs", data=body)
    assert "JSON" in error_of(r, 415)
    # a JSON type with a charset is JSON
    ok = api.post("/api/jobs", data=body, content_type="application/json; charset=utf-8")
    assert ok.status_code == 201


def test_ids_unknown_and_malformed(api):
    assert error_of(api.get("/api/jobs/0123456789ab"), 404) == "no job 0123456789ab"
    assert error_of(api.delete("/api/jobs/0123456789ab"), 404) == "no job 0123456789ab"
    for bad in ("abc", "0123456789abc", "zzzzzzzzzzzz", "0123456789a%20", "%3Cscript%3E"):
        assert "is not a job id" in error_of(api.get(f"/api/jobs/{bad}"), 400)
        assert "is not a job id" in error_of(api.delete(f"/api/jobs/{bad}"), 400)


def test_other_routes_and_methods(api):
    for path in ("/api", "/api/", "/api/nope", "/api/jobs/", "/api/jobs/0123456789ab/log",
                 "/api/jobs/a/b/c"):
        for method in ("GET", "POST", "DELETE"):
            assert "no such API route" in error_of(api.open(path, method=method), 404)
    for path, method, allow in (("/api/jobs", "PUT", "GET, HEAD, OPTIONS, POST"),
                                ("/api/jobs", "DELETE", "GET, HEAD, OPTIONS, POST"),
                                ("/api/jobs", "TRACE", "GET, HEAD, OPTIONS, POST"),
                                ("/api/jobs/0123456789ab", "POST", "DELETE, GET, HEAD, OPTIONS"),
                                ("/api/jobs/0123456789ab", "PATCH", "DELETE, GET, HEAD, OPTIONS"),
                                ("/api/jobs/0123456789ab", "FOO", "DELETE, GET, HEAD, OPTIONS")):
        r = api.open(path, method=method)
        assert method in error_of(r, 405) and r.headers["Allow"] == allow
    r = api.options("/api/jobs")
    assert r.status_code == 204 and r.headers["Allow"] == "GET, HEAD, OPTIONS, POST"
    assert "Content-Type" not in r.headers
    head = api.head("/api/jobs")
    assert head.status_code == 200 and head.mimetype == "application/json"


def test_bodies_over_64_kb_get_413_before_they_are_read(api):
    big = {"type": "smart-init", "params": {"dataset": "x" * 70_000}}
    assert "64 kB" in error_of(api.post("/api/jobs", json=big), 413)
    environ = EnvironBuilder("/api/jobs", method="POST", data=json.dumps(big),
                             content_type="application/json").get_environ()
    del environ["CONTENT_LENGTH"]  # chunked: the guard reads up to its cap only
    environ["wsgi.input"] = io.BytesIO(json.dumps(big).encode())
    body, status, headers = run_wsgi_app(dashboard.server.wsgi_app, environ)
    assert status.startswith("413") and b"64 kB" in b"".join(body)
    assert open_store().list() == []


# --------------------------------------------------------------------------- the token


def test_with_a_token_writes_need_it_and_reads_do_not(api, monkeypatch):
    monkeypatch.setenv("BNVIZ_JOBS_TOKEN", TOKEN)
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer   "},
                    {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}):
        r = api.post("/api/jobs", json={"type": "smart-init", "params": TINY}, headers=headers)
        assert "needs a token" in error_of(r, 401)
        assert r.headers["WWW-Authenticate"] == 'Bearer realm="bnviz"'
    for wrong in ("wrong", TOKEN + "x", TOKEN[:-1], "tøken"):
        r = submit(api, token=wrong)
        assert "not this server's" in error_of(r, 401)
        assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
    # 401 comes before the body is looked at: a bad body without a token learns nothing
    assert api.post("/api/jobs", data=b"{", content_type="text/plain").status_code == 401
    assert open_store().list() == []

    r = submit(api, token=TOKEN)
    assert r.status_code == 201
    job_id = r.get_json()["id"]
    assert submit(api, token=f"  {TOKEN} ").status_code == 201  # blanks around it are fine
    assert api.post("/api/jobs", json={"type": "smart-init", "params": TINY},
                    headers={"Authorization": f"bearer {TOKEN}"}).status_code == 201
    # reading is open
    assert api.get("/api/jobs").status_code == 200
    assert api.get(f"/api/jobs/{job_id}").status_code == 200
    # cancelling needs it
    assert error_of(api.delete(f"/api/jobs/{job_id}"), 401)
    assert error_of(api.delete("/api/jobs/0123456789ab"), 401)  # before the id is looked up
    wrong = api.delete(f"/api/jobs/{job_id}", headers={"Authorization": "Bearer nope"})
    assert error_of(wrong, 401) and open_store().get(job_id).status == "queued"
    ok = api.delete(f"/api/jobs/{job_id}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.get_json() == {"id": job_id, "status": "cancelled"}


def test_without_a_token_writes_are_open(api, monkeypatch):
    monkeypatch.setenv("BNVIZ_JOBS_TOKEN", "   ")  # blank: unset
    r = submit(api, token="anything")
    assert r.status_code == 201
    assert api.delete(f"/api/jobs/{r.get_json()['id']}").status_code == 200


# --------------------------------------------------------------------------- limits


@pytest.fixture
def behind_proxy(api, monkeypatch):
    """The app as app.py builds it with BNVIZ_BEHIND_PROXY=1: ProxyFix inside the guard."""
    monkeypatch.setenv("BNVIZ_BEHIND_PROXY", "1")
    guard = dashboard.server.wsgi_app
    assert isinstance(guard, RequestGuard)
    monkeypatch.setattr(guard, "app", trust_proxy(guard.app))
    return api


def test_without_a_proxy_the_address_is_the_peer_and_the_header_is_ignored(api, monkeypatch):
    assert "ProxyFix" not in type(dashboard.server.wsgi_app.app).__name__
    monkeypatch.setenv("BNVIZ_JOBS_PER_CLIENT", "2")
    for i in range(2):
        assert submit(api, addr="10.0.0.7", **{"X-Forwarded-For": f"1.2.3.{i}"}
                      ).status_code == 201
    r = submit(api, addr="10.0.0.7", **{"X-Forwarded-For": "9.9.9.9"})
    assert "you have 2 jobs queued or running" in error_of(r, 429)
    assert int(r.headers["Retry-After"]) > 0
    assert submit(api, addr="10.0.0.8").status_code == 201  # another peer: its own allowance
    assert {j.client for j in open_store().list()} == {client_id("10.0.0.7"),
                                                        client_id("10.0.0.8")}


def test_behind_the_proxy_each_forwarded_client_has_its_own_allowance(behind_proxy,
                                                                      monkeypatch):
    api = behind_proxy
    monkeypatch.setenv("BNVIZ_JOBS_PER_CLIENT", "2")
    nginx = "172.18.0.5"
    for client in ("203.0.113.1", "203.0.113.2"):
        for _ in range(2):
            assert submit(api, addr=nginx, **{"X-Forwarded-For": client}).status_code == 201
        r = submit(api, addr=nginx, **{"X-Forwarded-For": client})
        assert error_of(r, 429) and "Retry-After" in r.headers
    # ProxyFix trusts the last hop only: a client's own X-Forwarded-For entry changes nothing
    r = submit(api, addr=nginx, **{"X-Forwarded-For": "6.6.6.6, 203.0.113.1"})
    assert r.status_code == 429
    assert {j.client for j in open_store().list()} == {client_id("203.0.113.1"),
                                                        client_id("203.0.113.2")}
    # a cancelled job frees its place
    job_id = api.get("/api/jobs").get_json()["jobs"][0]["id"]
    api.delete(f"/api/jobs/{job_id}")
    assert submit(api, addr=nginx, **{"X-Forwarded-For": "203.0.113.2"}).status_code == 201
    # the body cap still holds with ProxyFix in the chain (in either order)
    big = {"type": "smart-init", "params": {"dataset": "x" * 70_000}}
    assert error_of(api.post("/api/jobs", json=big), 413)
    monkeypatch.setattr(dashboard.server, "wsgi_app", trust_proxy(dashboard.server.wsgi_app))
    assert error_of(api.post("/api/jobs", json=big), 413)


def test_a_busy_server_gets_429_and_server_trouble_503(api, monkeypatch):
    def busy(*_a, **_k):
        raise jobs.QueueFull(8)

    real = jobs.submit_job
    monkeypatch.setattr(jobs, "submit_job", busy)
    r = submit(api)
    assert "the server is busy" in error_of(r, 429) and int(r.headers["Retry-After"]) > 0
    monkeypatch.setattr(jobs, "submit_job", real)

    monkeypatch.setenv("BNVIZ_MIN_FREE_MB", "1000000000")  # more than any disk has
    r = submit(api)
    assert "disk is nearly full" in error_of(r, 503) and int(r.headers["Retry-After"]) > 0
    monkeypatch.delenv("BNVIZ_MIN_FREE_MB")

    monkeypatch.setenv("BNVIZ_STORE_URL", "ftp://nowhere")  # no store there
    for r in (submit(api), api.get("/api/jobs"), api.get("/api/jobs?status=queued"),
              api.get("/api/jobs/0123456789ab"), api.delete("/api/jobs/0123456789ab")):
        assert "BNVIZ_STORE_URL" in error_of(r, 503) and "Retry-After" in r.headers


# --------------------------------------------------------------------------- fuzz

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20)
                     | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
_NAMES = st.sampled_from([o.name for o in JOB_OPTIONS] + ["x", ""])
_PARAMS = st.dictionaries(_NAMES, _JSON | st.sampled_from(["1", "0", "-1", "nan", "1e9",
                                                          "digits", "cifar10", "resnet50"]),
                          max_size=6)
_BODIES = st.one_of(
    _JSON,
    st.fixed_dictionaries({"type": st.sampled_from(["smart-init", "concentration", "landscape",
                                                    "jitter-noise", "affine-ablation"]) | _JSON,
                           "params": _PARAMS | _JSON}),
    st.fixed_dictionaries({"type": st.sampled_from(["smart-init", "landscape"])},
                          optional={"params": _PARAMS, "extra": _JSON}))


@pytest.mark.slow
@FUZZ
@given(body=_BODIES, token=st.none() | st.just(TOKEN) | st.text(string.ascii_letters,
                                                                  max_size=10),
       needed=st.booleans())
def test_random_json_bodies_never_get_a_5xx(api, monkeypatch, body, token, needed):
    monkeypatch.setenv("BNVIZ_JOBS_PER_CLIENT", "100000")
    if needed:
        monkeypatch.setenv("BNVIZ_JOBS_TOKEN", TOKEN)
    else:
        monkeypatch.delenv("BNVIZ_JOBS_TOKEN", raising=False)
    r = submit(api, body, token=token)
    assert r.status_code in (201, 400, 401) and r.mimetype == "application/json"
    if r.status_code != 201:
        error_of(r, r.status_code)
    assert (r.status_code == 401) == (needed and token != TOKEN)
