"""What a machine draws while it generates: a measured draw of the whole system where a
source measured one, else the vendor's rating of the board or chip; and, for a rented
datacenter GPU, its share of its server's power times the data center's overhead, so that it
compares with a desk machine measured at the wall.

Scopes differ and the book says which it used: a desk machine measured at the wall (its
whole system, peak while generating), a graphics card by its rating (the card alone: its host
is not counted), a rented GPU by :func:`rented_draw` (an eighth of its 8-GPU server's maximum
input, times the industry's average PUE: like with like). ML.ENERGY's measured GPU energy is
in :mod:`napkin.costs.energy`.
"""

from __future__ import annotations


import pandas as pd

from .. import tables

__all__ = ["local_stream_energy", "measured", "MEASURED", "node", "NODE_MAX", "NODE_TYPICAL",
           "NODES", "pue", "pue_range", "PUE_SCOPE", "rating", "RATINGS", "rented_draw", "used"]

#: Ratings, in the order the book prefers them: the chip's or board's own figure.
RATINGS = ("thermal design power", "total graphics power", "maximum board power",
           "vendor's maximum at the wall")
MEASURED = "measured peak while generating"
#: The 8-GPU server each rented GPU is priced in (a ``machine`` of data/machine_power.csv).
NODES = {"H100 SXM": "8 x H100 SXM or H200 (DGX)", "H200": "8 x H100 SXM or H200 (DGX)",
         "B200": "8 x B200 (DGX)"}
NODE_MAX = "maximum input"
NODE_TYPICAL = ("typical input, low end", "typical input, high end")
#: The PUE rows a rented GPU is charged with by default (data/datacenter_pue.csv).
PUE_SCOPE = "industry average"


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


def node(chip: str) -> dict:
    """``chip``'s share of its 8-GPU server: the server's maximum input over its GPUs (W),
    the GPUs' own rating beside it, the typical input where a source states one, and what
    each is."""
    if chip not in NODES:
        raise ValueError(f"no server power for {chip!r}: data/machine_power.csv has the "
                         f"servers of {', '.join(NODES)}")
    df = _table()
    rows = df[df["machine"] == NODES[chip]]
    top = rows[rows["metric"] == NODE_MAX]
    if top.empty:
        raise ValueError(f"no {NODE_MAX!r} row for {NODES[chip]!r} in data/machine_power.csv")
    gpus = int(NODES[chip].split(" x ")[0])
    r = top.iloc[0]
    typical = [float(rows[rows["metric"] == m]["power_W"].iloc[0]) / gpus
               for m in NODE_TYPICAL if (rows["metric"] == m).any()]
    return {"power_W": float(r["power_W"]) / gpus, "gpus": gpus,
            "server_W": float(r["power_W"]), "gpu_W": rating(chip)["power_W"],
            "typical_W": tuple(typical), "device": r["device"],
            "basis": f"1/{gpus} of {r['device']}'s {NODE_MAX} ({r['power_W'] / 1000:,.1f} kW)",
            "source_url": r["source_url"]}


def _pue() -> pd.DataFrame:
    return tables.load("datacenter_pue")


def pue(year: int | None = None) -> dict:
    """The data center overhead a rented GPU is charged with: the newest industry-average
    power usage effectiveness (facility power over IT power), with its period and source;
    ``year``: that year's average instead (to set the source's own figure beside it)."""
    df = _pue()
    avg = df[df["scope"] == PUE_SCOPE].sort_values("year")
    if year is not None:
        avg = avg[avg["year"] == year]
    if avg.empty:
        raise ValueError(f"no {PUE_SCOPE!r} row" + (f" for year {year!r}" if year is not None
                         else "") + " in data/datacenter_pue.csv; add one or pass another year")
    r = avg.iloc[-1]
    return {"pue": float(r["pue"]), "period": str(r["year"]), "reporter": r["reporter"],
            "source_url": r["source_url"]}


def pue_range() -> tuple[float, float]:
    """The lowest and highest PUE recorded (a hyperscaler's fleet, an industry average)."""
    p = _pue()["pue"]
    return float(p.min()), float(p.max())


def rented_draw(chip: str) -> dict:
    """What one rented ``chip`` draws from the grid, like a desk machine at the wall: its
    share of its server's maximum input times the PUE. A GPU without a server row is charged
    its own rating times the PUE, and says so (a lower bound: its host is not counted)."""
    facility = pue()
    try:
        n = node(chip)
        watts, basis = n["power_W"], n["basis"]
    except ValueError:
        r = rating(chip)  # raises for a GPU with no rating either
        watts, basis = r["power_W"], f"{r['basis']}, the GPU alone (its server not counted)"
    return {"power_W": watts * facility["pue"], "it_W": watts, "pue": facility["pue"],
            "basis": f"{basis} x PUE {facility['pue']:.2f} ({facility['reporter']}, "
                     f"{facility['period']})"}
