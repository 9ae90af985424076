"""Load: a lecture hall of users moving the explorer's sliders at once.

Starts ``make run``'s gunicorn command (``gunicorn -c gunicorn.conf.py bnviz.web.app:server``) on a
free loopback port (or uses ``--url``), then runs N simulated users (default 30) for a
bounded time. Each user is a thread that, like a student dragging a slider, moves the mu or
the sigma slider one step, POSTs the explorer's figure callback to ``/_dash-update-component``
(the request the browser sends; its inputs are read from ``/_dash-dependencies`` and filled with
the page's default values), waits for the answer, pauses 0.2-0.6 s, and moves again. Each user
has its own data seed (``--shared``: all on the defaults), so the server's cache of 32 recent
settings rarely helps: this is the harsh case.

Prints requests/s, median / p90 / p99 latency and errors, for one user first (the baseline,
same server, same process) and then for N users, with the ratio of the two. Goal (issue 7):
no errors and p99 < 500 ms at 30 users on the 2-core machine with the default settings.

    .venv/bin/python bench/load.py [--users 30] [--seconds 30] [--workers W] [--threads T]
                                   [--stack]

``--stack`` runs the same hall behind ``bnviz serve`` (nginx in front of gunicorn, the
Dockerfile's command). Two more scenarios (issue 15, item 3; ``bench/load_stack.py``, the
requests in ``bench/heavy_views.py``) run behind that stack by default
(``--no-stack``: bare gunicorn) and measure /healthz, probed every 0.5 s, alone and under load:

    .venv/bin/python bench/load.py --scenario slow [--clients 80] [--seconds 20]
    .venv/bin/python bench/load.py --scenario heavy [--clients 10] [--seconds 20]

``slow``: 80 connections trickle request headers, one byte every 1-2 s, never finishing;
``heavy``: 10 clients POST the heaviest views at their caps (explorer, layers view, jitter,
Figure 7, Ergen's training) back to back. Plain figures, no timed asserts.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from loadkit import ROOT, figure_request, free_port


def _user(host: str, port: int, payload: dict, mu_i: int, sigma_i: int, seed: int,
          shared: bool, stop: float, out: list, errors: list) -> None:
    rng = random.Random(seed)
    body = json.loads(json.dumps(payload))
    if not shared:
        from bnviz.web.callbacks.explorer import ids

        for entry in body["inputs"]:
            if entry["id"] == ids.DATA_SEED:
                entry["value"] = seed
    mu, sigma = 1.0, 0.0
    conn = http.client.HTTPConnection(host, port, timeout=60)
    while time.monotonic() < stop:
        if rng.random() < 0.5:
            mu = min(1.5, max(0.0, round(mu + rng.choice((-0.05, 0.05)), 2)))
            body["inputs"][mu_i]["value"], body["changedPropIds"] = mu, [
                f"{body['inputs'][mu_i]['id']}.value"]
        else:
            sigma = min(2.0, max(-2.0, round(sigma + rng.choice((-0.1, 0.1)), 1)))
            body["inputs"][sigma_i]["value"], body["changedPropIds"] = sigma, [
                f"{body['inputs'][sigma_i]['id']}.value"]
        data = json.dumps(body).encode()
        t0 = time.perf_counter()
        try:
            conn.request("POST", "/_dash-update-component", data,
                         {"Content-Type": "application/json"})
            response = conn.getresponse()
            text = response.read()
            if response.status != 200 or b"explorer-graph" not in text:
                errors.append(f"HTTP {response.status}: {text[:120]!r}")
        except (OSError, http.client.HTTPException) as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=60)
            continue
        out.append(time.perf_counter() - t0)
        time.sleep(rng.uniform(0.2, 0.6))
    conn.close()


def run_users(base: str, users: int, seconds: float, shared: bool) -> dict:
    host, port = base.split("//")[1].split(":")
    payload, mu_i, sigma_i = figure_request(base)
    latencies: list[float] = []
    errors: list[str] = []
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=_user, args=(host, int(port), payload, mu_i, sigma_i,
                                                    1000 + u, shared, stop, latencies, errors))
               for u in range(users)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat = sorted(latencies)

    def q(p: float) -> float:
        return 1000 * lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

    return {"users": users, "requests": len(lat), "rps": len(lat) / wall,
            "median_ms": 1000 * statistics.median(lat) if lat else float("nan"),
            "p90_ms": q(0.90), "p99_ms": q(0.99), "max_ms": 1000 * lat[-1] if lat else 0,
            "errors": len(errors), "first_error": errors[0] if errors else ""}


def _serve(workers: str | None, threads: str | None) -> tuple[str, subprocess.Popen]:
    port = free_port()
    env = dict(os.environ, BNVIZ_BIND=f"127.0.0.1:{port}", BNVIZ_ACCESS_LOG="0",
               BNVIZ_HOME=os.environ.get("BNVIZ_HOME", str(ROOT / ".bench-home")))
    if workers:
        env["BNVIZ_WEB_WORKERS"] = workers
    if threads:
        env["BNVIZ_WEB_THREADS"] = threads
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                             "bnviz.web.app:server"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(base + "/healthz", timeout=2).read()
            return base, proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("gunicorn did not start") from None
            time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", choices=("hall", "slow", "heavy"), default="hall")
    ap.add_argument("--users", type=int, default=30)
    ap.add_argument("--clients", type=int, default=None, help="slow: 80, heavy: 10")
    ap.add_argument("--seconds", type=float, default=None, help="hall: 30, slow/heavy: 20")
    ap.add_argument("--url", default=None, help="an already running server")
    ap.add_argument("--stack", action=argparse.BooleanOptionalAction, default=None,
                    help="behind bnviz serve (nginx); default: hall no, slow/heavy yes")
    ap.add_argument("--rate", type=int, default=None, help="BNVIZ_RATE_PER_ADDRESS (stack)")
    ap.add_argument("--probe-timeout", type=float, default=30.0, help="seconds")
    ap.add_argument("--workers", default=None, help="BNVIZ_WEB_WORKERS (default: config)")
    ap.add_argument("--threads", default=None, help="BNVIZ_WEB_THREADS (default: config)")
    ap.add_argument("--shared", action="store_true", help="every user on the default data")
    args = ap.parse_args()
    if args.scenario != "hall":
        import load_stack

        args.seconds = args.seconds or 20.0
        load_stack.run_scenario(args)
        return
    args.seconds = args.seconds or 30.0
    proc = None
    base = args.url
    if base is None and args.stack:
        import load_stack

        home = ROOT / ".bench-home" / "stack"
        home.mkdir(parents=True, exist_ok=True)
        base, proc, _ = load_stack.start_server(True, home, args.workers, args.threads,
                                                args.rate)
    elif base is None:
        base, proc = _serve(args.workers, args.threads)
    try:
        print(f"server {base}{' (bnviz serve: nginx + gunicorn)' if args.stack else ''}  "
              f"cores {os.cpu_count()}  load {os.getloadavg()[0]:.2f}")
        run_users(base, 2, 5, args.shared)  # warm-up: imports, first figures
        rows = [run_users(base, 1, min(args.seconds, 15), args.shared),
                run_users(base, args.users, args.seconds, args.shared)]
        print(f"{'users':>5} {'requests':>8} {'req/s':>7} {'median':>8} {'p90':>8} {'p99':>8} "
              f"{'max':>8} {'errors':>6}")
        for r in rows:
            print(f"{r['users']:>5} {r['requests']:>8} {r['rps']:>7.1f} {r['median_ms']:>6.0f}ms"
                  f" {r['p90_ms']:>6.0f}ms {r['p99_ms']:>6.0f}ms {r['max_ms']:>6.0f}ms "
                  f"{r['errors']:>6}")
            if r["first_error"]:
                print("   first error:", r["first_error"])
        base_row, load_row = rows
        print(f"p99 at {args.users} users / median at 1 user: "
              f"{load_row['p99_ms'] / base_row['median_ms']:.1f}x;  goal p99 < 500 ms: "
              f"{'met' if load_row['p99_ms'] < 500 and not load_row['errors'] else 'NOT met'}"
              f"  (load {os.getloadavg()[0]:.2f})")
    finally:
        if proc is not None and args.stack:
            load_stack.stop_server(proc)
        elif proc is not None:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
