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
# # What to buy, computed
#
# ```{admonition} In one minute
# :class: tip
# - For a coding agent's {glue:text}`agent_prompt:,d`-token prompt, prefill is the wall: the
#   {glue:text}`first_machine` answers after about {glue:text}`first_ttft:.0f` s, the best
#   Apple chip, the {glue:text}`apple_best`, after {glue:text}`apple_best_ttft:.0f` s, which is
#   {glue:text}`apple_prefill_share:.0%` of its whole request
#   (<a href="#fig-buy-coding-agent">the ranking</a>).
# - For one chat stream, bandwidth decides: the {glue:text}`chat_first` leads at about
#   {glue:text}`chat_first_tps:.0f` tokens/s by the middle estimate, but
#   {glue:text}`dec_chat_ties:d` other datacenter parts' ranges overlap its own, a tie
#   (<a href="#T_table-buy-decisions">the decisions</a>); among unified-memory desk machines the {glue:text}`chat_apple`
#   ({glue:text}`chat_apple_tps:.0f` tokens/s) finishes a short request before DGX Spark
#   ({glue:text}`chat_apple_whole:.0f` s against {glue:text}`chat_spark_whole:.0f` s), which
#   wins the long one, though their ranges overlap (<a href="#T_table-buy-chat">the chat
#   ranking</a>).
# - For {glue:text}`many_users:d` users at once, memory decides first: the
#   {glue:text}`many_first` gives each about {glue:text}`many_first_tps:.0f` tokens/s while
#   decoding ({glue:text}`many_first_cal:.0f` on chapter 9's calibrated model, which serves
#   their prompts in the same steps), tied within the ranges with
#   {glue:text}`dec_many_ties:d` other datacenter parts; on a desk, counting each user's prompt, the
#   {glue:text}`many_req_lead` serves them fastest, about {glue:text}`many_req_lead_tps:.2f`
#   tokens/s each over whole requests (<a href="#T_table-buy-many-users">the many-users
#   ranking</a>).
# - The first-token method, checked on {glue:text}`n_check:d` published runs it did not use,
#   predicts {glue:text}`chk_dense_low:.2f` to {glue:text}`chk_dense_high:.2f` times the
#   measured rate for dense models and is too fast by up to {glue:text}`moe_cuda_high:.1f`
#   times for mixtures of experts on NVIDIA GPUs
#   (<a href="#fig-buy-extrapolation">the check</a>).
# ```
#
# **What this chapter does.** The essay closes with a table: if you care about the first
# token on long prompts, optimise for FLOPs; for single-stream tokens per second, for
# bandwidth over the quantized model's size; for many users, for memory to hold their caches,
# then bandwidth; for cost per token, for someone else's batch. And two rules: discount
# bandwidth over file size to {glue:text}`essay_discount:.0%` before reading any review; and a
# workload of long prompts and short answers is a prefill machine, for which bandwidth is the
# wrong headline. This chapter turns the table into a calculator over every machine in
# `data/`, with every number traceable to the rows it came from, and answers the essay's
# hardest case: a coding agent pasting {glue:text}`agent_prompt:,d`-token files. Then it
# checks its own method against published runs it did not use.
#
# For a prompt of $L$ tokens, the first token waits for the prompt's arithmetic,
#
# ```{math}
# :label: eq-buy-ttft
# t_{\text{first}} \approx \frac{2\,N_{\text{layers}}\,L + 2 g\, e\,\tfrac{1}{2}L(L+1)}
#                               {\text{prefill FLOP/s the machine reaches}}
# ```
#
# with $N_{\text{layers}}$ the layer weights a prompt token multiplies (the embedding is a
# lookup, and only the last prompt token needs the output layer) and the second term the
# attention, chapter 7's equation {eq}`eq-serving-pairs` over the whole prompt. Each later
# token waits for one read of what decode touches,
#
# ```{math}
# :label: eq-buy-decode
# \text{tokens/s} \approx f \cdot \frac{\text{bandwidth}}{W_{\text{active}} + b\,\bar{c}}
# ```
#
# with $W_{\text{active}}$ the bytes of the weights a token uses at the chosen format,
# $b\,\bar{c}$ the cache at the mean context, and $f$ the fraction of that ceiling machines of
# the same family reach in published runs (chapter 1), its range widened to the machine's
# own runs. When several users decode at once, a step reads the weights once for all of them
# and does every user's arithmetic, and each user gets one token per step, the slower of the
# two (chapter 3's roofline):
#
# ```{literalinclude} ../lib/napkin/buying/estimate.py
# :language: python
# :pyobject: _decode
# ```

# %% tags=["hide-input"]
import numpy as np
import pandas as pd

import napkin
from napkin import buying, catalog, costs, errata, essay, hardware, phases, tables
from napkin.buying import figures as charts
from napkin.prose import glue, glue_all, glue_markdown
from napkin.units import GB, GiB
from napkin.validation import report as validation_report

presets = buying.presets()
agent, chat, many = presets["coding agent"], presets["chat"], presets["many users"]
fleet = buying.machines()
inputs = buying.machine_table(fleet)
runs = buying.prefill_runs()
fleet_runs = runs[runs["chip"].isin(inputs["machine"])].dropna(subset=["fraction_of_roof"])
glue_all({
    "essay_discount": essay.claim("buying_discount") / 100,
    "agent_prompt": agent.prompt_tokens,
    "n_machines": len(fleet),
})
left = buying.left_out().iloc[0]
glue_all({
    "left_out": left["machine"],
    "left_out_why": left["reason"],
    # the reference runs, and the runs left out
    "ref_tokens": buying.REFERENCE_TOKENS,
    "ref_gflop": buying.reference_flops_per_token() / 1e9,
    "n_prefill": int((inputs["prefill_runs"] > 0).sum()),
})
second_hand = buying.second_hand_runs()
glue_all({
    "n_second_hand": len(second_hand),
    "second_hand": ", ".join(f"{c} ({', '.join(sorted(set(g['backend'])))})"
                              for c, g in second_hand.groupby("chip", sort=False)),
})
strix_file = tables.load("strix_halo_llamacpp")
rocm = second_hand[(second_hand["chip"] == "Strix Halo") & (second_hand["backend"] == "ROCm")]
hip_q4km = strix_file[strix_file["model"].str.startswith("Llama 2 7B") &
                      (strix_file["quant"] == "Q4_K_M") & (strix_file["test"] == "pp512") &
                      strix_file["backend"].str.startswith("HIP")]
glue_all({
    "strix_rocm_rate": float(rocm["tok_per_s"].iloc[0]),
    "strix_hip_q4km_rate": float(hip_q4km["throughput_tok_per_s"].iloc[0]),
    # the roofs each run is held to
    "blackwell_fp4": ", ".join(phases.SM12X_CHIPS),
    "mxfp4_build": phases.NATIVE_MXFP4_BUILD,
    "strix_roof": buying.machine("Strix Halo").roof("Q4_0")[1] / 1e12,
})
assert buying.machine("Strix Halo").roof("F16")[1] == buying.machine("Strix Halo").roof("Q4_0")[1]
assert set(fleet_runs[fleet_runs["chip"] == "Strix Halo"]["backend"]) == {"Vulkan"}
rtx = hardware.chip("RTX 4090")
rtx_best = runs[runs["chip"] == "RTX 4090"]["flops_per_s"].max()
glue_all({
    "rtx4090_best": rtx_best / 1e12,
    "rtx4090_fp16": rtx.peak("fp16").flops_per_s / 1e12,
    "rtx4090_int8": rtx.peak("int8").flops_per_s / 1e12,
    "rtx4090_int8_frac": rtx_best / rtx.peak("int8").flops_per_s,
    "n_runs_roof": fleet_runs["run_id"].nunique(),
    "max_run_frac": fleet_runs["fraction_of_roof"].max(),
})
assert rtx_best > rtx.peak("fp16").flops_per_s and (fleet_runs["fraction_of_roof"] < 1).all()
has_roof = inputs[inputs["roof_TFLOPS"].notna()]
glue_all({
    "n_roof": len(has_roof),
    "n_derived": int(has_roof["roof_label"].str.contains("derived").sum()),
    "spark_int8": buying.machine("DGX Spark").roof("Q4_0")[1] / 1e12,
    "no_roof": ", ".join(inputs[inputs["roof_TFLOPS"].isna()]["machine"]),
})
announced = {c: hardware.chip(c) for c in ("M1", "M1 Pro", "M1 Max")}
for c, key in (("M1", "m1"), ("M1 Pro", "m1pro"), ("M1 Max", "m1max")):
    glue(f"{key}_announced", announced[c].specs["fp32_vector_announced_TFLOPS"])
glue_all({
    "m1_derived": announced["M1"].specs["fp32_vector_TFLOPS"],
    "announced_gap": max(abs(ch.specs["fp32_vector_TFLOPS"] /
                              ch.specs["fp32_vector_announced_TFLOPS"] - 1)
                          for ch in announced.values()),
})
assert not any("fp32_vector_announced_TFLOPS" in hardware.chip(c).specs
               for c in inputs[inputs["roof_TFLOPS"].isna()]["machine"])
assert set(inputs[inputs["roof_TFLOPS"].isna()]["machine"].str[:2]) <= {"M3", "M4"}

# %% [markdown]
# ## The inputs, traced
#
# The calculator ranks the {glue:text}`n_machines:d` chips in `data/hardware_specs.csv` that
# have both a bandwidth and a memory capacity, but one: the {glue:text}`left_out`, which is
# {glue:text}`left_out_why`. Four of their figures need a word.
#
# **Prefill speed is measured, then set against the roof of the arithmetic that runs.** The
# first token is estimated from the prefill rate each machine reached in published llama.cpp
# runs of one reference model, Llama-2-7B at Q4_0 with a {glue:text}`ref_tokens:d`-token
# prompt: at {glue:text}`ref_gflop:.2f` GFLOP per prompt token (equation {eq}`eq-buy-ttft`),
# a run's tokens per second become FLOP/s. {glue:text}`n_prefill:d` machines have such runs;
# where there are several (GPU core counts, backends, flash attention on or off), their
# spread is the range. A run the data marks as read second-hand is left out where the same
# machine has first-hand runs: {glue:text}`n_second_hand:d` runs, of the
# {glue:text}`second_hand`. Among them is Strix Halo's one ROCm run, an early transcription at
# {glue:text}`strix_rocm_rate:,.0f` tokens/s; the same file's first-hand HIP run of the same
# model at Q4_K_M reached {glue:text}`strix_hip_q4km_rate:,.0f`.
#
# Beside each estimate stands a roofline bound, and its roof is the dense peak of the
# arithmetic the matmuls actually run in on that machine's llama.cpp backend
# (`napkin.buying.roofs`). On NVIDIA's GPUs (CUDA) and AMD's (ROCm), llama.cpp multiplies
# quantized weights (Q4_0, Q4_K, Q8_0) with INT8 MMQ kernels on the tensor cores, so they are
# held to their dense INT8 figure; MXFP4 weights run in native FP4 on the
# {glue:text}`blackwell_fp4` from build {glue:text}`mxfp4_build:d` on (chapter 2), and are
# held to their FP4 figure. On Apple's GPUs (Metal) every format is dequantized to FP16 before
# the matmul, and Apple's GPUs run FP16 at their FP32 rate, so a run is held to the FP32
# vector figure of its own GPU configuration: a chip with fewer GPU cores than the one the
# figure is for gets its share of it. Vulkan builds dequantize the weights to FP16 for their
# cooperative-matrix shaders on GPUs with matrix units
# ([llama.cpp PR 12015](https://github.com/ggml-org/llama.cpp/pull/12015)), so a Vulkan run
# is held to the FP16 figure;
# Strix Halo's first-hand runs are all Vulkan builds, and its data puts its FP16 and INT8
# rates level ({glue:text}`strix_roof:.0f` TOPS, a third party's derivation). The choice
# matters on GeForce cards, whose 16-bit figure with FP32 accumulation is not the arithmetic
# llama.cpp's CUDA build runs there: the RTX 4090's best published run reached
# {glue:text}`rtx4090_best:.0f` TFLOP/s, more than its {glue:text}`rtx4090_fp16:.0f` TFLOP/s of
# FP16, and {glue:text}`rtx4090_int8_frac:.0%` of its {glue:text}`rtx4090_int8:.0f` INT8
# TOPS. Held to the right roof, none of the {glue:text}`n_runs_roof:d` published runs (a run
# whose variant is disputed counted once) passes it; the closest reaches
# {glue:text}`max_run_frac:.0%`. {glue:text}`n_roof:d` machines have a figure for the
# arithmetic they run in; {glue:text}`n_derived:d` of these are derivations no vendor states,
# marked as such in the table (DGX Spark's {glue:text}`spark_int8:.0f` INT8 TOPS, for one, is
# derived from NVIDIA's sparse FP4 petaFLOP: NVIDIA states no dense rate). Apple stated GPU
# rates when it launched its first chips: {glue:text}`m1_announced:.1f` TFLOPS for the M1
# {cite}`apple2020m1`, and {glue:text}`m1pro_announced:.1f` and
# {glue:text}`m1max_announced:.1f` for the M1 Pro and M1 Max (at their launch event, as
# reported); the data hold no rate Apple stated for a later chip. The roofs here for the M1
# and M2 chips are a third party's derivation from core count and clock, one per GPU
# configuration, and where Apple stated a figure the derivation is within
# {glue:text}`announced_gap:.0%` of it (the M1's {glue:text}`m1_derived:.2f` TFLOPS). For the
# M3 and M4 chips the data hold neither, so these have no bound: {glue:text}`no_roof`. A
# bound never stands in for a missing measurement.

# %% tags=["hide-input"]
quart = buying.fraction_quartiles().set_index("family")
for fam, key in (("Apple Silicon", "apple"), ("GPU (CUDA)", "cuda")):
    for stat in ("q25", "q50", "q75"):
        glue(f"{stat}_{key}", quart.loc[fam, stat])
    glue(f"runs_{key}", int(quart.loc[fam, "runs"]))
own = buying.own_decode_runs()
strix_own = own[own["chip"] == "Strix Halo"]["fraction_of_ceiling"]
glue_all({
    "strix_own_n": len(strix_own),
    "strix_own_low": strix_own.min(),
    "strix_own_high": strix_own.max(),
    "strix_own_mid": strix_own.median(),
})
ultras = ["M1 Ultra", "M2 Ultra", "M3 Ultra"]
ultra_own = own[own["chip"].isin(ultras)]["fraction_of_ceiling"]
glue_all({
    "ultra_own_low": ultra_own.min(),
    "ultra_own_high": ultra_own.max(),
})
assert ultra_own.max() < quart.loc["Apple Silicon", "q25"]
h100_read = buying.h100_decode_readings().set_index("reading")
for variant, key in (("H100 SXM", "sxm"), ("H100 PCIe", "pcie")):
    glue(f"h100_frac_{key}", h100_read.loc[variant, "fraction_of_ceiling"])
    glue(f"h100_bw_{key}", h100_read.loc[variant, "bandwidth_GB_per_s"])
a100 = own[own["chip"].str.startswith("A100")]["fraction_of_ceiling"]
dc = quart.loc[buying.DATACENTER]
glue_all({
    "a100_low": a100.min(),
    "a100_high": a100.max(),
    "cuda_fastest_gbs": quart.loc["GPU (CUDA)", "fastest_GB_per_s"],
    "q50_dc": dc["q50"],
    "low_dc": dc["low"],
    "high_dc": dc["high"],
    "dc_runs": int(dc["runs"]),
    "dc_fastest_run_gbs": max(hardware.chip(c).bandwidth_bytes_per_s / GB
                              for c in dc["chips"].split(", ")),
})
dc_family = [m.name for m in buying.machines() if m.family == buying.DATACENTER]
glue("dc_family_n", len(dc_family))
glue_markdown("dc_family", ", ".join(dc_family))
with_h100 = [buying.fraction_quartiles(v).set_index("family").loc["GPU (CUDA)", "q50"]
             for v in ("H100 SXM", "H100 PCIe")]
glue("cuda_q50_with_h100", f"{with_h100[0]:.0%} under either reading"
     if f"{with_h100[0]:.0%}" == f"{with_h100[1]:.0%}"
     else f"{with_h100[0]:.0%} (SXM reading) or {with_h100[1]:.0%} (PCIe reading)")
# why the family's middle: the fraction grows with the bytes a token reads
ref_bytes = own["bytes_per_token"].iloc[0]
glue("ref_gib", ref_bytes / GiB)
_, agent_total, agent_active = buying.model_for(agent)
glue("agent_read_ratio", agent_active / ref_bytes)
by_format = buying.fraction_by_format(ultras).set_index("quant")
glue_all({
    "f16_read_ratio": by_format.loc["F16", "bytes_per_token"] / by_format.loc["Q4_0",
                                                                               "bytes_per_token"],
    "ultra_f16_low": by_format.loc["F16", "low"],
    "ultra_f16_high": by_format.loc["F16", "high"],
})
assert by_format.loc["F16", "low"] > by_format.loc["Q4_0", "high"]
sb = phases.spark_bench()
qwen = sb[(sb["machine"] == "M2 Ultra") & sb["model"].str.startswith("Qwen2.5-Coder-7B") &
          (sb["test"] == "tg32") & (sb["context_depth_tokens"] == 0)].iloc[0]
glue_all({
    "qwen_gib": float(qwen["model_size_GiB"]),
    "qwen_build": int(qwen["build"]),
    "m2u_qwen_frac": float(qwen["throughput_tok_per_s"]) * float(qwen["model_size_GiB"]) *
     GiB / hardware.chip("M2 Ultra").bandwidth_bytes_per_s,
})
strix_70b = strix_file[strix_file["model"].str.startswith("Shisa V2 70B") &
                       (strix_file["test"] == "tg128")]["throughput_tok_per_s"].astype(float)
q4k_70b = catalog.weight_bytes(agent.model, "Q4_K")
strix_bw = hardware.chip("Strix Halo").bandwidth_bytes_per_s
glue_all({
    "strix_70b_low": strix_70b.min() * q4k_70b / strix_bw,
    "strix_70b_high": strix_70b.max() * q4k_70b / strix_bw,
})

# %% [markdown]
# **Decode is discounted by family, and a machine's own runs widen the range.** Published
# decode runs of the reference model reach a fraction of the bandwidth ceiling: on Apple
# Silicon a median of {glue:text}`q50_apple:.0%` (quartiles {glue:text}`q25_apple:.0%` to
# {glue:text}`q75_apple:.0%`, {glue:text}`runs_apple:d` runs), on CUDA GPUs
# {glue:text}`q50_cuda:.0%` ({glue:text}`q25_cuda:.0%` to {glue:text}`q75_cuda:.0%`,
# {glue:text}`runs_cuda:d` runs). Those medians are the middle estimate; the essay's
# {glue:text}`essay_discount:.0%` is more cautious than either. AMD has no family in
# chapter 1's data: Strix Halo is discounted by its own {glue:text}`strix_own_n:d` first-hand
# runs ({glue:text}`strix_own_low:.0%` to {glue:text}`strix_own_high:.0%`, median
# {glue:text}`strix_own_mid:.0%`); its datacenter chips are faster than any run, below. Where a machine's own runs fall
# outside its family's quartiles, its range is widened to take them in, and some fall far
# outside. The Ultras' runs sit at {glue:text}`ultra_own_low:.0%` to
# {glue:text}`ultra_own_high:.0%`, below Apple's first quartile: the essay's "Ultra-tier
# bandwidth that doesn't convert". The datacenter GPUs' llama.cpp runs sit as low or lower: the
# scoreboard's H100, which one copy labels SXM and another PCIe, reaches
# {glue:text}`h100_frac_sxm:.0%` of an SXM card's ceiling ({glue:text}`h100_bw_sxm:,.0f`
# GB/s) or {glue:text}`h100_frac_pcie:.0%` of a PCIe card's ({glue:text}`h100_bw_pcie:,.0f`
# GB/s), and its A100, whose variant the scoreboard does not state,
# {glue:text}`a100_low:.0%` to {glue:text}`a100_high:.0%`. (Put into the CUDA family, the H100
# run would make its median {glue:text}`cuda_q50_with_h100`.) So a machine faster than every
# run of its family (the CUDA family's fastest is {glue:text}`cuda_fastest_gbs:,.0f` GB/s) is
# not given the family's fraction, which the runs do not carry past that bandwidth: it is
# discounted by those {glue:text}`dc_runs:d` datacenter runs, each read as both variants, a
# median of {glue:text}`q50_dc:.0%` and, since two runs are too few for quartiles, the whole
# span of their readings as the range, {glue:text}`low_dc:.0%` to {glue:text}`high_dc:.0%`; an
# A100 or H100 takes its own run in the middle, so their order follows what was measured.
# That takes in {glue:text}`dc_family_n:d` machines: {glue:md}`dc_family`. The runs reach
# {glue:text}`dc_fastest_run_gbs:,.0f` GB/s at most, so for the faster parts this too is a
# reading carried past what was measured, and AMD's parts borrow NVIDIA's runs.
#
# The middle stays the family's because those runs read {glue:text}`ref_gib:.2f` GiB per
# token, the agent's model {glue:text}`agent_read_ratio:.0f` times as much, and the fraction a
# machine reaches grows with what a token reads, as if a fixed cost per token weighed less.
# On the same model at F16, which reads {glue:text}`f16_read_ratio:.1f` times the bytes of
# Q4_0, the Ultras reach {glue:text}`ultra_f16_low:.0%` to {glue:text}`ultra_f16_high:.0%`;
# a newer M2 Ultra run of a {glue:text}`qwen_gib:.2f` GiB model (build
# {glue:text}`qwen_build:d`) reaches {glue:text}`m2u_qwen_frac:.0%`; and Strix Halo's runs of
# a model of the agent's own shape (a Llama 3 70B fine-tune at Q4_K_M) reach at least
# {glue:text}`strix_70b_low:.0%` and {glue:text}`strix_70b_high:.0%` (counted at a pure Q4_K
# file's size, which a Q4_K_M file exceeds). The Ultras may still convert less than a Max
# does; how much less, for a model this size, the data cannot say.

# %% tags=["hide-input"]
limits = hardware.gpu_memory_limits()
measured = limits[limits["kind"] == "measured"]
small_frac, _ = hardware.mac_default_gpu_fraction(16)
large_frac, _ = hardware.mac_default_gpu_fraction(512)
glue_all({
    "small_frac": small_frac,
    "large_frac": large_frac,
    "small_gib": hardware.SMALL_MAC_GiB,
})
top_rec = measured.loc[measured["fraction"].idxmax()]
glue_all({
    "top_frac": top_rec["fraction"],
    "top_frac_gib": top_rec["memory_GiB"],
    "n_limit_records": len(measured),
    "h100_cap_gb": hardware.chip("H100 SXM").capacity_bytes / GiB,
})
for c, key in (("B200", "b200"), ("H200", "h200")):
    glue(f"{key}_enabled", hardware.chip(c).capacity_bytes / GiB)
    glue(f"{key}_installed", hardware.chip(c).specs["memory_physical_GiB"])
glue("n_priced", int((inputs["priced_configs"] > 0).sum()))

# %% [markdown]
# **Memory is binary, and a Mac's GPU may not use all of it.** Capacities are in GiB: an
# H100's {glue:text}`h100_cap_gb:.0f` "GB" of HBM are {glue:text}`h100_cap_gb:.0f` GiB. A part
# that carries more memory than it enables counts what it enables: the B200
# {glue:text}`b200_enabled:.0f` of the {glue:text}`b200_installed:.0f` GiB in its eight stacks,
# the H200 {glue:text}`h200_enabled:.0f` of {glue:text}`h200_installed:.0f` (chapter 4; the
# sources are in `data/hardware_specs.csv`).
# Apple's chips are taken at their largest configuration, the others as stated. On a Mac,
# macOS lets the GPU use only part of the unified memory by default (Metal's
# `recommendedMaxWorkingSetSize`, which llama.cpp prints at start-up); Apple documents no
# percentage. The table below holds the {glue:text}`n_limit_records:d` values people recorded
# on their own Macs. The book counts on the lowest fraction recorded for a Mac of the same
# class (`napkin.hardware.mac_default_gpu_fraction`): {glue:text}`small_frac:.0%` of the memory
# of a Mac with at most {glue:text}`small_gib:d` GiB, {glue:text}`large_frac:.0%` above (the
# highest recorded, {glue:text}`top_frac:.0%` on {glue:text}`top_frac_gib:.0f` GiB Macs under
# a newer macOS, is not what every Mac gets). A Mac that holds a workload only above that
# limit is listed as "fits only after raising iogpu.wired_limit_mb", and is not ranked:
# raising it (`sudo sysctl iogpu.wired_limit_mb=<MiB>`, undone at reboot) takes memory from
# everything else the Mac runs, a choice the reader can make but the ranking does not.
# Off a Mac, the GPU may use what the driver or the operating system reports where a public
# log shows it (`driver_visible_memory_MiB` in `data/hardware_specs.csv`: what firmware, the
# kernel and the driver keep is not the reader's to lift), else the whole capacity. A
# price, where a vendor states one, is for the smallest recorded configuration whose GPU may
# use enough ({glue:text}`n_priced:d` machines have a recorded price; no datacenter GPU has
# one, because no vendor states one).

# %%
tables.styled(limits, "table-buy-gpu-limits", {
    "machine": "Mac", "memory_GiB": "Memory (GiB)", "limit_GiB": "GPU limit by default (GiB)",
    "fraction": "Share", "reported_as": "As reported", "macos": "macOS", "date": "Date",
    "kind": "Kind", "source_url": "Source"},
    formats={"memory_GiB": lambda v: "" if v != v else f"{v:,.0f}",
             "limit_GiB": lambda v: "" if v != v else f"{v:,.2f}",
             "fraction": lambda v: "" if v != v else f"{v:.1%}"})

# %%
tables.styled(inputs.assign(
    cap=inputs["capacity_GiB"].map("{:,.0f}".format) + " (" + inputs["capacity_basis"] + ")",
    usable=[f"{u:,.1f}" if u < c else "all" for u, c in
            zip(inputs["usable_GiB"], inputs["capacity_GiB"])],
    roof=[buying.roof_text(a, t, lab) for a, t, lab in
          zip(inputs["roof_arithmetic"], inputs["roof_TFLOPS"], inputs["roof_label"])],
    pre=[buying.span(a, b) if n else "" for a, b, n in
         zip(inputs["prefill_TFLOPS_low"], inputs["prefill_TFLOPS_high"],
             inputs["prefill_runs"])],
    reached=[buying.span(a, b, pct=True) for a, b in
             zip(inputs["prefill_fraction_low"], inputs["prefill_fraction_high"])],
    runs_=[f"{n} †" if note else str(n) for n, note in
           zip(inputs["prefill_runs"], inputs["prefill_note"])],
    discount=[buying.fmt_range(a, b, c, 0) for a, b, c in
              zip(100 * inputs["fraction_low"], 100 * inputs["fraction_mid"],
                  100 * inputs["fraction_high"])]),
    "table-buy-inputs", {"machine": "Machine", "bandwidth_GB_per_s": "Bandwidth (GB/s)",
                         "cap": "Memory (GiB)", "usable": "GPU may use by default (GiB)",
                         "backend": "llama.cpp backend",
                         "roof": "Roof for Q4_0 (dense TFLOP/s or TOPS: arithmetic)",
                         "pre": "Prefill TFLOP/s reached (published runs)",
                         "reached": "Of each run's roof", "runs_": "Runs (†: variant disputed)",
                         "discount": "Decode discount, % of ceiling: middle (range)",
                         "fraction_basis": "Decode discount from"},
    formats={"bandwidth_GB_per_s": "{:,.0f}"})

# %% tags=["hide-input"]
ranked = buying.rank(agent)
r = ranked.set_index("machine")
top = ranked[ranked["rank"].notna()]
apple = top[top["family"] == "Apple Silicon"]
glue_all({
    "agent_output": agent.output_tokens,
    "agent_model": agent.model.replace("-", " "),
    "agent_format": agent.weight_format,
    "agent_weights_gib": agent_total / GiB,
    "agent_need_gib": r["need_GiB"].iloc[0],
})
sizes = tables.load("llama2_7b_gguf_sizes")
files = sizes[sizes["size_kind"].str.startswith("file")].set_index("quant")["size_bytes"]
q4km_ratio = files["Q4_K_M"] / files["Q4_0"]  # Q4_0 and pure Q4_K both store 4.5 bits a weight
glue_all({
    "q4km_ratio": q4km_ratio,
    "q4km_gib": q4km_ratio * agent_total / GiB,
    "q4km_slower": 1 - 1 / q4km_ratio,
})

# %% [markdown]
# ## The coding agent
#
# The essay's hardest case: a local coding agent that pastes {glue:text}`agent_prompt:,d`
# tokens of files and gets {glue:text}`agent_output:,d` tokens back, for one user, running
# {glue:text}`agent_model` at {glue:text}`agent_format`, counted as a pure Q4_K file (about
# {glue:text}`agent_weights_gib:.0f` GiB of weights; with the cache it needs
# {glue:text}`agent_need_gib:.0f` GiB). The prompt is the essay's; the answer length and the
# model are this book's choice, the essay's running example at a common local format. The
# file most people download, Q4_K_M, mixes in 6-bit tensors: on Llama-2-7B its file is
# {glue:text}`q4km_ratio:.2f` times the Q4_0 one of the same bits per weight, which here would
# be about {glue:text}`q4km_gib:.0f` GiB, and decode about {glue:text}`q4km_slower:.0%`
# slower than the tables say.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-buy-coding-agent",
    chart=charts.ttft_ranking(
        ranked, "Prefill is the wall: seconds before a coding agent answers",
        f"{agent.model} at {agent.weight_format}, a {agent.prompt_tokens:,}-token prompt; "
        "line: published prefill runs, tick: roofline bound of the arithmetic that runs"),
    caption="Time to the first token for each machine whose GPU may hold the model by "
            "default: the median published run (dot), the range over runs (line) and the "
            "roofline bound (tick), on a log scale.",
    source="napkin.buying: prefill FLOPs of the prompt over the FLOP/s published llama.cpp "
           "pp512 runs of Llama-2-7B Q4_0 reached (data/apple_silicon_llama2_7b.csv, "
           "gpu_llama2_7b_q4_0.csv, strix_halo_llamacpp.csv); bounds from the dense INT8 "
           "(CUDA, ROCm) or FP16 (Metal, Vulkan) peak in data/hardware_specs.csv.",
)

# %%
tables.styled(buying.ranking_display(ranked[ranked["fits"] | ranked["fits_after_raising"]]),
              "table-buy-coding-agent", {
    "rank": "Rank", "machine": "Machine (†: one run, variant disputed)",
    "ttft": "First token (s): median run (range)", "bound": "Roofline bound (s)",
    "roof": "Roof (dense TFLOP/s or TOPS)", "reached": "Runs reached of their roof",
    "decode": "Then tokens/s", "memory": "Memory needed (GPU may use)",
    "price": "Price", "note": "Not ranked because"})

# %% tags=["hide-input"]
first = top.iloc[0]
second = top[top["ttft_mid_s"] > first["ttft_mid_s"]]
second = second[second["ttft_mid_s"] == second["ttft_mid_s"].iloc[0]]
glue_all({
    "first_machine": first["machine"],
    "first_ttft": first["ttft_mid_s"],
    "second_machines": " and the ".join(second["machine"]),
    "second_ttft": second["ttft_mid_s"].iloc[0],
})
assert set(second["machine"]) == {"H100 SXM", "H100 PCIe"}
glue_all({
    "spark_ttft": r.loc["DGX Spark", "ttft_mid_s"],
    "spark_rank": int(r.loc["DGX Spark", "rank"]),
    "spark_reached": r.loc["DGX Spark", "prefill_fraction_high"],
})
best_apple = apple.iloc[0]
glue_all({
    "apple_best": best_apple["machine"],
    "apple_best_ttft": best_apple["ttft_mid_s"],
    "apple_best_min": best_apple["ttft_mid_s"] / 60,
    "apple_best_rank": int(best_apple["rank"]),
    "apple_best_decode": best_apple["decode_mid_tok_per_s"],
    "apple_answer_s": agent.output_tokens / best_apple["decode_mid_tok_per_s"],
    "strix_ttft": r.loc["Strix Halo", "ttft_mid_s"],
    "strix_fast": r.loc["Strix Halo", "ttft_fast_s"],
    "strix_slow": r.loc["Strix Halo", "ttft_slow_s"],
})
faster_macs = apple[apple["ttft_mid_s"] < r.loc["Strix Halo", "ttft_mid_s"]]["machine"]
glue("macs_before_strix", " and the ".join(faster_macs))
non_apple_after = top[(top["family"] != "Apple Silicon") &
                      (top["rank"] > best_apple["rank"])]["machine"].tolist()
glue("non_apple_after", ", ".join(non_apple_after) or "none")
raised = ranked[ranked["fits_after_raising"]]
glue_all({
    "agent_raised": " and the ".join(raised["machine"]),
    "agent_raised_cap": raised["capacity_GiB"].iloc[0],
    "agent_raised_usable": raised["usable_GiB"].iloc[0],
})
assert raised["capacity_GiB"].nunique() == 1 and raised["usable_GiB"].nunique() == 1
m3u = runs[(runs["chip"] == best_apple["machine"])]
priced_cores = m3u[m3u["gpu_cores"] == m3u["gpu_cores"].min()]
glue_all({
    "apple_best_priced_cores": int(priced_cores["gpu_cores"].iloc[0]),
    "apple_best_priced_ttft": best_apple["prefill_flops"] / priced_cores["flops_per_s"].iloc[0],
})
assert f"{int(priced_cores['gpu_cores'].iloc[0])}-core GPU" in best_apple["price_configuration"]
for variant, key in (("H100 SXM", "sxm"), ("H100 PCIe", "pcie")):
    glue(f"h100_bound_{key}", r.loc[variant, "ttft_bound_s"])
    glue(f"h100_reached_{key}", r.loc[variant, "prefill_fraction_high"])
    glue(f"h100_roof_{key}", r.loc[variant, "roof_TFLOPS"])
h100_served = napkin.predict("H100 SXM", agent.model, weights="fp8", kv="fp8",
                             input_tokens=agent.prompt_tokens,
                             output_tokens=agent.output_tokens, batch=1)
assert h100_served.feasible  # the prose: in 16 bits the cache does not fit beside the weights
assert not napkin.predict("H100 SXM", agent.model, weights="fp8", kv="fp16",
                          input_tokens=agent.prompt_tokens, output_tokens=agent.output_tokens,
                          batch=1).feasible
glue_all({
    "h100_served_ttft": h100_served.ttft_s,
    "h100_ttft": r.loc["H100 SXM", "ttft_mid_s"],
    "unranked_fit": ", ".join(ranked[ranked["fits"] & ranked["rank"].isna()]["machine"]),
    "too_small": ", ".join(ranked[~ranked["fits"] & ~ranked["fits_after_raising"]]["machine"]),
    "prefill_share": first["ttft_mid_s"] / (first["ttft_mid_s"] + agent.output_tokens /
                                              first["decode_mid_tok_per_s"]),
    "apple_prefill_share": best_apple["ttft_mid_s"] / (
    best_apple["ttft_mid_s"] + agent.output_tokens / best_apple["decode_mid_tok_per_s"]),
})
# what the prose says in words, checked so that it cannot drift from the numbers; the
# errata page's check of the essay's coding agent: only NVIDIA GPUs rank above the best Apple
# chip, and prefill is most of that chip's request
assert errata.erratum("coding_agent_prefill_wall").conclusion_holds
above = top[top["rank"] < best_apple["rank"]]
assert (above["vendor"] == "NVIDIA").all()
assert (ranked[ranked["fits"] & ranked["rank"].isna()]["ttft_bound_s"].notna()).all()
assert r.loc["H100 SXM", "ttft_mid_s"] == r.loc["H100 PCIe", "ttft_mid_s"]

# %% [markdown]
# The {glue:text}`first_machine` answers first, after about {glue:text}`first_ttft:.0f` s,
# then the {glue:text}`second_machines` ({glue:text}`second_ttft:.0f` s: the same published
# runs, counted for both cards because one copy of the scoreboard calls the card SXM and
# another PCIe). DGX Spark, whose sparse FP4 petaFLOP the essay says "shows up in the first
# number", ranks {glue:text}`spark_rank:d`: {glue:text}`spark_ttft:.0f` s, its published run
# having reached {glue:text}`spark_reached:.0%` of the INT8 roof derived for it. The best
# Apple chip, the {glue:text}`apple_best`, ranks {glue:text}`apple_best_rank:d` and needs
# {glue:text}`apple_best_ttft:.0f` s, about {glue:text}`apple_best_min:.0f` minutes, before it
# writes a word; it then writes the whole answer at about
# {glue:text}`apple_best_decode:.0f` tokens/s in {glue:text}`apple_answer_s:.0f` s. Its price
# in the table is for the {glue:text}`apple_best_priced_cores:d`-core GPU, whose own run is
# the slow end of that range ({glue:text}`apple_best_priced_ttft:.0f` s). The wait
# for the first token is {glue:text}`apple_prefill_share:.0%` of the
# {glue:text}`apple_best`'s time for the whole request, against
# {glue:text}`prefill_share:.0%` on the {glue:text}`first_machine`: prefill is the wall the
# essay says it is, and the wall is highest on the machines slowest at it. Every machine that
# ranks above the best Apple chip is an NVIDIA GPU; below it come the other Apple chips and
# {glue:text}`non_apple_after`. Apple's chips are not the slowest at prefill, though: Strix
# Halo's first-hand runs put it at {glue:text}`strix_fast:.0f` to
# {glue:text}`strix_slow:,.0f` s (median {glue:text}`strix_ttft:.0f` s), behind the
# {glue:text}`macs_before_strix`. The {glue:text}`agent_raised` hold the model in their
# {glue:text}`agent_raised_cap:.0f` GiB, but their GPUs may use only
# {glue:text}`agent_raised_usable:.0f` GiB by default: they would run it only after the limit
# is raised, and are not ranked.
#
# The bounds show how far published prefill is from the arithmetic. On the H100 the INT8
# roofline allows {glue:text}`h100_bound_sxm:.1f` s if the card is an SXM
# ({glue:text}`h100_roof_sxm:,.0f` TOPS) or {glue:text}`h100_bound_pcie:.1f` s if a PCIe
# ({glue:text}`h100_roof_pcie:,.0f` TOPS); llama.cpp's best published run reached
# {glue:text}`h100_reached_sxm:.0%` or {glue:text}`h100_reached_pcie:.0%` of that roof,
# hence {glue:text}`h100_ttft:.0f` s either way. llama.cpp is not what datacenter GPUs
# usually run, and a serving stack built for them comes much closer to the bound: chapter 9's
# calibrated model, fitted on such stacks, gives an H100 SXM its first token after about
# {glue:text}`h100_served_ttft:.0f` s, with the weights and the cache in FP8 (in 16 bits the
# cache of this prompt does not fit beside them). For the datacenter GPUs this ranking ranks
# llama.cpp as much as the hardware. The
# datacenter GPUs without a published llama.cpp run ({glue:text}`unranked_fit`) are listed
# with their bounds and not ranked: there is nothing measured to rank them by. The model does
# not fit at all on the {glue:text}`too_small`.

# %% tags=["hide-input"]
split = buying.hardware_and_software(ranked)
swaps = buying.swapped_pairs(split)
software = buying.backend_fractions(list(inputs["machine"]))
by_backend = software.set_index(["vendor", "run_backend"])
for (vendor, backend), key in ((("Apple", "Metal"), "metal"), (("NVIDIA", "CUDA"), "cuda"),
                               (("AMD", "Vulkan"), "strix_vulkan")):
    row = by_backend.loc[(vendor, backend)]
    glue(f"fr_{key}_med", row["median"])
    glue(f"fr_{key}_low", row["low"])
    glue(f"fr_{key}_high", row["high"])
    glue(f"fr_{key}_runs", int(row["runs"]))
assert len(software) == 3
s_ = split.set_index("machine")
glue_all({
    "split_n": len(split),
    "split_pairs": len(split) * (len(split) - 1) // 2,
    "split_swaps": len(swaps),
    "split_swap_list": "; ".join(f"the {a} before the {b}" for a, b in swaps),
    "bound_gap": s_.loc["M2 Ultra", "ttft_bound_s"] / s_.loc["DGX Spark", "ttft_bound_s"],
    "runs_gap": s_.loc["M2 Ultra", "ttft_mid_s"] / s_.loc["DGX Spark", "ttft_mid_s"],
    "strix_bound": s_.loc["Strix Halo", "ttft_bound_s"],
    "bound_span": split["ttft_bound_s"].max() / split["ttft_bound_s"].min(),
    "runs_span": split["ttft_mid_s"].max() / split["ttft_mid_s"].min(),
})
assert all("Strix Halo" in pair for pair in swaps)
glue("strix_swapped_with", " and the ".join(b if a == "Strix Halo" else a for a, b in swaps))

# %% [markdown]
# ### How much of this ranking is software
#
# Each estimate is a bound divided by the share of its roof the machine's published runs
# reached. The bound is hardware; the share is mostly software: the backend, its kernels, the
# build, and it differs by backend. Apple's Metal runs reach a median of
# {glue:text}`fr_metal_med:.0%` of the FP16 roof of their own GPU configuration, and all of
# them lie close to it ({glue:text}`fr_metal_low:.0%` to {glue:text}`fr_metal_high:.0%`,
# {glue:text}`fr_metal_runs:d` runs); NVIDIA's CUDA runs reach
# {glue:text}`fr_cuda_med:.0%` of their INT8 roof ({glue:text}`fr_cuda_low:.0%` to
# {glue:text}`fr_cuda_high:.0%`, {glue:text}`fr_cuda_runs:d` runs; the disputed H100 and A100
# runs left out); Strix Halo's Vulkan runs {glue:text}`fr_strix_vulkan_med:.0%`
# ({glue:text}`fr_strix_vulkan_low:.0%` to {glue:text}`fr_strix_vulkan_high:.0%`,
# {glue:text}`fr_strix_vulkan_runs:d` runs). So across the {glue:text}`split_n:d` ranked
# machines with a bound and an undisputed run, the bounds span a factor of
# {glue:text}`bound_span:.0f` and the estimates only {glue:text}`runs_span:.0f`: llama.cpp
# narrows the hardware's gap, because the machines with the most arithmetic use the least of
# it. By the roofs, DGX Spark would answer {glue:text}`bound_gap:.1f` times sooner than the
# M2 Ultra; by the published runs, {glue:text}`runs_gap:.1f` times. The order moves less than
# the gaps: of {glue:text}`split_pairs:d` pairs, the runs reverse {glue:text}`split_swaps:d`
# ({glue:text}`split_swap_list`). That is software: Strix Halo's bound
# ({glue:text}`strix_bound:.0f` s) is shorter than the {glue:text}`strix_swapped_with`'s, and
# its runs reach a smaller share of it.

# %%
tables.styled(software, "table-buy-software", {
    "vendor": "Vendor", "run_backend": "Backend of the run", "runs": "Runs",
    "low": "Of the roof: lowest", "median": "median", "high": "highest",
    "machines": "Machines"}, formats={c: "{:.0%}" for c in ("low", "median", "high")})

# %% tags=["hide-input"]
check = buying.extrapolation_check()
bench = check[check["source"].str.startswith("benchmark file")]
glue_all({
    "check_depths": ", ".join(f"{d:,}" for d in sorted(bench["depth_tokens"].unique())),
    "qwen_bench_b": float(sb[sb["model"].str.startswith("Qwen2.5-Coder-7B")]
                           ["model_params_B"].iloc[0]),
    "qwen_config_b": catalog.params("Qwen2.5-7B-Instruct") / 1e9,
    "n_guide_machines": check[check["source"] == "gpt-oss guide"]["machine"].nunique(),
})
strix_check = check[check["chip"] == "Strix Halo"]
glue_all({
    "strix_check_tests": " and ".join(sorted(strix_check["test"].unique())),
    "strix_check_backends": " and ".join(sorted(strix_check["backend"].unique())),
})

# %% [markdown]
# ## Checking the method against runs it did not see
#
# The ranking turns one short prompt of one small dense model at Q4_0 into the first token of
# a {glue:text}`agent_prompt:,d`-token prompt of a 70B model at Q4_K. The data holds tests of
# that step: published prefill runs of other models on machines that also have reference
# runs. The llama.cpp benchmark file measures DGX Spark and the M2 Ultra at pp2048 with
# {glue:text}`check_depths` tokens already cached, for two mixture-of-experts models
# (gpt-oss-20b and gpt-oss-120b) and a dense one (Qwen2.5-Coder-7B, costed with the
# architecture of Qwen2.5-7B in `data/models`: llama-bench counts
# {glue:text}`qwen_bench_b:.2f` B parameters in the file, the config
# {glue:text}`qwen_config_b:.2f` B); the gpt-oss guide measures
# {glue:text}`n_guide_machines:d` machines on gpt-oss at no depth; and Strix Halo's
# benchmarks hold {glue:text}`strix_check_tests` runs of a dense Llama 3 70B fine-tune at
# Q4_K_M, the agent's own architecture, under {glue:text}`strix_check_backends`. Exactly the
# ranking's method predicts each rate: the machine's FLOP/s on its median reference run (of
# the same GPU configuration where the run names one), times the target run's prompt tokens,
# over their FLOPs after the cached tokens (`napkin.buying.prompt_flops`; a mixture of
# experts by its active parameters).

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-buy-extrapolation",
    chart=charts.extrapolation(
        check, "How far one reference run carries",
        "predicted / measured prefill rate of other models; above 1 the method is too fast"),
    caption="Prefill rate predicted from each machine's Llama-2-7B Q4_0 pp512 runs, over the "
            "rate measured for other models, by the tokens cached at the end of the prompt; "
            "one line per machine, model and llama.cpp build, log scales.",
    source="napkin.buying.extrapolation_check over data/spark_bench_llamacpp.csv (llama.cpp "
           "benchmark file and its copies), data/gpt_oss_llamacpp.csv and "
           "data/strix_halo_llamacpp.csv, with the reference runs of "
           "data/apple_silicon_llama2_7b.csv, gpu_llama2_7b_q4_0.csv and "
           "strix_halo_llamacpp.csv.",
)

# %%
summary = buying.extrapolation_summary(check)
tables.styled(summary, "table-buy-extrapolation", {
    "group": "Runs", "runs": "Count", "median": "Predicted / measured: median",
    "q25": "first quartile", "q75": "third quartile", "low": "lowest", "high": "highest"},
    formats={c: "{:.2f}" for c in ("median", "q25", "q75", "low", "high")})

# %% tags=["hide-input"]
sm = summary.set_index("group")
glue("n_check", len(check))
for group, key, stats in (("all", "all", ("median", "q25", "q75", "low", "high")),
                          ("dense", "dense", ("median", "low", "high")),
                          ("Metal (Apple)", "metal", ("median", "low", "high")),
                          ("dense, deepest context", "deep", ("low", "high"))):
    for stat in stats:
        glue(f"chk_{key}_{stat}", sm.loc[group, stat])
glue("chk_dense_n", int(sm.loc["dense", "runs"]))
dense = check[~check["moe"]]
moe_cuda = check[check["moe"] & (check["backend"] == "CUDA")]
glue_all({
    "moe_cuda_low": moe_cuda["ratio"].min(),
    "moe_cuda_high": moe_cuda["ratio"].max(),
})
dense_by = dense.groupby("vendor")["ratio"].agg(["min", "max"])
glue_all({
    "dense_cuda_low": dense_by.loc["NVIDIA", "min"],
    "dense_cuda_high": dense_by.loc["NVIDIA", "max"],
    "dense_metal_low": dense_by.loc["Apple", "min"],
    "dense_metal_high": dense_by.loc["Apple", "max"],
})
dense_machines = dense.groupby("vendor")["machine"].unique()
glue_all({
    "dense_cuda_machines": " and ".join(sorted(dense_machines["NVIDIA"])),
    "dense_metal_machines": " and ".join(sorted(dense_machines["Apple"])),
})
assert all(len(dense_machines[v]) == 1 for v in ("NVIDIA", "Apple"))  # "the only ..." below
agent_nvidia = top[top["vendor"] == "NVIDIA"]["machine"]
glue_markdown("dense_unchecked", ", ".join(
    m for m in agent_nvidia if m not in set(dense_machines["NVIDIA"])) or "none")
strix_ratio = strix_check.set_index("backend")["ratio"]
glue_all({
    "strix_ratio_rocm": strix_ratio["ROCm"],
    "strix_ratio_vulkan": strix_ratio["Vulkan"],
    "strix_check_slow": r.loc["Strix Halo", "ttft_mid_s"] * strix_ratio.max(),
})
amdvlk = strix_file[(strix_file["backend"] == "Vulkan AMDVLK") & (strix_file["test"] == "pp512")
                    & strix_file["model"].str.startswith("Llama 2 7B")].set_index("quant")
glue("strix_vulkan_q4km_share", float(amdvlk.loc["Q4_K_M", "throughput_tok_per_s"]) /
     float(amdvlk.loc["Q4_0", "throughput_tok_per_s"]))
band = buying.ttft_check_band(top, check).set_index("machine")
glue_all({
    "spark_check_high": band.loc["DGX Spark", "ttft_check_high_s"],
    "apple_check_low": band.loc[best_apple["machine"], "ttft_check_low_s"],
})
assert band.loc[above["machine"], "ttft_check_high_s"].max() < \
    band.loc[best_apple["machine"], "ttft_check_low_s"]
assert sm.loc["dense", "high"] == strix_ratio.max() and moe_cuda["ratio"].min() > 1
assert check["ratio"].max() == moe_cuda["ratio"].max()
dense_ctx = dense["depth_tokens"] + dense["prompt_tokens"]
glue_all({
    "deepest": int(dense_ctx.max()),
    "agent_beyond": agent.prompt_tokens / int(dense_ctx.max()) - 1,
    "deep_machines": " and ".join(sorted(dense[dense_ctx == dense_ctx.max()]["machine"]
                                          .unique())),
})

# %% [markdown]
# Over all {glue:text}`n_check:d` runs, predicted over measured has a median of
# {glue:text}`chk_all_median:.2f` (quartiles {glue:text}`chk_all_q25:.2f` to
# {glue:text}`chk_all_q75:.2f`, range {glue:text}`chk_all_low:.2f` to
# {glue:text}`chk_all_high:.2f`). The widest errors are mixtures of experts on NVIDIA's GPUs:
# the method is too fast on every one of them, by a factor of
# {glue:text}`moe_cuda_low:.2f` to {glue:text}`moe_cuda_high:.2f`. llama.cpp's CUDA build
# runs gpt-oss's experts at a far smaller share of the card than it runs dense Llama-2-7B,
# and counting active parameters does not capture that. On Apple's GPUs the method is about
# right (median {glue:text}`chk_metal_median:.2f`, {glue:text}`chk_metal_low:.2f` to
# {glue:text}`chk_metal_high:.2f`).
#
# **How far the coding agent's first token can be trusted.** Its model is dense, so the dense
# runs are the check that applies ({glue:text}`chk_dense_n:d` runs, median
# {glue:text}`chk_dense_median:.2f`, {glue:text}`chk_dense_low:.2f` to
# {glue:text}`chk_dense_high:.2f`). On the dense 7B model at depth the method holds: at the
# deepest context measured, {glue:text}`deepest:,d` tokens on the
# {glue:text}`deep_machines`, predicted over measured is {glue:text}`chk_deep_low:.2f` to
# {glue:text}`chk_deep_high:.2f`, and the agent's prompt is only
# {glue:text}`agent_beyond:.0%` longer. The agent's own architecture tells a split story: on
# Strix Halo the method is close for the HIP run ({glue:text}`strix_ratio_rocm:.2f`) and
# {glue:text}`strix_ratio_vulkan:.1f` times too fast for the Vulkan run. That build's rate
# falls with the format and the size: on Llama-2-7B its Q4_K_M run reached
# {glue:text}`strix_vulkan_q4km_share:.0%` of its Q4_0 rate, and on the 70B model far less of
# the reference's FLOP/s. Read as time, the first token would come after
# {glue:text}`dense_cuda_low:.2f` to {glue:text}`dense_cuda_high:.2f` times the estimate on
# the {glue:text}`dense_cuda_machines` (the only NVIDIA machine with dense runs to check;
# the other NVIDIA GPUs ranked for the agent, {glue:md}`dense_unchecked`, have none),
# {glue:text}`dense_metal_low:.2f` to {glue:text}`dense_metal_high:.2f` times on the
# {glue:text}`dense_metal_machines` (the only Mac with them), and
# up to {glue:text}`strix_check_slow:,.0f` s on Strix Halo with that Vulkan build, if the
# method errs there as it did here. Applied to the ranking, that error does not change which
# family comes first: DGX Spark's first token would come after at most
# {glue:text}`spark_check_high:.0f` s, the {glue:text}`apple_best`'s after at least
# {glue:text}`apple_check_low:.0f` s. So the order between NVIDIA's GPUs and Apple's chips is
# robust to the error the data shows; the seconds are good to about the factors above; the
# datacenter GPUs (no reference runs) and mixtures of experts on NVIDIA GPUs (too optimistic
# by up to {glue:text}`moe_cuda_high:.1f` times) are not covered by it.

# %% tags=["hide-input"]
glue_all({
    "chat_prompt": chat.prompt_tokens,
    "chat_output": chat.output_tokens,
})

# %% [markdown]
# ## Chat: one stream, short prompts
#
# One user, {glue:text}`chat_prompt:,d`-token prompts and {glue:text}`chat_output:,d`-token
# answers with the same model: ranked by decode speed, where bandwidth over the bytes read
# per token is the headline.

# %%
ranked_chat = buying.rank(chat)
tables.styled(buying.ranking_display(ranked_chat[ranked_chat["fits"]]), "table-buy-chat", {
    "rank": "Rank", "machine": "Machine", "decode": "Tokens/s: middle (range)",
    "discount": "Of the ceiling", "ttft": "First token (s)",
    "memory": "Memory needed (GPU may use)", "price": "Price"})

# %% tags=["hide-input"]
c = ranked_chat[ranked_chat["rank"].notna()]
rc = ranked_chat.set_index("machine")
glue_all({
    "chat_first": c.iloc[0]["machine"],
    "chat_first_tps": c.iloc[0]["decode_mid_tok_per_s"],
})
for variant, key in (("H100 SXM", "sxm"), ("H100 PCIe", "pcie")):
    glue(f"chat_h100_{key}", rc.loc[variant, "decode_mid_tok_per_s"])
    glue(f"chat_h100_{key}_rank", int(rc.loc[variant, "rank"]))
glue("chat_h100_own", rc.loc["H100 SXM", "decode_own_tok_per_s"])
assert np.isclose(rc.loc["H100 SXM", "decode_own_tok_per_s"],
                  rc.loc["H100 PCIe", "decode_own_tok_per_s"])  # one run, read two ways
local = c[c["family"] == "Apple Silicon"].iloc[0]
glue_all({
    "chat_apple": local["machine"],
    "chat_apple_tps": local["decode_mid_tok_per_s"],
    "chat_apple_low": local["decode_low_tok_per_s"],
    "chat_apple_high": local["decode_high_tok_per_s"],
    "chat_apple_ceiling": local["ceiling_tok_per_s"],
    "chat_apple_own": local["decode_own_tok_per_s"],
    "chat_spark_tps": rc.loc["DGX Spark", "decode_mid_tok_per_s"],
    "chat_strix_tps": rc.loc["Strix Halo", "decode_mid_tok_per_s"],
    "chat_spark_ttft": rc.loc["DGX Spark", "ttft_mid_s"],
    "chat_apple_ttft": local["ttft_mid_s"],
})
whole = {m: rc.loc[m, "ttft_mid_s"] + chat.output_tokens / rc.loc[m, "decode_mid_tok_per_s"]
         for m in ("DGX Spark", local["machine"])}
glue_all({
    "chat_spark_whole": whole["DGX Spark"],
    "chat_apple_whole": whole[local["machine"]],
})
whole_agent = {m: r.loc[m, "ttft_mid_s"] + agent.output_tokens / r.loc[m, "decode_mid_tok_per_s"]
               for m in ("DGX Spark", local["machine"])}
glue_all({
    "agent_spark_whole": whole_agent["DGX Spark"],
    "agent_apple_whole": whole_agent[local["machine"]],
})
# the same whole request at the ends of the ranges: the fast end with the fast decode
agent_ends = {m: (r.loc[m, "ttft_fast_s"] + agent.output_tokens / r.loc[m, "decode_high_tok_per_s"],
                  r.loc[m, "ttft_slow_s"] + agent.output_tokens / r.loc[m, "decode_low_tok_per_s"])
              for m in ("DGX Spark", local["machine"])}
spark_end, apple_end = agent_ends["DGX Spark"], agent_ends[local["machine"]]
glue_all({"agent_spark_fast": spark_end[0], "agent_spark_slow": spark_end[1],
          "agent_apple_fast": apple_end[0], "agent_apple_slow": apple_end[1]})
assert spark_end[1] >= apple_end[0]  # the prose: the two machines' ranges overlap
assert whole["DGX Spark"] > whole[local["machine"]]
assert whole_agent["DGX Spark"] < whole_agent[local["machine"]]
assert rc.loc["DGX Spark", "ttft_mid_s"] < local["ttft_mid_s"]
assert np.isnan(c.iloc[0]["price"])
desk_chat = c[buying.on_desk(c)]
assert desk_chat.iloc[0]["machine"] == local["machine"]
faster_cards = c[c["machine"].isin(buying.WORKSTATION_CARDS) & c["rank"].notna() &
                 (c["decode_mid_tok_per_s"] > local["decode_mid_tok_per_s"])]
glue_markdown("chat_cards_faster", " and ".join(
    f"the {m} at about {v:.0f} tokens/s" for m, v in
    zip(faster_cards["machine"], faster_cards["decode_mid_tok_per_s"])) or
    "none of the workstation cards in the data does")
# the price of a token per second, under the two discounts; a graphics card's price leaves out
# the computer it needs, so whole machines are compared with each other and cards set apart
priced = c[c["price"].notna()].sort_values("price_per_tok_per_s")
glue("chat_priced", ", ".join(f"{m} ({cur} {p:,.0f})" for m, p, cur in
                              zip(priced["machine"], priced["price"], priced["currency"])))
whole_machines = priced[buying.on_desk(priced)]
cards = priced[~buying.on_desk(priced)]
cheapest, runner_up = whole_machines.iloc[0], whole_machines.iloc[1]
glue_all({
    "chat_cheapest": cheapest["machine"],
    "chat_cheapest_per": cheapest["price_per_tok_per_s"],
    "chat_runner_up": runner_up["machine"],
    "chat_runner_up_per": runner_up["price_per_tok_per_s"],
    "chat_cheapest_config": cheapest["price_configuration"],
})
bw = {m: hardware.chip(m).bandwidth_bytes_per_s / GB for m in (cheapest["machine"],
                                                                runner_up["machine"])}
glue_all({
    "chat_bw_cheapest": bw[cheapest["machine"]],
    "chat_bw_runner_up": bw[runner_up["machine"]],
})
assert errata.erratum("m3_ultra_bandwidth").verdict == "sources disagree"
assert {cheapest["machine"], runner_up["machine"]} == {"M3 Ultra", "M2 Ultra"}
own_cheapest = whole_machines.sort_values("price_per_own_tok_per_s").iloc[0]
glue_all({
    "chat_own_cheapest": own_cheapest["machine"],
    "chat_own_cheapest_per": own_cheapest["price_per_own_tok_per_s"],
    "chat_own_first_per": rc.loc[cheapest["machine"], "price_per_own_tok_per_s"],
})
assert own_cheapest["machine"] != cheapest["machine"]
glue_markdown("chat_cards", "; ".join(
    f"the {r['machine']}'s card alone ({r['currency']} {r['price']:,.0f}) comes to "
    f"{r['price_per_tok_per_s']:,.0f} dollars per token/s before the computer around it"
    for _, r in cards.iterrows()) or "no graphics card has a recorded price")

# %% [markdown]
# The ranking is bandwidth, discounted: the {glue:text}`chat_first` leads at about
# {glue:text}`chat_first_tps:.0f` tokens/s. The H100 ranks {glue:text}`chat_h100_sxm_rank:d`
# if it is an SXM card ({glue:text}`chat_h100_sxm:.0f` tokens/s) or
# {glue:text}`chat_h100_pcie_rank:d` if a PCIe one ({glue:text}`chat_h100_pcie:.0f`); at
# the fraction its own llama.cpp run reached it would write about
# {glue:text}`chat_h100_own:.0f` either way (one measured rate, read against two ceilings),
# and the range in the table reaches down to that. Among
# the unified-memory machines on a desk (Apple's chips, DGX Spark and Strix Halo), the
# {glue:text}`chat_apple` leads: its ceiling is
# {glue:text}`chat_apple_ceiling:.0f` tokens/s, and the Apple family's runs put it at
# {glue:text}`chat_apple_tps:.0f` ({glue:text}`chat_apple_low:.0f` to
# {glue:text}`chat_apple_high:.0f`; its own runs of the small reference model, at the low end,
# {glue:text}`chat_apple_own:.1f`), against {glue:text}`chat_spark_tps:.1f` on DGX Spark and
# {glue:text}`chat_strix_tps:.1f` on Strix Halo. A workstation card that holds the model, in a
# desk computer bought around it, writes faster still: {glue:md}`chat_cards_faster`. DGX Spark
# still answers first
# ({glue:text}`chat_spark_ttft:.0f` s against {glue:text}`chat_apple_ttft:.0f` s) and writes
# more slowly, as in the coding agent; what turns round is the whole request. With a short
# prompt the writing dominates, and the {glue:text}`chat_apple` finishes in
# {glue:text}`chat_apple_whole:.0f` s against DGX Spark's {glue:text}`chat_spark_whole:.0f` s;
# with the agent's long prompt DGX Spark finished first ({glue:text}`agent_spark_whole:.0f` s
# against {glue:text}`agent_apple_whole:.0f` s, though their ranges overlap:
# {glue:text}`agent_spark_fast:.0f`-{glue:text}`agent_spark_slow:.0f` s against
# {glue:text}`agent_apple_fast:.0f`-{glue:text}`agent_apple_slow:.0f` s). The essay's mirror
# image, computed.
#
# Of the machines with a vendor price ({glue:text}`chat_priced`), the whole machine that
# costs least per token/s of decode at the family's middle discount is the
# {glue:text}`chat_cheapest`, at
# about {glue:text}`chat_cheapest_per:,.0f` dollars for each, for the
# {glue:text}`chat_cheapest_config` configuration, against {glue:text}`chat_runner_up_per:,.0f`
# for the {glue:text}`chat_runner_up`. That order rests on the bandwidths the two are costed
# at, {glue:text}`chat_bw_cheapest:,.0f` against {glue:text}`chat_bw_runner_up:,.0f` GB/s, a
# figure the errata page lists as one on which sources disagree. At each machine's own runs'
# fraction instead, the {glue:text}`chat_own_cheapest` costs least, about
# {glue:text}`chat_own_cheapest_per:,.0f` dollars per token/s, and the
# {glue:text}`chat_cheapest` {glue:text}`chat_own_first_per:,.0f`. Which machine is the
# cheapest token depends on the discount, and the data cannot settle it. Set apart, because
# their prices are for the card only: {glue:md}`chat_cards`. Chapter 11 prices a token in
# full, bought, rented or through an API ({doc}`11_cost_and_energy`).

# %% [markdown]
# What a chat token costs on each machine that holds the model, bought (list price over a
# stated life and use, plus electricity) or rented (the median quoted GPU-hour), comes from
# chapter 11's model with its defaults. A rented GPU's speed there is chapter 9's calibrated
# step model serving the stream, as chapter 11 prices it, not the llama.cpp estimate of the
# ranking above; the price column says how many providers' quotes stand behind each rate,
# and the graphics cards' prices are for the card alone:

# %%
chat_cost = costs.cost_column(chat, costs.Usage(), machines=list(c["machine"]))
chat_cost = chat_cost[chat_cost["usd_per_mtok"].notna()].sort_values("usd_per_mtok")
tables.styled(chat_cost.assign(band=[buying.fmt_range(a, b, h, 2) for a, b, h in zip(
    chat_cost["usd_per_mtok_low"], chat_cost["usd_per_mtok"], chat_cost["usd_per_mtok_high"])]),
    "table-buy-chat-cost", {"machine": "Machine", "how": "Bought or rented",
                            "band": "Dollars per million output tokens (range)",
                            "configuration": "Configuration priced", "price_basis": "Price"})

# %% tags=["hide-input"]
ranked_many = buying.rank(many)
m_ = ranked_many[ranked_many["rank"].notna()]
rm = ranked_many.set_index("machine")
glue_all({
    "many_users": many.users,
    "many_prompt": many.prompt_tokens,
    "many_output": many.output_tokens,
    "many_format": many.weight_format,
    "many_weights_gib": rm["weights_GiB"].iloc[0],
    "many_kv_gib": rm["kv_per_user_GiB"].iloc[0],
    "many_need_gib": rm["need_GiB"].iloc[0],
})

# %% [markdown]
# ## Many users
#
# {glue:text}`many_users:d` users at once (the essay's batch example), with
# {glue:text}`many_prompt:,d`-token prompts and {glue:text}`many_output:,d`-token answers, the
# model at {glue:text}`many_format` ({glue:text}`many_weights_gib:.0f` GiB of weights). Now
# memory decides first: the weights and every user's cache
# ({glue:text}`many_kv_gib:.2f` GiB each, {glue:text}`many_need_gib:.0f` GiB in all) must fit.

# %%
tables.styled(buying.ranking_display(ranked_many), "table-buy-many-users", {
    "rank": "Rank", "machine": "Machine",
    "per_user": "Tokens/s per user while decoding: middle (range)",
    "memory": "Memory needed (GPU may use)", "users": "Users that fit",
    "note": "Not ranked because"})

# %% tags=["hide-input"]
glue_all({
    "many_n_fit": len(m_),
    "many_first": m_.iloc[0]["machine"],
    "many_first_tps": m_.iloc[0]["per_user_mid_tok_per_s"],
    "many_first_total": many.users * m_.iloc[0]["per_user_mid_tok_per_s"],
    "many_first_compute_share": m_.iloc[0]["step_compute_s"] / m_.iloc[0]["step_read_s"],
    "h100_users": int(rm.loc["H100 SXM", "max_users"]),
    "h100_cap": rm.loc["H100 SXM", "capacity_GiB"],
})
assert rm.loc["H100 SXM", "max_users"] == rm.loc["H100 PCIe", "max_users"]
many_raised = ranked_many[ranked_many["fits_after_raising"]]
glue_all({
    "many_raised": " and the ".join(many_raised["machine"]),
    "many_raised_usable": many_raised["usable_GiB"].iloc[0],
})
assert many_raised["usable_GiB"].nunique() == 1
desk_many = m_[buying.on_desk(m_)]
desk = desk_many.iloc[0]
glue_all({
    "many_desk": desk["machine"],
    "many_desk_tps": desk["per_user_mid_tok_per_s"],
    "many_desk_users": int(desk["max_users"]),
    "many_desk_order": ", ".join(f"{m} {v:.1f}" for m, v in
                                  zip(desk_many["machine"], desk_many["per_user_mid_tok_per_s"])),
})
# the same users' prompts too: whole requests, prompts prefilled one after another
by_request = desk_many.sort_values("request_per_user_mid_tok_per_s", ascending=False)
req_lead = by_request.iloc[0]
glue_all({
    "many_req_lead": req_lead["machine"],
    "many_req_lead_tps": req_lead["request_per_user_mid_tok_per_s"],
    "many_req_lead_round": req_lead["round_s"],
    "many_desk_round": desk["round_s"],
    "many_req_order": ", ".join(f"{m} {v:.2f}" for m, v in zip(
    by_request["machine"], by_request["request_per_user_mid_tok_per_s"])),
})
assert req_lead["machine"] != desk["machine"]  # the prose: another machine serves them fastest
assert desk["step_compute_s"] > desk["step_read_s"]
desk_bound = buying.bound_by(desk_many)
glue_markdown("desk_bound", buying.bound_sentence(desk_bound))
assert desk_bound.set_index("machine").loc["DGX Spark", "bound"] == "memory"
glue("bound_tie", buying.TIE)
glue_markdown("desk_compute_bound", " and the ".join(
    desk_bound[desk_bound["bound"] == "compute"]["machine"]) or "none of them")
assert (m_.head(4)["compute_basis"].str.startswith("roof")).all()
assert (m_.head(4)["step_compute_s"] < m_.head(4)["step_read_s"]).all()
assert m_.head(4)["price"].isna().all() and "H100 SXM" not in set(m_["machine"])
# llama.cpp has no FP8 weights: the nearest, Q8_0, on the machines that run llama.cpp
q8 = buying.rank(buying.Workload("q8", many.prompt_tokens, many.output_tokens, many.users,
                                 many.model, "Q8_0", "concurrency")).set_index("machine")
glue("many_q8_need_gib", q8["need_GiB"].iloc[0])
spark_visible = hardware.chip("DGX Spark").specs["driver_visible_memory_MiB"] / 1024
glue_all({
    "spark_visible_gib": spark_visible,
    "many_q8_spark_margin": spark_visible - q8.loc["DGX Spark", "need_GiB"],
    "strix_visible_gib": hardware.chip("Strix Halo").specs["driver_visible_memory_MiB"] / 1024,
})
assert q8.loc["DGX Spark", "need_GiB"] < spark_visible
strix_visible = hardware.chip("Strix Halo").specs["driver_visible_memory_MiB"] / 1024
glue("strix_q8_short_gib", q8.loc["Strix Halo", "need_GiB"] - strix_visible)
assert q8.loc["Strix Halo", "need_GiB"] > strix_visible  # the prose: Strix Halo falls short

# %% [markdown]
# {glue:text}`many_n_fit:d` machines hold it. The H100 is not among them, SXM or PCIe: its
# {glue:text}`h100_cap:.0f` GiB hold the weights and the caches of only
# {glue:text}`h100_users:d` such users, the capacity wall of chapter 4. Nor are the
# {glue:text}`many_raised`: their GPUs may use {glue:text}`many_raised_usable:.0f` GiB by
# default, less than the batch needs, though their whole memory would hold it. The
# {glue:text}`many_first` leads, at about {glue:text}`many_first_tps:.0f` tokens/s per user,
# {glue:text}`many_first_total:,.0f` in all: one read of the weights now serves every user.
# The datacenter parts have no published llama.cpp run, so their step's arithmetic is costed
# at their roofs (FP8 where the chip states an FP8 figure); but they are bound by memory here,
# not arithmetic (on the {glue:text}`many_first` the arithmetic takes
# {glue:text}`many_first_compute_share:.0%` of the time the reads do), so that bound costs
# them little. The large unified memories on a desk hold the batch too. Their step's
# arithmetic is costed at the rate their published prefill runs reached, its reads at their
# discounted bandwidth, and which one binds differs by machine (a step whose two sides are
# within {glue:text}`bound_tie:.2f`x of each other is bound by neither): {glue:md}`desk_bound`.
# The arithmetic runs out first only on the {glue:md}`desk_compute_bound`. While decoding,
# the {glue:text}`many_desk` leads the unified-memory machines on a desk: it could hold
# {glue:text}`many_desk_users:d` users and gives each about {glue:text}`many_desk_tps:.1f`
# tokens/s (per user while decoding: {glue:text}`many_desk_order`). That counts the answers
# alone. Each user first sends a {glue:text}`many_prompt:,d`-token prompt, and a desk machine
# prefills slowly: prefilling every user's prompt, one after another at the machine's middle
# prefill rate, then decoding the answers together takes {glue:text}`many_desk_round:,.0f` s
# on the {glue:text}`many_desk` and {glue:text}`many_req_lead_round:,.0f` s on the
# {glue:text}`many_req_lead`. Over whole requests each user gets
# {glue:text}`many_req_order` tokens/s, and the {glue:text}`many_req_lead`, not the
# {glue:text}`many_desk`, serves them fastest. That sum does not
# overlap prompts with decode steps, so it is the slow end: a memory-bound step leaves
# arithmetic spare that a serving engine can fill with prompt tokens, and DGX Spark's step is
# memory-bound. The gap is the essay's "someone else's batch": at this
# concurrency the machines that serve well are ones no vendor lists a price for; chapter 11
# prices renting them by the hour.
#
# One caveat for the desk: llama.cpp has no FP8 weights. Its nearest format, Q8_0, spends a
# little more per weight, and the batch then needs {glue:text}`many_q8_need_gib:.1f` GiB,
# within the {glue:text}`spark_visible_gib:.1f` GiB DGX Spark's Linux reports by
# {glue:text}`many_q8_spark_margin:.1f` GiB; Strix Halo's GPU maps what its owner's setting
# allows, {glue:text}`strix_visible_gib:.0f` GiB in the one public log the book records,
# {glue:text}`strix_q8_short_gib:.1f` GiB short of the batch at Q8_0: with llama.cpp, the one
# engine its runs come from, Strix Halo does not hold these users.

# %% tags=["hide-input"]
DATACENTER_SHOWN = ["B200", "MI300X", "H200"]
calibrated_users = {c: napkin.predict(c, many.model, weights=many.weight_format, kv="fp16",
                                      input_tokens=many.prompt_tokens,
                                      output_tokens=many.output_tokens, batch=many.users)
                    for c in DATACENTER_SHOWN}
per_user_cal = {c: 1 / p.tpot_s for c, p in calibrated_users.items()}
per_user_rank = {c: rm.loc[c, "per_user_mid_tok_per_s"] for c in DATACENTER_SHOWN}
server_band = validation_report.error_band("server", "seen")
glue_markdown("dc_calibrated", "; ".join(
    f"{c} {per_user_cal[c]:.0f} (this chapter: {per_user_rank[c]:.0f})"
    for c in DATACENTER_SHOWN))
glue_markdown("dc_bound", ", ".join(sorted({p.bound for p in calibrated_users.values()})))
glue_all({
    "dc_server_median": server_band["median"],
    "dc_server_p90": server_band["p90"],
})
same_order = sorted(per_user_cal, key=per_user_cal.get) == sorted(per_user_rank,
                                                                    key=per_user_rank.get)
assert same_order  # the prose: the discount keeps their order
flatter = [per_user_rank[c] / per_user_cal[c] for c in DATACENTER_SHOWN]
glue_all({
    "dc_flatter_low": min(flatter),
    "dc_flatter_high": max(flatter),
})
assert m_.iloc[0]["machine"] in per_user_cal
glue("many_first_cal", per_user_cal[m_.iloc[0]["machine"]])
new_pairs = [c for c in DATACENTER_SHOWN if validation_report.case_of(c, many.model) == "new"]
new_band = validation_report.error_band("server", "new")
glue_all({
    "dc_new_median": new_band["median"],
    "dc_new_p90": new_band["p90"],
})
glue_markdown("dc_new_chips", " and the ".join(new_pairs) or "none of these chips")
buyer_band = validation_report.error_band("server", "new stack")
glue_all({
    "dc_buyer_median": buyer_band["median"],
    "dc_buyer_p90": buyer_band["p90"],
    "dc_buyer_n": buyer_band["n"],
})

# %% [markdown]
# For the datacenter parts chapter 9's calibrated step model can say more: on MLPerf Server
# and Interactive results, which hold each user's time per token under a limit, it is within
# x{glue:text}`dc_server_median:.2f` for half of the rows of chips and models it was fitted
# on and x{glue:text}`dc_server_p90:.2f` for nine in ten (cross-validated), and within
# x{glue:text}`dc_new_median:.2f` for half and x{glue:text}`dc_new_p90:.2f` for nine in ten
# of the pairs of chip and model it had not seen,
# which is the case of the {glue:md}`dc_new_chips` with this model. For a buyer who serves on
# a stack of their own, chapter 9's band for a pair the fit had not seen on a stack it had not
# seen is x{glue:text}`dc_buyer_median:.2f` for half and x{glue:text}`dc_buyer_p90:.2f` for
# nine in ten, on only {glue:text}`dc_buyer_n:d` such Server and Interactive rows. Serving these users
# continuously, each new request's prompt is prefilled in the same
# steps as everyone's decode, and its steps come out {glue:md}`dc_bound`-bound, with
# tokens/s per user of {glue:md}`dc_calibrated`. The decode-only step above, at the
# datacenter runs' llama.cpp discount, gives these parts {glue:text}`dc_flatter_low:.2f` to
# {glue:text}`dc_flatter_high:.2f` times the calibrated model's tokens/s and
# keeps their order.

# %% [markdown]
# ## Which recommendations survive the ranges
#
# Every estimate above is a middle with a range (the prefill runs' spread for the first token,
# the decode discount's quartiles for the rest). A machine ranked first is only the answer
# where its range stays clear of the next one's: if the first's worse end is worse than
# another's better end, the estimates cannot tell the two apart, and the honest answer is a
# tie. Each workload's ranking read that way:

# %% tags=["hide-input"]
decisions = buying.decision_table(presets)
units = {"ttft": ("s to the first token", 0), "decode": ("tokens/s", 0),
         "concurrency": ("tokens/s per user", 1)}
tables.styled(pd.DataFrame({
    "workload": decisions["workload"],
    "best": [f"{r.best}: {buying.fmt_range(r.low, r.value, r.high, units[r.rank_by][1])} "
             f"{units[r.rank_by][0]}" for r in decisions.itertuples()],
    "ties": [", ".join(r.ties) or "none" for r in decisions.itertuples()],
    "next": [f"{r.next} (x{r.next_margin:.2f})" if r.next else "none"
             for r in decisions.itertuples()]}), "table-buy-decisions", {
    "workload": "Workload", "best": "Ranked first (middle, range)",
    "ties": "Tied with it (ranges overlap)",
    "next": "First behind at every end (times, by the middles)"})

# %% tags=["hide-input"]
by_workload = decisions.set_index("workload")
glue_all({
    "dec_agent_best": by_workload.loc["coding agent", "best"],
    "dec_agent_next": by_workload.loc["coding agent", "next"],
    "dec_agent_margin": by_workload.loc["coding agent", "next_margin"],
    "dec_chat_best": by_workload.loc["chat", "best"],
    "dec_chat_ties": len(by_workload.loc["chat", "ties"]),
    "dec_many_best": by_workload.loc["many users", "best"],
    "dec_many_ties": len(by_workload.loc["many users", "ties"]),
})
chat_ties = list(by_workload.loc["chat", "ties"])
glue_markdown("dec_chat_tied", ", the ".join(chat_ties[:-1]) + " and the " + chat_ties[-1]
              if len(chat_ties) > 1 else chat_ties[0])
# the prose below: the agent's answer has no tie; chat's and many users' winners tie with
# datacenter parts (the machines no vendor price is recorded for, as above)
assert not by_workload.loc["coding agent", "ties"]
for wl in ("chat", "many users"):
    tied = [by_workload.loc[wl, "best"], *by_workload.loc[wl, "ties"]]
    assert len(tied) > 1 and not any(buying.machine(m).prices for m in tied)

# %% [markdown]
# For the coding agent the answer holds among the machines ranked: the
# {glue:text}`dec_agent_best` is ahead of every one of them at every end of the ranges, the
# nearest, the {glue:text}`dec_agent_next`, by
# x{glue:text}`dec_agent_margin:.2f` between the middles. For chat and for many
# users it does not: the {glue:text}`dec_chat_best` is first for chat by its middle estimate,
# but {glue:text}`dec_chat_ties:d` machines' ranges overlap its own (the
# {glue:md}`dec_chat_tied`), and {glue:text}`dec_many_ties:d` overlap the
# {glue:text}`dec_many_best`'s for many users; and those
# are datacenter parts whose discount rests on {glue:text}`dc_runs:d` llama.cpp runs of
# older datacenter GPUs (above). Read those two rankings as ties among the datacenter parts,
# not as a winner.

# %% tags=["hide-input"]
# Two machines: chapter 12's pairs for this chapter's coding agent
from napkin.split import desk

links = tables.load("links").set_index("link")
ten_gbe = float(links.loc["10 GbE", "bandwidth_GB_per_s"])
glue_markdown("two_link", f"a {links.loc['10 GbE'].name} link")
agent_request = desk.DeskWorkload(agent.name, agent.prompt_tokens, agent.output_tokens,
                                  "chapter 8's preset")
two = desk.verdicts(desk.pair_table(ten_gbe, workloads=[agent_request],
                                    models=[(agent.model, agent.weight_format)]),
                    owned="M3 Ultra", candidate="DGX Spark").iloc[0]
glue_markdown("two_alone", two["best_alone"])
glue("two_alone_s", two["best_alone_s"])
glue_markdown("two_pair", two["best_pair"].replace(" -> ", " prefilling for the "))
glue_all({"two_pair_slower": 1 / two["pair_over_alone"], "two_pair_s": two["best_pair_s"]})
assert two["pair_over_alone"] < 1  # the prose: the pair takes longer, the buyer buys one
glue_all({
    "two_owned_s": two["owned_s"],
    "two_spark_s": two["candidate_s"],
    "two_spark_gain": two["candidate_gain"],
})
glue_markdown("two_helper", two["helper"])
glue("two_helper_gain", two["helper_gain"])

# %% [markdown]
# ## Two machines
#
# Every ranking above asks which one machine to buy; the essay's title says a request could
# use two. [Chapter 12](12_different_machines.ipynb) prices the pair: the prompt on one
# machine, its KV cache streamed over {glue:md}`two_link` as each layer finishes, the answer on
# the other. For this coding agent the fastest machine alone, the {glue:md}`two_alone`,
# finishes the request in {glue:text}`two_alone_s:.0f` s; the fastest pair, the
# {glue:md}`two_pair`, takes {glue:text}`two_pair_slower:.2f` times as long
# ({glue:text}`two_pair_s:.0f` s), so a buyer starting from nothing buys the one machine.
# For a reader who already owns an M3 Ultra ({glue:text}`two_owned_s:.0f` s alone), a DGX
# Spark doing only the prefill brings it to {glue:text}`two_spark_s:.0f` s, a factor of
# {glue:text}`two_spark_gain:.2f`; the best helper, the {glue:md}`two_helper`, a factor of
# {glue:text}`two_helper_gain:.1f`: the helper bought for its FLOPs, the Mac kept for its
# bandwidth, the two rows of the essay's table on one desk.

# %% [markdown]
# ## The calculator
#
# Choose one of the three workloads, or "custom" and set the sliders; choose what to rank by.
# Every number is recomputed in the page from the same inputs, with the same arithmetic as
# the tables above (`napkin.buying.js_expressions`, tested against `napkin.buying.estimate`),
# including each format's roof on each machine and each Mac's default GPU limit. A Mac that
# would hold the workload only after raising `iogpu.wired_limit_mb` is drawn faint, marked
# "(raise GPU limit)", after every machine that holds it by default. Hover over a machine for
# the figures behind it.

# %% tags=["hide-input"]
shown = ["Llama-3.3-70B", "Llama-3.1-8B", "Qwen2.5-72B-Instruct", "gpt-oss-120b",
         "gpt-oss-20b", "Mistral-7B-v0.1"]
formats = ["Q4_K", "Q4_0", "MXFP4", "Q8_0", "FP8", "F16"]
napkin.Figure(
    name="fig-buy-calculator",
    chart=charts.calculator(buying.calculator_rows(shown, formats), presets, formats, shown),
    caption="The ranking for any prompt, answer length, number of users, model and weight "
            "format. Dots are the middle estimate, lines the range from published runs; "
            "faint: a Mac that holds the workload only above its default GPU limit.",
    source="napkin.buying over data/hardware_specs.csv, the llama.cpp runs of chapters 1 "
           "and 2, data/models, data/gpu_memory_limits.csv and data/machine_prices.csv.",
)

# %% tags=["hide-input"]
glue_all({
    "n_derived_ranked": int(top["roof_label"].str.contains("derived").sum()),
    "derived_ranked": ", ".join(top[top["roof_label"].str.contains("derived")]["machine"]),
})
prices = tables.load("machine_prices")
partial = prices[prices["scope"] != "complete computer"]
glue("partial_prices", "; ".join(f"{c}'s is for a {s}" for c, s in
                                 zip(partial["chip"], partial["scope"])))

# %% [markdown]
# ## Where this stops being trustworthy
#
# - **One reference run stands for all prefill.** A machine's prefill rate comes from a
#   short prompt of a small dense model at one format. Checked against
#   {glue:text}`n_check:d` published runs of other models, the method's predicted rate is
#   {glue:text}`chk_all_low:.2f` to {glue:text}`chk_all_high:.2f` times the measured one
#   (median {glue:text}`chk_all_median:.2f`). For a dense model it was
#   {glue:text}`chk_dense_low:.2f` to {glue:text}`chk_dense_high:.2f`, the worst on the
#   agent's own architecture under a Vulkan build; for mixtures of experts on NVIDIA GPUs it
#   was too fast by up to {glue:text}`moe_cuda_high:.1f` times, so a MoE model's first token
#   on those machines comes that much later than the calculator says. The family order of
#   the coding-agent ranking survives the dense error; its seconds do not carry more than
#   that.
# - **Machines without a published run are not ranked for the first token.** The datacenter
#   GPUs have bounds only, and the ones with a published run (the H100 and the A100) are
#   measured with llama.cpp, which is not the software such GPUs usually serve with. Their
#   runs' variant is disputed, so they count for both.
# - **Some roofs are derivations.** {glue:text}`n_derived_ranked:d` of the ranked machines
#   are held to a figure no vendor states ({glue:text}`derived_ranked`), and the M3 and M4
#   chips have none. A bound from a derived roof is only as good as the derivation.
# - **The decode discount's middle is a family's, not the machine's.** Each range reaches to
#   the machine's own runs, but those are of a small model; for a large one, the data hold
#   only the few runs above, and where an Ultra or a datacenter GPU lands inside its range
#   is open.
# - **Memory is what the GPU may use, not what runs beside it.** A Mac gets the lowest
#   default GPU limit recorded for its class; a given Mac and macOS version may allow more.
#   Elsewhere a machine gets what its driver or operating system reports where a public log
#   shows it (an H100's nvidia-smi, a DGX Spark's Linux, a Strix Halo's GTT limit), else its
#   whole capacity. The runtime and its buffers take some more, and on Strix Halo and DGX
#   Spark the programs the operating system runs share that memory with the GPU; a machine
#   near the limit may not fit what the table says fits.
# - **Prices move, and not all are for a whole computer.** Each has a date and a source in
#   `data/machine_prices.csv`; {glue:text}`partial_prices`.

# %% tags=["hide-input"]
lines = [f"{int(row['rank'])}. **{row['machine']}**: first token after "
         f"{buying.fmt_range(row['ttft_fast_s'], row['ttft_mid_s'], row['ttft_slow_s'])} s, "
         f"then {row['decode_mid_tok_per_s']:.0f} tokens/s"
         + (f"; {row['currency']} {row['price']:,.0f}" if row["price"] == row["price"] else "")
         + (f" ({row['prefill_note']})" if row["prefill_note"] else "")
         for _, row in top.iterrows()]
glue_markdown("closing_note", "\n".join([
    f"The coding-agent preset ({agent.prompt_tokens:,}-token prompt, {agent.output_tokens:,}-"
    f"token answer, {agent.model} at {agent.weight_format}, one user), ranked by time to the "
    "first token estimated from published llama.cpp prefill runs (median run, range in "
    "brackets):", "", *lines, "",
    f"Against measured runs of dense models, that method's rate was "
    f"{sm.loc['dense', 'low']:.2f} to {sm.loc['dense', 'high']:.2f} times the measured one. "
    "Holding the model only after raising the Mac's GPU memory limit: "
    f"{', '.join(ranked[ranked['fits_after_raising']]['machine'])}. "
    "Not ranked, for want of a published prefill run, though they hold the model: "
    f"{', '.join(ranked[ranked['fits'] & ranked['rank'].isna()]['machine'])}. "
    f"Too small for it: {', '.join(ranked[~ranked['fits'] & ~ranked['fits_after_raising']]['machine'])}.",
]))

# %% [markdown]
# ## Closing note
#
# {glue:md}`closing_note`
