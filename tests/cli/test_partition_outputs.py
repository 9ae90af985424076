"""``bnviz partition``'s outputs (issue 18, item 2): the default summary (counts, per-layer
statistics, tolerance, engine seconds, small at any size), the full JSON (``--format
json-full``, orjson) and the geometry files (``--geometry FILE``: .npz, GeoParquet,
GeoJSON), each checked against the full JSON of the same partition."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from fuzzing import assert_one_error_line, strict_json

from bnviz.cli import main
from bnviz.core.crossings import RTOL

NET = ["--depth", "3", "--width", "6", "--weight-seed", "3", "--data-seed", "3", "--shift-x", "0.5"]


def _run(capsysbinary, *args: object) -> bytes:
    capsysbinary.readouterr()
    rc = main(["partition", *map(str, args)])
    captured = capsysbinary.readouterr()
    assert rc == 0, captured.err.decode()
    return captured.out


@pytest.fixture(params=[("bn", "leaky_relu"), ("random_bias", "relu"), ("zero_bias", "abs")],
                ids=lambda p: "-".join(p))
def net(request) -> list[str]:
    mode, activation = request.param
    return [*NET, "--mode", mode, "--activation", activation]


@pytest.fixture
def full(capsysbinary, net) -> dict:
    return strict_json(_run(capsysbinary, *net, "--format", "json-full"))


def _shoelace(v: np.ndarray) -> float:
    x, y = v[:, 0], v[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


def test_the_summary_is_the_default_and_agrees_with_the_full_json(capsysbinary, net, full):
    out = _run(capsysbinary, *net)
    summary = strict_json(out)
    alias = strict_json(_run(capsysbinary, *net, "--format", "json"))

    def timeless(d: dict) -> dict:
        return {k: v for k, v in d.items() if k != "seconds"}

    assert summary["format"] == "summary" and timeless(alias) == timeless(summary)
    assert summary["regions"] == len(full["regions"]) and summary["widths"] == full["widths"]
    assert summary["tolerance"]["rtol"] == RTOL and summary["seconds"] > 0
    box_area = (full["box"][1] - full["box"][0]) * (full["box"][3] - full["box"][2])
    previous = 1
    for s, f in zip(summary["layers"], full["layers"], strict=True):
        areas = [_shoelace(np.asarray(r["vertices"])) for r in f["regions"]]
        assert s["regions"] == len(f["regions"]) and s["new_regions"] == s["regions"] - previous
        assert s["facets"] == len(f["facets"])
        assert s["vertices"] == sum(len(r["vertices"]) for r in f["regions"])
        assert s["area"]["min"] == pytest.approx(min(areas), rel=1e-9, abs=1e-15)
        assert s["area"]["total"] == pytest.approx(box_area, rel=1e-9)
        tls = [t for t in f["tls_error"] if t is not None]
        assert s["tls_error_sum"] == pytest.approx(sum(tls), rel=1e-12)
        assert s["sigma"]["min"] == pytest.approx(min(f["sigma"]), rel=1e-12)
        previous = s["regions"]


def test_the_summary_stays_small_for_a_large_network(capsysbinary):
    out = _run(capsysbinary, "--depth", "4", "--width", "48", "--mode", "random_bias")
    summary = json.loads(out)
    assert summary["regions"] > 5000 and len(out) < 20_000


def test_json_full_facets_have_integer_units(full):
    for layer in full["layers"]:
        for facet in layer["facets"]:
            assert len(facet) == 5 and isinstance(facet[4], int)
            assert all(isinstance(c, float) for c in facet[:4])
        units = {f[4] for f in layer["facets"]}
        assert units <= set(range(full["widths"][layer["layer"] - 1]))


def test_npz_geometry_is_the_full_json_as_flat_arrays(capsysbinary, net, full, tmp_path):
    path = tmp_path / "g.npz"
    summary = strict_json(_run(capsysbinary, *net, "--geometry", path))
    assert summary["geometry"] == str(path)
    with np.load(path) as z:
        assert list(z["widths"]) == full["widths"]
        for layer in full["layers"]:
            key = f"layer{layer['layer']}"
            offsets, vertices = z[f"{key}_offsets"], z[f"{key}_vertices"]
            units = sum(full["widths"][:layer["layer"]])
            codes = np.unpackbits(z[f"{key}_codes"], axis=1, count=units)
            assert len(offsets) == len(layer["regions"]) + 1 and offsets[0] == 0
            for i, region in enumerate(layer["regions"]):
                np.testing.assert_array_equal(vertices[offsets[i]:offsets[i + 1]],
                                              np.asarray(region["vertices"]))
                assert "".join(map(str, codes[i])) == region["code"].replace("|", "")
            facets = np.column_stack([z[f"{key}_facets"], z[f"{key}_facet_units"]])
            np.testing.assert_array_equal(facets, np.asarray(layer["facets"], dtype=float))


def test_geoparquet_is_readable_and_exact(capsysbinary, net, full, tmp_path):
    import pyarrow.parquet as pq
    import shapely

    path = tmp_path / "g.parquet"
    _run(capsysbinary, *net, "--geometry", path)
    table = pq.read_table(path)
    geo = json.loads(table.schema.metadata[b"geo"])
    assert geo["version"] == "1.0.0" and geo["primary_column"] == "geometry"
    assert geo["columns"]["geometry"]["encoding"] == "WKB"
    rows = table.to_pydict()
    assert len(rows["layer"]) == sum(len(layer["regions"]) for layer in full["layers"])
    polygons = shapely.from_wkb(np.asarray(rows["geometry"], dtype=object))
    assert shapely.is_valid(polygons).all()
    np.testing.assert_allclose(shapely.area(polygons), rows["area"], rtol=1e-9, atol=1e-15)
    for layer in full["layers"]:
        mine = [i for i, n in enumerate(rows["layer"]) if n == layer["layer"]]
        assert [rows["code"][i] for i in mine] == [r["code"] for r in layer["regions"]]
        for i, region in zip(mine, layer["regions"], strict=True):
            ring = shapely.get_coordinates(polygons[i])
            np.testing.assert_array_equal(ring[:-1], np.asarray(region["vertices"]))


def test_geojson_features_are_closed_rings(capsysbinary, net, full, tmp_path):
    path = tmp_path / "g.geojson"
    _run(capsysbinary, *net, "--geometry", path)
    doc = strict_json(path.read_bytes())
    assert doc["type"] == "FeatureCollection"
    features = doc["features"]
    assert len(features) == sum(len(layer["regions"]) for layer in full["layers"])
    by_layer = {layer["layer"]: layer["regions"] for layer in full["layers"]}
    for f in features:
        p = f["properties"]
        ring = f["geometry"]["coordinates"][0]
        region = by_layer[p["layer"]][p["region"]]
        assert ring[0] == ring[-1] and ring[:-1] == region["vertices"]
        assert p["code"] == region["code"]
        assert math.isclose(p["area"], _shoelace(np.asarray(region["vertices"])),
                            rel_tol=1e-9, abs_tol=1e-15)


@pytest.mark.parametrize("geometry", ["out.shp", "out", "no-such-dir/out.npz"])
def test_a_bad_geometry_file_is_refused_before_any_work(capsysbinary, tmp_path, geometry):
    capsysbinary.readouterr()
    rc = main(["partition", "--depth", "16", "--width", "256", "--geometry",
               str(tmp_path / geometry)])
    captured = capsysbinary.readouterr()
    assert_one_error_line(rc, captured.out, captured.err.decode())
    assert "--geometry" in captured.err.decode()


def test_an_unwritable_geometry_file_is_one_line(capsysbinary, tmp_path):
    target = tmp_path / "dir.npz"
    target.mkdir()  # a directory where the file would go
    capsysbinary.readouterr()
    rc = main(["partition", *NET, "--geometry", str(target)])
    captured = capsysbinary.readouterr()
    assert_one_error_line(rc, captured.out, captured.err.decode())


def test_readme_documents_the_outputs():
    """The explorer's guide, which the README links, documents every output (issue 43)."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "explorer.md").read_text()
    for words in ("--format json-full", "--geometry", ".parquet", ".geojson", '"tolerance"'):
        assert words in readme
