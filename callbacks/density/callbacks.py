"""Density page callbacks: start/poll/cancel the Figure 3 run (a ``density`` job, through
:mod:`callbacks.background`), draw its result."""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
from dash import Input, Output, State, callback, no_update

from bnviz.params import DensityPageParams, parse
from bnviz.views.density import load_density, near_data_ratios
from bnviz.web.callbacks.background import (
    BackgroundIds,
    BackgroundRun,
    percent,
    register_background,
)
from bnviz.web.callbacks.density import ids
from bnviz.web.callbacks.density.figures import density_figure, near_ratio_figure

BOX = (-3.0, 3.0, -3.0, 3.0)


#: What the page calls the controls whose names differ from the parameters'.
LABELS = {"n_points": "points", "weight_seed": "weight seed", "data_seed": "data seed",
          "eps": "ε", "dataset": "data set"}


def parse_params(depth, width, dataset, n_points, weight_seed, data_seed, grid, eps) -> dict:
    """Validate the controls into the run's parameters (InputError, a ValueError, naming the
    control; the cost cap is checked here, before anything starts)."""
    params = parse(DensityPageParams, {
        "depth": depth, "width": width, "dataset": dataset, "n_points": n_points,
        "weight_seed": weight_seed, "data_seed": data_seed, "grid": grid, "eps": eps}, LABELS)
    return asdict(params)


def parse_layers(text, depth: int) -> list[int]:
    try:
        layers = sorted({int(v) for v in str(text).split(",") if v.strip()})
    except ValueError:
        raise ValueError("layers: comma-separated layer numbers, e.g. 1,7,11") from None
    if not layers or layers[0] < 1 or layers[-1] > depth or len(layers) > 6:
        raise ValueError(f"layers: 1 to 6 layers between 1 and the depth ({depth})")
    return layers


compute, poll, cancel = register_background(BackgroundRun(
    BackgroundIds(start=ids.COMPUTE, job=ids.JOB, poll=ids.POLL, progress=ids.PROGRESS,
                  status=ids.STATUS, message=ids.MESSAGE, result=(ids.RESULT, "data"),
                  cancel=ids.CANCEL),
    job_type="density",
    controls=[State(ids.DEPTH, "value"), State(ids.WIDTH, "value"), State(ids.DATASET, "value"),
              State(ids.N_POINTS, "value"), State(ids.WEIGHT_SEED, "value"),
              State(ids.DATA_SEED, "value"), State(ids.GRID, "value"), State(ids.EPS, "value")],
    params=parse_params,
    running=lambda job: f"computing: {percent(job.progress)}% (3 modes)",
    done=lambda job: "done"))


@callback(Output(ids.HEATMAPS, "figure"), Output(ids.RATIOS, "figure"),
          Output(ids.MESSAGE, "children", allow_duplicate=True),
          Output(ids.MESSAGE, "is_open", allow_duplicate=True),
          Input(ids.RESULT, "data"), Input(ids.LAYERS, "value"), Input(ids.RADIUS, "value"),
          prevent_initial_call="initial_duplicate")  # a result kept from an earlier visit
def show(result, layers_text, radius):
    if not result:
        return no_update, no_update, no_update, no_update
    try:
        try:
            r = float(radius)
        except (TypeError, ValueError, OverflowError):
            r = math.nan
        if not (math.isfinite(r) and r > 0):
            raise ValueError("r: enter a distance > 0")
        try:
            stored = load_density(result)
        except (OSError, ValueError):
            raise ValueError("the stored result is gone: press compute again") from None
        counts = stored["counts"]
        layers = parse_layers(layers_text, counts.shape[1])
    except ValueError as exc:
        return no_update, no_update, str(exc), True
    modes = [str(m) for m in stored["modes"]]
    ratios = near_data_ratios(counts, BOX, stored["data"], r)
    return (density_figure(counts, modes, layers, stored["data"], BOX),
            near_ratio_figure(np.asarray(ratios), modes), "", False)
