"""Decisions that survive a model's error: a ranking read against each option's band.

A chapter that recommends one machine or one way of paying over another quotes a point value
for each, but the book's models state their error as a band (chapter 9's cross-validated
factors, chapter 8's quartiles). An order between two options is only as firm as their bands
are apart: where the first option's worse end is still better than the second's better end,
the order holds at both ends of the bands; where the bands overlap, the model cannot tell
the two apart and the page calls it a tie. :func:`against_best` reads every option against
the best one that way; :func:`versus` reads one estimate against a fixed reference (a
speedup against 1: does it pay?).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["against_best", "versus"]


def against_best(df: pd.DataFrame, value: str, low: str, high: str, *,
                 better: str = "lower") -> pd.DataFrame:
    """``df`` ranked by ``value`` (``better="lower"``: a price; ``"higher"``: a rate), with
    each row's ``margin`` behind the best (how many times the best's value is better than
    its own: 1 for the best, above 1 for every other), and
    ``holds``: whether the best stays better at the ends of both bands (``low`` and ``high``
    are each row's band on ``value``). Rows without a value are left out. ``verdict`` says it
    in a word: ``best``, ``behind`` (the order holds) or ``tie`` (the bands overlap)."""
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    missing = [c for c in (value, low, high) if c not in df.columns]
    if missing:
        raise ValueError(f"no column {', '.join(map(repr, missing))} in the table; it has "
                         f"{', '.join(map(str, df.columns))}")
    bad = df[(df[low] > df[value]) | (df[value] > df[high])]
    if len(bad):
        raise ValueError(f"a band must hold its value ({low} <= {value} <= {high}); rows "
                         f"{list(bad.index)} do not")
    ranked = df.dropna(subset=[value]).sort_values(value, ascending=better == "lower",
                                                   kind="stable")
    if ranked.empty:
        return ranked.assign(margin=[], holds=[], verdict=[])
    top = ranked.iloc[0]
    lower = better == "lower"
    # the best's worse end against each other's better end
    worst_of_best = top[high] if lower else top[low]
    best_of_other = ranked[low] if lower else ranked[high]
    holds = best_of_other > worst_of_best if lower else best_of_other < worst_of_best
    verdict = holds.map({True: "behind", False: "tie"})
    verdict.iloc[0] = "best"
    holds.iloc[0] = True
    margin = ranked[value] / top[value] if lower else top[value] / ranked[value]
    return ranked.assign(margin=margin, holds=holds, verdict=verdict)


def versus(low, high, reference: float = 1.0, *, better: str = "higher"):
    """Where an estimate's band (``low`` to ``high``, numbers or arrays) lies against
    ``reference``: ``"better"`` where the whole band is on the better side, ``"worse"`` where
    it is all on the other, ``"tie"`` where the band straddles it (the model cannot tell)."""
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    lo, hi = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if np.any(lo > hi):
        raise ValueError("a band's low end must not exceed its high end")
    above, below = lo > reference, hi < reference
    out = np.where(above, "better" if better == "higher" else "worse",
                   np.where(below, "worse" if better == "higher" else "better", "tie"))
    return out.item() if out.ndim == 0 else out
