"""The map tab of /slice (issue 45, item 4): a finished slice job's partition as a raster map
that pans and zooms (bnviz.slices.slice_map rasterises and caches its tiles), cut again
exactly and drawn as vectors, with codes on click and the images on hover, once the view
holds few enough regions."""

from __future__ import annotations

import time

from dash import Input, Output, State, callback, clientside_callback, no_update

from bnviz.messages import InputError
from bnviz.records.results import load_result
from bnviz.service.cache import memoize
from bnviz.slices import slice_map
from bnviz.web.callbacks.parsing import finite_number
from bnviz.web.callbacks.plotting import axis, placeholder
from bnviz.web.callbacks.slice import ids
from bnviz.web.callbacks.slice.callbacks import hover_panel, region_panel, triggered_input
from bnviz.web.callbacks.slice.figures import slice_figure

__all__ = ["draw_map", "map_click", "map_hover", "map_parts", "map_sources", "one_arm",
           "prepare_networks", "view_rect"]

#: The graph's width the map's pixels are matched to (the page's graph at 1920x1080).
MAP_WIDTH_PX = 1024
@memoize()
def _source(job_id: str) -> slice_map.MapSource:
    """A finished slice job's map (ValueError for anything else)."""
    try:
        key = str(load_result(job_id)["key"])
    except (OSError, KeyError) as exc:
        raise ValueError(f"job {job_id} left no slice tiles") from exc
    return slice_map.open_map(key)


def _source_or_none(job_id) -> slice_map.MapSource | None:
    if not isinstance(job_id, str) or not job_id:
        return None
    try:
        return _source(job_id)
    except ValueError:
        return None


@memoize(cost=lambda job_id, rect: slice_map.recut_seconds(_source(job_id), rect))
def _recut(job_id: str, rect: tuple[float, float, float, float]) -> dict:
    return slice_map.recut_view(_source(job_id), rect)


def _arm_of(part: str) -> int:
    """The network of a partition's name ("a<arm>-b<mini-batch>", tile_store.part_name)."""
    return int(part[1:part.index("-")])


def one_arm(arrays: dict, arm: int) -> dict:
    """The arrays of one network of a slice (renamed as the first), with the shared ones."""
    mine = f"a{arm}_"
    out = {"a0_" + k[len(mine):]: v for k, v in arrays.items() if k.startswith(mine)}
    shared = {k: v for k, v in arrays.items()
              if not (k[0] == "a" and k[1:2].isdigit() and "_" in k)}
    return shared | out | {"arms": arrays["arms"][arm:arm + 1]}


@callback(Output(ids.MAP_SOURCE, "options"), Output(ids.MAP_SOURCE, "value"),
          Output(ids.TABS, "active_tab"),
          Input(ids.MAP_SOURCE, "id"), Input(ids.TILED_RESULT, "data"),
          State(ids.MAP_SOURCE, "value"))
def map_sources(_id, finished, current):
    """The finished slice jobs; one that finished in this tab is chosen and its map shown."""
    found = slice_map.finished_maps()
    if not found:
        return [{"label": "no slice job has finished: 'run as a job', or bnviz slice --submit",
                 "value": "", "disabled": True}], "", no_update
    options = [{"label": m["label"], "value": m["id"]} for m in found]
    known = [m["id"] for m in found]
    if triggered_input() == ids.TILED_RESULT and finished in known:
        return options, finished, "map"
    return options, current if current in known else known[0], no_update


@callback(Output(ids.MAP_PART, "options"), Output(ids.MAP_PART, "value"),
          Output(ids.MAP_LAYER, "max"), Output(ids.MAP_LAYER, "marks"),
          Output(ids.MAP_LAYER, "value"), Input(ids.MAP_SOURCE, "value"),
          State(ids.MAP_PART, "value"))
def map_parts(job_id, part):
    """The job's partitions (each network, each mini-batch) and its layers (the last shown)."""
    source = _source_or_none(job_id)
    if source is None:
        return [], None, 1, {}, 1
    batches = len(source.parts) > len(source.arms)
    options = [{"label": f"{source.arms[_arm_of(p)]}"
                         + (f" · mini-batch {int(p.rsplit('b', 1)[1]) + 1}" if batches else ""),
                "value": p} for p in source.parts]
    n = len(source.layers)
    return (options, part if part in source.parts else source.parts[0], n,
            {i + 1: str(i + 1) for i in range(n)}, n)


@callback(Output(ids.MAP_READY, "data"), Input(ids.MAP_SOURCE, "value"))
def prepare_networks(job_id):
    """Open the chosen job's networks and statistics (about a second), in a request of its own
    beside the map's first draw, so that the first zoom that cuts the view again does not
    wait for them."""
    source = _source_or_none(job_id)
    if source is None:
        return None
    slice_map.prepare_recut(source.key)
    return source.key


def view_rect(relayout, view, job_id, window) -> tuple[float, float, float, float]:
    """The rectangle the graph shows: the user's zoom or pan (relayoutData), else the view
    drawn before for this job, else the job's whole window (a double click: autorange)."""
    relayout = relayout if isinstance(relayout, dict) else {}
    same = isinstance(view, dict) and view.get("job") == job_id
    before = tuple(view["rect"]) if same and len(view.get("rect") or ()) == 4 else window
    if relayout.get("xaxis.autorange") or relayout.get("yaxis.autorange"):
        return window
    got = []
    for name, k in (("xaxis", 0), ("xaxis", 1), ("yaxis", 0), ("yaxis", 1)):
        v = relayout.get(f"{name}.range[{k}]")
        if v is None and isinstance(relayout.get(f"{name}.range"), list | tuple) \
                and len(relayout[f"{name}.range"]) == 2:
            v = relayout[f"{name}.range"][k]
        got.append(finite_number(v))
    rect = tuple(g if g is not None else b for g, b in zip(got, before, strict=True))
    if not (rect[0] < rect[1] and rect[2] < rect[3]):
        return before
    return rect


def _raster_figure(source, part: str, layer: int, rect) -> tuple[dict, int]:
    image, drawn, z = slice_map.map_view(source, part, layer, rect, MAP_WIDTH_PX)
    stars = [] if source.anchors is None else [{
        "type": "scatter", "mode": "markers+text", "x": source.anchors[:, 0].tolist(),
        "y": source.anchors[:, 1].tolist(), "text": ["1", "2", "3"],
        "textposition": "top center", "hoverinfo": "skip", "name": "images",
        "marker": {"symbol": "star", "size": 14, "color": "#e69f00",
                   "line": {"color": "black", "width": 1}}}]
    return {"data": stars, "layout": {
        "margin": {"l": 40, "r": 10, "t": 30, "b": 30}, "showlegend": False,
        "plot_bgcolor": "white", "dragmode": "zoom",
        "xaxis": axis(rect[0], rect[1], title={"text": "a"}, constrain="domain"),
        "yaxis": axis(rect[2], rect[3], title={"text": "b"}, scaleanchor="x",
                      constrain="domain"),
        "images": [{"source": slice_map.png_uri(image), "xref": "x", "yref": "y",
                    "x": drawn[0], "y": drawn[3], "sizex": drawn[1] - drawn[0],
                    "sizey": drawn[3] - drawn[2], "sizing": "stretch", "xanchor": "left",
                    "yanchor": "top", "layer": "below"}]}}, z


# Only a relayout that moves the view reaches the server. Plotly also reports one after every
# draw of a new figure ({"autosize": true}); sent on, it asked for the view drawn before and
# superseded a zoom made meanwhile, which Dash then dropped: the zoom was lost (seen in the
# browser test beside a busy process, 2 runs in 8).
clientside_callback(
    """function(relayout) {
        const moved = relayout && Object.keys(relayout).some(
            k => /^[xy]axis[0-9]*\\.(range|autorange)/.test(k));
        return moved ? relayout : window.dash_clientside.no_update;
    }""",
    Output(ids.MAP_ZOOM, "data"), Input(ids.MAP_GRAPH, "relayoutData"),
    prevent_initial_call=True)


@callback(Output(ids.MAP_GRAPH, "figure"), Output(ids.MAP_NOTE, "children"),
          Output(ids.MAP_VIEW, "data"),
          Input(ids.MAP_SOURCE, "value"), Input(ids.MAP_PART, "value"),
          Input(ids.MAP_LAYER, "value"), Input(ids.MAP_ZOOM, "data"),
          State(ids.MAP_VIEW, "data"))
def draw_map(job_id, part, layer, relayout, view):
    """The view as a raster map, or cut again exactly once it holds at most
    ``RECUT_MAX_REGIONS`` regions. ``relayout``: the graph's last zoom, pan or double click
    (relayoutData that moved the view); another job's starts at its whole window."""
    source = _source_or_none(job_id)
    if source is None:
        return placeholder("choose a finished slice job"), "", None
    if triggered_input() == ids.MAP_SOURCE:
        relayout = None
    part = part if part in source.parts else source.parts[0]
    number = finite_number(layer)
    k = min(max(int(number) if number is not None else len(source.layers), 1),
            len(source.layers)) - 1
    rect = view_rect(relayout, view, job_id, source.window)
    regions = slice_map.regions_in_view(source, rect)
    shown = {"job": job_id, "rect": list(rect), "part": part, "layer": k + 1, "exact": False}
    if regions <= slice_map.RECUT_MAX_REGIONS:
        try:
            t0 = time.perf_counter()
            arrays = one_arm(_recut(job_id, rect), _arm_of(part))
            seconds = time.perf_counter() - t0
            figure = slice_figure(arrays, k)
            figure["layout"]["dragmode"] = "zoom"
            count = len(arrays[f"a0_l{k}_ptr"]) - 1
            return figure, (f"exact: this view cut again, {count:,} regions of layer {k + 1} "
                            f"({seconds:.2f} s); double-click for the whole window"), \
                shown | {"exact": True}
        except (InputError, ValueError) as exc:  # busy, or a view the cap refuses
            note = f"{str(exc).splitlines()[0]}; the map instead"
    else:
        exact = slice_map.exact_regions(source, rect)
        held = f"{exact:,} regions" if exact is not None else f"about {regions:,.0f} regions"
        note = (f"map: {held} in view; zoom in to "
                f"{slice_map.RECUT_MAX_REGIONS:,} or fewer and the view is cut again exactly")
    try:
        figure, z = _raster_figure(source, part, k, rect)
    except InputError as exc:  # the server is busy: the view stays, one line says so
        return no_update, str(exc).splitlines()[0], no_update
    return figure, f"{note} (layer {k + 1} of {len(source.layers)}, zoom level {z})", shown


def _shown_arrays(view) -> dict | None:
    """The exact arrays of the view the graph shows (the cut's memo), or None on the map."""
    if not (isinstance(view, dict) and view.get("exact")):
        return None
    try:
        arrays = _recut(view["job"], tuple(float(v) for v in view["rect"]))
        return one_arm(arrays, _arm_of(view["part"]))
    except (InputError, ValueError, KeyError, TypeError):
        return None


@callback(Output(ids.MAP_HOVER, "children"), Input(ids.MAP_GRAPH, "hoverData"),
          State(ids.MAP_VIEW, "data"), prevent_initial_call=True)
def map_hover(data, view):
    return hover_panel(_shown_arrays(view), data)


@callback(Output(ids.MAP_REGION, "children"), Input(ids.MAP_GRAPH, "clickData"),
          State(ids.MAP_VIEW, "data"), prevent_initial_call=True)
def map_click(data, view):
    shown = _shown_arrays(view)
    return region_panel(shown, data, view.get("layer") if isinstance(view, dict) else None)
