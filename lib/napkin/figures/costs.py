"""Chapter 11 charts: the calculator, the trade between cost and speed per user, the energy
model against ML.ENERGY, and the essay's per-token prices against measured serving."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, responsive
from ..costs import page

#: One colour per way of getting tokens: desk machines in blues and purples, rented GPUs in
#: greens, the API in the theme's neutral.
OPTION_COLORS = {
    "RTX PRO 6000 Blackwell": "#1f5fa8", "M3 Ultra": "#5aa0e6", "DGX Spark": "#8e44ad",
    "Strix Halo": "#c0392b", "RTX 5090": "#d4862a", "RTX 4090": "#eb6834",
    "H100 SXM (rented)": "#3c9a3c", "H200 (rented)": "#1e6b3a", "B200 (rented)": "#7cc47c",
    "API": PALETTE["ceiling"],
}
ENGINE_COLORS = {"1 x H100": "#7cc47c", "2 x H100": "#3c9a3c", "4 x H100": "#1e6b3a",
                 "1 x B200": "#9ec5f0", "2 x B200": "#2a78d6", "8 x B200": "#1f3f78"}


def _option_color(options) -> alt.Color:
    names = [o for o in OPTION_COLORS if o in set(options)]
    return alt.Color("option:N", title=None, sort=names, scale=alt.Scale(
        domain=names, range=[OPTION_COLORS[o] for o in names]))


def calculator(rows: pd.DataFrame, presets: dict, elec_range: tuple[float, float],
               default: str | None = None, start: dict | None = None,
               audit: bool = False) -> alt.Chart:
    """Dollars per million output tokens of every way to serve a workload (menu) to some
    users at once (menu), with sliders for hours of use a day, electricity price and years
    of life; every number is computed in the page by :func:`napkin.costs.page.expressions`.
    ``elec_range``: the electricity slider's ends (USD/kWh). ``start`` sets the controls'
    starting values (keys workload, users, hours, elec, life).
    ``audit``: each value label's accessible description carries the computed values
    unrounded, for the test that compares them with the library."""
    s = {"workload": default or next(iter(presets)), "users": page.USERS_LABELS[1],
         "hours": 8.0, "elec": 0.19, "life": 3.0} | (start or {})
    lo, hi = elec_range
    workload = alt.param(name="wl", value=s["workload"], bind=alt.binding_select(
        options=list(presets), name="Workload "))
    users = alt.param(name="us", value=s["users"], bind=alt.binding_select(
        options=list(page.USERS_LABELS.values()), name="Users at once "))
    hours = alt.param(name="hours", value=s["hours"], bind=alt.binding_range(
        min=0.5, max=24, step=0.5, name="Hours of use a day "))
    elec = alt.param(name="elec", value=s["elec"], bind=alt.binding_range(
        min=round(lo, 2), max=round(hi, 2), step=0.01, name="Electricity (USD/kWh) "))
    life = alt.param(name="life", value=s["life"], bind=alt.binding_range(
        min=1, max=8, step=0.5, name="Years of life "))
    chart = alt.Chart(rows).transform_filter(
        "datum.workload == wl && datum.users_key == us && datum.fits")
    for name, expr in page.expressions().items():
        chart = chart.transform_calculate(**{name: expr})
    chart = chart.transform_calculate(
        who="datum.kind == 'api' ? 'quoted prices' : datum.kind == 'owned' ? "
            "'bought, ' + datum.configuration : 'rented, ' + datum.configuration")
    tips = [alt.Tooltip("option:N", title="Way"), alt.Tooltip("who:N", title="As"),
            alt.Tooltip("cost_mid:Q", title="USD per million output tokens", format=",.3~r"),
            alt.Tooltip("cost_low:Q", title="Band from", format=",.3~r"),
            alt.Tooltip("cost_high:Q", title="Band to", format=",.3~r"),
            alt.Tooltip("joules:Q", title="Joules per output token", format=",.3~r"),
            alt.Tooltip("users:Q", title="Users served at once"),
            alt.Tooltip("tokens_per_s:Q", title="Output tokens/s, all users", format=",.3~r"),
            alt.Tooltip("per_user:Q", title="Tokens/s each user sees", format=",.3~r"),
            alt.Tooltip("beat_rent:Q", title="Owning beats renting above (hours a day)",
                        format=",.1f"),
            alt.Tooltip("beat_api:Q", title="Owning beats the API above (hours a day)",
                        format=",.1f"),
            alt.Tooltip("price_basis:N", title="Price"),
            alt.Tooltip("power_basis:N", title="Power")]
    y = alt.Y("option:N", title=None, axis=alt.Axis(labelLimit=170),
              sort=alt.EncodingSortField(field="cost_mid", op="min", order="ascending"))
    x = alt.X("cost_mid:Q", scale=alt.Scale(type="log"))
    base = chart.encode(y=y, color=_option_color(rows["option"]).legend(None), tooltip=tips)
    ranges = base.mark_rule(strokeWidth=3).encode(x=alt.X(
        "cost_low:Q", title="USD per million output tokens (log scale)",
        scale=alt.Scale(type="log")), x2="cost_high:Q")
    dots = base.mark_point(filled=True, size=70).encode(x=x)
    labels = chart.encode(y=y, tooltip=tips).mark_text(align="left", dx=8, fontSize=11).encode(
        x="cost_high:Q", text=alt.Text("cost_mid:Q", format=",.3~r"))
    if audit:
        audited = ("option", "kind", "cost_mid", "cost_low", "cost_high", "joules",
                   "beat_rent", "beat_api")
        labels = labels.transform_calculate(audit=" + ';' + ".join(
            f"'{k}=' + datum.{k}" for k in audited)).encode(description="audit:N")
    # one short line each: a title computed in the page cannot be wrapped to a phone's width
    title = alt.ExprRef("['What a million tokens cost', wl, us + (us == 1 ? ' user' : ' users') "
                        "+ ' at once']")
    return responsive((ranges + dots + labels).add_params(workload, users, hours, elec, life),
                      340, alt.Title(title))


def trade(curves: pd.DataFrame, api: dict, title: str, subtitle: str | list) -> alt.Chart:
    """Dollars per million output tokens against the tokens per second each user sees, one
    line per way of serving as the users at once grow (bought: solid; rented: dashed), and
    the API's quoted price (a rule, its providers' spread shaded)."""
    df = curves.round({"per_user_tokens_per_s": 2, "usd_per_mtok": 3, "tokens_per_s": 1,
                       "joules_per_token": 3})
    x = alt.X("per_user_tokens_per_s:Q", title="tokens/s each user sees (log scale)",
              scale=alt.Scale(type="log"))
    y = alt.Y("usd_per_mtok:Q", title="USD per million output tokens (log scale)",
              scale=alt.Scale(type="log"))
    tips = [alt.Tooltip("option:N", title="Way"), alt.Tooltip("users:Q", title="Users at once"),
            alt.Tooltip("n_chips:Q", title="GPUs"),
            alt.Tooltip("per_user_tokens_per_s:Q", title="Tokens/s per user", format=",.1f"),
            alt.Tooltip("tokens_per_s:Q", title="Tokens/s, all users", format=",.0f"),
            alt.Tooltip("usd_per_mtok:Q", title="USD per million tokens", format=",.3~r"),
            alt.Tooltip("joules_per_token:Q", title="Joules per token", format=",.3~r")]
    lines = alt.Chart(df).mark_line(strokeWidth=2, point=alt.OverlayMarkDef(size=18)).encode(
        x=x, y=y, color=_option_color(df["option"]),
        strokeDash=alt.StrokeDash("kind:N", title=None, sort=["owned", "rented"],
                                  scale=alt.Scale(domain=["owned", "rented"],
                                                  range=[[1, 0], [5, 3]]), legend=None),
        tooltip=tips)
    band = _api_band(api, "API, median quote", ("API, median quote (USD)", "Cheapest provider",
                                                "Dearest provider"))
    return responsive(band + lines, 380, alt.Title(title, subtitle=subtitle))


def _api_band(api: dict, text: str, titles: tuple[str, str, str]) -> alt.LayerChart:
    """The APIs' prices as a shaded band from cheapest to dearest with a dashed rule at the
    median, labelled ``text``; ``titles`` name the median, low and high in the tooltip."""
    band = pd.DataFrame([{"low": api["low"], "high": api["high"], "median": api["median"],
                          "text": text, "providers": api["providers"]}])
    tips = [alt.Tooltip(f"{key}:Q", title=name, format=",.3~r")
            for key, name in zip(("median", "low", "high"), titles)]
    tips.append(alt.Tooltip("providers:N", title="Providers"))
    shade = alt.Chart(band).mark_rect(opacity=0.15, color=PALETTE["ceiling"]).encode(
        y="low:Q", y2="high:Q", tooltip=tips)
    rule = alt.Chart(band).mark_rule(color=PALETTE["ceiling"], strokeDash=[2, 2]).encode(
        y="median:Q", tooltip=tips)
    label = alt.Chart(band).mark_text(align="left", dy=-6, x=4, fontSize=11,
                                      color=PALETTE["ceiling"]).encode(y="median:Q",
                                                                       text="text:N")
    return shade + rule + label


def energy_check(check: pd.DataFrame, models: list[str], title: str) -> alt.Chart:
    """Joules per output token against the batch, for the model picked in a menu:
    ML.ENERGY's measurements (points) and the energy model with the GPUs' rated power
    (lines), one colour per engine."""
    keep = ["model", "engine", "gpu", "weights", "task", "mean_batch", "batch",
            "energy_J_per_token", "model_J_per_token", "gpu_power_W", "rated_W",
            "draw_over_rating", "model_step_s", "measured_step_s", "error", "source_url"]
    df = check[keep].round({"mean_batch": 1, "energy_J_per_token": 4,
                            "model_J_per_token": 4, "gpu_power_W": 0,
                            "draw_over_rating": 3, "model_step_s": 5, "measured_step_s": 5,
                            "error": 3})
    engines = [e for e in ENGINE_COLORS if e in set(df["engine"])]
    pick = alt.param(name="em", value=models[0], bind=alt.binding_select(
        options=models, name="Model "))
    color = alt.Color("engine:N", title=None, sort=engines, scale=alt.Scale(
        domain=engines, range=[ENGINE_COLORS[e] for e in engines]))
    x = alt.X("mean_batch:Q", title="sequences in flight (log scale)",
              scale=alt.Scale(type="log"))
    tips = [alt.Tooltip("engine:N", title="GPUs"), alt.Tooltip("model:N", title="Model"),
            alt.Tooltip("weights:N", title="Weights"), alt.Tooltip("task:N", title="Task"),
            alt.Tooltip("mean_batch:Q", title="Mean batch", format=",.0f"),
            alt.Tooltip("energy_J_per_token:Q", title="Measured (J/token)", format=",.3~r"),
            alt.Tooltip("model_J_per_token:Q", title="Model, rated power (J/token)",
                        format=",.3~r"),
            alt.Tooltip("error:Q", title="Model / measured - 1", format="+.0%"),
            alt.Tooltip("gpu_power_W:Q", title="Measured GPU power (W)", format=",.0f"),
            alt.Tooltip("rated_W:Q", title="Rated power (W)", format=",.0f"),
            alt.Tooltip("draw_over_rating:Q", title="Draw / rating", format=".0%"),
            alt.Tooltip("model_step_s:Q", title="Model step (s)", format=".4f"),
            alt.Tooltip("measured_step_s:Q", title="Measured batch / rate (s)", format=".4f"),
            alt.Tooltip("source_url:N", title="Source")]
    base = alt.Chart(df).transform_filter(alt.datum.model == pick)
    y = alt.Y("energy_J_per_token:Q", title="joules per output token (log scale)",
              scale=alt.Scale(type="log"))
    points = base.mark_point(filled=True, size=55, opacity=0.9).encode(
        x=x, y=y, color=color, tooltip=tips)
    lines = base.mark_line(strokeWidth=2).encode(
        x=x, y="model_J_per_token:Q", color=color, detail="engine:N", tooltip=tips)
    return responsive((lines + points).add_params(pick), 340, alt.Title(
        title, subtitle=["points: ML.ENERGY, measured", "lines: step time x rated power"]))


def measured_cost(runs: pd.DataFrame, api: dict, title: str,
                  subtitle: str | list) -> alt.Chart:
    """Dollars per million output tokens of measured serving runs (ML.ENERGY's rates at a
    rental price) against the batch, beside the APIs' quoted output price (rule and spread)."""
    df = runs[["engine", "mean_batch", "output_tok_per_s", "gpu_power_W", "usd_per_mtok",
               "usd_per_gpu_hour", "source_url"]].round({"mean_batch": 1, "usd_per_mtok": 3})
    engines = [e for e in ENGINE_COLORS if e in set(df["engine"])]
    color = alt.Color("engine:N", title=None, sort=engines, scale=alt.Scale(
        domain=engines, range=[ENGINE_COLORS[e] for e in engines]))
    tips = [alt.Tooltip("engine:N", title="GPUs"),
            alt.Tooltip("mean_batch:Q", title="Mean batch", format=",.0f"),
            alt.Tooltip("output_tok_per_s:Q", title="Measured tokens/s", format=",.0f"),
            alt.Tooltip("usd_per_gpu_hour:Q", title="USD per GPU-hour (median quote)",
                        format=",.2f"),
            alt.Tooltip("usd_per_mtok:Q", title="USD per million tokens", format=",.3~r"),
            alt.Tooltip("source_url:N", title="Source")]
    x = alt.X("mean_batch:Q", title="sequences in flight (log scale)",
              scale=alt.Scale(type="log"))
    y = alt.Y("usd_per_mtok:Q", title="USD per million output tokens (log scale)",
              scale=alt.Scale(type="log"))
    lines = alt.Chart(df).mark_line(strokeWidth=2, point=alt.OverlayMarkDef(size=40)).encode(
        x=x, y=y, color=color, tooltip=tips)
    band = _api_band(api, "APIs' output price", ("Output price, median (USD)", "Cheapest",
                                                 "Dearest"))
    return responsive(band + lines, 320, alt.Title(title, subtitle=subtitle))
