"""The in-page calculator: one row per workload, users at once and way of serving, holding
what the page's arithmetic needs, and that arithmetic as Vega expressions generated from
:data:`napkin.costs.model.FORMULAS`.

The throughputs are the library's (they need the step model and chapter 8's estimate, which
do not run in a page); what the reader moves (hours of use a day, electricity price, years of
life) enters only the cost formulas, which the page evaluates itself. A test renders the page
and checks its numbers against :func:`napkin.costs.cost_table` and
:func:`napkin.costs.breakeven_table` on a grid.
"""

from __future__ import annotations

import math

import pandas as pd

from .. import buying
from . import compare, model
from .throughput import DESK, RENTED

#: Users at once the page offers; 0 means as many as each way can hold.
USERS = (1, 8, 64, 0)
USERS_LABELS = {1: "1", 8: "8", 64: "64", 0: "as many as fit"}
#: The page's sliders -> the formulas' inputs they set.
SLIDERS = {"hours_per_day": "hours", "usd_per_kWh": "elec", "life_years": "life"}


def presets() -> dict[str, buying.Workload]:
    """The calculator's workloads: chapter 8's chat lengths for three models (Llama 3.3 70B
    at 8 and 4 bits, Llama 3.1 8B at 16 bits, gpt-oss-120b at its native MXFP4), and
    chapter 8's coding agent, the essay's long prompt."""
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


def _nz(x) -> float:
    """NaN as 0 for the page (its expressions test ``> 0``)."""
    return 0.0 if x != x else float(x)


def rows(workloads: dict[str, buying.Workload] | None = None, users=USERS, desk=DESK,
         rented_chips=RENTED) -> pd.DataFrame:
    """One row per workload, users option and way of serving: throughput (with its band),
    speed per user, price, draw, and the references owning is compared with (the cheapest
    rented way at the same users, the API)."""
    out = []
    for key, w in (workloads or presets()).items():
        api = compare.api_row(w)
        for u in users:
            table = compare.cost_table(w, u or None, model.Usage(usd_per_kWh=1.0), desk,
                                       rented_chips)
            rent = table[(table["kind"] == "rented") & table["fits"]]
            ref = rent["usd_per_mtok"].min() if len(rent) else math.nan
            for r in table.itertuples():
                out.append({
                    "workload": key, "users_key": USERS_LABELS[u], "option": r.option,
                    "kind": r.kind, "fits": bool(r.fits), "reason": r.reason or "",
                    "users": int(r.users) if r.users == r.users else 0,
                    "tokens_per_s": _nz(r.tokens_per_s),
                    "tokens_per_s_low": _nz(r.tokens_per_s_low),
                    "tokens_per_s_high": _nz(r.tokens_per_s_high),
                    "per_user": _nz(r.per_user_tokens_per_s),
                    "price_usd": _nz(r.price_usd), "usd_per_hour": _nz(r.usd_per_hour),
                    "power_W": _nz(r.power_W), "configuration": r.configuration or "",
                    "price_basis": r.price_basis or "", "power_basis": r.power_basis or "",
                    "ref_rent_usd_per_mtok": _nz(ref),
                    "api_usd_per_mtok": api["usd_per_mtok"],
                    "api_usd_per_mtok_low": api["usd_per_mtok_low"],
                    "api_usd_per_mtok_high": api["usd_per_mtok_high"]})
    return pd.DataFrame(out)


def expressions() -> dict[str, str]:
    """The page's arithmetic over a :func:`rows` row and the sliders (``hours``, ``elec``,
    ``life``): cost per million tokens (middle and band), joules per token, and the hours a
    day at which owning beats the cheapest rented way and the API (null: never)."""
    def cost(rate: str) -> str:
        owned = model.js("owned_usd_per_mtok", {**SLIDERS, "tokens_per_s": f"datum.{rate}"})
        rented = model.js("rented_usd_per_mtok", {"tokens_per_s": f"datum.{rate}"})
        return f"datum.kind == 'owned' ? {owned} : datum.kind == 'rented' ? {rented} : null"

    e = {"cost_mid": cost("tokens_per_s"), "cost_low": cost("tokens_per_s_high"),
         "cost_high": cost("tokens_per_s_low")}
    for part, api in (("mid", "api_usd_per_mtok"), ("low", "api_usd_per_mtok_low"),
                      ("high", "api_usd_per_mtok_high")):
        e[f"cost_{part}"] = f"datum.kind == 'api' ? datum.{api} : ({e[f'cost_{part}']})"
    e["joules"] = f"datum.kind == 'api' ? null : {model.js('joules_per_token')}"
    for name, ref in (("beat_rent", "ref_rent_usd_per_mtok"), ("beat_api", "api_usd_per_mtok")):
        hours = model.breakeven_js({**SLIDERS, "ref_usd_per_mtok": f"datum.{ref}"})
        e[name] = f"datum.kind == 'owned' && datum.{ref} > 0 ? {hours} : null"
    return e
