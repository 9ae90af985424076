"""Questions the /slice page asks of a stored slice (:func:`bnviz.slices.job.load_slices`):
which region holds a point, its activation code, its distance to the nearest facet, the
predicted class on a grid, the image at a point of the plane."""

from __future__ import annotations

import numpy as np
import shapely

__all__ = ["class_grid", "image_at", "layer_count", "locate", "region_info"]


def _polygons(ptr: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    counts = np.diff(ptr)
    rings = shapely.linearrings(vertices, indices=np.repeat(np.arange(len(counts)), counts))
    return shapely.polygons(rings)


def locate(ptr: np.ndarray, vertices: np.ndarray, points: np.ndarray) -> np.ndarray:
    """For each point (n, 2), the index of the convex polygon holding it (-1: none); a point
    on a shared edge gets the first."""
    tree = shapely.STRtree(_polygons(ptr, vertices))
    pts = shapely.points(np.asarray(points, np.float64))
    which, poly = tree.query(pts, predicate="intersects")
    out = np.full(len(points), -1, np.int64)
    first = np.unique(which, return_index=True)[1]
    out[which[first]] = poly[first]
    return out


def layer_count(stored: dict, arm: int) -> int:
    return len(stored[f"a{arm}_names"])


def class_grid(stored: dict, arm: int, n: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The predicted class at the centres of an n x n grid on the window (the exact class
    cells located): (a values, b values, classes (n, n), -1 off every cell)."""
    a0, a1, b0, b1 = stored["window"]
    t = (np.arange(n) + 0.5) / n
    aa, bb = a0 + t * (a1 - a0), b0 + t * (b1 - b0)
    ga, gb = np.meshgrid(aa, bb)
    cell = locate(stored[f"a{arm}_cells_ptr"], stored[f"a{arm}_cells_vertices"],
                  np.stack([ga.ravel(), gb.ravel()], 1))
    cls = np.where(cell >= 0, stored[f"a{arm}_cells_class"][np.maximum(cell, 0)], -1)
    return aa, bb, cls.reshape(n, n)


def _segment_distance(p: np.ndarray, seg: np.ndarray) -> float:
    if len(seg) == 0:
        return float("inf")
    a, b = seg[:, :2], seg[:, 2:]
    d = b - a
    t = np.clip(((p - a) * d).sum(1) / np.maximum((d * d).sum(1), 1e-300), 0, 1)
    return float(np.linalg.norm(a + t[:, None] * d - p, axis=1).min())


def region_info(stored: dict, arm: int, layer: int, a: float, b: float) -> dict | None:
    """The region of ``layer`` (0-based) holding (a, b): its index, its code layer by layer
    (ReLU: 1 where h > 0; max pooling: each window's argmax), its area, the distance to the
    nearest facet of layers 0..layer and to the decision boundary (None: outside)."""
    p = f"a{arm}_l{layer}_"
    ptr, verts = stored[p + "ptr"], stored[p + "vertices"]
    idx = int(locate(ptr, verts, np.array([[a, b]]))[0])
    if idx < 0:
        return None
    codes, r = [], idx
    for k in range(layer, -1, -1):
        q = f"a{arm}_l{k}_"
        units = int(stored[f"a{arm}_units"][k])
        bits = np.unpackbits(stored[q + "codes"][r], count=units)
        codes.append("".join("1" if v else "0" for v in bits[:64]) + ("…" if units > 64
                                                                      else ""))
        r = int(stored[q + "parents"][r])
    facets = np.concatenate([stored[f"a{arm}_l{k}_facets"] for k in range(layer + 1)])
    poly = verts[ptr[idx]:ptr[idx + 1]]
    x, y = poly[:, 0], poly[:, 1]
    area = 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    point = np.array([a, b])
    return {"region": idx, "codes": codes[::-1], "area": area,
            "facet_distance": _segment_distance(point, facets),
            "boundary_distance": _segment_distance(point, stored[f"a{arm}_boundary0"])}


def image_at(stored: dict, a: float, b: float) -> np.ndarray:
    """The image x(a, b) = origin + a u + b v, (C, H, W)."""
    return stored["origin"] + a * stored["u"] + b * stored["v"]
