"""What a slice will cost, estimated before it is cut: the regions of its last layer.

The network is run (float64, on the device) on a G x G grid of the window's images, and every
nonlinear layer's pattern is read at each grid point (ReLU: the sign of each unit; max
pooling: each window's argmax).  Adjacent grid points whose patterns differ in n units are
separated by about n crossings of the partition's boundary (every unit's folded hyperplane
flips exactly its own bit), so the crossings per unit length along the rows and along the
columns, rho_a and rho_b, are measured.  For an isotropic arrangement of total length Lambda
in an area A, a test line meets 2 Lambda / (pi A) of it per unit length (Cauchy-Crofton) and
the arrangement has about Lambda^2 / (pi A) crossings, i.e. one region per crossing:

    regions ~ 1 + (pi / 4) rho_a rho_b A.

A grid coarser than the regions undercounts the crossings that fall between two points of
the same pattern, so the estimate is a lower bound at heart; tests/slices compare it with the
exact counts (within a factor of 2 where the grid resolves the regions).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from bnviz.slices.graph import SliceNet, Statistics, forward
from bnviz.slices.plane import Plane

__all__ = ["GRID", "estimate_regions"]

#: Grid points along each side of the window.
GRID = 96


def _pattern_bits(net: SliceNet, values: dict[str, torch.Tensor]) -> torch.Tensor:
    """(N, U) int8: every nonlinear layer's pattern at each image (ReLU signs, and one column
    per max pooling output holding its argmax)."""
    cols = []
    for op in net.nonlinear:
        x = values[op.inputs[0]]
        if op.kind == "relu":
            cols.append((x > 0).reshape(len(x), -1).to(torch.int16))
        else:
            a = op.attrs
            t, left, b, r = a["pads"]
            xp = F.pad(x, (left, r, t, b), value=-torch.inf)
            _, idx = F.max_pool2d(xp, a["kernel"], a["stride"], 0, 1, a.get("ceil", False),
                                  return_indices=True)
            cols.append(idx.reshape(len(x), -1).to(torch.int16))
    return torch.cat(cols, 1)


@torch.no_grad()
def estimate_regions(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                     stats: Statistics | None = None, device: torch.device | str = "cpu",
                     grid: int = GRID) -> int:
    """About how many regions the last nonlinear layer of the slice has (module docstring)."""
    a0, a1, b0, b1 = window
    steps = (np.arange(grid) + 0.5) / grid
    aa, bb = np.meshgrid(a0 + steps * (a1 - a0), b0 + steps * (b1 - b0))  # rows: b
    ab = np.stack([aa.ravel(), bb.ravel()], 1)
    crossings_a = crossings_b = 0.0
    prev_row = None
    chunk = max(1, 4096 // grid) * grid  # whole rows a chunk
    for start in range(0, len(ab), chunk):
        x = torch.as_tensor(plane.points(ab[start:start + chunk]), device=device)
        bits = _pattern_bits(net, forward(net, x, stats, keep=True))
        bits = bits.reshape(-1, grid, bits.shape[-1])  # (rows, grid, U)
        crossings_a += float((bits[:, 1:] != bits[:, :-1]).sum())
        crossings_b += float((bits[1:] != bits[:-1]).sum())
        if prev_row is not None:
            crossings_b += float((bits[:1] != prev_row).sum())
        prev_row = bits[-1:]
    width, height = a1 - a0, b1 - b0
    rho_a = crossings_a / (grid * width * (grid - 1) / grid)
    rho_b = crossings_b / (grid * height * (grid - 1) / grid)
    return int(round(1 + math.pi / 4 * rho_a * rho_b * width * height))


@torch.no_grad()
def density_by_distance(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                        stats: Statistics | None = None, device: torch.device | str = "cpu",
                        grid: int = GRID, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Regions per unit area against the distance to the nearest of the plane's images, over
    the whole window, estimated as :func:`estimate_regions` estimates the count: the boundary
    crossings between neighbouring grid points, binned by their midpoint's distance, give
    rho_a, rho_b per band and a density pi/4 rho_a rho_b.  (bin centres, densities)."""
    a0, a1, b0, b1 = window
    steps = (np.arange(grid) + 0.5) / grid
    aa, bb = np.meshgrid(a0 + steps * (a1 - a0), b0 + steps * (b1 - b0))
    ab = np.stack([aa.ravel(), bb.ravel()], 1)
    bits = torch.cat([_pattern_bits(net, forward(net, torch.as_tensor(
        plane.points(ab[s:s + 4096]), device=device), stats, keep=True))
        for s in range(0, len(ab), 4096)]).reshape(grid, grid, -1)
    flips_a = (bits[:, 1:] != bits[:, :-1]).sum(2).cpu().numpy()  # (grid, grid-1)
    flips_b = (bits[1:] != bits[:-1]).sum(2).cpu().numpy()  # (grid-1, grid)
    mid_a = np.stack([(aa[:, 1:] + aa[:, :-1]) / 2, bb[:, 1:]], -1)
    mid_b = np.stack([aa[1:], (bb[1:] + bb[:-1]) / 2], -1)

    def nearest(p: np.ndarray) -> np.ndarray:
        return np.linalg.norm(p[..., None, :] - plane.anchors, axis=-1).min(-1)

    da, db = nearest(mid_a).ravel(), nearest(mid_b).ravel()
    edges = np.linspace(0, max(da.max(), db.max()) * (1 + 1e-9), bins + 1)
    ha, hb = (a1 - a0) / grid, (b1 - b0) / grid
    with np.errstate(divide="ignore", invalid="ignore"):
        rho_a = np.histogram(da, edges, weights=flips_a.ravel())[0] / (
            np.histogram(da, edges)[0] * ha)
        rho_b = np.histogram(db, edges, weights=flips_b.ravel())[0] / (
            np.histogram(db, edges)[0] * hb)
    return 0.5 * (edges[1:] + edges[:-1]), math.pi / 4 * rho_a * rho_b
