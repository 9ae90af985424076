"""The BN paper's image experiments as job types (bnviz.images.experiments): end-to-end runs
on digits and on small files in the real formats (CIFAR-10/100 pickles, SVHN .mat, an image
folder), metric rows and their summary, progress and cancellation, the frozen-BN ("smart
initialisation") arm, and Figure 4's sign-change counting (bnviz.images.concentration)
against a brute force. Their parameters: tests/images/test_params.py.

Everything runs on the CPU with tiny networks; the DDP path needs a process group and is
covered elsewhere (tests/jobs/test_jobs_celery.py)."""

from __future__ import annotations

import math
import re
from itertools import product

import imagefiles
import numpy as np
import pytest
import torch
from imagefiles import FOLDER
from scipy import stats

import bnviz.images.concentration as conc
import bnviz.images.training as training
from bnviz.data.imagedata import load_image_data
from bnviz.images.experiments import run_experiment, summarise
from bnviz.images.networks import ARCHS, ModeNorm, build_model
from bnviz.images.params import ARMS, JOB_TYPES, check_params
from bnviz.records.types import Cancelled, ParamError, RecordingContext

TRAINING_TYPES = ("smart-init", "jitter-noise", "affine-ablation")
TRAINING_KEYS = {"arm", "run", "epoch", "train_loss", "test_accuracy", "seconds"}
CONCENTRATION_KEYS = {"arm", "run", "images", "eps", "layer", "units", "mean", "std"}

# The file sets written by tests/imagefiles.py with their default sizes: (channels, side,
# classes, training images, test images). The folder's side is the image_size asked for.
FILE_SETS = {
    "cifar10": (3, 32, 10, 5 * 20, 20),
    "cifar100": (3, 32, 100, 60, 20),
    "svhn": (3, 32, 10, 60, 20),
    f"folder:{FOLDER}": (3, None, 3, 3 * 6, 3 * 3),
}
FOLDER_SIDE = 12


DIGITS_TRAIN, DIGITS_TEST = imagefiles.digits_sizes()


def _expected_set(name: str) -> tuple[int, int, int, int, int]:
    if name == "digits":
        return 1, 8, 10, DIGITS_TRAIN, DIGITS_TEST
    ch, side, classes, n_train, n_test = FILE_SETS[name]
    return ch, side or FOLDER_SIDE, classes, n_train, n_test


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Tiny networks: one thread is as fast, and steady on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _norm_outputs(model: torch.nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """Each ModeNorm's output for x (forward hooks written here), in call order."""
    outs: list[torch.Tensor] = []
    hooks = [m.register_forward_hook(lambda _m, _i, o: outs.append(o.detach().clone()))
             for m in model.modules() if isinstance(m, ModeNorm)]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in hooks:
            h.remove()
    return outs


def _unit_counts(arch: str, ch: int, classes: int, side: int, width: int) -> list[int]:
    """Units (channels x positions) of every norm layer of the network the job builds."""
    model = build_model(arch, ch, classes, side, "zero_bias", width=width).eval()
    return [o[0].numel() for o in _norm_outputs(model, torch.zeros(1, ch, side, side))]


def _check_progress(fractions: list[float]) -> None:
    assert fractions, "no progress reported"
    f = np.array(fractions)
    assert np.all(np.isfinite(f)) and np.all(f > 0) and np.all(f <= 1.0)
    assert np.all(np.diff(f) >= 0), f"progress went back: {fractions}"
    assert f[-1] == 1.0


def _log_sizes(lines: list[str]) -> tuple[int, int, tuple[int, ...], int]:
    m = re.search(r": (\d+) training and (\d+) test images of shape \(([\d, ]+)\), (\d+) "
                  "classes", lines[0])
    assert m, lines[0]
    shape = tuple(int(s) for s in m.group(3).split(","))
    return int(m.group(1)), int(m.group(2)), shape, int(m.group(4))


def _check_training_rows(job_type: str, rows: list[dict], runs: int, epochs: int,
                         n_test: int) -> None:
    arms = list(ARMS[job_type])
    assert all(set(r) == TRAINING_KEYS for r in rows), rows[0]
    keys = [(r["arm"], r["run"], r["epoch"]) for r in rows]
    assert len(keys) == len(set(keys)) == len(arms) * runs * epochs
    assert set(keys) == set(product(arms, range(runs), range(1, epochs + 1)))
    for r in rows:
        acc = r["test_accuracy"]
        assert isinstance(acc, float) and math.isfinite(acc) and 0.0 <= acc <= 1.0
        # an accuracy is a count of correct test images over the test set
        assert abs(acc * n_test - round(acc * n_test)) < 1e-9
        assert r["train_loss"] is None or (math.isfinite(r["train_loss"])
                                           and r["train_loss"] >= 0)
        assert r["seconds"] >= 0


def _check_training_summary(job_type: str, rows: list[dict], runs: int, epochs: int) -> None:
    summary = summarise(job_type, rows)
    assert list(summary["arms"]) == list(ARMS[job_type])
    for arm, curve in summary["arms"].items():
        assert curve["epoch"] == list(range(1, epochs + 1))
        assert curve["runs"] == [runs] * epochs
        for i, epoch in enumerate(curve["epoch"]):
            acc = np.array([r["test_accuracy"] for r in rows
                            if r["arm"] == arm and r["epoch"] == epoch])
            assert curve["mean"][i] == pytest.approx(float(np.mean(acc)), abs=1e-12)
            assert curve["std"][i] == pytest.approx(float(np.std(acc)), abs=1e-12)
        assert curve["final"] == pytest.approx(curve["mean"][-1], abs=1e-12)


def _check_concentration_rows(rows: list[dict], runs: int, eps: tuple[float, ...],
                              units: list[int], images: int) -> None:
    arms = list(ARMS["concentration"])
    assert all(set(r) == CONCENTRATION_KEYS for r in rows), rows[0]
    layers = range(1, len(units) + 1)
    keys = [(r["arm"], r["run"], r["images"], r["eps"], r["layer"]) for r in rows]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(product(arms, range(runs), ("data", "gaussian"), eps, layers))
    for r in rows:
        n = units[r["layer"] - 1]
        assert r["units"] == n
        assert 0.0 <= r["mean"] <= n
        assert 0.0 <= r["std"] <= n / 2 + 1e-9  # the spread of counts in [0, n]
        # the mean of `images` whole counts
        assert abs(r["mean"] * images - round(r["mean"] * images)) < 1e-6


def _check_concentration_summary(rows: list[dict], eps: tuple[float, ...]) -> None:
    summary = summarise("concentration", rows)
    assert list(summary["arms"]) == list(ARMS["concentration"])
    for arm, per in summary["arms"].items():
        for kind in ("data", "gaussian"):
            assert per[kind]["eps"] == sorted(eps)
            for i, e in enumerate(per[kind]["eps"]):
                sel = [r for r in rows if r["arm"] == arm and r["images"] == kind
                       and r["eps"] == e]
                by_run = [sum(r["mean"] for r in sel if r["run"] == run)
                          for run in sorted({r["run"] for r in sel})]
                assert per[kind]["mean"][i] == pytest.approx(float(np.mean(by_run)), abs=1e-9)
                assert per[kind]["std"][i] == pytest.approx(float(np.std(by_run)), abs=1e-9)


# --------------------------------------------------------------------------- end to end


def _tiny(job_type: str, dataset: str, **over) -> dict:
    raw = {"dataset": dataset, "width": 2, "runs": 2, "max_train": 24, "batch_size": 8,
           "image_size": FOLDER_SIDE, "seed": 3}
    if job_type == "concentration":
        raw |= {"images": 4, "samples": 4, "eps": "0.1,0.3"}
    else:
        raw |= {"epochs": 2, "lr": 0.05}
    raw |= over
    return check_params(job_type, raw)


def _run_and_check(job_type: str, dataset: str, arch: str = "resnet9") -> RecordingContext:
    params = _tiny(job_type, dataset, arch=arch)
    ch, side, classes, n_train, n_test = _expected_set(dataset)
    n_train = min(n_train, params["max_train"])
    ctx = RecordingContext()
    result = run_experiment(job_type, params, ctx)
    assert result["seconds"] >= 0
    assert _log_sizes(ctx.lines) == (n_train, n_test, (ch, side, side), classes)
    _check_progress(ctx.fractions)
    if job_type == "concentration":
        units = _unit_counts(arch, ch, classes, side, params["width"])
        _check_concentration_rows(ctx.rows, params["runs"], params["eps"], units,
                                  params["images"])
        _check_concentration_summary(ctx.rows, params["eps"])
    elif job_type == "landscape":  # epoch rows as the training types', plus measured steps
        epochs = [{k: v for k, v in r.items() if k != "kind"} for r in ctx.rows
                  if r["kind"] == "epoch"]
        _check_training_rows(job_type, epochs, params["runs"], params["epochs"], n_test)
        _check_training_summary(job_type, epochs, params["runs"], params["epochs"])
        steps = [r for r in ctx.rows if r["kind"] == "step"]
        assert {(r["arm"], r["run"]) for r in steps} == set(product(ARMS[job_type],
                                                                      range(params["runs"])))
        for r in steps:
            assert 0 <= r["loss_min"] <= r["loss_max"] and r["beta_eff"] > 0
            assert r["ics_l2"] >= 0 and -1 - 1e-9 <= r["ics_cos"] <= 1 + 1e-9
    else:
        _check_training_rows(job_type, ctx.rows, params["runs"], params["epochs"], n_test)
        _check_training_summary(job_type, ctx.rows, params["runs"], params["epochs"])
    if job_type == "smart-init":
        calib = [line for line in ctx.lines if "BN statistics computed" in line]
        how = {"folded": "folded into the weights and biases",
               "scale_only": "folded into the weights (scale only)", "bn_init": "then frozen"}
        assert calib == [f"run {run}, {arm}: BN statistics computed over the {n_train} "
                         f"training images, {how[arm]}" for run in range(params["runs"])
                         for arm in how]
    return ctx


@pytest.mark.parametrize("job_type", JOB_TYPES)
@pytest.mark.parametrize("dataset", list(FILE_SETS))
def test_every_job_type_on_real_format_files(data_home, job_type, dataset):
    _run_and_check(job_type, dataset)


@pytest.mark.parametrize("job_type", JOB_TYPES)
@pytest.mark.parametrize("arch", ARCHS)
def test_every_job_type_and_arch_on_digits(jobs_home, job_type, arch):
    _run_and_check(job_type, "digits", arch)


def test_same_parameters_same_rows(jobs_home):
    """A job is a function of its parameters: two runs give the same rows (but the times)."""
    for job_type in ("concentration", "jitter-noise"):
        params = _tiny(job_type, "digits", max_train=120, epochs=1)
        rows = []
        for _ in range(2):
            ctx = RecordingContext()
            run_experiment(job_type, params, ctx)
            rows.append([{k: v for k, v in r.items() if k != "seconds"} for r in ctx.rows])
        assert rows[0] == rows[1]


def test_jitter_noise_arm_is_bn_plus_noise(jobs_home):
    """The bn arm is plain BN (the same as affine-ablation's no_affine arm); bn_noise equals it
    exactly with noise 0 and departs from it with noise > 0 (after its 10 measuring steps)."""
    base = {"max_train": 160, "batch_size": 8, "epochs": 1, "runs": 1}  # 20 steps per epoch

    def rows(job_type: str, **over) -> dict[str, list[tuple]]:
        ctx = RecordingContext()
        run_experiment(job_type, _tiny(job_type, "digits", **(base | over)), ctx)
        out: dict[str, list[tuple]] = {}
        for r in ctx.rows:
            out.setdefault(r["arm"], []).append((r["run"], r["epoch"], r["train_loss"],
                                                 r["test_accuracy"]))
        return out

    quiet = rows("jitter-noise", noise=0.0)
    assert quiet["bn"] == quiet["bn_noise"]
    noisy = rows("jitter-noise", noise=0.5)
    assert noisy["bn"] == quiet["bn"]
    assert [r[2] for r in noisy["bn_noise"]] != [r[2] for r in noisy["bn"]]
    assert rows("affine-ablation")["no_affine"] == quiet["bn"]


def test_an_epoch_without_steps_reports_no_loss(jobs_home):
    with pytest.raises(ParamError, match="max_train: "):
        _tiny("affine-ablation", "digits", max_train=1, runs=1, epochs=1)
    params = _tiny("affine-ablation", "digits", max_train=2, runs=1, epochs=1, batch_size=2)
    params["max_train"] = 1  # past the check: an epoch with no step of SGD reports no loss
    ctx = RecordingContext()
    run_experiment("affine-ablation", params, ctx)
    assert [r["train_loss"] for r in ctx.rows] == [None, None]


def test_max_train_limits_the_training_set(jobs_home):
    ctx = RecordingContext()
    run_experiment("smart-init", _tiny("smart-init", "digits", max_train=37, runs=1,
                                       epochs=1), ctx)
    assert _log_sizes(ctx.lines)[:2] == (37, DIGITS_TEST)
    assert ("run 0, bn_init: BN statistics computed over the 37 training images, then frozen"
            in ctx.lines)


# --------------------------------------------------------------------------- progress


def test_progress_ends_at_one_with_a_last_batch_of_one(jobs_home):
    """41 images in batches of 8: the single last image is no batch for BN, so there are
    fewer steps than batches; the job still ends at 1.0."""
    ctx = RecordingContext()
    run_experiment("affine-ablation", _tiny("affine-ablation", "digits", max_train=41,
                                            runs=1, epochs=1), ctx)
    _check_progress(ctx.fractions)


@pytest.mark.parametrize("job_type", JOB_TYPES)
def test_progress_moves_forward_to_one(jobs_home, job_type):
    ctx = RecordingContext()
    params = _tiny(job_type, "digits", max_train=200, runs=1, epochs=1, images=20,
                   samples=200, eps="0.01,0.1,0.3") if job_type == "concentration" else \
        _tiny(job_type, "digits", max_train=200, runs=1, epochs=1)
    run_experiment(job_type, params, ctx)
    _check_progress(ctx.fractions)
    assert len(ctx.fractions) >= 4 and ctx.fractions[0] < 0.5  # it reports along the way


@pytest.mark.parametrize("job_type", JOB_TYPES)
def test_cancel_stops_the_job(jobs_home, job_type):
    params = _tiny(job_type, "digits", max_train=200, runs=2, epochs=2, images=20,
                   samples=200, eps="0.01,0.1,0.3") if job_type == "concentration" else \
        _tiny(job_type, "digits", max_train=200, runs=2, epochs=2)
    full = RecordingContext()
    run_experiment(job_type, params, full)
    ctx = RecordingContext(cancel_at=0.3)
    with pytest.raises(Cancelled):
        run_experiment(job_type, params, ctx)
    assert ctx.fractions[-1] >= 0.3 and all(f < 0.3 for f in ctx.fractions[:-1])
    assert len(ctx.rows) < len(full.rows)

    def timeless(rows: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]

    assert timeless(ctx.rows) == timeless(full.rows[:len(ctx.rows)])
    assert not any(line.startswith("done in") for line in ctx.lines)
    # a cancelled job's rows still summarise (arms not reached have empty curves)
    summary = summarise(job_type, ctx.rows)
    assert list(summary["arms"]) == list(ARMS[job_type])
    if job_type != "concentration":
        # an arm has a final accuracy once one of its epochs ended (landscape jobs also
        # record measured steps before that)
        reached = {r["arm"] for r in ctx.rows if r.get("kind", "epoch") == "epoch"}
        for arm, curve in summary["arms"].items():
            assert (curve["final"] is None) == (arm not in reached)


# --------------------------------------------------------------------------- smart init


def test_smart_init_on_digits_with_the_default_parameters(jobs_home):
    """Figures 5/10 on digits with check_params' defaults: every arm learns (the order of the
    arms is printed, not asserted: it depends on the seed on data this small)."""
    params = check_params("smart-init", {})
    assert params["dataset"] == "digits"
    ctx = RecordingContext()
    run_experiment("smart-init", params, ctx)
    _check_training_rows("smart-init", ctx.rows, params["runs"], params["epochs"], DIGITS_TEST)
    _check_progress(ctx.fractions)
    summary = summarise("smart-init", ctx.rows)
    finals = {arm: curve["final"] for arm, curve in summary["arms"].items()}
    print("\nsmart-init on digits, defaults", {k: params[k] for k in
                                               ("arch", "width", "epochs", "runs", "lr")})
    for arm, curve in summary["arms"].items():
        print(f"  {arm:12s} accuracy per epoch {np.round(curve['mean'], 4).tolist()}, "
              f"final {finals[arm]:.4f}")
    print(f"  highest at the end: {max(finals, key=finals.get)}")
    last = [r for r in ctx.rows if r["epoch"] == params["epochs"]]
    assert len(last) == len(ARMS["smart-init"]) * params["runs"]
    assert all(r["test_accuracy"] > 0.5 for r in last), last
    calib = [line for line in ctx.lines if "bn_init: BN statistics computed" in line]
    assert calib == [f"run {run}, bn_init: BN statistics computed over the {DIGITS_TRAIN} "
                     "training images, then frozen" for run in range(params["runs"])]


def _standardised_digits(max_train: int) -> torch.Tensor:
    """The training images as a network sees them, standardised here in float64."""
    data = load_image_data("digits", 64, max_train)
    x = data.x_train.astype(np.float64) / 16.0
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = x.std(axis=(0, 2, 3), keepdims=True)
    return torch.tensor((x - mean) / std, dtype=torch.float32)


@pytest.mark.parametrize("job_type", ["smart-init", "concentration"])
def test_frozen_arm_uses_statistics_of_the_whole_training_set(jobs_home, monkeypatch,
                                                              job_type):
    real = training.calibrate_frozen
    x_all = _standardised_digits(300)
    calls = []

    def spy(model, batches, progress=None):
        seen = torch.cat(list(batches()))
        real(model, batches, progress)
        modes = {m.mode for m in model.modules() if isinstance(m, ModeNorm)}
        # with the statistics just computed, every norm layer's output over ALL the training
        # images has mean 0 and (biased) variance 1 per channel
        outs = _norm_outputs(model.eval(), x_all)
        means = torch.cat([o.double().mean((0, 2, 3)) for o in outs])
        variances = torch.cat([o.double().var((0, 2, 3), correction=0) for o in outs])
        frozen = {name: buf.clone() for name, buf in model.named_buffers()
                  if name.endswith(("running_mean", "running_var"))}
        calls.append({"model": model, "seen": seen, "modes": modes, "means": means,
                      "variances": variances, "frozen": frozen})

    # the training arms and the concentration arms each call it from their own module
    monkeypatch.setattr(training, "calibrate_frozen", spy)
    monkeypatch.setattr(conc, "calibrate_frozen", spy)
    params = _tiny(job_type, "digits", max_train=300, runs=2, width=4, epochs=1)
    run_experiment(job_type, params, RecordingContext())
    assert len(calls) == params["runs"]  # one frozen arm per run
    for call in calls:
        assert call["modes"] == {"frozen"}
        assert call["seen"].shape == x_all.shape
        torch.testing.assert_close(call["seen"], x_all, atol=1e-4, rtol=0)
        assert float(call["means"].abs().max()) < 1e-4
        torch.testing.assert_close(call["variances"], torch.ones_like(call["variances"]),
                                   atol=1e-4, rtol=0)
        # frozen: training leaves the statistics alone (and trains the bias)
        after = dict(call["model"].named_buffers())
        for name, value in call["frozen"].items():
            assert torch.equal(after[name], value), name
        if job_type == "smart-init":
            biases = [m.bias for m in call["model"].modules() if isinstance(m, ModeNorm)]
            assert any(float(b.detach().abs().max()) > 0 for b in biases)


def test_concentration_balls_around_training_and_gaussian_images(jobs_home, monkeypatch):
    """Figure 4's two kinds of centres: training images, and Gaussian images with the data's
    per-channel mean and variance (0 and 1 once standardised); radius eps x sqrt(pixels)."""
    real = conc.sign_change_counts
    calls = []

    def spy(model, centers, samples, radius, gen):
        calls.append((centers.clone(), samples, radius))
        return real(model, centers, samples, radius, gen)

    monkeypatch.setattr(conc, "sign_change_counts", spy)
    params = _tiny("concentration", "digits", max_train=300, runs=1, images=60, samples=2,
                   eps="0.3,0.1")
    run_experiment("concentration", params, RecordingContext())
    x_all = _standardised_digits(300).reshape(300, -1)
    kinds = [("data", 0.1), ("data", 0.3), ("gaussian", 0.1), ("gaussian", 0.3)]
    assert len(calls) == len(ARMS["concentration"]) * len(kinds)
    for i, (centers, samples, radius) in enumerate(calls):
        kind, eps = kinds[i % len(kinds)]
        assert samples == 2 and radius == pytest.approx(eps * 8.0)  # 8 x 8 pixels
        assert centers.shape == (60, 1, 8, 8)
        torch.testing.assert_close(centers, calls[i % len(kinds)][0])  # same in every arm
        flat = centers.reshape(60, -1)
        nearest = torch.cdist(flat.double(), x_all.double()).min(1).values
        if kind == "data":
            assert float(nearest.max()) < 1e-3  # every centre is a training image
            assert len({tuple(r) for r in flat.round(decimals=4).tolist()}) == 60
        else:
            assert float(nearest.min()) > 1.0
            assert abs(float(flat.mean())) < 0.1 and abs(float(flat.std()) - 1.0) < 0.1
    torch.testing.assert_close(calls[0][0], calls[1][0])


# --------------------------------------------------------------------------- Figure 4 counts


def _brute_force_counts(model: torch.nn.Module, points: torch.Tensor,
                        tol: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """points (N, P, C, H, W): each point through the model alone; per image and norm layer,
    the units taking both strict signs over its P points. Also bounds that allow for
    rounding (values within tol of 0 may take either sign in a batched pass)."""
    model.eval()
    n, p = points.shape[:2]
    plain, low, high = [], [], []
    for i in range(n):
        per_point = [[o.reshape(-1).double().numpy() for o in _norm_outputs(model, pt[None])]
                     for pt in points[i]]
        layers = [np.stack([per_point[j][k] for j in range(p)]) for k in range(len(per_point[0]))]
        plain.append([int(((v > 0).any(0) & (v < 0).any(0)).sum()) for v in layers])
        low.append([int(((v > tol).any(0) & (v < -tol).any(0)).sum()) for v in layers])
        high.append([int(((v > -tol).any(0) & (v < tol).any(0)).sum()) for v in layers])
    return np.array(plain), np.array(low), np.array(high)


def _compare(counts: torch.Tensor, plain, low, high) -> None:
    c = counts.numpy()
    assert c.shape == plain.shape
    assert np.all(low <= c) and np.all(c <= high)
    sure = low == high
    assert sure.mean() > 0.9  # rounding leaves almost every count decided
    np.testing.assert_array_equal(c[sure], plain[sure])


@pytest.mark.parametrize("arch,mode", [("cnn", "random_bias"), ("resnet9", "zero_bias"),
                                       ("resnet9", "random_bias")])
def test_sign_change_counts_match_brute_force(arch, mode):
    model = build_model(arch, 1, 10, 8, mode, width=2, seed=5)
    centers = torch.randn(3, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    samples, radius = 6, 3.0
    points = conc._ball_samples(centers, samples, radius, torch.Generator().manual_seed(11))
    counts = conc.sign_change_counts(model, centers, samples, radius,
                                   torch.Generator().manual_seed(11))
    assert counts.shape == (3, len(_norm_outputs(model, centers[:1])))
    all_points = torch.cat([centers.reshape(3, 1, -1), points], 1).reshape(3, samples + 1,
                                                                           1, 8, 8)
    plain, low, high = _brute_force_counts(model, all_points)
    _compare(counts, plain, low, high)
    assert plain.sum() > 0  # the test sees crossings


def test_sign_change_counts_on_points_chosen_here(monkeypatch):
    """With the ball sampler replaced by points chosen here (some near, some far), the counts
    are those of exactly the centre plus these points."""
    model = build_model("resnet9", 1, 10, 8, "random_bias", width=2, seed=2)
    gen = torch.Generator().manual_seed(4)
    centers = torch.randn(2, 1, 8, 8, generator=gen)
    scales = torch.tensor([0.0, 0.1, 1.0, 5.0, 20.0]).reshape(1, 5, 1)
    chosen = centers.reshape(2, 1, 64) + scales * torch.randn(2, 5, 64, generator=gen)
    asked = []

    def fake(center, samples, radius, generator):
        asked.append((center.shape, samples, radius))
        return chosen.clone()

    monkeypatch.setattr(conc, "_ball_samples", fake)
    counts = conc.sign_change_counts(model, centers, 5, 1.5, torch.Generator())
    assert asked == [(centers.shape, 5, 1.5)]
    all_points = torch.cat([centers.reshape(2, 1, 64), chosen], 1).reshape(2, 6, 1, 8, 8)
    plain, low, high = _brute_force_counts(model, all_points)
    _compare(counts, plain, low, high)
    assert plain.sum() > 0


def test_zero_radius_ball_crosses_nothing():
    model = build_model("cnn", 3, 10, 8, "random_bias", width=4, seed=1)
    centers = torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    counts = conc.sign_change_counts(model, centers, 8, 0.0, torch.Generator().manual_seed(0))
    assert counts.shape[0] == 4 and int(counts.sum()) == 0


def test_a_unit_zero_at_the_centre_needs_both_strict_signs(monkeypatch):
    """Zero bias, centre 0: every pre-activation is exactly 0 at the centre and positively
    homogeneous, so points on one ray (power-of-2 scales: exact in floating point) never
    cross a unit; the ray and its opposite cross every unit of layer 1 (linear there)."""
    model = build_model("resnet9", 1, 10, 8, "zero_bias", width=2, seed=7)
    centers = torch.zeros(2, 1, 8, 8)
    v = torch.randn(2, 1, 64, generator=torch.Generator().manual_seed(3))
    scales = torch.tensor([0.25, 1.0, 4.0, 16.0]).reshape(1, 4, 1)
    ray = scales * v
    monkeypatch.setattr(conc, "_ball_samples", lambda c, s, r, g: ray.clone())
    counts = conc.sign_change_counts(model, centers, 4, 1.0, torch.Generator())
    assert counts.shape == (2, len(_norm_outputs(model, centers[:1]))) and int(counts.sum()) == 0
    both = torch.cat([ray[:, :2], -ray[:, 2:]], 1)
    monkeypatch.setattr(conc, "_ball_samples", lambda c, s, r, g: both.clone())
    counts = conc.sign_change_counts(model, centers, 4, 1.0, torch.Generator())
    assert counts[:, 0].tolist() == [2 * 8 * 8] * 2  # width 2 channels x 8 x 8 positions


@pytest.mark.parametrize("d", [1, 2, 3, 6])
def test_ball_samples_are_uniform_in_the_ball(d):
    gen = torch.Generator().manual_seed(100 + d)
    centers = torch.randn(3, d, generator=torch.Generator().manual_seed(d)) * 4
    radius, samples = 0.7, 3000
    points = conc._ball_samples(centers, samples, radius, gen)
    assert points.shape == (3, samples, d)
    offsets = (points - centers[:, None]).double()
    r = offsets.norm(dim=-1)
    assert float(r.max()) <= radius * (1 + 1e-5)
    # uniform in the ball: (|x - c| / R)^d is uniform on [0, 1]
    assert stats.kstest((r / radius).clamp(max=1).pow(d).flatten().numpy(),
                        "uniform").pvalue > 1e-3
    directions = (offsets / r[..., None]).reshape(-1, d).numpy()
    if d == 1:
        assert stats.kstest(((offsets[..., 0] / radius + 1) / 2).flatten().numpy(),
                            "uniform").pvalue > 1e-3
    if d == 2:
        angle = np.arctan2(directions[:, 1], directions[:, 0])
        assert stats.kstest(angle, "uniform", args=(-np.pi, 2 * np.pi)).pvalue > 1e-3
    if d == 3:  # Archimedes: one coordinate of a uniform direction is uniform on [-1, 1]
        assert stats.kstest(directions[:, 2], "uniform", args=(-1, 2)).pvalue > 1e-3
    assert np.all(np.abs(directions.mean(0)) < 5 / math.sqrt(len(directions)))


def test_ball_samples_of_images_are_flattened():
    centers = torch.randn(2, 3, 4, 4)
    points = conc._ball_samples(centers, 5, 2.0, torch.Generator().manual_seed(0))
    assert points.shape == (2, 5, 48)
    assert float((points - centers.reshape(2, 1, 48)).norm(dim=-1).max()) <= 2.0 * (1 + 1e-5)
