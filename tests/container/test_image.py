"""The image, checked as it would run (issue 33): `make image-test` builds it, then runs this.

The image's CMD runs from the image's root (tests/container/rootrun.py), as its USER, with its
ENV and WORKDIR: /healthz, /, a partition callback and a job submitted through the API with
the token must answer as on a machine, the image's own HEALTHCHECK command must pass, and the
container must have written only to its data volume and /tmp. The compose file's web and
worker commands then run in the same root against a Redis this test starts (Celery).

Skipped unless BNVIZ_IMAGE_TEST names the built image (make image-test sets it; .ci/run calls
make image-test). Needs root (mounts, chroot), podman or buildah, and redis-server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from rootrun import TOOL, image_size, mount_image, start_piped, unmount_image
from served import callback_request, free_port, page_values
from stackrun import group_pids, stop_group, wait_answering

IMAGE = os.environ.get("BNVIZ_IMAGE_TEST", "")
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "image-test-token"
#: the image's size budget: issue 33 aimed at 1.5 GB with the CPU torch; it is 1.71 GB, of
#: which torch alone is 690 MB and numba's llvmlite 172 MB (docs/deploying.md, "The container
#: image", says where the rest goes). A change that grows it past this bound fails here.
MAX_IMAGE_BYTES = 1.8e9

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not IMAGE, reason="the image's tests run with make image-test"),
]


@pytest.fixture(scope="module")
def image():
    if os.geteuid() != 0 or TOOL is None:
        pytest.fail("make image-test needs root and podman or buildah", pytrace=False)
    img = mount_image(IMAGE)
    yield img
    unmount_image(img)


def _request(url: str, body: dict | None = None, token: str | None = None,
             timeout: float = 120) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers,
                                 method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _explorer_callback(base: str) -> dict:
    """The request a browser sends for the explorer's partition, from the dependencies the
    image serves and the explorer's values when its page loads."""
    from bnviz.web.layouts.explorer import page_layout

    deps = json.loads(_request(base + "/_dash-dependencies")[1])
    return callback_request(deps, "..explorer-graph.figure...", page_values(page_layout()))


def _job_completes(base: str, seconds: float = 300) -> dict:
    """A small job submitted through the API with the token, polled to its end."""
    body = {"type": "affine-ablation",
            "params": {"epochs": 1, "runs": 1, "width": 4, "max_train": 200}}
    status, raw = _request(base + "/api/jobs", body)
    assert status == 401, (status, raw[:300])  # writes need the token
    status, raw = _request(base + "/api/jobs", body, token=TOKEN)
    assert status in (200, 201, 202), (status, raw[:300])
    job_id = json.loads(raw)["id"]
    deadline = time.monotonic() + seconds
    while (job := json.loads(_request(f"{base}/api/jobs/{job_id}")[1]))["status"] in (
            "queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(1)
    return job


def test_the_image_is_small_not_root_and_clean(image):
    """A non-root USER with a home, and no build tools, caches, tests or sources control."""
    size = image_size(IMAGE)
    print(f"image {IMAGE}: {size / 1e9:.2f} GB")
    assert size < MAX_IMAGE_BYTES, f"{size / 1e9:.2f} GB"
    uid, _, home = image.user
    assert uid != 0 and (image.root / home.lstrip("/")).is_dir()
    root = image.root
    for tool in ("gcc", "cc", "g++", "make", "git", "curl", "wget"):
        assert not (root / "usr/bin" / tool).exists(), tool
    for path in ("app/tests", "app/bench", "app/.git", "app/.venv", "root/.cache",
                 "var/lib/apt/lists/partial"):
        assert not (root / path).exists(), path
    assert not list((root / "var/lib/apt/lists").glob("*_Packages"))
    assert not list((root / "var/cache/apt/archives").glob("*.deb"))
    assert (root / "app/.numba-cache").is_dir()  # kernels compiled at build time
    assert "/data" in (image.config.get("Volumes") or {})


def test_the_cmd_serves_as_its_user_and_the_healthcheck_passes(image, tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    env = {"BNVIZ_HOST": "127.0.0.1", "BNVIZ_PORT": str(port), "BNVIZ_JOBS_TOKEN": TOKEN}
    started = time.monotonic()
    proc = start_piped(image.argv(image.config["Cmd"], **env), log)
    try:
        wait_answering(proc, base + "/healthz", log, seconds=240)
        first_answer = time.monotonic() - started
        health = json.loads(_request(base + "/healthz")[1])
        assert health["status"] == "ok", health
        print(f"first healthy answer {first_answer:.1f} s after start")
        # every process of the container runs as the image's USER
        uid = image.user[0]
        for pid in group_pids(proc.pid):
            status = Path(f"/proc/{pid}/status").read_text()
            real = next(line for line in status.splitlines() if line.startswith("Uid:"))
            assert int(real.split()[1]) == uid, (pid, real)
        status, page = _request(base + "/")
        assert status == 200 and b"<title>bnviz</title>" in page
        status, raw = _request(base + "/_dash-update-component", _explorer_callback(base))
        assert status == 200, raw[:500]
        answer = json.loads(raw)["response"]
        assert answer["explorer-graph"]["figure"]["data"], "no partition drawn"
        assert "regions" in json.dumps(answer["explorer-summary"])
        job = _job_completes(base)
        assert job["status"] == "succeeded", job
        check = subprocess.run(image.argv(image.healthcheck, **env), capture_output=True,
                               text=True, timeout=30)
        assert check.returncode == 0, check.stderr
    finally:
        stop_group(proc)
    # the container wrote only to its data volume and /tmp (and the mount points it was given);
    # numba's probe of its cache directory may touch that directory, but no kernel was
    # compiled again: nothing was added there
    cache = image.env()["NUMBA_CACHE_DIR"]
    outside = [p for p in image.changed() if not p.startswith(("/data", "/tmp"))
               and p not in ("/dev", "/proc") and not (p.startswith(cache) and p not in
                                                        image.added())]
    assert outside == [], outside


def test_compose_services_run_from_the_image(image, tmp_path):
    """The compose file parses (its services, profiles and shared settings; podman-compose's
    own dry run where it is installed), and its web and worker commands, run in the image's
    root with its environment, serve a job that the Celery worker runs against a Redis."""
    import yaml

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"redis", "web", "worker", "web-embedded"}
    assert services["web-embedded"]["profiles"] == ["embedded"]
    for name in ("web", "worker", "web-embedded"):
        assert services[name]["environment"]["BNVIZ_HOME"] == "/data"
        assert "bnviz-home:/data" in services[name]["volumes"]
    if shutil.which("podman-compose"):
        dry = subprocess.run(["podman-compose", "--dry-run", "up"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120,
                             env=os.environ | {"BNVIZ_JOBS_TOKEN": TOKEN})
        assert dry.returncode == 0, dry.stderr[-2000:]
    redis_server = shutil.which("redis-server")
    assert redis_server, "redis-server is needed (.ci/run installs it)"
    redis_port = free_port()
    redis = subprocess.Popen([redis_server, "--port", str(redis_port), "--save", "",
                              "--appendonly", "no", "--bind", "127.0.0.1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    (image.root / "datasets").mkdir(exist_ok=True)  # the compose file's read-only mount

    def env_of(name: str) -> dict[str, str]:
        env = {k: str(v) for k, v in services[name]["environment"].items()}
        env["BNVIZ_BROKER_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        return env | {"BNVIZ_HOST": "127.0.0.1", "BNVIZ_PORT": str(port),
                      "BNVIZ_JOBS_TOKEN": TOKEN}

    web = worker = None
    try:
        worker = start_piped(image.argv(services["worker"]["command"], **env_of("worker")),
                             tmp_path / "worker.log")
        web = start_piped(image.argv(services["web"]["command"], **env_of("web")),
                          tmp_path / "web.log")
        wait_answering(web, base + "/healthz", tmp_path / "web.log", seconds=240)
        health = json.loads(_request(base + "/healthz")[1])
        assert health["status"] == "ok", health
        job = _job_completes(base)
        assert job["status"] == "succeeded", (job, (tmp_path / "worker.log").read_text()[-2000:])
    finally:
        for proc in (web, worker):
            if proc is not None:
                stop_group(proc)
        redis.terminate()
        redis.wait(30)
