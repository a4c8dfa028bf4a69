# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     notebook_metadata_filter: kernelspec,jupytext
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Speculative decoding: spending the arithmetic decode leaves idle

# %% [markdown]
# ```{admonition} In one minute
# :class: tip
# - Speculative decoding lets one read of the weights emit several tokens. With a draft like
#   an EAGLE-3 head, priced by its share of the weights with no fixed cost per pass, and a
#   first drafted token accepted {glue:text}`default_acceptance:.0%` of the time (DeepSeek's
#   report), one stream decodes at most {glue:text}`s_b1:.2f` times as fast on each of the
#   chapter's four machines ([the machines](#sec-spec-machines)): a ceiling at those
#   assumptions. Chapter 9's calibrated step model, which charges every pass its fixed
#   costs, gives {glue:text}`cal_b1:.2f`x on an H100 with the same head and acceptance.
#   SGLang measured {glue:text}`sg3_measured:.2f`x with EAGLE-3 at a batch of
#   {glue:text}`sg3_batch:d`, the row the chapter's EAGLE-3 acceptance is fitted to, so a
#   reading beside it, not a check ([the check](#sec-spec-check)).
# - It pays only while batching has not used up the arithmetic: decoding more sequences at
#   once makes the speedup fall, and from a batch of at most {glue:text}`mac_even:d` on an M2 Ultra,
#   {glue:text}`h100_even:d` on an H100 and {glue:text}`spark_even:d` on a DGX Spark
#   (llama.cpp's measured roofs) speculation makes decoding slower
#   ([the table](#sec-spec-machines)).
# - Against {glue:text}`n_test:d` held-out published speedups the calibrated model is off by
#   x{glue:text}`err_median:.2f` for the median row and x{glue:text}`err_p90:.2f` for nine in
#   ten; per EAGLE sweep from x{glue:text}`vl_median:.2f` (vLLM, where the plain roofline does
#   {glue:md}`vl_roof_word`) to x{glue:text}`sg_median:.2f` (SGLang on an H100). Acceptance is fitted at batch
#   {glue:text}`fit_batch:d`, so these rows test how the speedup falls with batch
#   ([the check](#sec-spec-check)).
# - Free drafting from the prompt (prompt lookup) accepts
#   {glue:text}`pld_low:.2f`-{glue:text}`pld_high:.2f` tokens a cycle in the published
#   averages, which is at most {glue:text}`pld_spark_low:.1f`-{glue:text}`pld_spark_high:.1f`x
#   for one stream (drafting taken as free), {glue:md}`pld_same`
#   ([prompt lookup on each machine](#sec-spec-buying)).
# ```
#
# **What this chapter does.** The essay's argument is that decode leaves a chip's arithmetic
# idle: every token needs every weight, so a step waits on memory while the tensor cores
# wait on the step. Speculative decoding spends that idle arithmetic
# {cite}`leviathan2023speculative` {cite}`chen2023speculative`. Something cheap drafts a few
# tokens (a small model, EAGLE's single layer {cite}`li2024eagle`, Medusa's heads
# {cite}`cai2024medusa`, DeepSeek-V3's multi-token prediction {cite}`deepseek2024v3`), the
# model checks all of them in one step that reads its weights once, and the tokens it agrees
# with are kept. It is the biggest lever on single-stream decode that the essay leaves out,
# and it bends the essay's buying advice, because it pays where arithmetic is idle and stops
# paying once batching has used the arithmetic up.
#
# Speculation *pays* while it makes decoding faster than decoding without it, and the batch
# is how many sequences a machine decodes together. At batch 1 the arithmetic is idle and
# speculation pays most; as the batch grows, each step has more real tokens to compute and
# fewer spare cycles for drafted ones, so the speedup falls. "Stops paying at a batch of
# $B$" means: from $B$ sequences at once upward, speculation makes decoding slower, and a
# server that runs that many should turn it off.
#
# This chapter prices a draft-and-verify cycle with chapter 9's calibrated step model and
# checks the result against published speedups it was not fitted on: on
# {glue:text}`n_test:d` held-out rows of three published sweeps, its median error is a
# factor of x{glue:text}`err_median:.2f` (x{glue:text}`err_p90:.2f` for nine rows in ten),
# against x{glue:text}`roof_median:.2f` for the plain roofline. On the essay's machines it
# says where speculation stops paying: with llama.cpp's measured roofs, at a batch of
# {glue:text}`mac_even:d` on an M2 Ultra, {glue:text}`h100_even:d` on an H100 and
# {glue:text}`spark_even:d` on a DGX Spark. On an H100 under a serving engine, priced with
# an EAGLE-3 head, it does not stop paying before its memory is full; that is an
# extrapolation, and the published
# sweeps do not bear it out: {glue:md}`eagle_below`. The one thing random weights can
# measure, what a
# verify step costs, is measured on the machine that builds the page.
#
# **Why it matters.** A single stream that speculates is no longer bounded by bandwidth over
# model size: one read of the weights can emit several tokens. Whether it does depends on
# how many tokens a machine can check before its step turns compute-bound, which is the
# ridge point of chapter 3 in tokens.

# %% tags=["hide-input"]
import os

import numpy as np
import pandas as pd

import napkin
from napkin import catalog, decide, errata, speculative, tables
from napkin.speculative import figures as charts
from napkin.measure import verify
from napkin.predict import calibrated, engine
from napkin.predict.step import cost, decode_work
from napkin.prose import glue, glue_all, glue_markdown
from napkin.speculative import machines, published

cal = calibrated()
checked = published.check(cal)
err = published.errors(checked).set_index("sweep")
SG, VL, DS = published.SWEEPS
glue_all({
    "n_test": int(err.loc["all", "n"]),
    "err_median": err.loc["all", "median"],
    "err_p90": err.loc["all", "p90"],
    "roof_median": err.loc["all", "roofline_median"],
})
for key, sweep in (("sg", SG), ("vl", VL), ("ds", DS)):
    glue(f"{key}_n", int(err.loc[sweep.name, "n"]))
    glue(f"{key}_median", err.loc[sweep.name, "median"])
glue_all({
    "vl_roof_median": err.loc[VL.name, "roofline_median"],
    "fit_batch": SG.fit_batch,
})
vl_roof = err.loc[VL.name, "roofline_median"] / err.loc[VL.name, "median"]
glue_markdown("vl_roof_word", "better" if vl_roof < 0.995 else
              "as well" if vl_roof < 1.005 else "worse")
#: the largest batch any published sweep measured: beyond it a break-even is extrapolated
top_measured = int(checked["batch"].max())
glue("top_measured", top_measured)

# the essay's machines: an EAGLE-3 head's cost, DeepSeek's first-token acceptance, its chain
llama8 = engine("H100 SXM", "Llama-3.1-8B", weights="BF16", kv="bf16")
eagle3 = speculative.draft.eagle3_for("Llama-3.1-8B")
eagle_share = speculative.draft.weight_share(llama8, eagle3)
ACCEPTANCE, K, SHARE = DS.acceptance[0], DS.k, round(eagle_share, 2)
summary = machines.summary(ACCEPTANCE, SHARE, K)
by = summary.set_index("machine")
for key, name in (("mac", "M2 Ultra"), ("h100", "H100 SXM"), ("spark", "DGX Spark"),
                  ("rtx", "RTX 4090")):
    glue(f"{key}_even", int(by.loc[name, "break_even_llama"]))
glue_all({
    "mac_share": by.loc["M2 Ultra", "decode_share"],
    "h100_share": by.loc["H100 SXM", "decode_share"],
    "s_b1": by.loc["DGX Spark", "speedup_b1"],
    "few": 4,
    "mac_b4": by.loc["M2 Ultra", "speedup_b4"],
    "spark_b4": by.loc["DGX Spark", "speedup_b4"],
})
beyond = by[by["break_even_llama"] > top_measured]
glue_markdown("extrapolated", " and ".join(
    f"{int(b):,} on the {name} ({b / top_measured:.1f} times {top_measured})"
    for name, b in beyond["break_even_llama"].items()))

# prompt lookup: its own published acceptance lengths, Spec-Bench's draft length
lookup = published.prompt_lookup()
PLD_K = int(speculative.draft.configured("prompt lookup (PLD)", "any", "draft_tokens"))
pld_low, pld_high = (lookup["acceptance_length_tokens"].min(),
                     lookup["acceptance_length_tokens"].max())
pld = machines.prompt_lookup((pld_low, pld_high), PLD_K).set_index(
    ["machine", "tokens_per_cycle"])
glue_all({
    "pld_low": pld_low,
    "pld_high": pld_high,
    "pld_n": len(lookup),
    "pld_k": PLD_K,
})
pld_b1 = pld["speedup_b1"]
glue_all({
    "pld_mac_low": pld_b1[("M2 Ultra", pld_low)],
    "pld_mac_high": pld_b1[("M2 Ultra", pld_high)],
    "pld_spark_low": pld_b1[("DGX Spark", pld_low)],
    "pld_spark_high": pld_b1[("DGX Spark", pld_high)],
    "pld_mac_b4_low": pld.loc[("M2 Ultra", pld_low), "speedup_b4"],
    "pld_mac_b4_high": pld.loc[("M2 Ultra", pld_high), "speedup_b4"],
    "pld_spark_b4_high": pld.loc[("DGX Spark", pld_high), "speedup_b4"],
})
same = np.allclose(pld_b1.xs("M2 Ultra"), pld_b1.xs("DGX Spark"), rtol=0.01)
glue_markdown("pld_same", ("the same" if same else "not the same") + " on the M2 Ultra as on "
              "the DGX Spark on llama.cpp's measured roofs")

# %% tags=["hide-input"]
held = checked[(checked["sweep"] == SG.name) & (checked["split"] == "test")]
sg3 = checked[(checked["sweep"] == SG.name) &
              (checked["method"] == "EAGLE-3 (in SGLang)")].set_index("batch")
sg_a = float(sg3["acceptance"].iloc[0])
serving_even = speculative.break_even(llama8, eagle3, speculative.position_rates(sg_a, SG.k),
                                      SG.k, calibration=cal)
h100_full = llama8.max_sequences(speculative.DEPTH)
assert serving_even is None  # the prose: it does not stop paying before memory is full
# what the sweeps measured: the first batch at which each older-EAGLE sweep fell below one
lows = []
for method in ("EAGLE (in SGLang)", "EAGLE (in vLLM)"):
    rows = checked[checked["method"] == method].set_index("batch")
    below = rows[rows["measured"] < 1]
    assert len(below), f"{method} no longer measures a batch below one: rewrite eagle_below"
    b, r = below.index[0], below.iloc[0]
    lows.append(f"from a batch of {b} ({r['measured']:.2f}x, where the model predicts "
                f"{r['predicted']:.2f}x)")
vl_chip = checked[checked["method"] == "EAGLE (in vLLM)"]["chip"].iloc[0]
glue_markdown("eagle_below", (
    f"the same SGLang sweep on one H100 measured speculation with the older EAGLE head slower "
    f"than plain decoding {lows[0]}, and the vLLM sweep (read as an {vl_chip}) {lows[1]}, "
    f"while EAGLE-3's own rows in SGLang stay above one (lowest {sg3['measured'].min():.2f}x)"))
glue_all({
    "h100_full": h100_full,
    "h100_full_times": h100_full / top_measured,
    "default_acceptance": ACCEPTANCE,
    # the box's batch-1 figure beside what pays each pass its fixed costs, and what was measured
    "cal_b1": speculative.speedup(llama8, eagle3, speculative.position_rates(ACCEPTANCE, K), K,
                                   batch=1, calibration=cal),
    "sg3_batch": int(sg3.index[0]),
    "sg3_measured": sg3["measured"].iloc[0],
})

# %% [markdown]
# (sec-spec-cycle)=
# ## A cycle, in three equations
#
# A draft proposes $k$ tokens. The target runs one step over them and the last token it had
# already accepted, $k + 1$ tokens per sequence, and keeps the drafted tokens up to the
# first it disagrees with, plus one of its own (the correction, or the next token when it
# agreed with all $k$). If the $i$-th drafted token is accepted with probability $a_i$ when
# the ones before it were, a cycle yields on average
#
# ```{math}
# :label: eq-spec-tau
# \tau = 1 + a_1 + a_1 a_2 + \dots + a_1 a_2 \cdots a_k
# ```
#
# tokens: one at worst, $k + 1$ at best. Papers report $\tau$ itself as the *acceptance
# length*. The textbook simplification gives every position one rate $a$, so that
# $\tau = (1 - a^{k+1}) / (1 - a)$; but a token further from what the target has confirmed
# is a guess built on guesses, and where papers publish acceptance by position it falls.
# This chapter takes $a_1$ from the papers and lets later positions fall as EAGLE's Table 2
# {cite}`li2024eagle` measures them ([the table below](#sec-spec-positions)). A cycle costs
# the draft's passes and one verify step, each priced by the step
# model of chapter 9 (equation {eq}`eq-val-step`) for $B$ sequences at a depth of $d$ cached
# tokens:
#
# ```{math}
# :label: eq-spec-cycle
# t_{\text{cycle}}(B) = p\,t_{\text{draft}}(B) + t_{\text{step}}(B, d, k + 1)
# ```
#
# with $p = k$ passes for a draft that proposes one token a pass and $p = 1$ for Medusa's
# heads, which propose all at once. The speedup over plain decoding, which pays one step
# $t_{\text{step}}(B, d, 1)$ per token, is
#
# ```{math}
# :label: eq-spec-speedup
# S(B) = \frac{\tau\; t_{\text{step}}(B, d, 1)}{t_{\text{cycle}}(B)}
# ```
#
# and it is the same number for one stream's latency and for a batch's throughput at a fixed
# batch, which is how engines report it. Most of what the hardware decides is in one ratio,
# $t_{\text{step}}(B, d, k+1) / t_{\text{step}}(B, d, 1)$: while the step reads more bytes
# than it can compute on, checking $k + 1$ tokens costs what checking one does, and $S$ is
# close to $\tau$; once $(k+1)\,B$ tokens cross the ridge, each extra token costs its full
# share of arithmetic and $S$ falls towards $\tau / (k + 1)$ or lower, below one. Acceptance is a
# property of the draft and the text, not of the chip, so this chapter takes it from the
# papers.

# %% tags=["hide-input"]
positions = speculative.acceptance.position_table()
glue_all({
    "eagle_models": int(positions["models"].max()),
    "decay_2": positions.set_index("draft_position").loc[2, "relative"],
    "decay_5": positions.set_index("draft_position").loc[5, "relative"],
    "ds_a_low": DS.acceptance[0],
    "ds_a_high": DS.acceptance[1],
})
medusa = speculative.acceptance.by_position()
medusa = medusa[(medusa["method"] == "Medusa-1 heads") &
                (medusa["target_model"] == "Vicuna-7B-v1.3")].set_index("draft_position")
glue_all({
    "medusa_first": medusa.loc[1, "acceptance_low"],
    "medusa_last": medusa.loc[5, "acceptance_low"],
})

# %% [markdown]
# (sec-spec-positions)=
# EAGLE's paper publishes acceptance by position for {glue:text}`eagle_models:d` models
# (greedy decoding, MT-bench): the second drafted token is accepted
# {glue:text}`decay_2:.0%` as often as the first, the fifth {glue:text}`decay_5:.0%` as often
# (each the median over the models of the position's rate over the first's). The other
# drafts this chapter prices publish less: DeepSeek-V3's report gives the acceptance of its
# one MTP token,
# {glue:text}`ds_a_low:.0%`-{glue:text}`ds_a_high:.0%` {cite}`deepseek2024v3`, so positions
# past the first borrow EAGLE's fall; Medusa's repository publishes each head's own top-1
# accuracy, {glue:text}`medusa_first:.0%` for the first head and
# {glue:text}`medusa_last:.0%` for the fifth on Vicuna 7B, which is not conditional on the
# heads before it and is not used here.

# %% tags=["hide-input"]
tables.styled(positions, "table-spec-positions", {
    "draft_position": "Drafted token", "models": "Models", "low": "Lowest rate",
    "median": "Median rate", "high": "Highest rate", "relative": "Median over the first"},
    formats={"low": "{:.2f}", "median": "{:.2f}", "high": "{:.2f}", "relative": "{:.2f}"})

# %% [markdown]
# In code, the cycle is `napkin.speculative.cycle`, the calibrated step of chapter 9 twice
# and the draft's passes:
#
# ```{literalinclude} ../lib/napkin/speculative/cost.py
# :language: python
# :pyobject: cycle
# ```

# %% tags=["hide-input"]
deepseek = engine("H200", "DeepSeek-V3", n_chips=8, weights="FP8", kv="bf16")
mtp_share = speculative.draft.weight_share(deepseek, speculative.mtp())
glue_all({
    "eagle_share": eagle_share,
    "eagle_share_full": speculative.draft.weight_share(llama8, speculative.eagle(3)),
    "mtp_share": mtp_share,
    "draft_vocab": eagle3.draft_vocab,
    "target_vocab": catalog.config("Llama-3.1-8B")["vocab_size"],
    "mac_family_share": machines.machine("M2 Ultra").fraction_quartiles[1],
})
arith = {m: machines.machine(m).roof(machines.WEIGHTS)[0].upper() for m in machines.MACHINES}
def chip_list(names):
    return names[0] if len(names) == 1 else ", the ".join(names[:-1]) + " and the " + names[-1]
glue_markdown("peak_arith", "; ".join(
    f"{a} on the {chip_list([m for m in machines.MACHINES if arith[m] == a])}"
    + (" (llama.cpp's CUDA kernels multiply quantized weights as 8-bit integers)"
       if a == "INT8" else "") for a in dict.fromkeys(arith.values())))
assert arith["H100 SXM"] == "INT8", "the FP16 comparison below assumes INT8 roofs on NVIDIA"
assert cal.bandwidth_efficiency == cal.compute_efficiency
glue("cal_share", cal.bandwidth_efficiency)

# %% [markdown]
# (sec-spec-drafting)=
# ## What drafting costs
#
# A draft model is a smaller model on the same chip, priced like the target. A draft head
# is cheaper still: EAGLE reads one decoder layer like the target's, a matrix that fuses the
# target's features with the token's embedding, and an output head over the vocabulary;
# DeepSeek-V3's MTP module is one more of its own layers. Built from the target's config,
# `napkin.speculative.draft.head_params` counts them:
#
# ```{literalinclude} ../lib/napkin/speculative/draft.py
# :language: python
# :pyobject: head_params
# ```
#
# The output head is where EAGLE-3 saves: its heads score a reduced draft vocabulary, mapped
# back to the target's tokens by a table. The configuration the EAGLE authors train their
# Llama 3.1 8B head with {cite}`eagle3_llama31_config` gives it
# {glue:text}`draft_vocab:,d` tokens against the target's {glue:text}`target_vocab:,d`, so
# the head reads {glue:text}`eagle_share:.1%` of the target's weights per pass
# ({glue:text}`eagle_share_full:.1%` with a full-vocabulary output head). DeepSeek-V3's MTP
# module, one layer of a mixture of experts, reads {glue:text}`mtp_share:.1%` of what a
# one-token step of the target reads. A memory-bound draft step costs that share of a plain
# step, and the chart below lets it vary.
#
# (sec-spec-verify)=
# ## What a verify step costs
#
# Four machines, the essay's M2 Ultra, DGX Spark and H100 and a consumer card beside them (an
# RTX 4090), each running Llama 3.1 8B at Q4_K the way chapter 8 prices a
# local machine (llama.cpp on Metal for the Mac, on CUDA for the others), under two roofs:
# the spec sheet's peaks, and llama.cpp's measured roofs. The spec sheet's arithmetic peak is
# the one llama.cpp multiplies Q4_K weights in, as chapter 8 holds these machines to:
# {glue:md}`peak_arith`. The measured roof's bandwidth is
# the share of its ceiling each machine's own published llama.cpp decode runs reach (chapter
# 1's Llama-2-7B at Q4_0, a model of about this size; the table below says which runs), not
# chapter 8's family median: the M2 Ultra's own runs reach {glue:text}`mac_share:.0%` of its
# bandwidth where its family's median is {glue:text}`mac_family_share:.0%`. The H100's one
# run is the scoreboard row whose variant is disputed (chapter 1): read as an SXM card it
# reaches {glue:text}`h100_share:.0%`, and the tokens per second it measured, which is what
# the roof uses, is the same either way. The measured roof's arithmetic is the FLOP/s
# llama.cpp's published prefill runs reach, a 512-token matrix product; a verify step of a
# few tokens runs llama.cpp's small-batch kernels instead, which the book has no published
# measurement of on Metal or CUDA (the live section below measures them on the CPU of the
# machine that builds the page).
# So these roofs are the most a short verify step could get: where small-batch kernels fall
# short, a step turns compute-bound sooner than drawn. Chapter 9's calibrated model is kept
# for the serving engines it was fitted on: its one share of both peaks
# ({glue:text}`cal_share:.0%`) and its fixed costs per layer and per sequence were fitted to
# serving engines on datacenter chips, while llama.cpp on these machines reaches shares of
# its own, measured (the M2 Ultra's decode, {glue:text}`mac_share:.0%` of its bandwidth).

# %% tags=["hide-input"]
cost_rows = charts.verify_cost_rows()
ridge = {(m, v): machines.ridge_tokens(m, v) for m in machines.MACHINES for v in machines.VIEWS}
glue_all({
    "ridge_mac": ridge[("M2 Ultra", "llama.cpp")],
    "ridge_spark": ridge[("DGX Spark", "llama.cpp")],
    "ridge_4090": ridge[("RTX 4090", "llama.cpp")],
    "ridge_h100": ridge[("H100 SXM", "llama.cpp")],
    "ridge_h100_peak": ridge[("H100 SXM", "peak")],
    "ridge_spark_peak": ridge[("DGX Spark", "peak")],
    "ridge_mac_peak": ridge[("M2 Ultra", "peak")],
})
derived = [m for m in machines.MACHINES
           if "derived" in machines.machine(m).roof(machines.WEIGHTS)[2]]
glue_markdown("derived_peaks", " and ".join(derived))
glue_all({
    "ridge_h100_fp16": machines.ridge_tokens("H100 SXM", "peak", arithmetic="fp16"),
    "ridge_spark_fp16": machines.ridge_tokens("DGX Spark", "peak", arithmetic="fp16"),
})
at16 = cost_rows[(cost_rows["tokens"] == 16) &
                 (cost_rows["view"] == "llama.cpp")].set_index("machine")["relative"]
glue_all({
    "mac_16": at16["M2 Ultra"],
    "n16": 16,
    "spark_16": at16["DGX Spark"],
})

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spec-verify-cost",
    chart=charts.verify_costs(cost_rows, "What checking more tokens costs"),
    caption="Time of one step of Llama 3.1 8B (Q4_K) that checks the given number of tokens "
            "of one sequence, in plain one-token steps, for each machine; a menu picks the "
            "roofs.",
    source="napkin.speculative.verify_cost (napkin.predict.step) with data/hardware_specs.csv "
           "and llama.cpp's measured roofs: each machine's own published decode runs and "
           "prefill runs (napkin.speculative.machines, napkin.buying).",
)

# %% [markdown]
# Every line is flat, then rises in proportion to the tokens: the ridge point of chapter 3
# counted in tokens of this model (under llama.cpp's roofs, the latest it could turn; see
# above). With llama.cpp's measured roofs a step turns
# compute-bound at about {glue:text}`ridge_mac:.0f` tokens on the M2 Ultra,
# {glue:text}`ridge_h100:.0f` on the H100 (llama.cpp's CUDA kernels reach a small share of
# its tensor cores), {glue:text}`ridge_spark:.0f` on the DGX Spark and
# {glue:text}`ridge_4090:.0f` on the RTX 4090; at the spec sheet's peaks, at
# {glue:text}`ridge_mac_peak:.0f`, {glue:text}`ridge_h100_peak:.0f` and
# {glue:text}`ridge_spark_peak:.0f` for the Mac, the H100 and the Spark (the peaks of the
# {glue:md}`derived_peaks` are derived, not stated by their makers; held to their FP16
# tensor peaks instead of INT8, the H100 would turn at {glue:text}`ridge_h100_fp16:.0f` and
# the Spark at {glue:text}`ridge_spark_fp16:.0f`). So a step that
# checks {glue:text}`n16:d` tokens costs {glue:text}`mac_16:.1f` plain steps on the Mac and
# {glue:text}`spark_16:.1f` on the Spark. A batch multiplies the tokens in a step: $B$
# sequences checking $k + 1$ tokens each reach the ridge $B$ times sooner.
#
# (sec-spec-published-cycles)=
# ## What published cycles cost
#
# The published numbers do not measure one thing. Papers time one stream against plain
# Hugging Face decoding; engines time their own throughput at a fixed batch with and
# without speculation; vendors sometimes change the engine and the number format at the same
# time. `data/speculative_published.csv` says which for every row, and no number below mixes
# two kinds:

# %% tags=["hide-input"]
tables.styled(published.definitions(), "table-spec-definitions",
              {"speedup_definition": "What the speedup compares", "rows": "Rows"})

# %% tags=["hide-input"]
one = published.batch1_cycles()
glue_all({
    "n_one": len(one),
    "one_median": one["cycle_relative"].median(),
    "one_q25": one["cycle_relative"].quantile(0.25),
    "one_q75": one["cycle_relative"].quantile(0.75),
})
edge = published.edge_llm()
glue_all({
    "edge_b1_low": edge["cycle_relative_b1"].min(),
    "edge_b1_high": edge["cycle_relative_b1"].max(),
    "edge_b8_low": edge["cycle_relative_b8"].min(),
    "edge_b8_high": edge["cycle_relative_b8"].max(),
    "edge_n": len(edge),
    "edge_batch": 8,
})

# %% [markdown]
# Where a row states both the acceptance length and the speedup, their ratio
# $\tau / S$ is what a cycle cost in plain steps, with no model involved. Over the
# {glue:text}`n_one:d` one-stream rows of the EAGLE papers {cite}`li2024eagle`
# {cite}`li2024eagle2` {cite}`li2025eagle3` and Spec-Bench {cite}`spec_bench`, a cycle cost
# {glue:text}`one_median:.2f` plain steps for the median row (half of them between
# {glue:text}`one_q25:.2f` and {glue:text}`one_q75:.2f`), though many of those methods draft
# a tree of candidates and verify all of it in one step: at batch 1 on a GPU, checking many
# tokens is nearly free, as the roofline says. NVIDIA's TensorRT Edge-LLM
# {cite}`trt_edge_llm_perf` reports the same models at batch 1 and
# {glue:text}`edge_batch:d` on a Jetson AGX Thor;
# over its {glue:text}`edge_n:d` pairs the cycle cost rises from
# {glue:text}`edge_b1_low:.1f`-{glue:text}`edge_b1_high:.1f` plain steps at batch 1 to
# {glue:text}`edge_b8_low:.1f`-{glue:text}`edge_b8_high:.1f` at batch
# {glue:text}`edge_batch:d`, with the same
# acceptance length: what the roofline reads as batching using up the arithmetic the draft's
# tokens were checked with, though the book holds no sourced roof for that chip to test it
# (the cost at batch 1 also differs by weight format, which points at kernels as much), so
# the model does not predict these rows.

# %% tags=["hide-input"]
tables.styled(edge, "table-spec-edge-llm", {
    "target_model": "Model (format)", "release": "Release",
    "acceptance_length_tokens_b1": "Tokens per cycle, batch 1",
    "acceptance_length_tokens_b8": "batch 8", "speedup_b1": "Speedup, batch 1",
    "speedup_b8": "batch 8", "cycle_relative_b1": "Cycle in plain steps, batch 1",
    "cycle_relative_b8": "batch 8"}, formats={
    "acceptance_length_tokens_b1": "{:.2f}", "acceptance_length_tokens_b8": "{:.2f}",
    "speedup_b1": "{:.2f}", "speedup_b8": "{:.2f}", "cycle_relative_b1": "{:.2f}",
    "cycle_relative_b8": "{:.2f}"})

# %% tags=["hide-input"]
glue_all({
    "sg_k": SG.k,
    "vl_k": VL.k,
    "ds_k": DS.k,
    "sg_top": int(SG.rows()["batch"].max()),
    "vl_top": int(VL.rows()["batch"].max()),
})
glue_markdown("ds_batches", " and ".join(f"{b:.0f}" for b in sorted(DS.rows()["batch"])))

# %% [markdown]
# (sec-spec-check)=
# ## The model against published speedups
#
# Three published sweeps state what ran precisely enough to predict: the chip, the target
# model, the draft and how many tokens it proposes. The EAGLE-3 paper {cite}`li2025eagle3`
# ran EAGLE and EAGLE-3 heads for Llama 3.1 8B inside SGLang on one H100 (Table 3, a chain
# of {glue:text}`sg_k:d` drafted tokens, batches up to {glue:text}`sg_top:d`) and inside vLLM
# (Table 5, a chain of {glue:text}`vl_k:d`, batches up to {glue:text}`vl_top:d`, on an RTX
# 3090 as its text says; a caption says A100); SGLang's documentation
# {cite}`sglang_deepseek_mtp` reports DeepSeek-V3 with its MTP module on eight H200 at
# batches {glue:md}`ds_batches` ({glue:text}`ds_k:d` drafted tokens). None states an
# acceptance rate. For the two EAGLE sweeps the first drafted token's acceptance is fitted,
# per method, to the row at batch {glue:text}`fit_batch:d` (later positions falling as
# EAGLE's do) and every other batch is held out; for DeepSeek-V3 it is the
# {glue:text}`ds_a_low:.0%`-{glue:text}`ds_a_high:.0%` DeepSeek's report gives for the MTP
# module, and nothing at all is fitted. The step model's own parameters are chapter 9's,
# fitted to other rows. The split was chosen before any prediction was made.
#
# Fitting at batch {glue:text}`fit_batch:d` pins each EAGLE line's level there, so the
# held-out EAGLE rows do not test whether the model knows the speedup; they test how it falls
# as the batch grows. Errors are factors, as in chapter 9: how many times too large or too
# small a prediction is, whichever way it errs; a speed bias above one means the model
# promised more speedup than was measured for the median row. The headline
# x{glue:text}`err_median:.2f` pools three sweeps that the model does not fit equally well,
# so the table gives each: the vLLM sweep's {glue:text}`vl_n:d` rows are the closest
# (x{glue:text}`vl_median:.2f`), and there the plain roofline, with no fitted efficiency at
# all, does {glue:md}`vl_roof_word` (x{glue:text}`vl_roof_median:.2f`); SGLang's {glue:text}`sg_n:d` rows on the H100 are
# farther (x{glue:text}`sg_median:.2f`), and DeepSeek-V3's {glue:text}`ds_n:d` rows farther
# still (x{glue:text}`ds_median:.2f`).

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spec-published",
    chart=charts.published(checked, "Published speedups against the model"),
    caption="Published speedups of speculative decoding at each batch (points) and the "
            "calibrated step model's and the plain roofline's predictions (lines); a menu "
            "picks the sweep.",
    source="data/speculative_published.csv (EAGLE-3 paper Tables 3 and 5; SGLang "
           "documentation; DeepSeek-V3 report for the acceptance); napkin.speculative."
           "published.",
)

# %% tags=["hide-input"]
factor = "x{:.2f}".format
tables.styled(err.reset_index(), "table-spec-errors", {
    "sweep": "Held-out rows", "n": "Rows (n)", "median": "Median factor",
    "p90": "90th pct factor", "bias": "Speed bias", "roofline_median": "Roofline median",
    "roofline_p90": "Roofline 90th pct"}, formats={
    "median": factor, "p90": factor, "bias": factor, "roofline_median": factor,
    "roofline_p90": factor})

# %% tags=["hide-input"]
glue_all({
    "sg_max": err.loc[SG.name, "max"],
    "sg_over": (held["log_ratio"] > 0).mean(),
    "sg_a": sg_a,
})
mid = 8
glue_all({
    "sg_mid": mid,
    "sg_b8": sg3.loc[mid, "measured"],
    "sg_b8_pred": sg3.loc[mid, "predicted"],
})
gap = np.exp(sg3["log_ratio"].abs())
top, widest = sg3.index.max(), gap.idxmax()
glue_markdown("sg_gap", (
    f"the gap {'does not close' if gap[top] >= gap[mid] else 'narrows'}: at its largest batch, "
    f"{top}, SGLang measured {sg3.loc[top, 'measured']:.2f} against a predicted "
    f"{sg3.loc[top, 'predicted']:.2f} (x{gap[top]:.2f}, against x{gap[mid]:.2f} at batch "
    f"{mid}), and it is widest at batch {widest} (x{gap[widest]:.2f})"))
falls = sg3[sg3["predicted"] < sg3["predicted"].max() * 0.97].index.min()
glue("sg_model_falls", int(falls))
c3090 = published.SWEEPS[1].engine().constants
plain3090 = cost(c3090, decode_work(c3090, 2, 512, 1), cal)
glue_all({
    "rtx3090_step_ms": 1e3 * float(plain3090.seconds[0]),
    "fit_batch_steps": SG.fit_batch,
})
glue_markdown("rtx3090_bound", str(plain3090.bound[0]))
glue_all({
    "rtx3090_weights_ms": 1e3 * float(plain3090.weights_memory_s[0]),
    "rtx3090_fixed_ms": 1e3 * float(plain3090.overhead_s[0]),
    "rtx3090_matmul_ms": 1e3 * float(plain3090.compute_s[0]),
})
others = published.errors(published.alternatives(cal), ("chip",)).set_index("chip")
glue_all({
    "alt_pcie": others.loc["H100 PCIe", "median"],
    "alt_a100": others.loc["A100 SXM", "median"],
})
ds = checked[checked["sweep"] == published.SWEEPS[2].name].set_index("batch")
glue_all({
    "ds_big": int(ds.index.max()),
    "ds_b1": ds.loc[1, "measured"],
    "ds_b1_low": ds.loc[1, "predicted_low"],
    "ds_b1_high": ds.loc[1, "predicted_high"],
    "ds_b32": ds.iloc[-1]["measured"],
    "ds_b32_low": ds.iloc[-1]["predicted_low"],
    "ds_b32_high": ds.iloc[-1]["predicted_high"],
})
report = published.load()
report = report[report["source_url"].str.contains(published.DEEPSEEK_REPORT, regex=False)]
ds_speedup = float(report["speedup"].iloc[0])
moe_chat = napkin.validation.chapter.moe_interactive_band()  # chapter 9's band
glue_all({
    "moe_chat_median": moe_chat["median"], "moe_chat_runs": moe_chat["runs"],
    "moe_chat_drafted": moe_chat["drafted_runs"],
    "ds_report_speedup": ds_speedup,
    "ds_cycle_low": (1 + DS.acceptance[0]) / ds_speedup,
    "ds_cycle_high": (1 + DS.acceptance[1]) / ds_speedup,
})

# %% [markdown]
# The vLLM sweep is predicted within x{glue:text}`vl_median:.2f` for the median held-out row
# (the plain roofline: x{glue:text}`vl_roof_median:.2f`), but that match is no evidence for the
# model's seconds on an RTX 3090: it puts a plain step of
# {glue:text}`fit_batch_steps:d` sequences at {glue:text}`rtx3090_step_ms:.0f` ms,
# {glue:md}`rtx3090_bound`-bound: {glue:text}`rtx3090_weights_ms:.0f` ms of reading the
# weights at the fitted {glue:text}`cal_share:.0%` of the card's bandwidth and
# {glue:text}`rtx3090_fixed_ms:.1f` ms of fixed costs per layer and per sequence, against
# {glue:text}`rtx3090_matmul_ms:.1f` ms of arithmetic. Both the share and the fixed costs
# were fitted to serving engines on datacenter chips, and the book holds no timed step of
# vLLM on this card to check them against. What carries is the ratio of two steps, which is
# all a speedup needs. Read as an A100, the
# caption's chip, the same sweep is within x{glue:text}`alt_a100:.2f`.
#
# SGLang on the H100 is where the EAGLE sweeps err most: median x{glue:text}`sg_median:.2f`,
# up to x{glue:text}`sg_max:.2f`, with {glue:text}`sg_over:.0%` of its held-out rows
# promising more speedup than SGLang measured. With EAGLE-3's first drafted token accepted {glue:text}`sg_a:.0%` of the time
# (fitted at the smallest batch), the model keeps the speedup flat until about batch
# {glue:text}`sg_model_falls:d`, while SGLang's already falls at batch {glue:text}`sg_mid:d`
# ({glue:text}`sg_b8:.2f` against a predicted {glue:text}`sg_b8_pred:.2f`), and
# {glue:md}`sg_gap`. With a weaker draft it goes further: {glue:md}`eagle_below`.
# Something the
# step model does not see costs SGLang more per drafted token as the batch grows, the
# draft's own passes being the likeliest (they pay the per-step overhead of chapter 9
# {glue:text}`sg_k:d` times a cycle, and an engine's batching of drafts is its own code);
# that reading is not checked here. Read as an H100 PCIe the sweep is no closer
# (x{glue:text}`alt_pcie:.2f`).
#
# DeepSeek-V3 with nothing fitted: at batch 1 SGLang reports {glue:text}`ds_b1:.1f`x and the
# model says {glue:text}`ds_b1_low:.2f`-{glue:text}`ds_b1_high:.2f`x for the report's range
# of first-token acceptance; at batch {glue:text}`ds_big:d`, {glue:text}`ds_b32:.1f`x against
# {glue:text}`ds_b32_low:.2f`-{glue:text}`ds_b32_high:.2f`x. The model has the wrong sign of
# change: a mixture of experts reads more experts for more tokens, which makes a verify step
# of one sequence dearer than a plain one even at batch 1, and at the larger batch the plain
# step already reads most experts, so in the model verifying gets relatively cheaper with
# batch. SGLang serves DeepSeek-V3 with its own parallel layout and kernels, which the step
# model of chapter 9 misses on this model too. On TensorRT-LLM's runs of it, one sequence at
# a time at MLPerf's interactive pace ({glue:text}`moe_chat_drafted:d` of the
# {glue:text}`moe_chat_runs:d` runs with drafts), the model misses by
# x{glue:text}`moe_chat_median:.2f` at the median run, each predicted by a fit that never saw
# the model ([chapter 9](#sec-validation-rack)). DeepSeek's own report
# gives {glue:text}`ds_report_speedup:.1f`x with one drafted token: a cycle that cost
# {glue:text}`ds_cycle_low:.2f`-{glue:text}`ds_cycle_high:.2f` plain steps, on hardware and at
# a batch it does not state.

# %% tags=["hide-input"]
# the decision a reader takes from the model: speculate or not at each batch, read against
# the held-out band of the published speedups (x err_p90 either way)
grid = [1, 2, 4, 8, 16, 32, 64, 128, 256]
on_h100 = speculative.speedup(llama8, eagle3, speculative.position_rates(ACCEPTANCE, K), K,
                              batch=np.array(grid), calibration=cal)  # one call, every batch
band_p90 = err.loc["all", "p90"]
verdict = decide.versus(on_h100 / band_p90, on_h100 * band_p90)
assert verdict[0] == "better"  # the prose: speculation pays at batch 1 at every end
pays = [b for b, v in zip(grid, verdict) if v == "better"]
untold = [b for b, v in zip(grid, verdict) if v == "tie"]
slower = [b for b, v in zip(grid, verdict) if v == "worse"]
glue_all({
    "dec_pays_to": max(pays),
    "dec_pays_speedup": on_h100[grid.index(max(pays))],
    "dec_grid_top": grid[-1],
})
glue_markdown("dec_untold", f"from a batch of {untold[0]} it cannot tell"
              if untold else "it can tell at every batch up to " + str(grid[-1]))
glue_markdown("dec_slower", f"and from {slower[0]} speculation is slower at every end" if slower
              else f"and at no batch up to {grid[-1]} is speculation slower at every end")
tables.styled(pd.DataFrame({
    "batch": grid, "speedup": [f"{v:.2f} ({v / band_p90:.2f}-{v * band_p90:.2f})" for v in on_h100],
    "verdict": [{"better": "pays at every end", "tie": "cannot tell",
                 "worse": "slower at every end"}[v] for v in verdict]}),
    "table-spec-decision", {"batch": "Batch", "speedup": "Speedup (band)",
                            "verdict": "Speculate?"})

# %% [markdown]
# What a reader takes from this is a decision: speculate or not, at the batch they serve
# (the table runs to a batch of {glue:text}`dec_grid_top:d`). Read against the band of the held-out published speedups (x{glue:text}`err_p90:.2f` either
# way), the calibrated model says an EAGLE-3 head on an H100 pays at every end of the band up
# to a batch of {glue:text}`dec_pays_to:d` ({glue:text}`dec_pays_speedup:.2f`x there);
# {glue:md}`dec_untold`, {glue:md}`dec_slower`. That is the model's reading with its own
# error; the published sweeps above show where it is too hopeful, speculation falling faster
# with batch in SGLang than the model lets it.
#
# (sec-spec-machines)=
# ## Speedup against batch on the essay's machines
#
# The chart recomputes equation {eq}`eq-spec-speedup` in the page for the essay's machines
# as the sliders move: the first drafted token's acceptance (starting at the low end of what
# DeepSeek-V3 reports for its MTP module, {glue:text}`ds_a_low:.0%`; later positions fall
# as EAGLE's do), the draft step's share of a plain step (starting at the EAGLE-3 head's,
# rounded) and the tokens drafted per cycle (starting at SGLang's default for DeepSeek-V3,
# {glue:text}`ds_k:d`), under llama.cpp's measured roofs or the spec sheet's.

# %% tags=["hide-input"]
start = {"acceptance": ACCEPTANCE, "share": SHARE, "k": K, "view": "llama.cpp"}
glue_all({
    "default_share": SHARE,
    "mac_even_peak": int(by.loc["M2 Ultra", "break_even_peak"]),
    "h100_serving_band": err.loc[SG.name, "median"],
})
spark_serving = speculative.break_even(
    engine("DGX Spark", "Llama-3.1-8B", weights="BF16", kv="bf16"), eagle3,
    speculative.position_rates(sg_a, SG.k), SG.k, calibration=cal)
assert spark_serving is None  # the prose: nor on a DGX Spark

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spec-explorer",
    chart=charts.explorer(machines.rows(), start, "Where speculation stops paying"),
    caption="Speedup of speculative decoding over plain decoding against batch for the M2 "
            "Ultra, DGX Spark, RTX 4090 and H100 SXM, recomputed in the page from the "
            "sliders (first drafted token's acceptance, draft cost, drafted tokens) and the "
            "chosen roofs.",
    source="napkin.speculative.machines (the step model of napkin.predict on "
           "data/hardware_specs.csv and llama.cpp's measured roofs; acceptance by position "
           "from data/speculative_acceptance_by_position.csv); the same arithmetic as "
           "napkin.speculative.speedup, tested to agree.",
)

# %% tags=["hide-input"]
tables.styled(summary.assign(
    break_even_llama=summary["break_even_llama"].map(
        lambda v: "not before memory is full" if pd.isna(v) else f"{int(v):,}"),
    break_even_peak=summary["break_even_peak"].map(
        lambda v: "not before memory is full" if pd.isna(v) else f"{int(v):,}")),
    "table-spec-machines", {
        "machine": "Machine", "decode_share": "Decode share of bandwidth",
        "decode_share_basis": "Measured in",
        "ridge_llama_tokens": "Ridge (tokens, llama.cpp roofs)",
        "speedup_b1": "Speedup, batch 1", "speedup_b4": "Speedup, batch 4",
        "break_even_llama": "Stops paying at batch (llama.cpp roofs: at most, see above)",
        "break_even_peak": "(spec-sheet roofs)"},
    formats={"decode_share": "{:.0%}", "ridge_llama_tokens": "{:.0f}",
             "speedup_b1": "{:.2f}", "speedup_b4": "{:.2f}"})

# %% [markdown]
# At batch 1 every machine gets the same {glue:text}`s_b1:.2f`x from these settings:
# {glue:text}`ds_k:d` drafted tokens and the one they follow are fewer than any machine's
# ridge. From there the
# Mac loses it first. At batch {glue:text}`few:d` it keeps {glue:text}`mac_b4:.2f`x where the
# Spark keeps
# {glue:text}`spark_b4:.2f`x, and speculation stops paying at a batch of
# {glue:text}`mac_even:d` on the Mac, {glue:text}`h100_even:d` on the H100 under llama.cpp,
# {glue:text}`rtx_even:d` on the RTX 4090 and {glue:text}`spark_even:d` on the Spark. No
# published sweep measured a batch above {glue:text}`top_measured:d`, so the break-even
# batches beyond it, {glue:md}`extrapolated`, are the model's extrapolation, not a checked
# prediction, and since llama.cpp's small-batch kernels may reach less arithmetic than
# its prefill (above), each of these batches is the most it could be. At the
# spec sheet's peaks the Mac stops at {glue:text}`mac_even_peak:d` and the three NVIDIA
# machines never stop before their memory is full at this context: with hundreds of
# sequences each one's cache outweighs the weights, and a step is memory-bound again, on the
# cache this time, where checking several tokens of a sequence reads its cache once.
#
# A serving engine on an H100 reaches far more of the tensor cores than llama.cpp. Priced by
# chapter 9's calibrated model (BF16 weights, an EAGLE-3 head, SGLang's chain and the
# acceptance fitted to its smallest batch), speculation on one H100
# does not stop paying before its memory is full, about {glue:text}`h100_full:,d` sequences at this context,
# {glue:text}`h100_full_times:.0f` times the largest batch SGLang measured: an extrapolation
# that far is a statement about the model, not about SGLang. On the measured batches the
# model's median error was x{glue:text}`h100_serving_band:.2f`, and
# {glue:text}`sg_over:.0%` of its held-out rows erred on the side of too much speedup, so
# read it as an upper bound. With the older EAGLE head the same SGLang sweep measured speculation
# slower than plain decoding at batches the model says it pays ([the check](#sec-spec-check)).
# The same model
# on a DGX Spark, whose FP16 peak is derived rather than stated by NVIDIA,
# does not stop paying before its memory is full either.

# %% tags=["hide-input"]
plan = verify.plan_from_env()
glue_markdown("plan_tokens", ", ".join(map(str, plan.tokens[:-1])) + f" and {plan.tokens[-1]}")
glue_markdown("plan_depths", " and ".join(f"{d:,}" for d in plan.depths))

# %% [markdown]
# (sec-spec-live)=
# ## Measured on this machine
#
# What random weights can measure honestly is the verify step: one sequence, one context,
# steps that add {glue:md}`plan_tokens` tokens at depths of {glue:md}`plan_depths` cached
# tokens, timed as llama-bench times (a
# warm-up, repetitions, mean and standard deviation), with chapter 3's batched decoder
# feeding llama.cpp one sequence of several positions instead of several sequences of one
# (`napkin.measure.verify`; `NAPKIN_VERIFY=full` measures more sizes and depths, and
# `python -m napkin verify` does the same from a shell). The prediction beside it is this
# machine's roofline from its own measured roof: llama.cpp's prefill rate on the same model
# and the memory probe. A small synthetic draft model, with the target's vocabulary, is
# timed beside it. Acceptance cannot be measured with random weights: what a draft guesses
# right depends on what the weights say, so the speedup below takes the first drafted
# token's {glue:text}`default_acceptance:.0%` from the papers, and later ones falling as
# EAGLE's do.


# %% tags=["nbval-ignore-output"]
live = verify.live(plan)
live_frame = verify.frame(live)
glue_markdown("live_sentence", verify.sentence(live, ACCEPTANCE))
tables.styled(live_frame, "table-spec-live", {
    "depth": "Depth (tokens)", "tokens": "Tokens in the step", "step_s": "Step (s)",
    "relative": "Measured (one-token steps)", "relative_stddev": "±",
    "predicted_relative": "Roofline", "predicted_bound": "Predicted bound"},
    formats={"depth": "{:,}", "step_s": "{:.4f}", "relative": "{:.2f}",
             "relative_stddev": "{:.2f}", "predicted_relative": "{:.2f}"})

# %% [markdown]
# {glue:md}`live_sentence`

# %% tags=["hide-input", "nbval-ignore-output"]
napkin.Figure(
    name="fig-spec-live",
    chart=charts.live(live_frame, verify.who(live)),
    caption="Time of a step that adds the given number of tokens to one sequence, in "
            "one-token steps at the same depth: measured with llama.cpp (points, one standard "
            "deviation) and the roofline of this machine's measured roof (dashed).",
    source="Live: napkin.measure.verify (llama.cpp, synthetic model), napkin.measure.probe.",
    live=True,
    machine=verify.who(live),
)

# %% [markdown]
# A reader with a real model and a smaller draft that shares its vocabulary can measure
# acceptance too: set `NAPKIN_TARGET` and `NAPKIN_DRAFT` to the two GGUF files (or run
# `python -m napkin verify --model ... --draft ...`) and the cell below decodes greedily with
# and without the draft and reports the tokens each verify step kept.

# %% tags=["nbval-ignore-output"]
live_spec = verify.speculate_live(os.environ.get("NAPKIN_TARGET"),
                                   os.environ.get("NAPKIN_DRAFT"))
glue_markdown("end_to_end_sentence", verify.speculate_sentence(live_spec))

# %% [markdown]
# {glue:md}`end_to_end_sentence`
#
# (sec-spec-buying)=
# ## What it changes in the buying advice

# %% tags=["hide-input"]
ratio_plain = by.loc["M2 Ultra", "plain_tok_per_s"] / by.loc["DGX Spark", "plain_tok_per_s"]
ratio_b4 = ratio_plain * by.loc["M2 Ultra", "speedup_b4"] / by.loc["DGX Spark", "speedup_b4"]
glue_all({
    "mac_plain": by.loc["M2 Ultra", "plain_tok_per_s"],
    "spark_plain": by.loc["DGX Spark", "plain_tok_per_s"],
    "ratio_plain": ratio_plain,
    "ratio_b4": ratio_b4,
    "pld_tokens": PLD_K + 1,  # the prose: below both llama.cpp ridges, past the Mac's peak one
    "pld_tokens_b4": 4 * (PLD_K + 1),
    "ridge_mac_again": machines.ridge_tokens("M2 Ultra", "llama.cpp"),
})
assert ridge[("M2 Ultra", "peak")] < PLD_K + 1 < min(ridge[("M2 Ultra", "llama.cpp")],
                                                     ridge[("DGX Spark", "llama.cpp")])

# %% [markdown]
# Chapter 8 ranks machines for one stream by bandwidth over the quantized model's size,
# discounted by what llama.cpp reaches, and tells buyers to ignore paper FLOPs there. With
# speculative decoding the first half survives and the second does not.
#
# For one stream and a draft costing {glue:text}`default_share:.0%` of a step, nothing
# changes: every machine multiplies its decode by the same factor, and the Mac decodes
# Llama 3.1 8B (Q4_K, each machine at its own measured share of its bandwidth) at
# {glue:text}`mac_plain:.0f` tokens/s against the Spark's {glue:text}`spark_plain:.0f`,
# {glue:text}`ratio_plain:.1f`x, with or without a draft. Free drafting from the prompt
# changes nothing there either. Prompt lookup {cite}`spec_bench_pld` copies the tokens that
# followed the last match of the context's final words, up to {glue:text}`pld_k:d` a cycle,
# and its published averages ({glue:text}`pld_n:d` rows of the EAGLE papers and Spec-Bench)
# yield {glue:text}`pld_low:.2f`-{glue:text}`pld_high:.2f` tokens a cycle: one stream gets
# at most {glue:text}`pld_mac_low:.2f`-{glue:text}`pld_mac_high:.2f`x on the Mac and
# {glue:text}`pld_spark_low:.2f`-{glue:text}`pld_spark_high:.2f`x on the Spark (drafting taken
# as free), since a step of {glue:text}`pld_tokens:d` tokens is still below both machines'
# ridge on llama.cpp's measured roofs, the Mac's by a thin margin (its ridge is at
# {glue:text}`ridge_mac:.1f` tokens; at the spec sheet's peaks it would be at
# {glue:text}`ridge_mac_peak:.1f`, and the step would be past it). Its long drafts are
# what a few streams punish: four streams verifying {glue:text}`pld_tokens_b4:d` tokens a
# step are past the Mac's ridge of {glue:text}`ridge_mac_again:.0f`, and the model has prompt
# lookup slowing the Mac to {glue:text}`pld_mac_b4_low:.2f`-{glue:text}`pld_mac_b4_high:.2f`x
# while the Spark keeps {glue:text}`pld_spark_b4_high:.2f`x (taking every cycle to draft the
# full {glue:text}`pld_k:d`; a cycle without a match drafts fewer, and an engine can cap the
# draft).

# %% tags=["hide-input"]
tables.styled(pld.reset_index(), "table-spec-prompt-lookup", {
    "machine": "Machine", "tokens_per_cycle": "Tokens per cycle (published)",
    "speedup_b1": "Speedup, one stream", "speedup_b4": "Speedup, four streams"},
    formats={"tokens_per_cycle": "{:.2f}", "speedup_b1": "{:.2f}", "speedup_b4": "{:.2f}"})

# %% [markdown]
# That is the change: a few streams at once (an agent running subtasks, a small team) keep
# the full speedup on the Spark but not on the Mac, whose lead at {glue:text}`few:d` streams
# shrinks from {glue:text}`ratio_plain:.1f`x to {glue:text}`ratio_b4:.1f`x with the
# EAGLE-3-like draft above. The essay's "watch out for paper FLOPs" becomes: for decode at a
# handful of streams, arithmetic the machine really reaches (the measured roof, not the paper
# one) decides how much of speculative decoding it can use. For many users at once nothing
# changes: speculation stops paying at the batches where chapter 3's roofline turns
# compute-bound, and memory for the caches, then bandwidth, remain what to buy.
#
# (sec-spec-essay)=
# ## What the essay says
#
# The essay never mentions speculative decoding, so most of it is untouched. One sentence is
# concerned: "At batch size 1, decode has to read the whole model out of memory to emit one
# token". The errata page checks it against a published stream:

# %% tags=["hide-input"]
found = errata.erratum("ceiling_under_speculation")
glue_markdown("erratum", found.data_says + ".")
assert found.verdict == "inconsistent" and not found.conclusion_holds

# %% [markdown]
# {glue:md}`erratum`
#
# The essay's ceiling bounds how often the model reads its weights, not how many tokens
# come out: it holds for plain decoding and stops being a ceiling once the software
# speculates. Its arithmetic is right, and a single stream's speed still starts from it.
