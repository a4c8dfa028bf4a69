"""What the essay states, as numbers, so the book can check each one against data.

Claims live in ``data/essay_claims.csv`` with the section they come from and the
words around them; a chapter quotes a claim with :func:`claim` instead of
retyping it, and the errata page compares every claim with its recomputation.
"""

from __future__ import annotations

import pandas as pd

from . import tables

__all__ = ["claim", "claims", "claims_table", "DATE", "TITLE"]

TITLE = "Prefill and decode want different machines"
#: The essay's date, from its front matter (``date:``); it has not been updated since.
DATE = "2026-08-28"


def claims() -> pd.DataFrame:
    return tables.load("essay_claims")


def claim(name: str) -> float:
    """The value the essay states for ``name`` (in the unit its row names)."""
    return float(tables.row("essay_claims", "claim", name)["value"])


def claims_table(checked: pd.DataFrame, chapters_url: str = "../notebooks/",
                 errata_url: str = "errata.html") -> tables.Shown:
    """The essay's claims, each with the chapter that checks it and the verdict, for the
    essay's page. ``checked`` is :func:`napkin.errata.by_claim`; a chapter is named as the
    site numbers it (:mod:`napkin.toc`) and linked under ``chapters_url``, a verdict links to
    the errata page."""
    from html import escape

    from . import toc

    def chapter_links(chapters) -> str:
        pages = [toc.page(f"notebooks/{c}") for c in chapters]
        return "<br>".join(f'<a href="{chapters_url}{p.docname.split("/")[-1]}.html">'
                           f"{escape(p.label)}</a>" for p in pages) or "not checked"

    def verdict_links(row) -> str:
        if not row.verdicts:
            return "not checked"
        holds = "" if row.conclusion_holds else "; the conclusion fails"
        return f'<a href="{errata_url}">{escape("; ".join(row.verdicts))}</a>{holds}'

    shown = pd.DataFrame({
        "section": checked["section"].map(escape),
        "quote": checked["quote"].map(escape),
        "stated": [f"{v:,g} {escape(_unit(v, str(u)))}"
                   for v, u in zip(checked["value"], checked["unit"])],
        "chapter": checked["chapters"].map(chapter_links),
        "verdict": [verdict_links(r) for r in checked.itertuples(index=False)],
    })
    return tables.styled(shown, "table-essay-claims",
                         {"section": "Section", "quote": "The essay says", "stated": "Number",
                          "chapter": "Checked in", "verdict": "Verdict"})


def _unit(value: float, unit: str) -> str:
    """"1 token", not "1 tokens": a plain plural unit in the singular for one."""
    return unit.removesuffix("s") if value == 1 and unit.isalpha() else unit
