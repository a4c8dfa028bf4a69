"""Verify steps against the roofline: the prediction, what a draft would buy, the prose and
the table ``python -m napkin verify`` prints.

Reads the records :func:`napkin.measure.verify.run` makes (a plain dict, as saved under
``results/``); nothing here runs llama.cpp. The prediction is the roofline of the machine's
own measured roof: llama.cpp's prefill rate on the same model (chapter 3's compute roof) and
the memory probe. Chapter 10 draws it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..texttable import Column, render
from . import machine, synthetic

#: The acceptance rate the printed speedups assume: DeepSeek-V3's report gives 85-90 % for its
#: MTP module's second token (arXiv:2412.19437); the low end. Random weights cannot measure it.
ACCEPTANCE = 0.85

#: The table ``python -m napkin verify`` prints (:func:`table`), a row per depth and step size.
COLUMNS = (Column("depth", 7, "{depth:,}"), Column("tokens", 8, "{tokens}"),
           Column("step ms", 16, "{step_ms:>9.2f} ±{stddev_ms:>5.2f}"),
           Column("x one-token", 16, "{relative:>9.2f} ±{relative_stddev:>5.2f}"),
           Column("napkin", 9, "{predicted_relative:.2f}"), Column("bound", 9, "{predicted_bound}"))


def _model(record: dict, which: str = "model"):
    from ..roofline import Model

    m = record[which]
    shape = synthetic.Shape(**m["synthetic"]["shape"])
    return Model(name=f"synthetic {m['synthetic']['format']}", params=m["model_params"],
                 weight_bytes=m["model_bytes"], config=shape.config())


def roof(record: dict):
    """This machine's roof: llama.cpp's prefill rate on the target and the probe's bandwidth
    (chapter 3's, :func:`napkin.measure.batched.roof`)."""
    from ..roofline import Roof

    return Roof(name=machine.label(record["machine"]), flops_per_s=record["flops_per_s"],
                bandwidth_bytes_per_s=record["bandwidth_bytes_per_s"],
                flops_kind=record["kernel"]["kind"])


def _cost(record: dict, tokens, depth, which: str = "model"):
    """The roofline's step of ``tokens`` tokens after ``depth`` cached ones on this machine's
    measured roof (arrays welcome, one element per step): the book's one step model at
    :data:`~napkin.predict.ROOFLINE` (the weights read once, the cache read once, the FLOPs of
    every token)."""
    from ..predict import ROOFLINE, step
    from ..predict.engines import on_roof

    c = on_roof(_model(record, which), roof(record))
    work = step.prefill_work(c, 1, np.asarray(tokens, dtype=float),
                             np.asarray(depth, dtype=float))
    return step.cost(c, work, ROOFLINE)


def predicted_seconds(record: dict, tokens: int, depth: int, which: str = "model") -> float:
    """Seconds of :func:`_cost`'s one step."""
    return float(_cost(record, tokens, depth, which).seconds[0])


def frame(record: dict | None) -> pd.DataFrame:
    """Measured and predicted seconds per step and cost relative to a one-token step, per
    depth and size (empty when there was no measurement)."""
    cols = ["depth", "tokens", "step_s", "stddev_s", "relative", "relative_stddev",
            "predicted_s", "predicted_relative", "predicted_bound"]
    if record is None:
        return pd.DataFrame(columns=cols)
    points = record["points"]
    depths = [p["depth"] for p in points]
    steps = _cost(record, [p["tokens"] for p in points], depths)  # every point in one pass
    ones = _cost(record, [1] * len(points), depths).seconds
    rows = []
    for i, p in enumerate(points):
        seconds = float(steps.seconds[i])
        rows.append({**{k: p[k] for k in cols[:6]}, "predicted_s": seconds,
                     "predicted_relative": seconds / float(ones[i]),
                     "predicted_bound": str(steps.bound[i])})
    return pd.DataFrame(rows, columns=cols)


def draft_share(record: dict) -> pd.DataFrame:
    """The draft's step over the target's plain step at each depth, measured (repetition by
    repetition, the two interleaved) and predicted (the roofline of both on this machine)."""
    rows = []
    for p in record["draft_points"]:
        d = p["depth"]
        rows.append({"depth": d, "draft_s": p["step_s"], "share": p["relative"],
                     "share_stddev": p["relative_stddev"],
                     "predicted_share": predicted_seconds(record, 1, d, "draft") /
                     predicted_seconds(record, 1, d)})
    return pd.DataFrame(rows)


def buys(record: dict | None, acceptance: float, depth: int | None = None) -> pd.DataFrame:
    """What speculative decoding would buy on this machine: for every measured verify size
    ``n = k + 1`` above one, the speedup ``tau(a, k) / (k x draft share + verify cost)`` from
    the measured costs and the given first drafted token's acceptance (which random weights
    cannot measure; later positions fall as published)."""
    from ..speculative.acceptance import position_rates, tokens_per_cycle

    cols = ["depth", "k", "verify_tokens", "tokens_per_cycle", "verify_relative",
            "draft_share", "cycle_relative", "speedup"]
    if record is None:
        return pd.DataFrame(columns=cols)
    df = frame(record)
    shares = draft_share(record).set_index("depth")["share"]
    depth = max(df["depth"]) if depth is None else depth
    rows = []
    for _, r in df[(df["depth"] == depth) & (df["tokens"] > 1)].iterrows():
        k = int(r["tokens"]) - 1
        tau = tokens_per_cycle(position_rates(acceptance, k))
        cycle = k * shares[depth] + r["relative"]
        rows.append({"depth": depth, "k": k, "verify_tokens": int(r["tokens"]),
                     "tokens_per_cycle": tau, "verify_relative": r["relative"],
                     "draft_share": shares[depth], "cycle_relative": cycle,
                     "speedup": tau / cycle})
    return pd.DataFrame(rows, columns=cols)


def table(record: dict) -> str:
    """The summary ``python -m napkin verify`` prints: the steps, the draft's share, and what
    drafting would buy at :data:`ACCEPTANCE`."""
    lines = [f"Machine : {who(record)}", f"Roof    : llama.cpp prefill "
             f"{record['flops_per_s'] / 1e9:,.0f} GFLOP/s, memory probe "
             f"{record['bandwidth_bytes_per_s'] / 1e9:,.1f} GB/s", ""]
    lines.append(render(COLUMNS, (
        r | {"depth": int(r["depth"]), "tokens": int(r["tokens"]), "step_ms": r["step_s"] * 1e3,
             "stddev_ms": r["stddev_s"] * 1e3} for r in frame(record).to_dict("records"))))
    share = draft_share(record)
    lines += ["", "draft step over a target step: " + ", ".join(
        f"{s:.0%} at depth {d:,} (bytes predict {p:.0%})" for d, s, p in
        zip(share["depth"], share["share"], share["predicted_share"]))]
    lines += [f"speedup at acceptance {ACCEPTANCE:.0%} (from the papers): " + ", ".join(
        f"k={int(r['k'])}: {r['speedup']:.2f}x" for _, r in buys(record, ACCEPTANCE).iterrows())]
    return "\n".join(lines)


def who(record: dict | None) -> str:
    """The label a live figure carries."""
    if record is None:
        return "no live measurement (llama.cpp unavailable where this page was built)"
    return f"{machine.label(record['machine'])}, llama.cpp on the CPU"


def unreadable(record: dict | None) -> str:
    """Why the measured verify steps cannot be read, in words (empty when they can): a step
    that checks more tokens does more work than a one-token step at the same depth, so one
    measured cheaper, a missing or zero time, or a spread as large as the value is what a
    busy machine measured, not what llama.cpp costs."""
    df = frame(record)
    if df.empty:
        return "no step was timed"
    bad = df[~(df["step_s"] > 0) | df["relative"].isna()]
    if len(bad):
        return f"{len(bad)} of its {len(df)} steps have no usable time"
    more = df[df["tokens"] > 1]
    inverted = more[more["relative"] < 1]
    if len(inverted):
        r = inverted.iloc[0]
        return (f"a step checking {int(r['tokens'])} tokens at {int(r['depth']):,} cached tokens "
                f"measured {r['relative']:.2f}x a one-token step, cheaper than a step that does "
                "less work")
    noisy = more[more["relative_stddev"] >= more["relative"] - 1]
    if len(noisy) > len(more) / 2:
        return (f"for {len(noisy)} of its {len(more)} multi-token steps the standard deviation "
                "is as large as the step's extra cost")
    return ""


def sentence(record: dict | None, acceptance: float) -> str:
    """The live result in Markdown, every number computed; when the timings cannot be read
    (:func:`unreadable`), it says why instead of drawing conclusions from them."""
    if record is None:
        return ("This page was built where llama.cpp could not run, so there is no live "
                "verify-step curve; run the notebook on your machine to draw yours.")
    why = unreadable(record)
    if why:
        return (f"On the machine that built this page ({who(record)}), the verify-step "
                f"timings cannot be read: {why}. That is what a busy machine measures; the "
                "chart shows the timings as they came, and no speedup is drawn from them. "
                "Rerun the cell on a quiet machine to measure yours.")
    df = frame(record)
    deep = df[df["depth"] == df["depth"].max()].set_index("tokens")
    steps = [n for n in deep.index if n > 1]
    costs = "; ".join(f"{n} tokens **{deep.loc[n, 'relative']:.2f}x** (roofline "
                      f"{deep.loc[n, 'predicted_relative']:.2f}x)" for n in steps)
    share = draft_share(record).set_index("depth")
    best = buys(record, acceptance).sort_values("speedup").iloc[-1]
    r = roof(record)
    text = (f"On the machine that built this page ({who(record)}; "
            f"{record.get('threads_reason', 'every core')}), at "
            f"{int(deep['depth'].iloc[0]):,} cached tokens a step cost, in one-token steps: "
            f"{costs}. The roofline is this machine's measured roof, llama.cpp's prefill at "
            f"{r.flops_per_s / 1e9:,.0f} GFLOP/s and memory at "
            f"{r.bandwidth_bytes_per_s / 1e9:,.1f} GB/s.")
    if deep.loc[steps[0], "relative"] > 1.5 * deep.loc[steps[0], "predicted_relative"]:
        text += (" Steps of a few tokens cost far more than the roofline says here, as if "
                 "they did not share one read of the weights the way a prefill does; this run "
                 "does not say why (a small-batch matmul path in llama.cpp, such as chapter "
                 "3's batch curve ran into, is one candidate, the machine's load another).")
    text += (f" The synthetic draft's step cost **{share['share'].iloc[-1]:.0%}** of the "
             f"target's (its bytes predict {share['predicted_share'].iloc[-1]:.0%}). With "
             f"the first drafted token accepted {acceptance:.0%} of the time and later ones "
             f"less often, as the papers measure, the best draft "
             f"length here is **{int(best['k'])}** token{'' if int(best['k']) == 1 else 's'}, "
             "for a speedup of "
             f"**{best['speedup']:.2f}x**")
    return text + (": speculative decoding would not pay on this machine with this software."
                   if best["speedup"] < 1 else ".")
