"""A succeeded smart-init job record whose tiny networks (ResNet9 of width 4 on the digits)
are kept as the image jobs keep them: what the slice tests cut without training anything."""

from __future__ import annotations

import torch

from bnviz.images.networks import build_model, calibrate_frozen
from bnviz.images.saved import save_network
from bnviz.records.results import network_path
from bnviz.records.store import open_store

#: Each kept arm and its network's mode: BN with frozen statistics, and no BN.
ARMS = (("bn_init", "frozen"), ("zero_bias", "zero_bias"))


def kept_job(arms: tuple[tuple[str, str], ...] = ARMS) -> str:
    """The job's id, in the current BNVIZ_HOME's store; one network a (arm, mode)."""
    store = open_store()
    job = store.create("smart-init", {"dataset": "digits", "arch": "resnet9", "width": 4})
    x = torch.randn(64, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    for arm, mode in arms:
        model = build_model("resnet9", 1, 10, 8, mode, width=4, seed=1)
        if mode == "frozen":
            calibrate_frozen(model, lambda: [x])
        path = network_path(job.id, f"{arm}-run0")
        path.parent.mkdir(parents=True, exist_ok=True)
        save_network(model, path, {"arch": "resnet9", "in_ch": 1, "classes": 10, "size": 8,
                                   "mode": mode, "affine": False, "width": 4})
    store.claim(job.id, 1)
    store.finish(job.id, "succeeded")
    return job.id
