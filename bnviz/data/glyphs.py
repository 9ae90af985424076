"""``glyphs``: the hardest image classification task bnviz can make on any machine, offline.

Issue 29 asks for smart initialisation on data harder than the 8x8 digits, without
downloads, and not synthetic noise that favours one arm. ``glyphs`` is character
recognition in the style of SVHN and notMNIST: the 10 digits and 26 capital letters (36
classes), rendered with the TrueType fonts that matplotlib ships (so the same files on every
machine with the pinned lock), at 32x32 in colour, each with a random

* font size (scale 0.55-0.95 of the image), rotation (+-20 degrees) and shift (+-4 px),
* foreground and background colour (luminance contrast at least 0.25; either may be the
  lighter one), and a background gradient,
* distractor: with probability 1/2 a stroke of a third colour across the image (SVHN's
  neighbouring digits),
* pixel noise (Gaussian, std 4 of 255).

Why this is hard, and fair: the test images are drawn in 5 fonts the training images never
use (one of each family: a sans oblique, a mono bold, a serif bold italic, STIX italic,
Computer Modern sans), so a network must generalise across typefaces, not memorise them; some
pairs are genuinely ambiguous in some fonts (O and 0, I and 1, S and 5), as in real street
numbers. Nothing about it favours centred or uncentred hyperplanes: every arm sees the same
images. Rendering is one Pillow call per image (about 5 s for all 14,400, once per process;
kept in memory); the colours, gradients and noise are vectorised over the whole set.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

__all__ = ["GLYPH_CLASSES", "GLYPH_SIZE", "TEST_FONTS", "TRAIN_FONTS", "glyph_arrays"]

GLYPH_CLASSES: tuple[str, ...] = tuple("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
GLYPH_SIZE = 32
TRAIN_PER_CLASS, TEST_PER_CLASS = 300, 100
#: Fonts of the training images and (disjoint) of the test images: matplotlib's own files.
TRAIN_FONTS: tuple[str, ...] = (
    "DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-BoldOblique.ttf",
    "DejaVuSansMono.ttf", "DejaVuSansMono-Oblique.ttf", "DejaVuSansMono-BoldOblique.ttf",
    "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSerif-Italic.ttf",
    "STIXGeneral.ttf", "STIXGeneralBol.ttf", "STIXGeneralBolIta.ttf",
    "cmr10.ttf", "cmb10.ttf", "cmti10.ttf", "cmtt10.ttf", "cmmi10.ttf")
TEST_FONTS: tuple[str, ...] = ("DejaVuSans-Oblique.ttf", "DejaVuSansMono-Bold.ttf",
                               "DejaVuSerif-BoldItalic.ttf", "STIXGeneralItalic.ttf",
                               "cmss10.ttf")
_RENDER = 2 * GLYPH_SIZE  # drawn at twice the size, then reduced (anti-aliasing)


def _font_dir() -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def _masks(rng: np.random.Generator, labels: np.ndarray, fonts: tuple[str, ...]) -> np.ndarray:
    """(N, S, S) float coverage in [0, 1] of each label's character, in a random font of
    ``fonts``, size, rotation and shift."""
    from PIL import Image, ImageDraw, ImageFont

    n = len(labels)
    font_of = rng.integers(0, len(fonts), n)
    scale = rng.uniform(0.55, 0.95, n)
    angle = rng.uniform(-20.0, 20.0, n)
    shift = rng.uniform(-4.0, 4.0, (n, 2)) * 2  # in render pixels
    cache: dict[tuple[int, int], ImageFont.FreeTypeFont] = {}
    out = np.empty((n, GLYPH_SIZE, GLYPH_SIZE), np.float32)
    for i in range(n):  # one Pillow call per image: rendering has no vectorised form
        px = int(round(scale[i] * _RENDER))
        key = (int(font_of[i]), px)
        if key not in cache:
            cache[key] = ImageFont.truetype(str(_font_dir() / fonts[key[0]]), px)
        img = Image.new("L", (_RENDER, _RENDER), 0)
        ImageDraw.Draw(img).text((_RENDER / 2 + shift[i, 0], _RENDER / 2 + shift[i, 1]),
                                 GLYPH_CLASSES[labels[i]], fill=255, font=cache[key],
                                 anchor="mm")
        img = img.rotate(float(angle[i]), resample=Image.BICUBIC)
        out[i] = np.asarray(img.resize((GLYPH_SIZE, GLYPH_SIZE), Image.BOX), np.float32)
    return out / 255.0


def _strokes(rng: np.random.Generator, n: int) -> np.ndarray:
    """(N, S, S) coverage of a straight stroke across each image (zero for half of them)."""
    s = GLYPH_SIZE
    yy, xx = np.mgrid[0:s, 0:s].astype(np.float32) + 0.5
    theta = rng.uniform(0, np.pi, n)[:, None, None]
    offset = rng.uniform(-s / 2, s / 2, n)[:, None, None]
    width = rng.uniform(1.0, 3.0, n)[:, None, None]
    dist = np.abs((xx - s / 2) * np.cos(theta) + (yy - s / 2) * np.sin(theta) - offset)
    on = (rng.random(n) < 0.5)[:, None, None]
    return np.clip(width / 2 + 0.5 - dist, 0.0, 1.0) * on


def _colours(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Foreground and background RGB in [0, 1], luminance apart by at least 0.25."""
    lum = np.array([0.299, 0.587, 0.114], np.float32)
    fg = rng.random((n, 3), dtype=np.float32)
    bg = rng.random((n, 3), dtype=np.float32)
    for _ in range(20):  # redraw the few pairs too close (vectorised over all of them)
        close = np.abs((fg - bg) @ lum) < 0.25
        if not close.any():
            break
        bg[close] = rng.random((int(close.sum()), 3), dtype=np.float32)
    close = np.abs((fg - bg) @ lum) < 0.25
    bg[close] = np.where(fg[close] @ lum > 0.5, 0.0, 1.0)[:, None]
    return fg, bg


#: Images composed at once: the float32 intermediates of a chunk stay near 60 MB (the whole
#: set at once held about 1 GB for a moment, in every job process that loads it).
_CHUNK = 2048


def _images(rng: np.random.Generator, labels: np.ndarray, fonts: tuple[str, ...]) -> np.ndarray:
    """uint8 (N, 3, S, S) images of ``labels``, composed a chunk at a time."""
    return np.concatenate([_chunk(rng, labels[i:i + _CHUNK], fonts)
                           for i in range(0, len(labels), _CHUNK)])


def _chunk(rng: np.random.Generator, labels: np.ndarray, fonts: tuple[str, ...]) -> np.ndarray:
    n = len(labels)
    glyph = _masks(rng, labels, fonts)[:, None]
    stroke = _strokes(rng, n)[:, None]
    fg, bg = _colours(rng, n)
    third = rng.random((n, 3), dtype=np.float32)
    s = GLYPH_SIZE
    ramp = np.linspace(-0.5, 0.5, s, dtype=np.float32)
    tilt = rng.uniform(-0.15, 0.15, (n, 2)).astype(np.float32)
    gradient = tilt[:, 0, None, None] * ramp[None, :, None] + tilt[:, 1, None, None] * ramp
    back = bg[:, :, None, None] + gradient[:, None]
    img = back + stroke * (third[:, :, None, None] - back)
    img = img + glyph * (fg[:, :, None, None] - img)
    img = img + rng.normal(0.0, 4 / 255, img.shape).astype(np.float32)
    return np.clip(np.rint(img * 255), 0, 255).astype(np.uint8)


@functools.cache
def glyph_arrays(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test): uint8 (N, 3, 32, 32) images, int64 labels,
    balanced (300 training and 100 test images a class), the same for a seed on every
    machine with the same Pillow and matplotlib."""
    rng = np.random.default_rng(seed)
    k = len(GLYPH_CLASSES)
    y_train = rng.permutation(np.repeat(np.arange(k), TRAIN_PER_CLASS))
    y_test = rng.permutation(np.repeat(np.arange(k), TEST_PER_CLASS))
    x_train = _images(rng, y_train, TRAIN_FONTS)
    x_test = _images(rng, y_test, TEST_FONTS)
    return x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64)
