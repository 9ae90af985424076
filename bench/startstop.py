"""Start and stop of ``make run``'s server (issue 43, item 7): how long from gunicorn's
"Listening at" line until ``/`` and ``/healthz`` first answer 200, and from SIGTERM until the
server has exited; whether a stop printed "terminate called" or ended anything by SIGABRT.

Each run starts ``python -m bnviz serve --no-nginx`` (what ``make run`` runs: gunicorn alone,
``gunicorn.conf.py``, on ``BNVIZ_HOST:BNVIZ_PORT``) on a free loopback port, in its own
process group, with a temporary ``BNVIZ_HOME`` that the runs share (as a restarted server
does; ``--fresh-home`` gives each run its own). gunicorn's log lines are stamped as they
arrive on its stderr. Two probes, one per path, each send one GET at a time (a refused
connection is tried again 10 ms later; an accepted one waits in the backlog until a worker
answers it). Once both answered 200 (and ``--settle`` seconds more, by default none: the
workers' background threads, the lecture tour's precompute, are then still running), the
master's and the workers' memory is read (RSS and PSS, /proc), and the master is sent
SIGTERM; the stop lasts until the master has exited and its process group is empty.

``--group`` sends the SIGTERM to the whole process group instead (a terminal's Ctrl-C reaches
every process at once). ``--hog`` runs as many busy processes as there are cores beside the
server, and prints the load average at each start. Plain figures, never an assert on time;
the suite's checks are ``tests/server/test_start_stop.py`` and
``tests/service/test_preload.py``.

    .venv/bin/python bench/startstop.py [--runs 5] [--workers W] [--settle 0] [--group]
                                        [--hog] [--fresh-home]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.stackrun import group_pids  # noqa: E402  (the suite's reading of /proc)

PATHS = ("/", "/healthz")
#: Seconds a run may take to start (both paths 200) or to stop before it is given up on.
START_LIMIT, STOP_LIMIT = 180.0, 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loadavg() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a process in MB, from /proc/<pid>/smaps_rollup; (nan, nan) when gone."""
    values = {}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            parts = line.split()
            if parts[0] in ("Rss:", "Pss:"):
                values[parts[0]] = int(parts[1]) / 1024
    except OSError:
        return float("nan"), float("nan")
    return values.get("Rss:", float("nan")), values.get("Pss:", float("nan"))


class Log(threading.Thread):
    """Reads a stream line by line, stamping each (time.monotonic()) as it arrives, and keeps
    a copy in a file."""

    def __init__(self, stream, path: Path):
        super().__init__(daemon=True)
        self.stream, self.path = stream, path
        self.lines: list[tuple[float, str]] = []
        self.listening = threading.Event()

    def run(self) -> None:
        with open(self.path, "w") as copy:
            for raw in self.stream:
                line = raw.decode(errors="replace").rstrip("\n")
                self.lines.append((time.monotonic(), line))
                copy.write(line + "\n")
                if "Listening at" in line:
                    self.listening.set()

    def first(self, text: str) -> float | None:
        return next((t for t, line in self.lines if text in line), None)


def first_200(port: int, path: str, until: float, out: dict[str, float],
              bodies: dict[str, bytes]) -> None:
    """GET ``path`` one request at a time until it answers 200; ``out[path]`` = when,
    ``bodies[path]`` = what it said."""
    while time.monotonic() < until:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=max(1.0, until -
                                                                         time.monotonic()))
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            if response.status == 200:
                out[path], bodies[path] = time.monotonic(), body
                return
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        time.sleep(0.01)


def workers_of(master: int) -> list[int]:
    try:
        text = Path(f"/proc/{master}/task/{master}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def one_run(home: Path, workers: str | None, settle: float, keep: Path, group: bool) -> dict:
    """Start the server, time its first 200s, read its memory, stop it and time the stop."""
    port = free_port()
    env = dict(os.environ, BNVIZ_HOME=str(home), BNVIZ_HOST="127.0.0.1",
               BNVIZ_PORT=str(port))
    for name in ("BNVIZ_BROKER_URL", "BNVIZ_STORE_URL", "BNVIZ_BIND"):
        env.pop(name, None)
    if workers is not None:
        env["BNVIZ_WEB_WORKERS"] = workers
    started = time.monotonic()
    with open(keep / "stdout.log", "ab") as out:
        proc = subprocess.Popen([sys.executable, "-m", "bnviz", "serve", "--no-nginx"],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    log = Log(proc.stderr, keep / "stderr.log")
    log.start()
    row: dict = {}
    try:
        until = started + START_LIMIT
        answered: dict[str, float] = {}
        bodies: dict[str, bytes] = {}
        probes = [threading.Thread(target=first_200, args=(port, p, until, answered, bodies),
                                   daemon=True) for p in PATHS]
        for t in probes:
            t.start()
        for t in probes:
            t.join(START_LIMIT + 5)
        listening = log.first("Listening at")
        if listening is None or len(answered) < len(PATHS):
            row["failed"] = f"no start within {START_LIMIT:.0f} s (exit {proc.poll()})"
            return row
        row["listening"] = listening - started
        for p in PATHS:
            row[p] = answered[p] - listening
        row["start to /"] = answered["/"] - started
        try:
            row["health"] = json.loads(bodies["/healthz"]).get("status")
        except ValueError:
            row["health"] = "not JSON"
        time.sleep(settle)
        pids = workers_of(proc.pid)
        row["master_mb"] = memory_mb(proc.pid)
        row["worker_mb"] = [memory_mb(p) for p in pids]
        stopping = time.monotonic()
        if group:  # the whole process group, as a terminal's Ctrl-C reaches it
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(STOP_LIMIT)
        except subprocess.TimeoutExpired:
            row["failed"] = f"the master did not exit within {STOP_LIMIT:.0f} s"
            return row
        row["exit"] = time.monotonic() - stopping
        while group_pids(proc.pid) and time.monotonic() < stopping + STOP_LIMIT:
            time.sleep(0.02)
        row["stop"] = time.monotonic() - stopping
        row["code"] = proc.returncode
    finally:
        if proc.poll() is None or group_pids(proc.pid):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        log.join(10)
    text = [line for _, line in log.lines]
    row["terminate"] = sum("terminate called" in line for line in text)
    row["sigabrt"] = sum("SIGABRT" in line or "exited with code 134" in line for line in text) \
        + (row.get("code") == -signal.SIGABRT)
    row["left_running"] = sum("still running" in line for line in text)
    return row


def start_hogs(count: int) -> list[subprocess.Popen]:
    """``count`` busy processes (one core each), until stopped."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                             stdin=subprocess.DEVNULL) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for h in hogs:
        h.kill()
    for h in hogs:
        h.wait()


def spread(values: list[float]) -> str:
    if not values:
        return "no values"
    return (f"min {min(values):6.2f}  median {statistics.median(values):6.2f}  "
            f"max {max(values):6.2f}")


def report(rows: list[dict]) -> None:
    good = [r for r in rows if "failed" not in r]
    for r in rows:
        if "failed" in r:
            print(f"  failed run: {r['failed']}")
    print(f"\n{len(good)} of {len(rows)} runs; seconds:")
    for key, label in (("listening", "start -> Listening at"),
                       ("/", "Listening at -> first 200 on /"),
                       ("/healthz", "Listening at -> first 200 on /healthz"),
                       ("start to /", "start -> first 200 on /"),
                       ("exit", "SIGTERM -> master exited"),
                       ("stop", "SIGTERM -> process group empty")):
        print(f"  {label:<40} {spread([r[key] for r in good if key in r])}")
    masters = [r["master_mb"] for r in good]
    workers = [w for r in good for w in r["worker_mb"]]
    if masters and workers:
        print("memory before the stop, MB (median over runs):")
        print(f"  master     RSS {statistics.median(m[0] for m in masters):7.0f}  "
              f"PSS {statistics.median(m[1] for m in masters):7.0f}")
        print(f"  each worker RSS {statistics.median(w[0] for w in workers):7.0f}  "
              f"PSS {statistics.median(w[1] for w in workers):7.0f}")
        totals = [r["master_mb"][1] + sum(w[1] for w in r["worker_mb"]) for r in good]
        print(f"  all PSS     {statistics.median(totals):7.0f}")
    codes = sorted({r.get("code") for r in good})
    print(f"exit codes {codes}; 'terminate called' lines "
          f"{sum(r['terminate'] for r in rows if 'terminate' in r)}; SIGABRT "
          f"{sum(r['sigabrt'] for r in rows if 'sigabrt' in r)}; stops with a worker's "
          f"thread still running {sum(bool(r.get('left_running')) for r in good)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workers", help="BNVIZ_WEB_WORKERS (default: the server's)")
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds between the first 200s and SIGTERM")
    parser.add_argument("--hog", action="store_true",
                        help="as many busy processes as cores beside the server")
    parser.add_argument("--group", action="store_true",
                        help="SIGTERM to the whole process group, not the master alone")
    parser.add_argument("--fresh-home", action="store_true",
                        help="a new BNVIZ_HOME for each run (caches computed again)")
    args = parser.parse_args()
    hogs = start_hogs(os.cpu_count() or 1) if args.hog else []
    base = Path(tempfile.mkdtemp(prefix="bnviz-startstop-"))
    rows: list[dict] = []
    print(f"bnviz serve --no-nginx, {args.runs} runs; cores {os.cpu_count()}, "
          f"workers {args.workers or 'default'}, hog {len(hogs)} processes")
    try:
        if hogs:
            time.sleep(2)
        for i in range(args.runs):
            home = base / (f"home-{i}" if args.fresh_home else "home")
            keep = base / f"run-{i}"
            keep.mkdir()
            load = loadavg()
            row = one_run(home, args.workers, args.settle, keep, args.group)
            rows.append(row)
            if "failed" in row:
                print(f"run {i + 1}: {row['failed']} (load average {load}; logs in {keep})")
                continue
            print(f"run {i + 1}: load average {load}; listening {row['listening']:.2f} s "
                  f"after the start, then / {row['/']:.2f} s, /healthz {row['/healthz']:.2f} s "
                  f"({row['health']}); stop {row['stop']:.2f} s (exit {row['code']}, "
                  f"terminate {row['terminate']}, SIGABRT {row['sigabrt']})")
    except KeyboardInterrupt:
        print("interrupted")
    finally:
        stop_hogs(hogs)
        report(rows)
        if any("failed" in r or r.get("terminate") or r.get("sigabrt") for r in rows):
            print(f"logs kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
