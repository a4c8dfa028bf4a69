"""A large mixture of experts at chat speed: what a rack, a server of eight GPUs and one GPU
serve of it, and what a million of its output tokens costs at that speed.

The speed is MLPerf's Interactive limits for DeepSeek-R1 (the first token and the time per
output token at the 99th percentile), its mean lengths and the spread of its answers
(:func:`napkin.validation.chapter.rack_layouts`). Each machine gets two answers from the
step model at the published parameters: the fit's reading of a row that states no layout
(tensor-parallel engines of eight), and the best of the layouts chapter 9 costs (data-parallel
attention with the experts spread, prefill on its own pool, multi-token-prediction drafts).
A rented machine is priced at the median of its providers' on-demand quotes
(:func:`napkin.costs.prices.rental_price`); a machine with no recorded quote gets the price
per GPU-hour at which it would make a token as cheaply as the cheapest rented one.
"""

from __future__ import annotations

import math

import pandas as pd

from ..predict import engine
from .. import tables
from . import prices

__all__ = ["at_chat_speed", "BENCHMARK", "COLUMNS", "display", "fastest_stream", "KV",
           "MACHINES", "MODEL"]

#: The model (DeepSeek-R1 has DeepSeek-V3's architecture), its MLPerf benchmark and cache.
MODEL, BENCHMARK, KV = "DeepSeek-V3", "deepseek-r1", "fp8"
#: (machine, chip, GPUs, weight format, chip whose rental quotes price it or None): each
#: chip at the smallest format it runs in hardware (the B200 has FP4, the H200 FP8 at most).
MACHINES = (("GB200 NVL72 rack", "GB200 (per GPU)", 72, "NVFP4", None),
            ("8 x B200", "B200", 8, "NVFP4", "B200"),
            ("8 x H200", "H200", 8, "FP8", "H200"),
            ("one B200", "B200", 1, "NVFP4", "B200"),
            ("one H200", "H200", 1, "FP8", "H200"))
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
    output tokens a second for the machine and per GPU in the fit's reading (``fit``) and
    with every layout (``best``), the median on-demand price per GPU-hour, the dollars per
    million output tokens of each reading, and for an unpriced machine the price per
    GPU-hour at which each reading matches the cheapest rented machine's (``breakeven``)."""
    from ..validation.chapter import rack_layouts

    rows = []
    for name, chip, n, weights, rented in machines:
        row = {"machine": name, "chip": chip, "n_chips": n, "weights": weights,
               "why_not": _holds(chip, n, weights)}
        if not row["why_not"]:
            lay = rack_layouts(chip=chip, model=MODEL, n_chips=n, weights=weights, kv=KV,
                               benchmark=BENCHMARK)
            for reading, rate in (("fit", lay["tokens_per_s"].iloc[0]),
                                  ("best", lay["tokens_per_s"].max())):
                row[f"{reading}_tokens_per_s"] = float(rate)
                row[f"{reading}_per_gpu"] = float(rate) / n
        if rented is not None:
            row["usd_per_gpu_hour"] = prices.rental_price(rented)["median"]
        rows.append(row)
    out = pd.DataFrame(rows)
    for reading in ("fit", "best"):
        out[f"{reading}_usd_per_mtok"] = [
            _usd_per_mtok(p, r) for p, r in zip(out["usd_per_gpu_hour"], out[f"{reading}_per_gpu"])]
        cheapest = out[f"{reading}_usd_per_mtok"].min()
        out[f"{reading}_breakeven_usd_per_gpu_hour"] = [
            cheapest * r * HOUR_S / MILLION if math.isnan(p) and r > 0 else math.nan
            for p, r in zip(out["usd_per_gpu_hour"], out[f"{reading}_per_gpu"])]
    return out



def fastest_stream(chip: str = "B200", n_chips: int = 8) -> dict:
    """The fastest single stream of :data:`MODEL` measured on ``n_chips`` of ``chip`` in the
    book's serving rows (one sequence at a time, tokens a second that sequence saw), its row,
    source and dollars per million output tokens at the chip's median on-demand price."""
    from ..validation.chapter import PER_USER_KINDS
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
    """:func:`at_chat_speed` for the page: each reading's rate and cost as a range (the fit's
    reading first), and what a machine that does not serve or is not priced leaves to say."""
    def span(a: float, b: float, fmt: str) -> str:
        return "–" if math.isnan(a) else f"{fmt.format(a)} to {fmt.format(b)}"

    rows = []
    for r in table.itertuples():
        if r.why_not:
            note = "does not hold the model with room for a cache"
        elif math.isnan(r.usd_per_gpu_hour):
            note = (f"no on-demand quote; as cheap a token as the cheapest rented server "
                    f"below {r.fit_breakeven_usd_per_gpu_hour:.2f} to "
                    f"{r.best_breakeven_usd_per_gpu_hour:.2f} USD a GPU-hour")
        else:
            note = f"{r.usd_per_gpu_hour:.2f} USD a GPU-hour (median on-demand quote)"
        rows.append({"machine": r.machine, "weights": r.weights,
                     "tokens": span(r.fit_tokens_per_s, r.best_tokens_per_s, "{:,.0f}"),
                     "per_gpu": span(r.fit_per_gpu, r.best_per_gpu, "{:,.0f}"),
                     "usd": span(r.fit_usd_per_mtok, r.best_usd_per_mtok, "{:,.2f}"),
                     "note": note})
    return pd.DataFrame(rows)


#: :func:`display`'s columns as the page titles them.
COLUMNS = {"machine": "Machine", "weights": "Weights",
           "tokens": "Output tokens/s (fit's reading to every layout)", "per_gpu": "Per GPU",
           "usd": "USD per million output tokens", "note": "Price"}
