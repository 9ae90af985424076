"""The /slice page's computation as a job (``slice``): one or two networks a job kept (BN and
no BN), cut on the same plane through three of its data set's test images, BN in eval or train
mode with K mini-batches, every layer kept for the page to draw (:func:`load_slices`), and
the region density against the distance to the images over the whole default window
(estimated from boundary crossings: the exact partition of that window holds millions of
regions).

The parameters are checked by the one parameter layer (:class:`bnviz.params.slice.
SlicePageParams`) and the cost by the region estimate of the first network, before the job is
queued; the engine's own cap stops the rest.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from bnviz.params.slice import SlicePageParams, SliceParams
from bnviz.records.results import load_result
from bnviz.records.types import DistInfo, JobContext, JobType, ParamError, validate_params

__all__ = ["SLICE_JOB", "load_slices"]


def _setup(params: dict) -> tuple[list, Any, Any, SliceParams]:
    """The networks, the images, the plane and the slice settings of a page job."""
    from bnviz.slices.plane import plane_through_images
    from bnviz.slices.sources import job_network, load_images, open_network

    nets, data = [], params["data"]
    if params["job"].startswith("up-"):  # an uploaded network, on the data set chosen
        from bnviz.slices.uploads import open_upload

        nets.append(("upload", open_upload(params["job"])))
    else:
        for arm in params["arms"].split(","):
            path, data = job_network(params["job"], arm, params["run"])
            nets.append((arm, open_network(weights=path)))
    images = load_images(data, nets[0][1].input_shape)
    idx = [int(v) for v in params["images"].split(",")]
    if max(idx) >= len(images.test):
        raise ValueError(f"images: {images.name} has {len(images.test)} test images")
    plane = plane_through_images(images.test[idx])
    settings = SliceParams(**{f.name: params[f.name] for f in dataclasses.fields(SliceParams)})
    return nets, images, plane, settings


def check_slice_page(raw: dict) -> dict:
    """The page's parameters (ParamError, one line) and the first network's estimated regions
    against the cap, before anything is queued."""
    params = dataclasses.asdict(validate_params(SlicePageParams, raw, "slice"))
    try:
        from bnviz.params.slice import check_slice_regions
        from bnviz.slices.estimate import estimate_regions

        nets, images, plane, settings = _setup(params)
        window = ((-settings.extent, settings.extent) * 2 if settings.extent > 0
                  else plane.default_window())
        window = (window[0], window[1], window[2], window[3])
        check_slice_regions(estimate_regions(nets[0][1], plane, window), settings)
    except ValueError as exc:
        raise ParamError(str(exc).splitlines()[0]) from None
    return params


def run_slice_job(params: dict, ctx: JobContext, dist: DistInfo) -> dict:
    from bnviz.slices.estimate import density_by_distance
    from bnviz.slices.view import run_slice

    nets, images, plane, settings = _setup(params)
    arrays: dict[str, np.ndarray] = {}
    seconds, counts = 0.0, []
    for a, (_arm, net) in enumerate(nets):
        ctx.progress(a / len(nets))
        result = run_slice(net, plane, settings, images.train, ctx.device,
                           lambda f, a=a: ctx.progress((a + 0.9 * f) / len(nets)))
        first = result.slices[0]
        arrays[f"a{a}_distance"], arrays[f"a{a}_density"] = density_by_distance(
            net, plane, plane.default_window(), result.stats[0], ctx.device)
        for k, lay in enumerate(first.layers):
            p = f"a{a}_l{k}_"
            arrays |= {p + "ptr": lay.regions.ptr, p + "vertices": lay.regions.vertices,
                       p + "codes": lay.regions.packed_codes, p + "parents": lay.parents,
                       p + "facets": lay.facets}
        for b, s in enumerate(result.slices):
            arrays[f"a{a}_boundary{b}"] = s.decision_boundary
        arrays |= {f"a{a}_cells_ptr": first.predicted.ptr,
                   f"a{a}_cells_vertices": first.predicted.vertices,
                   f"a{a}_cells_class": first.predicted_class,
                   f"a{a}_names": np.array([lay.name for lay in first.layers]),
                   f"a{a}_units": np.array([lay.regions.n_units for lay in first.layers]),
                   f"a{a}_disagreement": np.array(np.nan if result.disagreement is None
                                                  else result.disagreement)}
        seconds += sum(s.seconds for s in result.slices)
        counts.append(first.counts)
    idx = [int(v) for v in params["images"].split(",")]
    arrays |= {"arms": np.array([arm for arm, _ in nets]), "window": np.array(first.window),
               "anchors": plane.anchors, "origin": plane.origin, "u": plane.u, "v": plane.v,
               "labels": np.array([-1 if images.labels is None else int(images.labels[i])
                                   for i in idx]),
               "images": images.test[idx]}
    ctx.save_result(lambda path: np.savez_compressed(path, **arrays))
    ctx.progress(1.0)
    fixed = [arm for arm, net in nets if any(op.attrs.get("fixed") for op in net.bn_ops)]
    return {"seconds": round(seconds, 3), "regions": counts,
            "frozen": fixed if params["bn"] == "train" else []}


SLICE_JOB = JobType("slice", check_slice_page, run_slice_job, result=True)


def load_slices(job_id: str) -> dict[str, np.ndarray]:
    """A slice job's arrays (OSError when gone; ValueError for what is not a job id)."""
    return load_result(job_id)
