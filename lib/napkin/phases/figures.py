"""Chapter 2 charts: prefill against decode on one box, and on every box."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, bar_labels, readable, responsive
from ..phases import DECODE, LIVE_FAMILY, PREFILL

__all__ = ["depth_retention", "essay_pair", "FAMILY_COLORS", "like_for_like", "mirror",
           "PHASE_COLORS", "prefill_flops", "PROTOCOLS", "ratio_by_depth", "ratio_strip"]

PHASE_COLORS = {PREFILL: PALETTE["prefill"], DECODE: PALETTE["decode"]}
FAMILY_COLORS = {
    "DGX Spark": PALETTE["nvidia"],
    "Discrete GPU": "#7fb77e",
    "Apple Silicon": PALETTE["apple"],
    "Strix Halo": PALETTE["amd"],
    LIVE_FAMILY: PALETTE["live"],
}
PROTOCOLS = ["pp2048 / tg32", "pp2048 / tg128", "pp512 / tg128"]


def essay_pair(essay_pp: float, essay_tg: float, builds: pd.DataFrame) -> alt.Chart:
    """The essay's bars beside what each build of the benchmark file records at depth 0."""
    rows = [{"row": "The essay (in no copy read)", "phase": p, "tokens_per_s": v,
             "ratio": essay_pp / essay_tg, "stddev": None, "source": "the essay"}
            for p, v in ((PREFILL, essay_pp), (DECODE, essay_tg))]
    for _, r in builds.iterrows():
        for p, col in ((PREFILL, "pp"), (DECODE, "tg")):
            rows.append({"row": f"build {r['build']}", "phase": p,
                         "tokens_per_s": r[f"{col}_tok_per_s"], "ratio": r["ratio"],
                         "stddev": r[f"{col}_stddev_tok_per_s"], "source": r["source_url"]})
    df = pd.DataFrame(rows)
    order = list(dict.fromkeys(df["row"]))
    base = alt.Chart(df).encode(
        y=alt.Y("row:N", sort=order, title=None),
        yOffset=alt.YOffset("phase:N", sort=[PREFILL, DECODE]),
        x=alt.X("tokens_per_s:Q", title="tokens/s"),
        tooltip=[alt.Tooltip("row:N", title="Run"), alt.Tooltip("phase:N", title="Phase"),
                 alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=",.2f"),
                 alt.Tooltip("stddev:Q", title="± (llama-bench)", format=".2f"),
                 alt.Tooltip("ratio:Q", title="prefill / decode", format=".1f"),
                 alt.Tooltip("source:N", title="Source")])
    bars = base.mark_bar().encode(color=alt.Color(
        "phase:N", title=None, sort=[PREFILL, DECODE],
        scale=alt.Scale(domain=list(PHASE_COLORS), range=list(PHASE_COLORS.values()))))
    text = bar_labels(base, "tokens_per_s", ",.1f", df["tokens_per_s"].max() / 2)
    return responsive(bars + text, 46 * len(order), alt.Title(
        "Same box, same weights: prefill against decode",
        subtitle="DGX Spark, gpt-oss-120b MXFP4, empty context; the essay's pair and the file's"))


def _model_select(models: list[str], default: str) -> alt.Parameter:
    return alt.param(name="model", value=default, bind=alt.binding_select(
        options=models, name="Model "))


def depth_retention(df: pd.DataFrame, default_model: str) -> alt.Chart:
    """Both phases' speed at each context depth as a share of their speed at depth 0."""
    models = sorted(df["model"].unique())
    pick = _model_select(models, default_model)
    base = alt.Chart(df).transform_filter(alt.datum.model == pick).encode(
        x=alt.X("context_depth_tokens:Q", title="context already in the cache (tokens)",
                scale=alt.Scale(domain=[0, int(df["context_depth_tokens"].max())])),
        y=alt.Y("fraction_of_depth0:Q", title="speed / speed at empty context",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1.05])),
        color=alt.Color("label:N", title=None),
        strokeDash=alt.StrokeDash("phase:N", title=None, sort=[PREFILL, DECODE],
                                  scale=alt.Scale(domain=[PREFILL, DECODE],
                                                  range=[[1, 0], [5, 3]])),
        detail="phase:N",
        tooltip=[alt.Tooltip("label:N", title="Machine"), alt.Tooltip("model:N", title="Model"),
                 alt.Tooltip("phase:N", title="Phase"),
                 alt.Tooltip("context_depth_tokens:Q", title="Depth (tokens)", format=","),
                 alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=",.1f"),
                 alt.Tooltip("fraction_of_depth0:Q", title="of depth 0", format=".0%")])
    lines = base.mark_line() + base.mark_point(filled=True, size=40)
    return responsive(lines.add_params(pick), 320, alt.Title(
        "Both phases slow down as the context grows",
        subtitle="pp2048 (solid) and tg32 (dashed) at depth d, as a share of depth 0"))


def ratio_by_depth(df: pd.DataFrame, default_model: str) -> alt.Chart:
    """The prefill / decode ratio at each context depth, per machine and build."""
    models = sorted(df["model"].unique())
    pick = _model_select(models, default_model)
    base = alt.Chart(df).transform_filter(alt.datum.model == pick).encode(
        x=alt.X("context_depth_tokens:Q", title="context already in the cache (tokens)"),
        y=alt.Y("ratio:Q", title="prefill tokens/s / decode tokens/s",
                scale=alt.Scale(zero=True)),
        color=alt.Color("label:N", title=None),
        tooltip=[alt.Tooltip("label:N", title="Machine"), alt.Tooltip("model:N", title="Model"),
                 alt.Tooltip("context_depth_tokens:Q", title="Depth (tokens)", format=","),
                 alt.Tooltip("pp_tok_per_s:Q", title="pp2048 (tok/s)", format=",.1f"),
                 alt.Tooltip("tg_tok_per_s:Q", title="tg32 (tok/s)", format=",.2f"),
                 alt.Tooltip("ratio:Q", title="ratio", format=".1f")])
    lines = base.mark_line() + base.mark_point(filled=True, size=40)
    return responsive(lines.add_params(pick), 300, alt.Title(
        "The gap narrows with depth",
        subtitle="pp2048 / tg32 at each context depth, llama.cpp benchmark files"))


def mirror(df: pd.DataFrame) -> alt.Chart:
    """M2 Ultra against DGX Spark, phase by phase, on a log scale centred on parity."""
    df = df.assign(side=["M2 Ultra faster" if r > 1 else "DGX Spark faster"
                         for r in df["m2_over_spark"]])
    order = list(df["row"])
    base = alt.Chart(df).encode(
        y=alt.Y("row:N", sort=order, title=None, axis=alt.Axis(labelLimit=170)),
        x=alt.X("m2_over_spark:Q", title="M2 Ultra / DGX Spark (log scale; 1 = equal)",
                scale=alt.Scale(type="log", domain=[0.25, 4], nice=False)),
        tooltip=[alt.Tooltip("row:N", title="What"),
                 alt.Tooltip("spark:Q", title="DGX Spark", format=",.2f"),
                 alt.Tooltip("m2:Q", title="M2 Ultra", format=",.2f"),
                 alt.Tooltip("unit:N", title="Unit"),
                 alt.Tooltip("m2_over_spark:Q", title="M2 Ultra / DGX Spark", format=".2f")])
    bars = base.mark_bar().encode(
        x2=alt.X2(datum=1),
        color=alt.Color("side:N", title=None,
                        scale=alt.Scale(domain=["DGX Spark faster", "M2 Ultra faster"],
                                        range=[PALETTE["nvidia"], PALETTE["apple"]])))
    label = alt.Text("m2_over_spark:Q", format=".2f")
    text = (base.transform_filter(alt.datum.m2_over_spark >= 1)
            .mark_text(align="left", dx=4, fontSize=11).encode(text=label)
            + base.transform_filter(alt.datum.m2_over_spark < 1)
            .mark_text(align="right", dx=-4, fontSize=11).encode(text=label))
    parity = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(color=PALETTE["ceiling"]).encode(
        x="x:Q")
    return responsive(bars + text + parity, 26 * len(order) + 40, alt.Title(
        "The mirror image",
        subtitle="same llama-bench command, nearly the same llama.cpp build, empty context"))


def ratio_strip(df: pd.DataFrame, essay_gap: float,
                title: str = "How much faster each machine reads than it writes") -> alt.Chart:
    """Prefill / decode ratio of every machine and model, on a log scale."""
    df = readable(df, ["ratio"], log=True)
    families = [f for f in FAMILY_COLORS if f in set(df["family"])]
    protocols = [p for p in PROTOCOLS if p in set(df["protocol"])] + sorted(
        set(df["protocol"]) - set(PROTOCOLS))
    points = alt.Chart(df).mark_point(filled=True, opacity=0.8).encode(
        y=alt.Y("family:N", sort=families, title=None),
        yOffset=alt.YOffset("jitter:Q", scale=alt.Scale(domain=[-1, 1])),
        x=alt.X("ratio:Q", title="prefill / decode tokens/s (log)",
                scale=alt.Scale(type="log")),
        size=alt.condition(alt.datum.family == LIVE_FAMILY, alt.value(260), alt.value(60)),
        color=alt.Color("family:N", title=None, sort=families, legend=None,
                        scale=alt.Scale(domain=families,
                                        range=[FAMILY_COLORS[f] for f in families])),
        shape=alt.Shape("protocol:N", title="Test", sort=protocols,
                        scale=alt.Scale(domain=protocols)),
        tooltip=_run_tips(df, [alt.Tooltip("machine:N", title="Machine"),
                               alt.Tooltip("model:N", title="Model"),
                               alt.Tooltip("detail:N", title="Build / backend"),
                               alt.Tooltip("protocol:N", title="Test")]),
    ).transform_calculate(jitter=_JITTER)
    rule = alt.Chart(pd.DataFrame({"x": [essay_gap], "label": ["the essay's gap on DGX Spark"]})) \
        .mark_rule(color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(
            x="x:Q", tooltip=[alt.Tooltip("label:N", title="Rule"),
                              alt.Tooltip("x:Q", title="Ratio", format=".0f")])
    return responsive(rule + points, 70 * len(families) + 40, alt.Title(
        title, subtitle="each point: one published run, prefill over decode tokens/s"))


# a deterministic spread of the points inside each row, from the run's own two rates
_JITTER = "(((datum.pp_tok_per_s * 7919 + datum.tg_tok_per_s * 104729) % 1000) / 500) - 1"


def _run_tips(df: pd.DataFrame, first: list) -> list:
    """A published run's tooltip: ``first`` (what names the run), then its two rates, their
    ratio, the confidence in them and, where recorded, flash attention."""
    return first + [alt.Tooltip("pp_tok_per_s:Q", title="Prefill (tok/s)", format=",.1f"),
                    alt.Tooltip("tg_tok_per_s:Q", title="Decode (tok/s)", format=",.2f"),
                    alt.Tooltip("ratio:Q", title="Ratio", format=".1f"),
                    alt.Tooltip("confidence:N", title="Confidence in the figure")] + (
        [alt.Tooltip("flash_attention:N", title="Flash attention")]
        if "flash_attention" in df else [])


def like_for_like(df: pd.DataFrame) -> alt.Chart:
    """Prefill / decode ratio where model and test are the same, one row per comparison."""
    families = [f for f in FAMILY_COLORS if f in set(df["family"])]
    order = list(dict.fromkeys(df["comparison"]))
    points = alt.Chart(df).mark_point(filled=True, opacity=0.8).encode(
        y=alt.Y("comparison:N", sort=order, title=None, axis=alt.Axis(labelLimit=130),
                scale=alt.Scale(paddingInner=0.45)),
        yOffset=alt.YOffset("jitter:Q", scale=alt.Scale(domain=[-1, 1])),
        x=alt.X("ratio:Q", title="prefill / decode tokens/s (log)",
                scale=alt.Scale(type="log")),
        size=alt.condition(alt.datum.family == "DGX Spark", alt.value(200), alt.value(50)),
        stroke=alt.condition(alt.datum.family == "DGX Spark", alt.value(PALETTE["ceiling"]),
                             alt.value("transparent")),
        color=alt.Color("family:N", title=None, sort=families,
                        scale=alt.Scale(domain=families,
                                        range=[FAMILY_COLORS[f] for f in families])),
        tooltip=_run_tips(df, [alt.Tooltip("machine:N", title="Machine"),
                               alt.Tooltip("comparison:N", title="Model and test"),
                               alt.Tooltip("detail:N", title="Build / backend")]),
    ).transform_calculate(jitter=_JITTER)
    return responsive(points, 70 * len(order) + 40, alt.Title(
        "The gap, like for like",
        subtitle="each row: one model and one llama-bench test; each point: one machine's run"))


def prefill_flops(df: pd.DataFrame, petaflop: float) -> alt.Chart:
    """What each prefill run reached in FLOP/s (points) against the dense peak of the
    arithmetic llama.cpp runs it in (ticks), and DGX Spark's sparse-FP4 petaFLOP (rule)."""
    short = {"RTX PRO 6000 Blackwell": "RTX PRO 6000", "H100 (read as H100 SXM)": "H100 SXM?",
             "H100 (read as H100 PCIe)": "H100 PCIe?"}
    # a phone has room for short labels only: the full run is in the tooltip
    df = df.assign(full=df["machine"] + ": " + df["model"] + " " + df["test"] + ", "
                   + df["detail"].str.replace("CUDA scoreboard, ", "", regex=False),
                   run=(df["machine"].replace(short) + " " + df["model"].str.replace(
                       "gpt-oss-", "oss-", regex=False).str.replace("Llama-2-", "L2-",
                                                                    regex=False)
                        + " " + df["detail"].str.extract(r"build (\d+)", expand=False)
                        .fillna("").radd("b").replace("b", "")).str.strip(),
                   achieved_TFLOPS=df["achieved_flops_per_s"] / 1e12,
                   roof_TFLOPS=df["roof_flops_per_s"] / 1e12,
                   roof=df["roof_kind"] + df["roof_derived"].map(
                       {True: " (derived, not vendor-stated)", False: " (vendor figure)"}),
                   spark=(df["chip"] == "DGX Spark").map({True: "DGX Spark", False: "other"}))
    order = list(df["run"])
    tips = [alt.Tooltip("full:N", title="Run"),
            alt.Tooltip("tokens_per_s:Q", title="Prefill (tok/s)", format=",.0f"),
            alt.Tooltip("flops_per_token:Q", title="FLOPs per prompt token", format=".3~s"),
            alt.Tooltip("achieved_TFLOPS:Q", title="Reached (TFLOPS)", format=",.1f"),
            alt.Tooltip("roof:N", title="Arithmetic llama.cpp runs"),
            alt.Tooltip("roof_TFLOPS:Q", title="Its dense peak (TFLOPS)", format=",.0f"),
            alt.Tooltip("fraction_of_roof:Q", title="Reached / peak", format=".1%"),
            alt.Tooltip("confidence:N", title="Confidence in the figure")]
    x = alt.Scale(type="log", domain=[5, 3000], nice=False)
    base = alt.Chart(df).encode(y=alt.Y("run:N", sort=order, title=None,
                                        axis=alt.Axis(labelLimit=150)), tooltip=tips)
    roofs = base.mark_tick(thickness=3, size=18, color=PALETTE["ceiling"]).encode(
        x=alt.X("roof_TFLOPS:Q", scale=x))
    reached = base.mark_point(filled=True, size=90).encode(
        x=alt.X("achieved_TFLOPS:Q", scale=x, title="TFLOPS (log scale)"),
        color=alt.Color("spark:N", title=None, scale=alt.Scale(
            domain=["DGX Spark", "other"], range=[PALETTE["nvidia"], "#a39d92"])))
    rule = alt.Chart(pd.DataFrame({"x": [petaflop], "label": [
        "DGX Spark's petaFLOP (sparse FP4, NVIDIA)"]})).mark_rule(
        color=PALETTE["nvidia"], strokeDash=[4, 3]).encode(
        x=alt.X("x:Q", scale=x), tooltip=[alt.Tooltip("label:N", title="Rule"),
                                          alt.Tooltip("x:Q", title="TFLOPS", format=",.0f")])
    return responsive(roofs + reached + rule, 30 * len(order) + 40, alt.Title(
        "What prefill reached, against the peaks",
        subtitle="points: FLOPs per prompt token x tokens/s; ticks: the dense peak of the "
                 "arithmetic llama.cpp runs; dashed: the petaFLOP"))
