"""Each tour scene as a matplotlib picture (slides and ``bnviz lecture --export``): what the
lecture view's plotly figure shows, drawn with the same colours and names
(:mod:`bnviz.views.style`) into the axes a slide gives it. No pyplot: safe in threads."""

from __future__ import annotations

import numpy as np
from matplotlib import rcParams
from matplotlib.collections import LineCollection
from matplotlib.colors import LinearSegmentedColormap, ListedColormap, to_rgb
from matplotlib.figure import SubFigure

from bnviz.lecture.panels import empty_density_note, same_partition, split_label
from bnviz.lecture.scenes import Scene
from bnviz.views.bnstats import analytical_density
from bnviz.views.render import (
    MARKERS,
    draw_density_panel,
    draw_jitter,
    draw_layer_panel,
    draw_training_frame,
    line_segments,
)
from bnviz.views.style import (
    BLUE,
    CLASS_SYMBOLS,
    FIGURE7,
    FIGURE9,
    GREEN,
    LIGHT_GRAY,
    ORANGE,
    PARTITION,
    UNIT,
    VERMILLION,
    colour_bar_title,
    mode_label,
    region_colour_index,
    subscript,
)

__all__ = ["draw_scene"]


def _ink(colour: str) -> str:
    """A style colour as the slide's theme draws it: black is the theme's foreground and
    white its background (with matplotlib's dark_background, black data would vanish)."""
    if str(colour).lower() in ("black", "#000000", "#000"):
        return rcParams["text.color"]
    if str(colour).lower() in ("white", "#ffffff", "#fff"):
        return rcParams["axes.facecolor"]
    return colour


def _regions(ax, raster: np.ndarray, box, alpha: float = 0.55) -> None:
    """Regions filled by activation pattern, as the page's heatmap (the same hash); the
    default opacity is the page's projector fill: the data's ink shows in both themes."""
    palette = PARTITION.region_palette
    idx = region_colour_index(raster, len(palette))
    ax.imshow(idx, origin="lower", extent=box, cmap=ListedColormap(list(palette)),
              vmin=-0.5, vmax=len(palette) - 0.5, interpolation="nearest", zorder=0,
              alpha=alpha)


def _figure9(fig, result, f9) -> None:
    """Figure 9: one panel a layer (1 and the highlighted one), each unit's facets in the
    colour of its value on the layer's own scale, the colour bar naming the quantity (eq. 8),
    the data as dots: what the page's :func:`callbacks.explorer.figures.tls_figure` shows."""
    cmap = LinearSegmentedColormap.from_list("figure 9", list(FIGURE9.colourscale))
    axes = fig.subplots(1, len(f9.layers), squeeze=False)[0]
    x0, x1, y0, y1 = f9.box
    for ax, t in zip(axes, f9.layers, strict=True):
        _regions(ax, result.raster[t.layer - 1], f9.box, alpha=0.18)
        lo, hi = t.colour_range
        lc = LineCollection(line_segments(t.facets), array=t.facet_values, cmap=cmap,
                            linewidths=2.6)
        lc.set_clim(lo, hi if hi > lo else lo + 1.0)
        ax.add_collection(lc)
        fig.colorbar(lc, ax=ax, shrink=0.8, label=colour_bar_title(t.layer, t.exact, "\n"))
        ax.scatter(*f9.points.T, s=10, c=_ink(PARTITION.data), zorder=6)
        what = (FIGURE9.lines if t.layer == 1 else FIGURE9.folded).format(
            l=subscript(t.layer))
        ax.set(xlim=(x0, x1), ylim=(y0, y1), aspect="equal",
               title=FIGURE9.panel.format(layer=t.layer, what=what))


def _space(ax, result, title: str | None = None) -> None:
    s, part = result.settings, result.partition
    layer = min(s.layer, len(part.layers))
    _regions(ax, result.raster[layer - 1], part.box)
    for j in range(layer):
        current = j == layer - 1
        ax.add_collection(LineCollection(
            line_segments(part.layers[j].facets), linewidths=2.4 if current else 1.0,
            colors=PARTITION.current if current else PARTITION.earlier,
            label=PARTITION.current_name.format(layer=j + 1) if current
            else (PARTITION.earlier_name if j == 0 else None)))
    if s.scope == "unit":
        tl = part.layers[s.target_layer - 1]
        ax.add_collection(LineCollection(line_segments(tl.facets[tl.facet_units == s.target_unit]),
                                         colors=PARTITION.target, linewidths=3.5,
                                         label=PARTITION.target_name.format(
                                             layer=s.target_layer, unit=s.target_unit + 1)))
    pts, inside = result.data.points, result.batch_mask
    if inside is not None:
        ax.scatter(*pts[~inside].T, s=14, c=_ink(PARTITION.other_data),
                   edgecolors=_ink(PARTITION.data), linewidths=0.6, zorder=5,
                   label=PARTITION.other_name)
        pts = pts[inside]
    ax.scatter(*pts.T, s=12, c=_ink(PARTITION.data), zorder=6,
               label=PARTITION.batch_name if s.batch_size is not None else PARTITION.data_name)
    x0, x1, y0, y1 = part.box
    ax.set(xlim=(x0, x1), ylim=(y0, y1), aspect="equal")
    ax.set_title(title or PARTITION.title.format(layer=layer,
                                                 regions=len(part.layers[layer - 1].regions)))
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)


def _layers(fig, rows) -> None:
    n = max(len(r.partition.layers) for _, r in rows)
    axes = fig.subplots(len(rows), n, squeeze=False)
    for r, (mode, result) in enumerate(rows):
        axes[r, 0].set_ylabel(PARTITION.row_label(mode).replace(" (", "\n("))
        for c, ax in enumerate(axes[r][:len(result.partition.layers)]):
            draw_layer_panel(ax, result.partition, c + 1, result.data.points, scale=1.6,
                             ink=_ink, title=PARTITION.column.format(layer=c + 1)
                             if r == 0 else None)


def _unit(fig, view) -> None:
    left, right = fig.subplots(1, 2)
    left.hist(view.projections, bins=30, color=UNIT.projections)
    left.axvline(view.mu, color=UNIT.mu, linewidth=3, label="μ")
    left.axvline(view.batch_mean, color=UNIT.bn_mean, linestyle="--", label="BN mean")
    left.set(xlabel=UNIT.projections_axis, ylabel=UNIT.count_axis)
    left.legend(frameon=False)
    right.plot(view.mu_grid, view.tls_loss, color=UNIT.loss, linewidth=2)
    loss = (view.batch_std**2 + (view.batch_mean - view.mu) ** 2) / max(view.weight_norm,
                                                                         1e-300) ** 2
    right.plot([view.mu], [loss], "o", color=UNIT.mu, markersize=12)
    right.axvline(view.batch_mean, color=UNIT.bn_mean, linestyle="--")
    right.set(xlabel=UNIT.mu_axis, ylabel=UNIT.loss_axis)


def _dark() -> bool:
    """Whether the slide is drawn in the dark theme (its rc context's axes background)."""
    return bool(np.mean(to_rgb(rcParams["axes.facecolor"])) < 0.5)


def _density(fig, d) -> None:
    """Figure 3's panels as the page draws them: on a dark slide the scale runs from the
    background's black (no facet) to white (the most), as the page's dark theme does, so
    that the caption's "stands out from the background" holds on both; a panel that counts
    no facet says why it is blank."""
    axes = fig.subplots(len(d["modes"]), len(d["layers"]), squeeze=False)
    for r, mode in enumerate(d["modes"]):
        for c, layer in enumerate(d["layers"]):
            ax, counts = axes[r, c], d["counts"][r, layer - 1]
            draw_density_panel(ax, counts, layer, d["box"], d["points"],
                               3 if len(d["points"]) > 12 else 60, _ink, title_size=10)
            if _dark():
                image = ax.get_images()[-1]
                image.set_cmap(image.get_cmap().reversed())
            if counts.max() == 0:
                ax.text(0.5, 0.5, empty_density_note(layer), transform=ax.transAxes,
                        ha="center", va="center", fontsize=9, color=_ink("black"))
            if c == 0:
                ax.set_ylabel(mode_label(mode))


def _jitter(ax, result) -> None:
    draw_jitter(ax, result, scale=4 / 3, ink=_ink)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)


def _bnstats(fig, report, samples) -> None:
    units = report["units"]
    axes = fig.subplots(2, len(units), squeeze=False)
    for row, (key, noisy, name) in enumerate((("mu", "mu_noise", "μ"),
                                              ("sigma2", "sigma2_noise", "σ²"))):
        for col, unit in enumerate(units):
            ax = axes[row, col]
            ax.hist(samples[key][:, col], bins=40, density=True, alpha=0.5,
                    color=_ink(FIGURE7.empirical), label=FIGURE7.empirical_name)
            ax.hist(samples[noisy][:, col], bins=40, density=True, alpha=0.45,
                    color=FIGURE7.noise_controlled, label=FIGURE7.noise_name)
            mean, var = unit[key]["analytical_mean"], unit[key]["analytical_var"]
            lo, hi = np.percentile(samples[noisy][:, col], [0.1, 99.9])
            grid = np.linspace(lo, hi, 200)
            dens = analytical_density(grid, mean, var, key == "mu")
            ax.plot(grid, dens, color=FIGURE7.analytical, label=FIGURE7.analytical_name)
            ax.set(yticks=[], xlabel=FIGURE7.axis.format(statistic=name, unit=col + 1))
    # the figure's legend, above the panels: an axes' legend wider than its column would
    # make the constrained layout widen that column's gutter
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside upper left", ncols=3,
               frameon=False)


def _dannemann(ax, plane, fig) -> None:
    excess = np.log10(np.maximum(plane.bn_loss - plane.min_bn_loss, 0) + 1e-3)
    cs = ax.contourf(plane.xs, plane.ys, excess, levels=24, cmap="viridis_r")
    fig.colorbar(cs, ax=ax, label="log10(C^ − min C^)", shrink=0.8)
    ax.contour(plane.xs, plane.ys, np.log10(plane.loss + 1e-9), levels=14, colors="white",
               linewidths=0.6)
    e = float(plane.xs[-1])
    d = plane.bn_direction
    start = -2 * e * d if plane.both_signs else np.zeros(2)
    ax.plot([start[0], 2 * e * d[0]], [start[1], 2 * e * d[1]], color=ORANGE, linewidth=3,
            label="BN minima")
    ax.plot(*plane.w_star, "*", color=VERMILLION, markersize=16, label="W* (least squares)")
    g = np.asarray(plane.grad_at_w_star, dtype=np.float64)
    if np.hypot(*g) > 0:  # −∇C^ at W*, scaled to be seen, as the page draws it
        tip = plane.w_star - 0.25 * e * g / np.hypot(*g)
        ax.annotate("", xy=tip, xytext=plane.w_star, zorder=7,
                    arrowprops={"arrowstyle": "-|>", "color": VERMILLION, "linewidth": 2})
    ax.plot(*plane.w0, "o", color="white", markeredgecolor="black", markersize=10, label="W0")
    ax.plot(*plane.nearest_bn, "D", color=ORANGE, markeredgecolor="black", markersize=9,
            label="nearest BN optimum")
    ax.set(xlim=(plane.xs[0], plane.xs[-1]), ylim=(plane.ys[0], plane.ys[-1]), aspect="equal",
           xlabel="w₁", ylabel="w₂")
    ax.legend(loc="upper left", bbox_to_anchor=(1.25, 1), frameon=False)


def _santurkar(fig, result) -> None:
    axes = fig.subplots(1, 2)
    colours, names = {"bn": BLUE, "no_bn": ORANGE}, {"bn": "with BN", "no_bn": "without BN"}
    for arm, rows in result.arms.items():
        steps = np.arange(1, len(rows["loss"]) + 1)
        axes[0].fill_between(steps, rows["loss_min"], rows["loss_max"], color=colours[arm],
                             alpha=0.4, label=names[arm])
        axes[1].plot(steps, rows["beta_eff"], color=colours[arm], label=names[arm])
    axes[0].set(title="loss along −g (range over η)", xlabel="step")
    axes[1].set(title="effective β-smoothness", xlabel="step", yscale="log")
    axes[0].legend(frameon=False)


def _luo(fig, st) -> None:
    axes = fig.subplots(1, 2)
    for ax, values, mean, var, name in ((axes[0], st.mu, st.mu_p, st.mu_var_model, "μ_B"),
                                        (axes[1], st.sigma, st.sigma_p, st.sigma_var_model,
                                         "σ_B")):
        ax.hist(values, bins=60, density=True, color=LIGHT_GRAY, label="over mini-batches")
        grid = np.linspace(*np.percentile(values, [0.1, 99.9]), 200)
        ax.plot(grid, analytical_density(grid, mean, var, True), color=GREEN,
                label="Gaussian model")
        ax.set(xlabel=f"{name}, M = {st.batch_size}", yticks=[])
    axes[0].legend(frameon=False)


def _ergen(fig, result) -> None:
    """Ergen et al.'s whitening: the centred data X beside U of X = U Sigma V^T."""
    axes = fig.subplots(1, 2)
    colours = (VERMILLION, BLUE, GREEN, ORANGE)
    for ax, pts, title in ((axes[0], result.points - result.points.mean(0), "centred data X"),
                           (axes[1], result.whitened[:, :2], "whitened: U of X = UΣVᵀ")):
        for c in np.unique(result.labels):
            sel = result.labels == c
            ax.scatter(*pts[sel].T, s=30, color=colours[int(c) % 4],
                       marker=MARKERS[CLASS_SYMBOLS[int(c) % len(CLASS_SYMBOLS)]],
                       label=f"class {int(c)}")
        ax.set(aspect="equal", title=title)
    axes[0].legend(frameon=False)


def _training(fig, data) -> None:
    """The training step: a column a run (without BN left, with BN right, as the caption
    says), its first recorded frame above its last."""
    runs = data["runs"]
    axes = fig.subplots(2, len(runs), squeeze=False)
    for column, (mode, frames) in enumerate(runs.items()):
        for ax, frame in zip(axes[:, column], (frames[0], frames[-1]), strict=True):
            draw_training_frame(ax, frame, data["points"], data["labels"], scale=1.3)
            ax.set_title(f"{PARTITION.row_label(mode)}, step {frame.step}: "
                         f"{frame.regions[-1]} regions")


def draw_scene(sub: SubFigure, scene: Scene) -> None:
    """Draw ``scene`` into the (sub)figure ``sub``."""
    kind, data = scene.step.scene, scene.data
    if kind == "space" and scene.tls is not None:
        _figure9(sub, data, scene.tls)
    elif kind == "space":
        _space(sub.subplots(), data)
    elif kind == "unit":
        _unit(sub, data.unit)
    elif kind == "layers":
        _layers(sub, data)
    elif kind == "split":
        axes = sub.subplots(1, 2)
        layer = scene.settings.layer
        same = same_partition(data[0][1].partition, data[1][1].partition, layer)
        for ax, (mode, result), other in zip(axes, data, ("right", "left"), strict=True):
            regions = len(result.partition.layers[layer - 1].regions)
            _space(ax, result, f"{split_label(mode, result.settings)}:\n{regions} regions"
                   + (f", the same as on the {other}" if same else ""))
            ax.get_legend().remove()
    elif kind == "training":
        _training(sub, data)
    elif kind in ("density", "slice"):
        _density(sub, data)
    elif kind == "jitter":
        _jitter(sub.subplots(), data)
    elif kind == "bnstats":
        _bnstats(sub, *data)
    elif kind == "dannemann":
        _dannemann(sub.subplots(), data, sub)
    elif kind == "santurkar":
        _santurkar(sub, data)
    elif kind == "luo":
        _luo(sub, data)
    elif kind == "ergen":
        _ergen(sub, data)
    else:
        raise ValueError(f"unknown scene {kind!r}")
