"""The debate page's figures: Dannemann & Junike's weight plane, Santurkar et al.'s landscape
and internal covariate shift, Luo et al.'s statistics, gamma decay and dynamics, Ergen et
al.'s whitening and closed form.

Engine results in (``bnviz.papers``), figure dicts out (no computation of their own).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bnviz.views.bnstats import analytical_density
from bnviz.views.style import (
    BLUE,
    CATEGORICAL,
    CLASS_SYMBOLS,
    GREEN,
    LIGHT_GRAY,
    ORANGE,
    REGION_PALETTE,
    SLATE,
    VERMILLION,
)
from bnviz.web.callbacks.plotting import Figure, typed_array

__all__ = ["batch_statistics_figure", "closed_form_figure", "data_points_figure",
           "decision_maps_figure", "dynamics_figure", "gap_figure", "ics_figure",
           "landscape_figure", "normalisation_figure", "weight_plane_figure",
           "whitening_figure"]

def weight_plane_figure(plane) -> Figure:
    """Dannemann & Junike's weight plane (bnviz.papers.dannemann.WeightPlane): C^ filled (log of its
    excess over the BN minimum), C as contour lines, W*, W0, the BN minima (ray or line), the
    nearest BN optimum, and the gradient of C^ at W* (its length is scaled to be seen)."""
    xs, ys = plane.xs, plane.ys
    excess = np.log10(np.maximum(plane.bn_loss - plane.min_bn_loss, 0) + 1e-3)
    e = float(xs[-1])
    d = plane.bn_direction
    ray = [[0.0, 0.0], (2 * e * d).tolist()] if not plane.both_signs else \
        [(-2 * e * d).tolist(), (2 * e * d).tolist()]
    g = plane.grad_at_w_star
    gn = float(np.hypot(*g))
    tip = plane.w_star - (0.25 * e * g / gn if gn > 0 else 0)  # descent direction
    marker = {"size": 11, "line": {"width": 1, "color": "white"}}
    data = [
        {"type": "contour", "x": xs.tolist(), "y": ys.tolist(), "z": excess.tolist(),
         "colorscale": "Viridis", "reversescale": True, "ncontours": 24,
         "contours": {"coloring": "fill", "showlines": False},
         "colorbar": {"title": {"text": "log10(C^ − min C^)", "side": "right"},
                      "thickness": 12}, "name": "BN loss C^",  # hoverable: a click moves W0
         "hovertemplate": "w = (%{x:.3f}, %{y:.3f})<extra></extra>"},
        {"type": "contour", "x": xs.tolist(), "y": ys.tolist(),
         "z": np.log10(plane.loss + 1e-9).tolist(), "showscale": False, "ncontours": 14,
         "contours": {"coloring": "none"}, "line": {"color": "white", "width": 1},
         "name": "loss C (log)", "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": [p[0] for p in ray],
         "y": [p[1] for p in ray], "line": {"color": ORANGE, "width": 3},
         "name": "BN minima (line: γ learnable)" if plane.both_signs else "BN minima (a ray)"},
        {"type": "scatter", "mode": "markers", "x": [float(plane.w_star[0])],
         "y": [float(plane.w_star[1])], "marker": {**marker, "color": "black"},
         "name": "W* (minimum of C)"},
        {"type": "scatter", "mode": "markers", "x": [float(plane.w0[0])],
         "y": [float(plane.w0[1])], "marker": {**marker, "color": BLUE,
                                               "symbol": "diamond"}, "name": "W0"},
        {"type": "scatter", "mode": "lines+markers",
         "x": [float(plane.w0[0]), float(plane.nearest_bn[0])],
         "y": [float(plane.w0[1]), float(plane.nearest_bn[1])],
         "line": {"color": BLUE, "dash": "dot"},
         "marker": {"size": [0, 10], "color": ORANGE}, "name": "nearest BN optimum"},
    ]
    annotations = [{"x": float(tip[0]), "y": float(tip[1]), "ax": float(plane.w_star[0]),
                    "ay": float(plane.w_star[1]), "xref": "x", "yref": "y", "axref": "x",
                    "ayref": "y", "showarrow": True, "arrowhead": 3, "arrowwidth": 2,
                    "arrowcolor": VERMILLION, "text": ""}] if gn > 0 else []
    r = 0.03 * e  # W0 as a draggable circle (the graph allows moving shapes)
    w0_shape = {"type": "circle", "xref": "x", "yref": "y", "x0": float(plane.w0[0]) - r,
                "x1": float(plane.w0[0]) + r, "y0": float(plane.w0[1]) - r,
                "y1": float(plane.w0[1]) + r, "line": {"color": "white", "width": 2},
                "fillcolor": BLUE, "opacity": 0.8}
    return {"data": data, "layout": {
        "shapes": [w0_shape],
        "margin": {"l": 50, "r": 10, "t": 30, "b": 40},
        "title": {"text": "weight plane: C^ (fill), C (white lines), −∇C^ at W* (vermillion arrow)",
                  "font": {"size": 12}},
        "xaxis": {"title": {"text": "w1"}, "range": [float(xs[0]), float(xs[-1])]},
        "yaxis": {"title": {"text": "w2"}, "range": [float(ys[0]), float(ys[-1])],
                  "scaleanchor": "x"},
        "legend": {"orientation": "h", "y": -0.15}, "annotations": annotations,
        "clickmode": "event"}}


ARM_COLOURS = {"bn": BLUE, "no_bn": ORANGE}
ARM_NAMES = {"bn": "with BN", "no_bn": "without BN"}


def landscape_figure(arms: dict[str, dict[str, np.ndarray]]) -> Figure:
    """Santurkar et al.'s Figure 4 on the 2D task: loss range, gradient-change range and the
    effective beta-smoothness per step, with and without BN (bands: min to max over eta)."""
    data: list[dict] = []
    panels = (("loss", "loss_min", "loss_max", "x", "y"),
              ("gradient change", "grad_change_min", "grad_change_max", "x2", "y2"))
    for arm, rows in arms.items():
        steps = list(range(1, len(rows["loss"]) + 1))
        colour = ARM_COLOURS.get(arm, "black")
        for title, lo, hi, xa, ya in panels:
            data += [{"type": "scatter", "x": steps, "y": typed_array(rows[hi]), "xaxis": xa,
                      "yaxis": ya, "mode": "lines", "line": {"width": 0, "color": colour},
                      "showlegend": False, "hoverinfo": "skip"},
                     {"type": "scatter", "x": steps, "y": typed_array(rows[lo]), "xaxis": xa,
                      "yaxis": ya, "mode": "lines", "fill": "tonexty",
                      "line": {"width": 0.5, "color": colour}, "opacity": 0.4,
                      "name": f"{ARM_NAMES.get(arm, arm)}: {title} range",
                      "showlegend": False}]
        data += [{"type": "scatter", "x": steps, "y": typed_array(rows["beta_eff"]), "xaxis": "x3",
                  "yaxis": "y3", "mode": "lines", "line": {"color": colour},
                  "name": ARM_NAMES.get(arm, arm)},
                 {"type": "scatter", "x": steps, "y": typed_array(rows["loss"]), "xaxis": "x4",
                  "yaxis": "y4", "mode": "lines", "line": {"color": colour},
                  "showlegend": False, "name": f"{ARM_NAMES.get(arm, arm)}: training loss"}]
    titles = ("loss along −g (range over η)", "‖g − ∇L(θ − ηg)‖ (range over η)",
              "effective β-smoothness", "training loss")
    layout: dict[str, Any] = {"margin": {"l": 45, "r": 10, "t": 30, "b": 35},
                              "legend": {"orientation": "h", "y": 1.12, "x": 0},
                              "annotations": []}
    for k, title in enumerate(titles):
        row, col = divmod(k, 2)
        suffix = "" if k == 0 else str(k + 1)
        layout[f"xaxis{suffix}"] = {"domain": [col * 0.53, col * 0.53 + 0.47],
                                    "anchor": f"y{suffix}",
                                    "title": {"text": "step"} if row else {}}
        layout[f"yaxis{suffix}"] = {"domain": [0.56 - row * 0.56, 1.0 - row * 0.56],
                                    "anchor": f"x{suffix}",
                                    "type": "log" if k in (1, 2) else "linear"}
        layout["annotations"].append({"text": title, "showarrow": False, "xref": "paper",
                                      "yref": "paper", "x": col * 0.53, "xanchor": "left",
                                      "y": 1.0 - row * 0.56, "yanchor": "bottom",
                                      "font": {"size": 11}})
    return {"data": data, "layout": layout}


def ics_figure(arms: dict[str, dict[str, np.ndarray]]) -> Figure:
    """Definition 2.1 per layer: mean over steps of the l2 difference and of the cosine."""
    data = []
    for arm, rows in arms.items():
        layers = list(range(1, rows["ics_l2"].shape[1] + 1))
        colour = ARM_COLOURS.get(arm, "black")
        data += [{"type": "bar", "x": layers, "y": typed_array(rows["ics_l2"].mean(0)),
                  "name": f"{ARM_NAMES.get(arm, arm)}: ‖G − G′‖", "marker": {"color": colour}},
                 {"type": "scatter", "x": layers, "y": typed_array(rows["ics_cos"].mean(0)),
                  "yaxis": "y2", "mode": "lines+markers", "line": {"color": colour,
                                                                   "dash": "dot"},
                  "name": f"{ARM_NAMES.get(arm, arm)}: cos(G, G′)"}]
    return {"data": data, "layout": {
        "margin": {"l": 45, "r": 45, "t": 30, "b": 35}, "barmode": "group",
        "title": {"text": "internal covariate shift per layer (mean over steps)",
                  "font": {"size": 12}},
        "xaxis": {"title": {"text": "layer"}, "dtick": 1},
        "yaxis": {"title": {"text": "ℓ2 difference"}},
        "yaxis2": {"title": {"text": "cosine"}, "overlaying": "y", "side": "right",
                   "range": [-1.05, 1.05]},
        "legend": {"orientation": "h", "y": -0.25}}}


def decision_maps_figure(decision: dict[str, np.ndarray], box, points: np.ndarray,
                         labels: np.ndarray) -> Figure:
    """The trained networks' predicted class on a grid of the box, with the data."""
    x0, x1, y0, y1 = (float(v) for v in box)
    data, layout = [], {"margin": {"l": 30, "r": 10, "t": 30, "b": 25}, "showlegend": False,
                        "annotations": []}
    for k, (arm, grid) in enumerate(decision.items()):
        suffix = "" if k == 0 else str(k + 1)
        res = grid.shape[0]
        axis = np.linspace(x0, x1, res).tolist()
        data.append({"type": "heatmap", "z": grid.astype(float).tolist(), "x": axis,
                     "y": np.linspace(y0, y1, res).tolist(), "xaxis": f"x{suffix}",
                     "yaxis": f"y{suffix}", "showscale": False, "hoverinfo": "skip",
                     "colorscale": [[0, "#dbe4ff"], [1, "#ffe8cc"]]})
        data.append({"type": "scatter", "mode": "markers", "x": typed_array(points[:, 0]),
                     "y": typed_array(points[:, 1]), "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                     "marker": {"size": 4, "color": typed_array(labels.astype(float)),
                                "colorscale": [[0, BLUE], [1, ORANGE]]}})
        layout[f"xaxis{suffix}"] = {"domain": [k * 0.52, k * 0.52 + 0.48],
                                    "range": [x0, x1], "anchor": f"y{suffix}"}
        layout[f"yaxis{suffix}"] = {"range": [y0, y1], "anchor": f"x{suffix}",
                                    "scaleanchor": f"x{suffix}"}
        layout["annotations"].append({"text": f"decision regions {ARM_NAMES.get(arm, arm)}",
                                      "showarrow": False, "xref": "paper", "yref": "paper",
                                      "x": k * 0.52, "xanchor": "left", "y": 1.0,
                                      "yanchor": "bottom", "font": {"size": 11}})
    return {"data": data, "layout": layout}


def batch_statistics_figure(stats) -> Figure:
    """Histograms of mu_B and sigma_B (bnviz.papers.luo.StatisticsSamples) with Luo et al.'s
    Gaussian model: corrected (solid) and as printed (dashed, var(sigma_B) without
    sigma_P^2)."""
    data: list[dict] = []
    panels = ((stats.mu, stats.mu_p, stats.mu_var_model, None, "μ_B", ""),
              (stats.sigma, stats.sigma_p, stats.sigma_var_model, stats.sigma_var_printed,
               "σ_B", "2"))
    layout: dict[str, Any] = {"margin": {"l": 40, "r": 10, "t": 30, "b": 35},
                              "barmode": "overlay", "legend": {"orientation": "h", "y": 1.2}}
    for k, (values, mean, var, printed, name, suffix) in enumerate(panels):
        lo, hi = np.percentile(values, [0.1, 99.9])
        xs = np.linspace(lo, hi, 200)
        data.append({"type": "histogram", "x": typed_array(values),
                     "histnorm": "probability density", "xaxis": f"x{suffix}",
                     "yaxis": f"y{suffix}", "nbinsx": 60,
                     "marker": {"color": LIGHT_GRAY}, "name": "over mini-batches",
                     "showlegend": k == 0})
        data.append({"type": "scatter", "x": typed_array(xs),
                     "y": typed_array(analytical_density(xs, mean, var, True)),
                     "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "mode": "lines",
                     "line": {"color": GREEN}, "name": "Gaussian model (corrected)",
                     "showlegend": k == 0})
        if printed is not None:
            data.append({"type": "scatter", "x": typed_array(xs),
                         "y": typed_array(analytical_density(xs, mean, printed, True)),
                         "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "mode": "lines",
                         "line": {"color": VERMILLION, "dash": "dash"},
                         "name": "σ_B model as printed"})
        layout[f"xaxis{suffix}"] = {"domain": [k * 0.52, k * 0.52 + 0.48],
                                    "anchor": f"y{suffix}", "title": {"text": name}}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}"}
    return {"data": data, "layout": layout}


def gap_figure(gammas: np.ndarray, gap: np.ndarray, zeta: float, batch_size: int) -> Figure:
    return {"data": [
        {"type": "scatter", "mode": "markers", "x": typed_array(zeta * gammas**2),
         "y": typed_array(gap),
         "name": "Monte Carlo", "marker": {"color": BLUE}},
        {"type": "scatter", "mode": "lines", "x": [0, float(zeta * gammas[-1] ** 2)],
         "y": [0, float(zeta * gammas[-1] ** 2)], "name": "= ζγ²",
         "line": {"color": SLATE, "dash": "dot"}}],
        "layout": {"margin": {"l": 45, "r": 10, "t": 30, "b": 40},
                   "title": {"text": f"E_B[loss] − PN loss vs ζγ², M = {batch_size}",
                             "font": {"size": 12}},
                   "xaxis": {"title": {"text": "ζγ² (ζ = 3/(4M))"}},
                   "yaxis": {"title": {"text": "gap"}},
                   "legend": {"orientation": "h", "y": -0.3}}}


def dynamics_figure(dyn) -> Figure:
    """gamma, R and L over time (bnviz.papers.luo.Dynamics), with the fixed point gamma0."""
    t = dyn.t[::10]
    traces = [(dyn.gamma[::10], "γ", BLUE), (dyn.r[::10], "R (overlap)", GREEN),
              (dyn.length[::10], "L = |w|/√N", ORANGE)]
    data = [{"type": "scatter", "mode": "lines", "x": typed_array(t), "y": typed_array(y),
             "name": name, "line": {"color": colour}} for y, name, colour in traces]
    data.append({"type": "scatter", "mode": "lines", "x": [float(t[0]), float(t[-1])],
                 "y": [dyn.gamma0, dyn.gamma0], "name": "γ0 = 1/(1+2ζ)",
                 "line": {"color": BLUE, "dash": "dot", "width": 1}})
    return {"data": data, "layout": {
        "margin": {"l": 40, "r": 10, "t": 30, "b": 40},
        "title": {"text": f"learning dynamics (eq. 6); BN stable for η_eff < "
                          f"{dyn.eta_max:.3g}", "font": {"size": 12}},
        "xaxis": {"title": {"text": "t = steps / N"}}, "legend": {"orientation": "h",
                                                                  "y": -0.3}}}


MULTICLASS_COLOURS = CATEGORICAL


def whitening_figure(points: np.ndarray, whitened: np.ndarray, labels: np.ndarray) -> Figure:
    """The centred data X beside U of X = U Sigma V^T (Ergen et al.'s whitening)."""
    colours = [MULTICLASS_COLOURS[int(c) % len(MULTICLASS_COLOURS)] for c in labels]
    symbols = [CLASS_SYMBOLS[int(c) % len(CLASS_SYMBOLS)] for c in labels]
    centred = points - points.mean(0)
    u = whitened if whitened.shape[1] >= 2 else np.column_stack([whitened[:, 0],
                                                                 np.zeros(len(whitened))])
    data = [{"type": "scatter", "mode": "markers", "x": typed_array(a[:, 0]),
             "y": typed_array(a[:, 1]), "xaxis": f"x{s}", "yaxis": f"y{s}",
             "marker": {"color": colours, "symbol": symbols, "size": 6},
             "showlegend": False} for a, s in ((centred, ""), (u, "2"))]
    layout: dict[str, Any] = {"margin": {"l": 35, "r": 10, "t": 30, "b": 30},
                              "annotations": []}
    for k, (s, title) in enumerate((("", "centred data X"), ("2", "whitened U (UᵀU = I)"))):
        layout[f"xaxis{s}"] = {"domain": [k * 0.54, k * 0.54 + 0.46], "anchor": f"y{s}"}
        layout[f"yaxis{s}"] = {"anchor": f"x{s}", "scaleanchor": f"x{s}"}
        layout["annotations"].append({"text": title, "showarrow": False, "xref": "paper",
                                      "yref": "paper", "x": k * 0.54, "xanchor": "left",
                                      "y": 1.0, "yanchor": "bottom", "font": {"size": 11}})
    return {"data": data, "layout": layout}


def closed_form_figure(result) -> Figure:
    """Each active unit's normalised (|gamma|, alpha) against the closed form, per class."""
    data = []
    for c in range(len(result.gamma_star)):
        colour = MULTICLASS_COLOURS[c % len(MULTICLASS_COLOURS)]
        mine = result.unit_class == c
        data.append({"type": "scatter", "mode": "markers",
                     "x": typed_array(result.unit_gamma[mine]),
                     "y": typed_array(result.unit_alpha[mine]), "name": f"class {c}: units",
                     "marker": {"color": colour, "size": 8, "opacity": 0.7,
                                "symbol": CLASS_SYMBOLS[c % len(CLASS_SYMBOLS)]}})
        data.append({"type": "scatter", "mode": "markers", "x": [float(result.gamma_star[c])],
                     "y": [float(result.alpha_star[c])], "name": f"class {c}: γ*, α*",
                     "marker": {"color": colour, "size": 16, "symbol": "x-thin",
                                "line": {"width": 3, "color": colour}}})
    theta = np.linspace(0, np.pi / 2, 60)
    data.append({"type": "scatter", "mode": "lines", "x": typed_array(np.cos(theta)),
                 "y": typed_array(np.sin(theta)), "line": {"color": "#ced4da", "width": 1},
                 "showlegend": False, "hoverinfo": "skip"})
    return {"data": data, "layout": {
        "margin": {"l": 40, "r": 10, "t": 30, "b": 40},
        "title": {"text": "trained units vs the closed form", "font": {"size": 12}},
        "xaxis": {"title": {"text": "|γ| / ‖(γ, α)‖"}, "range": [0, 1.05]},
        "yaxis": {"title": {"text": "α / ‖(γ, α)‖"}, "range": [-0.05, 1.05],
                  "scaleanchor": "x"},
        "legend": {"font": {"size": 9}}}}


def normalisation_figure(result) -> Figure:
    """BN, PN and PN + gamma decay (bnviz.papers.luo.NormalisationComparison): each network's
    regions (activation patterns on a grid, coloured by hash) under its decision boundary."""
    x0, x1, y0, y1 = (float(v) for v in result.box)
    names = {"bn": "BN (batch statistics)", "pn": "population normalisation",
             "pn_decay": f"PN + γ decay (ζ = {result.zeta:.3g})"}
    data, layout = [], {"margin": {"l": 30, "r": 10, "t": 30, "b": 25}, "showlegend": False,
                        "annotations": []}
    for k, arm in enumerate(result.arms):
        s = "" if k == 0 else str(k + 1)
        res = result.patterns[arm].shape[0]
        axis = np.linspace(x0, x1, res).tolist()
        codes = np.unique(result.patterns[arm], return_inverse=True)[1].reshape(res, res)
        fill = np.asarray([int(c) % len(REGION_PALETTE) for c in codes.ravel()]).reshape(res,
                                                                                         res)
        scale = [[i / (len(REGION_PALETTE) - 1), c] for i, c in enumerate(REGION_PALETTE)]
        data += [{"type": "heatmap", "z": fill.tolist(), "x": axis, "y": axis,
                  "xaxis": f"x{s}", "yaxis": f"y{s}", "colorscale": scale, "zmin": 0,
                  "zmax": len(REGION_PALETTE) - 1, "showscale": False, "hoverinfo": "skip"},
                 {"type": "contour", "z": result.decision[arm].astype(float).tolist(),
                  "x": axis, "y": axis, "xaxis": f"x{s}", "yaxis": f"y{s}",
                  "contours": {"coloring": "none", "start": 0.5, "end": 0.5, "size": 1},
                  "line": {"color": VERMILLION, "width": 2}, "showscale": False,
                  "hoverinfo": "skip"},
                 {"type": "scatter", "mode": "markers", "x": typed_array(result.points[:, 0]),
                  "y": typed_array(result.points[:, 1]), "xaxis": f"x{s}", "yaxis": f"y{s}",
                  "marker": {"size": 3, "color": typed_array(result.labels.astype(float)),
                             "colorscale": [[0, BLUE], [1, ORANGE]]}}]
        layout[f"xaxis{s}"] = {"domain": [k * 0.34, k * 0.34 + 0.32], "range": [x0, x1],
                               "anchor": f"y{s}", "showticklabels": False}
        layout[f"yaxis{s}"] = {"range": [y0, y1], "anchor": f"x{s}", "scaleanchor": f"x{s}",
                               "showticklabels": False}
        layout["annotations"].append({"text": names.get(arm, arm), "showarrow": False,
                                      "xref": "paper", "yref": "paper", "x": k * 0.34,
                                      "xanchor": "left", "y": 1.0, "yanchor": "bottom",
                                      "font": {"size": 11}})
    return {"data": data, "layout": layout}


def data_points_figure(points: np.ndarray, labels: np.ndarray) -> Figure:
    """The inputs of the weight-plane view as draggable circles, labelled with their y."""
    lo = float(min(points.min(), 0.0)) - 1.0
    hi = float(max(points.max(), 1.0)) + 1.0
    r = 0.04 * (hi - lo)
    shapes = [{"type": "circle", "xref": "x", "yref": "y", "x0": float(p[0]) - r,
               "x1": float(p[0]) + r, "y0": float(p[1]) - r, "y1": float(p[1]) + r,
               "line": {"color": BLUE}, "fillcolor": BLUE, "opacity": 0.5}
              for p in points]
    return {"data": [{"type": "scatter", "mode": "text", "x": typed_array(points[:, 0]),
                      "y": typed_array(points[:, 1]), "text": [f"y={v:g}" for v in labels],
                      "textposition": "top right", "hoverinfo": "skip"}],
            "layout": {"shapes": shapes, "margin": {"l": 30, "r": 5, "t": 5, "b": 25},
                       "xaxis": {"range": [lo, hi], "title": {"text": "x1"}},
                       "yaxis": {"range": [lo, hi], "scaleanchor": "x"},
                       "showlegend": False}}
