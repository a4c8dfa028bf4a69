"""Chapter 5 charts: MHA, GQA and MQA as the context deepens, predicted and measured."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, readable, responsive, whiskers
from ..units import GB

__all__ = ["decode_at_depth", "live_vs_prediction", "VARIANT_COLORS"]

VARIANT_COLORS = {"MHA": PALETTE["decode"], "GQA": PALETTE["apple"], "MQA": PALETTE["nvidia"]}


def _variant_scale(variants) -> alt.Scale:
    variants = list(variants)
    return alt.Scale(domain=variants, range=[VARIANT_COLORS.get(v, "#999999") for v in variants])


def decode_at_depth(df: pd.DataFrame, chip: str, capacity_GiB: float) -> alt.Chart:
    """Napkin ceiling at batch one against context depth, one line per attention layout;
    the line turns dotted where weights and cache no longer fit in the chip's memory."""
    df = df.assign(kv_GB=df["kv_bytes"] / GB, total_GB=df["bytes_per_token"] / GB,
                   fit=df["fits"].map({True: "fits in memory", False: "does not fit"}))
    variants = list(dict.fromkeys(df["variant"]))
    base = alt.Chart(df).encode(
        x=alt.X("depth_tokens:Q", title="context depth (tokens)",
                axis=alt.Axis(format="~s")),
        y=alt.Y("tokens_per_s:Q", title="napkin ceiling, batch 1 (tokens/s)",
                scale=alt.Scale(zero=True)),
        color=alt.Color("variant:N", title=None, sort=variants, scale=_variant_scale(variants)),
        detail="variant:N",
        tooltip=[alt.Tooltip("variant:N", title="Attention"),
                 alt.Tooltip("depth_tokens:Q", title="Depth (tokens)", format=","),
                 alt.Tooltip("kv_GB:Q", title="KV read per token (GB)", format=",.2f"),
                 alt.Tooltip("total_GB:Q", title="Weights + KV (GB)", format=",.1f"),
                 alt.Tooltip("kv_share:Q", title="Cache share of the bytes", format=".0%"),
                 alt.Tooltip("tokens_per_s:Q", title="Ceiling (tokens/s)", format=".1f"),
                 alt.Tooltip("fit:N", title=f"On {chip} ({capacity_GiB:.0f} GiB)")],
    )
    fits = base.transform_filter(alt.datum.fits).mark_line(strokeWidth=2.5)
    beyond = base.mark_line(strokeDash=[2, 3], strokeWidth=1.5, opacity=0.8)
    dots = base.mark_point(size=14, filled=True, opacity=0.4)
    return responsive(beyond + fits + dots, 320, alt.Title(
        f"Decode slows as the context deepens, {chip}",
        subtitle="8-bit weights, 16-bit cache, one sequence; dotted: weights and cache "
                 "exceed the memory"))


def live_vs_prediction(predicted: pd.DataFrame, measured: pd.DataFrame, who: str) -> alt.Chart:
    """Tokens/s relative to the same model at an empty context: the napkin's prediction
    (lines, from bytes alone) and this machine's measurement (points with error bars)."""
    variants = list(dict.fromkeys(predicted["attention"]))
    scale = _variant_scale(variants)
    measured = readable(measured, ["depth_tokens", "relative"])
    measured = whiskers(measured, "relative", "relative_sd")
    top, bottom = 1.1, 0.0
    if not measured.empty:
        top = max(top, float(measured["high"].max()) + 0.05)
        bottom = min(bottom, float(measured["low"].min()) - 0.05)
    x = alt.X("depth_tokens:Q", title="context depth (tokens)", axis=alt.Axis(format=",.0f"))
    y = alt.Y("relative:Q", title="tokens/s relative to an empty context",
              axis=alt.Axis(format="%"), scale=alt.Scale(domain=[bottom, top], nice=False))
    color = alt.Color("attention:N", title=None, sort=variants, scale=scale)
    lines = alt.Chart(predicted).mark_line(strokeDash=[6, 3], strokeWidth=2).encode(
        x=x, y=y, color=color,
        tooltip=[alt.Tooltip("attention:N", title="Model"),
                 alt.Tooltip("depth_tokens:Q", title="Depth (tokens)", format=","),
                 alt.Tooltip("relative:Q", title="Predicted", format=".0%"),
                 alt.Tooltip("kv_MB:Q", title="KV read per token (MB)", format=",.1f")])
    layers = [lines]
    if not measured.empty:
        tips = [alt.Tooltip("attention:N", title="Model"),
                alt.Tooltip("depth_tokens:Q", title="Depth (tokens)", format=","),
                alt.Tooltip("relative:Q", title="Measured", format=".0%"),
                alt.Tooltip("tokens_per_s:Q", title="Measured (tokens/s)", format=".1f"),
                alt.Tooltip("stddev:Q", title="Std. dev. (tokens/s)", format=".1f"),
                alt.Tooltip("who:N", title="Where")]
        measured = measured.assign(who=who)
        layers.append(alt.Chart(measured).mark_rule(strokeWidth=1.5).encode(
            x=x, y="low:Q", y2="high:Q", color=color, tooltip=tips))
        layers.append(alt.Chart(measured).mark_point(filled=True, size=90, opacity=1).encode(
            x=x, y=y, color=color, tooltip=tips))
    return responsive(alt.layer(*layers), 320, alt.Title(
        "Same weights, different caches: predicted and measured",
        subtitle="dashed: napkin (weights / (weights + cache)); points: llama.cpp here, "
                 "mean ± std. dev."))
