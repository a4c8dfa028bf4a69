"""What chapter 11 shows: its headline workload, the price tables with their dates, the cost
and break-even tables formatted for the page, and the measured runs its essay check prices."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..buying import fmt_range
from ..prose import count
from . import energy, page, prices
from .throughput import RENTED

__all__ = ["api_display", "API_MODELS", "at_band", "band_text", "breakeven_display", "COST_COLUMNS",
           "cost_display", "error_display", "HEADLINE", "headline", "join", "list_price_display",
           "decision_display", "measured_serving", "price_crossing", "priced_list",
           "rental_display", "way_name"]

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
    """Rental price per GPU-hour of the GPUs the chapter rents: providers, median, range and
    dates of the on-demand quotes, and the cheapest recorded contract that pays every hour
    of a term (with its term and date), where there is one."""
    df = prices.rental_table(list(RENTED))

    def contract(chip):
        q = prices.committed_price(chip)
        return "none recorded" if q is None else (
            f"{q['price']:,.2f} ({q['offer'].split(', ')[-1]}, {q['day'].isoformat()[:7]})")

    return pd.DataFrame({
        "chip": df["chip"], "quotes": df["quotes"],
        "median": df["median"].map("{:,.2f}".format),
        "range": [f"{a:,.2f}–{b:,.2f}" for a, b in zip(df["low"], df["high"])],
        "dates": [prices.span_text([a, b]) for a, b in zip(df["oldest"], df["newest"])],
        "committed": df["chip"].map(contract)})


def api_display(prompt_tokens: int, output_tokens: int) -> pd.DataFrame:
    """Each model's API prices over the providers that list it, with dates: the median
    output price alone, and the blended price of a request of these lengths (output price
    plus input price times prompt over answer), both per million output tokens."""
    rows = []
    for m in API_MODELS:
        q = prices.api_price(m, prompt_tokens, output_tokens)
        out = prices.api_quotes(m)["output_usd_per_mtok"]
        rows.append({"model": m, "providers": q["providers"],
                     "output": f"{out.median():,.2f}", "median": f"{q['median']:,.2f}",
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


def band_text(r) -> str:
    """Which error band a row's range is, with its factors: ``static, seen: x1.15 for half
    the rows, x1.83 for nine in ten`` (a rented GPU), or chapter 8's (a desk machine)."""
    if r.kind == "api":
        return "providers' spread"
    if r.band_p90 == r.band_p90:
        return f"{r.band}: x{r.band_median:.2f} median, x{r.band_p90:.2f} p90 (range)"
    return str(r.band)


def _as(r) -> str:
    if r.kind == "api":
        return "blended price: output + input x prompt / answer"
    if r.kind in ("rented", "committed"):
        paid = "on demand" if r.kind == "rented" else "on a contract, every hour paid"
        return f"rented {paid}: {r.configuration}, {r.weight_format}"
    card = " (card only)" if str(r.price_scope).startswith("graphics card") else ""
    return f"bought: {r.configuration}{card}, {r.weight_format}"


def cost_display(table: pd.DataFrame) -> pd.DataFrame:
    """A :func:`napkin.costs.cost_table` formatted for the page, dollars first after the way
    (the column a phone shows without scrolling): cost with its band, how long a user waits
    for the whole reply, users, each user's decode speed, all users' output rate (each
    prompt's prefill included), joules, which band the range is, what was priced, and why
    a way is not priced."""
    def band(mid, low, high, digits):
        return "" if mid != mid else fmt_range(low, mid, high, digits)

    def num(v, fmt):
        return "" if v != v else fmt.format(v)

    served = table["fits"]
    return pd.DataFrame({
        "option": table["option"],
        "usd": [("" if m != m else f"{_money(m)} ({_money(lo)}–{_money(hi)})")
                for m, lo, hi in zip(table["usd_per_mtok"], table["usd_per_mtok_low"],
                                     table["usd_per_mtok_high"])],
        "latency": ["" if t != t else f"{t:,.1f} + {a - t:,.1f} = {a:,.1f}"
                    for t, a in zip(table["first_token_s"], table["latency_s"])],
        "users": [str(int(u)) if f and k != "api" else "" for u, f, k in
                  zip(table["users"], served, table["kind"])],
        "per_user": table["per_user_tokens_per_s"].map(lambda v: num(v, "{:,.1f}")),
        "tokens": [band(m, lo, hi, 1) for m, lo, hi in zip(
            table["tokens_per_s"], table["tokens_per_s_low"], table["tokens_per_s_high"])],
        "joules": [band(m, lo, hi, 2) for m, lo, hi in zip(
            table["joules_per_token"], table["joules_per_token_low"],
            table["joules_per_token_high"])],
        "band": [band_text(r) if r.fits else "" for r in table.itertuples()],
        "as": [_as(r) if r.fits else "" for r in table.itertuples()],
        "note": table["reason"].fillna("")})


#: Column titles of :func:`cost_display`, for ``napkin.tables.styled``.
COST_COLUMNS = {
    "option": "Way", "usd": "USD per million output tokens (band)",
    "latency": "First token + answer = whole reply (s)", "users": "Users at once",
    "per_user": "Decode speed each user sees (tokens/s)",
    "tokens": "Output tokens/s, all users, prefill included (band)",
    "joules": "Joules per token, at the wall (band)", "band": "Band of the range",
    "as": "Priced as", "note": "Why not"}


def way_name(r) -> str:
    """A way as prose names it: ``a rented B200 engine (1 GPU)``, ``the DGX Spark``,
    ``the RTX PRO 6000 Blackwell card``, ``an H100 SXM engine on a 1-year contract``."""
    if r.kind == "api":
        return "the API"
    if r.kind in ("rented", "committed"):
        gpus = count(int(r.n_chips), "GPU")
        if r.kind == "rented":
            return f"a rented {r.chip} engine ({gpus})"
        return f"{'an' if r.chip[0] in 'H' else 'a'} {r.chip} engine on a one-year contract " \
               f"({gpus})"
    return f"the {r.option}" + (" card" if str(r.price_scope).startswith("graphics card")
                                else "")


def priced_list(table: pd.DataFrame, reply: bool = False) -> str:
    """Each priced way of a :func:`napkin.costs.cost_table` with its dollars per million
    output tokens written beside it (never a list of numbers matched to names by order),
    cheapest first; ``reply`` adds the users and the whole reply's time."""
    parts = []
    for r in table[table["fits"] & (table["kind"] != "api")].itertuples():
        who = f"{count(int(r.users), 'user')}, " if r.users != 1 else ""
        extra = f" ({who}whole reply in {r.latency_s:,.0f} s)" if reply else ""
        parts.append(f"{way_name(r)}: {_money(r.usd_per_mtok)} USD{extra}")
    return "; ".join(parts)


def _hours(v: float) -> str:
    return "never" if v == math.inf else ("" if v != v else f"{v:,.1f}")


def _versus(own: float, ref: float) -> str:
    if own != own or ref != ref:
        return ""
    return f"{_money(own)} vs {_money(ref)}: " + ("cheaper" if own < ref else "dearer")


def breakeven_display(one: pd.DataFrame, level: pd.DataFrame) -> pd.DataFrame:
    """Per bought machine that holds the workload: for one user, the hours a day above which
    it beats the cheapest GPU rented on demand and the API's blended price, and its cost
    beside the cheapest one-year contract; at the service level, the users it serves and the
    same two break-evens ("misses it" where it serves none)."""
    m = level.set_index("option")

    def at(o, col, how):
        return how(m.loc[o, col]) if o in m.index else ""

    return pd.DataFrame({
        "option": one["option"],
        "rent_1": one["hours_to_beat_renting"].map(_hours),
        "api_1": one["hours_to_beat_api"].map(_hours),
        "committed_1": [_versus(o, c) for o, c in zip(one["usd_per_mtok"],
                                                      one["committed_usd_per_mtok"])],
        "users_level": [at(o, "users", lambda u: str(int(u))) or "misses it"
                        for o in one["option"]],
        "rent_level": [at(o, "hours_to_beat_renting", _hours) for o in one["option"]],
        "api_level": [at(o, "hours_to_beat_api", _hours) for o in one["option"]]})


def measured_serving(model: str = "Llama-3.3-70B", chips=("H100 SXM", "B200")) -> pd.DataFrame:
    """ML.ENERGY's measured chat runs of ``model`` priced at each GPU's median rental quote."""
    parts = []
    for chip in chips:
        q = prices.rental_price(chip)
        runs = energy.cost_from_measurements(model, chip, q["median"])
        parts.append(runs.assign(usd_per_gpu_hour=q["median"],
                                 engine=runs["n_gpus"].astype(str) + " x " + runs["gpu"]))
    return pd.concat(parts, ignore_index=True)


def decision_display(ways: pd.DataFrame) -> pd.DataFrame:
    """Ways that serve a workload (rows of :func:`napkin.costs.cost_table`, the API's among
    them), each against the cheapest at both ends of the bands (:func:`napkin.decide.
    against_best`): its price and range, how many times the cheapest's, and whether the
    cheapest stays cheaper at every end of the two bands (else the model cannot tell them
    apart: a tie)."""
    from ..decide import against_best

    ranked = against_best(ways[ways["fits"]], "usd_per_mtok", "usd_per_mtok_low",
                          "usd_per_mtok_high")
    words = {"best": "cheapest", "behind": "dearer at every end of both bands",
             "tie": "tie: the bands overlap"}
    return pd.DataFrame({
        "way": [way_name(r) for r in ranked.itertuples()],
        "usd": [fmt_range(lo, m, hi, 2) for m, lo, hi in zip(
            ranked["usd_per_mtok"], ranked["usd_per_mtok_low"], ranked["usd_per_mtok_high"])],
        "margin": ranked["margin"].map("x{:.2f}".format),
        "verdict": ranked["verdict"].map(words)})


def at_band(ways: pd.DataFrame, p90: float) -> pd.DataFrame:
    """``ways`` with each modelled row's cost range widened to ``p90`` (a factor either way,
    as a rented row's range is its band's 90th percentile; a row's own band is kept where it
    is wider): the ranges a decision is read against at a wider band, such as the buyer's
    (:func:`napkin.validation.error_band` with ``"new stack"``). Rows without a band (the
    APIs' quotes, desk machines' ranges) are unchanged."""
    out = ways.copy()
    banded = out["band_p90"].notna()
    factor = np.maximum(out.loc[banded, "band_p90"], p90)
    out.loc[banded, "usd_per_mtok_low"] = out.loc[banded, "usd_per_mtok"] / factor
    out.loc[banded, "usd_per_mtok_high"] = out.loc[banded, "usd_per_mtok"] * factor
    return out


def price_crossing(runs: pd.DataFrame, usd_per_mtok: float) -> pd.DataFrame:
    """For each engine of :func:`measured_serving`, the mean batch at which its measured cost
    per million tokens comes down to ``usd_per_mtok``: interpolated in log-log between the
    two measured batches either side of it (cost per token falls about as a power of the
    batch), with those batches; NaN for an engine never that cheap, or always."""
    rows = []
    for engine, g in runs.sort_values("mean_batch").groupby("engine", sort=False):
        b, c = g["mean_batch"].to_numpy(float), g["usd_per_mtok"].to_numpy(float)
        below = np.flatnonzero(c <= usd_per_mtok)
        i = below[0] if len(below) else 0
        if not len(below) or i == 0:
            rows.append({"engine": engine, "batch": np.nan, "below": np.nan, "above": np.nan})
            continue
        lb, lc = np.log(b[i - 1:i + 1]), np.log(c[i - 1:i + 1])
        at = float(np.exp(np.interp(math.log(usd_per_mtok), lc[::-1], lb[::-1])))
        rows.append({"engine": engine, "batch": at, "below": b[i], "above": b[i - 1]})
    return pd.DataFrame(rows).set_index("engine")


def error_display(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`napkin.costs.energy.error_summary` formatted for the page."""
    return pd.DataFrame({
        "group": summary["group"], "n": summary["n"].map(str),
        "median": summary["median_abs"].map("{:.0%}".format),
        "p90": summary["p90_abs"].map("{:.0%}".format),
        "bias": summary["bias"].map("{:+.0%}".format),
        "measured_power": summary["measured_power_median_abs"].map("{:.0%}".format),
        "draw": summary["draw_over_rating"].map("{:.0%}".format)})
