"""What the essay states, as numbers, so the book can check each one against data.

Claims live in ``data/essay_claims.csv`` with the section they come from and the
words around them; a chapter quotes a claim with :func:`claim` instead of
retyping it, and the errata page compares every claim with its recomputation.
"""

from __future__ import annotations

import pandas as pd

from . import tables

TITLE = "Prefill and decode want different machines"


def claims() -> pd.DataFrame:
    return tables.load("essay_claims")


def claim(name: str) -> float:
    """The value the essay states for ``name`` (in the unit its row names)."""
    return float(tables.row("essay_claims", "claim", name)["value"])
