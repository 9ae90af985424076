"""Explorer callbacks: control values -> validated settings -> bnviz partition -> figure."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from dash import Input, Output, callback, html, no_update

from bnviz.datasets import DATASETS, make_dataset
from bnviz.limits import PartitionTooLarge
from bnviz.network import ACTIVATIONS, MODES, random_network, select_batch
from bnviz.partition import box_from_extent, compute_partition
from callbacks.figures import partition_figure
from layouts.ids import Explorer as ids

#: Caps for one web request (the CLI has looser ones): width x depth and regions.
WEB_MAX_DEPTH = 12
WEB_MAX_WIDTH = 64
WEB_MAX_REGIONS = 150_000
WEB_MAX_POINTS = 2000


class InputError(ValueError):
    """A control value the explorer cannot use; its message is shown in the page."""


@dataclass(frozen=True)
class ExplorerSettings:
    depth: int
    width: int
    activation: str
    mode: str
    dataset: str
    n_points: int
    seed: int
    batch_size: int | None
    layer: int


def _int(value, name: str, lo: int, hi: int) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name}: enter a whole number from {lo} to {hi}") from None
    if not np.isfinite(number) or number != int(number) or not lo <= number <= hi:
        raise InputError(f"{name}: enter a whole number from {lo} to {hi}, got {value}")
    return int(number)


def _choice(value, name: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise InputError(f"{name}: choose one of {', '.join(options)}")
    return value


def parse_settings(depth, width, activation, mode, dataset, n_points, seed, batch_size,
                   layer) -> ExplorerSettings:
    """Validate every control value; raises InputError with a message for the page."""
    depth = _int(depth, "depth", 1, WEB_MAX_DEPTH)
    n_points = _int(n_points, "points", 2, WEB_MAX_POINTS)
    text = str(batch_size).strip().lower() if batch_size is not None else "all"
    batch = None if text in ("", "all") else _int(text, "BN batch size", 2, n_points)
    return ExplorerSettings(
        depth=depth,
        width=_int(width, "width", 2, WEB_MAX_WIDTH),
        activation=_choice(activation, "activation", ACTIVATIONS),
        mode=_choice(mode, "mode", MODES),
        dataset=_choice(dataset, "data set", DATASETS),
        n_points=n_points,
        seed=_int(seed, "weight seed", 0, 2**32 - 1),
        batch_size=batch,
        layer=min(_int(layer if layer is not None else depth, "layer", 1, WEB_MAX_DEPTH), depth),
    )


def _summary(part, settings: ExplorerSettings) -> html.Div:
    rows = [html.Tr([html.Td(f"layer {lp.layer}"), html.Td(f"{len(lp.regions)}"),
                     html.Td(f"{lp.stats.tls_error.sum():.3g}")]) for lp in part.layers]
    return html.Div([
        html.Table([html.Thead(html.Tr([html.Th("layer"), html.Th("regions"),
                                        html.Th("TLS error")])), html.Tbody(rows)],
                   className="table table-sm"),
        html.P(f"computed in {1000 * part.seconds:.0f} ms on {part.device}",
               className="text-muted"),
    ])


@callback(
    Output(ids.GRAPH, "figure"),
    Output(ids.SUMMARY, "children"),
    Output(ids.MESSAGE, "children"),
    Output(ids.MESSAGE, "is_open"),
    Output(ids.LAYER, "max"),
    Output(ids.LAYER, "marks"),
    Input(ids.DEPTH, "value"),
    Input(ids.WIDTH, "value"),
    Input(ids.ACTIVATION, "value"),
    Input(ids.MODE, "value"),
    Input(ids.DATASET, "value"),
    Input(ids.N_POINTS, "value"),
    Input(ids.SEED, "value"),
    Input(ids.BATCH_SIZE, "value"),
    Input(ids.LAYER, "value"),
)
def update_partition(depth, width, activation, mode, dataset, n_points, seed, batch_size,
                     layer):
    try:
        s = parse_settings(depth, width, activation, mode, dataset, n_points, seed, batch_size,
                           layer)
        data = make_dataset(s.dataset, s.n_points, s.seed)
        net = random_network(s.depth, s.width, s.activation, mode=s.mode, seed=s.seed)
        batch = select_batch(data.points, s.batch_size, s.seed)
        part = compute_partition(net, batch, box_from_extent(3.0), max_regions=WEB_MAX_REGIONS)
    except (InputError, PartitionTooLarge, ValueError) as exc:
        return no_update, no_update, str(exc), True, no_update, no_update
    marks = {i: str(i) for i in range(1, s.depth + 1)}
    return (partition_figure(part, data.points, s.layer), _summary(part, s), "", False,
            s.depth, marks)
