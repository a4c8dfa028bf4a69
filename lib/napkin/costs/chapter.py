"""What chapter 11 shows: its headline workload, the price tables with their dates, the cost
and break-even tables formatted for the page, and the measured runs its essay check prices."""

from __future__ import annotations

import math

import pandas as pd

from ..buying import fmt_range
from . import energy, page, prices
from .throughput import RENTED

#: The workload the chapter's text follows (the calculator offers the others).
HEADLINE = "Llama 3.3 70B, 8-bit, chat"
#: API models the price table lists.
API_MODELS = ("Llama-3.3-70B", "Llama-3.1-8B", "gpt-oss-120b", "gpt-oss-20b", "DeepSeek-V3")


def headline():
    return page.presets()[HEADLINE]


def join(names, article: str = "the ") -> str:
    """``the A, the B and the C``."""
    names = [f"{article}{n}" for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def rental_display() -> pd.DataFrame:
    """Rental price per GPU-hour of the GPUs the chapter rents: providers, median, range,
    dates."""
    df = prices.rental_table(list(RENTED))
    return pd.DataFrame({
        "chip": df["chip"], "quotes": df["quotes"],
        "median": df["median"].map("{:,.2f}".format),
        "range": [f"{a:,.2f}–{b:,.2f}" for a, b in zip(df["low"], df["high"])],
        "dates": [prices.span_text([a, b]) for a, b in zip(df["oldest"], df["newest"])]})


def api_display(prompt_tokens: int, output_tokens: int) -> pd.DataFrame:
    """Each model's API price per million output tokens for a request of these lengths
    (input weighted in), over the providers that list it, with dates."""
    rows = []
    for m in API_MODELS:
        q = prices.api_price(m, prompt_tokens, output_tokens)
        rows.append({"model": m, "providers": q["providers"], "median": f"{q['median']:,.2f}",
                     "range": f"{q['low']:,.2f}–{q['high']:,.2f}",
                     "dates": prices.span_text([q["oldest"], q["newest"]])})
    return pd.DataFrame(rows)


def list_price_display(chips) -> pd.DataFrame:
    """The desk machines' vendor prices the chapter uses, with date, scope and confidence."""
    df = prices.list_prices()
    df = df[df["chip"].isin(chips)]
    return pd.DataFrame({"machine": df["chip"], "configuration": df["configuration"],
                         "price": df["price"].map("{:,.0f}".format),
                         "date": df["price_date"], "kind": df["price_kind"],
                         "scope": df["scope"], "confidence": df["confidence"]})


def _money(v: float) -> str:
    return "" if v != v else (f"{v:,.2f}" if v < 100 else f"{v:,.0f}")


def cost_display(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`napkin.costs.cost_table` formatted for the page: ranges as text, reasons for
    the ways that cannot hold the workload."""
    def band(mid, low, high, digits):
        return "" if mid != mid else fmt_range(low, mid, high, digits)

    def as_what(r):
        if r.kind == "api":
            return "quoted prices"
        if r.kind == "rented":
            return f"rented: {r.configuration}"
        card = str(r.price_scope).startswith("graphics card")
        return f"bought: {r.configuration}" + (" (card only)" if card else "")

    return pd.DataFrame({
        "option": table["option"],
        "as": [as_what(r) if r.fits else "" for r in table.itertuples()],
        "users": [str(int(u)) if f and k != "api" else "" for u, f, k in
                  zip(table["users"], table["fits"], table["kind"])],
        "tokens": [band(m, lo, hi, 1) for m, lo, hi in zip(
            table["tokens_per_s"], table["tokens_per_s_low"], table["tokens_per_s_high"])],
        "per_user": table["per_user_tokens_per_s"].map(lambda v: "" if v != v else f"{v:,.1f}"),
        "usd": [("" if m != m else f"{_money(m)} ({_money(lo)}–{_money(hi)})")
                for m, lo, hi in zip(table["usd_per_mtok"], table["usd_per_mtok_low"],
                                     table["usd_per_mtok_high"])],
        "joules": [band(m, lo, hi, 2) for m, lo, hi in zip(
            table["joules_per_token"], table["joules_per_token_low"],
            table["joules_per_token_high"])],
        "note": table["reason"].fillna("")})


def _hours(v: float) -> str:
    return "never" if v == math.inf else ("" if v != v else f"{v:,.1f}")


def breakeven_display(one: pd.DataFrame, many: pd.DataFrame) -> pd.DataFrame:
    """Break-even hours a day, one user and as many as fit, side by side per machine."""
    m = many.set_index("option")
    return pd.DataFrame({
        "option": one["option"],
        "rent_1": one["hours_to_beat_renting"].map(_hours),
        "api_1": one["hours_to_beat_api"].map(_hours),
        "users_many": one["option"].map(lambda o: str(int(m.loc[o, "users"]))
                                        if o in m.index else ""),
        "rent_many": one["option"].map(lambda o: _hours(m.loc[o, "hours_to_beat_renting"])
                                       if o in m.index else ""),
        "api_many": one["option"].map(lambda o: _hours(m.loc[o, "hours_to_beat_api"])
                                      if o in m.index else "")})


def measured_serving(model: str = "Llama-3.3-70B", chips=("H100 SXM", "B200")) -> pd.DataFrame:
    """ML.ENERGY's measured chat runs of ``model`` priced at each GPU's median rental quote."""
    parts = []
    for chip in chips:
        q = prices.rental_price(chip)
        runs = energy.cost_from_measurements(model, chip, q["median"])
        parts.append(runs.assign(usd_per_gpu_hour=q["median"],
                                 engine=runs["n_gpus"].astype(str) + " x " + runs["gpu"]))
    return pd.concat(parts, ignore_index=True)


def error_display(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`napkin.costs.energy.error_summary` formatted for the page."""
    return pd.DataFrame({
        "group": summary["group"], "n": summary["n"].map(str),
        "median": summary["median_abs"].map("{:.0%}".format),
        "p90": summary["p90_abs"].map("{:.0%}".format),
        "bias": summary["bias"].map("{:+.0%}".format),
        "measured_power": summary["measured_power_median_abs"].map("{:.0%}".format),
        "draw": summary["draw_over_rating"].map("{:.0%}".format)})
