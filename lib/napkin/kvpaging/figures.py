"""Chapter 6 charts: where KV memory goes under each allocator, and what paging buys."""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from .. import papers
from ..charts import PALETTE, responsive
from ..kvpaging.chapter import PAPER_SYSTEMS, paper_token_share
from ..kvpaging.memory import CATEGORIES, CATEGORY_LABELS, DEFAULT_BLOCK_SIZE, LABELS
from ..workloads import DEFAULT_SIGMA

__all__ = ["ALLOCATOR_COLORS", "block_size_slider", "CATEGORY_COLORS", "h100", "spread", "strips",
           "timeline", "waste_bars"]

CATEGORY_COLORS = {
    "Token states": "#3c9a3c",
    "Reserved for future tokens": "#e5b53a",
    "Internal fragmentation": "#c0392b",
    "External fragmentation": "#6b6459",
    "Free": "#d9d4cc",
    "Not labelled in the paper": "#b9c9b9",
}
ALLOCATOR_COLORS = {
    "Orca (Max)": PALETTE["amd"],
    "Orca (Pow2)": PALETTE["cpu"],
    "Orca (Oracle)": "#8e6c1f",
    "Paged (vLLM)": PALETTE["apple"],
}
_LABELS = list(ALLOCATOR_COLORS)


def _allocator_color(title: str | None = None, field: str = "label:N") -> alt.Color:
    return alt.Color(field, title=title, sort=_LABELS,
                     scale=alt.Scale(domain=_LABELS, range=list(ALLOCATOR_COLORS.values())))


def _category_color(domain: list[str]) -> alt.Color:
    return alt.Color("category:N", title=None, sort=domain,
                     scale=alt.Scale(domain=domain, range=[CATEGORY_COLORS[c] for c in domain]))


def waste_bars(repro: pd.DataFrame, setting: str) -> alt.Chart:
    """Fig. 2 of the paper beside the simulation: where the KV memory goes, per allocator."""
    paper = papers.table().set_index("claim")
    segments = {"token_states": "Token states", "reservation": "Reserved for future tokens",
                "internal_fragmentation": "Internal fragmentation",
                "external_fragmentation_and_others": "External fragmentation"}
    rows, order = [], []
    for _, r in repro.iterrows():
        short = r["label"].split(" (")[0] if r["allocator"] == "paged" else \
            r["label"].removeprefix("Orca (").rstrip(")")
        sim_bar, paper_bar = f"{short}, simulated", f"{short}, paper"
        order += [sim_bar, paper_bar]
        for c in CATEGORIES:
            rows.append({"bar": sim_bar, "label": r["label"], "source": "simulated",
                         "category": CATEGORY_LABELS[c], "share": r[c]})
        system = PAPER_SYSTEMS[r["allocator"]]
        labelled = 0.0
        for key, name in segments.items():
            claim = f"fig2_{system}_{key}"
            if claim in paper.index:
                share = paper.loc[claim, "value_low"] / 100
                labelled += share
                rows.append({"bar": paper_bar, "label": r["label"], "source": "paper",
                             "category": name, "share": share})
        if labelled < 0.995:
            rows.append({"bar": paper_bar, "label": r["label"], "source": "paper",
                         "category": "Not labelled in the paper", "share": 1 - labelled})
    df = pd.DataFrame(rows)
    domain = [c for c in CATEGORY_COLORS if c in set(df["category"])]
    df["stack"] = df["category"].map({c: i for i, c in enumerate(domain)})
    chart = alt.Chart(df).mark_bar().encode(
        y=alt.Y("bar:N", sort=order, title=None, axis=alt.Axis(labelLimit=120)),
        x=alt.X("share:Q", stack="zero", title="share of KV cache memory",
                axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        color=_category_color(domain),
        order=alt.Order("stack:Q"),
        tooltip=[alt.Tooltip("label:N", title="Allocator"),
                 alt.Tooltip("source:N", title="Figures from"),
                 alt.Tooltip("category:N", title="Memory"),
                 alt.Tooltip("share:Q", title="Share", format=".1%")],
    )
    return responsive(chart, 26 * len(order), alt.Title(
        "Where the KV memory goes: the paper's Fig. 2 and the simulation", subtitle=setting))


def _binned(tl: pd.DataFrame, capacity_tokens: int, bins: int) -> pd.DataFrame:
    """Means over consecutive runs of steps, so a line shows the trend, not step noise."""
    every = max(1, int(np.ceil(len(tl) / bins)))
    g = tl.assign(bin=np.arange(len(tl)) // every).groupby("bin")
    return pd.DataFrame({"time_s": g["time_s"].first().round(2),
                         "utilisation": (g["token"].mean() / capacity_tokens).round(4),
                         "running": g["running"].mean().round(1),
                         "waiting": g["waiting"].mean().round(0)})


def timeline(timed: dict[str, pd.DataFrame], capacity_tokens: int, title: str,
             bins: int = 120) -> alt.Chart:
    """Share of KV memory holding tokens over time, one line per allocator."""
    df = pd.concat([_binned(tl, capacity_tokens, bins).assign(label=LABELS[a])
                    for a, tl in timed.items()], ignore_index=True)
    chart = alt.Chart(df).mark_line(strokeWidth=2).encode(
        x=alt.X("time_s:Q", title="time (s, roofline estimate)"),
        y=alt.Y("utilisation:Q", title="KV memory holding tokens", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        color=_allocator_color(),
        tooltip=[alt.Tooltip("label:N", title="Allocator"),
                 alt.Tooltip("time_s:Q", title="From (s)", format=",.1f"),
                 alt.Tooltip("utilisation:Q", title="Holding tokens", format=".1%"),
                 alt.Tooltip("running:Q", title="Running sequences", format=".1f"),
                 alt.Tooltip("waiting:Q", title="Waiting requests", format=",.0f")],
    )
    return responsive(chart, 300, alt.Title(
        title, subtitle=f"means over {bins} stretches of each run; a line ends when its last "
                        "request finishes"))


def strips(df: pd.DataFrame) -> alt.Chart:
    """KV memory as a strip of slots for each allocator at one moment."""
    domain = [c for c in CATEGORY_COLORS if c in set(df["category"])]
    # one rectangle per stretch of one category: thousands of adjacent slivers would show
    # seams; the tooltip says whose stretch it is, or how many requests share it
    run = ((df["category"] != df["category"].shift()) |
           (df["label"] != df["label"].shift())).cumsum()
    data = df.groupby(run).agg(label=("label", "first"), category=("category", "first"),
                               start=("start", "first"), end=("end", "last"),
                               tokens=("tokens", "sum"),
                               owners=("request", lambda r: sorted(set(r) - {-1})))
    data["owner"] = data["owners"].map(lambda o: "none" if not o else (
        f"request {o[0]}" if len(o) == 1 else f"{len(o)} requests"))
    data = data.drop(columns="owners")
    chart = alt.Chart(data).mark_rect(stroke=None).encode(
        x=alt.X("start:Q", title="token slots, by address",
                scale=alt.Scale(domain=[0, int(df["end"].max())], nice=False)),
        x2="end:Q",
        y=alt.Y("label:N", sort=_LABELS, title=None),
        color=_category_color(domain),
        tooltip=[alt.Tooltip("label:N", title="Allocator"),
                 alt.Tooltip("category:N", title="Memory"),
                 alt.Tooltip("owner:N", title="Held by"),
                 alt.Tooltip("tokens:Q", title="Slots"),
                 alt.Tooltip("start:Q", title="From slot")],
    )
    return responsive(chart, 44 * df["label"].nunique(), alt.Title(
        "KV memory at one moment",
        subtitle="halfway through each allocator's full-engine period; hover for the owner"))


def block_size_slider(sweep: pd.DataFrame, start: int = DEFAULT_BLOCK_SIZE) -> alt.Chart:
    """Paged waste against block size for each workload, with a slider to read one off."""
    sizes = sorted(sweep["block_size"].unique())
    exps = [int(np.log2(b)) for b in sizes]
    if [2 ** e for e in exps] != sizes or exps != list(range(exps[0], exps[-1] + 1)):
        raise ValueError("block sizes must be consecutive powers of two")
    pick = alt.param(name="block_exp", value=int(np.log2(start)), bind=alt.binding_range(
        min=exps[0], max=exps[-1], step=1, name="Block size (log2 tokens) "))
    df = sweep.assign(exp=np.log2(sweep["block_size"]).astype(int))
    # the readout: each workload's waste as a JS array indexed by the slider
    parts = []
    for wl, g in df.groupby("workload", sort=False):
        values = json.dumps([round(float(v), 4) for v in g.sort_values("exp")["waste"]])
        parts.append(f"'{wl} wastes ' + format({values}[block_exp - {exps[0]}], '.1%')")
    # one line each, so the readout fits a phone
    readout = alt.ExprRef("['Tokens per block: ' + pow(2, block_exp), "
                          + ", ".join(parts) + "]")
    tips = [alt.Tooltip("workload:N", title="Workload"),
            alt.Tooltip("block_size:Q", title="Block size (tokens)"),
            alt.Tooltip("waste:Q", title="Not holding tokens", format=".1%"),
            alt.Tooltip("internal:Q", title="Internal fragmentation", format=".1%"),
            alt.Tooltip("reserved:Q", title="Reserved in last blocks", format=".1%"),
            alt.Tooltip("mean_batch:Q", title="Mean batch", format=".1f"),
            alt.Tooltip("tokens_per_s:Q", title="Tokens/s", format=",.0f")]
    workloads = list(dict.fromkeys(df["workload"]))
    color = alt.Color("workload:N", title=None, sort=workloads, scale=alt.Scale(
        domain=workloads, range=[PALETTE["apple"], PALETTE["decode"]][:len(workloads)]))
    base = alt.Chart(df).encode(
        x=alt.X("block_size:Q", title="block size (tokens, log scale)",
                scale=alt.Scale(type="log", base=2, domain=[sizes[0], sizes[-1]], nice=False),
                axis=alt.Axis(values=sizes)),
        y=alt.Y("waste:Q", title="KV memory not holding tokens", axis=alt.Axis(format="%")),
        color=color, tooltip=tips)
    lines = base.mark_line(strokeWidth=2) + base.mark_point(filled=True, size=40)
    chosen = base.transform_filter("datum.exp == block_exp")
    # labels turn to the left near the right edge, so none runs off a phone screen
    late = f"block_exp > {exps[-1] - 2}"
    marks = chosen.mark_point(filled=True, size=180) + chosen.mark_text(
        align=alt.ExprRef(f"{late} ? 'right' : 'left'"), dx=alt.ExprRef(f"{late} ? -10 : 10"),
        fontWeight=600).encode(text=alt.Text("waste:Q", format=".1%"))
    rule = alt.Chart(pd.DataFrame({"row": [0]})).transform_calculate(
        block_size="pow(2, block_exp)").mark_rule(color="#8a8378", strokeDash=[4, 3]).encode(
        x="block_size:Q")
    return responsive((lines + rule + marks).add_params(pick), 320, alt.Title(readout))


def spread(sweep: pd.DataFrame, sigma_used: float = DEFAULT_SIGMA) -> alt.Chart:
    """Each allocator's token-state share as request lengths spread, with the paper's Fig. 2."""
    df = sweep[["sigma", "label", "token", "mean_batch", "mean_input_tokens",
                "mean_output_tokens"]]
    tips = [alt.Tooltip("label:N", title="Allocator"),
            alt.Tooltip("sigma:Q", title="Spread (sigma of log length)", format=".2f"),
            alt.Tooltip("token:Q", title="Holding tokens", format=".1%"),
            alt.Tooltip("mean_batch:Q", title="Mean batch", format=".1f"),
            alt.Tooltip("mean_input_tokens:Q", title="Mean prompt (tokens)", format=".0f"),
            alt.Tooltip("mean_output_tokens:Q", title="Mean output (tokens)", format=".0f")]
    base = alt.Chart(df).encode(
        x=alt.X("sigma:Q", title="spread (sigma of log length)",
                scale=alt.Scale(domain=[float(df["sigma"].min()), float(df["sigma"].max())],
                                nice=False)),
        y=alt.Y("token:Q", title="KV memory holding tokens", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        color=_allocator_color(), tooltip=tips)
    lines = base.mark_line(strokeWidth=2) + base.mark_point(filled=True, size=40)
    paper = pd.DataFrame([{"label": LABELS[a], "paper": paper_token_share(a)}
                          for a in PAPER_SYSTEMS])
    ticks = alt.Chart(paper).mark_rule(strokeDash=[5, 3], opacity=0.8).encode(
        y="paper:Q", color=_allocator_color(),
        tooltip=[alt.Tooltip("label:N", title="Allocator"),
                 alt.Tooltip("paper:Q", title="Paper, Fig. 2", format=".1%")])
    used = alt.Chart(pd.DataFrame({"sigma": [sigma_used], "what": ["spread used above"]}))
    used = used.mark_rule(color="#8a8378").encode(
        x="sigma:Q", tooltip=[alt.Tooltip("what:N", title="Marker")])
    return responsive(ticks + used + lines, 320, alt.Title(
        "Contiguous reservation wastes more as lengths spread",
        subtitle="ShareGPT means; dashed: the paper's Fig. 2 token-state share per allocator"))


def h100(sweep: pd.DataFrame, title: str) -> alt.Chart:
    """Tokens per second against the maximum sequence length a reservation must cover."""
    df = sweep[["label", "max_len", "tokens_per_s", "mean_batch", "throughput_gain", "token"]]
    lens = sorted(df["max_len"].unique())
    base = alt.Chart(df).encode(
        x=alt.X("max_len:Q", title="length limit (tokens, log scale)",
                scale=alt.Scale(type="log", base=2, domain=[lens[0], lens[-1]], nice=False),
                axis=alt.Axis(values=[int(v) for v in lens])),
        y=alt.Y("tokens_per_s:Q", title="decode throughput (tokens/s)"),
        color=_allocator_color(),
        tooltip=[alt.Tooltip("label:N", title="Allocator"),
                 alt.Tooltip("max_len:Q", title="Max length (tokens)", format=","),
                 alt.Tooltip("mean_batch:Q", title="Mean batch", format=".1f"),
                 alt.Tooltip("tokens_per_s:Q", title="Tokens/s", format=",.0f"),
                 alt.Tooltip("throughput_gain:Q", title="Paging's gain", format=".1f"),
                 alt.Tooltip("token:Q", title="Holding tokens", format=".0%")])
    return responsive(base.mark_line(strokeWidth=2) + base.mark_point(filled=True, size=50),
                      320, alt.Title(title, subtitle="ShareGPT lengths; roofline throughput "
                                                     "of the batch each allocator fits"))
