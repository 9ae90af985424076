"""The offline hard image task ``glyphs`` (bnviz.data.glyphs): what it promises, checked.

Balanced classes in the shapes the job caps assume, reproducible from its seed, test fonts
the training images never use, every font able to draw every class, and hard but learnable:
a one-nearest-neighbour classifier on the pixels (an independent, trivial learner) beats chance
by far and stays far from perfect."""

from __future__ import annotations

import numpy as np
import pytest

from bnviz.caps import IMAGE_SHAPES, TEST_SIZES, TRAIN_SIZES
from bnviz.data import glyphs
from bnviz.data.imagedata import check_available, load_image_data


@pytest.fixture(scope="module")
def data():
    return load_image_data("glyphs")


def test_shapes_balance_and_the_caps_agree(data):
    c, side, k = IMAGE_SHAPES["glyphs"]
    assert data.x_train.shape == (TRAIN_SIZES["glyphs"], c, side, side)
    assert data.x_test.shape == (TEST_SIZES["glyphs"], c, side, side)
    assert data.x_train.dtype == np.uint8 and data.y_train.dtype == np.int64
    assert data.num_classes == k == len(glyphs.GLYPH_CLASSES)
    assert set(np.bincount(data.y_train)) == {glyphs.TRAIN_PER_CLASS}
    assert set(np.bincount(data.y_test)) == {glyphs.TEST_PER_CLASS}
    assert check_available("glyphs") == "glyphs"  # nothing to download


def test_same_seed_same_images_other_seed_others():
    rng = [np.random.default_rng(s) for s in (3, 3, 4)]
    labels = np.arange(36)
    a, b, c = (glyphs._images(r, labels, glyphs.TRAIN_FONTS) for r in rng)
    np.testing.assert_array_equal(a, b)
    assert np.mean(a != c) > 0.5


def test_test_fonts_are_held_out_and_every_font_draws_every_class():
    assert not set(glyphs.TRAIN_FONTS) & set(glyphs.TEST_FONTS)
    for font in glyphs.TRAIN_FONTS + glyphs.TEST_FONTS:
        masks = glyphs._masks(np.random.default_rng(0), np.arange(36), (font,))
        ink = masks.reshape(36, -1).sum(1)
        assert np.all(ink > 5), font  # no empty glyph
        flat = masks.reshape(36, -1)
        # no two classes drawn alike (a missing glyph renders as one shared box)
        same = [(i, j) for i in range(36) for j in range(i) if np.abs(flat[i] - flat[j]).max()
                < 0.05]
        assert not same, (font, same)


def test_hard_but_learnable_for_an_independent_trivial_learner(data):
    def grey(x):
        g = x.astype(np.float64).mean(1).reshape(len(x), -1)
        g -= g.mean(1, keepdims=True)  # colour and brightness do not tell the class
        return g / (g.std(1, keepdims=True) + 1e-9)

    xtr, xte = grey(data.x_train), grey(data.x_test)
    # one nearest neighbour by |correlation| (polarity, light on dark or dark on light, is
    # random: either sign matches), on the first 1000 test images
    scores = np.abs(xte[:1000] @ xtr.T)
    accuracy = float(np.mean(data.y_train[scores.argmax(1)] == data.y_test[:1000]))
    print(f"1-nearest neighbour on glyphs: {100 * accuracy:.1f} % (chance 2.8 %)")
    assert 0.08 < accuracy < 0.8
