"""The jobs page's figures: curves of the image experiments (BN paper Figures 4, 5, 10 and
Santurkar et al.'s landscape), one job or several overlaid.

Job summaries in (:func:`bnviz.images.experiments.summarise`), figure dicts out.
"""

from __future__ import annotations

from bnviz.views.style import CATEGORICAL
from bnviz.web.callbacks.plotting import Figure, placeholder

__all__ = ["JOB_COLOURS", "NO_JOB", "NO_OVERLAY", "job_figure", "placeholder"]

#: What the job graph and the overlay say before there is anything to draw.
NO_JOB = "open a job above (or submit one on the left) to see its curves"
NO_OVERLAY = "choose jobs above to overlay their curves"

#: One colour per curve (an arm of a job), in order: the colour-blind-safe series colours.
JOB_COLOURS = CATEGORICAL


def _band(x: list, mean: list, std: list, colour: str, name: str, dash: str = "solid") -> list:
    """A mean curve with a +-1 std band (the spread over runs)."""
    upper = [m + s for m, s in zip(mean, std, strict=True)]
    lower = [m - s for m, s in zip(mean, std, strict=True)]
    return [
        {"type": "scatter", "x": list(x) + list(x)[::-1], "y": upper + lower[::-1],
         "fill": "toself", "fillcolor": colour, "opacity": 0.15, "line": {"width": 0},
         "hoverinfo": "skip", "showlegend": False, "legendgroup": name},
        {"type": "scatter", "mode": "lines+markers", "x": list(x), "y": mean, "name": name,
         "legendgroup": name, "line": {"color": colour, "dash": dash}}]


def job_figure(curves: list[tuple[str, str, dict]], title: str = "") -> Figure:
    """Curves of one or several jobs: ``(label, job type, summary)`` each (summary from
    :func:`bnviz.images.experiments.summarise`). Training jobs: test accuracy per epoch, mean +- std
    over runs, per arm. Concentration: units crossing the eps-ball vs eps, training images
    solid and Gaussian images dashed."""
    data: list[dict] = []
    concentration = bool(curves) and all(t == "concentration" for _, t, _ in curves)
    landscape = bool(curves) and all(t == "landscape" for _, t, _ in curves)
    if landscape:
        return _landscape_job_figure(curves, title)
    k = 0
    for label, job_type, summary in curves:
        for arm, values in (summary or {}).get("arms", {}).items():
            colour = JOB_COLOURS[k % len(JOB_COLOURS)]
            k += 1
            name = f"{label} {arm}".strip()
            if job_type == "concentration":
                for kind, dash in (("data", "solid"), ("gaussian", "dash")):
                    v = values.get(kind)
                    if v and v["eps"]:
                        data += _band(v["eps"], v["mean"], v["std"], colour,
                                      f"{name}, {kind} images", dash)
            elif values.get("epoch"):
                data += _band(values["epoch"], [100 * m for m in values["mean"]],
                              [100 * s for s in values["std"]], colour, name)
    if concentration:
        axes = {"xaxis": {"type": "log", "title": {"text": "ε (RMS change per pixel, in std)"}},
                "yaxis": {"title": {"text": "units whose sign changes in the ball"},
                          "rangemode": "tozero"}}
    else:
        axes = {"xaxis": {"title": {"text": "epoch"}, "dtick": 1},
                "yaxis": {"title": {"text": "test accuracy (%)"}}}
    return {"data": data, "layout": {
        "margin": {"l": 55, "r": 10, "t": 35, "b": 40}, "title": {"text": title,
                                                                  "font": {"size": 12}},
        "legend": {"font": {"size": 10}}, "uirevision": title, **axes}}



def _landscape_job_figure(curves: list[tuple[str, str, dict]], title: str) -> Figure:
    """Landscape jobs: the effective beta-smoothness per measured step (mean +- std over
    runs) per arm, and the test accuracy per epoch on a second axis pair."""
    data: list[dict] = []
    k = 0
    for label, _type, summary in curves:
        for arm, values in (summary or {}).get("arms", {}).items():
            colour = JOB_COLOURS[k % len(JOB_COLOURS)]
            k += 1
            land = values.get("landscape") or {}
            if land.get("step"):
                data += _band(land["step"], land["beta_eff"], land["beta_eff_std"], colour,
                              f"{label} {arm}: effective β".strip())
            if values.get("epoch"):
                data.append({"type": "scatter", "mode": "lines+markers",
                             "x": values["epoch"], "y": [100 * m for m in values["mean"]],
                             "xaxis": "x2", "yaxis": "y2", "line": {"color": colour},
                             "name": f"{label} {arm}: test accuracy".strip()})
    return {"data": data, "layout": {
        "margin": {"l": 55, "r": 10, "t": 35, "b": 40},
        "title": {"text": title, "font": {"size": 12}}, "legend": {"font": {"size": 10}},
        "uirevision": title,
        "xaxis": {"domain": [0, 0.62], "title": {"text": "step"}},
        "yaxis": {"type": "log", "title": {"text": "effective β-smoothness"}},
        "xaxis2": {"domain": [0.72, 1], "anchor": "y2", "title": {"text": "epoch"},
                   "dtick": 1},
        "yaxis2": {"anchor": "x2", "title": {"text": "test accuracy (%)"}}}}
