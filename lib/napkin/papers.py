"""What the serving papers and vLLM's documentation state, as numbers the book can check.

``data/serving_papers_claims.csv`` holds the vLLM paper's quotes and printed figures (its
Table 1, Fig. 2's memory shares, Fig. 11's mean lengths, Fig. 13's batches), Sarathi-Serve's
and DistServe's headline numbers and what vLLM's documentation says about its scheduler. A
chapter quotes a row with :func:`claim` or :func:`quote` instead of retyping it, as it quotes
the essay with :func:`napkin.essay.claim`. Chapters 6 and 7 and the errata page read it here.
"""

from __future__ import annotations

import pandas as pd

from . import tables

__all__ = ["claim", "quote", "table", "TABLE"]

TABLE = "serving_papers_claims"


def table() -> pd.DataFrame:
    """Every row: the claim's name, who says it, where, the words and the numbers it states."""
    return tables.load(TABLE)


def claim(name: str, end: str = "low") -> float:
    """The number a row states (``end="high"`` for the top of a range such as 2-4x)."""
    if end not in ("low", "high"):
        raise ValueError(f"end must be 'low' or 'high', got {end!r}")
    value = _row(name)[f"value_{end}"]
    if pd.isna(value):
        raise ValueError(f"claim {name!r} states no number; see its quote")
    return float(value)


def quote(name: str) -> str:
    """The words of a row, as the paper or documentation has them."""
    return str(_row(name)["quote"])


def _row(name: str) -> pd.Series:
    return tables.row(TABLE, "claim", name)
