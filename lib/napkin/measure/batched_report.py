"""Batched decode against the roofline: the prediction, where the curve bends, the prose.

Reads the records :func:`napkin.measure.batched.run` makes (a plain dict, as saved
under ``results/``); nothing here runs llama.cpp.
"""

from __future__ import annotations

import pandas as pd

from . import machine

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


def bend(batches, tokens_per_s) -> float:
    """Where a throughput curve turns from rising to flat, as a batch size.

    The two-line reading of the roofline: the line through the batch-1 point rising in
    proportion to batch (memory-bound: one weight read per step, whatever the batch)
    meets the plateau (the highest throughput reached) at ``max / rate(1)``.
    """
    df = pd.DataFrame({"batch": list(batches), "tps": list(tokens_per_s)})
    if df.empty or (df["tps"] <= 0).any():
        raise ValueError("need positive throughputs to find the bend")
    one = df[df["batch"] == 1]
    if one.empty:
        raise ValueError("the curve needs a batch-1 point to find its bend")
    return float(df["tps"].max() / one["tps"].iloc[0])


def predicted_bend(record: dict) -> float:
    """The batch at which the prediction turns compute-bound (this machine's ridge)."""
    from ..roofline import batch_to_ridge

    m = model_of(record)
    context = record["points"][0]["context_tokens"]
    return batch_to_ridge(m, roof(record).ridge, context)


def sentence(record: dict | None) -> str:
    """One Markdown sentence on the live batched run (numbers computed, not typed)."""
    if record is None:
        return ("This page was built where llama.cpp could not run, so there is no live batch "
                "curve; run the notebook on your machine to draw yours.")
    df = frame(record)
    r = roof(record)
    measured, predicted = bend(df["batch"], df["tokens_per_s"]), predicted_bend(record)
    top = df.loc[df["tokens_per_s"].idxmax()]
    gemm = record["gemm"]["best_flops_per_s"]
    return (f"On the machine that built this page ({machine.label(record['machine'])}) "
            f"llama.cpp prefilled the same model at **{r.flops_per_s / 1e9:,.0f} GFLOP/s** "
            f"({r.flops_kind}; a {record['gemm']['n']}-wide float32 matmul through numpy ran at "
            f"{gemm / 1e9:,.0f}, {_times(gemm, r.flops_per_s)}) and the probe read memory "
            f"at **{r.bandwidth_bytes_per_s / 1e9:,.1f} GB/s**, a ridge point of "
            f"**{r.ridge:,.1f} FLOP/byte**. Decoding one sequence gave "
            f"**{df['tokens_per_s'].iloc[0]:,.0f} tokens/s**; the best batch, "
            f"{int(top['batch'])}, gave **{top['tokens_per_s']:,.0f} tokens/s** in all. The "
            f"measured curve bends at a batch of about **{measured:,.1f}**; the roofline "
            f"predicts **{predicted:,.1f}**.")


def who(record: dict | None) -> str:
    """The label a live figure carries."""
    if record is None:
        return "no live measurement (llama.cpp unavailable where this page was built)"
    from .record import bandwidth_label

    return (f"{machine.label(record['machine'])}, llama.cpp on the CPU, bandwidth "
            f"{bandwidth_label(record)}")


def efficiency(record: dict) -> dict:
    """How close llama.cpp came to each side of the roof: batch 1 against the memory bound,
    the best batch against the compute bound. The measured bend sits where the prediction
    does, moved by the ratio of the two."""
    df = frame(record)
    one = df[df["batch"] == 1].iloc[0]
    best = df.loc[df["tokens_per_s"].idxmax()]
    return {"memory_fraction": one["tokens_per_s"] / one["memory_bound_tokens_per_s"],
            "compute_fraction": best["tokens_per_s"] / best["compute_bound_tokens_per_s"],
            "best_batch": int(best["batch"])}


def bend_sentence(record: dict | None) -> str:
    """Where the measured curve bends against the prediction, and what that says."""
    if record is None:
        return "There is no live batch curve on this page."
    df = frame(record)
    measured = bend(df["batch"], df["tokens_per_s"])
    predicted = predicted_bend(record)
    eff = efficiency(record)
    text = (f"Its measured batch curve bends at a batch of about **{measured:.1f}**, where the "
            f"roofline predicts **{predicted:.1f}**. At batch 1 llama.cpp reached "
            f"{eff['memory_fraction']:.0%} of the memory bound, and at its best batch "
            f"({eff['best_batch']}) {eff['compute_fraction']:.0%} of the compute bound; the "
            f"bend moves from the prediction by the ratio of those two fractions.")
    if measured < 0.5 * predicted:
        text += (" Batched decode stops scaling well before the roof of its own kernels: "
                 "llama.cpp's prefill shows this machine can run these matmuls far faster "
                 "than decode at any batch here did, so something the roofline's two "
                 "resources leave out caps it (plausibly the small-batch matmul path, which "
                 "is not the tiled one a long prefill uses).")
    return text


def _times(a: float, b: float) -> str:
    """``a`` relative to ``b`` in words: "2.1x less" or "1.3x more"."""
    return f"{b / a:.1f}x less" if a <= b else f"{a / b:.1f}x more"


def closing_note(record: dict | None, pp_record: dict | None, essay_gap: float,
                 reference_ridge: float, reference: str = "an H100") -> str:
    """Chapter 3's closing paragraph: this machine's prefill/decode gap (from a
    :func:`napkin.measure.live` record), its ridge point, and where its batch curve bends."""
    from ..phases import live_ratio

    gap = live_ratio(pp_record)
    if record is None or gap.empty:
        return ("llama.cpp could not run where this page was built, so this machine's gap, "
                "ridge point and batch curve are missing; run the notebooks on yours.")
    r = roof(record)
    g = gap.iloc[0]
    return (f"The machine that built this page ({g['machine']}) prefills **{g['ratio']:.1f}x** "
            f"faster than it decodes ({g['protocol']}), against the essay's {essay_gap:.0f}x "
            f"on DGX Spark. Its ridge point is **{r.ridge:.1f} FLOP/byte** ({r.flops_kind}, "
            f"over the probed bandwidth), against {reference_ridge:.0f} for {reference}. "
            + bend_sentence(record))
