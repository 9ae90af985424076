"""The wheel is the whole product under one top-level name (pyproject.toml): the bnviz
package, the dashboard as bnviz.web (app.py, layouts/, callbacks/, gunicorn.conf.py and
assets/, which bnviz/web/ names by symbolic links); its metadata has compatible ranges, never
an exact pin (the locks pin). Built here from a copy of the checkout, with no network and no
build isolation (the venv's setuptools), then installed into a fresh venv, where the
dashboard's files are found from another folder (bnviz.service.webapp)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What a fresh clone does not have, or the build does not need.
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", "build", "dist",
                                    "*.egg-info", ".pytest_cache", ".ruff_cache", ".hypothesis",
                                    "out", ".bnviz", ".bench-home", "tests", "bench", "docs")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src") / "bnviz"
    shutil.copytree(ROOT, src, ignore=NOT_COPIED)
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "--quiet", "-w", str(out), str(src)],
                   check=True, capture_output=True, text=True, timeout=300)
    (built,) = out.glob("bnviz-*.whl")
    return built


@pytest.fixture(scope="module")
def names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def _sources(folder: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*.py")
            if "__pycache__" not in p.parts and not p.is_symlink()}


def test_the_wheels_only_top_level_name_is_bnviz(wheel, names):
    with zipfile.ZipFile(wheel) as z:
        (record,) = [n for n in names if n.endswith(".dist-info/RECORD")]
        installed = {line.split(",")[0] for line in z.read(record).decode().splitlines()}
    tops = {n.split("/")[0] for n in installed if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"bnviz"}, tops


def test_the_wheel_holds_the_dashboard(names):
    assert "bnviz/web/app.py" in names and "bnviz/web/__init__.py" in names
    missing = _sources("bnviz") - names
    for folder in ("layouts", "callbacks"):
        missing |= {"bnviz/web/" + n for n in _sources(folder)} - names
    assert not missing, f"not in the wheel: {sorted(missing)}"
    assert "bnviz/service/nginx.conf.template" in names
    assert "bnviz/replication/outcomes.json" in names


def test_the_wheel_holds_gunicorn_conf_and_every_asset(names):
    assert "bnviz/web/gunicorn.conf.py" in names
    assets = {p.name for p in (ROOT / "assets").iterdir() if p.is_file()}
    assert any(a.endswith(".js") for a in assets) and any(a.endswith(".css") for a in assets)
    missing = {a for a in assets if "bnviz/web/assets/" + a not in names}
    assert not missing, f"assets not in the wheel (pyproject's package-data): {sorted(missing)}"
    assert not any(".data/" in n for n in names), "no data files outside the package"


def test_the_metadata_has_ranges_and_the_extras(wheel):
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        headers = Parser().parsestr(z.read(meta).decode())
    requires = headers.get_all("Requires-Dist")
    pinned = [r for r in requires if "==" in r.split(";")[0]]
    assert not pinned, f"exact pins belong in the locks: {pinned}"
    base = [r for r in requires if "extra ==" not in r]
    assert any(r.startswith("torch") and ">=" in r for r in base)
    assert not [r for r in base if r.startswith(("pyarrow", "imageio-ffmpeg", "dash"))]
    assert any(r.startswith("pyarrow") and 'extra == "geo"' in r for r in requires)
    assert any(r.startswith("imageio-ffmpeg") and 'extra == "video"' in r for r in requires)
    assert {"geo", "video", "onnx", "web", "test"} <= set(headers.get_all("Provides-Extra"))


def test_an_installed_wheel_finds_the_dashboard_from_any_folder(wheel, tmp_path):
    """Installed into a fresh venv (no dependencies: finding the files needs none) and asked
    from a folder that is no checkout, the files are the wheel's, in site-packages/bnviz/web."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--no-deps", "--no-index", "--quiet", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    code = ("import json, sysconfig; from pathlib import Path;"
            "from bnviz.service.webapp import find_web_files;"
            "w = find_web_files();"
            "print(json.dumps({'web': [str(w.app_dir), str(w.gunicorn_conf), str(w.assets)],"
            " 'site': sysconfig.get_path('purelib')}))")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(python), "-c", code], cwd=elsewhere, env=env, check=True,
                         capture_output=True, text=True, timeout=60)
    found = json.loads(run.stdout)
    app_dir, conf, assets = map(Path, found["web"])
    site = Path(found["site"]).resolve()
    assert app_dir == site and (site / "bnviz" / "web" / "app.py").is_file()
    assert conf == site / "bnviz" / "web" / "gunicorn.conf.py" and conf.is_file()
    assert not conf.is_symlink() and not assets.is_symlink()
    assert {p.name for p in assets.iterdir()} == {p.name for p in (ROOT / "assets").iterdir()
                                                   if p.is_file()}
    # the top-level names of a checkout are not installed
    assert not (site / "app.py").exists() and not (site / "layouts").exists()
