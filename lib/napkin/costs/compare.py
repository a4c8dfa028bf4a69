"""Every way of getting a workload's tokens side by side: dollars per million output tokens
and joules per token, owned, rented (on demand, or on a contract that pays every hour) and
through an API, and the hours of use a day at which owning breaks even.

A *way* of getting tokens is a machine and how it is paid for: a desk machine bought, a
datacenter GPU rented by the hour or on a contract, or an API's price per token.
:func:`cost_table` is the chapter's table; :func:`breakeven_table` its break-even hours;
:func:`cost_column` the column chapter 8 adds to its ranking.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pandas as pd

from .. import buying
from . import model, power, prices
from .model import Usage
from .throughput import DESK, KV, RENTED, TP_SIZES, Serving, committed, owned, rented

__all__ = ["API", "API_PRICE_KIND", "api_row", "BREAKEVEN_COLUMNS", "breakeven_table",
           "cheapest_at_speed", "cost_column", "cost_table", "servings", "trade_curves"]

#: What an API row is called, and what its price is: the blended price of a request, per
#: million output tokens (the output price plus the input price times prompt over answer).
API = "API"
API_PRICE_KIND = "blended: output price + input price x prompt / answer"
BREAKEVEN_COLUMNS = ["option", "users", "usd_per_mtok", "rented_reference", "rented_usd_per_mtok",
                     "hours_to_beat_renting", "api_usd_per_mtok", "hours_to_beat_api",
                     "committed_reference", "committed_usd_per_mtok", "cheaper_than_committed"]


def _costs(s: Serving, usage: Usage) -> dict:
    """Dollars per million output tokens and joules per token of one :class:`Serving`: the
    middle, and the band of its throughput (low cost at the high rate); for rented GPUs also
    the cost at the cheapest and the dearest quote."""
    nan = math.nan
    out = {"usd_per_mtok": nan, "usd_per_mtok_low": nan, "usd_per_mtok_high": nan,
           "usd_per_mtok_cheapest_quote": nan, "usd_per_mtok_dearest_quote": nan,
           "joules_per_token": nan, "joules_per_token_low": nan,
           "joules_per_token_high": nan}
    if not s.fits:
        return out
    rates = np.array([s.tokens_per_s, s.tokens_per_s_high, s.tokens_per_s_low])
    if s.kind == "owned":
        cost = model.owned_usd_per_mtok(s.price_usd, rates, s.power_W, usage)
    elif s.kind == "committed":
        cost = model.committed_usd_per_mtok(s.usd_per_hour, rates, usage)
    else:
        cost = model.rented_usd_per_mtok(s.usd_per_hour, rates)
        out["usd_per_mtok_cheapest_quote"] = float(model.rented_usd_per_mtok(
            s.usd_per_hour_low, s.tokens_per_s))
        out["usd_per_mtok_dearest_quote"] = float(model.rented_usd_per_mtok(
            s.usd_per_hour_high, s.tokens_per_s))
    out.update(usd_per_mtok=float(cost[0]), usd_per_mtok_low=float(cost[1]),
               usd_per_mtok_high=float(cost[2]))
    if s.power_W == s.power_W:  # a rented GPU with no stated rating has no energy figure
        energy = model.joules_per_token(s.power_W, rates)
        out.update(joules_per_token=float(energy[0]), joules_per_token_low=float(energy[1]),
                   joules_per_token_high=float(energy[2]))
    return out


def api_row(w: buying.Workload) -> dict:
    """The API's side: the quoted prices weighted by the workload's prompt and answer."""
    q = prices.api_price(w.model, w.prompt_tokens, w.output_tokens)
    return {"option": API, "kind": "api", "chip": "", "users": 0, "fits": True, "reason": "",
            "usd_per_mtok": q["median"], "usd_per_mtok_low": q["low"],
            "usd_per_mtok_high": q["high"], "price_kind": API_PRICE_KIND,
            "price_basis": f"blended price, median of {q['quotes']} providers "
                           f"({q['providers']}), {prices.span_text([q['oldest'], q['newest']])}"}


def servings(w: buying.Workload, users=1, desk=DESK, rented_chips=RENTED,
             include_committed: bool = True) -> list[Serving]:
    """Every desk machine owned and every datacenter GPU rented (on demand, and on a
    contract where one is recorded), serving ``w`` to ``users`` at once (a whole number, None:
    as many as each can hold, or a :class:`~napkin.costs.service.ServiceLevel`)."""
    out = [owned(c, w, users) for c in desk] + [rented(c, w, users) for c in rented_chips]
    if include_committed:
        out += [s for s in (committed(c, w, users) for c in rented_chips) if s is not None]
    return out


def cost_table(w: buying.Workload, users=1, usage: Usage | None = None, desk=DESK,
               rented_chips=RENTED, include_api: bool = True,
               include_committed: bool = True) -> pd.DataFrame:
    """Dollars per million output tokens and joules per token of every way to serve ``w``
    to ``users`` at once (a whole number, None: as many as each holds, or a
    :class:`~napkin.costs.service.ServiceLevel`: as many as each serves within it), cheapest
    first; ways that cannot serve it come last, unpriced, with the reason."""
    usage = (usage or Usage()).resolved()
    rows = [{**asdict(s), **_costs(s, usage)}
            for s in servings(w, users, desk, rented_chips, include_committed)]
    if include_api:
        rows.append(api_row(w))
    df = pd.DataFrame(rows)
    df["order"] = np.where(df["fits"], df["usd_per_mtok"], np.inf)
    return df.sort_values(["order", "option"], kind="stable").drop(columns="order").reset_index(
        drop=True)


def _cheapest(df: pd.DataFrame, kind: str) -> tuple[float, str]:
    rows = df[(df["kind"] == kind) & df["fits"]]
    if rows.empty:
        return math.nan, ""
    best = rows.loc[rows["usd_per_mtok"].idxmin()]
    return float(best["usd_per_mtok"]), best["option"]


def breakeven_table(w: buying.Workload, users=1, usage: Usage | None = None,
                    table: pd.DataFrame | None = None) -> pd.DataFrame:
    """For each desk machine that serves ``w``: hours of use a day above which owning it
    makes tokens cheaper than the cheapest GPU rented on demand and than the API's blended
    price, at the same ``users`` (inf: never within a day); and, beside them, the cheapest
    GPU rented on a contract at the usage's hours a day (a contract pays all 24, so its cost
    per token falls with use as owning's does) and whether owning is cheaper."""
    usage = (usage or Usage()).resolved()
    df = cost_table(w, users, usage) if table is None else table
    ref_rent, cheapest = _cheapest(df, "rented")
    ref_commit, commit_name = _cheapest(df, "committed")
    api = df[df["kind"] == "api"]["usd_per_mtok"]
    ref_api = float(api.iloc[0]) if len(api) else math.nan
    rows = []
    for r in df[(df["kind"] == "owned") & df["fits"]].itertuples():
        def hours(ref):
            if not ref == ref:  # NaN: nothing to compare with
                return math.nan
            return model.breakeven_hours_per_day(r.price_usd, r.tokens_per_s, r.power_W, ref,
                                                 usage)
        rows.append({"option": r.option, "users": r.users, "usd_per_mtok": r.usd_per_mtok,
                     "rented_reference": cheapest, "rented_usd_per_mtok": ref_rent,
                     "hours_to_beat_renting": hours(ref_rent),
                     "api_usd_per_mtok": ref_api, "hours_to_beat_api": hours(ref_api),
                     "committed_reference": commit_name,
                     "committed_usd_per_mtok": ref_commit,
                     "cheaper_than_committed": bool(r.usd_per_mtok < ref_commit)})
    return pd.DataFrame(rows, columns=BREAKEVEN_COLUMNS)


def cost_column(w: buying.Workload, usage: Usage | None = None,
                machines: list[str] | None = None) -> pd.DataFrame:
    """Chapter 8's cost column: for each machine (chip name; default every desk machine and
    rented GPU priced here), dollars per million output tokens serving ``w`` to its
    ``users`` (owned where a vendor price is recorded, else rented where a rental price is),
    the band, joules per token, how it was priced, and why not where it was not."""
    usage = (usage or Usage()).resolved()
    names = machines or list(DESK) + list(RENTED)
    rentable = set(prices.rental_quotes()["chip"])
    owned_prices = set(prices.list_prices()["chip"])
    rows = []
    for name in names:
        if name in owned_prices:
            try:
                s = owned(name, w, w.users)
            except ValueError as err:  # no power figure for this machine
                s = Serving(name, "owned", name, 0, False, reason=str(err))
        elif name in rentable:
            try:
                s = rented(name, w, w.users)
            except ValueError as err:  # a chip the step model cannot build an engine for
                s = Serving(name, "rented", name, 0, False, reason=str(err))
        else:
            s = Serving(name, "", name, 0, False,
                        reason="no vendor or rental price recorded in data/")
        c = _costs(s, usage)
        rows.append({"machine": name, "how": s.kind, "fits": s.fits,
                     "usd_per_mtok": c["usd_per_mtok"],
                     "usd_per_mtok_low": c["usd_per_mtok_low"],
                     "usd_per_mtok_high": c["usd_per_mtok_high"],
                     "joules_per_token": c["joules_per_token"],
                     "configuration": s.configuration, "price_basis": s.price_basis,
                     "reason": s.reason})
    return pd.DataFrame(rows)


def trade_curves(w: buying.Workload, usage: Usage | None = None, desk=DESK,
                 rented_chips=RENTED, points: int = 16) -> pd.DataFrame:
    """Dollars per million output tokens against the tokens per second each user sees, as
    the users served at once grow from one to as many as fit: the trade a buyer makes. Desk
    machines in their cheapest configuration that holds the model, at llama.cpp's format
    (:func:`~napkin.costs.throughput.desk_format`); rented GPUs on the engine
    (1 to 8 GPUs) that makes the most tokens per GPU at each speed
    (:func:`napkin.predict.frontier.frontier`)."""
    from ..predict import frontier

    usage = (usage or Usage()).resolved()
    rows = []
    for chip in desk:
        top = owned(chip, w, None)
        if not top.fits:
            continue
        for u in sorted(set(np.unique(np.round(np.geomspace(1, top.users, points)).astype(int)))):
            s = owned(chip, w, int(u))
            c = _costs(s, usage)
            rows.append({"option": s.option, "kind": "owned", "users": s.users,
                         "weight_format": s.weight_format,
                         "per_user_tokens_per_s": s.per_user_tokens_per_s,
                         "tokens_per_s": s.tokens_per_s, "usd_per_mtok": c["usd_per_mtok"],
                         "joules_per_token": c["joules_per_token"], "n_chips": 1})
    for chip in rented_chips:
        quote = prices.rental_price(chip)
        try:
            f = frontier.frontier(chip, w.model, weights=w.weight_format, kv=KV,
                                  input_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                                  sizes=TP_SIZES, points=points)
        except ValueError:  # fits on no engine size
            continue
        draw = power.rented_draw(chip)["power_W"]
        for r in f.itertuples():
            rate = r.per_gpu_tok_per_s * r.tp
            rows.append({"option": f"{chip} (rented)", "kind": "rented", "users": int(r.batch),
                         "weight_format": w.weight_format,
                         "per_user_tokens_per_s": r.per_user_tok_per_s, "tokens_per_s": rate,
                         "usd_per_mtok": float(model.rented_usd_per_mtok(
                             r.tp * quote["median"], rate)),
                         "joules_per_token": float(model.joules_per_token(r.tp * draw, rate)),
                         "n_chips": int(r.tp)})
    return pd.DataFrame(rows)


def cheapest_at_speed(curves: pd.DataFrame, tokens_per_s_per_user: float) -> pd.Series:
    """The point of :func:`trade_curves` with the lowest cost among those whose users each
    see at least ``tokens_per_s_per_user``."""
    fast = curves[curves["per_user_tokens_per_s"] >= tokens_per_s_per_user]
    if fast.empty:
        raise ValueError(f"no way serves {tokens_per_s_per_user!r} tokens/s per user")
    return fast.loc[fast["usd_per_mtok"].idxmin()]
