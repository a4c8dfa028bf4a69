"""Chapter 3 charts: rooflines, ridge points, and what batching does to decode."""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from ..charts import DISTINCT, PALETTE, SHAPES, readable, responsive
from ..roofline import Model, Roof, attainable_flops, batch_to_ridge, context_limit
from ..units import TFLOPS

__all__ = ["ARITHMETIC_COLORS", "batch_explorer", "batch_lines", "live_batching",
           "ridge_batch_by_context", "ridge_dots", "roofline_lines"]

#: One colour per arithmetic, the same in every chart of the chapter.
ARITHMETIC_COLORS = {"fp16": "#2a78d6", "fp8": "#3c9a3c", "int8": "#8e44ad", "fp4": "#eb6834",
                     "fp32": "#9a9184"}


def _label(row) -> str:
    """A chip's name, with its arithmetic where the table holds more than one."""
    return f"{row['chip']} ({row['arithmetic'].upper()})" if row["arithmetic"] != "fp16" \
        else row["chip"]


def roofline_lines(table: pd.DataFrame, markers: pd.DataFrame,
                   x_range: tuple[float, float] = (0.5, 20000)) -> alt.Chart:
    """Every chip's roof on log-log axes, with the workloads of the essay marked on it.

    ``markers``: columns ``label`` and ``intensity`` (FLOP/byte), drawn as vertical rules.
    Clicking a chip in the legend picks it out.
    """
    xs = np.geomspace(*x_range, 40)
    rows = []
    for _, r in table.iterrows():
        name = _label(r)
        for x in sorted({*xs.tolist(), r["ridge_flop_per_byte"]}):
            rows.append({"chip": name, "kind": r["flops_kind"], "intensity": x,
                         "derived": bool(r["derived"]),
                         "tflops": attainable_flops(x, r["flops_per_s"],
                                                    r["bandwidth_bytes_per_s"]) / TFLOPS,
                         "ridge": r["ridge_flop_per_byte"],
                         "peak": r["flops_per_s"] / TFLOPS,
                         "bw": r["bandwidth_bytes_per_s"] / 1e9})
    df = pd.DataFrame(rows)
    order = [_label(r) for _, r in table.sort_values("ridge_flop_per_byte").iterrows()]
    if len(order) > len(DISTINCT):
        raise ValueError(f"roofline_lines draws at most {len(DISTINCT)} chips apart, got "
                         f"{len(order)}; pass fewer rows")
    # one colour and one shape per chip, and the legend above the plot: on a phone a legend
    # below it sits a screen away from the lines it names
    color = alt.Color("chip:N", title=None, sort=order,
                      scale=alt.Scale(domain=order, range=DISTINCT[:len(order)]),
                      legend=alt.Legend(orient="top", columns=2, labelLimit=150,
                                        symbolStrokeWidth=2, symbolSize=90))
    shape = alt.Shape("chip:N", title=None, sort=order,
                      scale=alt.Scale(domain=order, range=SHAPES[:len(order)]))
    pick = alt.selection_point(fields=["chip"], bind="legend", name="chip_pick")
    tooltip = [alt.Tooltip("chip:N", title="Chip"), alt.Tooltip("kind:N", title="FLOP/s figure"),
               alt.Tooltip("peak:Q", title="Peak (TFLOP/s)", format=",.1f"),
               alt.Tooltip("bw:Q", title="Bandwidth (GB/s)", format=",.0f"),
               alt.Tooltip("ridge:Q", title="Ridge (FLOP/byte)", format=",.0f")]
    x = alt.X("intensity:Q", title="arithmetic intensity (FLOP per byte, log scale)",
              scale=alt.Scale(type="log", domain=list(x_range), nice=False))
    y = alt.Y("tflops:Q", title="attainable TFLOP/s (log scale)", scale=alt.Scale(type="log"))
    lines = alt.Chart(df).mark_line(strokeWidth=2).encode(
        x=x, y=y, color=color, detail="chip:N",
        strokeDash=alt.condition(alt.datum.derived, alt.value([2, 2]), alt.value([1, 0])),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.12)),
        tooltip=tooltip).add_params(pick)
    ridges = alt.Chart(df[df["intensity"] == df["ridge"]]).mark_point(
        filled=True, size=90, strokeWidth=1).encode(
        x=x, y=y, color=color, shape=shape,
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.12)), tooltip=tooltip)
    rules = alt.Chart(markers).mark_rule(color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(
        x="intensity:Q", tooltip=[alt.Tooltip("label:N", title="Workload"),
                                  alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.0f")])
    text = alt.Chart(markers).mark_text(align="left", dx=3, dy=-4, angle=0, fontSize=11,
                                        baseline="bottom", color=PALETTE["ceiling"]).encode(
        x="intensity:Q", y=alt.value(12), text="short:N")
    return responsive(lines + ridges + rules + text, 380, alt.Title(
        "Every chip's roof, and where decode and prefill sit",
        subtitle=["below its ridge a chip waits on memory;",
                  "marker: its ridge point; dotted: a derived peak;",
                  "click a chip in the legend"]))


def ridge_dots(table: pd.DataFrame, marks: pd.DataFrame) -> alt.Chart:
    """Ridge points of every chip, one dot per arithmetic it states a dense peak for; hollow
    where no vendor states the figure (the book derives it)."""
    df = table.assign(peak=table["flops_per_s"] / TFLOPS,
                      bw=table["bandwidth_bytes_per_s"] / 1e9,
                      arith=table["arithmetic"].str.upper(),
                      origin=np.where(table["derived"], "derived, not vendor-stated",
                                      "vendor figure"))
    order = (df[df["arithmetic"] == "fp16"].sort_values("ridge_flop_per_byte")["chip"]
             .tolist())
    order += [c for c in dict.fromkeys(df["chip"]) if c not in order]
    kinds = [a for a in ARITHMETIC_COLORS if a in set(df["arithmetic"])]
    # the axis reaches the workloads' marks too: batch-1 decode sits far left of every ridge
    low = 10 ** math.floor(math.log10(min(10.0, float(marks["intensity"].min()))))
    base = alt.Chart(df).encode(
        y=alt.Y("chip:N", sort=order, title=None),
        x=alt.X("ridge_flop_per_byte:Q", title="ridge point (FLOP per byte, log scale)",
                scale=alt.Scale(type="log", domain=[low, 4000], nice=False)),
        color=alt.Color("arith:N", title="Arithmetic", sort=[k.upper() for k in kinds],
                        scale=alt.Scale(domain=[k.upper() for k in kinds],
                                        range=[ARITHMETIC_COLORS[k] for k in kinds])),
        tooltip=[alt.Tooltip("chip:N", title="Chip"),
                 alt.Tooltip("flops_kind:N", title="Peak"),
                 alt.Tooltip("peak:Q", title="Peak (TFLOP/s or TOPS)", format=",.1f"),
                 alt.Tooltip("bw:Q", title="Bandwidth (GB/s)", format=",.0f"),
                 alt.Tooltip("ridge_flop_per_byte:Q", title="Ridge (FLOP/byte)", format=",.0f"),
                 alt.Tooltip("origin:N", title="Figure"),
                 alt.Tooltip("flops_source:N", title="Source")])
    rule = base.mark_rule(color="#c9c2b8").encode(x="min(ridge_flop_per_byte):Q",
                                                  x2="max(ridge_flop_per_byte):Q",
                                                  color=alt.value("#c9c2b8"))
    stated = base.transform_filter(~alt.datum.derived).mark_point(filled=True, size=70,
                                                                  opacity=0.95)
    derived = base.transform_filter(alt.datum.derived).mark_point(filled=False, size=70,
                                                                  strokeWidth=2)
    rules = alt.Chart(marks).mark_rule(color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(
        x="intensity:Q", tooltip=[alt.Tooltip("label:N", title="Workload"),
                                  alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.0f")])
    return responsive(rule + stated + derived + rules, 26 * len(order) + 20, alt.Title(
        "Ridge points, by arithmetic", subtitle="peak over bandwidth; hollow: derived, not "
                                                "vendor-stated; dashed: FP16 workloads"))


def batch_lines(df: pd.DataFrame, metric: str) -> alt.Chart:
    """Throughput (``metric="tokens_per_s"``) or cost (``"chip_s_per_mtok"``) against batch,
    one line per context length; batches whose caches do not fit are drawn faded."""
    titles = {"tokens_per_s": ("decode throughput (tokens/s, log scale)",
                               "Batching multiplies throughput, until the cache catches up"),
              "chip_s_per_mtok": ("chip-seconds per million tokens (log scale)",
                                  "Cost per token falls with batch, then stops falling")}
    if metric not in titles:
        raise ValueError(f"metric must be one of {', '.join(titles)}, got {metric!r}")
    df = df.assign(context=[f"{c:,} tokens" if c else "weights only (context 0)"
                            for c in df["context_tokens"]],
                   fits=np.where(df["fits_in_memory"], "fits in memory", "cache does not fit"))
    contexts = list(dict.fromkeys(df.sort_values("context_tokens")["context"]))
    palette = ["#6b6459", "#9ec5ef", "#5b9be0", "#2a78d6", "#123f78", "#eb6834"]
    base = alt.Chart(df).encode(
        x=alt.X("batch:Q", title="batch (sequences decoded together, log scale)",
                scale=alt.Scale(type="log")),
        y=alt.Y(f"{metric}:Q", title=titles[metric][0], scale=alt.Scale(type="log")),
        color=alt.Color("context:N", title="Context per sequence", sort=contexts,
                        scale=alt.Scale(domain=contexts, range=palette[:len(contexts)]),
                        legend=alt.Legend(symbolOpacity=1)),
        tooltip=[alt.Tooltip("context:N", title="Context"), alt.Tooltip("batch:Q", title="Batch"),
                 alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=",.0f"),
                 alt.Tooltip("chip_s_per_mtok:Q", title="chip-s per M tokens", format=",.1f"),
                 alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.1f"),
                 alt.Tooltip("bound:N", title="Bound by"), alt.Tooltip("fits:N", title="Memory")])
    faded = base.mark_line(opacity=0.25, strokeDash=[3, 3])
    lines = base.transform_filter(alt.datum.fits_in_memory).mark_line()
    points = base.mark_point(filled=True, size=35).encode(
        opacity=alt.condition(alt.datum.fits_in_memory, alt.value(1.0), alt.value(0.2)))
    return responsive(faded + lines + points, 340, alt.Title(
        titles[metric][1], subtitle="faded, dashed: the caches no longer fit beside the weights"))


def ridge_batch_by_context(model: Model, roofs: list[Roof], contexts) -> alt.Chart:
    """The batch a decode step needs to reach each chip's ridge, as context grows."""
    rows = []
    for roof in roofs:
        limit = context_limit(model, roof.ridge)
        for c in contexts:
            b = batch_to_ridge(model, roof.ridge, int(c))
            rows.append({"chip": roof.name, "context_tokens": int(c),
                         "batch": None if math.isinf(b) else b, "ridge": roof.ridge,
                         "limit": limit, "reached": "yes" if not math.isinf(b) else "never"})
    df = pd.DataFrame(rows)
    order = [r.name for r in sorted(roofs, key=lambda r: r.ridge)]
    base = alt.Chart(df[df["reached"] == "yes"]).encode(
        x=alt.X("context_tokens:Q", title="context per sequence (tokens)",
                scale=alt.Scale(domain=[0, int(df["context_tokens"].max())], nice=False)),
        y=alt.Y("batch:Q", title="batch needed to reach the ridge (log scale)",
                scale=alt.Scale(type="log")),
        color=alt.Color("chip:N", title=None, sort=order),
        tooltip=[alt.Tooltip("chip:N", title="Chip"),
                 alt.Tooltip("ridge:Q", title="Ridge (FLOP/byte)", format=",.0f"),
                 alt.Tooltip("context_tokens:Q", title="Context", format=","),
                 alt.Tooltip("batch:Q", title="Batch needed", format=",.0f"),
                 alt.Tooltip("limit:Q", title="Never beyond (tokens)", format=",.0f")])
    lines = base.mark_line() + base.mark_point(filled=True, size=30)
    limits = alt.Chart(df.drop_duplicates("chip")).mark_rule(strokeDash=[4, 3]).encode(
        x="limit:Q", color=alt.Color("chip:N", sort=order),
        tooltip=[alt.Tooltip("chip:N", title="Chip"),
                 alt.Tooltip("limit:Q", title="No batch reaches the ridge beyond (tokens)",
                             format=",.0f")])
    return responsive(lines + limits, 340, alt.Title(
        f"{model.name}: the batch that reaches the ridge runs away with context",
        subtitle="dashed: the context beyond which no batch, however large, gets there"))


def batch_explorer(model: Model, roof: Roof, batch: int, context: int,
                   max_batch: int = 4096, max_context: int = 131072) -> alt.Chart:
    """Sliders for batch and context: the decode step's intensity against the ridge.

    Everything is computed in the page from the model's and chip's constants, so it works
    with no Python behind it. The cache grows linearly with context here (no sliding
    windows), which :func:`napkin.roofline.context_limit` checks.
    """
    context_limit(model, roof.ridge)  # refuses a model with sliding windows
    consts = {"P": model.params, "W": model.weight_bytes, "K": model.kv_bytes_per_token(),
              "A": 2.0 * model.query_groups * model.kv_bytes_per_token() / model.kv_dtype_bytes,
              "F": roof.flops_per_s, "BW": roof.bandwidth_bytes_per_s, "R": roof.ridge,
              "N": roof.n_chips}
    c = {k: repr(float(v)) for k, v in consts.items()}
    b_param = alt.param(name="batch", value=batch, bind=alt.binding_range(
        min=1, max=max_batch, step=1, name="Batch (sequences) "))
    c_param = alt.param(name="context", value=context, bind=alt.binding_range(
        min=0, max=max_context, step=256, name="Context per sequence (tokens) "))

    def flops(b: str) -> str:
        return f"({b} * (2 * {c['P']} + {c['A']} * context))"

    def bytes_(b: str) -> str:
        return f"({c['W']} + {b} * {c['K']} * context)"

    def intensity(b: str) -> str:
        return f"({flops(b)} / {bytes_(b)})"

    def step_s(b: str) -> str:
        return f"max({flops(b)} / {c['F']}, {bytes_(b)} / {c['BW']})"

    batches = pd.DataFrame({"B": np.unique(np.geomspace(1, max_batch, 60).round()).astype(int)})
    x = alt.X("B:Q", title="batch (log scale)",
              scale=alt.Scale(type="log", domain=[1, max_batch], nice=False))
    y = alt.Y("intensity:Q", title="decode step intensity (FLOP/byte, log scale)",
              scale=alt.Scale(type="log", domain=[0.5, 10000], nice=False))
    curve = alt.Chart(batches).transform_calculate(
        intensity=intensity("datum.B"),
        tokens_per_s=f"datum.B / {step_s('datum.B')}",
    ).mark_line(color=PALETTE["decode"]).encode(
        x=x, y=y, tooltip=[alt.Tooltip("B:Q", title="Batch"),
                           alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.1f"),
                           alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=",.0f")])
    ridge = alt.Chart(pd.DataFrame({"r": [roof.ridge], "label": [f"{roof.name} ridge"]})) \
        .mark_rule(color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(
            y="r:Q", tooltip=[alt.Tooltip("label:N", title="Rule"),
                              alt.Tooltip("r:Q", title="FLOP/byte", format=",.0f")])
    here = alt.Chart(pd.DataFrame({"row": [0]})).transform_calculate(
        B="batch", intensity=intensity("batch"),
        tokens_per_s=f"batch / {step_s('batch')}",
        cost=f"{c['N']} * {step_s('batch')} / batch * 1e6",
    ).mark_point(size=160, filled=True, color=PALETTE["decode"]).encode(
        x=x, y=y,
        tooltip=[alt.Tooltip("B:Q", title="Batch"),
                 alt.Tooltip("intensity:Q", title="FLOP/byte", format=",.1f"),
                 alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=",.0f"),
                 alt.Tooltip("cost:Q", title="chip-s per M tokens", format=",.1f")])
    per_seq_flops = f"(2 * {c['P']} + {c['A']} * context)"
    per_seq_bytes = f"({c['K']} * context)"
    need = f"ceil({c['R']} * {c['W']} / ({per_seq_flops} - {c['R']} * {per_seq_bytes}))"
    readout = alt.ExprRef(  # two lines, so the readout fits a phone
        f"[format({intensity('batch')}, ',.1f') + ' FLOP/byte, ' + "
        f"format(batch / {step_s('batch')}, ',.0f') + ' tok/s,', "
        f"({intensity('batch')} >= {c['R']} ? 'compute-bound' : 'memory-bound') + "
        f"'; ridge ' + ({per_seq_flops} > {c['R']} * {per_seq_bytes} ? "
        f"'at batch ' + format({need}, ',') : 'never reached here')]")
    return responsive((curve + ridge + here).add_params(b_param, c_param), 320,
                      alt.Title(readout, subtitle=f"{model.name} on {roof.name}: "
                                                  "one decode step of the whole batch"))


def live_batching(df: pd.DataFrame, who: str, plain: float | None = None) -> alt.Chart:
    """Measured batched decode on this machine against its own roofline prediction; ``plain``:
    llama.cpp's plain decode of the same model (tokens/s), drawn at batch 1 beside the
    harness's own batch 1."""
    plain_label = "plain decode, one sequence (llama-bench tg)"
    long = pd.concat([
        pd.DataFrame({"batch": df["batch"], "tokens_per_s": df["predicted_tokens_per_s"],
                      "line": "roofline prediction", "stddev": np.nan}),
        pd.DataFrame({"batch": df["batch"], "tokens_per_s": df["memory_bound_tokens_per_s"],
                      "line": "memory bound alone", "stddev": np.nan}),
        pd.DataFrame({"batch": df["batch"], "tokens_per_s": df["tokens_per_s"],
                      "line": "measured (llama.cpp)", "stddev": df["stddev"]}),
    ], ignore_index=True)
    long = readable(long, ["batch", "tokens_per_s"], log=True)
    lines = ["roofline prediction", "memory bound alone", "measured (llama.cpp)", plain_label]
    colors = [PALETTE["ceiling"], "#c9c3b8", PALETTE["live"], PALETTE["decode"]]
    color = alt.Color("line:N", title=None, sort=lines,
                      scale=alt.Scale(domain=lines, range=colors))
    tips = [alt.Tooltip("line:N", title="Line"), alt.Tooltip("batch:Q", title="Batch"),
            alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=",.1f"),
            alt.Tooltip("stddev:Q", title="± (stddev)", format=",.1f")]
    x = alt.X("batch:Q", title="batch (sequences decoded together, log scale)",
              scale=alt.Scale(type="log"))
    y = alt.Y("tokens_per_s:Q", title="tokens/s, all sequences together (log scale)",
              scale=alt.Scale(type="log"))
    base = alt.Chart(long).encode(
        x=x, y=y, color=color,
        strokeDash=alt.StrokeDash("line:N", title=None, sort=lines,
                                  scale=alt.Scale(domain=lines,
                                                  range=[[1, 0], [4, 3], [1, 0], [1, 0]])),
        tooltip=tips)
    chart = base.mark_line() + base.mark_point(filled=True, size=45)
    if plain is not None and plain > 0:
        dot = pd.DataFrame({"batch": [1], "tokens_per_s": [plain], "line": [plain_label],
                            "stddev": [np.nan]})
        chart = chart + alt.Chart(dot).mark_point(shape="diamond", filled=True, size=110).encode(
            x=x, y=y, color=color, tooltip=tips)
    return responsive(chart, 320, alt.Title(
        "Batching on this machine", subtitle=f"{who}: measured against min(compute, memory)"))
