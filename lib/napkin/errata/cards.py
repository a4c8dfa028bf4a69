"""The errata as cards, one per check, for a notebook to display (a wide table does not fit a
phone); the site's stylesheet draws them (``.napkin-erratum``). No page shows them at present:
the errata page shows :func:`napkin.errata.all_errata` as a table.
"""

from __future__ import annotations

from html import escape

import pandas as pd


class ErrataCards:
    """The errata as one card each (a wide table does not fit a phone), differences first.

    ``df`` is :func:`napkin.errata.all_errata`; a card links its chapter's page under
    ``chapters_url``.
    """

    def __init__(self, df: pd.DataFrame, chapters_url: str = "../notebooks/"):
        order = df.assign(_agrees=df["verdict"] == "agrees").sort_values("_agrees", kind="stable")
        self.df, self.url = order.drop(columns="_agrees"), chapters_url

    def card(self, e: pd.Series) -> str:
        holds = "the conclusion holds" if e["conclusion_holds"] else "the conclusion fails"
        return (f'<div class="napkin-erratum napkin-verdict-{e["verdict"].replace(" ", "-")}">'
                f'<p class="napkin-erratum-head"><strong>{escape(e["topic"])}</strong> '
                f'<span class="napkin-badge">{escape(e["verdict"])}; {holds}</span></p>'
                f'<dl><dt>The essay says</dt><dd>{escape(e["essay_says"])}</dd>'
                f'<dt>The data says</dt><dd>{escape(e["data_says"])}</dd>'
                f'<dt>Why it matters</dt><dd>{escape(e["explanation"])}</dd>'
                f'<dt>Where</dt><dd><a href="{self.url}{e["chapter"]}.html">{e["chapter"]}</a>; '
                f'source: <a href="{escape(e["source"])}">{escape(e["source"])}</a></dd></dl>'
                f"</div>")

    def html(self) -> str:
        return "\n".join(self.card(e) for _, e in self.df.iterrows())

    def _repr_mimebundle_(self, include=None, exclude=None):
        text = "\n".join(f"- {r.topic}: {r.verdict}" for r in self.df.itertuples())
        return {"text/html": self.html(), "text/plain": text}
