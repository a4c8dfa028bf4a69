"""The in-page calculator: for each workload and way of serving, the candidate loads a reader's
service level can pick from, holding what the page's arithmetic needs, and that arithmetic as
Vega expressions generated from :data:`napkin.costs.model.FORMULAS`.

The throughputs are the library's (they need the step model and chapter 8's estimate, which
do not run in a page), computed on a grid of users at once: every count up to
:data:`DENSE_UP_TO`, then log-spaced to as many as memory holds (a desk machine), or log-spaced
batches on every engine size (a rented GPU), with the loads the library picks at the book's
default service level added. The page keeps, for each way, the cheapest candidate whose users
each get the reader's speed and first token (:func:`pick` is the same choice in Python); away
from the default it may therefore stop a little short of the exact largest load
(:func:`napkin.costs.cost_table` searches every whole number). What the reader moves (service
level, hours of use a day, electricity price, years of life) enters only the choice and the
cost formulas, which the page evaluates itself. A test renders the page and checks it against
the library on a grid of settings.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from .. import buying
from . import compare, model, power, prices, service, throughput
from .model import Usage
from .throughput import DESK, KV, RENTED, TP_SIZES

__all__ = ["breakeven_expressions", "DENSE_UP_TO", "DIGITS", "expressions", "grid", "LOAD_COLUMNS",
           "NEVER_S", "pick", "POINTS", "presets", "prune", "rows", "SLIDERS", "split",
           "WAY_COLUMNS"]

#: The page's sliders -> the formulas' inputs they set.
SLIDERS = {"hours_per_day": "hours", "usd_per_kWh": "elec", "life_years": "life"}
#: Users at once tried one by one before the grid turns log-spaced.
DENSE_UP_TO = 16
#: Log-spaced points beyond that (desk) and per engine size (rented).
POINTS = 16
#: A first token that never comes (a queue whose prompts arrive faster than they are
#: prefilled), as a number the page can compare.
NEVER_S = 1e9


def presets() -> dict[str, buying.Workload]:
    """The calculator's workloads: chapter 8's chat lengths for three models (Llama 3.3 70B
    at 8 and 4 bits, Llama 3.1 8B at 16 bits, gpt-oss-120b at its native MXFP4), and
    chapter 8's coding agent, the essay's long prompt. The 8-bit one is FP8 on a rented
    GPU and llama.cpp's Q8_0 on a desk (:func:`~napkin.costs.throughput.desk_format`)."""
    p = buying.presets()
    chat, agent = p["chat"], p["coding agent"]

    def w(name, model, fmt, like=chat):
        return buying.Workload(name, like.prompt_tokens, like.output_tokens, 1, model, fmt)

    return {
        "Llama 3.3 70B, 8-bit, chat": w("Llama 3.3 70B, 8-bit, chat", "Llama-3.3-70B", "FP8"),
        "Llama 3.3 70B, 4-bit, chat": w("Llama 3.3 70B, 4-bit, chat", "Llama-3.3-70B", "Q4_K"),
        "Llama 3.3 70B, 4-bit, coding agent": w("Llama 3.3 70B, 4-bit, coding agent",
                                                "Llama-3.3-70B", "Q4_K", agent),
        "Llama 3.1 8B, 16-bit, chat": w("Llama 3.1 8B, 16-bit, chat", "Llama-3.1-8B", "F16"),
        "gpt-oss-120b, MXFP4, chat": w("gpt-oss-120b, MXFP4, chat", "gpt-oss-120b", "MXFP4"),
    }


def grid(top: int, extra=()) -> list[int]:
    """Users (or batches) to try, at most ``top``: every count to :data:`DENSE_UP_TO`, then
    :data:`POINTS` log-spaced ones to ``top``, and ``extra``."""
    if top < 1:
        return []
    dense = range(1, min(top, DENSE_UP_TO) + 1)
    spaced = np.round(np.geomspace(min(top, DENSE_UP_TO), top, POINTS)).astype(int)
    return sorted({*dense, *map(int, spaced), *(int(x) for x in extra if 1 <= x <= top)})


def _nz(x) -> float:
    """NaN as 0 for the page (its expressions test ``> 0``)."""
    return 0.0 if x != x else float(x)


def _base(key: str, s, api: dict) -> dict:
    return {"workload": key, "option": s.option, "kind": s.kind, "chip": s.chip,
            "weight_format": s.weight_format,
            "configuration": s.configuration, "price_basis": s.price_basis,
            "power_basis": s.power_basis, "band": s.band, "price_usd": _nz(s.price_usd),
            "usd_per_hour": _nz(s.usd_per_hour), "power_W": _nz(s.power_W),
            "api_usd_per_mtok": api["usd_per_mtok"]}


def _desk_rows(key: str, w: buying.Workload, chip: str, api: dict, exact: int) -> list[dict]:
    top = throughput.owned(chip, w, None)
    if not top.fits:
        return []
    m = throughput._desk_machines()[chip]
    wd = replace(w, weight_format=top.weight_format)
    out = []
    for u in grid(top.users, [exact]):
        d = throughput._desk_step(m, wd, u)
        rate = [throughput.desk_tokens_per_s(u, w.output_tokens, t, s)
                for t, s in zip(d["first"], d["speed"])]
        first = u * d["first"][1]
        out.append({**_base(key, top, api), "users": u, "n_chips": 1,
                    "tokens_per_s": rate[1], "tokens_per_s_low": rate[2],
                    "tokens_per_s_high": rate[0], "per_user": d["speed"][1],
                    "first_token_s": first, "latency_s": first + w.output_tokens / d["speed"][1]})
    return out


def _rented_rows(key: str, w: buying.Workload, chip: str, api: dict, exact) -> list[dict]:
    """Every engine size's candidate batches: continuous batching's rate and mean step, and
    the 99th-percentile first token under random arrivals at that rate (as
    :func:`napkin.predict` computes them)."""
    from ..predict import calibrated, engine
    from ..predict.serve import continuous, first_token_tail, memory_batch

    ways = [s for s in (throughput.rented(chip, w, 1), throughput.committed(chip, w, 1))
            if s is not None and s.fits]
    if not ways:
        return []
    cal = calibrated()
    case = throughput.band_case(chip, w.model)
    p90 = throughput.band("server", case)["p90"]
    r = prices.rental_price(chip)
    quote = {"rented": (r["median"], f"median of {r['quotes']} providers' on-demand quotes")}
    q = prices.committed_price(chip)
    if q is not None:
        quote["committed"] = (q["price"], f"{q['offer']} ({q['provider']}), every hour paid")
    try:
        d = power.rented_draw(chip)
        draw, draw_basis = d["power_W"], d["basis"]
    except ValueError:
        draw, draw_basis = math.nan, "no power rating in data/machine_power.csv"
    i, o = w.prompt_tokens, w.output_tokens
    out = []
    for n in TP_SIZES:
        try:
            c = engine(chip, w.model, n_chips=n, weights=w.weight_format, kv=KV).constants
        except ValueError:
            continue
        top = int(memory_batch(c, i, o)[0])
        batches = np.array(grid(top, [b for tp, b in exact if tp == n]), dtype=float)
        if not len(batches):
            continue
        run = continuous(c.take(np.zeros(len(batches), dtype=int)), batches, i, o, cal)
        first = np.minimum(first_token_tail(run["first_token_s"], run["prefill_s"],
                                            run["tokens_per_s"] / o), NEVER_S)
        for k, b in enumerate(batches):
            rate, step = float(run["tokens_per_s"][k]), float(run["step_s"][k])
            for s in ways:
                price, what = quote[s.kind]
                out.append({**_base(key, s, api), "configuration": f"{n} x {chip}",
                            "band": f"server, {case} chips and models",
                            "price_basis": f"{n} x {price:.2f} USD per GPU-hour, {what}",
                            "power_basis": f"{n} x {draw_basis}",
                            "usd_per_hour": n * price, "power_W": _nz(n * draw),
                            "users": int(b), "n_chips": n, "tokens_per_s": rate,
                            "tokens_per_s_low": rate / p90, "tokens_per_s_high": rate * p90,
                            "per_user": 1.0 / step, "first_token_s": float(first[k]),
                            "latency_s": float(first[k]) + o * step})
    return out


def rows(workloads: dict[str, buying.Workload] | None = None, desk=DESK,
         rented_chips=RENTED, level: service.ServiceLevel | None = None) -> pd.DataFrame:
    """Every candidate load of every way, for each workload: throughput (with its band),
    speed per user, first token and whole answer, price and draw, and the API's blended price
    (a row of kind ``api`` of its own). ``level`` (default :func:`service.chat`) adds the
    loads the library picks at it, so that the page's default is the chapter's table."""
    level = level or service.chat()
    out = []
    for key, w in (workloads or presets()).items():
        api = compare.api_row(w)
        out.append({"workload": key, "option": compare.API, "kind": "api", "chip": "",
                    "weight_format": "",
                    "configuration": "", "price_basis": api["price_basis"],
                    "power_basis": "", "band": "providers' spread", "price_usd": 0.0,
                    "usd_per_hour": 0.0, "power_W": 0.0, "api_usd_per_mtok": api["usd_per_mtok"],
                    "api_usd_per_mtok_low": api["usd_per_mtok_low"],
                    "api_usd_per_mtok_high": api["usd_per_mtok_high"], "users": 0,
                    "n_chips": 0, "tokens_per_s": 0.0, "tokens_per_s_low": 0.0,
                    "tokens_per_s_high": 0.0, "per_user": 0.0, "first_token_s": 0.0,
                    "latency_s": 0.0})
        for chip in desk:
            exact = throughput.owned(chip, w, level)
            out += _desk_rows(key, w, chip, api, exact.users if exact.fits else 0)
        for chip in rented_chips:
            exact = throughput.rented(chip, w, level)
            out += _rented_rows(key, w, chip, api,
                                [(exact.n_chips, exact.users)] if exact.fits else [])
    df = pd.DataFrame(out)
    for col in ("api_usd_per_mtok_low", "api_usd_per_mtok_high"):
        df[col] = df.groupby("workload")[col].transform("max")
    return prune(df)


def prune(df: pd.DataFrame) -> pd.DataFrame:
    """The candidates a reader's level can pick: a candidate is dropped when another of the
    same way is at least as fast per user, at least as quick to the first token and at least
    as cheap per token (more tokens per second per dollar of the hour; for an owned machine,
    whose price and draw are its own, more tokens per second), so :func:`pick` never picks
    it."""
    keep = []
    for _, g in df.groupby(["workload", "option"], sort=False):
        worth = np.where(g["kind"] == "owned", g["tokens_per_s"],
                         g["tokens_per_s"] / g["usd_per_hour"].where(g["usd_per_hour"] > 0, 1))
        v = np.column_stack([g["per_user"], -g["first_token_s"], worth])
        for k in range(len(g)):
            better = (v >= v[k]).all(axis=1) & (v > v[k]).any(axis=1)
            if not better.any():
                keep.append(g.index[k])
    return df.loc[sorted(keep)].reset_index(drop=True)


#: Columns that are the same for every candidate of a way: the page looks them up once, by
#: the way's number ``k`` (per GPU where a candidate's engine size changes them).
WAY_COLUMNS = ("workload", "option", "kind", "chip", "weight_format", "configuration",
               "price_basis", "power_basis", "band", "price_usd", "usd_per_gpu_hour",
               "power_W_per_gpu", "api_usd_per_mtok", "api_usd_per_mtok_low",
               "api_usd_per_mtok_high")
#: What each candidate carries itself.
LOAD_COLUMNS = ("k", "users", "n_chips", "tokens_per_s", "tokens_per_s_low",
                "tokens_per_s_high", "per_user", "first_token_s", "latency_s")
#: Significant digits the page's numbers keep (the calculator's figures agree with the
#: library's to about one part in 10^10).
DIGITS = 11


def split(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows as the page carries them: each way once (its texts, price and draw per GPU,
    the API's prices), numbered ``k``, and each candidate's load and rates with its way's
    number. The page joins them back (a lookup) and multiplies the per-GPU figures by the
    candidate's engine size."""
    df = df.assign(usd_per_gpu_hour=df["usd_per_hour"] / df["n_chips"].where(df["n_chips"] > 0, 1),
                   power_W_per_gpu=df["power_W"] / df["n_chips"].where(df["n_chips"] > 0, 1))
    key = df["workload"] + "|" + df["option"]
    k = pd.Series(pd.factorize(key)[0], index=df.index)
    ways = df.assign(k=k).drop_duplicates("k")
    ways = ways.assign(
        configuration=np.where(ways["kind"] == "owned", ways["configuration"], ""),
        price_basis=ways["price_basis"].str.replace(r"^\d+ x ", "", regex=True),
        power_basis=ways["power_basis"].str.replace(r"^\d+ x ", "", regex=True))
    ways = ways[["k", *WAY_COLUMNS]].reset_index(drop=True)
    loads = df.assign(k=k)[list(LOAD_COLUMNS)].reset_index(drop=True)
    for col in LOAD_COLUMNS[3:]:
        loads[col] = [float(f"{v:.{DIGITS}g}") for v in loads[col]]
    return loads, ways


def _cost(df: pd.DataFrame, rate: str, usage: Usage) -> np.ndarray:
    """The page's cost per million output tokens of each row at throughput ``rate``."""
    u = usage.resolved()
    t = df[rate].where(df[rate] > 0, np.nan).to_numpy(dtype=float)
    own = model.evaluate("owned_usd_per_mtok", price_usd=df["price_usd"].to_numpy(float),
                         tokens_per_s=t, power_W=df["power_W"].to_numpy(float),
                         life_years=u.life_years, hours_per_day=u.hours_per_day,
                         usd_per_kWh=u.usd_per_kWh)
    hour = df["usd_per_hour"].to_numpy(float)
    rent = model.evaluate("rented_usd_per_mtok", usd_per_hour=hour, tokens_per_s=t)
    commit = model.evaluate("committed_usd_per_mtok", usd_per_hour=hour, tokens_per_s=t,
                            hours_per_day=u.hours_per_day)
    kind = df["kind"].to_numpy()
    return np.select([kind == "owned", kind == "rented", kind == "committed"],
                     [own, rent, commit], df["api_usd_per_mtok"].to_numpy(float))


def pick(df: pd.DataFrame, workload: str, level: service.ServiceLevel,
         usage: Usage) -> pd.DataFrame:
    """What the page shows for these settings, in Python: for each way, the cheapest of its
    candidates (:func:`rows`) whose users each get ``level``; the API's row as it is."""
    d = df[df["workload"] == workload].copy()
    meets = (d["kind"] == "api") | ((d["per_user"] >= level.tokens_per_s_per_user)
                                    & (d["first_token_s"] <= level.first_token_s))
    d = d[meets].copy()
    d["cost_mid"] = _cost(d, "tokens_per_s", usage)
    d = d.sort_values(["option", "cost_mid", "users"], ascending=[True, True, False])
    return d.groupby("option", sort=False).head(1).sort_values("cost_mid").reset_index(drop=True)


def expressions() -> dict[str, str]:
    """The page's arithmetic over a :func:`rows` row and the sliders (``hours``, ``elec``,
    ``life``): cost per million tokens (middle and band), joules per token. The break-even
    hours need the cheapest rented way, which the chart finds first (``ref_rent``)."""
    def cost(rate: str) -> str:
        t = {"tokens_per_s": f"datum.{rate}"}
        owned = model.js("owned_usd_per_mtok", {**SLIDERS, **t})
        rented = model.js("rented_usd_per_mtok", t)
        committed = model.js("committed_usd_per_mtok", {**SLIDERS, **t})
        return (f"datum.kind == 'owned' ? {owned} : datum.kind == 'rented' ? {rented} : "
                f"datum.kind == 'committed' ? {committed} : null")

    e = {"cost_mid": cost("tokens_per_s"), "cost_low": cost("tokens_per_s_high"),
         "cost_high": cost("tokens_per_s_low")}
    for part, api in (("mid", "api_usd_per_mtok"), ("low", "api_usd_per_mtok_low"),
                      ("high", "api_usd_per_mtok_high")):
        e[f"cost_{part}"] = f"datum.kind == 'api' ? datum.{api} : ({e[f'cost_{part}']})"
    e["joules"] = f"datum.kind == 'api' || datum.power_W <= 0 ? null : " \
                  f"{model.js('joules_per_token')}"
    return e


def breakeven_expressions() -> dict[str, str]:
    """Hours a day above which owning beats the cheapest rented way (``datum.ref_rent``) and
    the API's blended price (null: never within a day; not owned)."""
    e = {}
    for name, ref in (("beat_rent", "ref_rent"), ("beat_api", "api_usd_per_mtok")):
        hours = model.breakeven_js({**SLIDERS, "ref_usd_per_mtok": f"datum.{ref}"})
        e[name] = f"datum.kind == 'owned' && datum.{ref} > 0 ? {hours} : null"
    return e
