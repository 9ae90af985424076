"""One route to the exact partition (issue 43): ``bnviz partition`` is a thin parser over the
explorer page's model, and the command, the page and Figure 9 all compute through
:func:`bnviz.views.explorer.partition_of` with the same names and defaults."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fuzzing import strict_json

from bnviz.cli import build_parser, main
from bnviz.params import PartitionParams
from bnviz.views import explorer

#: The model's fields that are no flag of the command (files set them; a page's view).
NOT_FLAGS = {"widths", "data_file", "layer"}


def _partition_parser():
    parser = build_parser("partition")
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["partition"]


def test_each_field_is_a_flag_of_the_same_name_and_default():
    flags = {a.dest: a for a in _partition_parser()._actions if a.dest != "help"}
    for field in dataclasses.fields(PartitionParams):
        if field.name in NOT_FLAGS:
            assert field.name not in flags
            continue
        action = flags[field.name]
        assert action.option_strings == ["--" + field.name.replace("_", "-")]
        assert action.default == field.default, field.name
    # and nothing the model lacks, but the files and the output
    assert set(flags) - {f.name for f in dataclasses.fields(PartitionParams)} == {
        "weights_file", "data", "format", "geometry", "out", "device"}


def test_the_command_and_the_page_compute_through_one_function(monkeypatch, capsysbinary):
    calls = []
    real = explorer.partition_of

    def recorded(settings, *args, **kwargs):
        calls.append(settings)
        return real(settings, *args, **kwargs)

    monkeypatch.setattr(explorer, "partition_of", recorded)
    argv = ["--depth", "2", "--width", "5", "--weight-seed", "3", "--data-seed", "4",
            "--n-points", "60", "--batch-size", "20", "--batch-seed", "2", "--mu-t", "0.5",
            "--sigma-s", "2", "--scope", "layer", "--target-layer", "1", "--shift-x", "0.5"]
    assert main(["partition", *argv, "--device", "cpu"]) == 0
    doc = strict_json(capsysbinary.readouterr().out)
    settings = PartitionParams(depth=2, width=5, weight_seed=3, data_seed=4, n_points=60,
                               batch_size=20, batch_seed=2, mu_t=0.5, sigma_s=2.0,
                               scope="layer", target_layer=1, shift_x=0.5, layer=2)
    page = explorer.explore(settings, device="cpu")
    assert len(calls) == 2
    assert dataclasses.replace(calls[0], layer=2) == calls[1] == settings
    # the same numbers: every layer's mu and sigma, and the regions
    for layer, stats in zip(doc["layers"], page.stats, strict=True):
        for name in ("mu", "sigma"):
            values = getattr(stats, name)
            np.testing.assert_allclose([layer[name][k] for k in ("min", "mean", "max")],
                                       [values.min(), values.mean(), values.max()],
                                       rtol=1e-12, atol=1e-14)
    assert doc["regions"] == len(page.partition.layers[-1].regions)


@pytest.mark.parametrize("old", [["--seed", "1"], ["--mu-scale", "0.5"], ["--sigma-scale", "2"],
                                 ["--weights", "net.npz"], ["--n", "40"], ["--n-poi", "40"]])
def test_the_old_names_are_gone(old, capsysbinary):
    """One name per setting: the command's former names are refused in one line."""
    assert main(["partition", *old]) == 2
    err = capsysbinary.readouterr().err.decode()
    assert err.count("\n") == 1 and ("unrecognized arguments" in err or "invalid choice" in err)
