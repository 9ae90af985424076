"""The colours a lecture figure draws, read back from it (tests/lecture/test_captions.py):
a plotly figure's traces, shapes and annotation arrows, or a matplotlib picture's artists, as
shown over their background; and the colour words each colour answers to (hue, lightness
and saturation ranges, the same for every figure)."""

from __future__ import annotations

import colorsys
import re

import numpy as np
import plotly.colors
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

__all__ = ["HUES", "colour_words", "luminance", "page_arrows", "page_colours", "rgba",
           "scale_ends", "slide_colours"]

#: Hue ranges (degrees) of the chromatic colour words; black, white and gray are lightness
#: and saturation (:func:`colour_words`).
HUES = {"red": (345, 15), "vermillion": (15, 32), "orange": (32, 50), "yellow": (50, 70),
        "green": (70, 170), "blue": (170, 260), "purple": (260, 345)}


def colour_words(rgb) -> set[str]:
    """The colour words a displayed colour (r, g, b in [0, 1]) answers to."""
    h, lightness, s = colorsys.rgb_to_hls(*rgb)
    if lightness < 0.1:
        return {"black"}
    if lightness > 0.9:
        return {"white"}
    if s < 0.15:
        return {"gray"}
    hue = 360 * h
    return {w for w, (lo, hi) in HUES.items()
            if (lo <= hue < hi if lo < hi else hue >= lo or hue < hi)}


def rgba(value) -> tuple[float, float, float, float] | None:
    """A CSS colour as plotly takes it (hex, rgb(), rgba(), a name); None for anything else
    (a number that a colour scale maps)."""
    if not isinstance(value, str):
        return None
    text = value.replace(" ", "").lower()
    m = re.fullmatch(r"rgba?\(([\d.]+),([\d.]+),([\d.]+)(?:,([\d.]+))?\)", text)
    if m:
        return (*(float(v) / 255 for v in m.groups()[:3]), float(m.group(4) or 1))
    try:
        return to_rgba(text)
    except ValueError:
        return None


def shown(colour, alpha: float, background) -> tuple[float, float, float]:
    """``colour`` at opacity ``alpha`` over ``background``: what the screen shows."""
    a = colour[3] * alpha
    return tuple(a * c + (1 - a) * b for c, b in zip(colour[:3], background[:3], strict=True))


def colour_scale(scale) -> list[tuple[float, str]]:
    if isinstance(scale, str):
        return [(float(p), c) for p, c in plotly.colors.get_colorscale(scale)]
    return [(float(p), c) for p, c in scale]


def scale_samples(scale) -> list:
    """A colour scale's stops and the midpoints between them (a discrete scale repeats a
    position: the midpoint is then its colour)."""
    stops = [(p, rgba(c)) for p, c in colour_scale(scale)]
    mids = [tuple((a + b) / 2 for a, b in zip(c0, c1, strict=True))
            for (_, c0), (_, c1) in zip(stops, stops[1:], strict=False)]
    return [c for _, c in stops] + mids


def scale_ends(holder: dict) -> tuple:
    """A trace's (low, high) colours: what its smallest and largest values are drawn in."""
    stops = colour_scale(holder["colorscale"])
    low, high = rgba(stops[0][1]), rgba(stops[-1][1])
    return (high, low) if holder.get("reversescale") else (low, high)


def page_colours(fig: dict) -> list:
    """Every colour a plotly figure draws (traces' markers, lines, fills and colour scales,
    shapes, annotations' arrows), as shown over its plot background."""
    background = rgba(fig["layout"]["plot_bgcolor"])
    out: list = []

    def add(value, alpha: float = 1.0) -> None:
        for v in value if isinstance(value, list | tuple) else [value]:
            colour = rgba(v)
            if colour is not None and colour[3] * alpha > 0:
                out.append(shown(colour, alpha, background))

    for trace in fig["data"]:
        alpha = trace.get("opacity", 1.0)
        mode = trace.get("mode", "lines+markers")
        marker, line = trace.get("marker") or {}, trace.get("line") or {}
        if "markers" in mode:
            add(marker.get("color"), alpha * marker.get("opacity", 1.0))
            add((marker.get("line") or {}).get("color"), alpha)
        if "lines" in mode and line.get("width", 1) > 0:
            add(line.get("color"), alpha)
        add(trace.get("fillcolor"), alpha)
        for holder in (trace, marker):
            if holder.get("colorscale"):
                add(["rgba({},{},{},{})".format(*(255 * c for c in s[:3]), s[3])
                     for s in scale_samples(holder["colorscale"])], alpha)
    for shape in fig["layout"].get("shapes", []):
        add((shape.get("line") or {}).get("color"), shape.get("opacity", 1.0))
        add(shape.get("fillcolor"), shape.get("opacity", 1.0))
    add(page_arrows(fig))
    return out


def page_arrows(fig: dict) -> list[str]:
    """The colours of a plotly figure's annotation arrows (plotly's default: #444)."""
    return [a.get("arrowcolor", "#444") for a in fig["layout"].get("annotations", [])
            if a.get("showarrow", True) is not False]


def slide_colours(fig: Figure) -> tuple[list, list]:
    """Every colour a slide's picture draws, as shown over its axes' background, and the
    colours of its arrows."""
    out, arrows = [], []
    for ax in fig.axes:
        background = to_rgba(ax.get_facecolor())

        def add(colours, background=background) -> None:
            for c in np.atleast_2d(np.asarray(colours, dtype=np.float64)):
                if c.size == 4 and c[3] > 0:
                    out.append(shown(tuple(c), 1.0, background))

        for line in ax.get_lines():
            add(to_rgba(line.get_color(), line.get_alpha()))
            add(to_rgba(line.get_markerfacecolor(), line.get_alpha()))
        for coll in ax.collections:
            if coll.get_array() is not None:
                add(coll.to_rgba(np.ravel(coll.get_array())))
            add(coll.get_facecolors())
            add(coll.get_edgecolors())
        for patch in ax.patches:
            add(patch.get_facecolor())
        for image in ax.get_images():
            add(image.cmap(np.linspace(0, 1, 11)))
        for child in ax.get_children():
            arrow = getattr(child, "arrow_patch", None) or (
                child if isinstance(child, FancyArrowPatch) else None)
            if arrow is not None:
                arrows.append(arrow.get_edgecolor())
                add(arrow.get_edgecolor())
    return out, arrows


def luminance(rgb) -> float:
    """WCAG relative luminance."""
    def lin(c):
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b

