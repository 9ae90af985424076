"""The command line's matplotlib pictures (bnviz.views.render) and the pages' plotly figures
(callbacks/<page>/figures.py) of the same result draw with the colours, names and titles of
one description (bnviz.views.style).

The plotly side is read from the figure dict; the matplotlib side from the Figure's artists
(``*_picture``) and from the SVG the command line writes (stroke and fill colours appear as
hex in it; text is drawn as paths, so titles are read from the Figure)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgba

from bnviz.core.network import layer_statistics, random_network
from bnviz.core.partition import compute_partition
from bnviz.data.datasets import make_dataset
from bnviz.params import JitterParams
from bnviz.views import style
from bnviz.views.density import concentration
from bnviz.views.explorer import pattern_raster
from bnviz.views.jitter import run_jitter
from bnviz.views.render import (
    density_picture,
    jitter_picture,
    partition_picture,
    render_density,
    render_jitter,
    render_partition,
)
from bnviz.web.callbacks.density.figures import density_figure
from bnviz.web.callbacks.explorer.figures import partition_figure
from bnviz.web.callbacks.jitter.figures import jitter_figure
from bnviz.web.callbacks.plotting import rgba

BOX = (-3.0, 3.0, -3.0, 3.0)


def traces(fig: dict, name: str) -> list[dict]:
    return [t for t in fig["data"] if t.get("name") == name]


def collection(ax, label: str):
    """The artist of ``ax`` with that label (a LineCollection or a scatter's collection)."""
    found = [c for c in ax.collections if c.get_label() == label]
    assert len(found) == 1, [c.get_label() for c in ax.collections]
    return found[0]


def stroke(artist) -> str:
    return to_hex(artist.get_edgecolor()[0])


def fill(artist) -> str:
    return to_hex(artist.get_facecolor()[0])


@pytest.fixture(scope="module")
def partition():
    """A 3-layer BN network with a classifier head (so a decision boundary is drawn)."""
    data = make_dataset("moons", 60, 0).points
    net = random_network(3, 5, "leaky_relu", 0.1, "bn", 0, head_outputs=2)
    stats = layer_statistics(net, data)
    part = compute_partition(net, data, BOX, stats=stats, device="cpu")
    assert part.decision_boundary is not None and len(part.decision_boundary)
    return part, data, pattern_raster(net, stats, BOX, 32)


def test_partition_picture_and_figure_share_the_description(partition):
    part, data, raster = partition
    n = len(part.layers)
    want_titles = [style.PARTITION.title.format(layer=lp.layer, regions=len(lp.regions))
                   for lp in part.layers]
    # plotly: the last layer highlighted
    fig = partition_figure(part, raster, data, n)
    current, = traces(fig, style.PARTITION.current_name.format(layer=n))
    earlier = traces(fig, style.PARTITION.earlier_name)
    boundary, = traces(fig, style.PARTITION.boundary_name)
    dots, = traces(fig, style.PARTITION.data_name)
    assert current["line"]["color"] == style.PARTITION.current
    assert len(earlier) == n - 1
    assert {t["line"]["color"] for t in earlier} == {style.PARTITION.earlier}
    assert boundary["line"]["color"] == style.PARTITION.boundary
    assert dots["marker"]["color"] == style.PARTITION.data
    assert fig["layout"]["title"]["text"] == want_titles[-1]
    regions = fig["data"][0]
    assert [c for _, c in regions["colorscale"][::2]] == list(style.PARTITION.region_palette)
    # matplotlib: the same colours, names and titles, panel by panel
    picture = partition_picture(part, data)
    axes = picture.axes
    assert [ax.get_title() for ax in axes] == want_titles
    last = axes[-1]
    assert stroke(collection(last, style.PARTITION.current_name.format(layer=n))) == \
        to_hex(current["line"]["color"])
    assert stroke(collection(last, style.PARTITION.boundary_name)) == \
        to_hex(boundary["line"]["color"])
    assert fill(collection(last, style.PARTITION.data_name)) == to_hex(dots["marker"]["color"])
    earlier_mpl = [c for c in last.collections if c.get_label() == style.PARTITION.earlier_name]
    assert len(earlier_mpl) == n - 1 and {stroke(c) for c in earlier_mpl} == {
        to_hex(style.PARTITION.earlier)}
    # and the SVG the command line writes holds those colours
    svg = render_partition(part, data, "svg").decode()
    for colour in (style.PARTITION.current, style.PARTITION.earlier, style.PARTITION.boundary):
        assert colour in svg


def test_partition_description_changes_both_media(partition, monkeypatch):
    """One edit of the description changes the page's figure and the command line's
    picture (neither keeps a copy of the colour or the title)."""
    part, data, raster = partition
    changed = dataclasses.replace(style.PARTITION, current="#123456",
                                  title="L{layer} has {regions}")
    import bnviz.views.render as render
    import bnviz.web.callbacks.explorer.figures as figures

    monkeypatch.setattr(render, "PARTITION", changed)
    monkeypatch.setattr(figures, "PARTITION", changed)
    fig = partition_figure(part, raster, data, 2)
    assert traces(fig, "layer 2")[0]["line"]["color"] == "#123456"
    assert fig["layout"]["title"]["text"] == f"L2 has {len(part.layers[1].regions)}"
    picture = partition_picture(part, data)
    assert stroke(collection(picture.axes[1], "layer 2")) == "#123456"
    assert picture.axes[1].get_title() == f"L2 has {len(part.layers[1].regions)}"


def test_jitter_picture_and_figure_share_the_description():
    s = JitterParams(n_points=80, depth=2, width=5, batch_size=8, realizations=6)
    r = run_jitter(s, device="cpu")
    fig = jitter_figure(r.boundaries, r.test_boundary, r.data.points, r.data.labels, BOX, "t")
    k = len(r.boundaries)
    blue, = traces(fig, style.JITTER.realisations_name.format(k=k))
    black, = traces(fig, style.JITTER.test_name)
    assert blue["line"]["color"] == rgba(style.JITTER.realisation,
                                         style.JITTER.realisation_opacity)
    assert black["line"]["color"] == style.JITTER.test_boundary
    picture = jitter_picture(r)
    ax = picture.axes[0]
    mpl_blue = collection(ax, style.JITTER.realisations_name.format(k=k))
    assert tuple(mpl_blue.get_edgecolor()[0]) == pytest.approx(
        to_rgba(style.JITTER.realisation, style.JITTER.realisation_opacity))
    assert stroke(collection(ax, style.JITTER.test_name)) == to_hex(style.JITTER.test_boundary)
    for c, colour in enumerate(style.JITTER.class_colours):
        name = style.JITTER.class_name.format(label=c)
        assert traces(fig, name)[0]["marker"]["color"] == colour
        assert fill(collection(ax, name)) == colour
    assert ax.get_title().startswith(style.JITTER.batches.format(batch=8, k=k))
    svg = render_jitter(r, "svg").decode()
    assert all(colour in svg for colour in style.JITTER.class_colours)
    assert style.JITTER.realisation in svg


def test_density_picture_and_figure_share_the_description():
    data = make_dataset("star", 30, 0).points
    net = random_network(2, 16, "leaky_relu", 0.1, "bn", 0)
    r = concentration(net, data, [1, 2], 32, 1.0, BOX, device="cpu")
    fig = density_figure(np.stack([np.stack(r.counts)]), ["bn"], [1, 2], data, BOX)
    heat = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert {tuple(map(tuple, t["colorscale"])) for t in heat} == {style.DENSITY.counts}
    assert {t["marker"]["color"] for t in fig["data"] if t["type"] == "scatter"} == {
        style.DENSITY.data}
    titles = [a["text"] for a in fig["layout"]["annotations"][:2]]
    want = [style.DENSITY.panel.format(layer=layer, top=int(c.max()))
            for layer, c in zip(r.layers, r.counts, strict=True)]
    assert titles == want
    picture = density_picture(r, data, "bn")
    assert [ax.get_title() for ax in picture.axes] == [f"BN, {t}" for t in want]
    for ax in picture.axes:
        cmap = ax.images[0].get_cmap()
        assert to_hex(cmap(0.0)) == style.DENSITY.counts[0][1]
        assert to_hex(cmap(1.0)) == style.DENSITY.counts[-1][1]
        assert fill(ax.collections[0]) == style.DENSITY.data
    assert style.DENSITY.data in render_density(r, data, "bn", "svg").decode()


def test_render_refuses_other_formats(partition):
    part, data, _ = partition
    with pytest.raises(ValueError, match="png or svg"):
        render_partition(part, data, "jpg")
    assert render_partition(part, data, "png").startswith(b"\x89PNG")
