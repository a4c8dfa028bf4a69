"""Chapter 10 charts: what a verify step costs, the speedup against batch on the essay's
machines (computed in the page from sliders), published speedups against the model, and the
live verify steps of the machine that built the page."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from ..charts import PALETTE, readable, responsive, whiskers
from ..speculative import machines

__all__ = ["explorer", "LINES", "live", "MACHINE_COLORS", "published", "verify_cost_rows",
           "verify_costs"]

#: One colour per machine of the explorer: Apple's blue, and three distinct NVIDIA-era hues.
MACHINE_COLORS = {"M2 Ultra": PALETTE["apple"], "DGX Spark": PALETTE["nvidia"],
                  "RTX 4090": PALETTE["cpu"], "H100 SXM": PALETTE["live"]}
LINES = {"calibrated": "calibrated step model", "roofline": "plain roofline"}


def _machine_color(title=None) -> alt.Color:
    return alt.Color("machine:N", title=title, sort=list(MACHINE_COLORS),
                     scale=alt.Scale(domain=list(MACHINE_COLORS),
                                     range=list(MACHINE_COLORS.values())))


def _view_param(default: str) -> alt.Parameter:
    return alt.param(name="view", value=default, bind=alt.binding_select(
        options=list(machines.VIEWS), labels=list(machines.VIEWS.values()), name="Roofs "))


def verify_costs(df: pd.DataFrame, title: str, default_view: str = "llama.cpp") -> alt.Chart:
    """A verify step's cost in plain steps against the tokens it checks, one line per
    machine, under the chosen roofs (a menu)."""
    view = _view_param(default_view)
    base = alt.Chart(df).transform_filter("datum.view == view").encode(
        x=alt.X("tokens:Q", title="tokens checked in one step (log scale)",
                scale=alt.Scale(type="log", base=2)),
        y=alt.Y("relative:Q", title="cost in plain decode steps (log scale)",
                scale=alt.Scale(type="log")),
        color=_machine_color(),
        tooltip=[alt.Tooltip("machine:N", title="Machine"),
                 alt.Tooltip("tokens:Q", title="Tokens in the step"),
                 alt.Tooltip("relative:Q", title="Plain steps", format=",.2f"),
                 alt.Tooltip("bound:N", title="Step is"),
                 alt.Tooltip("view_label:N", title="Roofs")])
    chart = (base.mark_line() + base.mark_point(filled=True, size=30)).add_params(view)
    return responsive(chart, 320, alt.Title(
        title, subtitle="batch 1; flat while the weights' read dominates, then rising"))


def explorer(rows: pd.DataFrame, start: dict, title: str, audit: bool = False) -> alt.Chart:
    """Speedup against batch for each machine, recomputed in the page
    (:func:`napkin.speculative.machines.js_expressions`) from the sliders: the first drafted
    token's acceptance (later ones fall as published), the draft step's share of a plain
    step, the drafted tokens per cycle, and the roofs. ``start``: the sliders' starting values (keys acceptance, share, k, view).
    ``audit``: each point's accessible description carries its values unrounded, for the
    test that compares them with the library."""
    p = machines.PARAMS
    acceptance = alt.param(name=p["acceptance"], value=start["acceptance"],
                           bind=alt.binding_range(min=0, max=0.99, step=0.01,
                                                  name="First drafted token accepted "))
    share = alt.param(name=p["share"], value=start["share"], bind=alt.binding_range(
        min=0, max=0.5, step=0.01, name="Draft step / plain step "))
    k = alt.param(name=p["k"], value=start["k"], bind=alt.binding_range(
        min=1, max=machines.K_MAX, step=1, name="Drafted tokens per cycle "))
    view = _view_param(start["view"])
    expr = machines.js_expressions()
    chart = alt.Chart(rows).transform_filter("datum.view == view").transform_calculate(
        speedup=expr["speedup"], cycle=expr["cycle"], tau=expr["tau"],
        verify_bound=expr["verify_bound"])
    tips = [alt.Tooltip("machine:N", title="Machine"), alt.Tooltip("B:Q", title="Batch"),
            alt.Tooltip("speedup:Q", title="Speedup", format=",.2f"),
            alt.Tooltip("tau:Q", title="Tokens per cycle", format=",.2f"),
            alt.Tooltip("cycle:Q", title="Cycle in plain steps", format=",.2f"),
            alt.Tooltip("verify_bound:N", title="Verify step is"),
            alt.Tooltip("view_label:N", title="Roofs")]
    base = chart.encode(
        x=alt.X("B:Q", title="batch (sequences decoded together, log scale)",
                scale=alt.Scale(type="log", base=2)),
        y=alt.Y("speedup:Q", title="speedup over plain decoding"),
        color=_machine_color(), tooltip=tips)
    points = base.mark_point(filled=True, size=35)
    if audit:
        fields = ("machine", "B", "speedup", "verify_bound")
        points = points.transform_calculate(audit=" + ';' + ".join(
            f"'{f}=' + datum.{f}" for f in fields)).encode(description="audit:N")
    even = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(
        color=PALETTE["ceiling"], strokeDash=[4, 3]).encode(y="y:Q")
    layered = (even + base.mark_line() + points).add_params(acceptance, share, k, view)
    return responsive(layered, 340, alt.Title(
        title, subtitle="Llama 3.1 8B at Q4_K, a chat-length context; below the dashed line "
                        "speculation costs more than it buys"))


def published(checked: pd.DataFrame, title: str) -> alt.Chart:
    """Published speedups (points) against the calibrated model (solid) and the plain
    roofline (dashed) for each published sweep (a menu); hollow points are the rows the
    acceptance rate was fitted to."""
    sweeps = list(dict.fromkeys(checked["sweep"]))
    pick = alt.param(name="sweep", value=sweeps[0], bind=alt.binding_select(
        options=sweeps, name="Published sweep "))
    checked = checked.assign(label=checked["method"].str.replace(r" via .*", "", regex=True))
    lines = pd.concat([checked.assign(line=LINES["calibrated"], value=checked["predicted"]),
                       checked.assign(line=LINES["roofline"], value=checked["roofline"])],
                      ignore_index=True)
    x = alt.X("batch:Q", title="batch (log scale)", scale=alt.Scale(type="log", base=2))
    color = alt.Color("label:N", title=None, legend=alt.Legend(columns=1, labelLimit=240))
    line_chart = alt.Chart(lines).transform_filter("datum.sweep == sweep").mark_line().encode(
        x=x, y=alt.Y("value:Q", title="speedup"), color=color,
        strokeDash=alt.StrokeDash("line:N", legend=None, sort=list(LINES.values()),
                                  scale=alt.Scale(domain=list(LINES.values()),
                                                  range=[[1, 0], [5, 3]])),
        tooltip=[alt.Tooltip("method:N", title="Method"), alt.Tooltip("line:N", title="Line"),
                 alt.Tooltip("batch:Q", title="Batch"),
                 alt.Tooltip("value:Q", title="Predicted", format=",.2f"),
                 alt.Tooltip("chip:N", title="Chip")])
    pts = alt.Chart(checked).transform_filter("datum.sweep == sweep").mark_point(
        size=60).encode(
        x=x, y="measured:Q", color=color,
        fill=alt.condition("datum.split == 'fit'", alt.value("transparent"),
                           alt.Fill("label:N", legend=None)),
        tooltip=[alt.Tooltip("method:N", title="Method"), alt.Tooltip("batch:Q", title="Batch"),
                 alt.Tooltip("measured:Q", title="Published speedup", format=",.2f"),
                 alt.Tooltip("predicted:Q", title="Calibrated model", format=",.2f"),
                 alt.Tooltip("roofline:Q", title="Plain roofline", format=",.2f"),
                 alt.Tooltip("factor:Q", title="Model off by (factor)", format=".2f"),
                 alt.Tooltip("acceptance:Q", title="First-token acceptance used",
                             format=".0%"),
                 alt.Tooltip("split:N", title="Row"),
                 alt.Tooltip("definition:N", title="Speedup is")])
    even = alt.Chart(pd.DataFrame({"y": [1.0]})).mark_rule(
        color=PALETTE["ceiling"], strokeDash=[2, 2], opacity=0.6).encode(y="y:Q")
    return responsive((even + line_chart + pts).add_params(pick), 320, alt.Title(
        title, subtitle=["points: published; lines: predicted",
                         "solid calibrated, dashed roofline; hollow: fitted"]))


def live(df: pd.DataFrame, who: str) -> alt.Chart:
    """Measured verify steps on this machine (points, with one standard deviation) against
    the roofline of its own measured roof (dashed), per depth. Draws whatever was measured:
    rows that cannot sit on the log axes are left out, whiskers that reach zero stop at the
    axis (:func:`napkin.charts.whiskers`)."""
    df = readable(df, ["tokens", "relative", "predicted_relative"], log=True)
    df = whiskers(df, "relative", "relative_stddev", log=True).assign(
        depth=lambda d: d["depth"].map(lambda v: f"{int(v):,} cached tokens"),
        whisker=lambda d: np.where(d["clipped"], "reaches below zero (noise)", "±1 stddev"))
    x = alt.X("tokens:Q", title="tokens checked in one step (log scale)",
              scale=alt.Scale(type="log", base=2))
    # the axis spans every value drawn with room either side: a roofline that stays at one
    # step (memory-bound at every size) would otherwise sit on the plot's bottom edge
    drawn = pd.concat([df[c] for c in ("predicted_relative", "relative", "low", "high")])
    drawn = drawn[drawn > 0]
    domain = [float(drawn.min()) / 1.25, float(drawn.max()) * 1.25] if len(drawn) else [0.5, 2]
    y = alt.Y("predicted_relative:Q", title="cost in one-token steps (log scale)",
              scale=alt.Scale(type="log", domain=domain, nice=False))
    color = alt.Color("depth:N", title=None, sort=list(dict.fromkeys(df["depth"])))
    tips = [alt.Tooltip("depth:N", title="Depth"), alt.Tooltip("tokens:Q", title="Tokens"),
            alt.Tooltip("relative:Q", title="Measured (plain steps)", format=",.2f"),
            alt.Tooltip("relative_stddev:Q", title="± (stddev)", format=",.2f"),
            alt.Tooltip("whisker:N", title="Whisker"),
            alt.Tooltip("predicted_relative:Q", title="Roofline", format=",.2f"),
            alt.Tooltip("predicted_bound:N", title="Predicted bound")]
    base = alt.Chart(df)
    pred = base.mark_line(strokeDash=[5, 3]).encode(x=x, y=y, color=color, tooltip=tips)
    bars = base.mark_rule().encode(x=x, y="low:Q", y2="high:Q", color=color, tooltip=tips)
    pts = base.mark_point(filled=True, size=50).encode(x=x, y="relative:Q", color=color,
                                                       tooltip=tips)
    return responsive(pred + bars + pts, 320, alt.Title(
        "Verify steps on this machine", subtitle=f"{who}: measured (points) against its "
                                                 "roofline (dashed)"))


def verify_cost_rows(tokens=(1, 2, 4, 8, 16, 32, 64, 128, 256), batch: int = 1,
                     depth: int | None = None) -> pd.DataFrame:
    """What :func:`verify_costs` draws: each machine's verify step of each size over its
    plain step, under both roofs (:func:`napkin.speculative.verify_cost`)."""
    from ..speculative.cost import DEPTH, verify_cost
    from ..predict.step import cost, decode_work

    depth = DEPTH if depth is None else depth
    out = []
    for name in machines.MACHINES:
        e = machines.local_engine(name)
        for view, label in machines.VIEWS.items():
            cal = machines.view_calibration(name, view)
            for n in tokens:
                c = cost(e.constants, decode_work(e.constants, batch, depth, n), cal)
                out.append({"machine": name, "view": view, "view_label": label,
                            "tokens": int(n), "relative": verify_cost(e, int(n), batch, depth,
                                                                      cal),
                            "bound": f"{np.asarray(c.bound)[0]}-bound"})
    return pd.DataFrame(out)
