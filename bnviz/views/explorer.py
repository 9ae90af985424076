"""What the live partition explorer shows, computed from validated settings (no dash here).

The explorer (issue 3, BN paper Figures 1, 2 and 9) has sliders for the BN statistics:

* mu slider t in [0, 1.5]: mu_l = t * mu_BN (t = 0: no centering, t = 1: BN);
* sigma slider s in [0.25, 4]: sigma_l = s * sigma_BN;

each acting on all layers, on one layer, or on one (layer, unit) as in Figure 2.  mu_BN and
sigma_BN are those of the network without slider changes (frozen statistics, as the paper's
Figure 2 fixes mu_2 while sigma_1 varies).  The weights are random (He-normal from the weight
seed) or, for Figure 9's "trained toy DN", that random start trained with BN on the data
(:func:`trained_network`).  Everything here is also reachable from the command line
(``python -m bnviz partition --mu-t ...``, ``python -m bnviz figure9``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bnviz.caps import EXPLORER_LIMITS, EXPLORER_MAX_REGIONS, MAX_EXTRA_POINTS, SCOPES
from bnviz.core.arrays import ops_for
from bnviz.core.bn import bn_forward
from bnviz.core.geometry import nearest_segment_distances
from bnviz.core.network import (
    BNOverrides,
    LayerStatistics,
    Network,
    layer_statistics,
    random_network,
    select_batch,
    slider_overrides,
)
from bnviz.core.partition import Partition, box_from_extent, compute_partition
from bnviz.data.datasets import Dataset, as_dataset, make_dataset, shifted
from bnviz.params import InputError, PartitionParams
from bnviz.params.cost import check_bn_batch
from bnviz.service.cache import memoize

if TYPE_CHECKING:
    import torch

__all__ = [
    "EXPLORER_LIMITS",
    "SCOPES",
    "ExplorerResult",
    "InputError",
    "PRESETS",
    "TRAINING",
    "Preset",
    "TrainedNetwork",
    "UnitView",
    "comparison_modes",
    "explore",
    "explorer_network",
    "is_central",
    "pattern_raster",
    "settings_overrides",
    "partition_of",
    "PartitionRun",
    "slider_overrides",
    "trained_network",
    "unit_view",
]

#: Pixels per side of the region-fill raster (the lines on top of it are exact).
RASTER = 128
#: How ``weights="trained"`` trains (:func:`bnviz.views.train.train_network`): Adam on the
#: cross-entropy of the data's classes (mod 2), BN with gamma = 1, beta = 0 as in the BN
#: paper's analysis, mini-batches of 32. 500 steps reach 96-100 % training accuracy on the
#: six data sets (4 x 6 units, 100 points) and take about a second on one CPU core at the
#: explorer's caps (12 x 64 units, 2000 points).
TRAINING = {"steps": 500, "lr": 0.01, "optimizer": "adam", "batch_size": 32}


def settings_overrides(settings: PartitionParams, net: Network) -> BNOverrides:
    """The settings' mu and sigma sliders as BN overrides of ``net`` (the target layer's
    width is the network's: a file's layers may differ)."""
    target_width = net.widths[min(settings.target_layer, net.depth) - 1]
    return slider_overrides(net.depth, target_width, settings.mu_t, settings.sigma_s,
                            settings.scope, settings.target_layer, settings.target_unit)


@dataclass(frozen=True)
class UnitView:
    """Figure 2a: unit k of layer l in its own input space, and its TLS loss (eq. 8)."""

    layer: int
    unit: int
    projections: np.ndarray  # <w_{l,k}, z_{l-1}> over the batch
    mu: float  # where the hyperplane is (the mu in use)
    batch_mean: float  # the BN mean: the TLS minimiser (Theorem 1)
    batch_std: float
    weight_norm: float
    mu_grid: np.ndarray
    tls_loss: np.ndarray  # L_k(mu') = mean_B (<w, z> - mu')^2 / ||w||^2 on mu_grid


def unit_view(net: Network, stats: list[LayerStatistics], layer: int, unit: int) -> UnitView:
    """The 1D picture of one unit: batch projections, hyperplane position and TLS parabola."""
    st = stats[layer - 1]
    w = net.weights[layer - 1][unit]
    proj = st.inputs @ w
    mean, std, norm = float(st.batch_mean[unit]), float(st.batch_std[unit]), float(
        st.weight_norm[unit])
    mu = float(st.mu[unit])
    half = max(4.0 * std, abs(mu - mean) * 1.3, 1e-6)
    grid = np.linspace(mean - half, mean + half, 121)
    loss = (std**2 + (mean - grid) ** 2) / norm**2 if norm > 0 else np.full_like(grid, np.inf)
    return UnitView(layer, unit, proj, mu, mean, std, norm, grid, loss)


def is_central(w: np.ndarray, mu: np.ndarray, rtol: float = 1e-9) -> bool:
    """Whether the lines {x : w_k . x = mu_k} all pass through one point (Corollary 2).

    Least squares for x, then the largest residual relative to the terms' size.
    """
    w = np.asarray(w, dtype=np.float64)
    mu = np.asarray(mu, dtype=np.float64)
    if w.shape[0] < 2:
        return True
    x, *_ = np.linalg.lstsq(w, mu, rcond=None)
    scale = np.abs(w) @ np.abs(x) + np.abs(mu) + 1e-300
    return bool(np.max(np.abs(w @ x - mu) / scale) <= rtol)


def pattern_raster(net: Network, stats: list[LayerStatistics], box: tuple[float, ...],
                   resolution: int, device: torch.device | str | None = None) -> np.ndarray:
    """(L, res, res) int64 hash of the activation pattern of layers 1..l at pixel centres.

    Row 0 is the bottom of the box.  The hash is a fixed function of the pattern bits, so a
    region keeps its hash, hence its colour, while sliders move; regions themselves are exact
    (``partition``), this only fills them in a picture.
    """
    x0, x1, y0, y1 = box
    xs = x0 + (np.arange(resolution) + 0.5) * ((x1 - x0) / resolution)
    ys = y0 + (np.arange(resolution) + 0.5) * ((y1 - y0) / resolution)
    # numpy on the CPU (no torch import for the CLI), torch on a GPU once it pays
    # (bnviz.core.arrays.ops_for); units x pixels layout: each layer is one wide GEMM
    ops = ops_for(device if device is not None else "cpu",
                  resolution * resolution * max(net.widths))
    z = ops.asarray(np.stack([np.tile(xs, resolution), np.repeat(ys, resolution)]),
                    ops.float64)
    gen = np.random.default_rng(20240607)
    # hash = sum over layers of keys . (pattern bits): exact in float64 (keys < 2^20, at most
    # 12 x 64 units), no integer modulo needed
    code = ops.zeros(z.shape[1], ops.float64)
    out = ops.zeros((net.depth, z.shape[1]), ops.float64)
    slope = net.negative_slope
    for i, (w, st) in enumerate(zip(net.weights, stats, strict=True)):
        mu, sigma = (ops.asarray(s, ops.float64)[:, None] for s in (st.mu, st.sigma))
        h = bn_forward(ops.asarray(w, ops.float64) @ z, mu, sigma, inplace=True)
        keys = ops.asarray(gen.integers(1, 2**20, size=w.shape[0]).astype(np.float64))
        code = code + keys @ ops.to(h > 0, ops.float64)
        out[i] = code
        # a(u) exactly: relu (slope 0), leaky relu (alpha), abs (-1)
        z = h.clip(min=0) + slope * h.clip(max=0)
    return ops.numpy(out).reshape(net.depth, resolution, resolution).astype(np.int64)


@dataclass(frozen=True)
class TrainedNetwork:
    """A network trained with BN for the explorer, and how well it learned its data."""

    network: Network  # no classifier head: the explorer draws the partition
    loss: float  # mean training loss of the last 50 steps
    accuracy: float  # on the training data, with test-time (full-data) statistics
    steps: int


@memoize()  # per process: a training takes under a second, its network a few kB
def trained_network(depth: int, width: int, activation: str, alpha: float, seed: int,
                    dataset: str, n_points: int, data_seed: int, shift_x: float = 0.0,
                    shift_y: float = 0.0) -> TrainedNetwork:
    """The random network of ``seed`` (the explorer's ``weights="random"``) trained with BN on
    the settings' data (classes mod 2; :data:`TRAINING`), on the CPU: the same arguments give
    the same network on any machine and any thread count (float64, a seeded batch order).
    The added points are not trained on (they have no class): they only join the batch."""
    import torch

    from bnviz.views.train import train_network  # torch's autograd: only when training

    data = shifted(make_dataset(dataset, n_points, data_seed), shift_x, shift_y)
    start = random_network(depth, width, activation, alpha, "bn", seed, head_outputs=2)
    # one intra-op thread (the web processes' setting, app.py): on matrices of a few units
    # more threads only wait on each other, 60 s instead of 1 s on a busy 2-core machine
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        report = train_network(start, data.points, data.labels % 2, TRAINING["steps"],
                               batch_size=min(TRAINING["batch_size"], n_points),
                               lr=TRAINING["lr"], optimizer=TRAINING["optimizer"], seed=seed,
                               device="cpu")
    finally:
        torch.set_num_threads(threads)
    net = report.network
    return TrainedNetwork(Network(net.weights, activation, alpha, "bn", start.biases),
                          float(np.mean(report.losses[-50:])), report.accuracy,
                          TRAINING["steps"])


def explorer_network(settings: PartitionParams) -> tuple[Network, TrainedNetwork | None]:
    """The settings' network in their mode: random weights from the weight seed, or those
    weights trained (``weights="trained"``; the same weights without BN in the other modes,
    as Figure 1 compares), with the training's report."""
    if settings.weights == "random":
        return random_network(settings.depth, settings.width, settings.activation,
                              settings.alpha, settings.mode, settings.weight_seed,
                              head_outputs=settings.head), None
    trained = trained_network(settings.depth, settings.width, settings.activation,
                              settings.alpha, settings.weight_seed, settings.dataset,
                              settings.n_points, settings.data_seed, settings.shift_x,
                              settings.shift_y)
    return trained.network.with_mode(settings.mode), trained


@dataclass(frozen=True)
class ExplorerResult:
    settings: PartitionParams
    data: Dataset
    batch: np.ndarray
    network: Network
    partition: Partition
    unit: UnitView
    mean_boundary_distance: float  # mean over data of the distance to the nearest facet
    central_layer1: bool
    raster: np.ndarray  # (L, RASTER, RASTER) activation-pattern hashes, to fill the regions
    stats: tuple[LayerStatistics, ...] = ()  # the mu and sigma each layer uses
    training: TrainedNetwork | None = None  # weights="trained": how the network learned

    @property
    def batch_mask(self) -> np.ndarray | None:
        """Which data points are in the mini-batch (None: the batch is all the data)."""
        if self.settings.batch_size is None:
            return None
        return (self.data.points[:, None, :] == self.batch[None]).all(2).any(1)


def comparison_modes(mode: str) -> tuple[str, str]:
    """Figure 1's two rows for a network mode: the same weights without BN (the mode itself,
    or random biases for a BN network) and with BN."""
    return (mode if mode != "bn" else "random_bias", "bn")


def explorer_data(settings: PartitionParams, extra_points: np.ndarray | None = None) -> Dataset:
    """The data set of the settings plus the points a user added (clicked or uploaded)."""
    data = shifted(make_dataset(settings.dataset, settings.n_points, settings.data_seed),
                   settings.shift_x, settings.shift_y)
    if extra_points is None or len(extra_points) == 0:
        return data
    extra = as_dataset(np.asarray(extra_points, dtype=np.float64).reshape(-1, 2))
    if extra.points.shape[0] > MAX_EXTRA_POINTS:
        raise InputError(f"at most {MAX_EXTRA_POINTS} added points")
    return as_dataset(np.concatenate([data.points, extra.points]),
                      np.concatenate([data.labels, extra.labels]), name=data.name)


@dataclass(frozen=True)
class PartitionRun:
    """One exact partition of the settings: its data, network, batch, the mu and sigma each
    layer uses (BN paper eq. 3 with the sliders' overrides) and the partition itself."""

    settings: PartitionParams
    data: Dataset
    network: Network
    batch: np.ndarray
    stats: tuple[LayerStatistics, ...]
    partition: Partition
    training: TrainedNetwork | None = None  # weights="trained": how the network learned


def partition_of(settings: PartitionParams, extra_points: np.ndarray | None = None, *,
                 data: Dataset | None = None, network: Network | None = None,
                 device: torch.device | str | None = None,
                 max_regions: int | None = None) -> PartitionRun:
    """The one route to the exact partition of ``settings``: the explorer page, ``bnviz
    partition``, ``bnviz figure9`` and the lecture's scenes all call it. ``data`` and
    ``network`` replace the generated ones (the command line's files); ``max_regions``
    caps the cut (the page's :data:`~bnviz.caps.EXPLORER_MAX_REGIONS`; None: the engine's)."""
    data = explorer_data(settings, extra_points) if data is None else data
    n = data.points.shape[0]
    if settings.batch_size is not None and settings.batch_size > n:
        raise InputError(f"batch size: at most the number of points ({n}), got "
                         f"{settings.batch_size}")
    training = None
    if network is None:
        network, training = explorer_network(settings)
    batch = select_batch(data.points, settings.batch_size, settings.batch_seed)
    check_bn_batch(batch, network.weights[0], network.mode)
    stats = layer_statistics(network, batch, settings_overrides(settings, network),
                             frozen=not settings.recompute_statistics)
    cap = {} if max_regions is None else {"max_regions": max_regions}
    part = compute_partition(network, batch, box_from_extent(settings.extent), stats=stats,
                             device=device, **cap)
    return PartitionRun(settings, data, network, batch, tuple(stats), part, training)


def explore(settings: PartitionParams, extra_points: np.ndarray | None = None,
            device: torch.device | str | None = None) -> ExplorerResult:
    """Compute everything the explorer shows for one state of its controls: the partition
    (:func:`partition_of`, under the page's region cap), and the views beside it."""
    run = partition_of(settings, extra_points, device=device, max_regions=EXPLORER_MAX_REGIONS)
    data, net, stats, part = run.data, run.network, list(run.stats), run.partition
    facets = np.concatenate([lp.facets for lp in part.layers])
    mean_distance = float(nearest_segment_distances(data.points, facets, device=device).mean())
    unit = unit_view(net, stats, settings.target_layer, settings.target_unit)
    central = is_central(net.weights[0], stats[0].mu)
    raster = pattern_raster(net, stats, part.box, RASTER, device=device)
    return ExplorerResult(settings, data, run.batch, net, part, unit, mean_distance, central,
                          raster, run.stats, run.training)


@dataclass(frozen=True)
class Preset:
    """One click that reproduces a figure of the BN paper: its settings, view and caption."""

    key: str
    label: str
    settings: PartitionParams
    view: str  # "space" (input space), "layers" (small multiples) or "unit" (Figure 2a)
    tls: bool
    caption: str


PRESETS: dict[str, Preset] = {p.key: p for p in (
    # the data off the origin, as in the paper: centred data would hide the difference in
    # layer 1, where zero bias's lines meet at the origin and BN's at the data's centroid
    Preset("fig1", "Figure 1", PartitionParams(depth=4, width=6, mode="bn", dataset="moons",
                                                 layer=4, shift_x=1.0, shift_y=1.0),
           "layers", False,
           "Top row: without BN the folded hyperplanes of every layer spread over the whole "
           "input space, whatever the data. Bottom row: the same random weights with BN draw "
           "every layer's hyperplanes toward the data (Theorem 1), already in layer 1, whose "
           "lines meet at the data's centroid, so regions concentrate where the data are."),
    Preset("fig2a", "Figure 2a", PartitionParams(depth=2, width=8, mode="bn", scope="unit",
                                                  target_layer=2, target_unit=0, layer=2),
           "unit", False,
           "Unit k of layer 2 seen in its own input space: the batch projections <w, z> and "
           "the hyperplane at mu. Move the mu slider: the TLS loss is a parabola in mu whose "
           "minimum is exactly the BN mean (Theorem 1, eq. 7-9)."),
    Preset("fig2b", "Figure 2b", PartitionParams(depth=2, width=8, mode="bn", scope="unit",
                                                  target_layer=2, target_unit=0, layer=2,
                                                  mu_t=0.3), "space", False,
           "The same unit in the input space: its folded hyperplane F(2,k) (orange) is a bent "
           "line. Moving mu translates it, and mu = BN mean (slider at 1) brings it closest to "
           "the data (Theorem 2)."),
    Preset("fig2c", "Figure 2c", PartitionParams(depth=2, width=8, mode="bn", scope="layer",
                                                  target_layer=1, layer=2, sigma_s=2.0),
           "space", False,
           "Now sigma of layer 1 changes while layer 2's mu stays BN's: the layer-2 folded "
           "hyperplanes bend at the layer-1 lines, and sigma_1 changes how much they fold. "
           "Drag the sigma slider between 0.25 and 4."),
    # the paper's Figure 9: a TRAINED toy network (4 layers), layers 1 and 4 side by side
    Preset("fig9", "Figure 9", PartitionParams(depth=4, width=6, mode="bn", dataset="moons",
                                                 layer=4, shift_x=1.0, shift_y=1.0,
                                                 weights="trained"), "space", True,
           "A 4-layer network trained with BN on the moons (black dots). Left: layer 1's "
           "lines H₁,ₖ; right: layer 4's folded hyperplanes F₄,ₖ; each unit coloured by "
           "σ²/‖w‖² on its layer's own scale (blue small, green large). By eq. 8 that is "
           "the mean squared distance from the layer's input batch to the unit's hyperplane: "
           "in layer 1 the data's distance to the line, exactly; in layer 4 a distance in "
           "layer 4's input space, which ranks the input-space closeness of F₄,ₖ only "
           "roughly (rank correlations on the right, each facet's numbers on hover). Moving "
           "μ or σ recolours by the distance at the moved μ, and the colour bars say so."),
)}
