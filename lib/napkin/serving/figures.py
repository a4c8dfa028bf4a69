"""Chapter 7 charts: a decode stall made visible, the token-budget dial, and goodput.

The dial and the goodput chart draw the median over traffic seeds, with a bar from the least
to the greatest seed (:func:`napkin.serving.chapter.spread`'s columns)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ..charts import PALETTE, responsive

__all__ = ["budget_dial", "BUDGET_METRICS", "goodput", "RUN_COLORS", "stall_timelines"]

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
        x=alt.X("time_s:Q", title="time (s, simulated clock)",
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


def _seconds_to_ms(df: pd.DataFrame, keys: list[str], metrics: dict) -> pd.DataFrame:
    """One row per metric: its median and range over seeds, in milliseconds."""
    rows = []
    for col, name in metrics.items():
        part = df[keys].copy()
        part["metric"] = name
        for suffix in ("", "_min", "_max"):
            part[f"ms{suffix}"] = (df[f"{col}{suffix}"] * 1e3).round(2)
        rows.append(part)
    return pd.concat(rows, ignore_index=True)


def budget_dial(spread: pd.DataFrame, default_load: float, title: str) -> alt.Chart:
    """Latency percentiles against the token budget at a load chosen with a selector (the
    median over seeds, a bar from the least to the greatest); the dashed lines are the same
    medians without chunking."""
    loads = sorted(spread["load"].unique())
    rates = spread.groupby("load")["rate_per_s"].first()
    long = _seconds_to_ms(spread, ["load", "policy", "budget", "rate_per_s"], BUDGET_METRICS)
    metrics = list(BUDGET_METRICS.values())
    pick = alt.param(name="load", value=float(default_load), bind=alt.binding_select(
        options=[float(x) for x in loads],
        labels=[f"{x:.0%} of capacity ({rates[x]:.1f} req/s)" for x in loads],
        name="Load "))
    color = alt.Color("metric:N", title=None, sort=metrics, scale=alt.Scale(
        domain=metrics, range=[PALETTE["decode"], "#f2a982", PALETTE["prefill"], "#8fb8ea"]))
    tips = [alt.Tooltip("metric:N", title="Percentile"),
            alt.Tooltip("budget:Q", title="Budget (tokens)", format=","),
            alt.Tooltip("ms:Q", title="Median over seeds (ms)", format=",.1f"),
            alt.Tooltip("ms_min:Q", title="Least seed (ms)", format=",.1f"),
            alt.Tooltip("ms_max:Q", title="Greatest seed (ms)", format=",.1f"),
            alt.Tooltip("rate_per_s:Q", title="Requests per second", format=".2f")]
    chunked = long[long["policy"] == "chunked"]
    budgets = sorted(int(b) for b in chunked["budget"].unique())
    base = alt.Chart(chunked).transform_filter(alt.datum.load == pick).encode(
        x=alt.X("budget:Q", title="token budget per step (tokens, log scale)",
                scale=alt.Scale(type="log", base=2, domain=[budgets[0], budgets[-1]],
                                nice=False), axis=alt.Axis(values=budgets, format=",")),
        color=color, tooltip=tips)
    y = alt.Y("ms:Q", title="latency (ms, log scale)", scale=alt.Scale(type="log"))
    lines = base.mark_line(strokeWidth=2).encode(y=y) + \
        base.mark_point(filled=True, size=40).encode(y=y)
    bars = base.mark_rule(strokeWidth=1.5, opacity=0.6).encode(y="ms_min:Q", y2="ms_max:Q")
    plain = alt.Chart(long[long["policy"] == "prefill_first"]).transform_filter(
        alt.datum.load == pick).mark_rule(strokeDash=[5, 3], strokeWidth=1.5).encode(
        y="ms:Q", color=color,
        tooltip=[alt.Tooltip("metric:N", title="Without chunking"),
                 alt.Tooltip("ms:Q", title="Median over seeds (ms)", format=",.1f")])
    return responsive((plain + bars + lines).add_params(pick), 340, alt.Title(
        title, subtitle="median over traffic seeds, bars from the least to the greatest; "
                        "dashed: the same median without chunking"))


def goodput(spread: pd.DataFrame, target: float, title: str, order: list[str]) -> alt.Chart:
    """Share of requests within both latency targets against the arrival rate, per setup:
    the median over seeds, a bar from the least to the greatest."""
    df = spread[["config", "load", "rate_per_s", "attainment", "attainment_min",
                 "attainment_max", "ttft_p99_s", "tpot_p99_s"]].copy()
    for col in ("ttft_p99_s", "tpot_p99_s"):
        df[col.replace("_s", "_ms")] = (df[col] * 1e3).round(1)
    for col in ("attainment", "attainment_min", "attainment_max", "rate_per_s"):
        df[col] = df[col].round(4)
    color = alt.Color("config:N", title=None, sort=order,
                      scale=alt.Scale(domain=order, range=RUN_COLORS[:len(order)]))
    base = alt.Chart(df).encode(
        x=alt.X("rate_per_s:Q", title="arrival rate (requests/s, all instances)"),
        color=color,
        tooltip=[alt.Tooltip("config:N", title="Setup"),
                 alt.Tooltip("rate_per_s:Q", title="Requests per second", format=".2f"),
                 alt.Tooltip("load:Q", title="Share of its capacity", format=".0%"),
                 alt.Tooltip("attainment:Q", title="Within targets (median)", format=".1%"),
                 alt.Tooltip("attainment_min:Q", title="Least seed", format=".1%"),
                 alt.Tooltip("attainment_max:Q", title="Greatest seed", format=".1%"),
                 alt.Tooltip("ttft_p99_ms:Q", title="First token p99 (ms)", format=",.0f"),
                 alt.Tooltip("tpot_p99_ms:Q", title="Per-token p99 (ms)", format=",.1f")])
    y = alt.Y("attainment:Q", title="requests within both targets (%)",
              axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1]))
    lines = base.mark_line(strokeWidth=2).encode(y=y) + \
        base.mark_point(filled=True, size=40).encode(y=y)
    bars = base.mark_rule(strokeWidth=1.5, opacity=0.6).encode(y="attainment_min:Q",
                                                                y2="attainment_max:Q")
    rule = alt.Chart(pd.DataFrame({"target": [target], "what": ["attainment target"]})
                     ).mark_rule(strokeDash=[4, 3], color=PALETTE["ceiling"]).encode(
        y="target:Q", tooltip=[alt.Tooltip("what:N", title="Line"),
                               alt.Tooltip("target:Q", title="Share", format=".0%")])
    return responsive(rule + bars + lines, 340, alt.Title(
        title, subtitle="median over traffic seeds, bars from the least to the greatest; "
                        "dashed: DistServe's attainment target"))
