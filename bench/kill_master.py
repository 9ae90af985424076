"""``kill -9`` of a dashboard gunicorn's master under load (issue 42, item 5): how long until
``GET /`` answers 200 again, and what every answer meanwhile was.

Starts ``bnviz serve --no-worker`` (nginx in front of the dashboard's gunicorns, as ``make
serve`` and the container run it; ``bench/load_stack.py``'s server) on a free loopback port,
puts N heavy clients on it (default 10, the heaviest views of ``bench/heavy_views.py`` back to
back, from one address), and after ``--before`` seconds kills the first gunicorn master with
SIGKILL. A probe GETs ``/`` every 0.1 s, each on a fresh connection in its own thread (a slow
answer does not delay the next), from ``--before`` seconds before the kill to ``--after``
seconds after it. Prints the probe's answers before and after the kill, the last one that was
not a 200, and when the stack said the master answered again. The server is stopped as a
group at the end. Plain figures, no asserts; the suite's bounded check is
``tests/server/test_stack.py::test_a_killed_gunicorn_master_costs_no_502``.

    .venv/bin/python bench/kill_master.py [--clients 10] [--before 10] [--after 60]
                                          [--workers W]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from heavy_views import heavy_client, heavy_requests
from load_stack import loadavg, start_server, stop_server, summary


def _probe(host: str, port: int, start: float, stop: float, out: list) -> None:
    """GET / every 0.1 s until ``stop``; appends (sent, status or error, seconds)."""

    def one(sent: float) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        try:
            conn.request("GET", "/")
            response = conn.getresponse()
            response.read()
            status: object = response.status
        except (OSError, http.client.HTTPException) as exc:
            status = type(exc).__name__
        finally:
            conn.close()
        out.append((sent - start, status, time.monotonic() - sent))

    threads = []
    while time.monotonic() < stop:
        threads.append(threading.Thread(target=one, args=(time.monotonic(),), daemon=True))
        threads[-1].start()
        time.sleep(0.1)
    for t in threads:
        t.join(65)


def _master(log: Path) -> int:
    line = next(x for x in log.read_text().splitlines() if "bnviz serve: serving" in x)
    return int(re.search(r"\(gunicorn(?:-1)? (\d+)", line).group(1))


def run(args: argparse.Namespace) -> None:
    print(f"kill -9 of a gunicorn master, {args.clients} heavy clients; cores {os.cpu_count()}, "
          f"load average {loadavg()}")
    home = Path(tempfile.mkdtemp(prefix="bnviz-bench-"))
    proc = None
    try:
        base, proc, log = start_server(True, home, args.workers)
        host, port = base.split("//")[1].split(":")
        kinds = heavy_requests(base)
        rows: list = []
        halt = threading.Event()
        start = time.monotonic()
        killed = start + args.before
        stop = killed + args.after
        clients = [threading.Thread(target=heavy_client, daemon=True, args=(
            host, int(port), kinds, c, 100 + c, stop, rows, halt)) for c in range(args.clients)]
        for t in clients:
            t.start()
        answers: list = []
        probe = threading.Thread(target=_probe, args=(host, int(port), killed, stop, answers))
        probe.start()
        time.sleep(max(0.0, killed - time.monotonic()))
        master = _master(log)
        os.kill(master, signal.SIGKILL)
        print(f"killed gunicorn master {master} at t=0 (load average {loadavg()})")
        probe.join()
        halt.set()
        for t in clients:
            t.join(130)
        _report(answers, rows, log)
    finally:
        if proc is not None:
            stop_server(proc)
        shutil.rmtree(home, ignore_errors=True)
        print(f"load average at the end {loadavg()}")


def _report(answers: list, rows: list, log: Path) -> None:
    answers.sort(key=lambda a: a[0])
    for label, part in (("before the kill", [a for a in answers if a[0] < 0]),
                        ("after the kill", [a for a in answers if a[0] >= 0])):
        lat = summary([s for _, status, s in part if status == 200])
        print(f"GET / {label:<16} {len(part):>5} probes: "
              f"{', '.join(f'{k} x{v}' for k, v in Counter(s for _, s, _ in part).items())}; "
              f"200s median {lat['median_ms']:.0f} ms, p90 {lat['p90_ms']:.0f} ms, "
              f"max {lat['max_ms']:.0f} ms")
    bad = [a for a in answers if a[0] >= 0 and a[1] != 200]
    if bad:
        print(f"not 200 after the kill: from t={bad[0][0]:.1f} s to t={bad[-1][0]:.1f} s; "
              f"GET / answers 200 again from t={bad[-1][0] + 0.1:.1f} s")
    else:
        print("not 200 after the kill: none (GET / answered 200 throughout)")
    said = [x.split("bnviz serve: ", 1)[1] for x in log.read_text().splitlines()
            if "bnviz serve: gunicorn" in x]
    for line in said:
        print(f"  stack: {line}")
    print("heavy clients' outcomes: " + ", ".join(
        f"{k} {v}" for k, v in Counter(o for _, o, _ in rows).most_common()))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--before", type=float, default=10.0, help="seconds of load before")
    ap.add_argument("--after", type=float, default=60.0, help="seconds watched after")
    ap.add_argument("--workers", default=None, help="BNVIZ_WEB_WORKERS (default: config)")
    run(ap.parse_args())
