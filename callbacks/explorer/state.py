"""The explorer page's state: control values <-> validated settings <-> the URL query.

The page's full state lives in its URL query (``PartitionParams.to_query`` plus the view),
written with ``history.replaceState`` so that sliders never trigger a page reload, and read
back by :func:`layouts.explorer.page_layout` when a shared link is opened. The added points
(clicks, CSV uploads) are checked here too. Nothing here registers a callback.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import fields
from urllib.parse import urlencode

import numpy as np

from bnviz.caps import EXPLORER_MAX_UPLOAD_BYTES, EXPLORER_MAX_URL_POINTS
from bnviz.data.pointfiles import points_from_csv_bytes
from bnviz.params import PartitionParams
from bnviz.views.explorer import (
    EXPLORER_LIMITS,
    MAX_EXTRA_POINTS,
    PRESETS,
    InputError,
)
from bnviz.web.callbacks.explorer import ids
from bnviz.web.callbacks.parsing import finite_number, shown_name

#: The explorer's views (the URL's ``view``).
VIEWS = ("space", "layers", "unit", "training")

CONTROLS = {
    "depth": ids.DEPTH, "width": ids.WIDTH, "activation": ids.ACTIVATION, "alpha": ids.ALPHA,
    "mode": ids.MODE, "weight_seed": ids.WEIGHT_SEED, "weights": ids.WEIGHTS,
    "dataset": ids.DATASET,
    "n_points": ids.N_POINTS, "data_seed": ids.DATA_SEED, "shift_x": ids.SHIFT_X,
    "shift_y": ids.SHIFT_Y, "batch_size": ids.BATCH_SIZE,
    "batch_seed": ids.BATCH_SEED, "mu_t": ids.MU, "sigma_s": ids.SIGMA, "scope": ids.SCOPE,
    "target_layer": ids.TARGET_LAYER, "target_unit": ids.TARGET_UNIT, "layer": ids.LAYER,
}


# ---- state <-> URL and controls ----------------------------------------------------------

def settings_from_controls(values: dict) -> PartitionParams:
    """Control values as the page holds them (sigma as log2, unit 1-based) -> settings."""
    raw = dict(values)
    sigma = raw.get("sigma_s")
    try:
        raw["sigma_s"] = 2.0 ** float(sigma)
    except (TypeError, ValueError, OverflowError):
        raise InputError("σ slider: move it to a value from ¼ to 4") from None
    unit = raw.get("target_unit")
    lo, hi = EXPLORER_LIMITS["target_unit"]
    try:
        k = float(unit)
    except (TypeError, ValueError, OverflowError):
        k = math.nan
    if not (math.isfinite(k) and k == int(k) and lo + 1 <= k <= hi + 1):
        raise InputError(f"unit k: enter a whole number from 1 to the width "
                         f"(at most {int(hi) + 1}), got {str(unit)[:40]!r}")
    raw["target_unit"] = k - 1
    return PartitionParams.from_page(raw)


#: The caption when no preset was picked, or after a link without one.
NO_PRESET = "Pick a preset, or move any control."
#: How the caption names a setting that moved away from its preset's (the controls' labels).
SETTING_NAMES = {"mu_t": "μ", "sigma_s": "σ", "n_points": "points", "alpha": "leaky slope α",
                 "target_layer": "unit's layer l", "target_unit": "unit k",
                 "layer": "highlighted layer", "dataset": "data set",
                 "shift_x": "data shift x", "shift_y": "data shift y",
                 "weights": "weights (random or trained)"}


def preset_caption(key: object, controls: dict, view: object) -> str | None:
    """The caption of the preset ``key`` for the page's controls and view: the preset's own
    while they are its figure's, else the same followed by what was changed since (the
    explanation must not describe a picture that is no longer shown). None when the controls
    hold a bad value (the caption stays as it was); NO_PRESET without a preset."""
    preset = PRESETS.get(key) if isinstance(key, str) else None
    if preset is None:
        return NO_PRESET
    try:
        s = settings_from_controls(controls)
    except InputError:
        return None
    changed = [SETTING_NAMES.get(f.name, f.name.replace("_", " ")) for f in fields(s)
               if getattr(s, f.name) != getattr(preset.settings, f.name)]
    if view != preset.view:
        changed.append("the view")
    if not changed:
        return preset.caption
    return (f"{preset.caption} Changed since: {', '.join(changed)} (the {preset.label} "
            "button puts the figure back).")


def control_values(s: PartitionParams) -> dict:
    """The inverse of :func:`settings_from_controls`."""
    out = {name: getattr(s, name) for name in CONTROLS}
    out["sigma_s"] = math.log2(s.sigma_s)
    out["target_unit"] = s.target_unit + 1
    out["batch_size"] = "all" if s.batch_size is None else str(s.batch_size)
    return out


def _parse_points(text: str) -> list[list[float]]:
    pts = []
    for pair in filter(None, text.split(";")[:MAX_EXTRA_POINTS]):
        x, y = (float(v) for v in pair.split(","))
        if not (math.isfinite(x) and math.isfinite(y) and abs(x) <= 1e6 and abs(y) <= 1e6):
            raise ValueError(pair)
        pts.append([x, y])
    return pts


def initial_state(query: dict) -> tuple:
    """Page state from a URL query; a tampered or stale link falls back to defaults, with a
    message saying what was ignored."""
    message = []
    # a key repeated in the link arrives as a list: the last one wins, as in a form
    query = {k: (v[-1] if isinstance(v, list) and v else v) for k, v in query.items()}
    try:
        settings = PartitionParams.from_page(query)
    except InputError as exc:
        settings = PartitionParams()
        message.append(f"The link's settings were not used ({exc}).")
    view = query.get("view", "space")
    if view not in VIEWS:
        message.append(f"The link's view {str(view)[:20]!r} is unknown; showing the input "
                       "space.")
        view = "space"
    tls = query.get("tls") == "1"
    projector = query.get("projector") == "1"
    try:
        extra = _parse_points(str(query.get("pts", "")))
    except ValueError:
        extra = []
        message.append("The link's added points were not readable and were left out.")
    preset = PRESETS.get(str(query.get("preset", "")))
    caption = preset_caption(preset.key if preset else None, control_values(settings), view)
    return (settings, view, tls, projector, extra, " ".join(message), caption,
            preset.key if preset else None)


def query_string(settings: PartitionParams, view: str, tls: bool, projector: bool,
                 extra: list, preset: str | None = None) -> str:
    q = settings.to_query()
    if preset in PRESETS:
        q["preset"] = preset  # restores the preset's caption
    if view != "space":
        q["view"] = view
    if tls:
        q["tls"] = "1"
    if projector:
        q["projector"] = "1"
    if extra and len(extra) <= EXPLORER_MAX_URL_POINTS:
        q["pts"] = ";".join(f"{x:.4g},{y:.4g}" for x, y in extra)
    return urlencode(q)



def checked_points(extra) -> list[list[float]]:
    """The added points as the page stores them ([[x, y], ...]); anything else (only a
    crafted request sends it) is refused with a message."""
    if extra is None:
        return []
    if isinstance(extra, list) and len(extra) > MAX_EXTRA_POINTS:
        raise InputError(f"at most {MAX_EXTRA_POINTS} added points; press 'clear'")
    ok = isinstance(extra, list) and all(
        isinstance(p, list | tuple) and len(p) == 2 and not any(isinstance(v, str) for v in p)
        and all(finite_number(v) is not None for v in p) for p in extra)
    if not ok:
        raise InputError("added points: not a list of finite (x, y) pairs; press 'clear'")
    return [[float(x), float(y)] for x, y in extra]


def upload_points(contents: str | None, filename: str | None) -> np.ndarray:
    """Decode a dcc.Upload data URL and parse it as CSV; ValueError with a clear message."""
    name = shown_name(filename)
    if not isinstance(contents, str) or "," not in contents:
        raise ValueError(f"{name}: empty upload")
    payload = contents.split(",", 1)[1]
    if len(payload) > EXPLORER_MAX_UPLOAD_BYTES * 4 // 3 + 4:
        raise ValueError(f"{name}: larger than {EXPLORER_MAX_UPLOAD_BYTES // 1000} kB")
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{name}: the upload is not readable") from None
    if not (isinstance(filename, str) and filename.lower().endswith(".csv")):
        raise ValueError(f"{name}: expected a .csv file with columns x, y[, label]")
    return points_from_csv_bytes(raw, name).points
