"""Load behind the deployed stack (issue 15, item 3): does /healthz still answer within 2 s
while 80 clients trickle request headers (slowloris) or 20 clients request the heaviest views?

Run by ``bench/load.py --scenario slow|heavy``. The server is ``python -m bnviz serve
--no-worker`` (nginx in front of gunicorn, as ``make serve`` and the container run it), or with
``--no-stack`` the bare ``gunicorn -c gunicorn.conf.py bnviz.web.app:server``, on a free
loopback port with a temporary ``BNVIZ_HOME``, in its own process group, stopped as a group at
the end (also on Ctrl-C or an error). A probe GETs /healthz every 0.5 s on a fresh connection,
alone first (the baseline, same server), then for the whole loaded run. The load comes from one
address, as a hall behind one NAT does: nginx's per-address limits apply, and 429s are counted.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from heavy_views import MESSAGES, SIZES, heavy_client, heavy_requests, post
from loadkit import figure_request, free_port

from tests.stackrun import start, stop_group

PROBE_EVERY = 0.5  # seconds between two /healthz probes
GOAL = 2.0  # seconds: /healthz must answer within this under load (issue 15)


# ---- the server -------------------------------------------------------------------------

def start_server(stack: bool, home: Path, workers: str | None = None,
                 threads: str | None = None, rate: int | None = None,
                 ) -> tuple[str, subprocess.Popen, Path]:
    """``bnviz serve --no-worker`` (stack) or bare gunicorn on a free loopback port, in its own
    process group; returns (base URL, process, its log) once /healthz answers."""
    port = free_port()
    env = dict(os.environ, BNVIZ_HOME=str(home), BNVIZ_HOST="127.0.0.1",
               BNVIZ_PORT=str(port))
    for name, value in (("BNVIZ_WEB_WORKERS", workers), ("BNVIZ_WEB_THREADS", threads),
                        ("BNVIZ_RATE_PER_ADDRESS", rate)):
        if value is not None:
            env[name] = str(value)
    if stack:
        argv = [sys.executable, "-m", "bnviz", "serve", "--no-worker"]
    else:
        env["BNVIZ_BIND"], env["BNVIZ_ACCESS_LOG"] = f"127.0.0.1:{port}", "0"  # as the hall
        argv = [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "bnviz.web.app:server"]
    log = home / "server.log"
    proc = start(argv, env, log)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while True:
        try:
            urllib.request.urlopen(base + "/healthz", timeout=5).read()
            return base, proc, log
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop_server(proc)
                tail = log.read_text(errors="replace")[-2000:]
                raise SystemExit(f"the server did not start:\n{tail}") from None
            time.sleep(0.3)


def stop_server(proc: subprocess.Popen) -> None:
    """SIGTERM to the supervisor (bnviz serve stops nginx and gunicorn gracefully), then
    whatever is left of the process group is stopped too."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            pass
    stop_group(proc, seconds=20)


# ---- the /healthz probe ---------------------------------------------------------------------

class Probe(threading.Thread):
    """GET /healthz every PROBE_EVERY s, each on a fresh connection in its own thread (a slow
    answer does not delay the next probe, as with Docker's HEALTHCHECK), until stopped;
    records each answer's latency and each failure (no answer within ``timeout``, refused)."""

    def __init__(self, host: str, port: int, timeout: float,
                 send: Callable[[http.client.HTTPConnection], None] | None = None):
        super().__init__(daemon=True)
        self.host, self.port, self.timeout = host, port, timeout
        self.send = send or (lambda conn: conn.request("GET", "/healthz"))
        self.halt = threading.Event()
        self.latencies: list[float] = []
        self.failures: Counter = Counter()
        self.sent: list[threading.Thread] = []

    def _one(self) -> None:
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.send(conn)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                self.failures[f"HTTP {response.status}"] += 1
            self.latencies.append(time.perf_counter() - t0)
        except (OSError, http.client.HTTPException) as exc:
            timed_out = isinstance(exc, TimeoutError)
            self.failures[f"no answer in {self.timeout:.0f} s" if timed_out
                          else type(exc).__name__] += 1
        finally:
            conn.close()

    def run(self) -> None:
        while not self.halt.is_set():
            self.sent.append(threading.Thread(target=self._one, daemon=True))
            self.sent[-1].start()
            self.halt.wait(PROBE_EVERY)

    def stop(self) -> dict:
        self.halt.set()
        self.join()
        for t in self.sent:  # the probes in flight get their time-out
            t.join(self.timeout + 5)
        return summary(self.latencies, self.failures)


def summary(latencies: list[float], failures: Counter | None = None) -> dict:
    lat = sorted(latencies)
    failures = failures or Counter()

    def q(p: float) -> float:
        return 1000 * lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

    return {"n": len(lat) + sum(failures.values()), "answered": len(lat),
            "median_ms": 1000 * statistics.median(lat) if lat else float("nan"),
            "p90_ms": q(0.90), "max_ms": 1000 * lat[-1] if lat else float("nan"),
            "over_goal": sum(1 for t in lat if t > GOAL), "failures": dict(failures)}


def probe_for(host: str, port: int, seconds: float, timeout: float) -> dict:
    probe = Probe(host, port, timeout)
    probe.start()
    time.sleep(seconds)
    return probe.stop()


def ms(seconds_ms: float) -> str:
    return "       -" if seconds_ms != seconds_ms else f"{seconds_ms:>6.0f}ms"  # nan: none


def print_probes(rows: list[tuple[str, dict]]) -> None:
    print(f"{'/healthz probe':<28} {'probes':>6} {'median':>8} {'p90':>8} {'max':>8} "
          f"{'>2 s':>5}  failures")
    for name, r in rows:
        print(f"{name:<28} {r['n']:>6} {ms(r['median_ms'])} {ms(r['p90_ms'])} "
              f"{ms(r['max_ms'])} {r['over_goal']:>5}  "
              f"{', '.join(f'{k} x{v}' for k, v in r['failures'].items()) or 'none'}")
    (_, base), (_, loaded) = rows
    ok = loaded["answered"] == loaded["n"] and not loaded["over_goal"] and not loaded["failures"]
    if loaded["answered"]:
        print(f"loaded / alone: median {loaded['median_ms'] / base['median_ms']:.1f}x, max "
              f"{loaded['max_ms'] / base['max_ms']:.1f}x")
    print(f"goal, every /healthz answered within 2 s: {'met' if ok else 'NOT met'}")


# ---- slow clients (slowloris) -------------------------------------------------------------

class SlowClients(threading.Thread):
    """N connections, each sending a request line and then its headers one byte every 1-2 s,
    never finishing them; a connection the server closes is opened again at once (as an
    attacker would). Counts connections opened, closed by the server, and their lifetimes."""

    TRICKLE = b"X-Slow: slowly\r\n"

    def __init__(self, host: str, port: int, n: int):
        super().__init__(daemon=True)
        self.host, self.port, self.n = host, port, n
        self.halt = threading.Event()
        self.opened = self.closed_by_server = self.connect_errors = 0
        self.lifetimes: list[float] = []

    def _open(self) -> tuple[socket.socket, float, int] | None:
        try:
            s = socket.create_connection((self.host, self.port), timeout=5)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            self.connect_errors += 1
            return None
        self.opened += 1
        return s, time.monotonic(), 0

    def run(self) -> None:
        rng = random.Random(0)
        conns: list = [None] * self.n
        due = [0.0] * self.n
        while not self.halt.is_set():
            now = time.monotonic()
            for i in range(self.n):
                if conns[i] is None:
                    conns[i] = self._open()
                    due[i] = now + rng.uniform(1, 2)
                    continue
                s, born, sent = conns[i]
                readable, _, _ = select.select([s], [], [], 0)
                try:
                    if readable:  # the server answered (408, 400) or closed: it gave up
                        s.recv(4096)
                        raise ConnectionAbortedError
                    if now >= due[i]:
                        s.send(self.TRICKLE[sent % len(self.TRICKLE):][:1])
                        conns[i], due[i] = (s, born, sent + 1), now + rng.uniform(1, 2)
                except OSError:
                    self.closed_by_server += 1
                    self.lifetimes.append(now - born)
                    s.close()
                    conns[i] = None
            self.halt.wait(0.05)
        for c in conns:
            if c is not None:
                c[0].close()

    def report(self) -> str:
        life = (f" (median lifetime {statistics.median(self.lifetimes):.1f} s)"
                if self.lifetimes else "")
        return (f"slow clients: {self.n} at once, {self.opened} connections opened, "
                f"{self.closed_by_server} closed by the server{life}, "
                f"{self.connect_errors} connects failed")


def print_heavy(rows: list[tuple[str, str, float]], title: str) -> None:
    print(f"{title:<28} {'count':>5} {'median':>8} {'p90':>8} {'max':>8}  outcomes")
    by: dict[str, list] = {}
    for name, outcome, dt in rows:
        by.setdefault(name, []).append((outcome, dt))
    by["all"] = [(o, dt) for _, o, dt in rows]
    for name, items in by.items():
        r = summary([dt for _, dt in items])
        outcomes = Counter(o for o, _ in items)
        print(f"{name:<28} {len(items):>5} {ms(r['median_ms'])} {ms(r['p90_ms'])} "
              f"{ms(r['max_ms'])}  {', '.join(f'{k} {v}' for k, v in outcomes.items())}")


# ---- the scenarios --------------------------------------------------------------------------

def loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def run_scenario(args) -> None:
    stack = args.stack is not False
    server = args.url or ("bnviz serve --no-worker (nginx + gunicorn)" if stack
                          else "bare gunicorn")
    print(f"scenario {args.scenario}, {server}; cores {os.cpu_count()}, load average "
          f"{loadavg()}")
    if args.rate:
        print(f"BNVIZ_RATE_PER_ADDRESS={args.rate} for this run (default 300 r/s per address)")
    home = Path(tempfile.mkdtemp(prefix="bnviz-bench-"))
    proc = None
    try:
        base = args.url
        if base is None:
            base, proc, _ = start_server(stack, home, args.workers, args.threads, args.rate)
        host, port = base.split("//")[1].split(":")
        if args.scenario == "slow":
            _slow(host, int(port), args)
        else:
            _heavy(base, host, int(port), args)
    except KeyboardInterrupt:
        print("interrupted: stopping the server")
    finally:
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(home, ignore_errors=True)
        print(f"load average at the end {loadavg()}")


def _slow(host: str, port: int, args) -> None:
    n = args.clients or 80
    alone = probe_for(host, port, min(args.seconds, 10), args.probe_timeout)
    clients = SlowClients(host, port, n)
    clients.start()
    try:
        time.sleep(2)  # the slow clients connect and start trickling
        loaded = probe_for(host, port, args.seconds, args.probe_timeout)
    finally:
        clients.halt.set()
        clients.join(10)
    print(clients.report())
    print_probes([("alone", alone), (f"{n} slow clients", loaded)])


def _light_probes(base: str, host: str, port: int, timeout: float) -> dict[str, Probe]:
    """The three light requests a person waits for while heavy work runs (issue 30): the
    health check, the explorer page (``GET /``) and a default explorer step (the figure
    callback with the default controls and a fresh mu each time, so no cache answers it)."""
    payload, mu_i, _ = figure_request(base)
    rng = random.Random(7)

    def step(conn: http.client.HTTPConnection) -> None:
        body = json.loads(json.dumps(payload))
        body["inputs"][mu_i]["value"] = round(rng.uniform(0.0, 1.5), 6)
        body["changedPropIds"] = [f"{body['inputs'][mu_i]['id']}.value"]
        conn.request("POST", "/_dash-update-component", json.dumps(body).encode(),
                     {"Content-Type": "application/json"})

    return {"/healthz": Probe(host, port, timeout),
            "GET /": Probe(host, port, timeout, lambda conn: conn.request("GET", "/")),
            "explorer step (default)": Probe(host, port, timeout, step)}


def _run_probes(probes: dict[str, Probe], seconds: float) -> dict[str, dict]:
    for probe in probes.values():
        probe.start()
    time.sleep(seconds)
    return {name: probe.stop() for name, probe in probes.items()}


#: Issue 30's goals under heavy load: p90 of these light requests, in seconds.
LIGHT_GOALS = {"/healthz": 1.0, "GET /": 2.0, "explorer step (default)": 2.0}


def print_light(alone: dict[str, dict], loaded: dict[str, dict], clients: int) -> None:
    print(f"{'light request':<28} {'load':>9} {'n':>5} {'median':>8} {'p90':>8} {'max':>8}  "
          "failures")
    verdicts = []
    for name in alone:
        for label, r in (("alone", alone[name]), (f"{clients} heavy", loaded[name])):
            print(f"{name:<28} {label:>9} {r['n']:>5} {ms(r['median_ms'])} {ms(r['p90_ms'])} "
                  f"{ms(r['max_ms'])}  "
                  f"{', '.join(f'{k} x{v}' for k, v in r['failures'].items()) or 'none'}")
        r = loaded[name]
        ok = r["answered"] == r["n"] and r["p90_ms"] < 1000 * LIGHT_GOALS[name]
        verdicts.append(f"{name} p90 < {LIGHT_GOALS[name]:g} s: {'met' if ok else 'NOT met'}"
                        f" ({r['p90_ms'] / max(alone[name]['median_ms'], 1e-9):.1f}x its "
                        "median alone)")
    for line in verdicts:
        print("goal,", line)


def _heavy(base: str, host: str, port: int, args) -> None:
    n = args.clients or 10
    kinds = heavy_requests(base)
    alone_rows: list = []
    conn = http.client.HTTPConnection(host, port, timeout=120)
    rng = random.Random(1)
    for name, make in kinds.items():  # warm-up, then each view alone: its own baseline
        post(conn, make(rng))
        for _ in range(2):
            t0 = time.perf_counter()
            alone_rows.append((name, post(conn, make(rng)), time.perf_counter() - t0))
    conn.close()
    print_heavy(alone_rows, "heavy views alone")
    MESSAGES.clear()
    SIZES.clear()
    alone = _run_probes(_light_probes(base, host, port, args.probe_timeout),
                        min(args.seconds, 10))
    rows: list = []
    stop, halt = time.monotonic() + args.seconds, threading.Event()
    threads = [threading.Thread(target=heavy_client, daemon=True, args=(
        host, port, kinds, c, 100 + c, stop, rows, halt)) for c in range(n)]
    for t in threads:
        t.start()
    try:
        loaded = _run_probes(_light_probes(base, host, port, args.probe_timeout), args.seconds)
        for t in threads:
            t.join()
    finally:
        halt.set()
    print_heavy(rows, f"{n} heavy clients, no pause")
    for text, count in MESSAGES.most_common(3):
        print(f"   message x{count}: {text}")
    if SIZES:
        print(f"largest answer: {max(SIZES.values()) / 1e6:.2f} MB on the wire ("
              + ", ".join(f"{k} {v / 1e3:.0f} kB" for k, v in SIZES.most_common(3)) + ")")
    print_light(alone, loaded, n)
