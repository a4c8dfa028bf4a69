"""Charts: one Altair theme, and figures that draw offline with stable ids.

A :class:`Figure` wraps an Altair chart with the three things a reader citing
it needs (a stable name, a caption, a source line). In a notebook it shows
as a Vega-Lite chart, drawn by JupyterLab's own Vega; in the built book it
becomes a ``<figure>`` whose id is the figure's name and whose script calls
the ``vegaEmbed`` that the site serves itself (``book/_ext/napkin_site``), so the
page draws with the network off. Its spec is deterministic, so strict nbval
can compare it byte for byte.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

#: Output metadata key under which a figure's name, caption and source travel
#: with the notebook, so exporters can find every figure without re-running it.
METADATA_KEY = "napkin_figure"

PALETTE = {
    "ceiling": "#6b6459",
    "apple": "#2a78d6",
    "nvidia": "#3c9a3c",
    "amd": "#c0392b",
    "cpu": "#eb6834",
    "live": "#8e44ad",
    "prefill": "#2a78d6",
    "decode": "#eb6834",
}

#: Colours for a chart with many series of one kind (a line per chip): no two share a hue
#: family the way paired palettes' light and dark halves do, and their lightness varies, so
#: neighbours differ in grey too. Meant to go with :data:`SHAPES`, one each per series, since
#: no dozen colours stay apart in greyscale alone.
DISTINCT = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#332288", "#56b4e9",
            "#882255", "#999933", "#117733", "#aa4499", "#5f5f5f"]
#: Point shapes as distinct as Vega draws them, in the order :data:`DISTINCT` pairs them: the
#: built-in symbols, then a star, a hexagon and a pentagon as SVG paths on the unit square.
SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down",
          "M0,-1L0.24,-0.31L0.95,-0.31L0.38,0.12L0.59,0.81L0,0.38L-0.59,0.81L-0.38,0.12"
          "L-0.95,-0.31L-0.24,-0.31Z",
          "triangle-right", "M0,-1L0.87,-0.5L0.87,0.5L0,1L-0.87,0.5L-0.87,-0.5Z", "triangle-left",
          "M0,-1L0.95,-0.31L0.59,0.81L-0.59,0.81L-0.95,-0.31Z", "M-1,-1L1,-1L-1,1L1,1Z"]

#: The same charts on a dark background: the site draws them so in its dark mode, and
#: ``make figures`` exports a dark-slide variant with it. Merged over the light theme.
DARK_BACKGROUND = "#1d1f21"
DARK_CONFIG = {
    "background": DARK_BACKGROUND,
    "title": {"color": "#f2f0ec", "subtitleColor": "#c9c4bb"},
    "axis": {"labelColor": "#e6e3de", "titleColor": "#e6e3de", "gridColor": "#3a3d41",
             "domainColor": "#8a8378", "tickColor": "#8a8378"},
    "legend": {"labelColor": "#e6e3de", "titleColor": "#e6e3de"},
    "text": {"color": "#f2f0ec"},
    "view": {"stroke": None},
}

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


@alt.theme.register("napkin", enable=True)
def napkin_theme() -> alt.theme.ThemeConfig:
    """Quiet, legible defaults that survive a phone screen and a projector."""
    return {
        # room on the right for the last tick label, which Vega centres on the plot's edge
        "padding": {"left": 5, "top": 5, "right": 18, "bottom": 5},
        "config": {
            "font": FONT,
            "view": {"stroke": None, "continuousHeight": 320},
            # the first and last tick labels stay inside the plot (no clipping on a phone)
            "axisX": {"labelFlush": True},
            # labelSeparation: adjacent labels (a log axis's 1 and 2) never touch and read as 12
            "axis": {"labelFontSize": 12, "labelSeparation": 4, "titleFontSize": 12,
                     "gridColor": "#e6e3de", "domainColor": "#8a8378", "tickColor": "#8a8378"},
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "orient": "bottom",
                       "direction": "horizontal", "columns": 2, "labelLimit": 260},
            "title": {"fontSize": 15, "subtitleFontSize": 12, "anchor": "start",
                      "subtitleColor": "#5a544c"},
            "range": {"category": list(PALETTE.values())},
        }
    }


NO_LIBRARY = ("This chart is drawn by the site's napkin.js, which did not load: "
              "rebuild the book with `make book`.")

def replace_names(expr: str, name: str, by: str) -> str:
    """Replace a bare parameter name in a Vega expression (not inside ``datum.x``), so that
    the library's expressions over ``L`` or ``O`` can read a datum's field or a constant."""
    return re.sub(rf"(?<![\w.]){name}(?!\w)", by, expr)


def responsive(chart, height: int, title: alt.Title):
    """Fill the text column, down to a phone screen, at a fixed height in pixels.

    Heights are numbers, not ``alt.Step``: Vega-Lite warns in the console when a
    container-width chart has a per-row height.
    """
    return chart.properties(width="container", height=height, title=title)


def readable(df: pd.DataFrame, fields, log: bool = False) -> pd.DataFrame:
    """The rows of a live measurement a chart can draw: every one of ``fields`` finite, and
    positive on a log axis. A busy machine can time a step at nothing, or fail one run; the
    chart draws the rest and the cell's sentence says what was dropped."""
    keep = pd.Series(True, index=df.index)
    for f in fields:
        v = pd.to_numeric(df[f], errors="coerce")
        keep &= np.isfinite(v) & ((v > 0) if log else True)
    return df[keep]


def whiskers(df: pd.DataFrame, value: str, sd: str, log: bool = False) -> pd.DataFrame:
    """``low`` and ``high`` of a mean ± one standard deviation that an axis can draw. On a
    log axis a whisker that reaches zero or below stops at half the lowest drawable value
    (``clipped`` says which did): the noise is larger than the measurement there."""
    v = pd.to_numeric(df[value], errors="coerce")
    s = pd.to_numeric(df[sd], errors="coerce").fillna(0.0).abs()
    low, high = v - s, v + s
    clipped = pd.Series(False, index=df.index)
    if log:
        positive = pd.concat([v[v > 0], low[low > 0]])
        floor = float(positive.min()) / 2 if len(positive) else 1.0
        clipped = ~(low > 0)
        low = low.where(~clipped, floor)
    return df.assign(low=low, high=high, clipped=clipped)


def misdrawn(spec: dict, width: int = 600) -> list[str]:
    """What a chart draws where a reader cannot see it, in words (empty when all is well):
    a mark at a coordinate that is not a number, a mark outside its plot, or every item of a
    mark on one edge of the plot (a scale that lost its data). Renders ``spec`` with the
    site's Vega-Lite, offline, at ``width`` pixels; what the page draws is the same spec."""
    import vl_convert as vlc

    spec = dict(spec, width=width) if spec.get("width") == "container" else spec
    graph = vlc.vegalite_to_scenegraph(spec)["scenegraph"]
    problems: list[str] = []

    def check(mark: dict, w: float, h: float):
        items = [i for i in mark.get("items", []) if i.get("opacity", 1) != 0]
        xs, ys = [], []
        for item in items:
            for key in ("x", "x2", "y", "y2"):
                if key in item and not (isinstance(item[key], (int, float)) and
                                        math.isfinite(item[key])):
                    problems.append(f"{mark['name']}: {key} is not a number")
                    return
            xs += [item[k] for k in ("x", "x2") if k in item]
            ys += [item[k] for k in ("y", "y2") if k in item]
        if not xs or not ys or mark["marktype"] == "text" or mark.get("clip"):
            return
        if min(xs) < -1 or max(xs) > w + 1 or min(ys) < -1 or max(ys) > h + 1:
            problems.append(f"{mark['name']}: drawn outside its {w:.0f} x {h:.0f} plot "
                            f"(x {min(xs):.0f} to {max(xs):.0f}, y {min(ys):.0f} to "
                            f"{max(ys):.0f})")
        elif len(items) > 2 and mark["marktype"] in ("symbol", "line") and (
                max(ys) - min(ys) < 1 and min(ys) in (0, h) or
                max(xs) - min(xs) < 1 and min(xs) in (0, w)):
            problems.append(f"{mark['name']}: every item sits on one edge of the plot")

    def walk(node: dict, w: float, h: float):
        for group in node.get("items", []):
            if "marktype" not in group:  # an item of a group mark: a plot of its own size
                walk(group, group.get("width", w), group.get("height", h))
                continue
            if group.get("role") == "mark" and group["marktype"] != "group":
                check(group, w, h)
            elif group.get("role") not in ("axis", "legend", "title"):
                walk(group, w, h)

    walk(graph, width, 0)
    return problems


def bar_labels(base: alt.Chart, field: str, fmt: str, inside_from: float) -> alt.LayerChart:
    """Value labels for horizontal bars that never leave the plot, even on a phone:
    inside the end of a bar at least ``inside_from`` long (white), past the end of a
    shorter one. On a linear axis half the longest bar is a good ``inside_from``."""
    inside = float(inside_from)
    text = alt.Text(f"{field}:Q", format=fmt)
    within = base.transform_filter(f"datum['{field}'] >= {inside}").mark_text(
        align="right", dx=-4, fontWeight=600, color="white").encode(text=text)
    beyond = base.transform_filter(f"datum['{field}'] < {inside}").mark_text(
        align="left", dx=4, fontWeight=600).encode(text=text)
    return within + beyond


#: JupyterLab 4 draws Vega-Lite 5 with the copy of Vega it ships (offline), and nothing
#: newer: a notebook figure goes to it, and to front ends like it, as Vega-Lite 5. The book's specs use
#: nothing Vega-Lite 6 added (tests/test_figures.py compiles each one with Vega-Lite 5);
#: the site draws the same spec with the Vega-Lite 6 it serves.
JUPYTER_MIME = "application/vnd.vegalite.v5+json"
JUPYTER_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
#: A chart as wide as its container makes JupyterLab's output area grow without end and
#: hangs the tab; notebooks get this fixed width instead (the site keeps "container").
JUPYTER_WIDTH = 640


def jupyter_spec(spec: dict) -> dict:
    """The spec as the notebook front ends get it: Vega-Lite 5, a fixed width (the
    site's width kept in ``usermeta``, which renderers ignore, for :func:`book_spec`)."""
    out = {**spec, "$schema": JUPYTER_SCHEMA}
    if out.get("width") == "container":
        out["width"] = JUPYTER_WIDTH
        out["usermeta"] = {**out.get("usermeta", {}), "napkin_width": "container"}
    return out


def book_spec(spec: dict) -> dict:
    """A stored notebook spec as the site and the exports draw it: the Vega-Lite
    version Altair writes, at the width :func:`jupyter_spec` set aside."""
    out = {**spec, "$schema": alt.SCHEMA_URL}
    usermeta = dict(out.pop("usermeta", {}))
    if "napkin_width" in usermeta:
        out["width"] = usermeta.pop("napkin_width")
    if usermeta:
        out["usermeta"] = usermeta
    return out


_NAME = re.compile(r"^fig-[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass
class Figure:
    """A chart with a stable name, a caption and a source line.

    ``name`` is the figure's permanent anchor (``fig-napkin-ceiling``): the
    page element id, the export file name and the citation key all derive
    from it, so renaming one is a deliberate act.
    """

    name: str
    chart: alt.TopLevelMixin
    caption: str
    source: str
    live: bool = False
    machine: str | None = None  # for a live figure: what it was measured on

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise ValueError(f"figure name {self.name!r} must look like 'fig-some-words' "
                             "(lower case, digits, hyphens)")
        for what in ("caption", "source"):
            if not str(getattr(self, what)).strip():
                raise ValueError(f"figure {self.name!r} needs a {what}")

    def spec(self) -> dict:
        """The Vega-Lite spec, with data inlined (deterministic for fixed data). Its
        description, which Vega gives the drawn SVG as its accessible label, is the
        caption, so a screen reader says what the chart shows."""
        with alt.data_transformers.enable("default", max_rows=None):
            spec = self.chart.to_dict()
        spec.setdefault("description", self.caption)
        return spec

    def metadata(self) -> dict:
        return {"name": self.name, "caption": self.caption, "source": self.source,
                "live": self.live, "machine": self.machine}

    def html(self) -> str:
        return figure_html(self.metadata(), self.spec())

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Vega-Lite 5 for JupyterLab, which draws it offline with its own Vega (and
        would pick HTML over it, were there any); the book's site turns the same output into :func:`figure_html` at build
        time (``napkin_site.figures.FigureOutput`` in ``book/_ext``), from the spec and the
        metadata beside it."""
        data = {
            JUPYTER_MIME: jupyter_spec(self.spec()),
            "text/plain": f"{self.name}: {self.caption} Source: {self.source}",
        }
        return data, {METADATA_KEY: self.metadata()}


def figure_html(meta: dict, spec: dict, label: str = "", cite_url: str = "") -> str:
    """The site's ``<figure>``: its id is the figure's name, its script draws the spec
    with the Vega the site serves (napkin.js), its caption starts with the figure's number
    (``label``, "Figure 9.2") and ends with the source line, the figure's name and a link to
    its citation on the Figures page (``cite_url``)."""
    name = meta["name"]
    spec_json = json.dumps(book_spec(spec), sort_keys=True, separators=(",", ":"))
    spec_json = spec_json.replace("</", "<\\/")  # a data string must not close the script tag
    chart_id = f"{name}-chart"
    number = (f'<a class="napkin-figure-number" href="#{name}">{html.escape(label)}</a> '
              if label else "")
    cite = f' · <a href="{html.escape(cite_url)}">cite</a>' if cite_url else ""
    return (
        f'<figure class="napkin-figure" id="{name}">\n'
        f'<div class="napkin-chart" id="{chart_id}"></div>\n'
        f'<script type="text/javascript">(window.napkinDraw || function (id) {{'
        f'document.getElementById(id).textContent = "{NO_LIBRARY}";}})'
        f'("{chart_id}", {spec_json});</script>\n'
        f"<noscript>This chart needs JavaScript.</noscript>\n"
        f"<figcaption>{number}{html.escape(meta['caption'])} "
        f'<span class="napkin-source">Source: {html.escape(meta["source"])}</span>'
        f'<span class="napkin-figure-ref"><code>{name}</code>{cite}</span>'
        f"</figcaption>\n</figure>"
    )
