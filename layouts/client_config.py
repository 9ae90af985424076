"""What the browser's scripts (assets/*.js) take from Python: component ids and constants.

The page's HTML carries :func:`client_config` as JSON in a ``<script type="application/json"
id="bnviz-config">`` element (app.py puts :func:`config_script` in Dash's index page), and
assets/00-config.js exposes it as ``window.bnvizConfig`` before the other scripts run. So a
script names ``IDS.COUNTER``, never ``"lecture-counter"``: renaming an id in an ids module
renames it in the browser too, and tests/pages/test_assets.py fails on a name the config
does not hold. A JSON script element is data, not code: the content security policy has
nothing to allow.
"""

from __future__ import annotations

import json
from types import ModuleType

from bnviz.caps import LECTURE_MAX_SNAPSHOT_QUERY
from bnviz.lecture.scenes import BATCH_ALL
from bnviz.lecture.tour import TOUR
from bnviz.server.lecture_sync import ROUTE, SESSION_PATTERN, SLIDER_BOUNDS
from bnviz.web.callbacks.explorer import ids as explorer_ids
from bnviz.web.callbacks.lecture import ids as lecture_ids
from bnviz.web.layouts.lecture import PLAYBACK_SPEEDS, SYNC_POLL_MS, TYPE_PX, TYPE_SCALES
from bnviz.web.layouts.registry import pages

#: The element's id (the one name assets/00-config.js knows by itself).
CONFIG_ID = "bnviz-config"


def module_ids(module: ModuleType) -> dict[str, str]:
    """An ids module's constants: NAME -> id (the string ones; dicts of ids are left out)."""
    return {name: value for name, value in vars(module).items()
            if name.isupper() and isinstance(value, str)}


def client_config() -> dict:
    """Everything assets/*.js needs from Python, by page."""
    lecture = module_ids(lecture_ids)
    return {
        "lecture": {
            "ids": lecture,
            "sliders": {name: lecture_ids.SLIDERS[name] for name in sorted(lecture_ids.SLIDERS)},
            "steps": len(TOUR),
            "speeds": list(PLAYBACK_SPEEDS),
            "typeScales": list(TYPE_SCALES),
            "typePx": TYPE_PX,
            "batchAll": BATCH_ALL,
            # a page's Lecture link opens the tour at its figure (layouts/<page>.py PAGES)
            "pageStep": {p["path"]: p["lecture_step"] for p in pages() if "lecture_step" in p},
            "channel": "bnviz-lecture",
            # the windows' shared state through the server (assets/presenter.js)
            "sync": {"route": ROUTE, "pollMs": SYNC_POLL_MS, "sessionPattern": SESSION_PATTERN,
                     "maxQuery": LECTURE_MAX_SNAPSHOT_QUERY,
                     "sliderBounds": {k: list(v) for k, v in SLIDER_BOUNDS.items()}},
        },
        "explorer": {"ids": module_ids(explorer_ids)},
        # graph id -> the store a click's coordinates go to (assets/cursor.js)
        "cursor": {explorer_ids.GRAPH_SPACE: explorer_ids.CURSOR,
                   lecture_ids.GRAPH: lecture_ids.CURSOR},
    }


def config_script() -> str:
    """The config as an HTML element; ``<`` is escaped so no id can close the element."""
    data = json.dumps(client_config(), sort_keys=True).replace("<", "\\u003c")
    return f'<script type="application/json" id="{CONFIG_ID}">{data}</script>'
