"""The hall answers under a hall's load (issue 46, item 6): the p90 of ``/`` while 50 and then
200 phones tap, on ``make run``'s gunicorn (several web processes, one BNVIZ_HOME), with the
projector polling the taps every second as assets/hall.js does.

Each phone is a thread with its own client cookie (the phone page's), all on one address as a
hall behind one NAT is: it opens the phone page, then taps every ``--gap`` seconds (a student
changing their answer) for ``--seconds``. Meanwhile one client GETs ``/`` in a loop. Printed
per hall size: the taps sent and their statuses, the projector's last count, the ``/`` GETs'
median and p90, and the load average (this 2-core machine runs the phones too: the numbers
are an upper bound of a server's own). No assert: timings vary with the machine's load.

    .venv/bin/python bench/hall.py [--phones 50 200] [--seconds 10] [--workers 2]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter

from loadkit import ROOT, free_port

from bnviz.lecture.hall import hall_id

SESSION = "benchhallsession0001"


def serve(workers: int, home: str) -> tuple[int, subprocess.Popen]:
    """``make run``'s gunicorn on loopback (its own process group); the port."""
    port = free_port()
    env = dict(os.environ, BNVIZ_BIND=f"127.0.0.1:{port}", BNVIZ_ACCESS_LOG="0",
               BNVIZ_HOME=home, BNVIZ_WEB_WORKERS=str(workers), BNVIZ_PRECOMPUTE_TOUR="0")
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py",
                             "bnviz.web.app:server"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
            return port, proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise SystemExit("gunicorn did not start") from None
            time.sleep(0.3)


def call(port: int, method: str, path: str, body: dict | None = None,
         cookie: str | None = None) -> tuple[int, dict, str | None]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        headers = {"Content-Type": "application/json"} | ({"Cookie": cookie} if cookie else {})
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        r = conn.getresponse()
        raw = r.read()
        data = json.loads(raw) if r.getheader("Content-Type", "").startswith(
            "application/json") else {}
        return r.status, data, r.getheader("Set-Cookie")
    finally:
        conn.close()


def hall(port: int, phones: int, seconds: float, gap: float) -> None:
    api = f"/api/lecture/hall/{SESSION}"
    assert call(port, "POST", f"{api}/question", {"step": 2, "x": [-3, 3], "y": [-3, 3]})[0] == 200
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    stop = threading.Event()
    page_times: list[float] = []
    counts: list[int] = []

    def phone(i: int) -> None:
        cookie = call(port, "GET", f"/hall/{hall_id(SESSION)}")[2].split(";")[0]
        k = 0
        while not stop.is_set():
            x, y = ((i * 37 + k) % 60) / 10 - 3, ((i * 11 + 3 * k) % 60) / 10 - 3
            status = call(port, "POST", f"/api/lecture/hall/phone/{hall_id(SESSION)}/taps",
                          {"x": x, "y": y}, cookie)[0]
            with lock:
                statuses[status] += 1
            k += 1
            stop.wait(gap)

    def browser() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            call(port, "GET", "/")
            page_times.append(time.perf_counter() - start)

    def projector() -> None:
        while not stop.is_set():
            counts.append(call(port, "GET", api)[1].get("count", -1))
            stop.wait(1.0)

    threads = [threading.Thread(target=phone, args=(i,)) for i in range(phones)]
    threads += [threading.Thread(target=browser), threading.Thread(target=projector)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    final = call(port, "GET", api)[1]["count"]
    call(port, "POST", f"{api}/close", {})
    lat = sorted(page_times)
    p90 = lat[int(0.9 * (len(lat) - 1))] if lat else float("nan")
    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    fives = sum(n for s, n in statuses.items() if s >= 500)
    print(f"{phones:4d} phones, {seconds:g} s: taps {sum(statuses.values())} "
          f"({dict(sorted(statuses.items()))}, 5xx {fives}); projector's count {final}; "
          f"/ GETs {len(lat)}: median {1000 * statistics.median(lat):.0f} ms, "
          f"p90 {1000 * p90:.0f} ms; load average {load}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--phones", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--gap", type=float, default=1.2, help="seconds between a phone's taps")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bnviz-hall-bench-") as home:
        port, proc = serve(args.workers, home)
        try:
            print(f"gunicorn, {args.workers} web processes, on 127.0.0.1:{port}; load average "
                  f"before: {' '.join(f'{v:.1f}' for v in os.getloadavg())}", flush=True)
            for phones in args.phones:
                hall(port, phones, args.seconds, args.gap)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
