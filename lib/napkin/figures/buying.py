"""Chapter 8 charts: the ranking for one workload, and the calculator for any."""

from __future__ import annotations

import json
import re

import altair as alt
import pandas as pd

from .. import buying, models
from ..charts import PALETTE, responsive
from ..units import GB

VENDOR_COLORS = {"Apple": PALETTE["apple"], "NVIDIA": PALETTE["nvidia"], "AMD": PALETTE["amd"]}


def _family_color() -> alt.Color:
    return alt.Color("vendor:N", title=None, sort=list(VENDOR_COLORS),
                     scale=alt.Scale(domain=list(VENDOR_COLORS),
                                     range=list(VENDOR_COLORS.values())))


def ttft_ranking(ranked: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """Time to first token per machine that holds the workload: the range over published
    prefill runs (line), its median (dot) and the dense-FLOP/s roofline bound (tick)."""
    df = ranked[ranked["fits"]].copy()
    df["label"] = [f"{m}" if pd.isna(r) else f"{int(r)}. {m}"
                   for m, r in zip(df["machine"], df["rank"])]
    order = list(df["label"])
    keep = ["label", "machine", "vendor", "ttft_fast_s", "ttft_mid_s", "ttft_slow_s",
            "ttft_bound_s", "prefill_runs", "prefill_TFLOPS_low", "prefill_TFLOPS_high",
            "dense_TFLOPS", "flops_kind", "capacity_GB", "need_GB", "price", "price_note"]
    df = df[keep].round({"ttft_fast_s": 1, "ttft_mid_s": 1, "ttft_slow_s": 1,
                         "ttft_bound_s": 2, "prefill_TFLOPS_low": 1, "prefill_TFLOPS_high": 1,
                         "capacity_GB": 0, "need_GB": 1})
    tips = [alt.Tooltip("machine:N", title="Machine"),
            alt.Tooltip("ttft_mid_s:Q", title="First token, median run (s)", format=",.1f"),
            alt.Tooltip("ttft_fast_s:Q", title="Fastest run (s)", format=",.1f"),
            alt.Tooltip("ttft_slow_s:Q", title="Slowest run (s)", format=",.1f"),
            alt.Tooltip("prefill_runs:Q", title="Published prefill runs"),
            alt.Tooltip("prefill_TFLOPS_low:Q", title="They reached (TFLOP/s, low)"),
            alt.Tooltip("prefill_TFLOPS_high:Q", title="They reached (TFLOP/s, high)"),
            alt.Tooltip("ttft_bound_s:Q", title="Roofline bound (s)", format=",.2f"),
            alt.Tooltip("dense_TFLOPS:Q", title="Dense 16-bit TFLOP/s (vendor)"),
            alt.Tooltip("flops_kind:N", title="FLOP/s figure"),
            alt.Tooltip("need_GB:Q", title="Needs (GB)"),
            alt.Tooltip("capacity_GB:Q", title="Has (GB)"),
            alt.Tooltip("price_note:N", title="Price")]
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=130))
    x = alt.X("ttft_mid_s:Q", title="first token (s, log scale)",
              scale=alt.Scale(type="log"))
    base = alt.Chart(df).encode(y=y, color=_family_color(), tooltip=tips)
    measured = base.transform_filter("isValid(datum.ttft_mid_s)")
    ranges = measured.mark_rule(strokeWidth=3).encode(x=x, x2="ttft_slow_s:Q")
    ranges = ranges + measured.mark_rule(strokeWidth=3).encode(
        x=alt.X("ttft_fast_s:Q"), x2="ttft_mid_s:Q")
    dots = measured.mark_point(filled=True, size=70).encode(x=x)
    bound = base.transform_filter("isValid(datum.ttft_bound_s)").mark_tick(
        thickness=2, size=14, color=PALETTE["ceiling"]).encode(x="ttft_bound_s:Q")
    return responsive(ranges + dots + bound, 20 * len(order) + 40, alt.Title(
        title, subtitle=subtitle))


def calculator(rows: pd.DataFrame, presets: dict, formats: list[str], models_shown: list[str],
               default: str = "coding agent") -> alt.Chart:
    """The ranking for any workload: choose a preset or set the sliders (used under
    "custom"), and what to rank by. Every number is recomputed in the page by
    :func:`napkin.buying.js_expressions`, the same arithmetic as :func:`napkin.buying.estimate`."""
    names = list(presets) + ["custom"]
    preset = alt.param(name="preset", value=default, bind=alt.binding_select(
        options=names, name="Workload "))
    prompt = alt.param(name="prompt", value=8000, bind=alt.binding_range(
        min=1000, max=128000, step=1000, name="Custom: prompt (tokens) "))
    output = alt.param(name="output", value=500, bind=alt.binding_range(
        min=100, max=8000, step=100, name="Custom: answer (tokens) "))
    users = alt.param(name="users", value=1, bind=alt.binding_range(
        min=1, max=256, step=1, name="Custom: users at once "))
    model = alt.param(name="model", value=models_shown[0], bind=alt.binding_select(
        options=models_shown, name="Custom: model "))
    fmt = alt.param(name="fmt", value="Q4_K", bind=alt.binding_select(
        options=formats, name="Custom: weights "))
    rank_by = alt.param(name="rank_by", value="preset", bind=alt.binding_select(
        options=["preset", *buying.RANK_BY], name="Rank by "))

    def pick(field, custom):
        table = json.dumps({k: getattr(w, field) for k, w in presets.items()})
        return f"preset == 'custom' ? {custom} : ({table})[preset]"

    bpw = json.dumps({f: models.bits_per_weight(f) / 8 for f in formats})
    expr = buying.js_expressions()
    calc = {"L": pick("prompt_tokens", "prompt"), "O": pick("output_tokens", "output"),
            "U": pick("users", "users"), "sel_model": pick("model", "model"),
            "sel_fmt": pick("weight_format", "fmt"),
            "by": "rank_by == 'preset' ? (" + pick("rank_by", "'ttft'") + ") : rank_by"}
    chart = alt.Chart(rows).transform_calculate(**calc).transform_filter(
        "datum.model == datum.sel_model").transform_calculate(
        bpw=f"({bpw})[datum.sel_fmt]")
    # the library's expressions name L, O, U and bpw; here they are fields of the datum
    subst = {"L": "datum.L", "O": "datum.O", "U": "datum.U", "bpw": "datum.bpw"}
    fields = {}
    for name, e in expr.items():
        for k, v in subst.items():
            e = _replace_names(e, k, v)
        fields[name] = e
    for name in ("w_total", "kv_end", "need", "fits", "ttft_fast", "ttft_mid", "ttft_slow",
                 "ttft_bound", "decode_low", "decode_mid", "decode_high", "per_user_low",
                 "per_user_mid", "per_user_high", "price"):
        chart = chart.transform_calculate(**{name: fields[name]})
    chart = chart.transform_calculate(
        mid="datum.by == 'ttft' ? datum.ttft_mid : datum.by == 'decode' ? datum.decode_mid "
            ": datum.per_user_mid",
        low="datum.by == 'ttft' ? datum.ttft_fast : datum.by == 'decode' ? datum.decode_low "
            ": datum.per_user_low",
        high="datum.by == 'ttft' ? datum.ttft_slow : datum.by == 'decode' ? "
             "datum.decode_high : datum.per_user_high",
        key="datum.by == 'ttft' ? datum.mid : -datum.mid",
        need_GB=f"datum.need / {GB}", capacity_GB=f"datum.capacity / {GB}",
        price_per="datum.price ? datum.price / (datum.U * datum.per_user_mid) : null",
    ).transform_filter("datum.fits && isValid(datum.mid)")
    tips = [alt.Tooltip("machine:N", title="Machine"),
            alt.Tooltip("mid:Q", title="Value (middle)", format=",.3~r"),
            alt.Tooltip("low:Q", title="Range from", format=",.3~r"),
            alt.Tooltip("high:Q", title="Range to", format=",.3~r"),
            alt.Tooltip("ttft_bound:Q", title="First token, roofline bound (s)",
                        format=",.3~r"),
            alt.Tooltip("need_GB:Q", title="Needs (GB)", format=",.1f"),
            alt.Tooltip("capacity_GB:Q", title="Has (GB)", format=",.0f"),
            alt.Tooltip("capacity_basis:N", title="Memory figure"),
            alt.Tooltip("runs:Q", title="Published prefill runs"),
            alt.Tooltip("fraction_basis:N", title="Decode discount from"),
            alt.Tooltip("price:Q", title="Vendor price (USD)", format=",.0f"),
            alt.Tooltip("price_per:Q", title="USD per token/s", format=",.0f")]
    y = alt.Y("machine:N", title=None, axis=alt.Axis(labelLimit=120),
              sort=alt.EncodingSortField(field="key", op="min", order="ascending"))
    x = alt.X("mid:Q", scale=alt.Scale(type="log"))
    base = chart.encode(y=y, color=_family_color(), tooltip=tips)
    ranges = base.mark_rule(strokeWidth=3).encode(x=alt.X(
        "low:Q", title="s, or tokens/s (log scale)",
        scale=alt.Scale(type="log")), x2="high:Q")
    dots = base.mark_point(filled=True, size=70).encode(x=x)
    # no colour channel: the labels take the theme's text colour, light or dark
    labels = chart.encode(y=y, tooltip=tips).mark_text(align="left", dx=8, fontSize=11).encode(
        x="high:Q", text=alt.Text("mid:Q", format=",.3~r"))
    readout = alt.ExprRef(
        "['What to buy, ranked by', (rank_by == 'preset' ? ({" +
        ", ".join(f"'{k}': '{buying.RANK_BY[w.rank_by]}'" for k, w in presets.items()) +
        ", 'custom': 'time to first token'})[preset] : ({" +
        ", ".join(f"'{k}': '{v}'" for k, v in buying.RANK_BY.items()) + "})[rank_by]), "
        "'(left out: too small or unmeasured)']")
    return responsive((ranges + dots + labels).add_params(
        preset, prompt, output, users, model, fmt, rank_by), 520, alt.Title(readout))


def _replace_names(expr: str, name: str, by: str) -> str:
    """Replace a bare parameter name in a Vega expression (not inside ``datum.x``)."""
    return re.sub(rf"(?<![\w.]){name}(?!\w)", by, expr)
