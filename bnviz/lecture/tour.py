"""The guided tour (issue 16): the BN paper's story, then its four critics, as steps.

Each step is a state of the lecture view: which scene it draws, the explorer settings it
starts from (the lecture's four sliders, mu, sigma, batch size and depth, move them), a
caption of one to three sentences, the sliders that act on its scene, and the slider it
animates. The steps follow the paper: Figure 1, Corollary 2, Figure 2a-c, Figure 9, the split,
training (issue 19: the partition moving while the network learns), a mini-batch, Figure 3,
Figure 3 on a slice of an image network (issue 27), Figure 6, Figure 7, then Dannemann &
Junike, Santurkar et al., Luo et al. and Ergen et al. The captions say what our runs show
where that differs from a paper, and a paper's claim as its claim (tests/test_words.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from bnviz.params import PartitionParams

__all__ = ["SLIDERS", "SCENES", "TOUR", "TourStep", "step_by_key"]

#: The lecture's four sliders, always shown (the mission's controls).
SLIDERS = ("mu", "sigma", "batch", "depth")
#: What a step draws: the explorer's three views, the split (no BN | BN), and the other pages'.
SCENES = ("space", "layers", "unit", "split", "training", "density", "jitter", "bnstats",
          "slice", "dannemann", "santurkar", "luo", "ergen")
_EXPLORER_SLIDERS = frozenset(SLIDERS)


@dataclass(frozen=True)
class TourStep:
    key: str
    title: str
    paper: str  # short name of the paper the step is about
    caption: str  # one to three sentences
    scene: str  # one of SCENES
    settings: PartitionParams
    live: frozenset[str] = _EXPLORER_SLIDERS  # the sliders that act on this scene
    #: "mu" or "sigma": the slider its play button sweeps; "frames": the recorded frames
    #: its play button plays (the training step)
    animate: str | None = None
    tls: bool = False  # Figure 9's colouring of the facets

    @property
    def number(self) -> int:
        """1-based position in the tour."""
        return next(i for i, s in enumerate(TOUR, 1) if s.key == self.key)


_FIG1 = PartitionParams(depth=4, width=6, mode="bn", dataset="moons", layer=4, shift_x=1.0,
                       shift_y=1.0)  # the explorer's Figure 1 preset: data off the origin
_FIG2 = PartitionParams(depth=2, width=8, mode="bn", scope="unit", target_layer=2,
                       target_unit=0, layer=2)
_BN = "BN paper"

TOUR: tuple[TourStep, ...] = (
    TourStep("fig1", "Figure 1: BN draws each layer's hyperplanes to the data", _BN,
             "Top: random weights without BN spread every layer's folded hyperplanes over the "
             "whole plane, whatever the data. Bottom: the same weights with BN draw each layer's "
             "hyperplanes to the data.",
             "layers", _FIG1),
    TourStep("cor2", "Corollary 2: layer 1 is a central arrangement", _BN,
             "At μ = 0 every layer-1 line passes through the origin; D₁ lines through one point "
             "make 2·D₁ regions. Press play: μ = t·μ_BN carries the point to the data's centroid "
             "(t = 1: BN).",
             "space", replace(_FIG1, layer=1, mu_t=0.0), animate="mu",
             live=frozenset({"mu", "sigma", "batch"})),  # layer 1: depth changes nothing
    TourStep("fig2a", "Figure 2a: μ is a total-least-squares fit", _BN,
             "One unit in its own input space: the hyperplane sits at μ (orange). The batch's "
             "mean squared distance to it is a parabola in μ, lowest, σ²/‖w‖², at the BN mean "
             "(Theorem 1).",
             "unit", replace(_FIG2, mu_t=0.2), animate="mu"),
    TourStep("fig2b", "Figure 2b: μ translates a folded hyperplane", _BN,
             "In the input space the unit's folded hyperplane (orange) bends at the gray lines "
             "(earlier layers). Theorem 2: a μ bringing the hyperplane nearer a point's layer-2 "
             "input brings the folded one nearer the point.",
             "space", replace(_FIG2, mu_t=0.3), animate="mu"),
    TourStep("fig2c", "Figure 2c: σ of layer 1 folds layer 2", _BN,
             "Now σ of layer 1 changes while layer 2 keeps BN's μ: layer 2's folded hyperplanes "
             "(blue) bend at the gray lines (earlier layers), and σ₁ sets how sharply they fold.",
             "space", replace(_FIG2, scope="layer", target_layer=1, sigma_s=2.0),
             animate="sigma"),
    TourStep("fig9", "Figure 9: each unit's TLS error, layers 1 and 4", _BN,
             "Trained with BN: layer 1's lines (left), layer 4's folded hyperplanes (right), each "
             "unit coloured by σ²/‖w‖² on its layer's scale, blue small, green large; in layer 1, "
             "the data's mean squared distance (eq. 8).",
             "space", replace(_FIG1, layer=4, weights="trained"), tls=True),
    TourStep("split", "The same weights, without and with BN", _BN,
             "Left without BN (random biases), right with BN, same weights and data. Move depth: "
             "with BN most deeper-layer facets stay near the data (some cross the empty plane); "
             "without BN they spread evenly.",
             "split", replace(_FIG1, layer=4)),
    TourStep("train", "Watch it learn: BN starts on the data", _BN,
             "Without BN (left) and with BN (right) from the same weights; press play. Step 0: the "
             "data lie 0.05 from BN's boundary, 0.11 without BN; by step 40 down to 0.06, where "
             "both end.",
             "training", replace(_FIG1, layer=4), live=frozenset(), animate="frames"),
    TourStep("batch", "A mini-batch moves the hyperplanes", _BN,
             "In training BN uses each mini-batch's statistics: with a batch of 8 (hollow points "
             "are outside it) the lines meet at that batch's centroid, not the data's. Move the "
             "batch-size slider: smaller batches, larger moves.",
             "space", replace(_FIG1, layer=1, batch_size=8, batch_seed=3),
             live=frozenset({"mu", "sigma", "batch"})),
    TourStep("fig3", "Figure 3: facets concentrate near the data", _BN,
             "More facets near a point: it stands out more from the background. Zero bias (top): "
             "layer 1 through the origin, the star's centre; random biases (middle): spread; BN "
             "(bottom): deeper layers' facets on the data.",
             "density", PartitionParams(depth=6, width=64, dataset="star", n_points=50,
                                       layer=6), live=frozenset({"depth"})),
    TourStep("slice", "Figure 3 on real images: a slice of a conv net", _BN,
             "A plane through three test digits (dots) cuts the appendix CNN at its random start: "
             "zero bias (top), random biases (middle), BN with one mini-batch's statistics "
             "(bottom). BN raises the printed near/far density a little.",
             "slice", PartitionParams(), live=frozenset()),
    TourStep("fig6", "Figure 6: the decision boundary jitters", _BN,
             "Each thin gray line is the decision boundary under one mini-batch's statistics; "
             "the thick line is the test-time boundary. Smaller batches jitter more, which the "
             "paper reads as a regulariser.",
             "jitter", PartitionParams(depth=3, width=8, batch_size=16, n_points=200),
             live=frozenset({"batch", "depth"})),
    TourStep("fig7", "Figure 7: the statistics' own distributions", _BN,
             "μ_B and σ²_B over 3000 mini-batches (histograms), eq. 13's analytical law (blue) "
             "and noise-controlled BN with a virtual batch of half the batch (vermillion). "
             "Move the batch size: their variance shrinks as 1/|B|.",
             "bnstats", PartitionParams(batch_size=64), live=frozenset({"batch"})),
    TourStep("dannemann", "Dannemann & Junike: a counterexample to Lemma 4.5",
             "Dannemann & Junike",
             "At W0 = W* the BN loss has a gradient (vermillion arrow), its nearest BN optimum "
             "4.24 away (squared): Lemma 4.5's bound of 0 is refuted; our smart-initialisation "
             "runs test whether BN's statistics help.",
             "dannemann", PartitionParams(), live=frozenset()),
    TourStep("santurkar", "Santurkar et al.: a smoother loss landscape", "Santurkar et al.",
             "Santurkar et al. explain BN by a smoother landscape. With BN the loss varies more "
             "along each step (mean range 0.027 against 0.023), β-smoothness too (4.7 against "
             "3.8): their claim does not show here.",
             "santurkar", PartitionParams(), live=frozenset()),
    TourStep("luo", "Luo et al.: mini-batch noise as a regulariser", "Luo et al.",
             "Luo et al. write BN as population normalisation plus a γ decay of strength "
             "3/(4M) from the noise of μ_B and σ_B. Move the batch size M: the statistics' "
             "spread narrows and the regulariser weakens.",
             "luo", PartitionParams(batch_size=16), live=frozenset({"batch"})),
    TourStep("ergen", "Ergen et al.: BN networks as convex programs", "Ergen et al.",
             "Ergen et al. solve a BN network's training in closed form: their BN whitens the data "
             "(right: U of X = UΣVᵀ), and training meets the closed-form optimum p* (the lecture "
             "view prints both).",
             "ergen", PartitionParams(), live=frozenset()),
)


def step_by_key(key: str) -> TourStep:
    for step in TOUR:
        if step.key == key:
            return step
    raise KeyError(key)
