"""Chapter 9 charts: predicted against measured, what calibration buys, and the practitioner's
trade-off between tokens per GPU and tokens per user."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, responsive

SPLIT_COLORS = {"fitted on": PALETTE["prefill"], "held out": PALETTE["decode"]}
MODEL_COLORS = {"calibrated step model": PALETTE["nvidia"], "plain roofline": PALETTE["ceiling"]}
CHIP_COLORS = {"H100 SXM": PALETTE["nvidia"], "H200": "#17607d", "B200": "#8e6c1f",
               "MI300X": PALETTE["amd"]}


def parity(df: pd.DataFrame, groups: list[str], title: str) -> alt.Chart:
    """Every recognised published row: predicted against measured, log axes, one group of
    rows at a time (a menu), by the calibrated model or the plain roofline (a second menu);
    the line is exact agreement."""
    data = df[["group", "split", "measured", "predicted", "roofline", "system", "chip",
               "detail", "source", "scenario", "unit", "error", "roofline_error"]].copy()
    data["split"] = data["split"].map({"train": "fitted on", "test": "held out"})
    for col in ("measured", "predicted", "roofline"):
        data[col] = data[col].astype(float).map(lambda v: float(f"{v:.4g}"))
    data = data.round({"error": 3, "roofline_error": 3})
    group = alt.param(name="group", value=groups[0], bind=alt.binding_select(
        options=groups, name="Rows "))
    model = alt.param(name="model", value=list(MODEL_COLORS)[0], bind=alt.binding_select(
        options=list(MODEL_COLORS), name="Model "))
    base = alt.Chart(data).transform_filter(alt.datum.group == group).transform_calculate(
        shown=f"{model.name} == 'plain roofline' ? datum.roofline : datum.predicted",
        shown_error=f"{model.name} == 'plain roofline' ? datum.roofline_error : datum.error")
    x = alt.X("measured:Q", title="measured (the row's own unit, log scale)",
              scale=alt.Scale(type="log"))
    y = alt.Y("shown:Q", title="predicted (same unit, log scale)", scale=alt.Scale(type="log"))
    tips = [alt.Tooltip("system:N", title="System"), alt.Tooltip("chip:N", title="Chip"),
            alt.Tooltip("detail:N", title="Model, metric"),
            alt.Tooltip("scenario:N", title="Scenario"), alt.Tooltip("source:N", title="Source"),
            alt.Tooltip("split:N", title="Split"), alt.Tooltip("unit:N", title="Unit"),
            alt.Tooltip("measured:Q", title="Measured", format=",.4~g"),
            alt.Tooltip("shown:Q", title="Predicted", format=",.4~g"),
            alt.Tooltip("shown_error:Q", title="Error", format="+.0%")]
    points = base.mark_point(filled=True, size=36, opacity=0.7).encode(
        x=x, y=y, tooltip=tips,
        color=alt.Color("split:N", title=None, sort=list(SPLIT_COLORS), scale=alt.Scale(
            domain=list(SPLIT_COLORS), range=list(SPLIT_COLORS.values()))))
    ends = data.groupby("group")[["measured", "predicted", "roofline"]].agg(["min", "max"])
    line = pd.DataFrame([{"group": g, "measured": float(v), "shown": float(v)}
                         for g in ends.index
                         for v in (ends.loc[g].min(), ends.loc[g].max())])
    exact = alt.Chart(line).transform_filter(alt.datum.group == group).mark_line(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(
        x="measured:Q", y="shown:Q", tooltip=[alt.Tooltip("group:N", title="Exact for")])
    return responsive((exact + points).add_params(group, model), 360, alt.Title(
        title, subtitle="dashed: predicted = measured; pick the rows and the model"))


def gain(table: pd.DataFrame, title: str) -> alt.Chart:
    """Held-out error per group of rows, for the calibrated model and the plain roofline on
    the same rows: the median (dot) and the 90th percentile (end of the bar)."""
    rows = []
    for _, r in table.iterrows():
        for label, med, p90, bias in (
                ("calibrated step model", r["median_abs"], r["p90_abs"], r["bias"]),
                ("plain roofline", r["roofline_median_abs"], r["roofline_p90_abs"],
                 r["roofline_bias"])):
            rows.append({"group": r["group"], "model": label, "n": int(r["n"]),
                         "median": round(float(med), 4), "p90": round(float(p90), 4),
                         "bias": round(float(bias), 4)})
    df = pd.DataFrame(rows)
    order = list(table.sort_values("median_abs")["group"])
    tips = [alt.Tooltip("group:N", title="Rows"), alt.Tooltip("model:N", title="Model"),
            alt.Tooltip("n:Q", title="Held-out rows"),
            alt.Tooltip("median:Q", title="Median |error|", format=".0%"),
            alt.Tooltip("p90:Q", title="90th percentile |error|", format=".0%"),
            alt.Tooltip("bias:Q", title="Bias (median error)", format="+.0%")]
    color = alt.Color("model:N", title=None, sort=list(MODEL_COLORS), scale=alt.Scale(
        domain=list(MODEL_COLORS), range=list(MODEL_COLORS.values())))
    y = alt.Y("group:N", sort=order, title=None)  # the theme's label limit, narrower on a phone
    offset = alt.YOffset("model:N", sort=list(MODEL_COLORS))
    x = alt.X("median:Q", title="absolute error, held-out rows (log scale)",
              scale=alt.Scale(type="log"), axis=alt.Axis(format="%"))
    base = alt.Chart(df).encode(y=y, yOffset=offset, color=color, tooltip=tips)
    bars = base.mark_rule(strokeWidth=3, opacity=0.6).encode(x=x, x2="p90:Q")
    dots = base.mark_point(filled=True, size=70).encode(x=x)
    return responsive(bars + dots, 44 * len(order) + 50, alt.Title(
        title, subtitle="dot: median; line to the 90th percentile"))


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


def spread(df: pd.DataFrame, title: str) -> alt.Chart:
    """Measured over predicted per chip and serving engine, for one workload family: the
    median (dot) and the range of the rows (line); 1 is exact."""
    data = df.copy()
    data["label"] = data["chip"] + ", " + data["engine"]
    order = list(data.sort_values("median")["label"])
    tips = [alt.Tooltip("label:N", title="Chip, engine"), alt.Tooltip("split:N", title="Split"),
            alt.Tooltip("n:Q", title="Rows"),
            alt.Tooltip("median:Q", title="Measured / predicted, median", format=".2f"),
            alt.Tooltip("low:Q", title="Lowest", format=".2f"),
            alt.Tooltip("high:Q", title="Highest", format=".2f")]
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=190))
    x = alt.X("median:Q", title="measured / predicted latency (log scale)",
              scale=alt.Scale(type="log"))
    color = alt.Color("split:N", title=None, sort=list(SPLIT_COLORS), scale=alt.Scale(
        domain=list(SPLIT_COLORS), range=list(SPLIT_COLORS.values())))
    base = alt.Chart(data).encode(y=y, color=color, tooltip=tips)
    rules = base.mark_rule(strokeWidth=2, opacity=0.6).encode(x=x, x2="high:Q")
    rules_low = base.mark_rule(strokeWidth=2, opacity=0.6).encode(x="low:Q", x2="median:Q")
    dots = base.mark_point(filled=True, size=60).encode(x=x)
    one = alt.Chart(pd.DataFrame({"median": [1.0]})).mark_rule(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(x="median:Q")
    return responsive(one + rules_low + rules + dots, 22 * len(order) + 60, alt.Title(
        title, subtitle="dot: median; line: lowest to highest; dashed: as predicted"))
