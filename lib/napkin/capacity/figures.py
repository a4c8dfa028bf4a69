"""Chapter 4 charts: how big the KV cache is, and when it, not bandwidth, sets the batch."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, responsive
from ..units import GB, GiB

__all__ = ["calculator", "turn_chart", "CHIP_COLORS", "model_sizes"]

CHIP_COLORS = {"H100 SXM": "#2a78d6", "H200": "#3c9a3c", "B200": "#8e44ad",
               "M2 Ultra": "#6b6459", "DGX Spark": "#eb6834"}


def _chip_scale(chips) -> alt.Scale:
    chips = list(chips)
    return alt.Scale(domain=chips, range=[CHIP_COLORS.get(c, "#999999") for c in chips])


def model_sizes(table: pd.DataFrame) -> alt.Chart:
    """Every model's cache at its full context: the napkin's formula against a calculator
    that knows only hidden_size (no GQA, no head_dim, no windows, no MLA)."""
    rows = []
    for _, r in table.iterrows():
        for kind, col in (("napkin (config.json read in full)", "kv_at_context_bytes"),
                          ("hidden_size only (no GQA, windows, MLA)", "naive_at_context_bytes")):
            rows.append({"model": r["model"], "kind": kind, "GB": r[col] / GB,
                         "GiB": r[col] / GiB, "context": r["context_tokens"],
                         "layout": r["layout"],
                         "overstated": r["naive_at_context_bytes"] / r["kv_at_context_bytes"]})
    df = pd.DataFrame(rows)
    order = table.sort_values("kv_at_context_bytes")["model"].tolist()
    kinds = list(dict.fromkeys(df["kind"]))
    base = alt.Chart(df).encode(
        y=alt.Y("model:N", sort=order, title=None),
        x=alt.X("GiB:Q", title="KV cache for one sequence at full context (GiB, log scale)",
                scale=alt.Scale(type="log")),
        color=alt.Color("kind:N", title=None, sort=kinds,
                        scale=alt.Scale(domain=kinds, range=[PALETTE["apple"], "#c9c2b8"])),
        tooltip=[alt.Tooltip("model:N", title="Model"), alt.Tooltip("kind:N", title="Formula"),
                 alt.Tooltip("context:Q", title="Context (tokens)", format=","),
                 alt.Tooltip("GB:Q", title="GB", format=",.2f"),
                 alt.Tooltip("GiB:Q", title="GiB", format=",.2f"),
                 alt.Tooltip("layout:N", title="Cache layout"),
                 alt.Tooltip("overstated:Q", title="hidden-size formula overstates by",
                             format=".1f")],
    )
    shapes = alt.Shape("kind:N", title=None, sort=kinds,
                       scale=alt.Scale(domain=kinds, range=["circle", "square"]))
    naive = base.transform_filter(alt.datum.kind == kinds[1]).mark_point(
        filled=False, size=110, strokeWidth=2).encode(shape=shapes)
    napkin = base.transform_filter(alt.datum.kind == kinds[0]).mark_point(
        filled=True, size=90, opacity=0.95).encode(shape=shapes)
    rule = alt.Chart(df).mark_rule(color="#c9c2b8").encode(
        y=alt.Y("model:N", sort=order), x="min(GiB):Q", x2="max(GiB):Q")
    return responsive(rule + naive + napkin, 26 * len(order), alt.Title(
        "What reading the whole config.json is worth",
        subtitle="KV cache at each model's full context, 16-bit, one sequence"))


def turn_chart(curves: pd.DataFrame, essay_point: dict, default_model: str) -> alt.Chart:
    """Per chip, against context: the largest batch that fits beside the weights (solid) and
    the batch a decode step needs to reach the ridge with every cache read counted (dashed,
    ending where no batch reaches it). Where solid runs below dashed, no batch the memory
    holds is compute-bound; the ringed point is the computed turn. A menu picks the model."""
    df = curves.assign(kv_GiB=curves["kv_per_sequence_bytes"] / GiB,
                       free_GiB=curves["free_bytes"] / GiB)
    long = pd.concat([
        df[df["max_batch"] > 0].assign(line="fits in memory", batch=lambda d: d["max_batch"]),
        df[df["needed_batch"].notna()].assign(line="to reach the ridge",
                                              batch=lambda d: d["needed_batch"]),
    ], ignore_index=True)
    models = list(dict.fromkeys(df["model"]))
    chips = list(dict.fromkeys(curves["chip"]))
    pick = alt.param(name="model", value=default_model,
                     bind=alt.binding_select(options=models, name="Model "))
    x = alt.X("context_tokens:Q", title="context per sequence (tokens, log scale)",
              scale=alt.Scale(type="log", base=2, domain=[256, 131072], nice=False),
              axis=alt.Axis(values=[256, 1024, 4096, 16384, 65536], format=","))
    y = alt.Y("batch:Q", title="sequences (log scale)",
              scale=alt.Scale(type="log", domain=[1, 100000], nice=False))
    color = alt.Color("chip:N", title=None, sort=chips, scale=_chip_scale(chips))
    dash = alt.StrokeDash("line:N", title=None, sort=["fits in memory",
                                                      "to reach the ridge"],
                          scale=alt.Scale(range=[[1, 0], [5, 4]]))
    tooltip = [alt.Tooltip("chip:N", title="Chip"), alt.Tooltip("line:N", title="Line"),
               alt.Tooltip("context_tokens:Q", title="Context (tokens)", format=","),
               alt.Tooltip("batch:Q", title="Sequences", format=",.0f"),
               alt.Tooltip("kv_GiB:Q", title="KV per sequence (GiB)", format=",.2f"),
               alt.Tooltip("free_GiB:Q", title="Memory beside the weights (GiB)",
                           format=",.1f")]
    lines = alt.Chart(long).mark_line(clip=True).encode(
        x=x, y=y, color=color, strokeDash=dash, detail="line:N", tooltip=tooltip,
    ).transform_filter(alt.datum.model == pick)
    turns = alt.Chart(df[df["turn"]].assign(batch=lambda d: d["max_batch"].clip(lower=1),
                                            line="the turn")).mark_point(
        size=90, strokeWidth=2, clip=True).encode(x=x, y=y, color=color, tooltip=tooltip
                                       ).transform_filter(alt.datum.model == pick)
    point = pd.DataFrame([essay_point])
    essay = alt.Chart(point).mark_point(shape="diamond", size=160, filled=True,
                                        color=PALETTE["decode"]).encode(
        x="context_tokens:Q", y="max_batch:Q",
        tooltip=[alt.Tooltip("label:N", title="The essay"),
                 alt.Tooltip("kv_GiB:Q", title="KV cache (GiB)", format=",.1f")])
    return responsive((lines + turns + essay).add_params(pick), 340, alt.Title(
        "Past a short context, no batch that fits is compute-bound",
        subtitle="8-bit weights on FP8 tensor cores, attention over a 16-bit cache at FP16; "
                 "dashed: the batch that would reach the ridge"))


def calculator(rows: pd.DataFrame, chips: pd.DataFrame, dtypes: dict[str, float],
               formats: dict[str, float], default_model: str, context_tokens: int,
               batch_size: int) -> alt.Chart:
    """Weights plus cache against every chip's memory, for any model, context, batch, cache
    type and weight format. The cache is ``(full * n + windowed * min(n, window)) * bytes
    per element * batch``, the same formula :func:`napkin.kv_cache_bytes` uses."""
    model = alt.param(name="model", value=default_model,
                      bind=alt.binding_select(options=rows["model"].tolist(), name="Model "))
    context = alt.param(name="context", value=context_tokens, bind=alt.binding_range(
        min=1024, max=131072, step=1024, name="Context per sequence (tokens) "))
    batch = alt.param(name="batch", value=batch_size, bind=alt.binding_range(
        min=1, max=256, step=1, name="Sequences (batch) "))
    kv = alt.param(name="kv_dtype", value=list(dtypes)[0], bind=alt.binding_select(
        options=list(dtypes), name="KV cache type "))
    weights = alt.param(name="weights", value=list(formats)[0], bind=alt.binding_select(
        options=list(formats), name="Weight format "))
    kv_bytes = "({" + ", ".join(f"'{k}': {v}" for k, v in dtypes.items()) + "})[kv_dtype]"
    w_bytes = "({" + ", ".join(f"'{k}': {v}" for k, v in formats.items()) + "})[weights]"
    cache = (f"(datum.full_elements * context + datum.windowed_elements * "
             f"min(context, datum.window)) * {kv_bytes} * batch")
    base = alt.Chart(rows).transform_filter(alt.datum.model == model).transform_calculate(
        Weights=f"datum.params * {w_bytes} / {GiB}",
        KV=f"{cache} / {GiB}",
        KV_GB=f"{cache} / {GB}",
        per_token_KiB=f"(datum.full_elements + datum.windowed_elements) * {kv_bytes} / 1024",
        beyond="context > datum.max_context_tokens",
    )
    bars = base.transform_fold(["Weights", "KV"], as_=["part", "GiB"]).mark_bar(
        height=38).encode(
        x=alt.X("GiB:Q", stack="zero", title="memory (GiB)"),
        y=alt.value(150),
        color=alt.Color("part:N", title=None, sort=["Weights", "KV"],
                        scale=alt.Scale(domain=["Weights", "KV"],
                                        range=[PALETTE["ceiling"], PALETTE["apple"]])),
        tooltip=[alt.Tooltip("model:N", title="Model"), alt.Tooltip("part:N", title="Part"),
                 alt.Tooltip("GiB:Q", title="GiB", format=",.1f"),
                 alt.Tooltip("KV_GB:Q", title="KV cache (GB)", format=",.2f"),
                 alt.Tooltip("per_token_KiB:Q", title="KV per token (KiB, short context)",
                             format=",.1f")])
    # the memory each chip's GPU may use by default (all of it but on a Mac)
    chip_df = chips.assign(GiB=chips["gpu_usable_bytes"] / GiB,
                           memory_GiB=chips["capacity_bytes"] / GiB)
    chip_tips = [alt.Tooltip("chip:N", title="Chip"),
                 alt.Tooltip("GiB:Q", title="GPU may use by default (GiB)", format=",.0f"),
                 alt.Tooltip("memory_GiB:Q", title="Memory (GiB)", format=",.0f"),
                 alt.Tooltip("capacity_spec:N", title="Figure used")]
    rules = alt.Chart(chip_df).mark_rule(strokeWidth=2, strokeDash=[4, 3],
                                         color=PALETTE["ceiling"]).encode(
        x="GiB:Q", tooltip=chip_tips)
    labels = alt.Chart(chip_df).mark_text(angle=270, align="right", baseline="bottom", dx=-62,
                                          dy=-3, fontSize=11, color=PALETTE["ceiling"]).encode(
        x="GiB:Q", y=alt.value(0), text="chip:N", tooltip=chip_tips)
    # a title cannot read data, so a text mark carries the numbers
    text = base.transform_calculate(
        total="datum.Weights + datum.KV",
        line=("['KV cache ' + format(datum.KV, ',.1f') + ' GiB (' + format(datum.KV_GB, "
              "',.1f') + ' GB)', '+ weights ' + format(datum.Weights, ',.1f') + ' GiB = ' + "
              "format(datum.Weights + datum.KV, ',.1f') + ' GiB' + (datum.beyond ? "
              "' (beyond the model\\'s context)' : '')]"),  # two lines: fits a phone
    ).mark_text(align="left", baseline="top", dx=0, fontSize=13, fontWeight=600).encode(
        x=alt.value(0), y=alt.value(8), text="line:N")
    chart = (rules + labels + bars + text).add_params(model, context, batch, kv, weights)
    return responsive(chart, 200, alt.Title(
        "KV cache calculator", subtitle="weights + cache against the memory each chip's GPU "
                                        "may use (dashed lines)"))
