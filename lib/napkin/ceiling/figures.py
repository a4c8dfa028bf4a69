"""Chapter 1 charts: the napkin ceiling against published decode speeds."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from ..charts import PALETTE, bar_labels, readable, responsive
from ..units import GB

__all__ = ["all_machines", "calculator", "essay_bars", "FAMILY_COLORS", "fraction_strip", "LIVE",
           "QUANT_COLORS", "quantization_lever"]

FAMILY_COLORS = {
    "Apple Silicon": PALETTE["apple"],
    "GPU (CUDA)": PALETTE["nvidia"],
    "GPU (Vulkan)": "#7fb77e",
    "GPU (ROCm)": PALETTE["amd"],
    "CPU": PALETTE["cpu"],
    "This machine (live)": PALETTE["live"],
}
QUANT_COLORS = {"F16": "#1b4f8c", "Q8_0": "#2a78d6", "Q4_0": "#8cb8ea"}


def _band(low: float, high: float, axis: str, label: str) -> alt.Chart:
    """A shaded band marking the essay's claimed range on a fraction axis."""
    band = pd.DataFrame({"low": [low], "high": [high], "label": [label]})
    enc = {f"{axis}": alt.X("low:Q") if axis == "x" else alt.Y("low:Q"),
           f"{axis}2": "high:Q"}
    return alt.Chart(band).mark_rect(color="#f2d8b6", opacity=0.55).encode(
        **enc, tooltip=[alt.Tooltip("label:N", title="Shaded")])


def essay_bars(table: pd.DataFrame) -> alt.Chart:
    """The essay's bar chart, rebuilt from data: each ceiling above the chips it bounds."""
    rows = []
    for bw, group in table.groupby("bandwidth_bytes_per_s", sort=True):
        rows.append({"label": f"Ceiling, {bw / GB:,.0f} GB/s", "kind": "Ceiling (napkin)",
                     "tokens_per_s": group["ceiling_tokens_per_s"].iloc[0],
                     "fraction": 1.0})
        for _, r in group.iterrows():
            rows.append({"label": f"{r['chip']} measured", "kind": "Measured tg128 (llama.cpp)",
                         "tokens_per_s": r["tokens_per_s"],
                         "fraction": r["fraction_of_ceiling"]})
    df = pd.DataFrame(rows)
    order = list(df["label"])
    base = alt.Chart(df).encode(
        y=alt.Y("label:N", sort=order, title=None),
        x=alt.X("tokens_per_s:Q", title="tokens/s"),
        tooltip=[alt.Tooltip("label:N", title="Bar"),
                 alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=".1f"),
                 alt.Tooltip("fraction:Q", title="of ceiling", format=".0%")],
    )
    bars = base.mark_bar().encode(color=alt.Color(
        "kind:N", title=None, scale=alt.Scale(range=[PALETTE["ceiling"], PALETTE["apple"]])))
    text = bar_labels(base, "tokens_per_s", ".1f", df["tokens_per_s"].max() / 2)
    return responsive(bars + text, 30 * len(df), alt.Title(
        "Napkin ceiling vs measured decode, Llama-2-7B Q4_0",
        subtitle="tokens/s at tg128; ceiling = bandwidth / model file size"))


def fraction_strip(df: pd.DataFrame, band: tuple[float, float]) -> alt.Chart:
    """Every Apple chip and format as a fraction of its own ceiling."""
    order = (df.sort_values(["bandwidth_bytes_per_s", "gpu_cores"])["machine"]
             .drop_duplicates().tolist())
    points = alt.Chart(df).mark_point(filled=True, size=70, opacity=0.9).encode(
        y=alt.Y("machine:N", sort=order, title=None),
        x=alt.X("fraction_of_ceiling:Q", title="fraction of ceiling",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("quant:N", title="Weights", sort=list(QUANT_COLORS),
                        scale=alt.Scale(domain=list(QUANT_COLORS),
                                        range=list(QUANT_COLORS.values()))),
        shape=alt.Shape("quant:N", title="Weights", scale=alt.Scale(domain=list(QUANT_COLORS))),
        tooltip=[alt.Tooltip("machine:N", title="Chip"),
                 alt.Tooltip("quant:N", title="Weights"),
                 alt.Tooltip("bw_GB_per_s:Q", title="Bandwidth (GB/s)", format=",.0f"),
                 alt.Tooltip("tokens_per_s:Q", title="Measured (tok/s)", format=".2f"),
                 alt.Tooltip("ceiling_tokens_per_s:Q", title="Ceiling (tok/s)", format=".1f"),
                 alt.Tooltip("fraction_of_ceiling:Q", title="Fraction", format=".0%")],
    ).transform_calculate(bw_GB_per_s=f"datum.bandwidth_bytes_per_s / {GB}")
    shaded = _band(band[0], band[1], "x", "the essay's range")
    return responsive(shaded + points, 16 * len(order), alt.Title(
        "Fraction of the napkin ceiling, every Apple chip",
        subtitle="Llama-2-7B tg128; shaded: the essay's rule of thumb"))


LIVE = "This machine (live)"


def all_machines(df: pd.DataFrame, band: tuple[float, float],
                 title: str = "How close real decode gets to the napkin") -> alt.Chart:
    """Apple, discrete GPUs and CPUs (and a live run, drawn large): fraction of ceiling
    against the ceiling itself."""
    df = readable(df, ["ceiling_tokens_per_s", "fraction_of_ceiling"], log=True)
    families = [f for f in FAMILY_COLORS if f in set(df["family"])]
    # a live run above its ceiling (a model that fits in cache) stays on the plot
    over = float(df["fraction_of_ceiling"].max()) if len(df) else 0.0
    top = round(over * 1.05, 2) if over > 1 else 1
    points = alt.Chart(df).mark_point(filled=True, opacity=0.85).encode(
        size=alt.condition(alt.datum.family == LIVE, alt.value(260), alt.value(80)),
        x=alt.X("ceiling_tokens_per_s:Q", title="napkin ceiling (tokens/s, log scale)",
                scale=alt.Scale(type="log")),
        y=alt.Y("fraction_of_ceiling:Q", title="measured / ceiling",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, top])),
        color=alt.Color("family:N", title=None, sort=families,
                        scale=alt.Scale(domain=families,
                                        range=[FAMILY_COLORS[f] for f in families])),
        shape=alt.Shape("family:N", title=None, scale=alt.Scale(domain=families)),
        tooltip=[alt.Tooltip("machine:N", title="Machine"),
                 alt.Tooltip("quant:N", title="Weights"),
                 alt.Tooltip("tokens_per_s:Q", title="Measured (tok/s)", format=".2f"),
                 alt.Tooltip("ceiling_tokens_per_s:Q", title="Ceiling (tok/s)", format=".1f"),
                 alt.Tooltip("fraction_of_ceiling:Q", title="Fraction", format=".0%"),
                 alt.Tooltip("confidence:N", title="Confidence in the figure")]
        + ([alt.Tooltip("variant_note:N", title="Variant")] if "variant_note" in df else []),
    )
    shaded = _band(band[0], band[1], "y", "the essay's range")
    return responsive(shaded + points, 340, alt.Title(
        title, subtitle="each point: one llama.cpp run against its own ceiling"))


def quantization_lever(df: pd.DataFrame) -> alt.Chart:
    """Bytes per token against decode speed, one line per Apple chip."""
    df = df.assign(bytes_GB=df["bytes_per_token"] / GB,
                   tier=df["chip"].str.extract(r"(Pro|Max|Ultra)$", expand=False).fillna("base"))
    tiers = ["base", "Pro", "Max", "Ultra"]
    base = alt.Chart(df).encode(
        x=alt.X("bytes_GB:Q", title="bytes read per token (GB)", scale=alt.Scale(zero=True)),
        y=alt.Y("tokens_per_s:Q", title="measured tg128 (tokens/s)"),
        color=alt.Color("tier:N", title="Tier", sort=tiers,
                        scale=alt.Scale(domain=tiers,
                                        range=["#9ec5ef", "#5b9be0", "#2a78d6", "#123f78"])),
        detail="machine:N",
        tooltip=[alt.Tooltip("machine:N", title="Chip"), alt.Tooltip("quant:N", title="Weights"),
                 alt.Tooltip("bytes_GB:Q", title="Bytes/token (GB)", format=".2f"),
                 alt.Tooltip("tokens_per_s:Q", title="tok/s", format=".2f")],
    )
    lines = base.mark_line(opacity=0.6) + base.mark_point(filled=True, size=40)
    return responsive(lines, 320, alt.Title(
        "The quantization lever", subtitle="Llama-2-7B on every Apple chip at F16, Q8_0 and Q4_0"))


def calculator(bandwidth_GB_per_s: float, model_GB: float, discount: float) -> alt.Chart:
    """Sliders for bandwidth, model size and discount; ceiling and realistic speed."""
    bw = alt.param(name="bandwidth", value=bandwidth_GB_per_s, bind=alt.binding_range(
        min=20, max=8000, step=10, name="Memory bandwidth (GB/s) "))
    size = alt.param(name="model_size", value=model_GB, bind=alt.binding_range(
        min=0.5, max=200, step=0.1, name="Bytes per token (GB) "))
    disc = alt.param(name="discount", value=discount, bind=alt.binding_range(
        min=0.1, max=1.0, step=0.05, name="Realistic fraction "))
    sizes = pd.DataFrame({"size_GB": np.round(np.geomspace(0.5, 400, 60), 3)})
    curve = alt.Chart(sizes).transform_calculate(
        Ceiling="bandwidth / datum.size_GB",
        Realistic="discount * bandwidth / datum.size_GB",
    ).transform_fold(["Ceiling", "Realistic"], as_=["line", "tokens_per_s"]).mark_line().encode(
        x=alt.X("size_GB:Q", title="bytes read per token (GB, log scale)",
                scale=alt.Scale(type="log", domain=[0.5, 400], nice=False)),
        y=alt.Y("tokens_per_s:Q", title="tokens/s (log scale)",
                scale=alt.Scale(type="log", domain=[0.05, 20000], nice=False)),
        color=alt.Color("line:N", title=None,
                        scale=alt.Scale(domain=["Ceiling", "Realistic"],
                                        range=[PALETTE["ceiling"], PALETTE["decode"]])),
        strokeDash=alt.StrokeDash("line:N", title=None,
                                  scale=alt.Scale(domain=["Ceiling", "Realistic"],
                                                  range=[[1, 0], [5, 3]])),
    )
    here = pd.DataFrame({"row": [0]})
    point = alt.Chart(here).transform_calculate(
        size_GB="model_size", ceiling="bandwidth / model_size",
        realistic="discount * bandwidth / model_size",
    ).mark_point(size=140, filled=True, color=PALETTE["decode"]).encode(
        x="size_GB:Q", y="realistic:Q",
        tooltip=[alt.Tooltip("size_GB:Q", title="Bytes/token (GB)", format=".1f"),
                 alt.Tooltip("ceiling:Q", title="Ceiling (tok/s)", format=".1f"),
                 alt.Tooltip("realistic:Q", title="Realistic (tok/s)", format=".1f")])
    readout = alt.ExprRef(  # two lines, so the readout fits a phone
        "['Ceiling ' + format(bandwidth / model_size, ',.1f') + ' tok/s,', 'realistic ' + "
        "format(discount * bandwidth / model_size, ',.1f') + ' tok/s']")
    return responsive((curve + point).add_params(bw, size, disc), 320, alt.Title(readout))
