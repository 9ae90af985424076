"""``bnviz serve`` / ``make serve``: nginx in front of gunicorn, and the job worker, on one
machine. Run on loopback with this venv: it serves through nginx, its rate limits refuse a
burst of job submissions (429) and let a lecture hall's burst of callbacks through, a killed
gunicorn master costs no request a 502 (the other gunicorn answers), its files and sockets
are private, SIGTERM to its process group stops every process of it and exits 0, and what
keeps it from starting (no nginx, a port in use) is one line."""

from __future__ import annotations

import grp
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest
from served import JOBS_REFRESH, free_port
from stackrun import ROOT, group_pids, kill_group, start, stop_group, wait_answering

from bnviz.server import stack
from bnviz.service import nginx

# one worker, in file order: the file-mode test reads what the earlier tests' pages and
# job left under the module's one BNVIZ_HOME (split across xdist workers, it found no job)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]


def _env(home: Path, port: int, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL", "BNVIZ_JOBS_TOKEN", "BNVIZ_NGINX"):
        env.pop(name, None)
    return {**env, "BNVIZ_HOST": "127.0.0.1", "BNVIZ_PORT": str(port),
            "BNVIZ_HOME": str(home), "BNVIZ_WEB_WORKERS": "1", **extra}


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """``python -m bnviz serve`` on a free port, with two web workers (so two gunicorns of
    one each); yields (base URL, process, log, BNVIZ_HOME). The home is made by serve, the
    log lies beside it (the test's file, not the service's)."""
    home = tmp_path_factory.mktemp("serving") / "home"
    port = free_port()
    log = home.parent / "serve.log"
    proc = start([sys.executable, "-m", "bnviz", "serve"],
                 _env(home, port, BNVIZ_WEB_WORKERS="2"), log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(proc, base + "/healthz", log)
        _wait_serving_line(log)
        yield base, proc, log, home
    finally:
        stop_group(proc)


def _wait_serving_line(log: Path) -> str:
    """serve's "serving" line (printed just after nginx's port accepts, so possibly after
    the first answer)."""
    deadline = time.monotonic() + 10
    while "bnviz serve: serving" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return log.read_text().split("bnviz serve: serving", 1)[1].split("\n")[0]


def _request(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def _ppid(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[1])


def _dashboard_masters(serve_pid: int) -> list[int]:
    """The dashboard's gunicorn masters: serve's children that run bnviz.web.app:server."""
    masters = []
    for pid in group_pids(serve_pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"bnviz.web.app:server" in argv and _ppid(pid) == serve_pid:
            masters.append(pid)
    return masters


def test_serves_through_nginx_and_caches_dash_scripts(serving):
    base, _, log, _ = serving
    status, headers, page = _request(base + "/")
    assert status == 200 and headers["Server"] == "nginx" and b"<title>bnviz</title>" in page
    # the browser headers pass nginx once (issue 30): the app's policy, not a second copy
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "sha256-" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"]
    script = page.split(b'src="', 1)[1].split(b'"', 1)[0].decode()  # first of Dash's scripts
    assert script.startswith("/_dash-component-suites/")
    first = _request(base + script)
    assert first[0] == 200 and first[1]["X-Cache"] in ("MISS", "HIT")
    # nginx stores the entry as it finishes the first response, which the client may already
    # hold: a request right after it can still miss; within a second one hits, never reaching
    # gunicorn, with the same bytes
    for _ in range(20):
        again = _request(base + script)
        if again[1]["X-Cache"] == "HIT":
            break
        time.sleep(0.05)
    assert again[0] == 200 and again[2] == first[2]
    assert again[1]["X-Cache"] == "HIT"
    # nginx's access log reaches serve's stdout through the stack's own pipe (issue 33)
    deadline = time.monotonic() + 5
    while f'"GET {script}' not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert f'"GET {script} HTTP/1.1" 200' in log.read_text()


def test_other_methods_are_a_json_405_and_healthz_carries_the_headers(serving):
    """issue 42: a method other than GET, HEAD and POST is nginx's JSON 405 with the browser
    headers (TRACE was nginx's bare HTML 405), except where the jobs API takes it (DELETE,
    OPTIONS) or answers its own 405; /healthz, served by the health process, carries the
    browser headers too."""
    base, *_ = serving
    for method, path in [("TRACE", "/"), ("PUT", "/"), ("DELETE", "/_dash-layout"),
                         ("OPTIONS", "/"), ("PATCH", "/_dash-update-component"),
                         ("PROPFIND", "/assets/x.css"), ("TRACE", "/api/jobs")]:
        status, headers, raw = _request(base + path, method)
        assert status == 405, (method, path, status, raw[:200])
        assert headers["Content-Type"] == "application/json" and json.loads(raw)["error"]
        assert headers["Allow"] == "GET, HEAD, POST"
        assert headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"]
    # the jobs API still takes what it serves: a cancel of no job is its own JSON 404
    status, _, raw = _request(base + "/api/jobs/" + "0" * 12, "DELETE")
    assert status == 404 and "no job" in json.loads(raw)["error"], (status, raw)
    assert _request(base + "/api/jobs", "OPTIONS")[0] == 204
    for method in ("GET", "POST"):
        status, headers, _ = _request(base + "/healthz", method)
        assert status == (200 if method == "GET" else 405)
        assert headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"]


def test_a_burst_of_callbacks_from_one_address_all_pass(serving):
    """A lecture hall behind one NAT address: 200 callbacks at once, 20 at a time, all 200."""
    base, *_ = serving
    body = json.dumps(JOBS_REFRESH).encode()
    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(lambda _: _request(base + "/_dash-update-component", "POST",
                                                     body)[0], range(200)))
    assert statuses == [200] * 200


def test_training_frames_pass_nginx_with_the_callbacks_cap(serving):
    """The explorer's live training through nginx: a student playing 30 frames in a row is
    not held to the job writes' strict limit (a POST under /api/), a frame carrying a
    300 kB state (a wide network's trainers) passes, and a 3 MB body is nginx's 413."""
    from bnviz.params import PartitionParams
    from bnviz.web.callbacks.explorer.state import control_values
    from bnviz.web.callbacks.explorer.training import ROUTE

    base, *_ = serving
    body = {"controls": control_values(PartitionParams()), "lr": 0.05, "batch": 32,
            "optimizer": "adam", "steps": 5, "state": None}
    statuses = []
    for _ in range(30):
        status, _, raw = _request(base + ROUTE, "POST", json.dumps(body).encode())
        statuses.append(status)
        body["state"] = json.loads(raw).get("state") if status == 200 else None
    assert statuses == [200] * 30
    big = dict(body, state={"key": "another run", "states": {"bn": {"params": ["A" * 300_000]}}})
    status, _, raw = _request(base + ROUTE, "POST", json.dumps(big).encode())
    assert status == 200 and json.loads(raw)["fresh"]
    status, headers, raw = _request(base + ROUTE, "POST", b"{" + b" " * (3 * 2 ** 20) + b"}")
    assert status == 413 and headers["Server"] == "nginx" and "training frames" in \
        json.loads(raw)["error"]
    # nginx's own refusal carries the browser headers too
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"]
    # an address too long for nginx is JSON too (issue 30: every /api answer)
    status, headers, raw = _request(base + "/api/jobs?" + "x" * 20_000)
    assert status == 414 and headers["Server"] == "nginx", (status, headers, raw[:300])
    assert headers["Content-Type"] == "application/json" and json.loads(raw)["error"]


def test_healthz_answers_while_the_dashboard_cannot(serving):
    """/healthz is served by its own process: with every process of the dashboard's gunicorn
    stopped (SIGSTOP, as if all its threads were busy), /healthz still answers at once
    through nginx while a page waits, and says "degraded" once the dashboard has not answered
    a light request within 2 s (issue 30); "ok" again once the dashboard answers."""
    from bnviz.server.health import LIGHT_GOAL_SECONDS, LIGHT_PROBE_EVERY

    base, proc, *_ = serving

    def report() -> dict:
        t0 = time.monotonic()
        with urllib.request.urlopen(base + "/healthz", timeout=10) as r:
            answer = json.load(r)
        assert time.monotonic() - t0 < 1.0
        return answer

    assert report()["status"] == "ok"
    dashboard = [pid for pid in group_pids(proc.pid)
                 if b"bnviz.web.app:server" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert dashboard
    for pid in dashboard:
        os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            urllib.request.urlopen(base + "/", timeout=2)
        time.sleep(LIGHT_GOAL_SECONDS + LIGHT_PROBE_EVERY)
        stalled = report()
        assert stalled["status"] == "degraded" and stalled["web"]["accepting"] is True
        assert any("light request" in p for p in stalled["problems"]), stalled
    finally:
        for pid in dashboard:
            os.kill(pid, signal.SIGCONT)
    assert _request(base + "/")[0] == 200
    deadline = time.monotonic() + 3 * LIGHT_PROBE_EVERY + 5
    while report()["status"] != "ok":
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_job_submissions_are_rate_limited(serving):
    """POST /api/jobs from one address: past the strict burst, nginx answers 429 (one JSON
    line, Retry-After) before the app sees the request; reading the jobs is not limited by
    it."""
    base, *_ = serving
    answers = [_request(base + "/api/jobs", "POST", b"{}") for _ in range(20)]
    limited = [a for a in answers if a[0] == 429]
    assert len(limited) >= 10, [a[0] for a in answers]
    status, headers, body = limited[0]
    assert headers["Server"] == "nginx" and headers["Retry-After"] == "1"
    assert "too many requests" in json.loads(body)["error"]
    assert all(a[0] != 429 for a in answers[:3])  # the first ones reach the app
    assert _request(base + "/api/jobs")[0] != 429
    assert _request(base + "/healthz")[0] == 200


def test_a_killed_worker_is_started_again_and_runs_the_queued_job(serving):
    """issue 30: kill -9 of the job worker: the stack starts it again (with backoff, said in
    its log) and a job submitted through the API afterwards completes; the site stays up."""
    base, proc, log, home = serving
    line = _wait_serving_line(log)
    worker = int(line.split("worker ", 1)[1].split(",")[0].split(";")[0])
    os.kill(worker, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while "worker exited with code -9: starting it again" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.1)
    env = _env(home, 0)
    # the restarted worker holds the home's worker lock once it has imported torch; the job
    # is submitted by the command line (nginx's strict limit on API writes is spent above)
    probe = "from bnviz.jobs.local import local_worker_pid; print(local_worker_pid())"
    deadline = time.monotonic() + 60
    while subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True).stdout.strip() in ("None", str(worker)):
        assert time.monotonic() < deadline, "the restarted worker never took its lock"
        time.sleep(0.5)
    out = subprocess.run([sys.executable, "-m", "bnviz", "jobs", "submit", "affine-ablation",
                          "--epochs", "1", "--runs", "1", "--width", "4", "--max-train", "200",
                          "--json"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    job_id = json.loads(out.stdout)["id"]
    deadline = time.monotonic() + 180
    while (job := json.loads(_request(base + f"/api/jobs/{job_id}")[2]))["status"] in (
            "queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.5)
    assert job["status"] == "succeeded", job
    assert proc.poll() is None and _request(base + "/healthz")[0] == 200


def test_a_killed_gunicorn_master_costs_no_502(serving):
    """issue 42: kill -9 of a dashboard gunicorn's master. The other gunicorn takes its
    requests: / answers 200 again within 10 s (with one gunicorn, its boot was 7 s of 502s
    here, 36 s under load), no answer meanwhile is a 502, and whatever is not a 200 is
    nginx's 503 with Retry-After and a JSON error. The stack starts the master again and
    publishes it once it answers; the dead master's workers end and are reaped."""
    base, proc, log, _ = serving
    masters = _dashboard_masters(proc.pid)
    victim = int(_wait_serving_line(log).split("gunicorn-1 ", 1)[1].split(",")[0])
    assert len(masters) == 2 and victim in masters, (masters, victim)
    orphans = [pid for pid in group_pids(proc.pid) if _ppid(pid) == victim]
    assert orphans
    back = log.read_text().count("answers again")
    seen: list[tuple[float, str, object, dict, bytes]] = []
    halt = threading.Event()
    callback = json.dumps(JOBS_REFRESH).encode()

    def client(path: str, body: bytes | None) -> None:
        while not halt.is_set():
            sent = time.monotonic()
            try:
                answer = _request(base + path, "POST" if body else "GET", body)
            except OSError as exc:  # no HTTP answer at all: a failure too
                answer = (f"no answer: {exc}", {}, b"")
            seen.append((sent, path, *answer))
            halt.wait(0.05)

    clients = [threading.Thread(target=client, args=args, daemon=True) for args in
               [("/", None), ("/", None), ("/_dash-update-component", callback),
                ("/_dash-update-component", callback)]]
    killed = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    for thread in clients:
        thread.start()
    try:
        deadline = killed + 240  # a loaded machine's boot: generous, the bound is below

        def late_answers() -> int:  # answers to / that were sent 10 s or more after the kill
            return sum(1 for sent, path, *_ in list(seen) if path == "/" and sent >= killed + 10)

        # until the master is back and each / client has had answers to requests sent from
        # 10 s on (stopping at 10 s itself left CI a 0.2 s window, in which a / slowed by the
        # load sent nothing: an empty list that said nothing of the stack)
        while (log.read_text().count("answers again") == back or time.monotonic() < killed + 10
               or late_answers() < 4):
            assert proc.poll() is None and time.monotonic() < deadline, (
                [(round(sent - killed, 2), path, status) for sent, path, status, *_ in seen][-20:],
                log.read_text()[-3000:])
            time.sleep(0.2)
    finally:
        halt.set()
        for thread in clients:
            thread.join(90)
    assert "gunicorn-1 exited with code -9: starting it again" in log.read_text()
    # "/ answers 200 again within 10 s": every request sent from then on is a 200 (the dead
    # master's workers may still answer the first few, so the first 200 says nothing)
    late = [status for sent, path, status, *_ in seen if path == "/" and sent >= killed + 10]
    assert late and set(late) == {200}, late
    statuses = [status for _, _, status, *_ in seen]
    assert 502 not in statuses
    for _, path, status, headers, raw in seen:
        if status != 200:
            assert status == 503 and headers.get("Retry-After"), (path, status, raw[:200])
            assert "busy or restarting" in json.loads(raw)["error"]
    # the restarted master serves (both gunicorns accept again), the dead one's workers are
    # gone: reaped by the stack, not zombies
    deadline = time.monotonic() + 60
    while (web := json.loads(_request(base + "/healthz")[2])["web"])["servers_accepting"] != 2:
        assert time.monotonic() < deadline, web
        time.sleep(0.5)
    assert len(_dashboard_masters(proc.pid)) == 2
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{pid}").exists() for pid in orphans):
        assert time.monotonic() < deadline, "the dead master's workers were not reaped"
        time.sleep(0.2)


def test_the_service_files_and_sockets_are_private(serving):
    """issue 42: what the running stack created under BNVIZ_HOME (the job store and its -wal
    and -shm, the worker's lock, the job's networks and checkpoints' folder: earlier tests of
    this module served pages and ran a job) is 0600, its folders 0700; gunicorn's sockets
    are 0600, or 0660 with the group of nginx's workers where they are another user (root's
    nobody)."""
    import sqlite3

    base, proc, log, home = serving
    assert _request(base + "/")[0] == 200
    # the -wal and -shm live while a connection is open (the store's connections are short):
    # this one's, which SQLite makes with the store file's mode, whoever opens it
    with closing(sqlite3.connect(home / "jobs" / "jobs.sqlite")) as db:
        db.execute("SELECT count(*) FROM jobs").fetchone()  # (opens the -wal and -shm)
        found = {p.relative_to(home).as_posix(): p.lstat() for p in [home, *home.rglob("*")]}
    assert {"jobs/jobs.sqlite", "jobs/jobs.sqlite-wal", "jobs/jobs.sqlite-shm",
            "jobs/worker.lock"} <= set(found)
    wrong = {name: oct(st.st_mode & 0o777) for name, st in found.items()
             if stat.S_IMODE(st.st_mode) != (0o700 if stat.S_ISDIR(st.st_mode) else 0o600)}
    assert wrong == {}
    line = _wait_serving_line(log)
    sockets = Path(line.split("run directory ", 1)[1].rstrip(")")) / "sockets"
    uid, gid = nginx.nginx_worker_ids()
    published = sorted(p for p in sockets.glob("*.sock") if not p.name.endswith(".boot.sock"))
    assert [p.name for p in published] == ["gunicorn-1.sock", "gunicorn-2.sock",
                                           "health.sock"]
    for path in published:
        st = path.stat()
        assert stat.S_ISSOCK(st.st_mode)
        if uid == os.geteuid():
            assert stat.S_IMODE(st.st_mode) == 0o600
        else:
            assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == gid, grp.getgrgid(gid)


def test_sigterm_to_the_group_stops_every_process(serving):
    """SIGTERM to the process group (what a terminal's Ctrl-C or a service manager sends):
    nginx, the gunicorns and the worker stop gracefully, serve exits 0, nothing is left; the run
    directory is removed. Last in this file: it stops the module's stack."""
    base, proc, log, _ = serving
    text = log.read_text()
    line = next(x for x in text.splitlines() if "bnviz serve: serving" in x)
    for part in ("gunicorn-1 ", "gunicorn-2 ", "health ", "worker ", "nginx "):
        assert part in line
    run_dir = Path(line.split("run directory ", 1)[1].rstrip(")"))
    assert run_dir.is_dir() and len(group_pids(proc.pid)) >= 9  # serve, 5 masters, workers
    # issue 30: gunicorn's sockets sit in a directory of their own, which only this user
    # and (under root) the group of nginx's workers may pass
    sockets = run_dir / "sockets"
    uid, gid = nginx.nginx_worker_ids()
    assert sockets.stat().st_uid == os.geteuid()
    if uid == os.geteuid():
        assert sockets.stat().st_mode & 0o777 == 0o700
    else:
        assert sockets.stat().st_mode & 0o777 == 0o710 and sockets.stat().st_gid == gid
    assert {"gunicorn-1.sock", "gunicorn-2.sock", "health.sock"} <= \
        {p.name for p in sockets.iterdir()}
    assert not list(run_dir.glob("*.sock"))
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        code = proc.wait(60)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        pytest.fail("bnviz serve did not stop within 60 s")
    deadline = time.monotonic() + 10
    while group_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = group_pids(proc.pid)
    kill_group(proc)
    assert code == 0 and left == []
    assert not run_dir.exists()
    assert "bnviz serve: stopped (gunicorn-1 0, gunicorn-2 0, health 0, worker 0, nginx 0)" \
        in log.read_text()


def test_sigterm_to_serve_alone_stops_it_too(tmp_path):
    """`docker stop` signals only the container's first process: serve passes it on. Started
    without the worker (compose's web service), so only nginx and the gunicorns run."""
    port = free_port()
    log = tmp_path / "serve.log"
    proc = start([sys.executable, "-m", "bnviz", "serve", "--no-worker"],
                 _env(tmp_path / "home", port), log)
    try:
        wait_answering(proc, f"http://127.0.0.1:{port}/healthz", log)
        line = _wait_serving_line(log)
        assert "health " in line and "worker" not in line
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(60) == 0
        deadline = time.monotonic() + 10
        while group_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_pids(proc.pid) == []
    finally:
        stop_group(proc)


def test_make_serve_serves_and_stops(tmp_path):
    """`make serve` (README) runs the same stack on BNVIZ_HOST:BNVIZ_PORT; SIGTERM to its
    group stops everything it started."""
    port = free_port()
    log = tmp_path / "make.log"
    env = _env(tmp_path / "home", port, PYTHON=sys.executable)
    proc = start(["make", "--no-print-directory", "serve"], env, log)
    try:
        wait_answering(proc, f"http://127.0.0.1:{port}/healthz", log)
        status, headers, _ = _request(f"http://127.0.0.1:{port}/")
        assert status == 200 and headers["Server"] == "nginx"
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
        deadline = time.monotonic() + 10
        while group_pids(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert group_pids(proc.pid) == []
        assert "bnviz serve: stopped" in log.read_text()
    finally:
        stop_group(proc)


def _serve_fails(env: dict[str, str]) -> tuple[int, list[str]]:
    """Run serve where it cannot start: its exit code and stderr lines (whatever it started,
    were it to start after all, is stopped)."""
    proc = subprocess.Popen([sys.executable, "-m", "bnviz", "serve"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        stop_group(proc)
    return proc.returncode, err.strip().splitlines()


def test_a_missing_nginx_is_one_line(tmp_path):
    env = _env(tmp_path / "home", free_port(), BNVIZ_NGINX=str(tmp_path / "no-nginx"),
               PATH=str(Path(sys.executable).parent))
    code, lines = _serve_fails(env)
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith("bnviz serve: BNVIZ_NGINX=") and "not an executable" in lines[0]


def test_nginx_not_found_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.delenv("BNVIZ_NGINX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(stack, "DEBIAN_NGINX", str(tmp_path / "nginx"))
    with pytest.raises(stack.ServeError, match="nginx not found.*apt-get install nginx"):
        stack.find_nginx()


def test_a_port_in_use_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        code, lines = _serve_fails(_env(tmp_path / "home", taken.getsockname()[1]))
    assert code == 2 and len(lines) == 1 and "cannot listen on 127.0.0.1:" in lines[0]


def test_a_bad_setting_is_one_line(tmp_path):
    env = _env(tmp_path / "home", free_port(), BNVIZ_RATE_PER_ADDRESS="many")
    code, lines = _serve_fails(env)
    assert code == 2 and len(lines) == 1 and "BNVIZ_RATE_PER_ADDRESS" in lines[0]


def test_the_rendered_config_is_valid_nginx(tmp_path, monkeypatch):
    """The template with every setting filled in passes `nginx -t` (the settings' values
    land where they belong)."""
    monkeypatch.setenv("BNVIZ_RATE_PER_ADDRESS", "7")
    monkeypatch.setenv("BNVIZ_JOBS_RATE_PER_ADDRESS", "3")
    monkeypatch.setenv("BNVIZ_WEB_TIMEOUT", "90")
    text = nginx.render_nginx_conf(tmp_path, [tmp_path / "a.sock", tmp_path / "b.sock"],
                                   "127.0.0.1", 8050, access_log=None)
    assert "@" not in text.replace("@too_", "").replace("@unavailable", "").replace(
        "@not_allowed", "")
    for name in ("a", "b"):  # one upstream of both gunicorns
        assert f"server unix:{tmp_path / name}.sock max_fails=1" in text
    assert "rate=7r/s" in text and "burst=14 nodelay" in text and "rate=3r/m" in text
    assert "proxy_read_timeout 100s" in text and "listen 127.0.0.1:8050" in text
    conf = tmp_path / "nginx.conf"
    conf.write_text(text)
    check = subprocess.run([stack.find_nginx(), "-e", "stderr", "-p", str(tmp_path), "-c",
                            str(conf), "-t", "-q"], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr


def test_a_worker_this_stack_did_not_start_is_not_adopted(tmp_path):
    """issue 30: a local worker already serving the home (started by `bnviz jobs submit`,
    say) would outlive the stack's stop: serve refuses to start, naming it, and leaves it."""
    home = tmp_path / "home"
    env = _env(home, free_port())
    worker = subprocess.Popen([sys.executable, "-m", "bnviz", "worker", "--idle-exit", "0"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    probe = "from bnviz.jobs.local import local_worker_pid; print(local_worker_pid())"
    try:
        deadline = time.monotonic() + 60
        while subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                             text=True).stdout.strip() != str(worker.pid):
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.3)
        code, lines = _serve_fails(env)
        assert code == 1 and any(f"did not start runs for this BNVIZ_HOME (pid {worker.pid})"
                                 in line for line in lines), lines
        assert worker.poll() is None  # left alone
    finally:
        stop_group(worker)


def test_the_stack_adopts_and_reaps_orphans():
    """issue 30: a job process whose worker was killed goes on in its own session; under the
    stack (a subreaper) it becomes the stack's child when its parent dies, and the stack's
    reaping collects it when it ends: no zombie. Shown with a process that takes the same
    role: its grandchild, orphaned, is re-parented to it and reaped."""
    code = """
import os, subprocess, sys, time
from bnviz.server import stack
assert stack.become_subreaper()
middle = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
    "'import time; time.sleep(1.5)'], start_new_session=True); print(p.pid, flush=True)"],
    stdout=subprocess.PIPE, text=True)
orphan = int(middle.stdout.readline())
middle.wait()
time.sleep(0.3)
ppid = int(next(l for l in open(f"/proc/{orphan}/status") if l.startswith("PPid:")).split()[1])
pid, status = os.waitpid(orphan, 0)  # the reaping Stack._reap does with waitpid(-1)
print(ppid == os.getpid(), pid == orphan, os.path.exists(f"/proc/{orphan}"))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.split() == ["True", "True", "False"], out.stdout + out.stderr


def test_the_workers_are_split_between_two_gunicorns():
    """Two gunicorns where there are two workers or more, the same workers in all."""
    assert stack.web_shares(1) == [1]
    assert stack.web_shares(2) == [1, 1] and stack.web_shares(5) == [3, 2]
    assert all(sum(stack.web_shares(n)) == n for n in range(1, 40))


def test_a_socket_is_published_private_to_nginx(tmp_path, monkeypatch):
    """The sockets' folder and a published socket, where nginx's workers run as this user
    (an unprivileged stack: 0700 and 0600) and where they are another (root's: nobody; 0710
    and 0660 with their group). The published path is a link to the socket gunicorn bound,
    which keeps its own path (gunicorn unlinks it when it stops)."""
    me = (os.geteuid(), os.getegid())
    others = [(me, 0o700, 0o600)]
    if os.geteuid() == 0:  # only root may hand a file to another group
        others.append(((65534, 65534), 0o710, 0o660))
    for i, (ids, folder_mode, socket_mode) in enumerate(others):
        monkeypatch.setattr(nginx, "nginx_worker_ids", lambda ids=ids: ids)
        run = tmp_path / str(i)
        run.mkdir()
        folder = nginx.private_socket_dir(run)
        assert stat.S_IMODE(folder.stat().st_mode) == folder_mode
        assert folder.stat().st_gid == ids[1] and folder.stat().st_uid == me[0]
        bound, published = folder / "g.boot.sock", folder / "g.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
            listening.bind(str(bound))
            listening.listen(1)
            nginx.publish_socket(bound, published)
            st = published.stat()
            assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == socket_mode
            assert st.st_gid == ids[1] and st.st_ino == bound.stat().st_ino
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(str(published))  # the link reaches the bound socket
