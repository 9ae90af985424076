"""The lecture page's state: the URL query <-> (step, sliders, theme), and the step shown.

The URL holds the step (``?step=3``), the sliders that differ from the step's own settings
(``mu_t``, ``sigma_s``, ``batch_size``, ``depth``, the explorer's names) and the theme, so
that a student who opens the QR code's link sees the same state. ``step=0`` is the
explorer's state brought by the Lecture button (its whole query, as the explorer writes it).
Nothing here registers a callback.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from urllib.parse import parse_qs, urlencode

from bnviz.caps import (
    LECTURE_MAX_SNAPSHOT_NAME,
    LECTURE_MAX_SNAPSHOT_QUERY,
    LECTURE_MAX_SNAPSHOTS,
)
from bnviz.lecture.scenes import BATCH_ALL, BATCH_SLIDER, DEPTH_SLIDER
from bnviz.lecture.tour import TOUR, TourStep
from bnviz.params import InputError, PartitionParams
from bnviz.service.guard import strict_json

__all__ = ["LectureState", "THEMES", "explorer_step", "initial_state",
           "lecture_query", "parse_snapshots", "slider_values", "snapshots_query", "step_for"]

THEMES = ("light", "dark")

EXPLORER_VIEWS = ("space", "layers", "unit")
#: A step-0 link's keys that are not the explorer's settings (``session``: the windows'
#: shared state, assets/presenter.js; ``snaps``: the named snapshots).
NOT_SETTINGS = ("step", "theme", "view", "tls", "preset", "pts", "projector", "session",
                "snaps", "split")


@dataclass(frozen=True)
class LectureState:
    step: int  # 0: the explorer's state; 1..len(TOUR): the tour
    sliders: dict  # the four sliders' positions (slider_values)
    theme: str
    base: dict | None  # step 0: the explorer's settings (its query) and view
    message: str
    split: bool = False  # an input-space step shown without BN | with BN, side by side
    snapshots: tuple = ()  # named states: ({"name", "query"}, ...), the oldest first


def explorer_step(base: dict | None) -> TourStep:
    """Step 0: the state the explorer sent (its settings and view), every slider live."""
    base = base if isinstance(base, dict) else {}
    try:
        settings = PartitionParams.from_page(base.get("settings") or {})
    except InputError:
        settings = PartitionParams()
    view = base.get("view") if base.get("view") in EXPLORER_VIEWS else "space"
    return TourStep("explorer", "The explorer's state", "BN paper",
                    "The network, data and view you had in the explorer. Move the sliders, "
                    "or press → for the tour.", view, settings, tls=base.get("tls") is True)


def step_for(number: object, base: dict | None, split: bool = False) -> TourStep:
    """The step at ``number`` (0: the explorer's state), an input-space step shown as the
    split (without BN | with BN) when ``split`` (:func:`splittable`); ValueError for
    anything else."""
    if isinstance(number, bool) or not isinstance(number, int) or not \
            0 <= number <= len(TOUR):
        raise ValueError(f"step: a whole number from 1 to {len(TOUR)}")
    step = explorer_step(base) if number == 0 else TOUR[number - 1]
    return replace(step, scene="split") if split is True and splittable(step) else step


def splittable(step: TourStep) -> bool:
    """Whether a step can be shown without BN | with BN: an input-space step, but not
    Figure 9's colours (the two sides' TLS errors would need one colour scale)."""
    return step.scene == "space" and not step.tls


def slider_values(settings: PartitionParams) -> dict:
    """The four sliders' positions for settings: mu, log2 sigma, log2 batch ("all": the
    slider's last position), depth."""
    batch = BATCH_ALL if settings.batch_size is None else min(
        BATCH_ALL - 1, max(BATCH_SLIDER[0], round(math.log2(settings.batch_size))))
    return {"mu": settings.mu_t, "sigma": round(math.log2(settings.sigma_s), 6),
            "batch": batch, "depth": min(settings.depth, DEPTH_SLIDER[1])}


def _step_number(raw: object) -> int | None:
    if raw is None:
        return None
    text = str(raw)
    # isdigit() also takes '²' and 5000-digit strings, which int() refuses
    if text.isascii() and text.isdigit() and len(text) <= 3 and int(text) <= len(TOUR):
        return int(text)
    return next((i for i, s in enumerate(TOUR, 1) if s.key == text), None)


def initial_state(query: dict) -> LectureState:
    """The state of a lecture URL; a tampered or stale link falls back to step 1 (or the
    step's own sliders) with a message saying what was ignored."""
    query = {k: (v[-1] if isinstance(v, list) and v else v) for k, v in query.items()}
    message = []
    step = _step_number(query.get("step", 1))
    if step is None:
        message.append(f"The link's step {str(query.get('step'))[:20]!r} is not one of "
                       f"1-{len(TOUR)}; showing step 1.")
        step = 1
    theme = query.get("theme") if query.get("theme") in THEMES else "light"
    base = None
    if step == 0:
        settings_query = {k: v for k, v in query.items() if k not in NOT_SETTINGS}
        try:
            PartitionParams.from_page(settings_query)
        except InputError as exc:
            message.append(f"The explorer's settings were not used ({exc}).")
            settings_query = {}
        base = {"settings": settings_query, "view": query.get("view", "space"),
                "tls": query.get("tls") == "1"}
    step_settings = step_for(step, base).settings
    sliders = slider_values(step_settings)
    moved = {k: query[k] for k in ("mu_t", "sigma_s", "batch_size", "depth") if k in query}
    if moved and step != 0:
        try:
            settings = PartitionParams.from_page(step_settings.to_query() | moved)
            sliders = slider_values(settings)
        except InputError as exc:
            message.append(f"The link's sliders were not used ({exc}).")
    snapshots, problem = parse_snapshots(query.get("snaps"))
    if problem:
        message.append(problem)
    return LectureState(step, sliders, theme, base, " ".join(message),
                        split=query.get("split") == "1", snapshots=snapshots)


def _snapshot(item: object) -> dict | None:
    """One ``[name, query]`` pair of a link as ``{"name", "query"}``, or None when it is not a
    short printable name and the query of a state this page can show."""
    if not (isinstance(item, list) and len(item) == 2 and all(isinstance(v, str)
                                                              for v in item)):
        return None
    name, query = item[0].strip(), item[1]
    if not name or len(name) > LECTURE_MAX_SNAPSHOT_NAME or not name.isprintable() or \
            len(query) > LECTURE_MAX_SNAPSHOT_QUERY or "snaps" in parse_qs(query):
        return None
    parsed = parse_qs(query, keep_blank_values=True)
    if "step" not in parsed or initial_state(parsed).message:
        return None
    return {"name": name, "query": query}


def parse_snapshots(raw: object) -> tuple[tuple[dict, ...], str]:
    """The named snapshots of a link's ``snaps`` (JSON: ``[[name, query], ...]``, as
    :func:`snapshots_query` writes it), and what was not used; each query is checked as a
    lecture link is (:func:`initial_state`)."""
    if raw is None or raw == "":
        return (), ""
    raw = raw[-1] if isinstance(raw, list) and raw else raw
    try:
        items = strict_json(raw) if isinstance(raw, str) and len(raw) < 20_000 else None
    except ValueError:
        items = None
    if not isinstance(items, list):
        return (), "The link's snapshots were not used (not a list of [name, query] pairs)."
    kept = [s for s in map(_snapshot, items[-LECTURE_MAX_SNAPSHOTS:]) if s is not None]
    dropped = len(items) - len(kept)
    return tuple(kept), (f"{dropped} of the link's snapshots were not used (at most "
                         f"{LECTURE_MAX_SNAPSHOTS}, each a name of 1-"
                         f"{LECTURE_MAX_SNAPSHOT_NAME} characters and a state of this tour)."
                         if dropped else "")


def snapshots_query(snapshots: object) -> str:
    """The URL query part that keeps the snapshots (``snaps=...``), or "" for none."""
    items = [[s["name"], s["query"]] for s in snapshots or ()
             if isinstance(s, dict) and isinstance(s.get("name"), str)
             and isinstance(s.get("query"), str)]
    return urlencode({"snaps": json.dumps(items, separators=(",", ":"), ensure_ascii=False)}
                     ) if items else ""


def lecture_query(step: int, step_def: TourStep, settings: PartitionParams, theme: str,
                  base: dict | None, split: bool = False) -> str:
    """The URL query of a state: the step, the sliders that moved from the step's own
    settings, the theme; step 0 carries the explorer's settings (with the sliders applied)."""
    q: dict[str, str] = {"step": str(step)}
    if step == 0:
        q |= settings.to_query()
        if base and base.get("view") in EXPLORER_VIEWS and base["view"] != "space":
            q["view"] = base["view"]
        if base and base.get("tls") is True:
            q["tls"] = "1"
    else:
        own = step_def.settings
        mine = settings.to_query()
        for k in ("mu_t", "sigma_s", "batch_size", "depth"):
            if getattr(settings, k) != getattr(own, k):
                q[k] = mine.get(k, "all" if getattr(settings, k) is None else
                                str(getattr(settings, k)))
    if theme == "dark":
        q["theme"] = "dark"
    if split:
        q["split"] = "1"
    return urlencode(q)

