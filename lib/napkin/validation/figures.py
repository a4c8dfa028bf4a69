"""Chapter 9 charts: predicted against measured, the errors of the model and of the simpler
ones beside it, the software band, and the practitioner's trade-off between tokens per GPU
and tokens per user."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, responsive

__all__ = ["CHIP_COLORS", "factor_bars", "frontier", "parity", "QUANTITIES", "software_band",
           "SPLIT_COLORS", "STRUCTURE_COLORS"]

SPLIT_COLORS = {"fitted on": PALETTE["prefill"], "held out": PALETTE["decode"]}
CHIP_COLORS = {"H100 SXM": PALETTE["nvidia"], "H200": "#17607d", "B200": "#8e6c1f",
               "MI300X": PALETTE["amd"]}


#: The models beside each other in chapter 9's error charts, in the order they are read.
STRUCTURE_COLORS = {"calibrated step model": PALETTE["nvidia"],
                    "one-number discount": PALETTE["amd"],
                    "essay's 50 % rule": "#8e6c1f",
                    "plain roofline": PALETTE["ceiling"]}
#: Rows by what their value measures: a rate in output tokens per second, or a time.
QUANTITIES = {"rate": ("output tokens/s", "throughput"), "time": ("seconds", "latency")}


def parity(df: pd.DataFrame, quantity: str, title: str) -> alt.Chart:
    """Published rows that measure one ``quantity`` (``"rate"``: output tokens per second;
    ``"time"``: seconds, millisecond rows converted): predicted against measured on log axes
    that share their range, one group of rows at a time (a menu), by the calibrated model or
    a baseline (a second menu). The dashed diagonal is exact agreement."""
    unit, word = QUANTITIES[quantity]
    is_rate = df["kind"].str.contains("rate")
    data = df[is_rate if quantity == "rate" else ~is_rate].copy()
    data["measured"] = data["measured"] / data["scale"]
    data["predicted"] = data["predicted"] / data["scale"]
    data["split"] = data["split"].map({"train": "fitted on", "test": "held out"})
    data = data[["group", "split", "structure", "measured", "predicted", "system", "chip",
                 "detail", "scenario", "factor"]]
    for col in ("measured", "predicted", "factor"):
        data[col] = data[col].astype(float).map(lambda v: float(f"{v:.4g}"))
    groups = list(data.groupby("group").size().sort_values(ascending=False).index)
    models = [m for m in STRUCTURE_COLORS if m in set(data["structure"])]
    group = alt.param(name=f"group_{quantity}", value=groups[0],
                      bind=alt.binding_select(options=groups, name="Rows "))
    model = alt.param(name=f"model_{quantity}", value=models[0],
                      bind=alt.binding_select(options=models, name="Model "))
    low = float(min(data["measured"].min(), data["predicted"].min()))
    high = float(max(data["measured"].max(), data["predicted"].max()))
    scale = alt.Scale(type="log", domain=[low, high])
    base = alt.Chart(data).transform_filter(
        (alt.datum.group == group) & (alt.datum.structure == model))
    tips = [alt.Tooltip("system:N", title="System"), alt.Tooltip("chip:N", title="Chip"),
            alt.Tooltip("detail:N", title="Model, metric"),
            alt.Tooltip("scenario:N", title="Scenario"), alt.Tooltip("split:N", title="Split"),
            alt.Tooltip("measured:Q", title=f"Measured ({unit})", format=",.4~g"),
            alt.Tooltip("predicted:Q", title=f"Predicted ({unit})", format=",.4~g"),
            alt.Tooltip("factor:Q", title="Off by (x)", format=".2f")]
    points = base.mark_point(filled=True, size=36, opacity=0.7).encode(
        x=alt.X("measured:Q", title=f"measured {word} ({unit}, log scale)", scale=scale),
        y=alt.Y("predicted:Q", title=f"predicted {word} ({unit}, log scale)", scale=scale),
        tooltip=tips,
        color=alt.Color("split:N", title=None, sort=list(SPLIT_COLORS), scale=alt.Scale(
            domain=list(SPLIT_COLORS), range=list(SPLIT_COLORS.values()))))
    exact = alt.Chart(pd.DataFrame({"measured": [low, high], "predicted": [low, high]})).mark_line(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(
        x=alt.X("measured:Q", scale=scale), y=alt.Y("predicted:Q", scale=scale))
    return responsive((exact + points).add_params(group, model), 360, alt.Title(
        title, subtitle="dashed: predicted = measured; pick the rows and the model"))


def factor_bars(table: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """Factor errors per scenario, one line per model: the median (dot) and the 90th
    percentile (end of the line); 1 is exact. ``table`` has ``label`` (the row), ``structure``,
    ``n``, ``median``, ``p90`` and ``bias``."""
    df = table.assign(**{c: table[c].astype(float).round(4) for c in ("median", "p90", "bias")})
    models = [m for m in STRUCTURE_COLORS if m in set(df["structure"])]
    order = list(dict.fromkeys(df["label"]))
    tips = [alt.Tooltip("label:N", title="Rows"), alt.Tooltip("structure:N", title="Model"),
            alt.Tooltip("n:Q", title="Predictions", format=","),
            alt.Tooltip("median:Q", title="Median factor (x)", format=".2f"),
            alt.Tooltip("p90:Q", title="90th percentile factor (x)", format=".2f"),
            alt.Tooltip("bias:Q", title="Speed promised / measured, median (x)",
                        format=".2f")]
    color = alt.Color("structure:N", title=None, sort=models, scale=alt.Scale(
        domain=models, range=[STRUCTURE_COLORS[m] for m in models]),
        legend=alt.Legend(orient="bottom", direction="vertical"))
    x = alt.X("median:Q", title="off by a factor of (x, log scale)",
              scale=alt.Scale(type="log", domainMin=1), axis=alt.Axis(format=".1f"))
    base = alt.Chart(df).encode(y=alt.Y("label:N", sort=order, title=None),
                                yOffset=alt.YOffset("structure:N", sort=models),
                                color=color, tooltip=tips)
    bars = base.mark_rule(strokeWidth=3, opacity=0.6).encode(x=x, x2="p90:Q")
    dots = base.mark_point(filled=True, size=60).encode(x=x)
    return responsive(bars + dots, 18 * len(models) * len(order) + 90, alt.Title(
        title, subtitle=subtitle))


def frontier(curves: pd.DataFrame, points: pd.DataFrame, models: list[str],
             title: str) -> alt.Chart:
    """Per model (a menu): the step model's best tokens/s per GPU at each speed per user
    (lines, one per chip and weight format) and the MLPerf Server and Interactive runs of the
    same chips (points)."""
    curves = curves.assign(per_gpu=curves["per_gpu_tok_per_s"].round(1),
                           per_user=curves["per_user_tok_per_s"].round(2))
    points = points.assign(per_gpu=points["per_gpu_tok_per_s"].round(1),
                           per_user=points["per_user_tok_per_s"].round(2))
    chips = list(CHIP_COLORS)
    pick = alt.param(name="served", value=models[0], bind=alt.binding_select(
        options=models, name="Model "))
    color = alt.Color("chip:N", title=None, sort=chips, scale=alt.Scale(
        domain=chips, range=list(CHIP_COLORS.values())))
    x = alt.X("per_user:Q", title="tokens/s each user sees (log scale)",
              scale=alt.Scale(type="log"))
    y = alt.Y("per_gpu:Q", title="output tokens/s per GPU (log scale)",
              scale=alt.Scale(type="log"))
    lines = alt.Chart(curves).transform_filter(alt.datum.model == pick).mark_line(
        strokeWidth=2).encode(
        x=x, y=y, color=color, detail="curve:N",
        strokeDash=alt.StrokeDash("weights:N", title=None, sort=["FP8", "NVFP4"],
                                  scale=alt.Scale(domain=["FP8", "NVFP4"],
                                                  range=[[1, 0], [5, 3]])),
        tooltip=[alt.Tooltip("curve:N", title="Model curve"),
                 alt.Tooltip("tp:Q", title="GPUs per engine"),
                 alt.Tooltip("batch:Q", title="Sequences in flight"),
                 alt.Tooltip("per_user:Q", title="Tokens/s per user", format=",.1f"),
                 alt.Tooltip("per_gpu:Q", title="Tokens/s per GPU", format=",.0f"),
                 alt.Tooltip("bound:N", title="Roof that binds")])
    dots = alt.Chart(points).transform_filter(alt.datum.model == pick).mark_point(
        size=60, filled=True, opacity=0.85, stroke="white", strokeWidth=0.5).encode(
        x=x, y=y, color=color,
        shape=alt.Shape("scenario:N", title=None, sort=["Server", "Interactive"]),
        tooltip=[alt.Tooltip("system:N", title="System"), alt.Tooltip("chip:N", title="Chip"),
                 alt.Tooltip("round:N", title="MLPerf round"),
                 alt.Tooltip("scenario:N", title="Scenario"),
                 alt.Tooltip("benchmark:N", title="Benchmark"),
                 alt.Tooltip("weights:N", title="Weights"),
                 alt.Tooltip("per_user:Q", title="Tokens/s per user (1 / mean TPOT)",
                             format=",.1f"),
                 alt.Tooltip("per_gpu:Q", title="Tokens/s per GPU", format=",.0f"),
                 alt.Tooltip("source_url:N", title="Source")])
    return responsive((lines + dots).add_params(pick), 380, alt.Title(
        title, subtitle="lines: the calibrated model's best engine at each speed; points: "
                        "MLPerf runs; dashed: FP4 weights"))


def software_band(df: pd.DataFrame, title: str) -> alt.Chart:
    """Each serving stack's multipliers in the published fit: on the shares of peak it
    reaches and on its per-layer cost (1: the typical stack), dot size the rows behind it."""
    data = df.assign(label=df["stack"].str.replace("/", " / "),
                     efficiency=df["efficiency"].round(3), overhead=df["overhead"].round(3),
                     median=df["median"].round(3), p90=df["p90"].round(3))
    long = pd.concat([data.assign(multiplier="share of peak reached", value=data["efficiency"]),
                      data.assign(multiplier="cost per layer", value=data["overhead"])],
                     ignore_index=True)
    order = list(data["label"])
    tips = [alt.Tooltip("label:N", title="Stack"), alt.Tooltip("rows:Q", title="Rows fitted"),
            alt.Tooltip("efficiency:Q", title="Share of peak (x typical)", format=".2f"),
            alt.Tooltip("overhead:Q", title="Cost per layer (x typical)", format=".2f"),
            alt.Tooltip("median:Q", title="Model's median factor on its rows (x)",
                        format=".2f"),
            alt.Tooltip("p90:Q", title="90th percentile (x)", format=".2f")]
    kinds = ["share of peak reached", "cost per layer"]
    dots = alt.Chart(long).mark_point(filled=True, opacity=0.85).encode(
        y=alt.Y("label:N", sort=order, title=None),
        x=alt.X("value:Q", title="multiplier on the typical stack (x, log scale)",
                scale=alt.Scale(type="log")),
        color=alt.Color("multiplier:N", title=None, sort=kinds, scale=alt.Scale(
            domain=kinds, range=[PALETTE["nvidia"], PALETTE["amd"]]),
            legend=alt.Legend(orient="bottom", direction="vertical")),
        shape=alt.Shape("multiplier:N", sort=kinds, legend=None),
        size=alt.Size("rows:Q", title="rows", legend=None, scale=alt.Scale(range=[30, 260])),
        tooltip=tips)
    one = alt.Chart(pd.DataFrame({"value": [1.0]})).mark_rule(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(x="value:Q")
    return responsive(one + dots, 24 * len(order) + 90, alt.Title(
        title, subtitle="dashed: the typical stack; dot size: rows fitted"))
