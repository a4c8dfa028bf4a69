"""Charts: one Altair theme, and figures that draw offline with stable ids.

A :class:`Figure` wraps an Altair chart with the three things a reader citing
it needs (a stable name, a caption, a source line). In a notebook it shows
as a Vega-Lite chart; in the built book it becomes a ``<figure>`` whose id is
the figure's name and whose script calls the ``vegaEmbed`` that the site
serves itself (``napkin.offline``), so the page draws with the network off and
strict nbval can compare its HTML byte for byte.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass

import altair as alt

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


NO_LIBRARY = ("This interactive chart is drawn by the book's own copy of Vega; "
              "open the page in the built book to see it.")

def responsive(chart, height: int, title: alt.Title):
    """Fill the text column, down to a phone screen, at a fixed height in pixels.

    Heights are numbers, not ``alt.Step``: Vega-Lite warns in the console when a
    container-width chart has a per-row height.
    """
    return chart.properties(width="container", height=height, title=title)


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
        spec = json.dumps(self.spec(), sort_keys=True, separators=(",", ":"))
        spec = spec.replace("</", "<\\/")  # a data string must not close the script tag
        chart_id = f"{self.name}-chart"
        return (
            f'<figure class="napkin-figure" id="{self.name}">\n'
            f'<div class="napkin-chart" id="{chart_id}"></div>\n'
            f'<script type="text/javascript">(window.napkinDraw || function (id) {{'
            f'document.getElementById(id).textContent = "{NO_LIBRARY}";}})'
            f'("{chart_id}", {spec});</script>\n'
            f"<noscript>This chart needs JavaScript.</noscript>\n"
            f"<figcaption>{html.escape(self.caption)} "
            f'<span class="napkin-source">Source: {html.escape(self.source)}</span>'
            f"</figcaption>\n</figure>"
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        vegalite = f"application/vnd.vegalite.v{alt.SCHEMA_VERSION.split('.')[0][1:]}+json"
        data = {
            vegalite: self.spec(),
            "text/html": self.html(),
            "text/plain": f"{self.name}: {self.caption} Source: {self.source}",
        }
        return data, {METADATA_KEY: self.metadata()}
