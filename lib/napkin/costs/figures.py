"""Chapter 11 charts: the calculator, the trade between cost and speed per user, the energy
model against ML.ENERGY, and the essay's per-token prices against measured serving."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from ..charts import PALETTE, responsive
from ..costs import page, service

__all__ = ["calculator", "energy_check", "ENGINE_COLORS", "label_ends", "measured_cost",
           "OPTION_COLORS", "OPTION_STYLES", "ROW_PX", "trade"]

#: One colour and one shape per way of getting tokens (Paul Tol's colour-blind-safe
#: schemes), so that neighbouring lines differ in hue and, printed in grey, in shape; the API
#: in the theme's neutral.
OPTION_STYLES = {
    "RTX PRO 6000 Blackwell": ("#4477AA", "circle"), "M3 Ultra": ("#66CCEE", "square"),
    "DGX Spark": ("#AA3377", "triangle-up"), "Strix Halo": ("#CCBB44", "diamond"),
    "RTX 5090": ("#EE6677", "triangle-left"), "RTX 4090": ("#997700", "wedge"),
    "H100 SXM (rented)": ("#228833", "triangle-down"), "H200 (rented)": ("#EE7733",
                                                                        "triangle-right"),
    "B200 (rented)": ("#009988", "cross"),
    "H100 SXM (rented, 1-year contract)": ("#117733", "arrow"),
    "API": (PALETTE["ceiling"], "stroke"),
}
OPTION_COLORS = {k: v[0] for k, v in OPTION_STYLES.items()}
ENGINE_COLORS = {"1 x H100": "#7cc47c", "2 x H100": "#3c9a3c", "4 x H100": "#1e6b3a",
                 "1 x B200": "#9ec5f0", "2 x B200": "#2a78d6", "8 x B200": "#1f3f78"}


def _names(options) -> list[str]:
    present = set(options)
    unknown = sorted(present - set(OPTION_STYLES))
    if unknown:
        raise ValueError(f"no colour and shape for {', '.join(unknown)}: add them to "
                         f"napkin.costs.figures.OPTION_STYLES")
    return [o for o in OPTION_STYLES if o in present]


def _option_color(options) -> alt.Color:
    names = _names(options)
    return alt.Color("option:N", title=None, sort=names, scale=alt.Scale(
        domain=names, range=[OPTION_STYLES[o][0] for o in names]))


def _option_shape(options) -> alt.Shape:
    names = _names(options)
    return alt.Shape("option:N", title=None, sort=names, scale=alt.Scale(
        domain=names, range=[OPTION_STYLES[o][1] for o in names]))


#: Height of one way in the calculator: its name and price above its range, four short
#: lines below.
ROW_PX = 120


def _plural(field: str, one: str, many: str) -> str:
    """A Vega expression: ``1 user`` / ``7 users`` for the number in ``field``."""
    return f"format(datum.{field}, ',') + (datum.{field} == 1 ? ' {one}' : ' {many}')"


def calculator(rows: pd.DataFrame, presets: dict, elec_range: tuple[float, float],
               default: str | None = None, start: dict | None = None,
               audit: bool = False) -> alt.Chart:
    """Dollars per million output tokens of every way to serve a workload (menu) at the
    largest load whose users each get a service level (sliders: speed per user, first
    token), with sliders for hours of use a day, electricity price and years of life. Under
    each way, in words, what a tooltip would say: users, speed, first token and whole answer,
    energy, and the hours a day above which owning beats renting and the API. Every number is
    computed in the page (:func:`napkin.costs.page.expressions`) from the candidates of
    :func:`napkin.costs.page.rows`. ``elec_range``: the electricity slider's ends (USD/kWh).
    ``start`` sets the controls' starting values (keys workload, speed, first, hours, elec,
    life). ``audit``: each label's accessible description carries the computed values
    unrounded, for the test that compares them with the library."""
    level = service.chat()
    s = {"workload": default or next(iter(presets)),
         "speed": level.tokens_per_s_per_user, "first": level.first_token_s,
         "hours": 8.0, "elec": 0.19, "life": 3.0} | (start or {})
    lo, hi = elec_range
    loads, ways = page.split(rows)
    workload = alt.param(name="wl", value=s["workload"], bind=alt.binding_select(
        options=list(presets), name="Workload "))
    speed = alt.param(name="speed", value=s["speed"], bind=alt.binding_range(
        min=1, max=40, step=0.1, name="Each user sees at least (tokens/s) "))
    first = alt.param(name="first", value=s["first"], bind=alt.binding_range(
        min=0.5, max=60, step=0.5, name="First token within (s) "))
    hours = alt.param(name="hours", value=s["hours"], bind=alt.binding_range(
        min=0.5, max=24, step=0.5, name="Hours of use a day "))
    elec = alt.param(name="elec", value=s["elec"], bind=alt.binding_range(
        min=round(lo, 2), max=round(hi, 2), step=0.01, name="Electricity (USD/kWh) "))
    life = alt.param(name="life", value=s["life"], bind=alt.binding_range(
        min=1, max=8, step=0.5, name="Years of life "))
    chart = alt.Chart(loads).transform_lookup(
        lookup="k", from_=alt.LookupData(ways, "k", list(page.WAY_COLUMNS))).transform_filter(
        "datum.workload == wl && (datum.kind == 'api' || (datum.per_user >= speed && "
        "datum.first_token_s <= first))").transform_calculate(
        usd_per_hour="datum.n_chips * datum.usd_per_gpu_hour",
        power_W="datum.n_chips * datum.power_W_per_gpu")
    for name, expr in page.expressions().items():
        chart = chart.transform_calculate(**{name: expr})
    # each way at its cheapest candidate within the level (most users, on ties)
    chart = chart.transform_window(
        pick="row_number()", groupby=["option"],
        sort=[alt.SortField("cost_mid", order="ascending"),
              alt.SortField("users", order="descending")]).transform_filter(
        "datum.pick == 1").transform_calculate(
        rent_cost="datum.kind == 'rented' ? datum.cost_mid : null").transform_joinaggregate(
        ref_rent="min(rent_cost)")
    for name, expr in page.breakeven_expressions().items():
        chart = chart.transform_calculate(**{name: expr})
    hrs = "(datum.{0} == null ? 'never' : 'above ' + format(datum.{0}, '.1f') + ' h/day')"
    chart = chart.transform_calculate(
        who="datum.kind == 'api' ? 'blended price (output + input)' : datum.kind == 'owned' "
            "? 'bought: ' + datum.configuration + ', ' + datum.weight_format : "
            "(datum.kind == 'committed' ? 'rented on a 1-year contract: ' : 'rented: ') + "
            "datum.n_chips + ' x ' + datum.chip + ', ' + datum.weight_format",
        line1="datum.option",
        line2="format(datum.cost_mid, ',.3~r') + ' USD per Mtok (' + "
              "format(datum.cost_low, ',.3~r') + '–' + format(datum.cost_high, ',.3~r') + ')'",
        line3="datum.kind == 'api' ? 'blended: median of the providers' : " +
              _plural("users", "user", "users") + " + ' at ' + "
              "format(datum.per_user, '.1f') + ' tokens/s each'",
        line4="datum.kind == 'api' ? '(their spread)' : 'first token ' + "
              "format(datum.first_token_s, '.1f') + ' s, reply ' + "
              "format(datum.latency_s, ',.0f') + ' s'",
        line5="datum.kind == 'owned' ? 'beats renting ' + " + hrs.format("beat_rent") +
              " : (datum.joules ? format(datum.joules, ',.2f') + ' J per token' : '')",
        line6="datum.kind == 'owned' ? 'beats the API ' + " + hrs.format("beat_api") +
              " + (datum.joules ? '; ' + format(datum.joules, ',.2f') + ' J/token' : '') "
              ": ''")
    tips = [alt.Tooltip("option:N", title="Way"), alt.Tooltip("who:N", title="As"),
            alt.Tooltip("cost_mid:Q", title="USD per million output tokens", format=",.3~r"),
            alt.Tooltip("cost_low:Q", title="Band from", format=",.3~r"),
            alt.Tooltip("cost_high:Q", title="Band to", format=",.3~r"),
            alt.Tooltip("band:N", title="Band"),
            alt.Tooltip("joules:Q", title="Joules per output token", format=",.3~r"),
            alt.Tooltip("users:Q", title="Users served at once"),
            alt.Tooltip("tokens_per_s:Q", title="Output tokens/s, all users", format=",.3~r"),
            alt.Tooltip("per_user:Q", title="Tokens/s each user sees", format=",.3~r"),
            alt.Tooltip("first_token_s:Q", title="First token, slowest user (s)",
                        format=",.3~r"),
            alt.Tooltip("latency_s:Q", title="First token + answer (s)", format=",.3~r"),
            alt.Tooltip("beat_rent:Q", title="Owning beats renting above (hours a day)",
                        format=",.1f"),
            alt.Tooltip("beat_api:Q", title="Owning beats the API above (hours a day)",
                        format=",.1f"),
            alt.Tooltip("price_basis:N", title="Price"),
            alt.Tooltip("power_basis:N", title="Power")]
    y = alt.Y("option:N", title=None, axis=None,
              sort=alt.EncodingSortField(field="cost_mid", op="min", order="ascending"))
    x = alt.X("cost_mid:Q", scale=alt.Scale(type="log"))
    names = ways["option"]
    base = chart.encode(y=y, color=_option_color(names).legend(None), tooltip=tips)
    ranges = base.mark_rule(strokeWidth=4).encode(x=alt.X(
        "cost_low:Q", title="USD per million output tokens (log scale)",
        scale=alt.Scale(type="log")), x2="cost_high:Q")
    dots = base.mark_point(filled=True, size=110).encode(x=x, shape=_option_shape(names)
                                                         .legend(None))
    words = chart.encode(y=y, tooltip=tips)
    # short lines, each within a phone's column: a way's name, its price, then what a tooltip
    # would say
    lines = [words.mark_text(align="left", baseline="middle", dy=dy, fontSize=size,
                             fontWeight=weight).encode(x=alt.value(0), text=f"{field}:N")
             for field, dy, size, weight in (("line1", -40, 12, 600), ("line2", -26, 11, 400),
                                             ("line3", 14, 11, 400), ("line4", 27, 11, 400),
                                             ("line5", 40, 11, 400), ("line6", 53, 11, 400))]
    if audit:
        audited = ("option", "kind", "users", "cost_mid", "cost_low", "cost_high", "joules",
                   "beat_rent", "beat_api")
        lines[0] = lines[0].transform_calculate(audit=" + ';' + ".join(
            f"'{k}=' + datum.{k}" for k in audited)).encode(description="audit:N")
    # one short line each: a title computed in the page cannot be wrapped to a phone's width
    title = alt.ExprRef("['What a million output tokens cost', wl, 'each user at least ' + "
                        "format(speed, '.1f') + ' tokens/s,', 'first token within ' + "
                        "format(first, '.1f') + ' s']")
    return responsive(alt.layer(ranges, dots, *lines).add_params(
        workload, speed, first, hours, elec, life), ROW_PX * int(ways["option"].nunique()),
        alt.Title(title))


def trade(curves: pd.DataFrame, api: dict, title: str, subtitle: str | list) -> alt.Chart:
    """Dollars per million output tokens against the tokens per second each user sees, one
    line per way of serving as the users at once grow (bought: solid; rented: dashed; each
    its own colour and point shape), each named at its cheapest end (names nudged apart so
    they never overlap), and the API's blended price (a rule, its providers' spread
    shaded)."""
    df = curves.round({"per_user_tokens_per_s": 2, "usd_per_mtok": 3, "tokens_per_s": 1,
                       "joules_per_token": 3})
    x = alt.X("per_user_tokens_per_s:Q", title="tokens/s each user sees (log scale)",
              scale=alt.Scale(type="log"))
    y = alt.Y("usd_per_mtok:Q", title="USD per million output tokens (log scale)",
              scale=alt.Scale(type="log"))
    tips = [alt.Tooltip("option:N", title="Way"), alt.Tooltip("users:Q", title="Users at once"),
            alt.Tooltip("n_chips:Q", title="GPUs"),
            alt.Tooltip("weight_format:N", title="Weights"),
            alt.Tooltip("per_user_tokens_per_s:Q", title="Tokens/s per user", format=",.1f"),
            alt.Tooltip("tokens_per_s:Q", title="Tokens/s, all users", format=",.0f"),
            alt.Tooltip("usd_per_mtok:Q", title="USD per million tokens", format=",.3~r"),
            alt.Tooltip("joules_per_token:Q", title="Joules per token", format=",.3~r")]
    color, shape = _option_color(df["option"]), _option_shape(df["option"])
    dash = alt.StrokeDash("kind:N", title=None, sort=["owned", "rented"], scale=alt.Scale(
        domain=["owned", "rented"], range=[[1, 0], [5, 3]]), legend=None)
    lines = alt.Chart(df).mark_line(strokeWidth=2).encode(
        x=x, y=y, color=color, strokeDash=dash, detail="option:N", tooltip=tips)
    points = alt.Chart(df).mark_point(filled=True, size=45, opacity=0.9).encode(
        x=x, y=y, color=color, shape=shape, tooltip=tips)
    ends = label_ends(df)
    # a name at the right of the plot is written to the left of its point, so that it stays
    # on the plot down to a phone's width
    span = np.log(df["per_user_tokens_per_s"].max() / df["per_user_tokens_per_s"].min())
    ends["right"] = np.log(ends["per_user_tokens_per_s"] / df["per_user_tokens_per_s"].min()) \
        > span / 2 if span > 0 else False
    text = dict(fontSize=11, fontWeight=600)
    names = alt.layer(*[
        alt.Chart(ends[ends["right"] == side]).mark_text(
            align="right" if side else "left", dx=-7 if side else 7, **text).encode(
            x=x, y=alt.Y("label_y:Q", scale=alt.Scale(type="log")), text="option:N",
            color=color, tooltip=tips) for side in (False, True)])
    band = _api_band(api, "API, blended price", ("API, median blended price (USD)",
                                                 "Cheapest provider", "Dearest provider"))
    return responsive(band + lines + points + names, 380, alt.Title(title, subtitle=subtitle))


def label_ends(curves: pd.DataFrame, gap_decades: float = 0.12) -> pd.DataFrame:
    """Each line's cheapest point, with ``label_y`` the height its name is written at:
    the point's own, nudged up or down (in log space, ``gap_decades`` apart at least) so that
    no two names overlap."""
    ends = curves.loc[curves.groupby("option")["usd_per_mtok"].idxmin()].copy()
    ends = ends.sort_values("usd_per_mtok")
    logs = np.log10(ends["usd_per_mtok"].to_numpy(dtype=float))
    placed = logs.copy()
    for k in range(1, len(placed)):
        placed[k] = max(placed[k], placed[k - 1] + gap_decades)
    shift = np.mean(logs - placed)  # centre the stack on the points it names
    ends["label_y"] = 10 ** (placed + shift)
    return ends.reset_index(drop=True)


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
    band = _api_band(api, "APIs' output price (input not counted)",
                     ("Output price, median (USD)", "Cheapest", "Dearest"))
    return responsive(band + lines, 320, alt.Title(title, subtitle=subtitle))
