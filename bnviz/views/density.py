"""Where the partition concentrates: Figure 3 of the BN paper at its scale.

For layer j, the concentration at a grid point p is the number of units k of layer j whose
folded hyperplane F_{j,k} passes through the eps-ball around p.  It is estimated from signs:
F_{j,k} crosses the ball when h_{j,k} is strictly positive at one and strictly negative at
another of p and the grid points q with |p - q| <= eps (eps in grid cells; the default 1
cell uses p's 4 neighbours).  Exact zeros are neither sign: a region where h is 0 (every
input dead, zero bias + ReLU) has no facet, while a line through a grid point still counts.
A facet that crosses a segment p-q an even number of times is missed; on a fine grid that is
rare, and tests/views/test_density.py compares the counts with the exact facets of small networks.

The forward pass of the grid is batched in torch (cuda when available) in bands of rows with
a halo of ceil(eps) rows, so memory stays bounded at any grid size; float32 by default (the
paper-scale network has 1024 units x 11 layers; this is a grid estimate, not exact geometry),
float64 on request.

The density page runs Figure 3 for the three modes as a job of type ``density``
(:data:`DENSITY_JOB`, on the job worker: :mod:`bnviz.jobs`); its counts are the job's result
file, so the same settings are computed once, also across restarts.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from bnviz.caps import MAX_DENSITY_WORK
from bnviz.core.network import MODES, Network, layer_statistics, random_network
from bnviz.data.datasets import make_dataset
from bnviz.device import pick_device
from bnviz.params.cost import density_work
from bnviz.params.density import DensityPageParams
from bnviz.records.results import load_result
from bnviz.records.types import DistInfo, JobContext, JobType, validate_params

__all__ = ["DENSITY_JOB", "MAX_DENSITY_WORK", "DensityResult", "ball_offsets",
           "check_density_params", "concentration", "density_work", "load_density",
           "near_data_ratio", "near_data_ratios", "run_density_job"]

#: Grid points x units held at once (bounds memory: 2^25 float32 = 128 MB per layer tensor).
_BAND_ELEMENTS = 2**25


def ball_offsets(eps: float) -> list[tuple[int, int]]:
    """Grid offsets (di, dj) != (0, 0) with di^2 + dj^2 <= eps^2 (eps in grid cells)."""
    r = int(math.floor(eps))
    return [(di, dj) for di in range(-r, r + 1) for dj in range(-r, r + 1)
            if (di, dj) != (0, 0) and di * di + dj * dj <= eps * eps + 1e-12]


@dataclass(frozen=True)
class DensityResult:
    layers: tuple[int, ...]
    counts: np.ndarray  # (len(layers), grid, grid) int32, row 0 at the bottom of the box
    box: tuple[float, float, float, float]
    grid: int
    eps: float  # in grid cells
    seconds: float
    device: str
    flops: float  # multiply-adds x 2 of the forward pass

    def cell(self) -> float:
        return (self.box[1] - self.box[0]) / self.grid


def concentration(net: Network, data: np.ndarray, layers: Sequence[int], grid: int = 128,
                  eps: float = 1.0, box: tuple[float, float, float, float] = (-3, 3, -3, 3),
                  dtype: torch.dtype = torch.float32, device: torch.device | str | None = None,
                  progress: Callable[[float], None] | None = None) -> DensityResult:
    """Concentration of each requested layer's facets at every grid point (Figure 3).

    BN statistics (mode ``bn``) are those of ``data`` (test-time statistics of the whole
    data set).  ``progress(fraction)`` is called after each band; it may raise
    :class:`~bnviz.records.types.Cancelled`.
    """
    t0 = time.perf_counter()
    dev = torch.device(device) if device is not None else pick_device()
    layers = tuple(sorted(set(int(j) for j in layers)))
    if not layers or layers[0] < 1 or layers[-1] > net.depth:
        raise ValueError(f"layers must be within 1..{net.depth}, got {list(layers)}")
    if not 2 <= grid <= 2048:
        raise ValueError(f"grid must be from 2 to 2048, got {grid}")
    if not 0 < eps <= 16:
        raise ValueError(f"eps must be in (0, 16] grid cells, got {eps}")
    offsets = ball_offsets(eps)
    if not offsets:
        raise ValueError(f"eps = {eps} cells reaches no neighbouring grid point (use >= 1)")
    halo = max(abs(di) for di, _ in offsets)
    stats = layer_statistics(net, data)
    ws = [torch.as_tensor(w / st.sigma[:, None], dtype=dtype, device=dev)
          for w, st in zip(net.weights, stats, strict=True)]
    bs = [torch.as_tensor(-st.mu / st.sigma, dtype=dtype, device=dev) for st in stats]
    slope = net.negative_slope
    x0, x1, y0, y1 = box
    xs = torch.as_tensor(x0 + (np.arange(grid) + 0.5) * (x1 - x0) / grid, dtype=dtype,
                         device=dev)
    ys = torch.as_tensor(y0 + (np.arange(grid) + 0.5) * (y1 - y0) / grid, dtype=dtype,
                         device=dev)
    counts = torch.zeros((len(layers), grid, grid), dtype=torch.int32, device=dev)
    # bands bound memory, and at least 8 of them give the progress bar (and cancel) steps
    band = max(1, min(_BAND_ELEMENTS // (grid * max(net.widths)) - 2 * halo, -(-grid // 8)))
    last = layers[-1]
    for r0 in range(0, grid, band):  # bands of rows bound memory; each is fully batched
        r1 = min(grid, r0 + band)
        lo, hi = max(0, r0 - halo), min(grid, r1 + halo)
        gy, gx = torch.meshgrid(ys[lo:hi], xs, indexing="ij")
        z = torch.stack([gx.reshape(-1), gy.reshape(-1)], 1)
        for j in range(last):
            h = torch.addmm(bs[j], z, ws[j].T)
            if j + 1 in layers:
                # F_{j,k} crosses the ball when h takes both strict signs in it; a region
                # where h is exactly 0 (every input dead under zero bias + ReLU) is no facet
                crossed = None
                for s in ((h > 0).view(hi - lo, grid, -1), (h < 0).view(hi - lo, grid, -1)):
                    seen = s[r0 - lo : r1 - lo].clone()
                    for di, dj in offsets:  # a few neighbour offsets
                        src = s[r0 - lo + di : r1 - lo + di] if 0 <= r0 + di and \
                            r1 + di <= grid else _shift_rows(s, r0 - lo + di, r1 - r0)
                        seen |= _shift_cols(src, dj)
                    crossed = seen if crossed is None else crossed & seen
                counts[layers.index(j + 1), r0:r1] = crossed.sum(-1, dtype=torch.int32)
            z = F.leaky_relu(h, slope)
        if progress is not None:
            progress(r1 / grid)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    widths = (2, *net.widths)
    flops = 2.0 * grid * (grid + 2 * halo) * sum(widths[i] * widths[i + 1] for i in range(last))
    return DensityResult(layers, counts.cpu().numpy(), tuple(float(v) for v in box), grid,
                         float(eps), time.perf_counter() - t0, str(dev), flops)


def _shift_rows(s: torch.Tensor, start: int, n: int) -> torch.Tensor:
    """Rows start..start+n of s, replicating the edge rows outside (no change across the
    box's border)."""
    idx = torch.arange(start, start + n, device=s.device).clamp(0, s.shape[0] - 1)
    return s.index_select(0, idx)


def _shift_cols(s: torch.Tensor, dj: int) -> torch.Tensor:
    """s shifted by dj columns, replicating the edge columns (the box's border)."""
    if dj == 0:
        return s
    idx = (torch.arange(s.shape[1], device=s.device) + dj).clamp(0, s.shape[1] - 1)
    return s.index_select(1, idx)


def near_data_ratio(result: DensityResult, data: np.ndarray, radius: float) -> np.ndarray:
    """Per layer: mean concentration at grid points within ``radius`` of a data point,
    divided by the mean over the whole box (1 = no concentration near the data)."""
    return near_data_ratios(result.counts, result.box, data, radius)


def near_data_ratios(counts: np.ndarray, box: tuple[float, ...], data: np.ndarray,
                     radius: float) -> np.ndarray:
    """:func:`near_data_ratio` for count arrays (..., grid, grid) on ``box``."""
    x0, x1, y0, y1 = box
    g = counts.shape[-1]
    xs = x0 + (np.arange(g) + 0.5) * (x1 - x0) / g
    ys = y0 + (np.arange(g) + 0.5) * (y1 - y0) / g
    gy, gx = np.meshgrid(ys, xs, indexing="ij")
    pts = torch.as_tensor(np.stack([gx.ravel(), gy.ravel()], 1))
    d = torch.cdist(pts, torch.as_tensor(np.asarray(data, dtype=np.float64))).amin(1)
    near = (d <= radius).numpy().reshape(g, g)
    flat = counts.reshape(-1, g, g).astype(np.float64)
    whole = flat.mean((1, 2))
    close = flat[:, near].mean(1) if near.any() else np.full(len(flat), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(whole > 0, close / whole, np.nan)
    return ratio.reshape(counts.shape[:-2])


# --------------------------------------------------------------------------- the page's job


def check_density_params(raw: dict) -> dict:
    """The run's parameters checked by the one parameter layer (the page's
    :class:`~bnviz.params.density.DensityPageParams`, with its cost cap on grid^2 x depth x
    width^2); ParamError with one line naming the parameter."""
    return dataclasses.asdict(validate_params(DensityPageParams, raw, "density"))


def run_density_job(params: dict, ctx: JobContext, dist: DistInfo) -> dict:
    """Figure 3 for the three modes (one network each, the same weight seed): the result
    holds counts (3, L, grid, grid) for every layer (the near-data plot shows each), the
    data, the modes, grid and eps. Progress goes over the three modes; a cancel stops it at
    the next band of rows."""
    data = make_dataset(params["dataset"], params["n_points"], params["data_seed"]).points
    counts, seconds = [], 0.0
    for m, mode in enumerate(MODES):
        ctx.progress(m / len(MODES))
        net = random_network(params["depth"], params["width"], params["activation"], 0.1,
                             mode, params["weight_seed"])
        r = concentration(net, data, range(1, params["depth"] + 1), params["grid"],
                          params["eps"], (-3.0, 3.0, -3.0, 3.0), device=ctx.device,
                          progress=lambda f, m=m: ctx.progress((m + f) / len(MODES)))
        counts.append(r.counts)
        seconds += r.seconds
    ctx.save_result(lambda path: np.savez_compressed(
        path, counts=np.stack(counts), data=data, modes=np.array(MODES), grid=params["grid"],
        eps=params["eps"]))
    return {"seconds": seconds, "device": str(ctx.device)}


DENSITY_JOB = JobType("density", check_density_params, run_density_job, result=True)


def load_density(job_id: str) -> dict:
    """The result of a density job: counts (3 modes, L, grid, grid), data, modes (OSError when
    it is gone, ValueError for what is not a job id)."""
    return load_result(job_id)
