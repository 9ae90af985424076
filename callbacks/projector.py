"""Figures set for a projector (the lecture view, the explorer's projector mode): type of at
least 18 px, long titles on two lines, the legend beside the plot (never over tick labels or
data), x tick labels off the corner where the y ones are, colour bars under the legend, and a
light or a dark theme. A restyle of any page's figure dict: no computation.
"""

from __future__ import annotations

import copy
from typing import Any

from bnviz.views.style import BLUE, DARK_GRAY, LIGHT_GRAY, VERMILLION
from bnviz.web.callbacks.plotting import Figure

__all__ = ["FONT_PX", "THEME_COLOURS", "projected", "wrap_title"]

#: The dark theme's blue and vermillion: 6.3:1 and 6.7:1 on its plot background (#1b1b1b).
DARK_THEME_BLUE, DARK_THEME_VERMILLION = "#4fa3e0", "#ff7a3d"
#: The smallest type on a projector at 1280x720 (issue 16).
FONT_PX = 18
#: Per theme: page background, plot background, text, axis lines; and the colours that
#: would vanish on the background, swapped for ones that show.
THEME_COLOURS: dict[str, dict[str, Any]] = {
    "light": {"paper": "#ffffff", "plot": "#ffffff", "text": "#000000", "line": "#444444",
              "swap": {}},
    "dark": {"paper": "#111111", "plot": "#1b1b1b", "text": "#f2f2f2", "line": "#bbbbbb",
             "swap": {"#000000": "#f2f2f2", "black": "#f2f2f2", "#000": "#f2f2f2",
                      "white": "#111111", "#ffffff": "#111111",
                      DARK_GRAY.lower(): LIGHT_GRAY,
                      # lines and markers at >= 4.5:1 on the dark plot (issue 31): the
                      # palette's blue (3.3:1) and vermillion (4.45:1), lightened
                      BLUE.lower(): DARK_THEME_BLUE, VERMILLION.lower(): DARK_THEME_VERMILLION}},
}


_WHITE = ("white", "#ffffff", "#fff")


def _swap(value: Any, swap: dict) -> Any:
    return swap.get(value.lower(), value) if isinstance(value, str) else value


def projected(fig: Figure, theme: str = "light", title_chars: int = 70) -> Figure:
    """``fig`` set for a projector: every font at least FONT_PX, a title longer than
    ``title_chars`` on two lines, the legend to the right of the plot (outside it: never over
    tick labels or data), the theme's colours (in the dark theme black lines and markers turn
    light); an animation's frames likewise. Returns a new dict."""
    colours = THEME_COLOURS.get(theme, THEME_COLOURS["light"])
    swap = colours["swap"]
    out = {"data": [], "layout": copy.deepcopy(fig.get("layout", {}))}
    # one colour bar goes to the margin below the legend; several (one a panel, Figure 9)
    # stay where the figure put them, beside their panels (stacked they would overprint)
    several_bars = sum(isinstance(h, dict) and isinstance(h.get("colorbar"), dict)
                       for trace in fig.get("data", [])
                       for h in (trace, trace.get("marker"))) > 1
    for trace in fig.get("data", []):
        t = dict(trace)
        for part in ("marker", "line"):
            if isinstance(t.get(part), dict):
                # white lines are drawn over colour fills (contours): they stay white
                keep = part == "line" and str(t[part].get("color")).lower() in _WHITE
                t[part] = {**t[part], "color": t[part].get("color") if keep
                           else _swap(t[part].get("color"), swap)}
                if isinstance(t[part].get("line"), dict):
                    t[part]["line"] = {**t[part]["line"],
                                       "color": _swap(t[part]["line"].get("color"), swap)}
        # a white-to-black scale (Figure 3's facet counts) runs black-to-white on the dark
        # theme: few facets dark like the page, many light (white boxes with black bars
        # before, issue 31)
        scale = t.get("colorscale")
        if swap and isinstance(scale, list) and scale and str(scale[0][1]).lower() in _WHITE:
            t["reversescale"] = not t.get("reversescale", False)
        # colour bars in the lower part of the right margin: the legend takes the upper
        for holder in (t, t.get("marker")):
            if isinstance(holder, dict) and isinstance(holder.get("colorbar"), dict):
                place = {} if several_bars else {"x": 1.02, "xanchor": "left", "y": 0,
                                                 "yanchor": "bottom", "len": 0.55}
                holder["colorbar"] = {**holder["colorbar"], "tickfont": {"size": FONT_PX},
                                      **place}
        out["data"].append(t)
    lay = out["layout"]
    lay["font"] = {**lay.get("font", {}), "size": FONT_PX, "color": colours["text"]}
    lay["paper_bgcolor"] = colours["paper"]
    lay["plot_bgcolor"] = colours["plot"]
    margin = lay.get("margin", {})
    lay["margin"] = {**margin, "t": max(margin.get("t", 0), 70), "r": max(margin.get("r", 0),
                                                                         20),
                     "l": max(margin.get("l", 0), 40), "b": max(margin.get("b", 0), 40)}
    title = lay.get("title")
    if isinstance(title, dict):
        text = wrap_title(str(title.get("text") or ""), title_chars)
        # above the plot area, the top margin grown to fit it (one or two lines)
        lay["title"] = {**title, "text": text, "font": {"size": FONT_PX + 2}, "y": 1,
                        "yref": "paper", "yanchor": "bottom", "automargin": True,
                        # clear of the top tick label; plotly anchors a title's first line,
                        # so the lines below it need their own room
                        "pad": {"b": 18 + 26 * text.count("<br>")}}
    lay["legend"] = {"orientation": "v", "x": 1.02, "xanchor": "left", "y": 1,
                     "yanchor": "top", "font": {"size": FONT_PX}, "bgcolor": "rgba(0,0,0,0)"}
    for key, value in list(lay.items()):
        if key.startswith(("xaxis", "yaxis")) and isinstance(value, dict):
            lay[key] = {**value, "linecolor": colours["line"], "gridcolor": "rgba(128,128,128,"
                        "0.3)", "tickfont": {"size": FONT_PX}, "automargin": True}
            if key.startswith("xaxis"):  # x and y labels at a corner must not touch
                lay[key]["ticklabelstandoff"] = 10
            if value.get("type") == "log":  # decades only: no small minor-digit labels
                lay[key]["dtick"] = 1
            if isinstance(value.get("title"), dict):
                lay[key]["title"] = {**value["title"], "font": {"size": FONT_PX}}
    lay["annotations"] = [{**a, "font": {**a.get("font", {}), "size": max(
        FONT_PX, a.get("font", {}).get("size", 0)), "color": colours["text"]}}
        for a in lay.get("annotations", [])]
    lay["shapes"] = [{**sh, "line": {**sh.get("line", {}),
                                     "color": _swap(sh.get("line", {}).get("color"), swap)}}
                     if isinstance(sh, dict) else sh for sh in lay.get("shapes", [])]
    if fig.get("frames"):  # an animation: each frame's traces and layout keys the same way
        out["frames"] = []
        for frame in fig["frames"]:
            keys = frame.get("layout", {})
            p = projected({"data": frame.get("data", []),
                           "layout": {**fig.get("layout", {}), **keys}}, theme, title_chars)
            out["frames"].append({**frame, "data": p["data"],
                                  "layout": {k: p["layout"][k] for k in keys}})
    return out


def wrap_title(text: str, chars: int) -> str:
    """``text`` on lines of at most about ``chars`` characters (HTML breaks), broken after a
    comma or at a space; a title with breaks of its own is left as it is."""
    if len(text) <= chars or "<br>" in text:
        return text
    lines, rest = [], text
    while len(rest) > chars:
        cut = rest.rfind(", ", 0, chars)
        cut = cut + 1 if cut > chars // 3 else rest.rfind(" ", 0, chars)
        if cut <= 0:
            break
        lines.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    return "<br>".join([*lines, rest])
