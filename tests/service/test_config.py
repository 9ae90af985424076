"""bnviz.config: every numeric setting read and checked in one place; a bad one stops a
server or a worker at its start with one line naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bnviz import config

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(config.SETTINGS))
def test_each_setting_has_a_default_and_refuses_junk(name, monkeypatch):
    s = config.SETTINGS[name]
    monkeypatch.delenv(name, raising=False)
    default = config.setting(name)
    assert s.lo <= default <= s.hi
    for bad in ("abc", "nan", str(s.hi * 2 + 1), str(s.lo - 1), "1e999"):
        monkeypatch.setenv(name, bad)
        with pytest.raises(config.SettingError) as err:
            config.setting(name)
        text = str(err.value)
        assert name in text and "\n" not in text and len(text) < 200
    monkeypatch.setenv(name, str(int(s.hi)) if s.kind == "int" else str(s.hi))
    assert config.setting(name) == s.hi


def test_whole_numbers_stay_whole(monkeypatch):
    monkeypatch.setenv("BNVIZ_PORT", "8080.5")
    with pytest.raises(config.SettingError, match="whole number"):
        config.setting("BNVIZ_PORT")
    monkeypatch.setenv("BNVIZ_CACHE_MB", "0.5")
    with pytest.raises(config.SettingError):
        config.setting("BNVIZ_CACHE_MB")
    monkeypatch.setenv("BNVIZ_CACHE_MB", "1.5")
    assert config.setting("BNVIZ_CACHE_MB") == 1.5


@pytest.mark.parametrize("command", [
    [sys.executable, "app.py"],
    [sys.executable, "-m", "bnviz", "worker"],
    [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "--check-config",
     "bnviz.web.app:server"],
])
@pytest.mark.parametrize("env", [{"BNVIZ_PORT": "abc"}, {"BNVIZ_WEB_WORKERS": "-3"},
                                 {"BNVIZ_DEVICE": "tpu"}])
def test_a_bad_setting_stops_the_start_with_one_line(command, env, tmp_home):
    import os

    run_env = {**os.environ, **env}
    out = subprocess.run(command, cwd=ROOT, env=run_env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode != 0
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert next(iter(env)) in lines[0] or "tpu" in lines[0]
