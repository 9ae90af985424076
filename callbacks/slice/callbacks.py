"""/slice page callbacks: the jobs that kept networks, the images, the slice job (start, poll,
cancel through :mod:`callbacks.background`), its figures, hover and click."""

from __future__ import annotations

from dash import Input, Output, State, callback, ctx, html, no_update

from bnviz.params import SlicePageParams, parse
from bnviz.params.slice import AS_A_JOB
from bnviz.service.cache import memoize
from bnviz.slices.inspect import image_at, region_info
from bnviz.slices.job import load_slices
from bnviz.slices.sources import job_images, kept_networks
from bnviz.slices.uploads import save_upload
from bnviz.web.callbacks.background import (
    BackgroundIds,
    BackgroundRun,
    percent,
    register_background,
)
from bnviz.web.callbacks.parsing import finite_number, shown_name
from bnviz.web.callbacks.plotting import placeholder
from bnviz.web.callbacks.slice import ids
from bnviz.web.callbacks.slice.figures import density_figure, slice_figure, thumbnail

LABELS = {"job": "job", "arms": "network", "images": "images", "bn": "BN",
          "batches": "mini-batches K", "extent": "window"}


@callback(Output(ids.SOURCE, "options"), Output(ids.SOURCE, "value"),
          Input(ids.SOURCE, "id"), Input(ids.UPLOADS, "data"), State(ids.SOURCE, "value"))
def sources(_id, uploads, current):
    found = kept_networks()
    options = [{"label": s["label"], "value": s["id"]} for s in found]
    options += [u for u in (uploads if isinstance(uploads, list) else [])
                if isinstance(u, dict) and str(u.get("value", "")).startswith("up-")]
    if triggered_input() == ids.UPLOADS and options:  # a new upload: show it
        return options, options[-1]["value"]
    if not options:
        return [{"label": "no job kept a network yet: train one on the jobs page",
                 "value": "", "disabled": True}], ""
    ids_ = [o["value"] for o in options]
    return options, current if current in ids_ else ids_[0]


def triggered_input() -> str | None:
    """The input that fired the callback (None when called outside one: tests)."""
    try:
        return ctx.triggered_id
    except Exception:  # dash's MissingCallbackContextException
        return None


@callback(Output(ids.ARM, "options"), Output(ids.ARM, "value"), Output(ids.OTHER, "options"),
          Output(ids.OTHER, "value"), Input(ids.SOURCE, "value"), State(ids.ARM, "value"),
          State(ids.OTHER, "value"))
def arms(job_id, arm, other):
    if not isinstance(job_id, str):
        return [], None, [], None
    if job_id.startswith("up-"):
        return ([{"label": "the uploaded network", "value": "upload"}], "upload",
                [{"label": "none", "value": ""}], "")
    found = {s["id"]: s for s in kept_networks()}
    if job_id not in found:
        return [], None, [], None
    names = found[job_id]["arms"]
    options = [{"label": a, "value": a} for a in names]
    bn = [a for a in names if "bn" in a] or names
    first = arm if arm in names else bn[0]
    rest = [a for a in names if a != first]
    beside = other if other in rest or other == "" else next(
        (a for a in rest if "zero" in a), rest[0] if rest else "")
    return options, first, [{"label": "none", "value": ""}] + [
        {"label": a, "value": a} for a in rest], beside


@callback(Output(ids.IMAGES, "value"), Input(ids.RANDOM, "n_clicks"),
          State(ids.SOURCE, "value"), prevent_initial_call=True)
def random_images(n_clicks, job_id):
    import numpy as np

    clicks = finite_number(n_clicks)
    rng = np.random.default_rng(int(clicks) % 2**31 if clicks is not None else 0)
    return ",".join(str(int(v)) for v in sorted(rng.choice(300, 3, replace=False)))


@callback(Output(ids.THUMBS, "children"), Output(ids.MESSAGE, "children", allow_duplicate=True),
          Output(ids.MESSAGE, "is_open", allow_duplicate=True),
          Input(ids.IMAGES, "value"), Input(ids.SOURCE, "value"), Input(ids.DATA, "value"),
          prevent_initial_call=True)
def thumbs(text, job_id, data):
    if not job_id or not isinstance(job_id, str):
        return [], no_update, no_update
    try:
        idx = [int(v) for v in str(text).split(",")]
        if len(idx) != 3 or min(idx) < 0:
            raise ValueError
    except ValueError:
        return [], "images: three test image indices, e.g. 0,1,2", True
    try:
        images, labels = job_images(job_id, idx, data)
    except (ValueError, OSError) as exc:
        return [], str(exc).splitlines()[0], True
    return [html.Figure([html.Img(src=thumbnail(x, 36), width=36, height=36),
                         html.Figcaption(f"{k + 1}: #{i}" + (f" ({c})" if c >= 0 else ""),
                                         className="small text-center")], className="mb-0")
            for k, (x, i, c) in enumerate(zip(images, idx, labels, strict=True))], "", False


def parse_params(job_id, arm, other, images, bn, batches, extent, data="digits") -> dict:
    raw = {"job": job_id or "", "arms": ",".join(a for a in (arm, other) if a), "data": data,
           "images": str(images or ""), "bn": bn, "batches": batches,
           "extent": extent if extent not in (None, "") else 0}
    from dataclasses import asdict

    return asdict(parse(SlicePageParams, raw, LABELS))


#: What a cut is made of, for the page's cut and for its slice job alike (parse_params).
CONTROLS = [State(ids.SOURCE, "value"), State(ids.ARM, "value"), State(ids.OTHER, "value"),
            State(ids.IMAGES, "value"), State(ids.BN, "value"), State(ids.BATCHES, "value"),
            State(ids.EXTENT, "value"), State(ids.DATA, "value")]

compute, poll, cancel = register_background(BackgroundRun(
    BackgroundIds(start=ids.COMPUTE, job=ids.JOB, poll=ids.POLL, progress=ids.PROGRESS,
                  status=ids.STATUS, message=ids.MESSAGE, result=(ids.RESULT, "data"),
                  cancel=ids.CANCEL),
    job_type="slice",
    controls=CONTROLS,
    params=parse_params,
    running=lambda job: f"cutting: {percent(job.progress)}%",
    done=lambda job: done_text(job.summary or {})))


def tiled_params(job_id, arm, other, images, bn, batches, extent, data="digits") -> dict:
    """The page's controls as a slice job's parameters (``slice-tiles``): checked by the
    page's model (a job's or an uploaded network, three images, no file of the server), with
    a slice job's region cap and the tiles the job chooses."""
    params = parse_params(job_id, arm, other, images, bn, batches, extent, data)
    del params["max_regions"]
    return params


tiled_compute, tiled_poll, tiled_cancel = register_background(BackgroundRun(
    BackgroundIds(start=ids.TILED_COMPUTE, job=ids.TILED_JOB, poll=ids.TILED_POLL,
                  progress=ids.TILED_PROGRESS, status=ids.TILED_STATUS, message=ids.MESSAGE,
                  result=(ids.TILED_RESULT, "data"), cancel=ids.TILED_CANCEL),
    job_type="slice-tiles",
    controls=CONTROLS,
    params=tiled_params,
    running=lambda job: f"cutting the tiles: {percent(job.progress)}%",
    done=lambda job: tiled_done_text(job.summary or {})))


@callback(Output(ids.TILED_BOX, "hidden"), Input(ids.MESSAGE, "children"),
          Input(ids.TILED_JOB, "data"))
def offer_job(message, kept):
    """Show "run as a job" once the page's cut was refused over its cap (the refusal says a
    slice job could cut it), or while this tab has a slice job."""
    return not ((isinstance(message, str) and AS_A_JOB in message)
                or (isinstance(kept, str) and bool(kept)))


def tiled_done_text(summary: dict) -> str:
    """The status line of a finished slice job: each network's regions per layer, the tiles
    and the time."""
    counts = "; ".join(f"{arm}: {', '.join(f'{n:,}' for n in regions)}"
                       for arm, regions in zip(summary.get("arms", []),
                                               summary.get("regions", []), strict=False))
    return (f"done: regions per layer {counts} ({summary.get('tiles', 0)} tiles, "
            f"{summary.get('seconds', 0):.0f} s of cutting)")


def done_text(summary: dict) -> str:
    """The status line of a finished slice: its time, and which networks' BN is frozen (a
    smart initialisation keeps its statistics in train mode too)."""
    text = f"done: {summary.get('seconds', 0):.1f} s of cutting"
    frozen = summary.get("frozen") or []
    if frozen:
        text += (f"; {', '.join(frozen)} keeps its frozen BN statistics in train mode too "
                 "(BN as initialisation only)")
    return text


@callback(Output(ids.UPLOADS, "data"), Output(ids.MESSAGE, "children", allow_duplicate=True),
          Output(ids.MESSAGE, "is_open", allow_duplicate=True),
          Input(ids.UPLOAD, "contents"), State(ids.UPLOAD, "filename"),
          State(ids.UPLOAD_ARCH, "value"), State(ids.UPLOADS, "data"),
          prevent_initial_call=True)
def upload(contents, filename, arch, uploads):
    """Keep an uploaded network (checked by loading it) and offer it as a source."""
    import base64
    import binascii

    try:
        if not isinstance(contents, str) or "," not in contents:
            raise ValueError("the upload could not be read")
        data = base64.b64decode(contents.split(",", 1)[1], validate=True)
        reference, net = save_upload(data, str(filename or ""), arch)
    except (ValueError, binascii.Error) as exc:
        return no_update, f"upload refused: {str(exc).splitlines()[0]}", True
    kept = [u for u in (uploads if isinstance(uploads, list) else []) if isinstance(u, dict)
            and u.get("value") != reference]
    label = f"upload · {shown_name(filename, 40)} · {len(net.nonlinear)} layers"
    return kept + [{"label": label, "value": reference}], "", False


def _stored(result):
    """The slice job's arrays (memoised per process: hover and click read them often), or
    None for anything that is not a finished slice job's result."""
    if not isinstance(result, str):
        return None
    try:
        stored = _load(result)
    except (OSError, ValueError, KeyError):
        return None
    return stored if {"arms", "window", "a0_names"} <= set(stored) else None


@memoize()
def _load(job_id: str) -> dict:
    return load_slices(job_id)


def _layer(value, stored: dict, arm: int = 0) -> int:
    """The slider's layer (1-based) as a 0-based index into ``arm``'s layers."""
    n = len(stored[f"a{arm}_names"])
    number = finite_number(value)
    return min(max(int(number) if number is not None else 1, 1), n) - 1


def _point(data) -> tuple[float, float, dict] | None:
    """(a, b, the point) of a graph's hover or click data, or None."""
    points = data.get("points") if isinstance(data, dict) else None
    point = points[0] if isinstance(points, list) and points and isinstance(points[0], dict) \
        else None
    if point is None:
        return None
    a, b = finite_number(point.get("x")), finite_number(point.get("y"))
    return None if a is None or b is None else (a, b, point)


@callback(Output(ids.GRAPH, "figure"), Output(ids.DENSITY, "figure"),
          Output(ids.LAYER, "max"), Output(ids.LAYER, "marks"),
          Input(ids.RESULT, "data"), Input(ids.LAYER, "value"),
          prevent_initial_call="initial_duplicate")
def show(result, layer):
    stored = _stored(result)
    if stored is None:
        empty = placeholder("choose a job, a network and three images, then cut")
        return empty, placeholder(""), no_update, no_update
    n = len(stored["a0_names"])
    layer = _layer(layer, stored)  # the slider counts layers from 1
    marks = {i + 1: str(i + 1) for i in range(n)}
    return slice_figure(stored, layer), density_figure(stored), n, marks


@callback(Output(ids.HOVER, "children"), Input(ids.GRAPH, "hoverData"),
          State(ids.RESULT, "data"), prevent_initial_call=True)
def hover(data, result):
    return hover_panel(_stored(result), data)


def hover_panel(stored: dict | None, data) -> list | object:
    """The image at the hovered point of a slice's graph, and its class."""
    found = _point(data)
    if stored is None or found is None:
        return no_update
    a, b, point = found
    cls = finite_number(point.get("z"))
    return [html.Img(src=thumbnail(image_at(stored, a, b), 64), width=64, height=64),
            html.Div([html.Div(f"a {a:.3f}"), html.Div(f"b {b:.3f}"),
                      html.Div(f"class {int(cls)}" if cls is not None and cls >= 0 else "")])]


@callback(Output(ids.REGION, "children"), Input(ids.GRAPH, "clickData"),
          State(ids.RESULT, "data"), State(ids.LAYER, "value"), prevent_initial_call=True)
def click(data, result, layer):
    return region_panel(_stored(result), data, layer)


def region_panel(stored: dict | None, data, layer) -> list | str | object:
    """The clicked region of a slice's graph: its network, layer, area, distances and codes."""
    found = _point(data)
    if stored is None or found is None:
        return no_update
    a, b, point = found
    curve = finite_number(point.get("curveNumber"))
    arm = int(curve or 0) // max(1, _traces_per_panel(stored)) if curve and curve > 0 else 0
    arm = min(arm, len(stored["arms"]) - 1)
    layer = _layer(layer, stored, arm)
    info = region_info(stored, arm, layer, a, b)
    if info is None:
        return "outside the window"
    return [html.B(f"{stored['arms'][arm]}: region {info['region']} of layer {layer + 1}"),
            html.Div(f"area {info['area']:.3g}, nearest facet {info['facet_distance']:.3g}, "
                     f"decision boundary {info['boundary_distance']:.3g}"),
            html.Div([html.Code(c, className="d-block") for c in info["codes"][-3:]],
                     title="the code of each layer up to this one (last 3 shown)")]


def _traces_per_panel(stored) -> int:
    b = 0
    while f"a0_boundary{b}" in stored:
        b += 1
    return 3 + b
