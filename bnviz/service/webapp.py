"""Where the dashboard's files lie: the module ``app`` (``app.py``), ``gunicorn.conf.py`` and
``assets/``, for ``bnviz serve`` and for app.py's ``Dash(assets_folder=...)``.

In a checkout, and in the container's /app, the three lie together at the repository's root.
The wheel (``pip install 'bnviz[web]'``) installs ``app`` and the packages ``layouts`` and
``callbacks`` beside ``bnviz`` in site-packages, and the two that are not Python,
``gunicorn.conf.py`` and ``assets/``, as data files in ``<prefix>/share/bnviz/``
(pyproject.toml's data-files), found here through the installed distribution's file list, so
whatever the install's scheme (a venv, ``--user``, a system prefix). Nothing here imports the
app (torch, Dash).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import bnviz
from bnviz.extras import MissingExtra, pip_command

__all__ = ["WEB_MODULES", "WebFiles", "assets_dir", "find_web_files", "gunicorn_argv",
           "installed_web_files", "is_checkout", "require_web_extra"]

#: The data files' folder of an installed wheel, under its prefix (pyproject's data-files).
DATA_DIR = ("share", "bnviz")
#: The web extra's packages, without which the dashboard does not start.
WEB_MODULES = ("dash", "dash_bootstrap_components", "plotly", "flask", "gunicorn")
NOT_FOUND = ("the dashboard's files (app.py, gunicorn.conf.py, assets/) not found: install "
             "bnviz with them (pip install 'bnviz[web]') or run from the repository's root")


@dataclass(frozen=True)
class WebFiles:
    """``app_dir``: where ``app`` is imported from (gunicorn's working directory);
    ``gunicorn_conf``: gunicorn's settings file; ``assets``: Dash's assets folder."""

    app_dir: Path
    gunicorn_conf: Path
    assets: Path


def is_checkout(folder: Path) -> bool:
    """``folder`` holds app.py and gunicorn.conf.py: a checkout's root or the container's
    /app, whose ``assets/`` lies beside them."""
    return (folder / "app.py").is_file() and (folder / "gunicorn.conf.py").is_file()


def _in_checkout(folder: Path) -> WebFiles:
    return WebFiles(folder, folder / "gunicorn.conf.py", folder / "assets")


def installed_web_files() -> WebFiles | None:
    """The files the installed bnviz wheel put in place, or None (bnviz not installed, an
    editable install, or a wheel without them)."""
    try:
        files = metadata.distribution("bnviz").files or []
    except metadata.PackageNotFoundError:
        return None
    app = conf = None
    for f in files:
        if f.parts == ("app.py",):
            app = Path(f.locate()).resolve()
        elif f.parts[-3:] == (*DATA_DIR, "gunicorn.conf.py"):
            conf = Path(f.locate()).resolve()
    if app is None or conf is None or not (app.is_file() and conf.is_file()):
        return None
    return WebFiles(app.parent, conf, conf.parent / "assets")


def find_web_files(cwd: Path | None = None) -> WebFiles:
    """The dashboard to serve: the checkout in ``cwd`` (default: the current folder) if it is
    one, else the checkout this bnviz package is imported from (an editable install), else
    the installed wheel's. FileNotFoundError (one line) when there is none."""
    for folder in (cwd or Path.cwd(), Path(bnviz.__file__).resolve().parents[1]):
        if is_checkout(folder):
            return _in_checkout(folder)
    installed = installed_web_files()
    if installed is None:
        raise FileNotFoundError(NOT_FOUND)
    return installed


def assets_dir(app_file: str | Path) -> Path:
    """Dash's assets folder for the app defined in ``app_file`` (app.py's ``__file__``):
    ``assets/`` beside it in a checkout, else the installed wheel's (``<prefix>/share/bnviz/
    assets``), else (neither) Dash's default, ``assets/`` beside it."""
    folder = Path(app_file).resolve().parent
    if not is_checkout(folder):
        installed = installed_web_files()
        if installed is not None and installed.app_dir == folder:
            return installed.assets
    return folder / "assets"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing; None in sys.modules
        return False


def require_web_extra() -> None:
    """MissingExtra (one line naming the pip command) unless the web extra is installed."""
    missing = [name for name in WEB_MODULES if not _installed(name)]
    if missing:
        raise MissingExtra(f"the dashboard needs {', '.join(missing)}: {pip_command('web')}",
                           name=missing[0])


def gunicorn_argv(web: WebFiles) -> list[str]:
    """The dashboard's gunicorn (``gunicorn -c gunicorn.conf.py app:server``, what ``make
    run`` runs), to run in ``web.app_dir``."""
    return [sys.executable, "-m", "gunicorn", "-c", str(web.gunicorn_conf), "app:server"]
