"""A large mixture of experts at chat speed: what a rack, a server of eight GPUs and one GPU
serve of it, and what a million of its output tokens costs at that speed.

The speed is MLPerf's Interactive limits for DeepSeek-R1 (the first token and the time per
output token at the 99th percentile), its mean lengths and the spread of its answers
(:func:`napkin.validation.chapter.rack_layouts`). Each machine gets three answers from the
step model at the published parameters: the fit's reading of a row that states no layout
(tensor-parallel engines of eight), the best of chapter 9's layouts without drafts
(data-parallel attention with the experts spread, prefill on its own pool), and the full
layout with three drafts of multi-token prediction. A machine is priced at the median of its
providers' on-demand quotes (:func:`napkin.costs.prices.rental_price`); the rack at the one
quote the book has for a GB200 superchip, shared by its two GPUs.
"""

from __future__ import annotations

import math

import pandas as pd

from ..predict import engine
from .. import tables
from . import prices

__all__ = ["at_chat_speed", "BENCHMARK", "COLUMNS", "display", "fastest_stream", "KV",
           "MACHINES", "MODEL", "READINGS"]

#: The model (DeepSeek-R1 has DeepSeek-V3's architecture), its MLPerf benchmark and cache.
MODEL, BENCHMARK, KV = "DeepSeek-V3", "deepseek-r1", "fp8"
#: (machine, chip, GPUs, weight format, item whose on-demand quotes price it, GPUs a quote
#: is for): each chip at the smallest format it runs in hardware (the B200 has FP4, the H200
#: FP8 at most). The rack is priced at the one quote the book has for a GB200 superchip (two
#: GPUs), not for a whole rack.
MACHINES = (("GB200 NVL72 rack", "GB200 (per GPU)", 72, "NVFP4", "GB200 superchip (2 GPUs)", 2),
            ("8 x B200", "B200", 8, "NVFP4", "B200", 1),
            ("8 x H200", "H200", 8, "FP8", "H200", 1),
            ("one B200", "B200", 1, "NVFP4", "B200", 1),
            ("one H200", "H200", 1, "FP8", "H200", 1))
#: The readings :func:`at_chat_speed` gives each machine (its docstring says which).
READINGS = ("fit", "no_drafts", "full")
#: Seconds in an hour, and output tokens in the million a price is quoted for.
HOUR_S, MILLION = 3600.0, 1e6


def _holds(chip: str, n_chips: int, weights: str) -> str:
    """Why ``n_chips`` of ``chip`` cannot hold :data:`MODEL` with room for a cache, or ''."""
    try:
        engine(chip, MODEL, n_chips=n_chips, weights=weights, kv=KV)
    except ValueError as err:  # the deployment's own message: weights, capacity, what to do
        return str(err)
    return ""


def _usd_per_mtok(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float) -> float:
    """NaN where either is unknown (not priced, not held); inf where nothing is served."""
    if math.isnan(usd_per_gpu_hour) or math.isnan(tokens_per_s_per_gpu):
        return math.nan
    if tokens_per_s_per_gpu <= 0:
        return math.inf
    return usd_per_gpu_hour / (tokens_per_s_per_gpu * HOUR_S) * MILLION


def at_chat_speed(machines=MACHINES) -> pd.DataFrame:
    """Each machine of ``machines``: whether it holds the model (``why_not`` says why not),
    output tokens a second for the machine and per GPU in three of chapter 9's readings
    (:data:`~napkin.validation.chapter.RACK_LAYOUTS`): the fit's reading of a row that
    states no layout (``fit``), the best layout without drafts (``no_drafts``) and the full
    layout, three drafts included (``full``); the median on-demand price per GPU-hour and
    how many quotes it rests on, and the dollars per million output tokens of each
    reading."""
    from ..validation.chapter import RACK_LAYOUTS, rack_layouts

    drafted = pd.Series([layout[3] > 0 for layout in RACK_LAYOUTS])
    rows = []
    for name, chip, n, weights, item, per_quote in machines:
        quote = prices.rental_price(item)
        row = {"machine": name, "chip": chip, "n_chips": n, "weights": weights,
               "why_not": _holds(chip, n, weights),
               "usd_per_gpu_hour": quote["median"] / per_quote, "quotes": quote["quotes"],
               "gpus_per_quote": per_quote}
        if not row["why_not"]:
            rate = rack_layouts(chip=chip, model=MODEL, n_chips=n, weights=weights, kv=KV,
                                benchmark=BENCHMARK)["tokens_per_s"]
            for reading, value in (("fit", rate.iloc[0]), ("no_drafts", rate[~drafted].max()),
                                   ("full", rate.iloc[-1])):
                row[f"{reading}_tokens_per_s"] = float(value)
                row[f"{reading}_per_gpu"] = float(value) / n
        rows.append(row)
    out = pd.DataFrame(rows)
    for reading in READINGS:
        out[f"{reading}_usd_per_mtok"] = [
            _usd_per_mtok(p, r) for p, r in zip(out["usd_per_gpu_hour"], out[f"{reading}_per_gpu"])]
    return out


def fastest_stream(chip: str = "B200", n_chips: int = 8) -> dict:
    """The fastest single stream of :data:`MODEL` measured on ``n_chips`` of ``chip`` in the
    book's serving rows (one sequence at a time, tokens a second that sequence saw), its row,
    source and dollars per million output tokens at the chip's median on-demand price."""
    from ..validation.derive import PER_USER_KINDS
    from ..validation.rows import all_cases

    c = all_cases()
    c = c[c["ok"] & (c["model"] == MODEL) & (c["chip"] == chip) & (c["n_chips"] == n_chips) &
          c["kind"].isin(PER_USER_KINDS) & (c["batch"] == 1)]
    if c.empty:
        raise ValueError(f"no single stream of {MODEL} on {n_chips} x {chip} in the serving "
                         "rows: choose a chip and count that a row of "
                         "data/serving_measurements.csv measured")
    best = c.loc[c["measured"].idxmax()]
    price = prices.rental_price(chip)["median"]
    return {"row_id": best["row_id"], "tokens_per_s": float(best["measured"]),
            "usd_per_gpu_hour": price,
            "usd_per_mtok": _usd_per_mtok(price, float(best["measured"]) / n_chips),
            "draft_tokens": float(best["draft_tokens"]),
            "source_url": tables.load("serving_measurements").set_index(
                tables.ROW_ID).loc[best["row_id"], "source_url"]}


def display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`at_chat_speed` for the page: each reading's rate and cost (the fit's reading,
    the best layout without drafts, the full layout), and the price each rests on."""
    def three(r, what: str, fmt: str) -> str:
        values = [getattr(r, f"{reading}_{what}") for reading in READINGS]
        return "–" if math.isnan(values[0]) else " / ".join(fmt.format(v) for v in values)

    rows = []
    for r in table.itertuples():
        where = (f"one quote for a superchip of {r.gpus_per_quote} GPUs, shared"
                 if r.gpus_per_quote > 1 else f"median of {r.quotes} on-demand quotes")
        rows.append({"machine": r.machine, "weights": r.weights,
                     "tokens": three(r, "tokens_per_s", "{:,.0f}"),
                     "per_gpu": three(r, "per_gpu", "{:,.0f}"),
                     "usd": three(r, "usd_per_mtok", "{:,.2f}"),
                     "price": ("does not hold the model with room for a cache" if r.why_not else
                               f"{r.usd_per_gpu_hour:.2f} USD a GPU-hour ({where})")})
    return pd.DataFrame(rows)


#: :func:`display`'s columns as the page titles them.
COLUMNS = {"machine": "Machine", "weights": "Weights",
           "tokens": "Output tokens/s: fit's reading / no drafts / full layout",
           "per_gpu": "Per GPU", "usd": "USD per million output tokens", "price": "Price"}
