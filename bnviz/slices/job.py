"""The /slice page's computation as a job (``slice``): one or two networks a job kept (BN and
no BN), cut on the same plane through three of its data set's test images, BN in eval or train
mode with K mini-batches, every layer kept for the page to draw (:func:`load_slices`), and
the region density against the distance to the images over the whole default window
(estimated from boundary crossings: the exact partition of that window holds millions of
regions).

The parameters are checked by the one parameter layer (:class:`bnviz.params.slice.
SlicePageParams`, the page's :class:`~bnviz.params.slice.SliceSetup`) and the cost by the
region estimate of the first network, before the job is queued; the engine's own cap stops
the rest.  The networks are opened and cut by the route ``bnviz slice`` takes too
(:func:`bnviz.slices.setup.slice_networks`); what is kept of them is this module's.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from bnviz.params.slice import SlicePageParams
from bnviz.records.results import load_result
from bnviz.records.types import DistInfo, JobContext, JobType, ParamError, validate_params

if TYPE_CHECKING:
    from bnviz.slices.engine import Slice
    from bnviz.slices.plane import Plane

__all__ = ["SLICE_JOB", "load_slices", "slice_arrays"]

#: The share of a job's progress its cuts take (the region density takes the rest).
_CUTS = 0.9


def check_slice_page(raw: dict) -> dict:
    """The page's parameters (ParamError, one line) and the first network's estimated regions
    against the cap, before anything is queued."""
    params = validate_params(SlicePageParams, raw, "slice")
    try:
        from bnviz.slices.setup import check_slice_cost, prepare_slice

        check_slice_cost(prepare_slice(params))
    except ValueError as exc:
        raise ParamError(str(exc).splitlines()[0]) from None
    return dataclasses.asdict(params)


def run_slice_job(params: dict, ctx: JobContext, dist: DistInfo) -> dict:
    from bnviz.slices.estimate import density_by_distance
    from bnviz.slices.setup import slice_networks

    cut = slice_networks(validate_params(SlicePageParams, params, "slice"), ctx.device,
                         lambda f: ctx.progress(_CUTS * f))
    prepared = cut.prepared
    plane, nets = prepared.plane, prepared.nets
    arrays = slice_arrays(prepared.arms, [r.slices for r in cut.results],
                          [r.disagreement for r in cut.results], plane, prepared.labels,
                          prepared.images.test[list(prepared.through)])
    seconds, counts = 0.0, []
    for a, (net, result) in enumerate(zip(nets, cut.results, strict=True)):
        arrays[f"a{a}_distance"], arrays[f"a{a}_density"] = density_by_distance(
            net, plane, plane.default_window(), result.stats[0], ctx.device)
        ctx.progress(_CUTS + (1 - _CUTS) * (a + 1) / len(nets))
        seconds += sum(s.seconds for s in result.slices)
        counts.append(result.slices[0].counts)
    ctx.save_result(lambda path: np.savez_compressed(path, **arrays))
    ctx.progress(1.0)
    fixed = [arm for arm, net in zip(prepared.arms, nets, strict=True)
             if any(op.attrs.get("fixed") for op in net.bn_ops)]
    return {"seconds": round(seconds, 3), "regions": counts,
            "frozen": fixed if params["bn"] == "train" else []}


def slice_arrays(arms: list[str], slices: list[list[Slice]],
                 disagreement: list[float | None], plane: Plane, labels: list[int] | None,
                 images: np.ndarray) -> dict[str, np.ndarray]:
    """What the /slice page draws of one or more networks' slices on one plane (``slices``:
    each network's, one a mini-batch): every layer of the first mini-batch (CSR polygons,
    packed codes, parents, facets), each mini-batch's decision boundary, the decision cells,
    the plane and the three images. A slice job keeps these (:func:`load_slices`); the map of
    a slice job builds them for the window it re-cuts (:mod:`bnviz.slices.slice_map`)."""
    arrays: dict[str, np.ndarray] = {}
    for a, each in enumerate(slices):
        first = each[0]
        for k, lay in enumerate(first.layers):
            p = f"a{a}_l{k}_"
            arrays |= {p + "ptr": lay.regions.ptr, p + "vertices": lay.regions.vertices,
                       p + "codes": lay.regions.packed_codes, p + "parents": lay.parents,
                       p + "facets": lay.facets}
        for b, s in enumerate(each):
            arrays[f"a{a}_boundary{b}"] = s.decision_boundary
        arrays |= {f"a{a}_cells_ptr": first.predicted.ptr,
                   f"a{a}_cells_vertices": first.predicted.vertices,
                   f"a{a}_cells_class": first.predicted_class,
                   f"a{a}_names": np.array([lay.name for lay in first.layers]),
                   f"a{a}_units": np.array([lay.regions.n_units for lay in first.layers]),
                   f"a{a}_disagreement": np.array(np.nan if disagreement[a] is None
                                                  else disagreement[a])}
    return arrays | {"arms": np.array(arms), "window": np.array(slices[0][0].window),
                     "anchors": plane.anchors, "origin": plane.origin, "u": plane.u,
                     "v": plane.v, "labels": np.array(labels),
                     "images": images}


SLICE_JOB = JobType("slice", check_slice_page, run_slice_job, result=True)


def load_slices(job_id: str) -> dict[str, np.ndarray]:
    """A slice job's arrays (OSError when gone; ValueError for what is not a job id)."""
    return load_result(job_id)
