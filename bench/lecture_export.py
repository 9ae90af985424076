""""Export all" cold and warm, for bench/lecture.py: the lecture page's button in the browser,
from the click to the zip's answer (the status line that says what the zip holds, written
with the download).

Cold is an export with no stored zip: the server's process is pointed at a BNVIZ_HOME of its
own for the measure (a new jobs store, the local job worker started for it), whose ``cache``
is this home's (a link), so that the papers' results (Santurkar's landscape, Ergen's
training) are there as on a server that ran before; every slide is drawn. Warm is the
second click: the job of the tour's edition has succeeded, its result file is the zip. The
worker is stopped and the home removed afterwards; BNVIZ_HOME is restored.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import explorer as explorer_bench  # bench/explorer.py

from bnviz.config import bnviz_home
from bnviz.jobs.local import local_worker_pid
from bnviz.lecture.tour import TOUR
from bnviz.records.store import pid_alive
from bnviz.web.callbacks.lecture import ids

__all__ = ["export_times"]

#: Click "export all"; done with the ms until the status says what the zip holds (watched
#: with a MutationObserver, so that no change between two polls is missed).
CLICK_EXPORT = f"""
const done = arguments[arguments.length - 1];
const status = document.getElementById('{ids.EXPORT_STATUS}');
const finished = () => status.textContent.startsWith('slides: {len(TOUR)} steps');
const t0 = performance.now();
let clicked = false;
const watch = new MutationObserver(() => {{
    if (clicked && finished()) {{ watch.disconnect(); done(performance.now() - t0); }}
    else if (!finished()) {{ clicked = true; }}
}});
watch.observe(status, {{childList: true, characterData: true, subtree: true}});
document.getElementById('{ids.EXPORT}').click();
setTimeout(() => {{ watch.disconnect(); done(null); }}, 600000);"""


def _stop_worker(home: Path) -> None:
    """Stop the local job worker of ``home`` (it stops its job processes)."""
    texts = [(home / "jobs" / name).read_text().strip()
             for name in ("worker.spawned",) if (home / "jobs" / name).exists()]
    pids = {int(t) for t in texts if t.isdigit()}
    pid = local_worker_pid()
    if pid and pid > 0:
        pids.add(pid)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and pid_alive(pid):
            time.sleep(0.1)


def export_times(driver, base: str) -> tuple[float | None, float | None]:
    """(cold, warm) seconds from the click to the zip's answer; None: no answer in 10 min."""
    kept = os.environ.get("BNVIZ_HOME")
    shared_cache = bnviz_home() / "cache"
    home = Path(tempfile.mkdtemp(prefix="bnviz-bench-export-"))
    if shared_cache.is_dir():
        (home / "cache").symlink_to(shared_cache.resolve(), target_is_directory=True)
    os.environ["BNVIZ_HOME"] = str(home)
    driver.set_script_timeout(660)
    try:
        driver.get(base + "/lecture?step=1")
        explorer_bench.wait_for(lambda: driver.execute_script(
            f"const c = document.getElementById('{ids.COUNTER}'); "
            "return !!c && c.textContent.startsWith('1 /');"), 60, "the lecture page")
        times = []
        for _ in ("cold", "warm"):
            ms = driver.execute_async_script(CLICK_EXPORT)
            times.append(None if ms is None else ms / 1000)
        return times[0], times[1]
    finally:
        driver.set_script_timeout(60)
        _stop_worker(home)
        if kept is None:
            os.environ.pop("BNVIZ_HOME", None)
        else:
            os.environ["BNVIZ_HOME"] = kept
        shutil.rmtree(home, ignore_errors=True)
