"""Chapter 8 charts: the ranking for one workload, the calculator for any, and the check of
the first-token method against runs it did not see."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from .. import buying, models
from ..charts import PALETTE, replace_names, responsive
from ..units import GiB

__all__ = ["calculator", "extrapolation", "RAISED", "ttft_ranking", "VENDOR_COLORS"]

VENDOR_COLORS = {"Apple": PALETTE["apple"], "NVIDIA": PALETTE["nvidia"], "AMD": PALETTE["amd"]}
RAISED = " (raise GPU limit)"


def _family_color() -> alt.Color:
    return alt.Color("vendor:N", title=None, sort=list(VENDOR_COLORS),
                     scale=alt.Scale(domain=list(VENDOR_COLORS),
                                     range=list(VENDOR_COLORS.values())))


def ttft_ranking(ranked: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """Time to first token per machine that holds the workload in the memory its GPU may
    use: the range over published prefill runs (line), its median (dot) and the roofline
    bound of the arithmetic the weights run in (tick)."""
    df = ranked[ranked["fits"]].copy()
    df["label"] = [f"{m}" if pd.isna(r) else f"{int(r)}. {m}"
                   for m, r in zip(df["machine"], df["rank"])]
    order = list(df["label"])
    keep = ["label", "machine", "vendor", "backend", "ttft_fast_s", "ttft_mid_s", "ttft_slow_s",
            "ttft_bound_s", "prefill_runs", "prefill_note", "prefill_TFLOPS_low",
            "prefill_TFLOPS_high", "prefill_fraction_low", "prefill_fraction_high",
            "roof_TFLOPS", "roof_label", "usable_GiB", "need_GiB", "price", "price_note"]
    df = df[keep].round({"ttft_fast_s": 1, "ttft_mid_s": 1, "ttft_slow_s": 1,
                         "ttft_bound_s": 2, "prefill_TFLOPS_low": 1, "prefill_TFLOPS_high": 1,
                         "prefill_fraction_low": 3, "prefill_fraction_high": 3,
                         "roof_TFLOPS": 1, "usable_GiB": 1, "need_GiB": 1})
    tips = [alt.Tooltip("machine:N", title="Machine"),
            alt.Tooltip("ttft_mid_s:Q", title="First token, median run (s)", format=",.1f"),
            alt.Tooltip("ttft_fast_s:Q", title="Fastest run (s)", format=",.1f"),
            alt.Tooltip("ttft_slow_s:Q", title="Slowest run (s)", format=",.1f"),
            alt.Tooltip("prefill_runs:Q", title="Published prefill runs"),
            alt.Tooltip("prefill_note:N", title="Note on the runs"),
            alt.Tooltip("prefill_TFLOPS_low:Q", title="They reached (TFLOP/s, low)"),
            alt.Tooltip("prefill_TFLOPS_high:Q", title="They reached (TFLOP/s, high)"),
            alt.Tooltip("prefill_fraction_low:Q", title="Of the roof (low)", format=".0%"),
            alt.Tooltip("prefill_fraction_high:Q", title="Of the roof (high)", format=".0%"),
            alt.Tooltip("ttft_bound_s:Q", title="Roofline bound (s)", format=",.2f"),
            alt.Tooltip("backend:N", title="llama.cpp backend held to"),
            alt.Tooltip("roof_TFLOPS:Q", title="Roof (TFLOP/s or TOPS)"),
            alt.Tooltip("roof_label:N", title="Roof figure"),
            alt.Tooltip("need_GiB:Q", title="Needs (GiB)"),
            alt.Tooltip("usable_GiB:Q", title="GPU may use (GiB)"),
            alt.Tooltip("price_note:N", title="Price")]
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=150))
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


def extrapolation(check: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """The first-token method against runs it did not see: predicted over measured prefill
    rate, by the tokens cached at the end of the run's prompt, one line per machine, model
    and build (a rule at 1: exact)."""
    df = check.assign(
        context_tokens=check["depth_tokens"] + check["prompt_tokens"],
        series=check["machine"] + ", " + check["model"] + ", " + check["source"],
        kind=check["moe"].map({True: "MoE", False: "dense"}))
    df = df[["series", "machine", "model", "kind", "vendor", "backend", "test",
             "depth_tokens", "context_tokens", "measured_tok_per_s", "predicted_tok_per_s",
             "ratio", "source", "confidence"]].round(
        {"measured_tok_per_s": 1, "predicted_tok_per_s": 1, "ratio": 3})
    tips = [alt.Tooltip("machine:N", title="Machine"), alt.Tooltip("model:N", title="Model"),
            alt.Tooltip("kind:N", title="Kind"), alt.Tooltip("test:N", title="Test"),
            alt.Tooltip("depth_tokens:Q", title="Cached before (tokens)", format=","),
            alt.Tooltip("measured_tok_per_s:Q", title="Measured (tokens/s)", format=",.0f"),
            alt.Tooltip("predicted_tok_per_s:Q", title="Predicted (tokens/s)", format=",.0f"),
            alt.Tooltip("ratio:Q", title="Predicted / measured", format=".2f"),
            alt.Tooltip("source:N", title="Source"),
            alt.Tooltip("confidence:N", title="Confidence")]
    x = alt.X("context_tokens:Q", title="tokens cached at the end of the prompt (log scale)",
              scale=alt.Scale(type="log"))
    y = alt.Y("ratio:Q", title="predicted / measured (log scale)",
              scale=alt.Scale(type="log", domain=[0.5, 4]))
    base = alt.Chart(df).encode(x=x, y=y, color=_family_color(), tooltip=tips)
    lines = base.mark_line(strokeWidth=1.5, opacity=0.6).encode(detail="series:N")
    points = base.mark_point(filled=True, size=45).encode(
        shape=alt.Shape("kind:N", title=None, sort=["dense", "MoE"]))
    exact = alt.Chart(pd.DataFrame({"ratio": [1.0]})).mark_rule(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(y="ratio:Q")
    return responsive(exact + lines + points, 320, alt.Title(title, subtitle=subtitle))


def _sliders(presets: dict, formats: list[str], models_shown: list[str], default: str,
             custom: dict | None) -> list:
    """The page's controls: a preset, the custom workload's sliders, what to rank by."""
    start = {"prompt": 8000, "output": 500, "users": 1, "model": models_shown[0],
             "fmt": "Q4_K", "rank_by": "preset"} | (custom or {})
    return [
        alt.param(name="preset", value=default, bind=alt.binding_select(
            options=list(presets) + ["custom"], name="Workload ")),
        alt.param(name="prompt", value=start["prompt"], bind=alt.binding_range(
            min=1000, max=128000, step=1000, name="Custom: prompt (tokens) ")),
        alt.param(name="output", value=start["output"], bind=alt.binding_range(
            min=100, max=8000, step=100, name="Custom: answer (tokens) ")),
        alt.param(name="users", value=start["users"], bind=alt.binding_range(
            min=1, max=256, step=1, name="Custom: users at once ")),
        alt.param(name="model", value=start["model"], bind=alt.binding_select(
            options=models_shown, name="Custom: model ")),
        alt.param(name="fmt", value=start["fmt"], bind=alt.binding_select(
            options=formats, name="Custom: weights ")),
        alt.param(name="rank_by", value=start["rank_by"], bind=alt.binding_select(
            options=["preset", *buying.RANK_BY], name="Rank by ")),
    ]


def _pick(presets: dict, field: str, custom: str) -> str:
    """A page expression: the chosen preset's ``field``, or ``custom`` under "custom"."""
    table = json.dumps({k: getattr(w, field) for k, w in presets.items()})
    return f"preset == 'custom' ? {custom} : ({table})[preset]"


def _by(presets: dict) -> str:
    """A page expression: what the chosen workload is ranked by (a key of RANK_BY)."""
    return "rank_by == 'preset' ? (" + _pick(presets, "rank_by", "'ttft'") + ") : rank_by"


#: The unit of a row's ranked value, from its ``by`` field.
_UNIT_OF_DATUM = "(datum.by == 'ttft' ? ' s' : datum.by == 'decode' ? ' tok/s' : ' tok/s per user')"


def _computed(rows: pd.DataFrame, presets: dict, formats: list[str]) -> alt.Chart:
    """The rows with every figure of :func:`napkin.buying.estimate` computed in the page for
    the chosen workload, and the value ranked by (mid, low, high)."""
    def pick(field, custom):
        return _pick(presets, field, custom)

    bpw = json.dumps({f: models.bits_per_weight(f) / 8 for f in formats})
    calc = {"L": pick("prompt_tokens", "prompt"), "O": pick("output_tokens", "output"),
            "U": pick("users", "users"), "sel_model": pick("model", "model"),
            "sel_fmt": pick("weight_format", "fmt"), "by": _by(presets)}
    chart = alt.Chart(rows).transform_calculate(**calc).transform_filter(
        "datum.model == datum.sel_model").transform_calculate(
        bpw=f"({bpw})[datum.sel_fmt]", roof="datum['roof_' + datum.sel_fmt]",
        roofkind="datum['roofkind_' + datum.sel_fmt]")
    # the library's expressions name L, O, U and bpw; here they are fields of the datum
    subst = {"L": "datum.L", "O": "datum.O", "U": "datum.U", "bpw": "datum.bpw"}
    for name, e in buying.js_expressions().items():
        if name in _SHOWN_FIELDS:
            for k, v in subst.items():
                e = replace_names(e, k, v)
            chart = chart.transform_calculate(**{name: e})
    pick_by = "datum.by == 'ttft' ? datum.ttft_{} : datum.by == 'decode' ? datum.decode_{} " \
              ": datum.per_user_{}"
    return chart.transform_calculate(
        mid=pick_by.format("mid", "mid", "mid"), low=pick_by.format("fast", "low", "low"),
        high=pick_by.format("slow", "high", "high"),
        key="(datum.fits ? 0 : 1e12) + (datum.by == 'ttft' ? datum.mid : -datum.mid)",
        unit=f"trim({_UNIT_OF_DATUM})",
        label=f"datum.fits ? datum.machine : datum.machine + '{RAISED}'",
        fit_note=f"datum.fits ? 'fits in what the GPU may use by default' : "
                 f"'{buying.RAISE_LIMIT}'",
        need_GiB=f"datum.need / {GiB}", usable_GiB=f"datum.usable / {GiB}",
        capacity_GiB=f"datum.capacity / {GiB}",
        price_per="datum.fits && datum.price ? datum.price / (datum.U * datum.per_user_mid) "
                  ": null",
    ).transform_filter("datum.fits_raised && isValid(datum.mid)")


#: The library's expressions the page computes, in order (each may use those before it).
_SHOWN_FIELDS = ("w_total", "kv_end", "need", "fits", "fits_raised", "ttft_fast", "ttft_mid",
                 "ttft_slow", "ttft_bound", "decode_low", "decode_mid", "decode_high",
                 "per_user_low", "per_user_mid", "per_user_high", "price")
_CALCULATOR_TIPS = [
    alt.Tooltip("machine:N", title="Machine"),
    alt.Tooltip("mid:Q", title="Value (middle)", format=",.3~r"),
    alt.Tooltip("unit:N", title="Unit"),
    alt.Tooltip("low:Q", title="Range from", format=",.3~r"),
    alt.Tooltip("high:Q", title="Range to", format=",.3~r"),
    alt.Tooltip("ttft_bound:Q", title="First token, roofline bound (s)", format=",.3~r"),
    alt.Tooltip("backend:N", title="llama.cpp backend held to"),
    alt.Tooltip("roofkind:N", title="Roof figure"),
    alt.Tooltip("need_GiB:Q", title="Needs (GiB)", format=",.1f"),
    alt.Tooltip("usable_GiB:Q", title="GPU may use by default (GiB)", format=",.1f"),
    alt.Tooltip("capacity_GiB:Q", title="Memory (GiB)", format=",.0f"),
    alt.Tooltip("fit_note:N", title="Memory"),
    alt.Tooltip("capacity_basis:N", title="Memory figure"),
    alt.Tooltip("runs:Q", title="Published prefill runs"),
    alt.Tooltip("fraction_basis:N", title="Decode discount from"),
    alt.Tooltip("price:Q", title="Vendor price (USD)", format=",.0f"),
    alt.Tooltip("price_per:Q", title="USD per token/s", format=",.0f")]


def calculator(rows: pd.DataFrame, presets: dict, formats: list[str], models_shown: list[str],
               default: str = "coding agent", custom: dict | None = None,
               audit: bool = False) -> alt.Chart:
    """The ranking for any workload: choose a preset or set the sliders (used under
    "custom"), and what to rank by. Every number is recomputed in the page by
    :func:`napkin.buying.js_expressions`, the same arithmetic as :func:`napkin.buying.estimate`.
    A Mac that holds the workload only after its GPU limit is raised is drawn faint, last,
    marked "(raise GPU limit)". ``custom`` sets the sliders' starting values (keys prompt,
    output, users, model, fmt, rank_by). ``audit``: each value label's accessible description
    carries the computed values unrounded, for tests that compare them with the library."""
    chart = _computed(rows, presets, formats)
    tips = _CALCULATOR_TIPS
    y = alt.Y("label:N", title=None, axis=alt.Axis(labelLimit=200),
              sort=alt.EncodingSortField(field="key", op="min", order="ascending"))
    x = alt.X("mid:Q", scale=alt.Scale(type="log"))
    faint = alt.condition("datum.fits", alt.value(1.0), alt.value(0.35))
    base = chart.encode(y=y, color=_family_color(), tooltip=tips, opacity=faint)
    # the unit follows what is ranked: on every tick label, every value label and the title
    unit = f"(({_by(presets)}) == 'ttft' ? ' s' : ' tok/s')"
    ranges = base.mark_rule(strokeWidth=3).encode(x=alt.X(
        "low:Q", title="first token (s), or tokens/s per stream or per user, as ranked "
                       "(log scale)",
        scale=alt.Scale(type="log"),
        axis=alt.Axis(labelExpr=f"datum.label ? datum.label + {unit} : ''")), x2="high:Q")
    dots = base.mark_point(filled=True, size=70).encode(x=x)
    # no colour channel: the labels take the theme's text colour, light or dark
    labels = chart.encode(y=y, tooltip=tips).transform_calculate(
        value_label=f"format(datum.mid, ',.3~r') + {_UNIT_OF_DATUM}").mark_text(
        align="left", dx=8, fontSize=11).encode(x="high:Q", text="value_label:N")
    if audit:
        audited = ("machine", "fits", "mid", "low", "high", "ttft_bound", "need", "price")
        labels = labels.transform_calculate(audit=" + ';' + ".join(
            f"'{k}=' + datum.{k}" for k in audited)).encode(description="audit:N")
    readout = alt.ExprRef(
        "['What to buy, ranked by', (rank_by == 'preset' ? ({" +
        ", ".join(f"'{k}': '{buying.RANK_BY[w.rank_by]}'" for k, w in presets.items()) +
        ", 'custom': 'time to first token'})[preset] : ({" +
        ", ".join(f"'{k}': '{v}'" for k, v in buying.RANK_BY.items()) + "})[rank_by]), "
        "'(left out: too small or unmeasured;', 'faint: a Mac over its default GPU limit)']")
    return responsive((ranges + dots + labels).add_params(
        *_sliders(presets, formats, models_shown, default, custom)), 520, alt.Title(readout))
