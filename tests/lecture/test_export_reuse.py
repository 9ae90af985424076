"""A second "export all" is instant, also from another process (issue 46, item 5): the slides'
zip is the result file of the lecture-slides job of the tour's edition, kept under
BNVIZ_HOME, so a fresh process (another web process, or the server after a restart) answers
the click with the stored zip and draws nothing.

The first export runs as the page runs it (the job, in a thread of this process:
``inline_jobs``), with cheap slides; the second is a new Python process on the same home,
where drawing a slide or computing a scene would be counted."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from bnviz import jobs
from bnviz.lecture import slides
from bnviz.lecture.tour import TOUR
from bnviz.web.callbacks.lecture import export

ROOT = Path(__file__).resolve().parents[2]

#: A fresh process clicks "export all" once (the page's callback): how many slides it drew,
#: how many scenes it computed, and what it answered.
SECOND_EXPORT = textwrap.dedent("""
    import base64, hashlib, json
    from bnviz.lecture import slides
    from bnviz.web.callbacks.lecture import export

    drawn = {"slide_files": 0, "render_slide": 0, "compute_scene": 0}
    def counted(name):
        real = getattr(slides, name)
        def call(*args, **kwargs):
            drawn[name] += 1
            return real(*args, **kwargs)
        return call
    for name in drawn:
        setattr(slides, name, counted(name))
    download, status, job_id, poll_off, button_off = export.export_slides(1, "light")
    content = download["content"] if isinstance(download, dict) else ""
    data = base64.b64decode(content) if isinstance(download, dict) and download.get(
        "base64") else content.encode()
    print(json.dumps({"drawn": drawn, "job": job_id,
                      "status": status if isinstance(status, str) else type(status).__name__,
                      "poll_off": poll_off, "button_off": button_off,
                      "filename": download.get("filename") if isinstance(download, dict)
                      else None, "zip": hashlib.sha256(data).hexdigest()}))
""")


def _zip_of(download: dict) -> bytes:
    content = download["content"]
    return base64.b64decode(content) if download.get("base64") else content.encode()


def test_a_second_export_in_a_fresh_process_reuses_the_stored_zip(inline_jobs, monkeypatch):
    import hashlib

    calls: list[str] = []

    def cheap(theme="light", progress=lambda fraction: None):
        calls.append(theme)
        for k in range(1, len(TOUR) + 1):
            progress(k / len(TOUR))
        return {"captions.md": b"# the tour's captions\n", "slides.json": b"{}\n"}

    monkeypatch.setattr(slides, "slide_files", cheap)
    first = export.export_slides(1, "light")
    job_id = first[2]
    assert job_id is not None and first[3:] == (False, True)  # polling, button disabled
    assert jobs.wait_job(job_id, timeout=120).status == "succeeded"
    download = export.poll_export(1, job_id)[0]
    assert calls == ["light"] and download["filename"] == export.FILENAME

    second = subprocess.run([sys.executable, "-c", SECOND_EXPORT], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert second.returncode == 0, second.stderr[-2000:]
    answer = json.loads(second.stdout.strip().splitlines()[-1])
    assert answer["drawn"] == {"slide_files": 0, "render_slide": 0, "compute_scene": 0}
    assert answer["zip"] == hashlib.sha256(_zip_of(download)).hexdigest()
    assert answer["filename"] == export.FILENAME
    assert (answer["job"], answer["poll_off"], answer["button_off"]) == (None, True, False)
    assert answer["status"].startswith(f"slides: {len(TOUR)} steps")
    assert calls == ["light"]  # nor was anything drawn here again
