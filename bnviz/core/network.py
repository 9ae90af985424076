"""Network descriptions and the BN statistics that place their hyperplanes.

Conventions are those of docs/conventions.md: layer l maps z_{l-1} to z_l = a(h_l) with

* ``bn``:          h_l = (W_l z_{l-1} - mu_l) / sigma_l, mu_l and the *biased* standard
                   deviation sigma_l of W_l z_{l-1} over an explicit batch (BN paper eq. 3-4);
* ``zero_bias``:   h_l = W_l z_{l-1};
* ``random_bias``: h_l = W_l z_{l-1} + c_l.

Every mode is written as h_l = (W_l z_{l-1} - mu_l) / sigma_l (zero bias: mu = 0, sigma = 1;
random bias: mu = -c, sigma = 1) so that one code path serves all three, and the sliders'
overrides (mu -> mu_scale * mu + mu_offset, sigma -> sigma_scale * sigma) act the same way in
each mode.  Overrides of layer l change the batch that later layers see, so the statistics of
later layers are recomputed from the modified forward pass, as a BN network in training does.
The statistics, the floor on a zero sigma and the normalisation are :mod:`bnviz.core.bn`'s.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bnviz.caps import ACTIVATIONS, MAX_NETWORK_FILE_BYTES, MAX_PARAMETER, MODES
from bnviz.core.bn import batch_moments, bn_forward, floored_sigma
from bnviz.core.overrides import BNOverrides, LayerOverride, slider_overrides

__all__ = [
    "ACTIVATIONS",
    "MODES",
    "BNOverrides",
    "Head",
    "LayerOverride",
    "LayerStatistics",
    "slider_overrides",
    "Network",
    "layer_statistics",
    "load_network",
    "negative_slope",
    "random_network",
    "select_batch",
]


def negative_slope(activation: str, alpha: float = 0.1) -> float:
    """Slope of a(u) for u < 0: ReLU 0, leaky-ReLU alpha, absolute value -1
    (docs/conventions.md)."""
    if activation == "relu":
        return 0.0
    if activation == "leaky_relu":
        if not (0.0 < alpha < 1.0):
            raise ValueError(f"leaky_relu needs 0 < alpha < 1, got {alpha}")
        return float(alpha)
    if activation == "abs":
        return -1.0
    raise ValueError(f"unknown activation {activation!r}; choose from {', '.join(ACTIVATIONS)}")


def _as_matrix(a: np.ndarray, name: str) -> np.ndarray:
    raw = np.asarray(a)
    if raw.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {raw.dtype}")
    arr = raw.astype(np.float64)
    if not np.all(np.isfinite(arr)) or np.any(np.abs(arr) > MAX_PARAMETER):
        raise ValueError(f"{name} has non-finite entries or entries beyond +/-{MAX_PARAMETER:g}")
    return arr


@dataclass(frozen=True)
class Head:
    """A classifier head: a final linear layer without activation, 1 or 2 logits.

    With one logit the decision boundary is {logit = 0}; with two it is {logit_1 = logit_0}.
    """

    weight: np.ndarray  # (C, D_L)
    bias: np.ndarray  # (C,)

    def __post_init__(self) -> None:
        w = _as_matrix(self.weight, "head weight")
        b = _as_matrix(self.bias, "head bias").reshape(-1)
        if w.ndim != 2 or w.shape[0] not in (1, 2) or b.shape != (w.shape[0],):
            raise ValueError(
                f"head must have 1 or 2 outputs with weight (C, D_L) and bias (C,), got "
                f"{w.shape} and {b.shape}"
            )
        object.__setattr__(self, "weight", w)
        object.__setattr__(self, "bias", b)

    def decision_function(self) -> tuple[np.ndarray, float]:
        """(w, b) with the boundary {w . z_L + b = 0} (logit difference for two outputs)."""
        if self.weight.shape[0] == 1:
            return self.weight[0], float(self.bias[0])
        return self.weight[1] - self.weight[0], float(self.bias[1] - self.bias[0])


@dataclass(frozen=True)
class Network:
    """A fully connected network on 2D inputs (docs/conventions.md).

    ``weights[l-1]`` is W_l of shape (D_l, D_{l-1}) with D_0 = 2.  ``biases`` (the c_l of the
    ``random_bias`` mode) must be given for that mode and are ignored by the others.
    """

    weights: tuple[np.ndarray, ...]
    activation: str = "leaky_relu"
    alpha: float = 0.1
    mode: str = "bn"
    biases: tuple[np.ndarray, ...] | None = None
    head: Head | None = None

    def __post_init__(self) -> None:
        if len(self.weights) == 0:
            raise ValueError("a network needs at least one layer")
        ws = tuple(_as_matrix(w, f"W{i + 1}") for i, w in enumerate(self.weights))
        d_in = 2
        for i, w in enumerate(ws):
            if w.ndim != 2 or w.shape[1] != d_in or w.shape[0] < 1:
                raise ValueError(f"W{i + 1} must have shape (D_{i + 1}, {d_in}), got {w.shape}")
            d_in = w.shape[0]
        object.__setattr__(self, "weights", ws)
        negative_slope(self.activation, self.alpha)  # validates activation and alpha
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose from {', '.join(MODES)}")
        if self.biases is not None:
            bs = tuple(_as_matrix(c, f"c{i + 1}").reshape(-1) for i, c in enumerate(self.biases))
            shapes_ok = len(bs) == len(ws) and all(
                c.shape == (w.shape[0],) for c, w in zip(bs, ws, strict=False))
            if not shapes_ok:
                raise ValueError("biases c_l must be one vector of length D_l per layer")
            object.__setattr__(self, "biases", bs)
        elif self.mode == "random_bias":
            raise ValueError("mode random_bias needs biases c_1..c_L")
        if self.head is not None and self.head.weight.shape[1] != ws[-1].shape[0]:
            raise ValueError(
                f"head weight has {self.head.weight.shape[1]} inputs, last layer has "
                f"{ws[-1].shape[0]} units"
            )

    @property
    def depth(self) -> int:
        return len(self.weights)

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(w.shape[0] for w in self.weights)

    @property
    def negative_slope(self) -> float:
        return negative_slope(self.activation, self.alpha)

    def with_mode(self, mode: str) -> Network:
        """The same weights under another mode (Figure 1's two rows share their weights)."""
        return Network(self.weights, self.activation, self.alpha, mode, self.biases, self.head)


def random_network(
    depth: int,
    width: int | Sequence[int],
    activation: str = "leaky_relu",
    alpha: float = 0.1,
    mode: str = "bn",
    seed: int = 0,
    head_outputs: int = 0,
    bias_std: float = 1.0,
) -> Network:
    """Random weights from a seed: He-normal W_l ~ N(0, 2 / D_{l-1}), c_l ~ N(0, bias_std^2).

    Weights, biases and head come from separate streams of one seed, so the weights of a seed
    are the same whatever the mode or the head: the with/without-BN comparison of Figure 1
    uses the same W.
    """
    widths = [int(width)] * int(depth) if isinstance(width, int | np.integer) else list(width)
    if depth < 1 or len(widths) != depth or min(widths) < 1:
        raise ValueError(f"need depth >= 1 and widths >= 1, got depth={depth}, widths={widths}")
    if head_outputs not in (0, 1, 2):
        raise ValueError(f"head_outputs must be 0, 1 or 2, got {head_outputs}")
    w_rng, c_rng, h_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    weights, biases, d_in = [], [], 2
    for d in widths:
        weights.append(w_rng.normal(0.0, np.sqrt(2.0 / d_in), size=(d, d_in)))
        biases.append(c_rng.normal(0.0, bias_std, size=d))
        d_in = d
    head = None
    if head_outputs:
        head = Head(h_rng.normal(0.0, np.sqrt(1.0 / d_in), size=(head_outputs, d_in)),
                    np.zeros(head_outputs))
    return Network(tuple(weights), activation, alpha, mode, tuple(biases), head)


#: The arrays a network file may hold (their total size once decompressed: the cap
#: MAX_NETWORK_FILE_BYTES of bnviz.caps).
_NETWORK_ARRAY = re.compile(r"W[1-9][0-9]{0,2}|c[1-9][0-9]{0,2}|head_W|head_b")


def load_network(
    path: str | Path, activation: str = "leaky_relu", alpha: float = 0.1, mode: str = "bn"
) -> Network:
    """Read W1..WL (and c1..cL, and optionally head_W, head_b) from an ``.npz`` file.

    Never unpickles: object arrays are refused.
    """
    from bnviz.data.npfiles import read_numpy

    path = Path(path)
    loaded = read_numpy(path)  # one line for a missing, empty, non-NumPy or pickled file
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: a single array, not an .npz archive of W1..WL")
    try:
        with loaded as f:
            unknown = sorted(k for k in f.files if not _NETWORK_ARRAY.fullmatch(k))
            if unknown:
                raise ValueError(f"unexpected array {unknown[0]!r} (expected W1..WL, c1..cL, "
                                 "head_W, head_b)")
            size = sum(f.zip.getinfo(k + ".npy").file_size for k in f.files)
            if size > MAX_NETWORK_FILE_BYTES:  # checked before anything is decompressed
                raise ValueError(f"{size / 1e6:.0f} MB of arrays, over the cap of "
                                 f"{MAX_NETWORK_FILE_BYTES // 1_000_000} MB")
            arrays = {k: np.array(f[k]) for k in f.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "pickle" in detail:  # numpy's words invite an unsafe load: say what it is instead
            detail = "it holds Python objects, which bnviz never loads"
        raise ValueError(f"{path}: not a readable .npz of numeric arrays ({detail})") from None
    depth = 0
    while f"W{depth + 1}" in arrays:
        depth += 1
    if depth == 0:
        raise ValueError(f"{path}: no array W1 (expected W1..WL of shape (D_l, D_(l-1)))")
    later = sorted(k for k in arrays if k[:1] == "W" and k[1:].isdigit() and int(k[1:]) > depth)
    if later:
        raise ValueError(f"{path}: W{depth + 1} is missing but {', '.join(later)} "
                         f"{'is' if len(later) == 1 else 'are'} there (layers must be W1..WL "
                         "without gaps)")
    weights = tuple(arrays[f"W{i}"] for i in range(1, depth + 1))
    biases = None
    if all(f"c{i}" in arrays for i in range(1, depth + 1)):
        biases = tuple(arrays[f"c{i}"] for i in range(1, depth + 1))
    try:
        head = None
        if "head_W" in arrays:
            head_w = np.atleast_2d(arrays["head_W"])
            head = Head(head_w, arrays.get("head_b", np.zeros(head_w.shape[0])))
        return Network(weights, activation, alpha, mode, biases, head)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def select_batch(points: np.ndarray, batch_size: int | None, seed: int = 0) -> np.ndarray:
    """The explicit batch that defines mu and sigma (docs/conventions.md).

    ``None`` (or a size >= n) is the whole data set, i.e. test-time statistics; otherwise a
    mini-batch of ``batch_size`` distinct points drawn with ``seed``: same seed, same batch.
    """
    points = np.asarray(points, dtype=np.float64)
    n = points.shape[0]
    if batch_size is None or batch_size >= n:
        return points
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    idx = np.random.default_rng(seed).choice(n, size=batch_size, replace=False)
    return points[np.sort(idx)]


@dataclass(frozen=True)
class LayerStatistics:
    """What layer l's hyperplanes are made of, and their TLS distance to the batch.

    ``batch_mean``/``batch_std`` are eq. 3 over the batch (biased std) whatever the mode;
    ``mu``/``sigma`` are what the layer actually uses, h = (W z - mu) / sigma.
    ``tls_error[k]`` is eq. 8 at the used mu: mean_B d(z, H_k)^2 =
    (batch_std^2 + (batch_mean - mu)^2) / ||w_k||^2, which is sigma^2/||w||^2 (Figure 9's colour)
    when mu is the BN mean and sigma the batch's std (Theorem 1); with a slider's mu it is the
    distance at that mu, which views must name as such (:mod:`bnviz.views.figure9`). It is
    measured in the layer's input space (z_{l-1}): only in layer 1 is that the input space.
    """

    layer: int
    batch_mean: np.ndarray
    batch_std: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    weight_norm: np.ndarray
    tls_error: np.ndarray
    inputs: np.ndarray  # z_{l-1} of the batch, (|B|, D_{l-1})


def layer_statistics(
    net: Network, batch: np.ndarray, overrides: BNOverrides | None = None,
    frozen: bool = False,
) -> list[LayerStatistics]:
    """Forward the batch through the network in float64 and return each layer's statistics.

    With ``frozen=False`` each layer's mu, sigma come from the batch as it reaches that layer
    through the *overridden* earlier layers (a BN network in training).  With ``frozen=True``
    they come from the network without overrides, and the overrides then move those fixed
    values, as the BN paper's Figure 2 does ("fixing mu_2 and varying sigma_1"): with a
    positively homogeneous activation, recomputed BN statistics would cancel a sigma_1 change.
    Either way ``batch_mean``/``batch_std``/``inputs`` describe the network actually drawn.
    """
    z = np.asarray(batch, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] != 2 or z.shape[0] < 1:
        raise ValueError(f"the batch must be an (n, 2) array with n >= 1, got {tuple(z.shape)}")
    overrides = overrides or BNOverrides()
    base = layer_statistics(net, batch) if frozen and overrides.layers else None
    slope = net.negative_slope
    out = []
    for i, w in enumerate(net.weights):
        layer = i + 1
        u = z @ w.T  # (|B|, D_l)
        mean, var = batch_moments(u)  # eq. 3, biased (divide by |B|), docs/conventions.md, Pitfalls
        std = np.sqrt(var)
        if not (np.isfinite(mean).all() and np.isfinite(std).all()):
            raise ValueError(f"layer {layer}: the batch statistics overflow float64 "
                             "(inputs or weights too large)")
        if base is not None:
            mu, sigma = base[i].mu, base[i].sigma
        elif net.mode == "bn":
            mu, sigma = mean, floored_sigma(mean, var)
        elif net.mode == "zero_bias":
            mu, sigma = np.zeros_like(mean), np.ones_like(std)
        else:
            mu, sigma = -np.asarray(net.biases[i], dtype=np.float64), np.ones_like(std)
        mu, sigma = overrides.apply(layer, mu, sigma)
        wnorm = np.linalg.norm(w, axis=1)
        # a zero row has no hyperplane: its TLS distance is infinite, not 0/0
        with np.errstate(divide="ignore", invalid="ignore"):
            tls = np.where(wnorm > 0, (var + (mean - mu) ** 2) / wnorm**2, np.inf)
        out.append(LayerStatistics(layer, mean, std, mu, sigma, wnorm, tls, z))
        h = bn_forward(u, mu, sigma)
        z = np.where(h > 0, h, slope * h)
    return out
