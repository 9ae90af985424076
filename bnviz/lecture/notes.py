"""The presenter's notes for each tour step (issue 31): what to say, the one thing on the
screen to point at, the question to ask the hall, and the minutes the step is planned for.

Shown by the presenter view (/lecture/presenter) beside the step, never on the projector.
Every note speaks of what the step draws at its own settings (bnviz.lecture.tour) and quotes
no number that the step's caption or picture does not show; where our runs disagree with a
paper the note says so, as the caption does.
"""

from __future__ import annotations

from dataclasses import dataclass

from bnviz.lecture.tour import TOUR

__all__ = ["NOTES", "StepNotes", "notes_for", "planned_minutes"]


@dataclass(frozen=True)
class StepNotes:
    say: str  # the point of the step, in two or three sentences
    point: str  # the one thing on the screen to point at
    ask: str  # a question for the hall
    minutes: float  # planned time for the step


NOTES: dict[str, StepNotes] = {
    "fig1": StepNotes(
        "Same weights in both rows; only BN differs. Without BN the layers' folded "
        "hyperplanes ignore where the data are; with BN each layer re-centres on its "
        "input batch, so the cuts follow the data and the regions gather where the data are.",
        "Bottom row, the last column: the blue facets crowd the moons; top row: they do not.",
        "Where would you want a network's regions to be, if it is to fit these data?", 3.0),
    "cor2": StepNotes(
        "With BN the layer-1 pre-activations have zero batch mean, so every layer-1 line "
        "passes through the batch centroid: a central arrangement (Corollary 2). The step "
        "opens at t = 0, zero bias, where they meet at the origin; these data sit off the "
        "origin, so play visibly moves the point. The 2 regions per line are wedges around "
        "it, and some can be thin.",
        "The point where all lines meet: at t = 0 the origin, at t = 1 the data's centroid; "
        "count the regions: 2 per line.",
        "How many regions do D lines through one point make? And in general position?", 2.0),
    "fig2a": StepNotes(
        "One unit: the histogram is the batch projected on its weight vector; the parabola "
        "is the mean squared distance of the batch to the hyperplane at mu (eq. 7-9); at "
        "its minimum it equals sigma^2/||w||^2.",
        "The parabola's minimum sits exactly at the BN mean (t = 1).",
        "Why is the minimum of a squared distance at the mean?", 2.0),
    "fig2b": StepNotes(
        "The same unit seen in the input space: its hyperplane is folded by layer 1's "
        "ReLUs. Sliding mu translates the whole folded hyperplane; Theorem 2 holds point by "
        "point, for each point's own layer-2 input.",
        "The orange folded hyperplane, and where it bends: on the gray lines, layer 1's.",
        "Closest on average is not closest for every point: which points does it miss?", 2.0),
    "fig2c": StepNotes(
        "Now sigma of layer 1 changes: layer 2's hyperplanes fold at layer 1's lines, and "
        "the fold's angle follows sigma of layer 1.",
        "A bend of a layer-2 facet on a layer-1 line while sigma sweeps.",
        "What would a sigma of layer 1 far below 1 do to layer 2's folds?", 2.0),
    "fig9": StepNotes(
        "A trained BN network: each unit coloured by its TLS error sigma^2/||w||^2, on its "
        "layer's own scale. In layer 1 that is the data's mean squared distance to the line; "
        "in layer 4 it is measured in layer 4's own input space, so it ranks the closeness "
        "in the plane only roughly.",
        "Layer 1's blue lines run through the data; layer 4's colours rank closeness only "
        "roughly (the explorer prints the rank correlation).",
        "Why is a TLS error in layer 4's input space not a distance in the plane?", 3.0),
    "split": StepNotes(
        "Left random biases, right BN, same weights and data. Move depth: with BN the new "
        "layers' regions stay where the data are.",
        "The empty corners on the right, against the left's evenly spread regions.",
        "Is a region far from every data point of any use to the classifier?", 2.0),
    "train": StepNotes(
        "Both networks train from the same weights on the same mini-batches; without BN the "
        "biases start at zero and are learned. The distances are to each network's "
        "last-layer decision boundary. BN starts with its boundary on the data; without BN "
        "training first has to move it there.",
        "The caption's distances: 0.05 with BN, 0.11 without at step 0; both near 0.06 at "
        "the end.",
        "If both end at the same distance, what did BN's head start buy?", 3.0),
    "batch": StepNotes(
        "In training BN uses the mini-batch's statistics, so the layer-1 lines meet at the "
        "batch's centroid, not the data's.",
        "The hollow points (outside the batch) and the meeting point of the lines.",
        "What happens to this picture from one mini-batch to the next?", 2.0),
    "fig3": StepNotes(
        "Facet density: the more facets pass near a point, the more it stands out from the "
        "background, in either theme. Zero bias sends layer 1 through the origin, random "
        "biases spread facets evenly, BN keeps them on the data. The paper used width 1024 "
        "and 11 layers; this is width 64.",
        "The bottom row's star standing out against the middle row's even shading.",
        "What would a wider network change here, and what not?", 3.0),
    "slice": StepNotes(
        "A plane through three test digits cut through a conv net at its random start, "
        "without BN (zero and random biases) and with one mini-batch's BN statistics. A "
        "blank panel says why: no unit of that layer changes sign on the plane. The Slices "
        "page cuts trained networks.",
        "The near/far region densities printed under the caption: BN raises them only a "
        "little here.",
        "Why might a random conv net's regions already sit near images?", 2.0),
    "fig6": StepNotes(
        "Each thin line is the decision boundary under one mini-batch's statistics; the "
        "thick line is the test-time boundary. Smaller batches, more jitter.",
        "The spread of the grey lines; then move the batch size down and watch it widen.",
        "Is this jitter noise to remove, or a regulariser to keep?", 2.0),
    "fig7": StepNotes(
        "The batch statistics' own distributions over 3000 mini-batches, with eq. 13's "
        "analytical law and noise-controlled BN.",
        "The histograms narrowing as the batch size grows: variance as 1/|B|.",
        "Why would a virtual batch of half the size add noise on purpose?", 2.0),
    "dannemann": StepNotes(
        "Dannemann & Junike's three-point example refutes Santurkar et al.'s Lemma 4.5, "
        "for one neuron: starting at W0 = W* = (1, 3), the least-squares optimum of their "
        "three points, the BN loss still has a gradient. Whether BN's statistics help "
        "training is what our smart-initialisation runs test.",
        "The vermillion arrow at W* and the squared distance 4.24 to the nearest BN optimum.",
        "What does a lemma's counterexample with three points tell us about deep nets?", 3.0),
    "santurkar": StepNotes(
        "Santurkar et al. explain BN by a smoother landscape, not by the partition. On this "
        "2D task, both networks from the same weights, it does not show: with BN the loss "
        "varies a little more along each step, and the effective beta-smoothness is larger.",
        "The two ranges: 0.027 with BN against 0.023 without; beta-smoothness 4.7 vs 3.8.",
        "Does one small task refute a claim about deep image networks?", 3.0),
    "luo": StepNotes(
        "Luo et al. write BN as population normalisation plus a regulariser from the noise "
        "of the batch statistics, of strength about 3/(4M).",
        "The statistics' spread as M, the batch size, grows.",
        "If the regulariser weakens with M, what should large-batch training add?", 2.0),
    "ergen": StepNotes(
        "Ergen et al. solve a BN network's training as a convex program: their BN whitens "
        "the data, and the trained objective meets the closed-form optimum.",
        "The whitened data on the right, and the objective against p* in the numbers.",
        "What does a closed form give that training does not?", 3.0),
}


def notes_for(key: str) -> StepNotes | None:
    """The notes of the step ``key``; None for the explorer's own state (step 0)."""
    return NOTES.get(key)


def planned_minutes(upto: int) -> float:
    """Planned minutes of the tour's steps 1..``upto`` (the presenter's timer compares)."""
    return sum(NOTES[s.key].minutes for s in TOUR[:max(0, upto)])
