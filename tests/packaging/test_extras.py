"""The optional extras (pyproject.toml): without one, its feature is one line naming the pip
command, in the library (MissingExtra) and on the command line (exit code 2, no traceback),
and nothing else needs it. A package is made unimportable with ``sys.modules[name] = None``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from fuzzing import assert_one_error_line
from served import free_port

from bnviz.cli import main
from bnviz.extras import MissingExtra, require

GEO_LINE = "GeoParquet needs pyarrow: pip install 'bnviz[geo]'"
VIDEO_COMMAND = "pip install 'bnviz[video]'"


@pytest.fixture
def no_pyarrow(monkeypatch):
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)


@pytest.fixture
def no_ffmpeg(monkeypatch, tmp_path):
    """Neither the video extra's imageio-ffmpeg nor an ffmpeg on the PATH."""
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


def _cli(capsysbinary, *args: object) -> tuple[int, bytes, str]:
    capsysbinary.readouterr()
    rc = main([*map(str, args)])
    captured = capsysbinary.readouterr()
    return rc, captured.out, captured.err.decode()


def test_require_names_the_extra(no_pyarrow):
    with pytest.raises(MissingExtra) as caught:
        require("pyarrow.parquet", "GeoParquet", "geo")
    assert str(caught.value) == GEO_LINE
    assert isinstance(caught.value, ImportError) and isinstance(caught.value, ValueError)


def test_a_broken_dependency_of_an_installed_extra_is_not_called_missing(monkeypatch):
    """Only the extra's own package missing is MissingExtra; a module it imports that is
    missing is that module's error."""
    monkeypatch.setitem(sys.modules, "numpy", None)
    monkeypatch.delitem(sys.modules, "shapely", raising=False)
    for name in [m for m in sys.modules if m.startswith("shapely.")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ModuleNotFoundError) as caught:
        require("shapely", "Geometry", "geo")
    assert not isinstance(caught.value, MissingExtra)


def test_geoparquet_without_pyarrow_is_the_one_line(no_pyarrow, tmp_path):
    from bnviz.core.export import require_writer, write_geometry

    with pytest.raises(MissingExtra) as caught:
        require_writer(tmp_path / "g.parquet")
    assert str(caught.value) == GEO_LINE
    with pytest.raises(MissingExtra):
        write_geometry(object(), tmp_path / "g.PARQUET")  # refused before the partition is read
    for suffix in (".npz", ".geojson"):
        require_writer(tmp_path / f"g{suffix}")  # these formats need no extra


def test_partition_geometry_parquet_without_pyarrow_exits_2(no_pyarrow, capsysbinary, tmp_path):
    path = tmp_path / "g.parquet"
    rc, out, err = _cli(capsysbinary, "partition", "--depth", "2", "--width", "4",
                        "--geometry", path)
    assert_one_error_line(rc, out, err)
    assert GEO_LINE in err and not path.exists()


def test_partition_other_geometry_without_pyarrow_still_works(no_pyarrow, capsysbinary,
                                                             tmp_path):
    path = tmp_path / "g.geojson"
    rc, _, err = _cli(capsysbinary, "partition", "--depth", "2", "--width", "4",
                      "--geometry", path)
    assert rc == 0, err
    assert path.stat().st_size > 0


def test_mp4_without_ffmpeg_is_the_one_line(no_ffmpeg, tmp_path):
    from bnviz.views.video import NO_FFMPEG, encode_mp4, ffmpeg

    assert ffmpeg() is None
    path = tmp_path / "m.mp4"
    with pytest.raises(MissingExtra) as caught:
        encode_mp4([b"not read"], 10, path)
    assert str(caught.value) == NO_FFMPEG and VIDEO_COMMAND in NO_FFMPEG
    assert "\n" not in NO_FFMPEG and not path.exists()


def test_train_movie_mp4_without_ffmpeg_exits_2_before_training(no_ffmpeg, capsysbinary,
                                                                tmp_path, monkeypatch):
    import bnviz.views.trainer as trainer

    monkeypatch.setattr(trainer, "train_frames", lambda *a, **k: pytest.fail("trained"))
    rc, out, err = _cli(capsysbinary, "train", "--movie", tmp_path / "m.mp4")
    assert_one_error_line(rc, out, err)
    assert VIDEO_COMMAND in err and ".gif" in err


def test_the_path_s_ffmpeg_serves_without_the_extra(monkeypatch, tmp_path):
    from bnviz.views.video import ffmpeg

    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    exe = tmp_path / "ffmpeg"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ffmpeg() == str(exe)


def test_serve_without_the_web_extra_is_one_line(monkeypatch, capsys, tmp_path):
    """`bnviz serve` on a lean install: one line naming the web extra, exit code 2, before
    anything starts."""
    from bnviz.server import stack
    from bnviz.service.webapp import require_web_extra

    monkeypatch.setitem(sys.modules, "dash", None)
    monkeypatch.setitem(sys.modules, "gunicorn", None)
    with pytest.raises(MissingExtra, match=r"needs dash, gunicorn: pip install 'bnviz\[web\]'"):
        require_web_extra()
    monkeypatch.setattr(os, "execve", lambda *a: pytest.fail("started gunicorn"))
    monkeypatch.setattr(stack, "find_nginx", lambda: pytest.fail("looked for nginx"))
    monkeypatch.setenv("BNVIZ_HOME", str(tmp_path))
    monkeypatch.setenv("BNVIZ_PORT", str(free_port()))
    for argv in (["serve"], ["serve", "--no-nginx"]):
        capsys.readouterr()
        assert stack.run_serve(stack_args(argv)) == 2
        lines = capsys.readouterr().err.splitlines()
        assert lines == ["bnviz serve: the dashboard needs dash, gunicorn: "
                         "pip install 'bnviz[web]'"]


def stack_args(argv: list[str]):
    from bnviz.cli import build_parser

    return build_parser("serve").parse_args(argv)


def test_the_extras_are_in_the_metadata_and_the_locks():
    """pyproject's extras hold pyarrow and imageio-ffmpeg, not the required dependencies; both
    locks (what make run, make test and the image install) pin them."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    required = " ".join(project["dependencies"])
    assert "pyarrow" not in required and "imageio-ffmpeg" not in required
    extras = project["optional-dependencies"]
    assert [r.split(">")[0] for r in extras["geo"]] == ["pyarrow"]
    assert [r.split(">")[0] for r in extras["video"]] == ["imageio-ffmpeg"]
    names = [r.split(">")[0].split("<")[0].split("[")[0].lower() for r in project["dependencies"]]
    assert len(names) == len(set(names)), names  # each listed once
    for lock in ("requirements.txt", "requirements-test.txt"):
        pins = (root / lock).read_text().splitlines()
        for package in ("pyarrow", "imageio-ffmpeg", "onnx", "dash", "gunicorn"):
            assert any(line.startswith(f"{package}==") for line in pins), (lock, package)
