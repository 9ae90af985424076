"""The map of a slice job (issue 45, item 4; bnviz.slices.slice_map): its raster lights every
pixel a stored facet crosses and little else, its tiles are kept in the shared disk cache, a
view's regions are counted from the stored tiles, and a view cut again is the stored
partition restricted to the view, region for region (full code and clipped area, by shapely
from the stored polygons), in eval and train mode."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shapely
from onnx_nets import conv_net
from slice_compare import full_codes

from bnviz.records.types import DistInfo, RecordingContext
from bnviz.service.cache import shared_cache
from bnviz.slices import slice_map
from bnviz.slices.tiled_job import TILED_SLICE_JOB


@pytest.fixture
def finished(tmp_home, tmp_path, request):
    """A finished slice job of a max-pooling ONNX conv net on 9 tiles; its MapSource."""
    images = np.random.default_rng(0).normal(0, 1, (20, 1, 6, 6)).astype(np.float32)
    np.save(tmp_path / "images.npy", images)
    raw = {"model": str(conv_net(tmp_path / "maxpool.onnx", maxpool=True)),
           "data": str(tmp_path / "images.npy"), "tiles": 9, "workers": 1}
    if getattr(request, "param", "eval") == "train":
        raw |= {"bn": "train", "batch": str(tmp_path / "images.npy"), "batches": 2,
                "batch_size": 8}
    summary = TILED_SLICE_JOB.run(TILED_SLICE_JOB.check(raw), RecordingContext(), DistInfo())
    slice_map.open_map.cache_clear()
    slice_map._setup.cache_clear()
    return slice_map.open_map(Path(summary["folder"]).name), summary


def _stored_pieces(source: slice_map.MapSource, part: str) -> list[tuple]:
    """Per layer: the stored partition's regions as (full codes, shapely polygons): each
    tile's regions off its seams, then the merged seams."""
    store = source.store
    layers: list[list[tuple]] = []
    for i in [*range(len(source.tiles)), None]:
        s = store.read_seams(part) if i is None else store.read_tile(part, i)[0]
        masks = [None] * len(s.layers) if i is None else store.read_seam_masks(part, i)
        for k, (codes, lay) in enumerate(zip(full_codes(s), s.layers, strict=True)):
            keep = np.ones(len(codes), bool) if masks[k] is None else ~masks[k]
            counts = np.diff(lay.regions.ptr)
            rings = shapely.linearrings(lay.regions.vertices,
                                        indices=np.repeat(np.arange(len(counts)), counts))
            if len(layers) <= k:
                layers.append([])
            layers[k].append((codes[keep], shapely.polygons(rings)[keep]))
    return [tuple(np.concatenate(x) for x in zip(*per, strict=True)) for per in layers]


def test_a_view_cut_again_is_the_stored_partition_inside_it(finished):
    source, summary = finished
    a0, a1, b0, b1 = source.window
    # a view across tile lines, off centre
    rect = (a0 + 0.23 * (a1 - a0), a0 + 0.61 * (a1 - a0), b0 + 0.3 * (b1 - b0),
            b0 + 0.72 * (b1 - b0))
    arrays = slice_map.recut_view(source, rect)
    assert tuple(arrays["window"]) == rect
    box = shapely.box(rect[0], rect[2], rect[1], rect[3])
    layers = len(source.layers)
    codes = [arrays["a0_l0_codes"]]
    for k in range(1, layers):
        codes.append(np.concatenate([codes[-1][arrays[f"a0_l{k}_parents"]],
                                     arrays[f"a0_l{k}_codes"]], 1))
    for k, (stored_codes, polygons) in enumerate(_stored_pieces(source, source.parts[0])):
        clipped = shapely.area(shapely.intersection(polygons, box))
        inside = clipped > 1e-12 * box.area
        ptr, vertices = arrays[f"a0_l{k}_ptr"], arrays[f"a0_l{k}_vertices"]
        counts = np.diff(ptr)
        mine = shapely.area(shapely.polygons(shapely.linearrings(
            vertices, indices=np.repeat(np.arange(len(counts)), counts))))
        assert len(mine) == inside.sum(), source.layers[k]
        want = dict(zip(map(bytes, stored_codes[inside]), clipped[inside], strict=True))
        got = dict(zip(map(bytes, codes[k]), mine, strict=True))
        assert want.keys() == got.keys(), source.layers[k]
        np.testing.assert_allclose([got[c] for c in want], list(want.values()), rtol=1e-7,
                                   atol=1e-10 * box.area)
    assert mine.sum() == pytest.approx(box.area, rel=1e-9)


@pytest.mark.parametrize("finished", ["train"], indirect=True)
def test_in_train_mode_each_mini_batch_is_cut_again(finished, monkeypatch):
    source, summary = finished
    monkeypatch.setattr(slice_map, "RECUT_MAX_REGIONS", 10**6)
    assert source.parts == ("a0-b0", "a0-b1")
    w = source.window
    rect = (w[0], (w[0] + w[1]) / 2, w[2], (w[2] + w[3]) / 2)
    arrays = slice_map.recut_view(source, rect)
    assert "a0_boundary0" in arrays and "a0_boundary1" in arrays


def test_a_view_over_the_cap_is_refused_in_one_line(finished, monkeypatch):
    source, summary = finished
    total = slice_map.regions_in_view(source, source.window)
    assert total == sum(r[-1] for r in summary["regions"])  # the job's merged count
    monkeypatch.setattr(slice_map, "RECUT_MAX_REGIONS", int(total / 2))
    with pytest.raises(ValueError, match="zoom in") as refused:
        slice_map.recut_view(source, source.window)
    assert "\n" not in str(refused.value)


def test_the_raster_lights_the_pixels_the_facets_cross(finished):
    source, _ = finished
    part, layer = source.parts[0], len(source.layers) - 1
    image, drawn, z = slice_map.map_view(source, part, layer, source.window, 256)
    assert z == 0 and drawn == pytest.approx(source.window) and image.shape == (256, 256, 4)
    facets, boundary = slice_map._segments(source, part, layer, source.window)
    assert len(facets) > 100
    # sample every facet densely (four samples a pixel): the pixel each sample falls in (rows
    # from the top), or one next to it, is lit
    a0, a1, b0, b1 = source.window

    def pixels(seg):
        px = (seg - [a0, b0, a0, b0]) / [a1 - a0, b1 - b0, a1 - a0, b1 - b0] * 256
        n = (4 * np.hypot(px[:, 2] - px[:, 0], px[:, 3] - px[:, 1])).astype(int) + 2
        owner = np.repeat(np.arange(len(seg)), n)
        t = (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)) / np.repeat(n - 1, n)
        t = 0.01 + 0.98 * t
        p = px[owner, :2] + t[:, None] * (px[owner, 2:] - px[owner, :2])
        return (255 - p[:, 1].astype(int)).clip(0, 255), p[:, 0].astype(int).clip(0, 255)

    row, col = pixels(facets)
    lit = image[..., 3] > 0
    padded = np.pad(lit, 1)  # a line drawn pixel by pixel may cut a corner the facet crosses
    within_one = np.zeros_like(lit)
    for dr in (0, 1, 2):
        for dc in (0, 1, 2):
            within_one |= padded[dr:dr + 256, dc:dc + 256]
    assert within_one[row, col].all()
    crossed = np.zeros((256, 256), bool)
    crossed[row, col] = True
    brow, bcol = pixels(boundary)
    crossed[brow, bcol] = True
    near = crossed | np.roll(crossed, 1, 0) | np.roll(crossed, -1, 0) | \
        np.roll(crossed, 1, 1) | np.roll(crossed, -1, 1)
    assert not (lit & ~near).any()  # nothing lit a pixel away from every facet
    # the decision boundary in red, over the facets
    assert (image[brow, bcol, 0] > 200).all() and (image[brow, bcol, 1] < 60).all()


def test_map_tiles_are_kept_in_the_shared_cache_and_a_zoomed_view_uses_finer_ones(finished):
    source, _ = finished
    part, layer = source.parts[0], 1
    w = source.window
    slice_map.map_view(source, part, layer, w, 700)
    cache = shared_cache()
    mine = [k for k in cache.iterkeys() if k[0] == "slice-map" and k[2] == source.key]
    last = len(source.layers) - 1  # the job drew zooms 0 to 2 of its last layer as it ended
    assert sorted(k[5] for k in mine if k[4] == last) == [0] + [1] * 4 + [2] * 16
    names = [k for k in mine if k[4] == layer]
    assert len(names) == 16 and all(k[5] == 2 for k in names)  # 700 px: zoom 2, 4 x 4
    rect = (w[0], w[0] + (w[1] - w[0]) / 8, w[2], w[2] + (w[3] - w[2]) / 8)
    image, drawn, z = slice_map.map_view(source, part, layer, rect, 512)
    assert z == 4 and image.shape == (512, 512, 4)  # 16 tiles across the window
    assert drawn[0] <= rect[0] and drawn[1] >= rect[1] and drawn[3] >= rect[3]
    before = len(list(cache.iterkeys()))
    again, _, _ = slice_map.map_view(source, part, layer, rect, 512)
    assert np.array_equal(image, again) and len(list(cache.iterkeys())) == before


def test_a_crafted_view_costs_a_bounded_number_of_map_tiles(finished, monkeypatch):
    """A view a thousandth of the window wide and all of its height (a request can send any
    ranges): at most 5 x 5 map tiles of 256 pixels for a graph 1024 pixels wide."""
    source, _ = finished
    drawn = []
    real = slice_map.map_tile

    def counted(*args):
        drawn.append(args[3:])
        return real(*args)

    monkeypatch.setattr(slice_map, "map_tile", counted)
    w = source.window
    thin = (w[0], w[0] + (w[1] - w[0]) / 1000, w[2], w[3])
    image, _, z = slice_map.map_view(source, source.parts[0], 0, thin, 1024)
    assert z == 2 and len(drawn) <= 25 and image.shape[0] <= 5 * 256
    far = (w[0] - 1e9, w[1] + 1e9, w[2] - 1e9, w[3] + 1e9)  # clipped to the window
    _, rect, z = slice_map.map_view(source, source.parts[0], 0, far, 1024)
    assert z == 2 and rect == pytest.approx(w)


def test_a_job_that_is_not_finished_is_no_map(tmp_home):
    with pytest.raises(ValueError, match="no finished slice job"):
        slice_map.open_map("0" * 32)


def test_the_whole_window_holds_the_merged_count_and_a_part_an_estimate(finished):
    """Over the whole window the map's count is the job's exact merged count (what the
    summary says, per partition); the stored tiles' own counts sum to more where tile lines
    cut regions, so a smaller view's count is an estimate, prorated by area."""
    source, summary = finished
    merged = sum(int(r[-1]) for r in source.merged.values())
    assert slice_map.exact_regions(source, source.window) == merged
    first = [source.merged[p][-1] for p in source.parts if p.endswith("-b0")]
    assert first == [r[-1] for r in summary["regions"]]
    tile_sums = sum(int(r[:, -1].sum()) for r in source.regions.values())
    assert tile_sums > merged  # regions cut by the tile lines count once per tile
    w = source.window
    wider = (w[0] - 1, w[1] + 1, w[2] - 1, w[3] + 1)
    assert slice_map.exact_regions(source, wider) == merged
    half = (w[0], (w[0] + w[1]) / 2, w[2], w[3])
    assert slice_map.exact_regions(source, half) is None
    assert 0 < slice_map.regions_in_view(source, half) < tile_sums
