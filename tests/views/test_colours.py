"""Colour-blind-safe colours (issue 16, item 5; bnviz.views.style): every set of colours one
figure shows stays apart under simulated protanopia, deuteranopia and tritanopia, classes have
marker shapes as well as colours, and the figures draw them.

The simulation is Machado, Oliveira and Fernandes (2009) at severity 1 (a dichromat), applied
in linear sRGB; the distance is CIELAB's ΔE*ab (D65). Thresholds: 15 for the lines and
series of one figure (a just-noticeable difference is about 2.3; 15 is plainly different),
40 for Figure 6's two classes, which are told apart by colour at a glance. The colours these
replaced fail: Figure 6's red and green came to 16.5 for a deuteranope.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnviz.views import style
from bnviz.views.render import MARKERS

#: Machado et al. (2009), Table 1 at severity 1.0, on linear RGB.
SIMULATIONS = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
NAMED = {"black": "#000000", "white": "#ffffff"}
LINES_APART = 15.0
CLASSES_APART = 40.0


def _linear_rgb(colour: str) -> np.ndarray:
    hexa = NAMED.get(colour, colour).lstrip("#")
    srgb = np.array([int(hexa[i:i + 2], 16) for i in (0, 2, 4)]) / 255.0
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def _lab(linear: np.ndarray) -> np.ndarray:
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ np.clip(linear, 0.0, 1.0)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _over_white(colour: str, opacity: float) -> str:
    """A translucent colour as it shows on the white plot (blended in sRGB, as browsers do)."""
    hexa = NAMED.get(colour, colour).lstrip("#")
    rgb = np.array([int(hexa[i:i + 2], 16) for i in (0, 2, 4)])
    mixed = np.rint(opacity * rgb + (1 - opacity) * 255).astype(int)
    return "#" + "".join(f"{v:02x}" for v in mixed)


def closest_pair(colours) -> tuple[float, str, str, str]:
    """(ΔE, vision, colour, colour) of the two colours closest under any simulation."""
    return min((float(np.linalg.norm(_lab(m @ _linear_rgb(a)) - _lab(m @ _linear_rgb(b)))),
                vision, a, b)
               for a, b in itertools.combinations(colours, 2)
               for vision, m in SIMULATIONS.items())


def test_the_simulation_against_known_values():
    """Independent anchors: white stays white for everyone; pure red and green, a world
    apart for normal vision, come close for a deuteranope; blue and yellow stay apart."""
    assert np.allclose(_lab(_linear_rgb("white")), [100, 0, 0], atol=0.05)
    apart = closest_pair(["#ff0000", "#00ff00"])
    normal = float(np.linalg.norm(_lab(_linear_rgb("#ff0000")) - _lab(_linear_rgb("#00ff00"))))
    assert normal > 150 and apart[0] < normal / 3 and apart[1] in ("protanopia", "deuteranopia")
    assert closest_pair(["#0000ff", "#ffff00"])[0] > 60


#: The colours that each view shows together (lines, markers, series).
VIEWS = {
    "partition (Fig. 1, 2b, 2c, 9)": [style.PARTITION.current, style.PARTITION.earlier,
                                      style.PARTITION.target, style.PARTITION.boundary,
                                      style.PARTITION.data],
    "unit (Fig. 2a)": [style.UNIT.projections, style.UNIT.loss, style.UNIT.mu,
                       style.UNIT.bn_mean],
    "jitter (Fig. 6)": [_over_white(style.JITTER.realisation, style.JITTER.realisation_opacity),
                        style.JITTER.test_boundary, *style.JITTER.class_colours],
    "jitter curve": [style.JITTER.curve, style.JITTER.current],
    "Figure 7": [style.FIGURE7.empirical, style.FIGURE7.noise_controlled,
                 style.FIGURE7.analytical],
    "density (Fig. 3)": [colour for _, colour in style.DENSITY.mode_colours] +
                        [style.DENSITY.data],
    "series (jobs, classes)": list(style.CATEGORICAL[:6]),
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_each_views_colours_stay_apart_for_colour_blind_eyes(view):
    distance, vision, a, b = closest_pair(VIEWS[view])
    assert distance >= LINES_APART, f"{view}: {a} and {b} are {distance:.1f} apart ({vision})"


def test_figure_6s_classes_differ_in_colour_and_shape():
    colours, symbols = style.JITTER.class_colours, style.JITTER.class_symbols
    assert closest_pair(colours)[0] >= CLASSES_APART
    assert len(set(symbols)) == len(symbols) == len(colours)
    # the criterion is not a formality: the paper's red and green, used until now, fail it
    assert closest_pair(["#c92a2a", "#2b8a3e"])[0] < CLASSES_APART


def test_every_class_shape_is_drawn_by_both_media():
    assert len(set(style.CLASS_SYMBOLS)) == len(style.CLASS_SYMBOLS) >= len(style.CATEGORICAL)
    assert set(style.CLASS_SYMBOLS) <= set(MARKERS)
    assert len(set(MARKERS.values())) == len(MARKERS)


def test_the_jitter_figure_marks_classes_by_shape():
    from bnviz.web.callbacks.jitter.figures import jitter_figure

    points = np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.2]])
    fig = jitter_figure([], np.zeros((0, 4)), points, np.array([0, 1, 1]), (-2, 2, -2, 2), "")
    marked = [t["marker"] for t in fig["data"] if t.get("mode") == "markers"]
    assert [(m["color"], m["symbol"]) for m in marked] == list(
        zip(style.JITTER.class_colours, style.JITTER.class_symbols, strict=True))
