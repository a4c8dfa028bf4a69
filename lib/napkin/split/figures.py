"""Chapter 12 charts: one request on two machines, the link it crosses, which desk pairs win,
what a split saves a server, and the check against a published split."""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from ..charts import DISTINCT, PALETTE, replace_names, responsive

__all__ = ["calculator", "desk_winners", "link_sweep", "published_check", "request_timeline",
           "server_costs", "server_winners", "timeline_rows"]

#: The parts of a request, in the order they happen, and their colours.
#: Every legend here lists one entry a line (below the plot, as the book's theme puts it):
#: these labels are long, and two of them side by side overrun a phone's column. A chart's
#: colour and shape of one field share a domain, or Vega-Lite draws two legends side by side.
ONE_A_LINE = alt.Legend(columns=1)
#: The same, each label broken into two lines before its " over " (Vega draws a list of
#: strings as lines): "M3 Ultra + DGX Spark" above "over M3 Ultra alone".
TWO_LINES_OVER = alt.Legend(columns=1, labelExpr=(
    "indexof(datum.label, ' over ') < 0 ? datum.label : "
    "[slice(datum.label, 0, indexof(datum.label, ' over ')), "
    "slice(datum.label, indexof(datum.label, ' over ') + 1)]"))

PHASES = {"prefill": PALETTE["prefill"], "cache still crossing the link": PALETTE["live"],
          "decode": PALETTE["decode"]}


def timeline_rows(ways: dict) -> pd.DataFrame:
    """One row per way and phase of a request: ``ways`` maps a label to a
    :class:`napkin.SplitPrediction`; the link's part is what the overlap leaves showing."""
    rows = []
    for label, s in ways.items():
        parts = (("prefill", 0.0, s.prefill_s), ("cache still crossing the link", s.prefill_s,
                                                 s.ttft_s), ("decode", s.ttft_s, s.e2e_latency_s))
        for phase, start, end in parts:
            if end > start:
                rows.append({"way": label, "phase": phase, "start_s": start, "end_s": end,
                             "seconds": end - start, "ttft_s": s.ttft_s,
                             "e2e_s": s.e2e_latency_s, "moved_MB": s.transfer_bytes / 1e6})
    return pd.DataFrame(rows)


def request_timeline(rows: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """Each way's request as a bar from the prompt's arrival to the answer's last token."""
    order = list(dict.fromkeys(rows["way"]))
    color = alt.Color("phase:N", title=None, sort=list(PHASES), legend=ONE_A_LINE, scale=alt.Scale(
        domain=list(PHASES), range=list(PHASES.values())))
    tips = [alt.Tooltip("way:N", title="Way"), alt.Tooltip("phase:N", title="Phase"),
            alt.Tooltip("seconds:Q", title="Seconds", format=",.2f"),
            alt.Tooltip("ttft_s:Q", title="First token (s)", format=",.2f"),
            alt.Tooltip("e2e_s:Q", title="Whole request (s)", format=",.1f"),
            alt.Tooltip("moved_MB:Q", title="Cache moved (MB)", format=",.0f")]
    bars = alt.Chart(rows).mark_bar(height=22).encode(
        y=alt.Y("way:N", title=None, sort=order, axis=alt.Axis(labelLimit=220)),
        x=alt.X("start_s:Q", title="seconds from sending the prompt"), x2="end_s:Q",
        color=color, tooltip=tips)
    ends = rows.groupby("way", sort=False).last().reset_index()
    labels = alt.Chart(ends).mark_text(align="left", dx=4, fontSize=11).encode(
        y=alt.Y("way:N", sort=order), x="end_s:Q",
        text=alt.Text("e2e_s:Q", format=",.1f"), tooltip=tips[:1] + tips[4:5])
    return responsive(bars + labels, 40 * len(order) + 40, alt.Title(title, subtitle=subtitle))


def link_sweep(sweep: pd.DataFrame, links: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """A request's time on a pair against the link's bandwidth (one line per workload and
    overlap), each sourced link a labelled rule, and each workload on the decode machine
    alone as a dashed level."""
    x = alt.X("link_GB_per_s:Q", title="link, GB/s each way (log scale)",
              scale=alt.Scale(type="log", domain=[float(sweep["link_GB_per_s"].min()),
                                                  float(sweep["link_GB_per_s"].max())]))
    y = alt.Y("e2e_s:Q", title="whole request, seconds (log scale)",
              scale=alt.Scale(type="log"))
    color = alt.Color("workload:N", title=None, legend=ONE_A_LINE,
                      scale=alt.Scale(range=DISTINCT[:sweep["workload"].nunique()]))
    dash = alt.StrokeDash("cache:N", title=None, legend=ONE_A_LINE)
    tips = [alt.Tooltip("workload:N", title="Workload"), alt.Tooltip("cache:N", title="Cache"),
            alt.Tooltip("link_GB_per_s:Q", title="Link (GB/s)", format=",.3~r"),
            alt.Tooltip("e2e_s:Q", title="Whole request (s)", format=",.2f"),
            alt.Tooltip("alone_s:Q", title="Decode machine alone (s)", format=",.2f")]
    lines = alt.Chart(sweep).mark_line(strokeWidth=2).encode(
        x=x, y=y, color=color, strokeDash=dash, detail="cache:N", tooltip=tips)
    alone = alt.Chart(sweep).mark_rule(strokeDash=[2, 4], opacity=0.7).encode(
        y="mean(alone_s):Q", color=color, tooltip=tips[:1] + tips[4:])
    seen = links[(links["bandwidth_GB_per_s"] >= sweep["link_GB_per_s"].min())
                 & (links["bandwidth_GB_per_s"] <= sweep["link_GB_per_s"].max())]
    rules = alt.Chart(seen).mark_rule(color=PALETTE["ceiling"], opacity=0.5).encode(
        x="bandwidth_GB_per_s:Q",
        tooltip=[alt.Tooltip("link:N", title="Link"),
                 alt.Tooltip("bandwidth_GB_per_s:Q", title="GB/s each way", format=",.3~r"),
                 alt.Tooltip("connects:N", title="Connects")])
    names = alt.Chart(seen).mark_text(angle=270, align="right", baseline="bottom", dx=-4,
                                      fontSize=10, color=PALETTE["ceiling"]).encode(
        x="bandwidth_GB_per_s:Q", y=alt.value(0), text="link:N")
    return responsive(rules + names + alone + lines, 340, alt.Title(title, subtitle=subtitle))


def desk_winners(verdicts: pd.DataFrame, owned: str, candidate: str, title: str,
                 subtitle: str) -> alt.Chart:
    """For each workload and model, three factors (a split's time over the faster of the
    compared ways alone): the best pair against the best machine alone, and an owner's
    ``owned`` with its best helper and with ``candidate`` as its helper."""
    rows = []
    for r in verdicts.itertuples():
        case = f"{r.workload} · {r.model}"
        rows.append({"case": case, "comparison": "best pair over best machine",
                     "gain": r.pair_over_alone, "pair": r.best_pair,
                     "alone": r.best_alone, "alone_s": r.best_alone_s,
                     "pair_s": r.best_pair_s})
        if pd.notna(getattr(r, "helper_gain", float("nan"))):
            rows.append({"case": case, "comparison": f"{owned} + best helper over {owned} alone",
                         "gain": r.helper_gain, "pair": f"{r.helper} -> {owned}",
                         "alone": owned, "alone_s": r.owned_s, "pair_s": r.helper_s})
        if pd.notna(getattr(r, "candidate_gain", float("nan"))):
            rows.append({"case": case, "comparison": f"{owned} + {candidate} over {owned} alone",
                         "gain": r.candidate_gain, "pair": f"{candidate} -> {owned}",
                         "alone": owned, "alone_s": r.owned_s, "pair_s": r.candidate_s})
    df = pd.DataFrame(rows)
    order = list(dict.fromkeys(df["case"]))
    kinds = list(dict.fromkeys(df["comparison"]))
    tips = [alt.Tooltip("case:N", title="Workload · model"),
            alt.Tooltip("comparison:N", title="Comparison"),
            alt.Tooltip("gain:Q", title="Factor (x, above 1: the pair is faster)",
                        format=".2f"),
            alt.Tooltip("pair:N", title="Pair (prefill -> decode)"),
            alt.Tooltip("pair_s:Q", title="Pair's request (s)", format=",.1f"),
            alt.Tooltip("alone:N", title="Alone"),
            alt.Tooltip("alone_s:Q", title="Alone's request (s)", format=",.1f")]
    base = alt.Chart(df).encode(
        y=alt.Y("case:N", title=None, sort=order, axis=alt.Axis(labelLimit=240)),
        x=alt.X("gain:Q", title="how many times faster the pair finishes a request "
                                "(log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("comparison:N", title=None, sort=kinds,
                        scale=alt.Scale(domain=kinds, range=DISTINCT[:len(kinds)]),
                        legend=TWO_LINES_OVER),
        shape=alt.Shape("comparison:N", title=None, sort=kinds, legend=TWO_LINES_OVER,
                        scale=alt.Scale(domain=kinds)), tooltip=tips)
    even = alt.Chart(pd.DataFrame({"gain": [1.0]})).mark_rule(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(x="gain:Q")
    return responsive(even + base.mark_point(filled=True, size=80), 34 * len(order) + 60,
                      alt.Title(title, subtitle=subtitle))


def server_costs(table: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """Dollars per million output tokens of every design that meets its workload's level:
    each kind alone, each kind in two pools, and each mixed pair, one row per workload."""
    df = table[table["met"]].copy()
    df["design"] = df.apply(lambda r: r["prefill"] if r["alone"] else
                            f"{r['prefill']} -> {r['decode']}", axis=1)
    df["kind"] = df.apply(lambda r: "one machine for both" if r["alone"] else
                          "one kind, two pools" if r["prefill"] == r["decode"] else
                          "two kinds", axis=1)
    kinds = ["one machine for both", "one kind, two pools", "two kinds"]
    order = list(dict.fromkeys(df["workload"]))
    tips = [alt.Tooltip("workload:N", title="Workload"), alt.Tooltip("design:N", title="Design"),
            alt.Tooltip("kind:N", title="Kind"),
            alt.Tooltip("usd_per_mtok:Q", title="USD per million output tokens", format=",.2f"),
            alt.Tooltip("ttft_s:Q", title="First token (s)", format=",.2f"),
            alt.Tooltip("tpot_s:Q", title="Per token (s)", format=",.3f"),
            alt.Tooltip("batches:N", title="Batch (prefill/decode)"),
            alt.Tooltip("prefill_share:Q", title="Share of instances prefilling",
                        format=".0%"),
            alt.Tooltip("joules_per_token:Q", title="Joules per output token", format=",.2f")]
    points = alt.Chart(df).mark_point(filled=True, size=60, opacity=0.8).encode(
        y=alt.Y("workload:N", title=None, sort=order, axis=alt.Axis(labelLimit=200)),
        yOffset=alt.YOffset("kind:N", sort=kinds),
        x=alt.X("usd_per_mtok:Q", title="USD per million output tokens (log scale)",
                scale=alt.Scale(type="log")),
        color=alt.Color("kind:N", title=None, sort=kinds,
                        scale=alt.Scale(domain=kinds, range=DISTINCT[:3]), legend=ONE_A_LINE),
        shape=alt.Shape("kind:N", title=None, sort=kinds, legend=ONE_A_LINE,
                        scale=alt.Scale(domain=kinds)), tooltip=tips)
    return responsive(points, 70 * len(order) + 60, alt.Title(title, subtitle=subtitle))


def published_check(check: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """Each published ratio against what each way of predicting it gives: the book's model,
    the plain roofline and one machine for both (no gain from splitting)."""
    order = list(dict.fromkeys(check["comparison"]))
    ways = list(dict.fromkeys(check["predictor"]))
    tips = [alt.Tooltip("comparison:N", title="Comparison"),
            alt.Tooltip("predictor:N", title="Predicted by"),
            alt.Tooltip("predicted:Q", title="Predicted (x)", format=".2f"),
            alt.Tooltip("published:Q", title="Published (x)", format=".2f"),
            alt.Tooltip("error:Q", title="Error (factor)", format=".2f"),
            alt.Tooltip("where:N", title="Where published")]
    # each comparison's name heads its row on two lines, above its points: on a y axis these
    # names would leave a phone's plot no width
    y = alt.Y("comparison:N", title=None, sort=order, axis=None)
    x = alt.X("predicted:Q", title="ratio (x): split design over its baseline (log scale)",
              scale=alt.Scale(type="log"))
    firsts = check.drop_duplicates("comparison").copy()
    firsts["heading"] = [_two_lines(c) for c in firsts["comparison"]]
    headings = alt.Chart(firsts).mark_text(align="left", baseline="top", dy=2, fontSize=11,
                                           lineHeight=13).encode(
        y=alt.Y("comparison:N", sort=order, axis=None, bandPosition=0), x=alt.value(0),
        text="heading:N", tooltip=[tips[0], tips[5]])
    points = alt.Chart(check).mark_point(filled=True, size=70).encode(
        y=y, x=x, color=alt.Color("predictor:N", title=None, sort=ways,
                                  scale=alt.Scale(domain=ways, range=DISTINCT[:len(ways)]),
                                  legend=ONE_A_LINE),
        shape=alt.Shape("predictor:N", title=None, sort=ways, legend=ONE_A_LINE,
                        scale=alt.Scale(domain=ways)), tooltip=tips)
    published = alt.Chart(firsts).mark_tick(
        color=PALETTE["ceiling"], thickness=3, size=16).encode(
        y=y, x="published:Q", tooltip=[tips[0], tips[3], tips[5]])
    return responsive(headings + published + points, 76 * len(order) + 60,
                      alt.Title(title, subtitle=subtitle))


def _two_lines(text: str) -> list[str]:
    """``text`` as two lines, broken after its first ", " or ": " (Vega draws a list of
    strings as lines)."""
    for mark in (": ", ", "):
        head, found, rest = text.partition(mark)
        if found:
            return [head + mark.strip(), rest]
    return [text]


#: The library's expressions the calculator computes for each machine (in this order).
_CALC_FIELDS = ("w_total", "kv_end", "kv_prompt", "need", "fits_raised", "ttft_mid",
                "per_user_mid", "price")
#: Per way: its label's first part and, as Vega expressions over the joined datum, its
#: first token, whole request and price.
_WAYS = {
    "split": ("datum.P + ' -> ' + datum.D",
              "datum.arrival", "datum.arrival + (datum.O - 1) / datum.d_rate",
              "datum.p_price1 && datum.d_price ? datum.p_price1 + datum.d_price : null",
              "datum.d_rate", "datum.p_fit1 && datum.d_fit"),
    "prefill machine alone": ("datum.P + ' alone'", "datum.p_ttft",
                              "datum.p_ttft + (datum.O - 1) / datum.p_rate", "datum.p_price",
                              "datum.p_rate", "datum.p_fit"),
    "decode machine alone": ("datum.D + ' alone'", "datum.d_ttft",
                             "datum.d_ttft + (datum.O - 1) / datum.d_rate", "datum.d_price",
                             "datum.d_rate", "datum.d_fit && datum.d_ttft > 0"),
}


def _machine_fields(formats: list[str]) -> dict:
    """Vega expressions of chapter 8's estimate for a machine row at the chosen workload
    (``L``, ``O``, one user), and its fit and price at a one-token answer (a prefill side
    keeps only the prompt's cache)."""
    from .. import buying, models
    bpw = json.dumps({f: models.bits_per_weight(f) / 8 for f in formats})
    subst = {"L": "datum.L", "O": "datum.O", "U": "1", "bpw": "datum.bpw"}
    out = {"L": "prompt", "O": "answer", "bpw": f"({bpw})[fmt]",
           "roof": "datum['roof_' + fmt]"}
    js = buying.js_expressions()
    for name in _CALC_FIELDS:
        e = js[name]
        for k, v in subst.items():
            e = replace_names(e, k, v)
        out[name] = e
    one = {**subst, "O": "1"}
    for name in ("need", "fits_raised", "price"):
        e = js[name]
        for k, v in one.items():
            e = replace_names(e, k, v)
        out[f"{name}1"] = e
    return out


def calculator(rows: pd.DataFrame, layers: dict[str, int], links: pd.DataFrame,
               formats: list[str], start: dict | None = None, audit: bool = False) -> alt.Chart:
    """Two desk machines, a link, a model and a workload in; the first token, the answer's
    speed, the whole request and the machines' price out, for the split and for each
    machine alone. Every number is computed in the page from chapter 8's per-machine
    constants (:func:`napkin.buying.calculator_rows`, :func:`napkin.buying.js_expressions`)
    the way :func:`napkin.predict_split` computes it for desk machines. ``layers``: each
    model's layer count (the streamed cache's last layer); ``start``: the controls' starting
    values (keys prefill, decode, link, model, fmt, prompt, answer, streamed); ``audit``:
    each bar's accessible description carries its values unrounded, for the test."""
    machines = list(dict.fromkeys(rows["machine"]))
    prefillers = list(dict.fromkeys(rows.loc[rows["eff_mid"] > 0, "machine"]))
    link_names = list(links["link"])
    s = {"prefill": "DGX Spark", "decode": "M3 Ultra", "link": "10 GbE",
         "model": "Llama-3.1-8B", "fmt": "F16", "prompt": 8192, "answer": 500,
         "streamed": True} | (start or {})
    params = [
        alt.param(name="P", value=s["prefill"], bind=alt.binding_select(
            options=prefillers, name="Prefill on ")),
        alt.param(name="D", value=s["decode"], bind=alt.binding_select(
            options=machines, name="Decode on ")),
        alt.param(name="link", value=s["link"], bind=alt.binding_select(
            options=link_names, name="Link ")),
        alt.param(name="model", value=s["model"], bind=alt.binding_select(
            options=list(layers), name="Model ")),
        alt.param(name="fmt", value=s["fmt"], bind=alt.binding_select(
            options=formats, name="Weights ")),
        alt.param(name="prompt", value=s["prompt"], bind=alt.binding_range(
            min=500, max=128000, step=500, name="Prompt (tokens) ")),
        alt.param(name="answer", value=s["answer"], bind=alt.binding_range(
            min=2, max=8000, step=1, name="Answer (tokens) ")),
        alt.param(name="streamed", value=s["streamed"], bind=alt.binding_checkbox(
            name="Stream the cache layer by layer ")),
    ]
    gbps = json.dumps(dict(zip(links["link"], links["bandwidth_GB_per_s"].astype(float))))
    chart = alt.Chart(rows).transform_filter(
        "datum.model == model && (datum.machine == P || datum.machine == D)")
    for name, e in _machine_fields(formats).items():
        chart = chart.transform_calculate(**{name: e})
    # each side's figures onto every row, then one row carries the pair
    picks = {"p_ttft": ("P", "ttft_mid"), "p_rate": ("P", "per_user_mid"),
             "p_fit": ("P", "fits_raised"), "p_fit1": ("P", "fits_raised1"),
             "p_price": ("P", "price"), "p_price1": ("P", "price1"),
             "d_ttft": ("D", "ttft_mid"), "d_rate": ("D", "per_user_mid"),
             "d_fit": ("D", "fits_raised"), "d_price": ("D", "price"),
             "moved": ("P", "kv_prompt")}
    for new, (side, field) in picks.items():
        chart = chart.transform_calculate(**{
            f"{new}_v": f"datum.machine == {side} ? (datum.{field} === true ? 1 : "
                        f"datum.{field} === false ? 0 : datum.{field}) : null"})
    chart = chart.transform_joinaggregate(
        [alt.JoinAggregateFieldDef(op="max", field=f"{n}_v", **{"as": n}) for n in picks]
    ).transform_filter("datum.machine == P").transform_calculate(
        P="P", D="D", link_GBps=f"P == D ? null : ({gbps})[link]",
        transfer=f"P == D ? 0 : datum.moved / (({gbps})[link] * 1e9)",
        layers=f"({json.dumps(layers)})[model]",
        arrival="streamed ? max(datum.p_ttft + datum.transfer / datum.layers, "
                "datum.p_ttft / datum.layers + datum.transfer) : datum.p_ttft + datum.transfer")
    bars, labels = [], []
    tips = [alt.Tooltip("way:N", title="Way"),
            alt.Tooltip("ttft:Q", title="First token (s)", format=",.2f"),
            alt.Tooltip("rate:Q", title="Answer (tokens/s)", format=",.1f"),
            alt.Tooltip("e2e:Q", title="Whole request (s)", format=",.1f"),
            alt.Tooltip("price:Q", title="Machines' price (USD)", format=",.0f"),
            alt.Tooltip("moved_MB:Q", title="Cache moved (MB)", format=",.0f"),
            alt.Tooltip("transfer:Q", title="Link time for the cache (s)", format=",.2f")]
    for order, (key, (label, ttft, e2e, price, rate, ok)) in enumerate(_WAYS.items()):
        way = chart.transform_calculate(
            way=label, ttft=ttft, e2e=e2e, price=price, rate=rate,
            ok=ok, moved_MB=f"{'datum.moved / 1e6' if key == 'split' else '0'}"
        ).transform_filter("datum.ok && isValid(datum.e2e) && isFinite(datum.e2e)"
                           ).transform_calculate(
            # three short lines above the bar: one long line overruns a phone's column
            text="[datum.way, format(datum.ttft, ',.2f') + ' s to the first token, ' + "
                 "format(datum.rate, ',.1f') + ' tok/s', format(datum.e2e, ',.1f') + "
                 "' s in all' + (datum.price ? ', machines ' + format(datum.price, '$,.0f') "
                 ": '')]")
        # a fixed order: a sort by a field would be dropped when the layers' domains unite
        # the way's name heads its label, so the plot takes the whole width (no y axis)
        ways = [w[0] for w in _WAYS.values()]
        y = alt.Y("way:N", title=None, sort=ways, axis=None)
        bar = way.mark_bar(height=18).encode(
            y=y, x=alt.X("e2e:Q", title="whole request, seconds"),
            color=alt.value(DISTINCT[order]), tooltip=tips)
        if audit:
            bar = bar.transform_calculate(audit=" + ';' + ".join(
                f"'{k}=' + datum.{k}" for k in ("way", "ttft", "rate", "e2e", "price",
                                                 "transfer"))).encode(description="audit:N")
        bars.append(bar)
        labels.append(way.mark_text(align="left", baseline="top", dy=2, dx=2,
                                    fontSize=11, lineHeight=13).encode(
            y=alt.Y("way:N", sort=ways, axis=None, bandPosition=0), x=alt.value(0),
            text="text:N"))
    # three rows of 110 px: a label's three lines at the top of each, its bar below them
    return responsive(alt.layer(*bars, *labels).add_params(*params), 330, alt.Title(
        "One request, on two machines or one",
        subtitle="chapter 8's estimates; ways that do not fit are left out"))


def server_winners(verdicts: pd.DataFrame, title: str, subtitle: str) -> alt.Chart:
    """For each workload and set of chips (``verdicts`` with a ``chips`` column), how many
    times less the cheapest split costs than the cheapest chip alone, labelled with the
    split's pair."""
    df = verdicts.copy()
    sets = list(dict.fromkeys(df["chips"]))
    order = list(dict.fromkeys(df["workload"]))
    tips = [alt.Tooltip("workload:N", title="Workload"), alt.Tooltip("chips:N", title="Chips"),
            alt.Tooltip("split_gain:Q", title="Alone over split (x)", format=".2f"),
            alt.Tooltip("best_split:N", title="Cheapest split (prefill -> decode)"),
            alt.Tooltip("best_split_usd:Q", title="Split, USD per million", format=",.2f"),
            alt.Tooltip("best_alone:N", title="Cheapest alone"),
            alt.Tooltip("best_alone_usd:Q", title="Alone, USD per million", format=",.2f")]
    y = alt.Y("workload:N", title=None, sort=order, axis=alt.Axis(labelLimit=200))
    offset = alt.YOffset("chips:N", sort=sets)
    color = alt.Color("chips:N", title=None, sort=sets,
                      scale=alt.Scale(domain=sets, range=DISTINCT[:len(sets)]),
                      legend=ONE_A_LINE)
    shape = alt.Shape("chips:N", title=None, sort=sets, legend=ONE_A_LINE,
                      scale=alt.Scale(domain=sets))
    x = alt.X("split_gain:Q", title="how many times less a million tokens costs split "
                                    "than on one kind alone", scale=alt.Scale(zero=False))
    base = alt.Chart(df).encode(y=y, yOffset=offset, tooltip=tips)
    dots = base.mark_point(filled=True, size=80).encode(x=x, color=color, shape=shape)
    names = base.mark_text(align="left", dx=8, fontSize=10).encode(x=x, text="best_split:N")
    even = alt.Chart(pd.DataFrame({"g": [1.0]})).mark_rule(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(x="g:Q")
    return responsive(even + dots + names, 60 * len(order) + 60,
                      alt.Title(title, subtitle=subtitle))
