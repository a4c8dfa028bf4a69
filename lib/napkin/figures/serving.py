"""Chapter 7 charts: a decode stall made visible, the token-budget dial, and goodput."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, responsive

RUN_COLORS = [PALETTE["amd"], PALETTE["apple"], PALETTE["nvidia"], PALETTE["cpu"],
              "#8e6c1f", PALETTE["live"], PALETTE["ceiling"]]


def stall_timelines(df: pd.DataFrame, stall: dict, title: str, short: dict) -> alt.Chart:
    """One lane per request and run, a tick per token; the shaded band is the long prompt's
    prefill. ``stall`` maps each run's label to (request, prompt tokens, start, end);
    ``short`` each run's label to the few words its lanes are named with."""
    runs = list(dict.fromkeys(df["run"]))
    df = df.assign(lane=[f"{short[r]} #{q}" for r, q in zip(df["run"], df["request"])],
                   gap_ms=(df["gap_s"] * 1e3).round(1), time_s=df["time_s"].round(4))
    lanes = list(dict.fromkeys(df.sort_values(["run", "request"], key=lambda s: s.map(
        {r: i for i, r in enumerate(runs)}) if s.name == "run" else s)["lane"]))
    color = alt.Color("run:N", title=None, sort=runs,
                      scale=alt.Scale(domain=runs, range=RUN_COLORS[:len(runs)]))
    band = pd.DataFrame([{"lane": lane, "run": run, "start_s": round(s[2], 4),
                          "end_s": round(s[3], 4), "request": s[0], "prompt": s[1],
                          "seconds": round(s[3] - s[2], 3)}
                         for run, s in stall.items() for lane in lanes
                         if lane.startswith(short[run] + " #")])
    y = alt.Y("lane:N", sort=lanes, title=None, axis=alt.Axis(labelLimit=140))
    shade = alt.Chart(band).mark_rect(opacity=0.18, color=PALETTE["ceiling"]).encode(
        x="start_s:Q", x2="end_s:Q", y=y,
        tooltip=[alt.Tooltip("run:N", title="Scheduler"),
                 alt.Tooltip("request:Q", title="Long request"),
                 alt.Tooltip("prompt:Q", title="Its prompt (tokens)", format=","),
                 alt.Tooltip("start_s:Q", title="Arrives (s)", format=".3f"),
                 alt.Tooltip("end_s:Q", title="First token (s)", format=".3f"),
                 alt.Tooltip("seconds:Q", title="Waits (s)", format=".3f")])
    ticks = alt.Chart(df).mark_tick(thickness=2, size=12).encode(
        x=alt.X("time_s:Q", title="time (s, roofline clock)",
                scale=alt.Scale(zero=False, nice=False)),
        y=y, color=color,
        tooltip=[alt.Tooltip("run:N", title="Scheduler"),
                 alt.Tooltip("request:Q", title="Request"),
                 alt.Tooltip("token:Q", title="Token"),
                 alt.Tooltip("time_s:Q", title="At (s)", format=".3f"),
                 alt.Tooltip("gap_ms:Q", title="Since the previous token (ms)", format=",.1f")])
    return responsive(shade + ticks, 20 * len(lanes) + 40, alt.Title(
        title, subtitle="a tick per token; shaded: a long prompt waiting for its first token"))


BUDGET_METRICS = {"itl_p99_s": "inter-token p99", "itl_p50_s": "inter-token p50",
                  "ttft_p99_s": "first token p99", "ttft_p50_s": "first token p50"}


def budget_dial(sweep: pd.DataFrame, default_rate: float, title: str) -> alt.Chart:
    """Latency percentiles against the token budget, at a load chosen with a selector; the
    dashed lines are the same percentiles without chunking."""
    rates = sorted(sweep["rate_per_s"].unique())
    long = sweep.melt(id_vars=["rate_per_s", "policy", "budget", "utilisation"],
                      value_vars=list(BUDGET_METRICS), var_name="metric", value_name="seconds")
    long["metric"] = long["metric"].map(BUDGET_METRICS)
    long["ms"] = (long["seconds"] * 1e3).round(2)
    long["utilisation"] = long["utilisation"].round(3)
    metrics = list(BUDGET_METRICS.values())
    pick = alt.param(name="rate", value=float(default_rate), bind=alt.binding_select(
        options=[float(r) for r in rates], name="Requests per second "))
    color = alt.Color("metric:N", title=None, sort=metrics, scale=alt.Scale(
        domain=metrics, range=[PALETTE["decode"], "#f2a982", PALETTE["prefill"], "#8fb8ea"]))
    tips = [alt.Tooltip("metric:N", title="Percentile"),
            alt.Tooltip("budget:Q", title="Budget (tokens)", format=","),
            alt.Tooltip("ms:Q", title="Milliseconds", format=",.1f"),
            alt.Tooltip("rate_per_s:Q", title="Requests per second"),
            alt.Tooltip("utilisation:Q", title="Arithmetic busy", format=".0%")]
    chunked = long[long["policy"] == "chunked"]
    budgets = sorted(int(b) for b in chunked["budget"].unique())
    base = alt.Chart(chunked).transform_filter(alt.datum.rate_per_s == pick).encode(
        x=alt.X("budget:Q", title="token budget per step (log scale)",
                scale=alt.Scale(type="log", base=2, domain=[budgets[0], budgets[-1]],
                                nice=False), axis=alt.Axis(values=budgets, format=",")),
        y=alt.Y("ms:Q", title="milliseconds (log scale)", scale=alt.Scale(type="log")),
        color=color, tooltip=tips)
    lines = base.mark_line(strokeWidth=2) + base.mark_point(filled=True, size=40)
    plain = alt.Chart(long[long["policy"] == "prefill_first"].assign(
        metric=lambda d: d["metric"])).transform_filter(alt.datum.rate_per_s == pick).mark_rule(
        strokeDash=[5, 3], strokeWidth=1.5).encode(
        y="ms:Q", color=color,
        tooltip=[alt.Tooltip("metric:N", title="Without chunking"),
                 alt.Tooltip("ms:Q", title="Milliseconds", format=",.1f")])
    return responsive((plain + lines).add_params(pick), 340, alt.Title(
        title, subtitle="dashed: the same percentile without chunking"))


def goodput(sweep: pd.DataFrame, target: float, title: str, order: list[str]) -> alt.Chart:
    """Share of requests within both latency targets against the arrival rate, per setup."""
    df = sweep[["config", "rate_per_s", "attainment", "ttft_p99_s", "tpot_p99_s",
                "utilisation"]].copy()
    for col in ("ttft_p99_s", "tpot_p99_s"):
        df[col.replace("_s", "_ms")] = (df[col] * 1e3).round(1)
    df["attainment"] = df["attainment"].round(4)
    color = alt.Color("config:N", title=None, sort=order,
                      scale=alt.Scale(domain=order, range=RUN_COLORS[:len(order)]))
    base = alt.Chart(df).encode(
        x=alt.X("rate_per_s:Q", title="requests per second (all instances)"),
        y=alt.Y("attainment:Q", title="requests within both targets",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        color=color,
        tooltip=[alt.Tooltip("config:N", title="Setup"),
                 alt.Tooltip("rate_per_s:Q", title="Requests per second"),
                 alt.Tooltip("attainment:Q", title="Within targets", format=".1%"),
                 alt.Tooltip("ttft_p99_ms:Q", title="First token p99 (ms)", format=",.0f"),
                 alt.Tooltip("tpot_p99_ms:Q", title="Per-token p99 (ms)", format=",.1f"),
                 alt.Tooltip("utilisation:Q", title="Arithmetic busy", format=".0%")])
    lines = base.mark_line(strokeWidth=2) + base.mark_point(filled=True, size=40)
    rule = alt.Chart(pd.DataFrame({"target": [target], "what": ["attainment target"]})
                     ).mark_rule(strokeDash=[4, 3], color=PALETTE["ceiling"]).encode(
        y="target:Q", tooltip=[alt.Tooltip("what:N", title="Line"),
                               alt.Tooltip("target:Q", title="Share", format=".0%")])
    return responsive(rule + lines, 340, alt.Title(
        title, subtitle="dashed: DistServe's attainment target"))


def split_bars(df: pd.DataFrame, title: str) -> alt.Chart:
    """Latency percentiles of every prefill/decode split, beside colocation."""
    long = df.melt(id_vars=["label"], value_vars=["ttft_p99_s", "tpot_p99_s", "itl_p99_s"],
                   var_name="metric", value_name="seconds")
    names = {"ttft_p99_s": "first token p99", "tpot_p99_s": "per-token p99",
             "itl_p99_s": "inter-token p99"}
    long["metric"] = long["metric"].map(names)
    long["ms"] = (long["seconds"] * 1e3).round(1)
    labels = list(df["label"])
    chart = alt.Chart(long).mark_point(filled=True, size=90).encode(
        y=alt.Y("label:N", sort=labels, title=None, axis=alt.Axis(labelLimit=200)),
        x=alt.X("ms:Q", title="milliseconds (log scale)", scale=alt.Scale(type="log")),
        shape=alt.Shape("metric:N", title=None, sort=list(names.values())),
        color=alt.Color("metric:N", title=None, sort=list(names.values()),
                        scale=alt.Scale(domain=list(names.values()),
                                        range=[PALETTE["prefill"], PALETTE["decode"],
                                               "#f2a982"])),
        tooltip=[alt.Tooltip("label:N", title="Setup"), alt.Tooltip("metric:N", title="What"),
                 alt.Tooltip("ms:Q", title="Milliseconds", format=",.1f")])
    return responsive(chart, 40 * len(labels) + 40, alt.Title(title))
