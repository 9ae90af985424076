"""Where the dashboard's files lie, for ``bnviz serve`` and app.py's ``Dash(assets_folder=...)``:
all in the package ``bnviz.web``, the app (``bnviz.web.app``), ``gunicorn.conf.py`` and
``assets/``.

In a checkout, ``bnviz/web/`` names the repository's ``app.py``, ``layouts/``, ``callbacks/``,
``gunicorn.conf.py`` and ``assets/`` by symbolic links; the wheel installs the files themselves
there (pyproject.toml's package-data), so they are found the same way in a checkout, an editable
install, the container and any venv, whatever the folder ``bnviz serve`` runs in. Nothing here
imports the app (torch, Dash).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

import bnviz
from bnviz.extras import MissingExtra, pip_command

__all__ = ["APP_TARGET", "WEB_DIR", "WEB_MODULES", "WebFiles", "assets_dir", "find_web_files",
           "gunicorn_argv", "require_web_extra"]

#: The package of the dashboard's files.
WEB_DIR = Path(bnviz.__file__).resolve().parent / "web"
#: gunicorn's app: the WSGI server of the Dash app.
APP_TARGET = "bnviz.web.app:server"
#: The web extra's packages, without which the dashboard does not start.
WEB_MODULES = ("dash", "dash_bootstrap_components", "plotly", "flask", "gunicorn")
NOT_FOUND = ("the dashboard's files (bnviz/web: app.py, gunicorn.conf.py, assets/) not found: "
             "reinstall bnviz (pip install 'bnviz[web]')")


@dataclass(frozen=True)
class WebFiles:
    """``app_dir``: gunicorn's working folder (the folder bnviz is imported from: a checkout's
    root or site-packages); ``gunicorn_conf``: gunicorn's settings file; ``assets``: Dash's
    assets folder."""

    app_dir: Path
    gunicorn_conf: Path
    assets: Path


def find_web_files() -> WebFiles:
    """The dashboard's files in bnviz.web; FileNotFoundError (one line) when one is missing (a
    wheel built without them, a checkout whose links were not kept)."""
    files = WebFiles(WEB_DIR.parents[1], WEB_DIR / "gunicorn.conf.py", assets_dir())
    if not ((WEB_DIR / "app.py").is_file() and files.gunicorn_conf.is_file()
            and files.assets.is_dir()):
        raise FileNotFoundError(NOT_FOUND)
    return files


def assets_dir() -> Path:
    """Dash's assets folder: ``assets/`` in bnviz.web."""
    return WEB_DIR / "assets"


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
    """The dashboard's gunicorn (``gunicorn -c gunicorn.conf.py bnviz.web.app:server``, what
    ``make run`` runs), to run in ``web.app_dir``."""
    return [sys.executable, "-m", "gunicorn", "-c", str(web.gunicorn_conf), APP_TARGET]
