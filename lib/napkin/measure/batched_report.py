"""Batched decode against the roofline: the prediction, where the curve bends, the prose.

Reads the records :func:`napkin.measure.batched.run` makes (a plain dict, as saved
under ``results/``); nothing here runs llama.cpp.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pandas as pd

from . import machine

#: Batch 1 of the harness and llama.cpp's plain decode run the same model through the same
#: library; a batch 1 below this share of the plain rate (the slower of its runs before and
#: after the batches) is the harness's overhead, not the machine's memory.
OVERHEAD_SHARE = 0.5
#: For records without a plain decode: a batch 1 below this share of the memory-bound ceiling
#: cannot be told from harness overhead (chapter 1's published plain runs reach far more).
CEILING_SHARE = 0.1
#: A machine busy with other work slows every part of the run together, so the checks above,
#: which compare the run with itself, pass. Plain decode below this share of the memory
#: bound the run's own probe measured marks a disturbed run (chapter 1 finds llama.cpp's CPU
#: decode several times higher; the reviewed disturbed build reached 5 %). The probe's spread
#: is no sign of it: one slow pass of a quick probe spreads it on a quiet machine too.
BUSY_SHARE = 0.1
#: A fitted bend this close to the predicted one (either way) is where the roofline bends.
BEND_FACTOR = 2.0


def roof(record: dict):
    """This machine's roof for the kernels that ran: llama.cpp's own prefill rate on the same
    model (its quantized matmuls, every weight reused by every prompt token) and the probe's
    bandwidth. Records from before that measurement fall back to the float32 GEMM peak."""
    from ..roofline import Roof

    kind = record["kernel"]["kind"] if "kernel" in record else record["gemm"]["kind"]
    return Roof(name=machine.label(record["machine"]), flops_per_s=record["flops_per_s"],
                bandwidth_bytes_per_s=record["bandwidth_bytes_per_s"], flops_kind=kind)


def model_of(record: dict):
    """The measured model as :class:`napkin.roofline.Model`: llama.cpp's own byte and
    parameter counts, and the synthetic shape's config for its KV cache (F16 cache)."""
    from ..roofline import Model
    from .synthetic import Shape

    m = record["model"]
    shape = Shape(**m["synthetic"]["shape"])
    return Model(name=f"synthetic {m['synthetic']['format']}", params=m["model_params"],
                 weight_bytes=m["model_bytes"], config=shape.config())


def frame(record: dict | None) -> pd.DataFrame:
    """Measured and predicted tokens/s per batch (empty when there was no measurement)."""
    cols = ["batch", "tokens_per_s", "stddev", "predicted_tokens_per_s",
            "memory_bound_tokens_per_s", "compute_bound_tokens_per_s", "intensity", "bound"]
    if record is None:
        return pd.DataFrame(columns=cols)
    from ..roofline import decode_step

    r, m = roof(record), model_of(record)
    rows = []
    for p in record["points"]:
        s = decode_step(m, r, p["batch"], p["context_tokens"])
        rows.append({"batch": p["batch"], "tokens_per_s": p["tokens_per_s"], "stddev": p["stddev"],
                     "predicted_tokens_per_s": s.tokens_per_s,
                     "memory_bound_tokens_per_s": s.batch * r.bandwidth_bytes_per_s / s.bytes,
                     "compute_bound_tokens_per_s": s.batch * r.flops_per_s / s.flops,
                     "intensity": s.intensity, "bound": s.bound})
    return pd.DataFrame(rows, columns=cols)


def plain_decode(record: dict) -> dict | None:
    """llama.cpp's plain decode of the same model in the same record (one sequence, a fresh
    context, before and after the batches): its test, both rates, their mean and the slower;
    None for records made before the harness measured it."""
    plain = record.get("plain")
    if not plain:
        return None
    before, after = plain["before"]["tokens_per_s"], plain["after"]["tokens_per_s"]
    return {"test": plain["before"]["test"], "before": before, "after": after,
            "mean": (before + after) / 2, "slower": min(before, after)}


def batch_one(record: dict) -> dict:
    """Whether batch 1 of the batched harness measured the machine or the harness.

    The reference is llama.cpp's plain decode of the same model in the same record, the rate
    chapter 1 measures (``reference`` "plain": batch 1 is overhead below
    :data:`OVERHEAD_SHARE` of its slower run); in records without one, the memory-bound
    ceiling (``reference`` "ceiling": below :data:`CEILING_SHARE` of it, batch 1 cannot be
    told from overhead). ``share`` is batch 1 over the reference, ``overhead`` the verdict."""
    df = frame(record)
    ones = df[df["batch"] == 1]
    if ones.empty:
        raise ValueError("the record has no batch-1 point to check; measure batch 1")
    one = ones.iloc[0]
    plain = plain_decode(record)
    if plain is not None:
        reference, rate, threshold = "plain", plain["slower"], OVERHEAD_SHARE
    else:
        reference, rate, threshold = ("ceiling", float(one["memory_bound_tokens_per_s"]),
                                      CEILING_SHARE)
    share = float(one["tokens_per_s"]) / rate
    return {"batch1_tokens_per_s": float(one["tokens_per_s"]), "reference": reference,
            "reference_tokens_per_s": rate, "share": share, "threshold": threshold,
            "overhead": share < threshold,
            "memory_bound_tokens_per_s": float(one["memory_bound_tokens_per_s"])}


def bend_fit(batches, tokens_per_s) -> tuple[float, float]:
    """A curve of the roofline's shape fitted to every measured point: (bend, misfit).

    The roofline's shape is two lines: throughput rising in proportion to batch (one weight
    read per step, whatever the batch), then flat (the arithmetic is the limit). It is fitted
    by least squares on a log scale, so each point's relative miss counts alike; the bend is
    where the two lines meet (``math.inf`` when the best fit never flattens within the batches
    measured), the misfit the typical relative miss, exp(rms log residual) - 1. A large misfit
    says the measured curve does not have the roofline's shape at all.
    """
    df = pd.DataFrame({"batch": list(batches), "tps": list(tokens_per_s)})
    if df.empty or (df["tps"] <= 0).any() or (df["batch"] <= 0).any():
        raise ValueError("need positive batches and throughputs to find the bend")
    df = df.sort_values("batch")
    lb, ly = np.log(df["batch"].to_numpy(float)), np.log(df["tps"].to_numpy(float))

    def rss(lk: float) -> float:
        shape = np.minimum(lb, lk)
        return float(np.sum((ly - np.mean(ly - shape) - shape) ** 2))

    # the optimum is at a measured batch or at a split's own optimum: the rising line through
    # the points below it, the flat one through those above
    candidates = list(lb)
    for j in range(1, len(lb)):
        lk = np.mean(ly[j:]) - np.mean(ly[:j] - lb[:j])
        if lb[j - 1] <= lk <= lb[j]:
            candidates.append(float(lk))
    lk = min(candidates, key=rss)
    misfit = float(np.expm1(np.sqrt(rss(lk) / len(lb))))
    return (math.inf if lk >= lb[-1] else float(np.exp(lk))), misfit


def bend(batches, tokens_per_s) -> float:
    """Where a roofline-shaped curve fitted to all the measured points bends, as a batch
    size (:func:`bend_fit`; ``math.inf``: it never flattens within the batches measured)."""
    return bend_fit(batches, tokens_per_s)[0]


def predicted_bend(record: dict) -> float:
    """The batch at which the prediction turns compute-bound (this machine's ridge)."""
    from ..roofline import batch_to_ridge

    m = model_of(record)
    context = record["points"][0]["context_tokens"]
    return batch_to_ridge(m, roof(record).ridge, context)


def _probe_spread(record: dict) -> float:
    """How much the memory probe's passes varied, before and after the runs together."""
    before, after = record["probe_before"], record["probe_after"]
    return 1 - min(before["worst_bytes_per_s"], after["worst_bytes_per_s"]) / \
        max(before["best_bytes_per_s"], after["best_bytes_per_s"])


def busy(record: dict) -> str:
    """Why the run looks disturbed by other work on the machine, in words; "" if it does
    not (:data:`BUSY_SHARE`)."""
    eff = efficiency(record)
    decode = eff["plain_memory_fraction"] or eff["memory_fraction"]
    if decode >= BUSY_SHARE:
        return ""
    return (f"The machine was busy with other work while this ran: decode reached {decode:.0%} "
            "of the memory bound its own probe measured. Every number above was slowed "
            "together, so they describe a disturbed run, not the machine; rerun the chapter on "
            "a quiet machine to measure it.")


def _growth(df: pd.DataFrame, lo: int, hi: int, column: str) -> float:
    at = df.set_index("batch")[column]
    return float(at[hi] / at[lo])


def shape_sentence(record: dict) -> str:
    """The measured curve against the roofline's shape, in growth between measured batches:
    the prediction rises in proportion to batch up to its bend and is flat beyond."""
    df = frame(record)
    predicted = predicted_bend(record)
    first, last = int(df["batch"].min()), int(df["batch"].max())
    below = df[df["batch"] <= predicted]["batch"]
    pivot = int(below.max()) if not below.empty else first
    spans = [(first, pivot), (pivot, last)] if first < pivot < last else [(first, last)]
    said = "; ".join(f"from batch {lo} to {hi} the roofline has it grow "
                     f"{_growth(df, lo, hi, 'predicted_tokens_per_s'):.1f}x and it grew "
                     f"**{_growth(df, lo, hi, 'tokens_per_s'):.1f}x**" for lo, hi in spans)
    return (f"The roofline has throughput rising in proportion to batch up to a batch of "
            f"**{predicted:,.1f}** and flat beyond: {said}.")


def _fit(record: dict) -> tuple[float, float, float]:
    """The fitted bend and misfit (:func:`bend_fit`), and the spread that would explain a
    miss: the typical relative standard error of the measured means."""
    df = frame(record)
    knee, misfit = bend_fit(df["batch"], df["tokens_per_s"])
    reps = len(record["points"][0].get("samples", [])) or 1
    return knee, misfit, float((df["stddev"] / df["tokens_per_s"]).median()) / math.sqrt(reps)


def describes(record: dict) -> bool:
    """Whether the roofline describes the measured curve: batch 1 measured the machine
    (:func:`batch_one`), a curve of the roofline's shape fits the points within their spread,
    and it bends within :data:`BEND_FACTOR` of where this machine's roofline bends. A shape
    that fits but bends elsewhere is not the roofline."""
    if batch_one(record)["overhead"]:
        return False
    knee, misfit, error = _fit(record)
    predicted = predicted_bend(record)
    if misfit > error:
        return False
    if math.isinf(knee) or math.isinf(predicted):
        return math.isinf(knee) and math.isinf(predicted)
    return 1 / BEND_FACTOR <= knee / predicted <= BEND_FACTOR


def _fit_words(record: dict) -> str:
    """The fitted bend, how well the roofline's shape fits, whether the noise explains the
    miss, and whether the bend is the roofline's (:func:`describes`)."""
    knee, misfit, error = _fit(record)
    predicted = predicted_bend(record)
    where = ("never flattens within the batches measured" if math.isinf(knee)
             else f"bends at a batch of **{knee:,.1f}**")
    if misfit > error:
        verdict = (f"more than the spread of the means (about {error:.0%}) explains, so on this "
                   "machine the measured curve does not have the roofline's shape")
    elif describes(record):
        verdict = (f"within the spread of the means (about {error:.0%}), and within a factor "
                   f"of {BEND_FACTOR:.0f} of where this machine's roofline bends "
                   f"({predicted:,.1f}): here the roofline describes the curve")
    else:
        verdict = (f"within the spread of the means (about {error:.0%}): the curve has the "
                   f"roofline's shape, but this machine's roofline bends at {predicted:,.1f}, "
                   "so the roofline does not describe it")
    return (f"A curve of the roofline's shape fitted to all the measured points {where}, "
            f"missing them by {misfit:.0%} on average, {verdict}.")


def _batch_one_words(record: dict) -> str:
    """Batch 1 against its reference, and the verdict (:func:`batch_one`)."""
    check = batch_one(record)
    plain = plain_decode(record)
    b1 = check["batch1_tokens_per_s"]
    if plain is not None:
        text = (f"Decoding one sequence in this harness gave **{b1:,.1f} tokens/s**; "
                f"llama.cpp's plain decode of the same model, alone in a fresh context the way "
                f"chapter 1 measures it ({plain['test']}), gave {plain['before']:,.1f} before "
                f"the batches and {plain['after']:,.1f} after, so batch 1 reached "
                f"**{check['share']:.0%}** of the slower.")
        if check["overhead"]:
            return text + (f" That is below {check['threshold']:.0%}: at batch 1 this harness "
                           "measured its own cost per step, not this machine's memory, and the "
                           "batches above it ran through the same harness, so this curve is "
                           "not read against the roofline.")
        return text + (f" At {check['threshold']:.0%} or more, the harness adds little: batch 1 "
                       "measured the machine.")
    text = (f"Decoding one sequence gave **{b1:,.1f} tokens/s**, {check['share']:.0%} of the "
            f"memory bound ({check['reference_tokens_per_s']:,.1f}); this record holds no "
            "plain decode of the same model to set it against.")
    if check["overhead"]:
        return text + (f" Below {check['threshold']:.0%} of the ceiling, the harness's overhead "
                       "cannot be told from the machine's, so this curve is not read against "
                       "the roofline.")
    return text


def sentence(record: dict | None) -> str:
    """The live batched run in a few Markdown sentences (numbers computed, not typed)."""
    if record is None:
        return ("This page was built where llama.cpp could not run, so there is no live batch "
                "curve; run the notebook on your machine to draw yours.")
    df = frame(record)
    r = roof(record)
    top = df.loc[df["tokens_per_s"].idxmax()]
    gemm = record["gemm"]["best_flops_per_s"]
    noisiest = df.loc[(df["stddev"] / df["tokens_per_s"]).idxmax()]
    shape = ("" if batch_one(record)["overhead"] else
             " " + shape_sentence(record) + " " + _fit_words(record))
    return (f"On the machine that built this page ({machine.label(record['machine'])}) "
            f"llama.cpp prefilled the same model at **{r.flops_per_s / 1e9:,.0f} GFLOP/s** "
            f"({r.flops_kind}; a {record['gemm']['n']}-wide float32 matmul through numpy ran at "
            f"{gemm / 1e9:,.0f}, {_times(gemm, r.flops_per_s)}) and the probe read memory "
            f"at **{r.bandwidth_bytes_per_s / 1e9:,.1f} GB/s** (its best pass, before and after "
            f"the runs; the passes varied by {_probe_spread(record):.0%}), a ridge point of "
            f"**{r.ridge:,.1f} FLOP/byte**. " + _batch_one_words(record) + " The best batch, "
            f"{int(top['batch'])}, gave **{top['tokens_per_s']:,.1f} tokens/s** in all. The "
            f"repetitions' standard deviation reached "
            f"{noisiest['stddev'] / noisiest['tokens_per_s']:.0%} of their mean (at batch "
            f"{int(noisiest['batch'])}; the ± column)." + shape +
            (" " + busy(record) if busy(record) else ""))


def who(record: dict | None) -> str:
    """The label a live figure carries."""
    if record is None:
        return "no live measurement (llama.cpp unavailable where this page was built)"
    from .record import bandwidth_label

    return (f"{machine.label(record['machine'])}, llama.cpp on the CPU, bandwidth "
            f"{bandwidth_label(record)}, {record['mode']} plan")


def efficiency(record: dict) -> dict:
    """How close llama.cpp came to each side of the roof: batch 1 (and the plain decode,
    where the record has one) against the memory bound, the best batch against the compute
    bound (one point each, so as noisy as those points)."""
    df = frame(record)
    one = df[df["batch"] == 1].iloc[0]
    best = df.loc[df["tokens_per_s"].idxmax()]
    plain = plain_decode(record)
    return {"memory_fraction": one["tokens_per_s"] / one["memory_bound_tokens_per_s"],
            "plain_memory_fraction": (None if plain is None else
                                      plain["mean"] / one["memory_bound_tokens_per_s"]),
            "compute_fraction": best["tokens_per_s"] / best["compute_bound_tokens_per_s"],
            "best_batch": int(best["batch"])}


def bend_sentence(record: dict | None) -> str:
    """The fitted bend against the prediction, and how far each side of the roof was reached."""
    if record is None:
        return "There is no live batch curve on this page."
    eff = efficiency(record)
    check = batch_one(record)
    if check["overhead"]:
        parts = ["Its batch 1 measured the harness, not the machine (above), so this page reads "
                 "no bend from its batch curve."]
        if eff["plain_memory_fraction"] is not None:
            parts.append(f"llama.cpp's plain decode of the same model reached "
                         f"{eff['plain_memory_fraction']:.0%} of the memory bound.")
        parts.append(f"At its best batch ({eff['best_batch']}) the batched decode reached "
                     f"{eff['compute_fraction']:.0%} of the compute bound.")
        return " ".join(parts)
    knee, misfit, error = _fit(record)
    predicted = predicted_bend(record)
    where = ("never flattens within the batches measured" if math.isinf(knee)
             else f"bends at about **{knee:.1f}**")
    if misfit > error:
        fit = (f"; but that shape misses the measured points by {misfit:.0%} on average, more "
               "than their spread explains, so the bend is a summary of a curve the roofline "
               "does not describe here.")
    elif describes(record):
        fit = ", and the shape fits the points within their spread: the roofline describes it."
    else:
        fit = (", and the shape fits the points within their spread, but the bend is not "
               "where the roofline puts it, so the roofline does not describe the curve.")
    text = (f"Fitted with the roofline's shape, its measured batch curve {where}, where the "
            f"prediction bends at **{predicted:.1f}**" + fit
            + f" At batch 1 llama.cpp reached {eff['memory_fraction']:.0%} of the memory bound, "
            f"and at its best batch ({eff['best_batch']}) {eff['compute_fraction']:.0%} of the "
            f"compute bound.")
    if knee < 0.5 * predicted:
        text += (" Batched decode stops scaling well before the roof of its own kernels: "
                 "llama.cpp's prefill shows this machine can run these matmuls far faster "
                 "than decode at any batch here did, so something the roofline's two "
                 "resources leave out caps it (plausibly the small-batch matmul path, which "
                 "is not the tiled one a long prefill uses).")
    return text


def plan_sentence(plan) -> str:
    """What a plan measures, in words (a :class:`~napkin.measure.batched.BatchPlan` or the
    plan a record saved): batches, steps, repetitions and the single-sequence tests."""
    p = plan if isinstance(plan, dict) else asdict(plan)
    b = [f"{x:,d}" for x in p["batches"]]
    batches = b[0] if len(b) == 1 else ", ".join(b[:-1]) + f" and {b[-1]}"
    return (f"batches {batches}, {p['n_steps']:,d} timed steps each after "
            f"{p['n_prompt']:,d}-token prompts, {p['reps']:,d} repetitions, a plain decode "
            f"of {p['plain_tokens']:,d} tokens before and after, and a "
            f"{p['kernel_tokens']:,d}-token prefill")


def _times(a: float, b: float) -> str:
    """``a`` relative to ``b`` in words: "2.1x less" or "1.3x more"."""
    return f"{b / a:.1f}x less" if a <= b else f"{a / b:.1f}x more"


def closing_note(record: dict | None, essay_gap: float, reference_ridge: float,
                 reference: str = "an H100",
                 essay_test: str = "gpt-oss-120b, pp2048 against tg32, on DGX Spark") -> str:
    """Chapter 3's closing paragraph: this machine's prefill/decode gap and ridge point, both
    from the batched run itself (its prefill rate against llama.cpp's plain decode of the same
    model; never against a batch 1 that measured the harness, :func:`batch_one`), set beside
    the essay's figures for scale only (other models, tests and machines), then its batch
    curve."""
    if record is None:
        return ("llama.cpp could not run where this page was built, so this machine's gap, "
                "ridge point and batch curve are missing; run the notebooks on yours.")
    r = roof(record)
    pp = record["kernel"]["rate"]
    plain, check = plain_decode(record), batch_one(record)
    label = machine.label(record["machine"])
    scale = (f"where the essay has {essay_gap:.0f}x ({essay_test}): another model, test and "
             "machine, shown for scale only.")
    if busy(record):
        gap = (f"The machine that built this page ({label}) was busy with other work while it "
               "ran (above), so this page quotes no prefill/decode gap from it.")
    elif plain is not None:
        gap = (f"The machine that built this page ({label}) prefilled "
               f"**{pp['tokens_per_s'] / plain['mean']:.1f}x** faster than it decoded in the run "
               f"above ({pp['test']} against {plain['test']}, llama.cpp's plain decode of the "
               f"same model, the mean of its two runs), " + scale)
    elif not check["overhead"]:
        gap = (f"The machine that built this page ({label}) prefilled "
               f"**{pp['tokens_per_s'] / check['batch1_tokens_per_s']:.1f}x** faster than it "
               f"decoded in the run above ({pp['test']} against batch-1 decode of the same "
               "model), " + scale)
    else:
        gap = (f"The machine that built this page ({label}) gives no prefill/decode gap here: "
               "its batch 1 may have measured the harness (above), and the record holds no "
               "plain decode to divide by.")
    return (gap + f" Its ridge point is **{r.ridge:.1f} FLOP/byte** "
            f"({r.flops_kind}, over the probed bandwidth: a rate reached, not a datasheet peak), "
            f"where {reference}'s datasheet gives {reference_ridge:.0f}. " + bend_sentence(record))
