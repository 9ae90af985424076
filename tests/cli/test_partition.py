"""Tests of the command line ``python -m bnviz partition`` (issue 2 and docs/conventions.md):
bnviz/cli/partition.py.

Most tests call :func:`bnviz.cli.main` in-process (it returns the exit code) and read what it
wrote with ``capsysbinary``; a few run the real ``python -m bnviz`` in a subprocess to check the
exit code, stdout and stderr as a shell sees them.  Networks are small (depth <= 3, width <= 8)
so the whole file runs in seconds.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fuzzing import assert_one_error_line, strict_json

from bnviz.cli import main

REPO = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SMALL = ["--depth", "2", "--width", "4"]


def seeds(seed: object) -> tuple[object, ...]:
    """The same seed for the weights and the data (the command's former ``--seed``)."""
    return ("--weight-seed", seed, "--data-seed", seed)


# --------------------------------------------------------------------------- helpers


def cli(capsysbinary: pytest.CaptureFixture[bytes], *args: object) -> tuple[int, bytes, str]:
    """Run ``main(["partition", *args])`` in-process: (exit code, stdout bytes, stderr text).
    Without a ``--format`` the full JSON (``json-full``: these tests read every region; the
    default summary has its own tests in test_partition_outputs.py)."""
    capsysbinary.readouterr()  # drop anything captured before
    argv = [*map(str, args)]
    if "--format" not in argv:
        argv += ["--format", "json-full"]
    rc = main(["partition", *argv])
    captured = capsysbinary.readouterr()
    return rc, captured.out, captured.err.decode()


def run_json(capsysbinary: pytest.CaptureFixture[bytes], *args: object) -> dict[str, Any]:
    rc, out, err = cli(capsysbinary, *args)
    assert rc == 0, err
    assert err == ""
    return strict_json(out)


def shoelace(vertices: list[list[float]]) -> float:
    v = np.asarray(vertices, dtype=np.float64)
    x, y = v[:, 0], v[:, 1]
    return 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))


def region_set(regions: list[dict[str, Any]]) -> set[tuple[str, tuple[float, ...]]]:
    """Regions as a comparable set: code plus the rounded centroid of the corners."""
    out = set()
    for r in regions:
        c = np.mean(np.asarray(r["vertices"]), axis=0)
        out.add((r["code"], (round(float(c[0]), 6), round(float(c[1]), 6))))
    return out


def check_regions(regions: list[dict[str, Any]], widths: list[int], extent: float) -> None:
    """Codes have one group per layer of the right width; convex polygons inside the box."""
    assert isinstance(regions, list) and regions
    tol = 1e-9 * extent
    for r in regions:
        assert set(r) >= {"code", "vertices"}
        code = r["code"]
        assert isinstance(code, str)
        groups = code.split("|")
        assert [len(g) for g in groups] == widths, code
        assert set(code) <= {"0", "1", "|"}, code
        verts = r["vertices"]
        assert isinstance(verts, list) and len(verts) >= 3
        for p in verts:
            assert isinstance(p, list) and len(p) == 2
            assert all(isinstance(c, float | int) and math.isfinite(c) for c in p)
            assert -extent - tol <= p[0] <= extent + tol
            assert -extent - tol <= p[1] <= extent + tol
        assert shoelace(verts) > 0  # counter-clockwise, non-degenerate


def total_area(regions: list[dict[str, Any]]) -> float:
    return sum(shoelace(r["vertices"]) for r in regions)


def write_npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def random_weights(seed: int, widths: list[int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays, d_in = {}, 2
    for i, d in enumerate(widths, start=1):
        arrays[f"W{i}"] = rng.normal(0.0, np.sqrt(2.0 / d_in), size=(d, d_in))
        d_in = d
    return arrays


def random_points(seed: int, n: int, scale: float = 1.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, scale, size=(n, 2))


# --------------------------------------------------------------------------- JSON schema


@pytest.mark.parametrize(
    ("depth", "width", "activation", "mode", "extent"),
    [
        (3, 4, "leaky_relu", "bn", 3.0),
        (2, 8, "relu", "zero_bias", 2.0),
        (3, 5, "abs", "random_bias", 4.5),
        (1, 3, "leaky_relu", "bn", 1.0),
    ],
)
def test_json_schema(capsysbinary, depth, width, activation, mode, extent):
    doc = run_json(capsysbinary, "--depth", depth, "--width", width, "--activation", activation,
                   "--mode", mode, "--extent", extent, *seeds(3))
    assert {"extent", "regions", "layers", "seconds"} <= set(doc)
    assert isinstance(doc["extent"], float) and doc["extent"] == extent
    assert isinstance(doc["seconds"], float) and doc["seconds"] >= 0
    layers = doc["layers"]
    assert isinstance(layers, list) and len(layers) == depth
    assert [layer["layer"] for layer in layers] == list(range(1, depth + 1))
    for lp in layers:
        assert {"layer", "regions", "facets", "mu", "sigma", "tls_error"} <= set(lp)
        assert isinstance(lp["layer"], int)
        for key in ("mu", "sigma", "tls_error"):
            values = lp[key]
            assert isinstance(values, list) and len(values) == width, key
            assert all(isinstance(v, float) and math.isfinite(v) for v in values), key
        assert all(s > 0 for s in lp["sigma"])
        assert all(t >= 0 for t in lp["tls_error"])
        assert isinstance(lp["facets"], list)
        for f in lp["facets"]:
            assert isinstance(f, list) and len(f) == 5
            assert all(isinstance(c, float) for c in f[:4])
            assert isinstance(f[4], int) and not isinstance(f[4], bool)
            assert 0 <= f[4] < width
            assert all(-extent * (1 + 1e-9) <= c <= extent * (1 + 1e-9) for c in f[:4])
        check_regions(lp["regions"], [width] * lp["layer"], extent)
        assert total_area(lp["regions"]) == pytest.approx((2 * extent) ** 2, rel=1e-9)
    assert doc["regions"] == layers[-1]["regions"]
    check_regions(doc["regions"], [width] * depth, extent)
    assert total_area(doc["regions"]) == pytest.approx((2 * extent) ** 2, rel=1e-9)
    assert "decision_boundary" not in doc  # only with --head


def test_every_layer_refines_the_previous(capsysbinary):
    doc = run_json(capsysbinary, "--depth", 3, "--width", 5, *seeds(4))
    layers = doc["layers"]
    for prev, cur in zip(layers, layers[1:], strict=False):
        prefixes = {r["code"] for r in prev["regions"]}
        assert len(cur["regions"]) >= len(prev["regions"])
        assert {r["code"].rsplit("|", 1)[0] for r in cur["regions"]} <= prefixes


def test_same_options_same_output(capsysbinary):
    args = (*SMALL, *seeds(7), "--batch-size", 10, "--dataset", "star")
    a = run_json(capsysbinary, *args)
    b = run_json(capsysbinary, *args)
    a.pop("seconds")
    b.pop("seconds")
    assert a == b


# --------------------------------------------------------------------------- options


def test_depth_and_width_shape_the_result(capsysbinary):
    doc = run_json(capsysbinary, "--depth", 3, "--width", 2)
    assert len(doc["layers"]) == 3
    assert all(len(lp["mu"]) == 2 for lp in doc["layers"])
    doc = run_json(capsysbinary, "--depth", 1, "--width", 7)
    assert len(doc["layers"]) == 1
    assert len(doc["layers"][0]["mu"]) == 7
    assert all(len(r["code"]) == 7 for r in doc["regions"])


def test_activation_changes_the_partition(capsysbinary):
    relu = run_json(capsysbinary, *SMALL, *seeds(1), "--activation", "relu")
    absv = run_json(capsysbinary, *SMALL, *seeds(1), "--activation", "abs")
    # layer 1 does not depend on the activation, layer 2 does
    assert relu["layers"][0]["mu"] == absv["layers"][0]["mu"]
    assert region_set(relu["layers"][0]["regions"]) == region_set(absv["layers"][0]["regions"])
    assert region_set(relu["regions"]) != region_set(absv["regions"])
    assert relu["layers"][1]["mu"] != absv["layers"][1]["mu"]


def test_alpha_changes_leaky_relu(capsysbinary):
    a = run_json(capsysbinary, *SMALL, "--activation", "leaky_relu", "--alpha", 0.1)
    b = run_json(capsysbinary, *SMALL, "--activation", "leaky_relu", "--alpha", 0.5)
    assert a["layers"][0]["mu"] == b["layers"][0]["mu"]
    assert not np.allclose(a["layers"][1]["mu"], b["layers"][1]["mu"])
    assert region_set(a["regions"]) != region_set(b["regions"])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("width", [3, 6])
def test_bn_layer1_is_central(capsysbinary, seed, width):
    """Corollary 2: with BN all layer-1 lines meet at the batch centroid: 2 * D_1 regions."""
    doc = run_json(capsysbinary, "--depth", 2, "--width", width, "--mode", "bn", *seeds(seed))
    assert len(doc["layers"][0]["regions"]) == 2 * width


@pytest.mark.parametrize("seed", [0, 5])
def test_zero_bias_layer1_lines_pass_through_origin(capsysbinary, seed):
    width = 5
    doc = run_json(capsysbinary, "--depth", 2, "--width", width, "--mode", "zero_bias",
                   *seeds(seed))
    layer1 = doc["layers"][0]
    assert layer1["mu"] == [0.0] * width
    assert layer1["sigma"] == [1.0] * width
    facets = np.asarray(layer1["facets"], dtype=np.float64)
    assert sorted(set(facets[:, 4].astype(int))) == list(range(width))
    p0, p1 = facets[:, 0:2], facets[:, 2:4]
    d = p1 - p0
    # distance of the origin to the line through each facet
    dist = np.abs(p0[:, 0] * d[:, 1] - p0[:, 1] * d[:, 0]) / np.linalg.norm(d, axis=1)
    assert np.all(dist < 1e-9)
    assert len(layer1["regions"]) == 2 * width
    # the modes differ on the same weights
    bn = run_json(capsysbinary, "--depth", 2, "--width", width, "--mode", "bn", *seeds(seed))
    assert bn["layers"][0]["mu"] != layer1["mu"]


def test_random_bias_mode_uses_random_offsets(capsysbinary):
    doc = run_json(capsysbinary, *SMALL, "--mode", "random_bias", *seeds(2))
    mu = doc["layers"][0]["mu"]
    assert doc["layers"][0]["sigma"] == [1.0] * 4
    assert any(m != 0 for m in mu)
    bn = run_json(capsysbinary, *SMALL, "--mode", "bn", *seeds(2))
    assert bn["layers"][0]["mu"] != mu


def test_dataset_and_n_change_mu(capsysbinary):
    moons = run_json(capsysbinary, *SMALL, "--dataset", "moons", "--n-points", 100)
    blobs = run_json(capsysbinary, *SMALL, "--dataset", "blobs", "--n-points", 100)
    fewer = run_json(capsysbinary, *SMALL, "--dataset", "moons", "--n-points", 30)
    assert moons["layers"][0]["mu"] != blobs["layers"][0]["mu"]
    assert moons["layers"][0]["mu"] != fewer["layers"][0]["mu"]


def test_seed_changes_weights(capsysbinary, tmp_path):
    data = tmp_path / "pts.npy"
    np.save(data, random_points(0, 40))  # same data: only the weights depend on --weight-seed
    a = run_json(capsysbinary, *SMALL, "--data", data, *seeds(0))
    b = run_json(capsysbinary, *SMALL, "--data", data, *seeds(1))
    assert a["layers"][0]["mu"] != b["layers"][0]["mu"]
    assert region_set(a["regions"]) != region_set(b["regions"])


def test_batch_size_mean_over_a_subset(capsysbinary, tmp_path):
    """--batch-size k: layer-1 mu and sigma are the statistics of W1 x over some k-subset.

    The points' x coordinates are distinct powers of two, so the subset is read back from
    mu exactly, without knowing how the CLI draws it.
    """
    n, k, width = 12, 5, 3
    rng = np.random.default_rng(11)
    pts = np.stack([2.0 ** -np.arange(1, n + 1), rng.uniform(-1.0, 1.0, n)], axis=1)
    w1 = np.array([[1.0, 0.0], [0.6, -0.8], [-0.3, 1.1]])
    wfile = write_npz(tmp_path / "w.npz", W1=w1, W2=random_weights(1, [width, 2])["W2"])
    dfile = tmp_path / "pts.npy"
    np.save(dfile, pts)

    doc = run_json(capsysbinary, "--weights-file", wfile, "--data", dfile, "--mode", "bn",
                   "--batch-size", k, "--batch-seed", 3)
    mu = np.asarray(doc["layers"][0]["mu"])
    sigma = np.asarray(doc["layers"][0]["sigma"])
    mean_x = mu[0]  # unit 0 reads the x coordinate
    bits = round(mean_x * k * 2.0**n)
    chosen = [i for i in range(n) if bits & (1 << (n - 1 - i))]
    assert len(chosen) == k, (mean_x, chosen)
    subset = pts[chosen] @ w1.T
    np.testing.assert_allclose(mu, subset.mean(axis=0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sigma, subset.std(axis=0, ddof=0), rtol=1e-10)
    # the full batch gives a different mean, so the subset was used
    assert not np.allclose(mu, (pts @ w1.T).mean(axis=0))

    # another batch seed draws another batch; the same seed the same one
    again = run_json(capsysbinary, "--weights-file", wfile, "--data", dfile, "--batch-size", k,
                     "--batch-seed", 3)
    assert again["layers"][0]["mu"] == doc["layers"][0]["mu"]
    others = [run_json(capsysbinary, "--weights-file", wfile, "--data", dfile, "--batch-size", k,
                       "--batch-seed", s)["layers"][0]["mu"] for s in (4, 5, 6)]
    assert any(o != doc["layers"][0]["mu"] for o in others)


def test_batch_seed_changes_mu(capsysbinary):
    a = run_json(capsysbinary, *SMALL, "--n-points", 60, "--batch-size", 8, "--batch-seed", 1)
    b = run_json(capsysbinary, *SMALL, "--n-points", 60, "--batch-size", 8, "--batch-seed", 2)
    assert a["layers"][0]["mu"] != b["layers"][0]["mu"]


def test_batch_size_all_is_the_whole_data_set(capsysbinary):
    default = run_json(capsysbinary, *SMALL, "--n-points", 50)
    everything = run_json(capsysbinary, *SMALL, "--n-points", 50, "--batch-size", "all")
    larger = run_json(capsysbinary, *SMALL, "--n-points", 50, "--batch-size", 50)
    assert default["layers"][0]["mu"] == everything["layers"][0]["mu"]
    assert default["layers"][0]["mu"] == larger["layers"][0]["mu"]
    sub = run_json(capsysbinary, *SMALL, "--n-points", 50, "--batch-size", 10)
    assert sub["layers"][0]["mu"] != default["layers"][0]["mu"]


@pytest.mark.parametrize("extent", [1.5, 5.0])
def test_extent_sets_the_box(capsysbinary, extent):
    doc = run_json(capsysbinary, *SMALL, "--extent", extent)
    assert doc["extent"] == extent
    check_regions(doc["regions"], [4, 4], extent)
    corners = np.concatenate([np.asarray(r["vertices"]) for r in doc["regions"]])
    assert corners.min() == pytest.approx(-extent)
    assert corners.max() == pytest.approx(extent)
    assert total_area(doc["regions"]) == pytest.approx((2 * extent) ** 2, rel=1e-9)


def test_default_extent_is_3(capsysbinary):
    doc = run_json(capsysbinary, *SMALL)
    assert doc["extent"] == 3.0
    assert total_area(doc["regions"]) == pytest.approx(36.0, rel=1e-9)


def test_weights_file_and_data_pin_everything(capsysbinary, tmp_path):
    weights = random_weights(5, [3, 4])
    wfile = write_npz(tmp_path / "net.npz", **weights)
    pts = random_points(6, 25, scale=0.8)
    dfile = tmp_path / "pts.npy"
    np.save(dfile, pts)
    # --depth/--width are those of the file, whatever the options say
    doc = run_json(capsysbinary, "--weights-file", wfile, "--data", dfile, "--mode", "bn",
                   "--depth", 3, "--width", 6)
    assert len(doc["layers"]) == 2
    assert [len(lp["mu"]) for lp in doc["layers"]] == [3, 4]
    check_regions(doc["regions"], [3, 4], 3.0)
    w1 = weights["W1"]
    mu1 = np.asarray(doc["layers"][0]["mu"])
    np.testing.assert_allclose(mu1, w1 @ pts.mean(axis=0), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(doc["layers"][0]["sigma"], (pts @ w1.T).std(axis=0), rtol=1e-12)
    # layer 2: mu is the mean of W2 z1 with z1 the normalised, activated layer-1 output
    h1 = (pts @ w1.T - mu1) / np.asarray(doc["layers"][0]["sigma"])
    z1 = np.where(h1 > 0, h1, 0.1 * h1)
    np.testing.assert_allclose(doc["layers"][1]["mu"], (z1 @ weights["W2"].T).mean(axis=0),
                               rtol=1e-10, atol=1e-12)
    # the seed no longer matters: weights and data come from the files
    other = run_json(capsysbinary, "--weights-file", wfile, "--data", dfile, *seeds(9))
    other.pop("seconds")
    doc.pop("seconds")
    assert other == doc


def test_random_bias_from_weights_file(capsysbinary, tmp_path):
    weights = random_weights(8, [4, 3])
    c1, c2 = np.array([0.5, -1.0, 0.25, 2.0]), np.array([-0.7, 0.1, 0.3])
    wfile = write_npz(tmp_path / "net.npz", **weights, c1=c1, c2=c2)
    doc = run_json(capsysbinary, "--weights-file", wfile, "--mode", "random_bias")
    assert doc["layers"][0]["mu"] == (-c1).tolist()
    assert doc["layers"][1]["mu"] == (-c2).tolist()
    assert doc["layers"][0]["sigma"] == [1.0] * 4
    # layer-1 facets lie on the lines W1 x + c1 = 0
    facets = np.asarray(doc["layers"][0]["facets"])
    units = facets[:, 4].astype(int)
    for ends in (facets[:, 0:2], facets[:, 2:4]):
        h = np.einsum("ij,ij->i", ends, weights["W1"][units]) + c1[units]
        assert np.all(np.abs(h) < 1e-9)


def test_data_npy_and_csv_agree(capsysbinary, tmp_path):
    pts = np.round(random_points(3, 30), 6)
    npy = tmp_path / "pts.npy"
    np.save(npy, pts)
    csv_plain = tmp_path / "pts.csv"
    csv_plain.write_text("".join(f"{x!r},{y!r}\n" for x, y in pts.tolist()))
    csv_labels = tmp_path / "labelled.csv"
    csv_labels.write_text("x,y,label\n" + "".join(f"{x!r},{y!r},{i % 2}\n"
                                                  for i, (x, y) in enumerate(pts.tolist())))
    a = run_json(capsysbinary, *SMALL, "--data", npy)
    b = run_json(capsysbinary, *SMALL, "--data", csv_plain)
    c = run_json(capsysbinary, *SMALL, "--data", csv_labels)
    assert a["layers"][0]["mu"] == b["layers"][0]["mu"] == c["layers"][0]["mu"]
    assert a["layers"][1]["mu"] == b["layers"][1]["mu"] == c["layers"][1]["mu"]
    # and the file replaces --dataset
    moons = run_json(capsysbinary, *SMALL, "--dataset", "moons")
    assert moons["layers"][0]["mu"] != a["layers"][0]["mu"]


def test_out_writes_the_file_and_nothing_on_stdout(capsysbinary, tmp_path):
    target = tmp_path / "part.json"
    rc, out, err = cli(capsysbinary, *SMALL, "--out", target)
    assert (rc, out, err) == (0, b"", "")
    doc = strict_json(target.read_bytes())
    expected = run_json(capsysbinary, *SMALL)
    doc.pop("seconds")
    expected.pop("seconds")
    assert doc == expected


def test_format_svg(capsysbinary, tmp_path):
    target = tmp_path / "fig.svg"
    rc, out, err = cli(capsysbinary, *SMALL, "--format", "svg", "--out", target)
    assert (rc, out, err) == (0, b"", "")
    data = target.read_bytes()
    assert data.lstrip().startswith((b"<?xml", b"<svg"))
    assert b"<svg" in data
    # to stdout as well
    rc, out, err = cli(capsysbinary, *SMALL, "--format", "svg")
    assert rc == 0 and err == ""
    assert out.lstrip().startswith((b"<?xml", b"<svg")) and b"<svg" in out


def test_format_png(capsysbinary, tmp_path):
    target = tmp_path / "fig.png"
    rc, out, err = cli(capsysbinary, *SMALL, "--format", "png", "--out", target)
    assert (rc, out, err) == (0, b"", "")
    data = target.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    rc, out, err = cli(capsysbinary, "--depth", 1, "--width", 3, "--format", "png")
    assert rc == 0 and err == ""
    assert out.startswith(PNG_SIGNATURE)


@pytest.mark.parametrize("head", [1, 2])
def test_head_adds_decision_boundary(capsysbinary, head):
    doc = run_json(capsysbinary, *SMALL, "--head", head, *seeds(0))
    segs = doc["decision_boundary"]
    assert isinstance(segs, list) and segs
    for s in segs:
        assert isinstance(s, list) and len(s) == 4
        assert all(isinstance(c, float) and -3 - 1e-9 <= c <= 3 + 1e-9 for c in s)
    # the head does not change the partition
    plain = run_json(capsysbinary, *SMALL, "--head", 0, *seeds(0))
    assert "decision_boundary" not in plain
    assert plain["regions"] == doc["regions"]


def test_head_from_weights_file(capsysbinary, tmp_path):
    weights = random_weights(2, [4, 4])
    wfile = write_npz(tmp_path / "net.npz", **weights, head_W=np.array([[1.0, -1.0, 0.5, 0.2]]),
                      head_b=np.array([0.05]))
    doc = run_json(capsysbinary, "--weights-file", wfile)
    assert all(len(s) == 4 for s in doc["decision_boundary"])


def test_device_cpu(capsysbinary):
    doc = run_json(capsysbinary, *SMALL, "--device", "cpu")
    assert doc.get("device", "cpu") == "cpu"


# --------------------------------------------------------------------------- bad input


def _bad_files(tmp: Path) -> dict[str, list[str]]:
    """Options that name bad files, written under tmp."""
    np.save(tmp / "three_cols.npy", np.zeros((6, 3)))
    nan = random_points(0, 10)
    nan[4, 1] = np.nan
    np.save(tmp / "nan.npy", nan)
    (tmp / "empty.csv").write_text("")
    (tmp / "garbage.csv").write_text("0.1,0.2\nhello,world\n0.3,0.4\n")
    write_npz(tmp / "no_w1.npz", W2=np.ones((3, 2)))
    write_npz(tmp / "mismatch.npz", W1=np.ones((3, 2)), W2=np.ones((4, 5)))
    write_npz(tmp / "w1_3d.npz", W1=np.ones((3, 2, 1)))
    np.save(tmp / "object.npy", np.array([{"W1": 1}, None], dtype=object), allow_pickle=True)
    (tmp / "object.npy").rename(tmp / "object_renamed.npz")
    write_npz(tmp / "object_member.npz", W1=np.array([[1.0, None]], dtype=object))
    write_npz(tmp / "no_bias.npz", **random_weights(0, [3, 3]))
    write_npz(tmp / "wrong_bias.npz", **random_weights(0, [3, 3]), c1=np.ones(2), c2=np.ones(3))
    write_npz(tmp / "inf.npz", W1=np.array([[1.0, np.inf], [0.0, 1.0]]))
    write_npz(tmp / "bad_head.npz", W1=np.ones((3, 2)), head_W=np.ones((1, 5)))
    return {
        "data_missing": ["--data", str(tmp / "missing.npy")],
        "data_three_columns": ["--data", str(tmp / "three_cols.npy")],
        "data_nan": ["--data", str(tmp / "nan.npy")],
        "data_empty_csv": ["--data", str(tmp / "empty.csv")],
        "data_garbage_csv": ["--data", str(tmp / "garbage.csv")],
        "data_directory": ["--data", str(tmp)],
        "weights_missing": ["--weights-file", str(tmp / "missing.npz")],
        "weights_without_w1": ["--weights-file", str(tmp / "no_w1.npz")],
        "weights_wrong_shapes": ["--weights-file", str(tmp / "mismatch.npz")],
        "weights_3d": ["--weights-file", str(tmp / "w1_3d.npz")],
        "weights_pickled_object_array": ["--weights-file", str(tmp / "object_renamed.npz")],
        "weights_object_member": ["--weights-file", str(tmp / "object_member.npz")],
        "weights_non_finite": ["--weights-file", str(tmp / "inf.npz")],
        "weights_bad_head": ["--weights-file", str(tmp / "bad_head.npz")],
        "random_bias_without_c": ["--mode", "random_bias", "--weights-file",
                                  str(tmp / "no_bias.npz")],
        "random_bias_wrong_c": ["--mode", "random_bias", "--weights-file",
                                str(tmp / "wrong_bias.npz")],
        "out_missing_directory": ["--out", str(tmp / "no" / "such" / "dir" / "x.json")],
        "out_is_a_directory": ["--out", str(tmp)],
    }


BAD_OPTIONS: dict[str, list[str]] = {
    "width_0": ["--width", "0"],
    "width_text": ["--width", "abc"],
    "width_float": ["--width", "2.5"],
    "depth_over_limit": ["--depth", "1000"],
    "depth_0": ["--depth", "0"],
    "width_over_limit": ["--width", "100000"],
    "mode_unknown": ["--mode", "foo"],
    "activation_unknown": ["--activation", "foo"],
    "alpha_2_leaky": ["--activation", "leaky_relu", "--alpha", "2"],
    "alpha_0_leaky": ["--activation", "leaky_relu", "--alpha", "0"],
    "alpha_nan": ["--alpha", "nan"],
    "extent_0": ["--extent", "0"],
    "extent_negative": ["--extent", "-1"],
    "extent_inf": ["--extent", "inf"],
    "extent_nan": ["--extent", "nan"],
    "extent_text": ["--extent", "big"],
    "batch_size_0": ["--batch-size", "0"],
    "batch_size_text": ["--batch-size", "some"],
    "n_0": ["--n-points", "0"],
    "n_negative": ["--n-points", "-5"],
    "seed_negative": ["--weight-seed", "-1"],
    "batch_seed_negative": ["--batch-seed", "-1"],
    "dataset_unknown": ["--dataset", "nope"],
    "format_unknown": ["--format", "gif"],
    "head_3": ["--head", "3"],
    "device_unknown": ["--device", "nonsense"],
    "unknown_option": ["--colour", "red"],
    "missing_value": ["--width"],
}


@pytest.mark.parametrize("name", sorted(BAD_OPTIONS))
def test_bad_option(capsysbinary, name):
    rc, out, err = cli(capsysbinary, "--depth", "2", "--width", "3", *BAD_OPTIONS[name])
    assert_one_error_line(rc, out, err)


BAD_FILE_CASES = [
    "data_missing", "data_three_columns", "data_nan", "data_empty_csv", "data_garbage_csv",
    "data_directory", "weights_missing", "weights_without_w1", "weights_wrong_shapes",
    "weights_3d", "weights_pickled_object_array", "weights_object_member",
    "weights_non_finite", "weights_bad_head", "random_bias_without_c", "random_bias_wrong_c",
    "out_missing_directory", "out_is_a_directory",
]


@pytest.mark.parametrize("name", BAD_FILE_CASES)
def test_bad_file(capsysbinary, tmp_path, name):
    cases = _bad_files(tmp_path)
    assert set(cases) == set(BAD_FILE_CASES)
    rc, out, err = cli(capsysbinary, "--depth", "2", "--width", "3", *cases[name])
    assert_one_error_line(rc, out, err)
    assert not (tmp_path / "no").exists()


def test_error_names_the_problem(capsysbinary, tmp_path):
    rc, _, err = cli(capsysbinary, "--width", "0")
    assert rc == 2 and "--width" in err
    rc, _, err = cli(capsysbinary, "--data", tmp_path / "absent.npy")
    assert rc == 2 and "absent.npy" in err
    rc, _, err = cli(capsysbinary, "--mode", "foo")
    assert rc == 2 and "foo" in err


# --------------------------------------------------------------------------- known bugs


def _write_empty(path: Path) -> None:
    path.write_bytes(b"")


def _write_corrupt_zip(path: Path) -> None:
    path.write_bytes(b"PK\x03\x04" + b"not really a zip archive")


def _write_truncated_npz(path: Path) -> None:
    src = path.with_name("whole.npz")
    np.savez(src, W1=np.ones((3, 2)))
    data = src.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    ("option", "name", "writer"),
    [
        ("--weights-file", "empty.npz", _write_empty),
        ("--weights-file", "corrupt.npz", _write_corrupt_zip),
        ("--weights-file", "truncated.npz", _write_truncated_npz),
        ("--data", "corrupt.npy", _write_corrupt_zip),
    ],
    ids=["weights_empty", "weights_corrupt_zip", "weights_truncated", "data_zip_magic"],
)
def test_unreadable_file_is_one_line_error(capsysbinary, tmp_path, option, name, writer):
    path = tmp_path / name
    writer(path)
    rc, out, err = cli(capsysbinary, *SMALL, option, path)
    assert_one_error_line(rc, out, err)


def test_complex_weights_rejected(capsysbinary, tmp_path):
    wfile = write_npz(tmp_path / "complex.npz", W1=np.ones((3, 2)) * (1 + 2j))
    rc, out, err = cli(capsysbinary, "--weights-file", wfile)
    assert_one_error_line(rc, out, err)


def test_huge_extent_is_error_or_result(capsysbinary):
    rc, out, err = cli(capsysbinary, *SMALL, "--extent", "9e307")
    if rc == 2:
        assert_one_error_line(rc, out, err)
    else:
        assert rc == 0
        strict_json(out)


def test_huge_finite_data_is_error_or_valid_json(capsysbinary, tmp_path):
    dfile = tmp_path / "huge.npy"
    np.save(dfile, random_points(0, 20, scale=1e200))
    rc, out, err = cli(capsysbinary, *SMALL, "--data", dfile)
    if rc == 2:
        assert_one_error_line(rc, out, err)
    else:
        assert rc == 0
        doc = strict_json(out)
        assert all(math.isfinite(s) and s > 0 for s in doc["layers"][0]["sigma"])


# --------------------------------------------------------------------------- slider options


def _facets(doc: dict, layer: int) -> np.ndarray:
    return np.array(doc["layers"][layer - 1]["facets"], dtype=float).reshape(-1, 5)


def test_slider_options_match_the_explorer(capsysbinary):
    """The CLI reproduces what the explorer draws for the same settings (frozen statistics)."""
    from bnviz.params import PartitionParams
    from bnviz.views.explorer import explore

    settings = PartitionParams(depth=2, width=8, dataset="moons", n_points=60, mu_t=0.4,
                                sigma_s=2.0, scope="layer", target_layer=1, layer=2)
    result = explore(settings)
    rc, out, err = cli(capsysbinary, "--depth", 2, "--width", 8, "--dataset", "moons", "--n-points",
                       60, "--mu-t", 0.4, "--sigma-s", 2, "--scope", "layer",
                       "--target-layer", 1)
    assert rc == 0, err
    doc = strict_json(out)
    for layer in (1, 2):
        ours = _facets(doc, layer)
        theirs = result.partition.layers[layer - 1].facets
        assert ours.shape[0] == theirs.shape[0]
        np.testing.assert_allclose(ours[:, :4], theirs, atol=1e-12)
    np.testing.assert_allclose(doc["layers"][0]["mu"], 0.4 * np.array(
        doc["layers"][0]["batch_mean"]), rtol=1e-12, atol=1e-15)


def test_sigma_of_layer_1_folds_layer_2_only_with_frozen_statistics(capsysbinary):
    """Figure 2c: varying sigma_1 with mu_2 fixed moves the layer-2 facets; recomputing layer
    2's BN statistics undoes it (positive homogeneity), and layer 1 never moves."""
    base = ["--depth", 2, "--width", 6, "--activation", "leaky_relu"]
    docs = {}
    for name, extra in {"plain": [], "frozen": ["--sigma-s", 3, "--scope", "layer"],
                        "recomputed": ["--sigma-s", 3, "--scope", "layer",
                                       "--recompute-statistics"]}.items():
        rc, out, err = cli(capsysbinary, *base, *extra)
        assert rc == 0, err
        docs[name] = strict_json(out)
    np.testing.assert_allclose(_facets(docs["frozen"], 1), _facets(docs["plain"], 1))
    assert not np.allclose(_facets(docs["frozen"], 2)[:, :4].sum(0),
                           _facets(docs["plain"], 2)[:, :4].sum(0))
    np.testing.assert_allclose(_facets(docs["recomputed"], 2), _facets(docs["plain"], 2),
                               atol=1e-9)


def test_unit_scope_moves_one_hyperplane(capsysbinary):
    rc, out, err = cli(capsysbinary, "--depth", 1, "--width", 5, "--mode", "bn", "--scope",
                       "unit", "--target-layer", 1, "--target-unit", 2, "--mu-t", 0)
    assert rc == 0, err
    layer = strict_json(out)["layers"][0]
    mu, mean = np.array(layer["mu"]), np.array(layer["batch_mean"])
    assert mu[2] == 0.0
    np.testing.assert_array_equal(np.delete(mu, 2), np.delete(mean, 2))


@pytest.mark.parametrize("args", [
    ["--mu-t", "2"], ["--mu-t", "-0.1"], ["--mu-t", "nan"],
    ["--sigma-s", "0.1"], ["--sigma-s", "5"], ["--scope", "everything"],
    ["--target-unit", "-1"],
])
def test_bad_slider_options(capsysbinary, args):
    rc, out, err = cli(capsysbinary, *SMALL, *args)
    assert_one_error_line(rc, out, err)


def test_weights_with_a_gap_in_the_layer_numbers_are_refused(capsysbinary, tmp_path):
    path = tmp_path / "gap.npz"
    np.savez(path, W1=np.ones((4, 2)), W3=np.ones((3, 4)))
    rc, out, err = cli(capsysbinary, "--weights-file", path)
    assert_one_error_line(rc, out, err)
    assert "W2 is missing" in err


# --------------------------------------------------------------------------- real processes


def _python_m(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "bnviz", *map(str, args)], cwd=REPO,
                          capture_output=True, timeout=timeout, check=False)


def test_subprocess_json_to_stdout(tmp_path):
    dfile = tmp_path / "pts.csv"
    pts = np.round(random_points(4, 20), 5)
    dfile.write_text("x,y\n" + "".join(f"{x},{y}\n" for x, y in pts))
    proc = _python_m("partition", "--depth", 2, "--width", 3, "--data", dfile,
                     "--extent", 2.5, "--device", "cpu", "--format", "json-full")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b""
    doc = strict_json(proc.stdout)
    assert doc["extent"] == 2.5
    assert len(doc["layers"]) == 2
    assert len(doc["layers"][0]["regions"]) == 6  # BN, layer 1: 2 * width
    assert total_area(doc["regions"]) == pytest.approx(25.0, rel=1e-9)


def test_subprocess_png_to_file(tmp_path):
    target = tmp_path / "fig.png"
    proc = _python_m("partition", "--depth", 2, "--width", 3, "--format", "png",
                     "--out", target)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b"" and proc.stderr == b""
    assert target.read_bytes().startswith(PNG_SIGNATURE)


def test_shift_moves_the_generated_data(capsys):
    """--shift-x/--shift-y move the data off the origin: BN's layer-1 lines then meet at the
    moved centroid (their mu is the moved data's mean projection)."""
    import json

    import numpy as np

    from bnviz.cli import main
    from bnviz.core.network import random_network
    from bnviz.data.datasets import make_dataset

    assert main(["partition", "--depth", "1", "--width", "3", "--shift-x", "1.5",
                 "--shift-y", "-0.5", "--format", "json-full"]) == 0
    out = json.loads(capsys.readouterr().out)
    w = random_network(1, 3, "leaky_relu", 0.1, "bn", 0).weights[0]
    moved = make_dataset("moons", 100, 0).points + [1.5, -0.5]
    np.testing.assert_allclose(out["layers"][0]["mu"], (moved @ w.T).mean(0), rtol=1e-12)
    assert main(["partition", "--shift-x", "abc"]) == 2
    assert "--shift-x" in capsys.readouterr().err
