"""The lecture's guided tour (bnviz.lecture.tour) and what each step computes
(bnviz.lecture.scenes): the steps' order and captions, the sliders each step lets act, and
the science of the scenes checked against independent numpy computations (Corollary 2: with
BN, layer 1's lines all pass through the batch's centroid, so D1 lines make 2*D1 regions)."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from bnviz.lecture.scenes import (
    BATCH_ALL,
    BATCH_SLIDER,
    DENSITY_MODES,
    Scene,
    compute_scene,
    step_settings,
)
from bnviz.lecture.tour import SCENES, SLIDERS, TOUR, TourStep, step_by_key
from bnviz.params import InputError, PartitionParams
from bnviz.views.explorer import ExplorerResult, explore, is_central

KEYS = [s.key for s in TOUR]
#: The issue's order: the BN paper's figures, then the four critics, last.
PAPER_ORDER = ["fig1", "cor2", "fig2a", "fig2b", "fig2c", "fig9", "fig3", "slice", "fig6", "fig7",
               "dannemann", "santurkar", "luo", "ergen"]
CRITICS = ["dannemann", "santurkar", "luo", "ergen"]
EXPLORER_SCENES = ("space", "unit", "layers", "split")


pytestmark = pytest.mark.usefixtures("lecture_home")


# --------------------------------------------------------------------------- sentences

#: Abbreviations whose period does not end a sentence.
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|et al|eqs?|figs?|cf|vs|resp|approx|thm|sec|no)\.",
                            re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?]+[)\"'”’]*(?=\s|$)")


def sentences(text: str) -> int:
    """How many sentences ``text`` has: ends of sentence ('.', '!', '?' before a space or the
    end), not counting the periods of abbreviations (eq. 8, Fig. 3, e.g., et al.) or of
    numbers (4.5)."""
    return len(_SENTENCE_END.findall(_ABBREVIATIONS.sub(lambda m: m.group(0)[:-1], text)))


@pytest.mark.parametrize("text, n", [
    ("One.", 1),
    ("One. Two.", 2),
    ("One! Two? Three.", 3),
    ("See eq. 8 and Fig. 3 here.", 1),
    ("Theorem 1, eq. 7-9). Then more (Fig. 2).", 2),
    ("Birds, e.g. ducks, fly. Fish swim.", 2),
    ("Santurkar et al. explain it. Luo et al.'s view differs.", 2),
    ("Lemma 4.5. Our runs agree.", 2),
    ("It ends (t = 1).", 1),
    ("no end at all", 0),
])
def test_sentence_counter(text, n):
    assert sentences(text) == n


# --------------------------------------------------------------------------- the tour


def test_tour_length_and_unique_keys():
    # issue 16's "about 12-15", issue 19's training step and issue 27's slice step
    assert 12 <= len(TOUR) <= 17
    assert len(set(KEYS)) == len(KEYS)
    assert len({s.title for s in TOUR}) == len(TOUR)
    assert all(re.fullmatch(r"[a-z0-9]+", k) for k in KEYS)


@pytest.mark.parametrize("step", TOUR, ids=KEYS)
def test_caption_is_one_to_three_sentences(step):
    caption = step.caption
    assert caption == caption.strip() and "  " not in caption
    assert caption.endswith((".", "!", "?", ".)"))
    assert 1 <= sentences(caption) <= 3, caption


def test_order_follows_the_issue():
    positions = [KEYS.index(k) for k in PAPER_ORDER]
    assert positions == sorted(positions), [KEYS[i] for i in positions]
    assert KEYS[:6] == PAPER_ORDER[:6]  # Figure 1, Corollary 2, Figure 2a-c, Figure 9 first
    assert KEYS[-4:] == CRITICS  # the four papers last, in the issue's order
    # the BN paper's own steps, then one step per critic
    assert all(s.paper == "BN paper" for s in TOUR[:-4])
    assert [s.paper for s in TOUR[-4:]] == ["Dannemann & Junike", "Santurkar et al.",
                                            "Luo et al.", "Ergen et al."]


@pytest.mark.parametrize("step", TOUR, ids=KEYS)
def test_step_fields(step):
    assert step.scene in SCENES
    assert isinstance(step.settings, PartitionParams)
    assert set(step.live) <= set(SLIDERS)
    if step.animate == "frames":  # the scene's recorded frames, no slider
        assert step.scene == "training"
    elif step.animate is not None:
        assert step.animate in ("mu", "sigma")
        assert step.animate in step.live
    # the settings are valid ones: they survive the URL round trip of the parameter layer
    assert PartitionParams.from_page(step.settings.to_query()) == step.settings
    assert step_by_key(step.key) is step
    assert TOUR[step.number - 1] is step


def test_numbers_are_positions():
    assert [s.number for s in TOUR] == list(range(1, len(TOUR) + 1))


def test_unknown_key():
    with pytest.raises(KeyError):
        step_by_key("fig42")


def test_steps_that_animate():
    animated = {s.key: s.animate for s in TOUR if s.animate}
    assert animated.get("cor2") == "mu"  # Corollary 2's play button sweeps mu = t * mu_BN
    assert animated.get("fig2c") == "sigma"  # Figure 2c: sigma of layer 1
    assert [s.key for s in TOUR if s.tls] == ["fig9"]
    assert animated.get("train") == "frames"  # the training step plays its frames


# --------------------------------------------------------------------------- scenes

def _data_types():
    from bnviz.papers.dannemann import WeightPlane
    from bnviz.papers.ergen import ErgenResult
    from bnviz.papers.landscape import LandscapeResult
    from bnviz.papers.luo import StatisticsSamples
    from bnviz.views.jitter import JitterResult

    return {"space": ExplorerResult, "unit": ExplorerResult, "layers": tuple,
            "split": tuple, "training": dict, "density": dict, "slice": dict,
            "jitter": JitterResult,
            "bnstats": tuple,
            "dannemann": WeightPlane, "santurkar": LandscapeResult, "luo": StatisticsSamples,
            "ergen": ErgenResult}


@pytest.mark.parametrize("step", TOUR, ids=KEYS)
def test_every_step_computes_its_scene(step):
    scene = compute_scene(step)
    assert isinstance(scene, Scene) and scene.step is step
    assert isinstance(scene.data, _data_types()[step.scene])
    # at its own settings a step applies nothing: the settings are the step's own
    assert scene.settings == step.settings
    assert compute_scene(step.key).settings == scene.settings
    if step.scene in ("layers", "split"):
        (other, without), (bn, with_bn) = scene.data
        assert bn == "bn" and other != "bn"
        assert isinstance(without, ExplorerResult) and isinstance(with_bn, ExplorerResult)
        assert without.settings.mode == other and with_bn.settings.mode == "bn"
        for w0, w1 in zip(without.network.weights, with_bn.network.weights, strict=True):
            np.testing.assert_array_equal(w0, w1)  # the same weights, without and with BN
    if step.scene == "density":
        counts = scene.data["counts"]
        assert scene.data["modes"] == list(DENSITY_MODES)
        assert counts.shape[:2] == (len(DENSITY_MODES), step.settings.depth)
        assert (counts >= 0).all() and counts.sum() > 0
    if step.scene == "bnstats":
        report, samples = scene.data
        assert isinstance(report, dict) and isinstance(samples, dict)
    if step.scene in ("space", "unit"):
        assert scene.data.settings == step.settings


# --------------------------------------------------------------------------- the slice step

def test_slice_scene_counts_against_torch_in_train_mode():
    """The slice step's BN row, layer 1: at each grid point, how many units of the first
    leaky ReLU change sign towards its right and upper neighbours, recomputed here with the
    torch module itself (its BN layers in train mode on the mini-batch, momentum 1, so that
    the running statistics are that batch's, layer by layer; then eval on the grid)."""
    import torch

    from bnviz.images.networks import ModeNorm, build_model
    from bnviz.lecture.scenes import SLICE_SCENE
    from bnviz.slices.plane import plane_through_images
    from bnviz.slices.sources import load_images

    scene = compute_scene("slice")
    data, c = scene.data, SLICE_SCENE
    assert data["modes"] == list(DENSITY_MODES)
    images = load_images(c["dataset"])
    assert data["labels"] == [int(images.labels[i]) for i in c["images"]]
    plane = plane_through_images(images.test[list(c["images"])])
    # the three digits are drawn where the plane puts them: x(a, b) = origin + a u + b v
    recon = np.stack([plane.point(a, b) for a, b in data["points"]])
    np.testing.assert_allclose(recon, images.test[list(c["images"])], atol=1e-9)

    model = build_model(c["arch"], 1, 10, images.test.shape[-1], "bn", seed=c["seed"])
    for m in model.modules():
        if isinstance(m, ModeNorm):
            m.momentum = 1.0
    batch = images.train[np.random.default_rng(c["seed"]).choice(
        len(images.train), c["batch_size"], replace=False)]
    with torch.no_grad():
        model.train()(torch.as_tensor(batch, dtype=torch.float32))
        model.eval()
        g = c["grid"]
        a0, a1, b0, b1 = data["box"]
        steps = (np.arange(g) + 0.5) / g
        aa, bb = np.meshgrid(a0 + steps * (a1 - a0), b0 + steps * (b1 - b0))
        x = np.stack([plane.point(a, b) for a, b in zip(aa.ravel(), bb.ravel(), strict=True)])
        seen = []
        act = next(m for m in model.modules() if isinstance(m, (torch.nn.LeakyReLU,
                                                                 torch.nn.ReLU)))
        hook = act.register_forward_hook(lambda _m, inp, _o: seen.append(inp[0]))
        model(torch.as_tensor(x, dtype=torch.float32))
        hook.remove()
    signs = (seen[0] > 0).reshape(g, g, -1).numpy()
    expected = np.zeros((g, g))
    expected[:, :-1] += (signs[:, 1:] != signs[:, :-1]).sum(-1)
    expected[:-1, :] += (signs[1:] != signs[:-1]).sum(-1)
    got = data["counts"][data["modes"].index("bn"), 0]
    assert got.shape == expected.shape and expected.sum() > 0
    # float32 both ways: a unit within rounding of zero at a grid point may differ
    assert np.mean(got == expected) > 0.99
    assert abs(got.sum() - expected.sum()) <= 0.01 * expected.sum()
    ratios = data["ratios"]
    assert set(ratios) == set(DENSITY_MODES) and all(np.isfinite(list(ratios.values())))


# --------------------------------------------------------------------------- Corollary 2

def _layer1(result: ExplorerResult):
    """Layer 1's lines {x : w_k . x = mu_k} as drawn."""
    return (np.asarray(result.network.weights[0], dtype=np.float64),
            np.asarray(result.partition.layers[0].stats.mu, dtype=np.float64))


def _sign_patterns(w, mu, box, n=801) -> int:
    """How many regions the lines cut the box into, counted by the activation patterns on a
    fine grid (independent of bnviz's exact partition)."""
    x0, x1, y0, y1 = box
    xs, ys = np.meshgrid(np.linspace(x0, x1, n), np.linspace(y0, y1, n))
    points = np.stack([xs.ravel(), ys.ravel()], axis=1)
    return len(np.unique(points @ w.T - mu > 0, axis=0))


def test_corollary_2_at_the_bn_mean():
    scene = compute_scene("cor2", mu_t=1.0)
    result = scene.data
    width = scene.settings.width
    assert scene.settings.mu_t == 1.0 and scene.settings.mode == "bn"
    assert len(result.partition.layers[0].regions) == 2 * width
    w, mu = _layer1(result)
    assert w.shape == (width, 2)
    assert is_central(w, mu)
    assert result.central_layer1
    assert _sign_patterns(w, mu, result.partition.box) == 2 * width


@pytest.mark.parametrize("t", [0.0, 0.25, 0.5, 1.0, 1.5])
def test_corollary_2_lines_meet_at_t_times_the_centroid(t):
    """mu = t * mu_BN: every layer-1 line passes through t times the data's centroid."""
    result = compute_scene("cor2", mu_t=t).data
    w, mu = _layer1(result)
    centroid = result.data.points.mean(axis=0)
    # mu_BN of unit k is the batch mean of w_k . x, that is w_k . centroid
    np.testing.assert_allclose(mu, t * (w @ centroid), atol=1e-12)
    point, *_ = np.linalg.lstsq(w, mu, rcond=None)
    np.testing.assert_allclose(point, t * centroid, atol=1e-10)
    assert np.abs(w @ point - mu).max() < 1e-10
    assert is_central(w, mu)
    width = result.settings.width
    assert len(result.partition.layers[0].regions) == 2 * width
    assert _sign_patterns(w, mu, result.partition.box) == 2 * width


def test_random_biases_are_not_central():
    """The check above can fail: the same weights with random biases do not meet at a point."""
    settings = replace(compute_scene("cor2", mu_t=1.0).settings, mode="random_bias")
    result = explore(settings)
    w, mu = _layer1(result)
    assert not is_central(w, mu)
    point, *_ = np.linalg.lstsq(w, mu, rcond=None)
    assert np.abs(w @ point - mu).max() > 1e-3
    assert _sign_patterns(w, mu, result.partition.box) != 2 * settings.width


def test_a_mini_batch_moves_the_meeting_point_to_its_centroid():
    step = step_by_key("batch")
    result = compute_scene(step).data
    assert result.settings.batch_size == step.settings.batch_size == len(result.batch)
    w, mu = _layer1(result)
    point, *_ = np.linalg.lstsq(w, mu, rcond=None)
    np.testing.assert_allclose(point, result.batch.mean(axis=0), atol=1e-10)
    assert np.linalg.norm(point - result.data.points.mean(axis=0)) > 1e-3


def test_figure_2a_tls_minimum_is_the_bn_mean():
    step = step_by_key("fig2a")
    unit = compute_scene(step).data.unit
    assert (unit.layer, unit.unit) == (step.settings.target_layer, step.settings.target_unit)
    assert unit.mu == pytest.approx(step.settings.mu_t * unit.batch_mean, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(unit.batch_mean, unit.projections.mean(), rtol=1e-9)
    best = unit.mu_grid[np.argmin(unit.tls_loss)]
    spacing = unit.mu_grid[1] - unit.mu_grid[0]
    assert abs(best - unit.batch_mean) <= spacing / 2 + 1e-12


def test_figure_9_is_a_trained_network_on_layers_1_and_4():
    """The paper's Figure 9: a trained 4-layer network, layers 1 and 4, at BN's statistics
    (the colour IS sigma^2/||w||^2); the depth slider moves the right panel to the last
    layer (a new training), mu moves the colour off sigma^2/||w||^2 (named so)."""
    step = step_by_key("fig9")
    assert step.tls and step.settings.weights == "trained"
    scene = compute_scene(step)
    assert scene.data.training is not None and scene.tls.train_accuracy == 1.0
    assert [t.layer for t in scene.tls.layers] == [1, 4]
    assert all(t.exact for t in scene.tls.layers)
    w = scene.data.network.weights[0]
    x = scene.data.batch
    np.testing.assert_allclose(scene.tls.layers[0].values,
                               (x @ w.T).var(0) / (w**2).sum(1), rtol=1e-9)
    deeper = compute_scene(step, depth=3)
    assert [t.layer for t in deeper.tls.layers] == [1, 3]
    moved = compute_scene(step, mu_t=0.5)
    assert not any(t.exact for t in moved.tls.layers)
    assert compute_scene("fig1").tls is None  # only Figure 9's step carries the colours


# --------------------------------------------------------------------------- sliders

def test_live_slider_moves_the_settings():
    assert compute_scene("cor2", mu_t=0.5).settings.mu_t == 0.5
    assert compute_scene("fig2c", sigma_log2=1).settings.sigma_s == pytest.approx(2.0)
    assert compute_scene("fig2c", sigma_log2=-2).settings.sigma_s == pytest.approx(0.25)
    assert compute_scene("batch", batch_log2=5).settings.batch_size == 32
    assert compute_scene("fig6", batch_log2=3).data.settings.batch_size == 8
    assert compute_scene("fig7", batch_log2=4).settings.batch_size == 16


@pytest.mark.parametrize("key, sliders", [
    ("fig7", {"mu_t": 0.3}),
    ("fig7", {"sigma_log2": 1.0}),
    ("fig7", {"depth": 2}),
    ("fig3", {"mu_t": 0.0, "sigma_log2": -1.0, "batch_log2": 3}),
    ("fig6", {"mu_t": 0.5, "sigma_log2": 2.0}),
    ("luo", {"mu_t": 0.5, "depth": 7}),
    ("dannemann", {"mu_t": 0.5, "sigma_log2": 1.0, "batch_log2": 3, "depth": 2}),
    ("santurkar", {"mu_t": 0.5, "sigma_log2": 1.0, "batch_log2": 3, "depth": 2}),
    ("ergen", {"mu_t": 0.5, "sigma_log2": 1.0, "batch_log2": 3, "depth": 2}),
])
def test_sliders_that_do_not_act_change_nothing(key, sliders):
    step = step_by_key(key)
    names = {"mu_t": "mu", "sigma_log2": "sigma", "batch_log2": "batch", "depth": "depth"}
    assert not {names[k] for k in sliders} & step.live
    own = compute_scene(step)
    moved = compute_scene(step, **sliders)
    assert moved.settings == own.settings == step.settings
    assert moved.note == own.note
    assert step_settings(step, **sliders) == step_settings(step)


def test_batch_all_is_none():
    for key in ("batch", "fig1", "cor2", "fig6", "fig7", "luo"):
        step = step_by_key(key)
        settings, _ = step_settings(step, batch_log2=BATCH_ALL)
        assert settings.batch_size is None, key
    scene = compute_scene("batch", batch_log2=BATCH_ALL)
    assert scene.settings.batch_size is None and scene.note == ""
    assert len(scene.data.batch) == step_by_key("batch").settings.n_points
    # Figure 6 with all the data: every realisation sees the whole data set
    jitter = compute_scene("fig6", batch_log2=BATCH_ALL).data
    assert jitter.settings.batch_size == step_by_key("fig6").settings.n_points


@pytest.mark.parametrize("key, cap", [("fig7", 512), ("luo", 256)])
def test_batch_all_on_a_statistics_scene_is_a_named_number(key, cap):
    scene = compute_scene(key, batch_log2=BATCH_ALL)
    assert scene.settings.batch_size is None
    assert str(cap) in scene.note


@pytest.mark.parametrize("key", ["batch", "cor2", "fig1", "split"])
def test_a_batch_larger_than_the_data_is_all_data_with_a_note(key):
    step = step_by_key(key)
    n = step.settings.n_points
    b_log2 = math.ceil(math.log2(n))
    assert BATCH_SLIDER[0] <= b_log2 < BATCH_ALL and 2**b_log2 >= n
    settings, note = step_settings(step, batch_log2=b_log2)
    assert settings.batch_size is None
    assert str(2**b_log2) in note and str(n) in note
    scene = compute_scene(step, batch_log2=b_log2)
    assert scene.settings.batch_size is None and scene.note == note
    # one below: a real mini-batch, no note
    smaller, note = step_settings(step, batch_log2=b_log2 - 1)
    assert smaller.batch_size == 2 ** (b_log2 - 1) and note == ""


@pytest.mark.parametrize("key, sliders", [
    ("batch", {"batch_log2": 3.5}),
    ("batch", {"batch_log2": 1}),
    ("batch", {"batch_log2": BATCH_ALL + 1}),
    ("batch", {"batch_log2": "x"}),
    ("batch", {"batch_log2": math.nan}),
    ("batch", {"batch_log2": math.inf}),
    ("fig7", {"batch_log2": 2.5}),
    ("fig2c", {"sigma_log2": "x"}),
    ("fig2c", {"sigma_log2": 2000}),
    ("fig2c", {"sigma_log2": math.inf}),
    ("fig2c", {"sigma_log2": 5}),
    ("fig2c", {"sigma_log2": [1]}),
    ("cor2", {"mu_t": "abc"}),
    ("cor2", {"mu_t": 2}),
    ("cor2", {"mu_t": -0.1}),
    ("fig1", {"depth": 0}),
    ("fig1", {"depth": 13}),
    ("fig3", {"depth": "x"}),
])
def test_bad_slider_values_raise_input_error(key, sliders):
    with pytest.raises(InputError):
        compute_scene(key, **sliders)


def test_depth_changes_the_density_layers():
    own = compute_scene("fig3")
    assert own.data["counts"].shape[1] == 6
    for depth, shown in ((3, [1, 2, 3]), (8, [1, 4, 8]), (1, [1])):
        scene = compute_scene("fig3", depth=depth)
        assert scene.settings.depth == depth and scene.settings.layer == depth
        assert scene.data["counts"].shape[:2] == (len(DENSITY_MODES), depth)
        assert scene.data["layers"] == shown


def test_depth_changes_the_partitions():
    scene = compute_scene("fig1", depth=2)
    assert scene.settings.depth == 2 and scene.settings.layer == 2
    assert [len(r.partition.layers) for _, r in scene.data] == [2, 2]
    scene = compute_scene("fig2b", depth=3)  # the last layer stays the highlighted one
    assert scene.settings.layer == 3 and len(scene.data.partition.layers) == 3
    # on the layer-1 steps depth changes nothing that is shown: it is not live there
    assert compute_scene("cor2", depth=3).settings == compute_scene("cor2").settings


def test_explorer_step_is_a_tour_step_too():
    """A step made on the fly (the explorer's state) goes through the same code."""
    step = TourStep("x", "t", "BN paper", "c.", "space", PartitionParams(depth=2, width=3))
    scene = compute_scene(step, mu_t=0.5, depth=3)
    assert scene.settings.mu_t == 0.5 and scene.settings.depth == 3
    assert len(scene.data.partition.layers[0].regions) == 6


def test_the_training_step_says_what_its_run_shows():
    """Issue 19's step: the same weights and mini-batches without BN (zero bias, biases
    learned) and with BN.  Its caption's numbers are those of the run: at step 0 the data
    are closer to BN's last-layer boundary (the paper's claim at initialisation), training
    without BN moves its boundary to the data by step 40, and both end near 0.06."""
    from bnviz.lecture.scenes import TRAINING_MODES, TRAINING_RUN

    scene = compute_scene("train")
    runs = scene.data["runs"]
    assert tuple(runs) == TRAINING_MODES == ("zero_bias", "bn")
    without, with_bn = runs["zero_bias"], runs["bn"]
    assert [f.step for f in with_bn] == list(range(0, TRAINING_RUN["steps"] + 1, 10))
    caption = scene.step.caption
    assert f"{with_bn[0].mean_distance:.2f}" == "0.05" and "0.05 from BN's" in caption
    assert f"{without[0].mean_distance:.2f}" == "0.11" and "0.11 without BN" in caption
    at_40 = next(f for f in without if f.step == 40)
    assert at_40.mean_distance < 0.6 * without[0].mean_distance and "by step 40" in caption
    assert f"{without[-1].mean_distance:.2f}" == f"{with_bn[-1].mean_distance:.2f}" == "0.06"
    # the same weights: layer 1's weights of step 0 are equal
    np.testing.assert_array_equal(without[0].network.weights[0], with_bn[0].network.weights[0])


def test_the_santurkar_caption_says_what_the_scene_measures():
    """issue 29: the caption's numbers are the scene's own (the mean over the training steps
    of the loss range along each step, and of the effective beta-smoothness), so it cannot
    claim a smoother landscape with BN where the numbers show the opposite."""
    step = step_by_key("santurkar")
    arms = compute_scene(step).data.arms
    loss_range = {a: float(np.mean(np.subtract(arms[a]["loss_max"], arms[a]["loss_min"])))
                  for a in ("bn", "no_bn")}
    beta = {a: float(np.mean(arms[a]["beta_eff"])) for a in ("bn", "no_bn")}
    assert (f"mean range {loss_range['bn']:.3f} against {loss_range['no_bn']:.3f}"
            in step.caption), (loss_range, step.caption)
    assert f"({beta['bn']:.1f} against {beta['no_bn']:.1f})" in step.caption, beta
    bn_smoother = loss_range["bn"] < loss_range["no_bn"] and beta["bn"] < beta["no_bn"]
    assert ("does not show here" in step.caption) is not bn_smoother
