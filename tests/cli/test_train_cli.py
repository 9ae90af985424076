"""``bnviz train`` and the trainer behind it (issue 19, items 3-4): a 2D network trained step
by step with the exact partition of every frame.

The last frame's counts equal a fresh ``bnviz partition`` of the saved weights (BN, and
without BN as a random-bias network with the learned biases); the loss falls on separable
data; at initialisation BN's partition sits closer to the data than zero bias's and random
bias's (the core paper's claim, on every data set here); networks of one seed start from the
same weights and draw the same mini-batches in every mode; refusals are one line before any
training, and a run stopped by the region cap keeps its frames.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from fuzzing import assert_one_error_line, strict_json
from PIL import Image

from bnviz.caps import DATASETS
from bnviz.cli import main
from bnviz.data.datasets import make_dataset
from bnviz.views.trainer import frame_steps, new_trainer

BOX = (-3.0, 3.0, -3.0, 3.0)


def _run(capsysbinary, *args: object) -> tuple[int, bytes, str]:
    capsysbinary.readouterr()
    rc = main(["train", *map(str, args)])
    captured = capsysbinary.readouterr()
    return rc, captured.out, captured.err.decode()


def _partition_regions(capsysbinary, weights, mode: str, *extra: str) -> list[int]:
    capsysbinary.readouterr()
    assert main(["partition", "--weights-file", str(weights), "--mode", mode, *extra]) == 0
    summary = strict_json(capsysbinary.readouterr().out)
    return [layer["regions"] for layer in summary["layers"]]


@pytest.mark.parametrize("mode,read_as", [("bn", "bn"), ("zero_bias", "random_bias"),
                                          ("random_bias", "random_bias")])
def test_last_frame_is_a_fresh_partition_of_the_saved_weights(capsysbinary, tmp_path, mode,
                                                              read_as):
    weights = tmp_path / "w.npz"
    net = ["--dataset", "circles", "--n-points", "80", "--weight-seed", "2", "--data-seed", "2",
           "--depth", "3", "--width", "6"]
    rc, out, err = _run(capsysbinary, *net, "--mode", mode, "--steps", "60", "--frames", "4",
                        "--json", "--save-weights", weights)
    assert rc == 0, err
    run = strict_json(out)
    assert set(run) == {"frames", "seconds"} and run["seconds"] > 0
    frames = run["frames"]
    assert [f["step"] for f in frames] == [0, 20, 40, 60]
    for f in frames:
        assert set(f) == {"step", "loss", "accuracy", "regions", "mean_distance"}
        assert len(f["regions"]) == 3 and 0 <= f["accuracy"] <= 1 and f["mean_distance"] > 0
    # the same data, by the same names
    same = ["--dataset", "circles", "--n-points", "80", "--data-seed", "2"]
    assert _partition_regions(capsysbinary, weights, read_as, *same) == frames[-1]["regions"]
    assert frames[-1]["regions"] != frames[0]["regions"]  # the partition moved


def test_loss_falls_on_separable_data():
    data = make_dataset("blobs", 120, 1)
    trainer = new_trainer(3, 8, "leaky_relu", 0.1, "bn", 1, data.points, data.labels, 32,
                          0.05, "adam", BOX)
    first = trainer.frame(60_000)
    trainer.step(150)
    last = trainer.frame(60_000)
    assert last.loss < 0.25 * first.loss
    assert last.accuracy >= 0.95


@pytest.mark.parametrize("dataset", DATASETS)
def test_bn_starts_closer_to_the_data(dataset):
    """At initialisation (frame 0), the mean distance from the data to the partition's
    boundary is smaller with BN than with zero or random bias, for three seeds."""
    for seed in range(3):
        data = make_dataset(dataset, 100, seed)
        dist = {mode: new_trainer(4, 8, "leaky_relu", 0.1, mode, seed, data.points,
                                  data.labels, 32, 0.05, "adam", BOX).frame(60_000
                                                                            ).mean_distance
                for mode in ("bn", "zero_bias", "random_bias")}
        assert dist["bn"] < dist["zero_bias"] and dist["bn"] < dist["random_bias"], dist


def test_modes_share_weights_and_mini_batches():
    data = make_dataset("moons", 60, 4)
    trainers = [new_trainer(2, 5, "relu", 0.0, mode, 4, data.points, data.labels, 16, 0.01,
                            "sgd", BOX) for mode in ("bn", "zero_bias", "random_bias")]
    for w in zip(*(t.net.weights for t in trainers), strict=True):
        np.testing.assert_array_equal(w[0], w[1])
        np.testing.assert_array_equal(w[0], w[2])
    for _ in range(5):
        batches = []
        for t in trainers:
            t.step()
            batches.append(t.last_batch)
        assert torch.equal(batches[0], batches[1]) and torch.equal(batches[0], batches[2])


def test_frames_run_from_start_to_end():
    assert frame_steps(300, 30)[0] == 0 and frame_steps(300, 30)[-1] == 300
    assert len(frame_steps(300, 30)) == 30
    assert frame_steps(5, 30) == [0, 1, 2, 3, 4, 5]
    assert frame_steps(7, 1) == [7]


def test_movie_has_one_picture_per_frame(capsysbinary, tmp_path):
    movie = tmp_path / "run.gif"
    rc, out, err = _run(capsysbinary, "--depth", "2", "--width", "4", "--steps", "20",
                        "--frames", "5", "--movie", movie)
    assert rc == 0, err
    assert b"step" in out and out.count(b"\n") == 7  # heading, column names, 5 frames
    with Image.open(movie) as im:
        assert im.n_frames == 5 and im.size[0] > 200


def test_mp4_movie_has_one_video_frame_per_frame(capsysbinary, tmp_path):
    """An .mp4 is H.264 written by ffmpeg (the imageio-ffmpeg wheel's, else the PATH's):
    ffmpeg decodes it back to as many pictures as frames were recorded."""
    import subprocess

    from bnviz.views.video import ffmpeg

    movie = tmp_path / "run.mp4"
    rc, out, err = _run(capsysbinary, "--depth", "2", "--width", "4", "--steps", "20",
                        "--frames", "4", "--movie", movie)
    assert rc == 0, err
    decoded = subprocess.run([ffmpeg(), "-v", "error", "-i", str(movie), "-f", "null", "-"],
                             capture_output=True, text=True, check=True)
    assert decoded.stderr == ""
    probe = subprocess.run([ffmpeg(), "-i", str(movie), "-map", "0:v:0", "-c", "copy", "-f",
                            "null", "-"], capture_output=True, text=True, check=True)
    counted = re.findall(r"frame=\s*(\d+)", probe.stderr)
    assert "h264" in probe.stderr and counted and int(counted[-1]) == 4


def test_mp4_without_any_ffmpeg_is_refused_before_training(capsysbinary, tmp_path,
                                                          monkeypatch):
    import bnviz.views.video as video

    monkeypatch.setattr(video, "ffmpeg", lambda: None)
    rc, out, err = _run(capsysbinary, "--movie", tmp_path / "m.mp4")
    assert_one_error_line(rc, out, err)
    assert "ffmpeg" in err and ".gif" in err


@pytest.mark.parametrize("args,words", [
    (["--frames", "301"], "--frames"),
    (["--steps", "-1"], "--steps"),
    (["--width", "33"], "--width"),
    (["--batch-size", "500", "--n-points", "100"], "larger than the data"),
    (["--depth", "8", "--width", "32"], "regions"),
    (["--save-weights", "w.txt"], "--save-weights"),
    (["--movie", "m.avi"], "--movie"),
    (["--movie", "/no/such/dir/m.gif"], "no directory"),
])
def test_refusals_are_one_line_before_training(capsysbinary, args, words):
    rc, out, err = _run(capsysbinary, *args)
    assert_one_error_line(rc, out, err)
    assert words in err


def test_a_frame_over_the_cap_keeps_what_was_recorded(capsysbinary, monkeypatch):
    import bnviz.cli.train as cli_train

    monkeypatch.setattr(cli_train, "TRAIN_MAX_REGIONS", 230)  # frame 0 has 202 regions
    rc, out, err = _run(capsysbinary, "--depth", "3", "--width", "6", "--steps", "100",
                        "--frames", "5", "--json")
    assert rc == 0, err
    run = strict_json(out)
    assert run["stopped"].startswith("stopped at step")
    assert 1 <= len(run["frames"]) < 5
