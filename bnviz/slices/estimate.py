"""Boundary crossings on a grid of the window: the region density pictures, and a rough
count of the regions of the last layer.

The network is run (float32, on the device) on a G x G grid of the window's images, and every
nonlinear layer's pattern is read at each grid point (ReLU: the sign of each unit; max
pooling: each window's argmax).  Adjacent grid points whose patterns differ in n units are
separated by about n crossings of the partition's boundary (every unit's folded hyperplane
flips exactly its own bit), so the crossings per unit length along the rows and along the
columns, rho_a and rho_b, are measured.  For an isotropic arrangement of total length Lambda
in an area A, a test line meets 2 Lambda / (pi A) of it per unit length (Cauchy-Crofton) and
the arrangement has about Lambda^2 / (pi A) crossings, i.e. one region per crossing:

    regions ~ 1 + (pi / 4) rho_a rho_b A   (:func:`crofton_regions`).

That count has no error it can state: a grid coarser than the regions misses the crossings
that fall between two points of the same pattern, and one rho_a rho_b for the whole window
misses how the density varies across it (the mean of a product is not the product of the
means), both towards too few.  So the caps read :mod:`bnviz.slices.cost` instead (exact cuts
of a sample of the window, with a standard error); bench/slice_estimate.py prints both beside
exact counts.  The grid's crossings remain what :func:`density_by_distance` and
:func:`facet_density` draw.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from bnviz.slices.graph import SliceNet, Statistics, forward, max_pool
from bnviz.slices.plane import Plane

__all__ = ["GRID", "crofton_regions", "density_by_distance", "facet_density", "grid_flips"]

#: Grid points along each side of the window.
GRID = 96


def _pattern_bits(net: SliceNet, values: dict[str, torch.Tensor]) -> list[torch.Tensor]:
    """Every nonlinear layer's pattern at each image, (N, U_l) a layer: ReLU signs (int16),
    and one column per max pooling output holding its argmax (int32)."""
    cols = []
    for op in net.nonlinear:
        x = values[op.inputs[0]]
        if op.kind == "relu":
            cols.append((x > 0).reshape(len(x), -1).to(torch.int16))
        else:
            _, idx = max_pool(op, x, return_indices=True)
            cols.append(idx.reshape(len(x), -1).to(torch.int32))
    return cols


#: Bytes of activations one chunk of grid images may hold in the estimate's forward pass.
CHUNK_BYTES = 256 * 2**20


def grid_flips(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
               stats: Statistics | None = None, device: torch.device | str = "cpu",
               grid: int = GRID) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The grid's points (a (grid, grid), b) and, between neighbours along a and along b,
    how many units of each nonlinear layer change their pattern: (aa, bb, flips_a (L, grid,
    grid-1), flips_b (L, grid-1, grid)), L the nonlinear layers in the network's order.  The
    network runs in float32 (patterns, not geometry), a few rows of the grid at a time within
    :data:`CHUNK_BYTES`."""
    a0, a1, b0, b1 = window
    steps = (np.arange(grid) + 0.5) / grid
    aa, bb = np.meshgrid(a0 + steps * (a1 - a0), b0 + steps * (b1 - b0))  # rows: b
    units = sum(int(np.prod(s)) for s in net.shapes().values())
    rows = max(1, CHUNK_BYTES // (4 * grid * max(units, 1)))
    n_layers = len(net.nonlinear)
    flips_a = np.zeros((n_layers, grid, grid - 1))
    flips_b = np.zeros((n_layers, grid - 1, grid))
    prev: list[torch.Tensor] | None = None
    for r0 in range(0, grid, rows):
        ab = np.stack([aa[r0:r0 + rows].ravel(), bb[r0:r0 + rows].ravel()], 1)
        x = torch.as_tensor(plane.points(ab), dtype=torch.float32, device=device)
        layers = [b.reshape(-1, grid, b.shape[-1])  # (rows, grid, U_l)
                  for b in _pattern_bits(net, forward(net, x, stats, keep=True))]
        n = len(layers[0]) if layers else 0
        for k, bits in enumerate(layers):
            flips_a[k, r0:r0 + n] = (bits[:, 1:] != bits[:, :-1]).sum(2).cpu().numpy()
            if n > 1:
                flips_b[k, r0:r0 + n - 1] = (bits[1:] != bits[:-1]).sum(2).cpu().numpy()
            if prev is not None:
                flips_b[k, r0 - 1] = (bits[0] != prev[k]).sum(1).cpu().numpy()
        prev = [bits[-1] for bits in layers]
    return aa, bb, flips_a, flips_b


@torch.no_grad()
def facet_density(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                  stats: Statistics | None = None, device: torch.device | str = "cpu",
                  grid: int = GRID) -> np.ndarray:
    """(L, grid, grid): at each grid point, how many of each nonlinear layer's units change
    their pattern between it and its right and upper neighbours, i.e. the layer's own facets
    crossed there: Figure 3's facet concentration of the BN paper, on the plane of a slice
    (measured on the grid, so facets closer than a grid step are counted once)."""
    _, _, flips_a, flips_b = grid_flips(net, plane, window, stats, device, grid)
    counts = np.zeros((len(flips_a), grid, grid))
    counts[:, :, :-1] += flips_a
    counts[:, :-1, :] += flips_b
    return counts


@torch.no_grad()
def crofton_regions(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                    stats: Statistics | None = None, device: torch.device | str = "cpu",
                    grid: int = GRID) -> int:
    """The grid's rough count of the last nonlinear layer's regions, 1 + pi/4 rho_a rho_b A
    (module docstring: no stated error, too low where the grid is coarse)."""
    a0, a1, b0, b1 = window
    _, _, flips_a, flips_b = grid_flips(net, plane, window, stats, device, grid)
    flips_a, flips_b = flips_a.sum(0), flips_b.sum(0)
    width, height = a1 - a0, b1 - b0
    rho_a = flips_a.sum() / (grid * width * (grid - 1) / grid)
    rho_b = flips_b.sum() / (grid * height * (grid - 1) / grid)
    return int(round(1 + math.pi / 4 * rho_a * rho_b * width * height))


@torch.no_grad()
def density_by_distance(net: SliceNet, plane: Plane, window: tuple[float, float, float, float],
                        stats: Statistics | None = None, device: torch.device | str = "cpu",
                        grid: int = GRID, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Regions per unit area against the distance to the nearest of the plane's images, over
    the whole window, estimated as :func:`crofton_regions` estimates the count: the boundary
    crossings between neighbouring grid points, binned by their midpoint's distance, give
    rho_a, rho_b per band and a density pi/4 rho_a rho_b.  (bin centres, densities)."""
    a0, a1, b0, b1 = window
    aa, bb, flips_a, flips_b = grid_flips(net, plane, window, stats, device, grid)
    flips_a, flips_b = flips_a.sum(0), flips_b.sum(0)
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
