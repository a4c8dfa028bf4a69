"""What a machine draws while it generates: a measured draw of the whole system where a
source measured one, else the vendor's rating of the board or chip.

Scopes differ and the book says which it used: a desk machine measured at the wall (its
whole system, peak while generating), a graphics card or a datacenter GPU by its rating (the
card or GPU alone: no host, no cooling). ML.ENERGY's measured GPU energy is in
:mod:`napkin.costs.energy`.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from .. import tables

#: Ratings, in the order the book prefers them: the chip's or board's own figure.
RATINGS = ("thermal design power", "total graphics power", "maximum board power",
           "vendor's maximum at the wall")
MEASURED = "measured peak while generating"


@lru_cache(maxsize=1)
def _table() -> pd.DataFrame:
    return tables.load("machine_power")


def rating(chip: str) -> dict:
    """The vendor's power rating of ``chip``'s board or chip (W), with what it is."""
    df = _table()
    for metric in RATINGS:
        rows = df[(df["machine"] == chip) & (df["metric"] == metric)]
        if len(rows):
            r = rows.iloc[0]
            return {"power_W": float(r["power_W"]), "basis": f"{metric} ({r['scope']})",
                    "source_url": r["source_url"]}
    raise ValueError(f"no power rating for {chip!r} in data/machine_power.csv")


def measured(chip: str) -> dict | None:
    """The highest draw measured at the wall while ``chip``'s whole system generated text
    (peak during the run: heavier work draws more), or None where nobody measured it."""
    df = _table()
    rows = df[(df["machine"] == chip) & (df["metric"] == MEASURED)]
    if rows.empty:
        return None
    r = rows.loc[rows["power_W"].idxmax()]
    return {"power_W": float(r["power_W"]),
            "basis": f"measured at the wall, whole system, peak while generating "
                     f"({r['device']}; {str(r['workload']).split(' (')[0]})",
            "source_url": r["source_url"]}


def used(chip: str) -> dict:
    """The draw the cost model uses for ``chip``: :func:`measured` where there is one,
    else :func:`rating`."""
    return measured(chip) or rating(chip)


def local_stream_energy(model_words: str = "70b") -> pd.DataFrame:
    """Measured energy per token of one local stream: each machine's wall power over the
    tokens per second of the same run (runs of a model whose name contains
    ``model_words``). Peak power over mean rate: an upper bound on the energy."""
    df = _table()
    df = df[(df["metric"] == MEASURED) & df["tok_per_s"].notna() &
            df["workload"].str.contains(model_words, case=False, regex=False)]
    return df.assign(joules_per_token=df["power_W"] / df["tok_per_s"])[
        ["machine", "device", "workload", "power_W", "tok_per_s", "joules_per_token",
         "date", "source_url"]].reset_index(drop=True)
