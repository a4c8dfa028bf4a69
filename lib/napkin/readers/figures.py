"""Readers' page charts: every accepted submission on the napkin, beside the published runs."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, responsive
from ..units import GB
from ..ceiling.figures import FAMILY_COLORS

__all__ = ["COLORS", "decode_chart", "prefill_chart", "READERS"]

READERS = "Readers"
COLORS = {**{k: v for k, v in FAMILY_COLORS.items() if k != "This machine (live)"},
          READERS: PALETTE["live"]}


def _provenance(extra: list) -> list:
    return [alt.Tooltip("machine:N", title="Machine"),
            alt.Tooltip("backend:N", title="Backend"),
            alt.Tooltip("llama_cpp:N", title="llama.cpp"),
            alt.Tooltip("date:N", title="Date"), *extra,
            alt.Tooltip("source_url:N", title="Source")]


def decode_chart(df: pd.DataFrame) -> alt.Chart:
    """Decode as a share of its own ceiling against the bandwidth in that ceiling: published
    runs small, readers' runs large."""
    families = [f for f in COLORS if f in set(df["family"])]
    top = max(1.0, float(df["fraction_of_ceiling"].max()) * 1.05)
    points = alt.Chart(df).mark_point(filled=True, opacity=0.85).encode(
        x=alt.X("bw_GB_per_s:Q", title="bandwidth in the ceiling (GB/s, log scale)",
                scale=alt.Scale(type="log")),
        y=alt.Y("fraction_of_ceiling:Q", title="decode / napkin ceiling",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, top])),
        size=alt.condition(alt.datum.family == READERS, alt.value(240), alt.value(60)),
        color=alt.Color("family:N", title=None, sort=families,
                        scale=alt.Scale(domain=families, range=[COLORS[f] for f in families])),
        shape=alt.Shape("family:N", title=None, scale=alt.Scale(domain=families)),
        tooltip=_provenance([
            alt.Tooltip("quant:N", title="Weights"),
            alt.Tooltip("tokens_per_s:Q", title="Decode (tok/s)", format=",.2f"),
            alt.Tooltip("ceiling_tokens_per_s:Q", title="Ceiling (tok/s)", format=",.1f"),
            alt.Tooltip("fraction_of_ceiling:Q", title="Share of ceiling", format=".0%")]),
    ).transform_calculate(bw_GB_per_s=f"datum.bandwidth_bytes_per_s / {GB}")
    return responsive(points, 340, alt.Title(
        "Readers' machines on the napkin",
        subtitle="each point: one llama.cpp decode run against bandwidth / bytes per token"))


def prefill_chart(df: pd.DataFrame) -> alt.Chart:
    """Prefill's FLOP/s as a share of the device's peak, against that peak; ``df`` has
    machine, family, peak_flops_per_s, prefill_flops_per_s and the provenance columns."""
    families = [f for f in (READERS, "Published") if f in set(df["family"])]
    colors = {READERS: PALETTE["live"], "Published": PALETTE["ceiling"]}
    top = float((df["prefill_flops_per_s"] / df["peak_flops_per_s"]).max()) * 1.15
    points = alt.Chart(df).mark_point(filled=True, opacity=0.85).encode(
        x=alt.X("peak_TFLOPS:Q", title="device's dense peak for the arithmetic that ran "
                                       "(TFLOP/s, log scale)", scale=alt.Scale(type="log")),
        y=alt.Y("share:Q", title="prefill / peak", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, top])),
        size=alt.condition(alt.datum.family == READERS, alt.value(240), alt.value(60)),
        color=alt.Color("family:N", title=None, sort=families,
                        scale=alt.Scale(domain=families, range=[colors[f] for f in families])),
        tooltip=_provenance([
            alt.Tooltip("prefill_TFLOPS:Q", title="Prefill (TFLOP/s)", format=",.1f"),
            alt.Tooltip("peak_what:N", title="Peak"),
            alt.Tooltip("share:Q", title="Share of peak", format=".0%")]),
    ).transform_calculate(
        peak_TFLOPS="datum.peak_flops_per_s / 1e12",
        prefill_TFLOPS="datum.prefill_flops_per_s / 1e12",
        share="datum.prefill_flops_per_s / datum.peak_flops_per_s")
    return responsive(points, 300, alt.Title(
        "Prefill against the device's peak",
        subtitle="2 FLOPs per matmul weight per prompt token x tokens/s"))
