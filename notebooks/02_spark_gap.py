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
# # The gap on one box
#
# ```{admonition} In one minute
# :class: tip
# - The essay's pair, {glue:text}`essay_pp:,.0f` against {glue:text}`essay_tg:.2f` tokens/s
#   of gpt-oss-120b, could not be traced in any copy of the benchmark read, but the gap is
#   real: the file's own empty-context pairs give {glue:text}`gap_first:.1f`x,
#   {glue:text}`gap_mid:.1f`x and {glue:text}`gap_last:.1f`x
#   ([the pairs, build by build](#fig-spark-pair)).
# - The petaFLOP counts sparse FP4. At dense FP16 DGX Spark has
#   {glue:text}`h100_fp16_share:.1%` of an H100 SXM's peak
#   ([its peaks against other chips'](#spark-peer-peaks)). Arithmetic per byte of bandwidth
#   is a loose guide to the gap: the chapter's equation overstates every like-for-like CUDA
#   gap {glue:text}`eq_over_min:.1f` to {glue:text}`eq_over_max:.1f` times, because prefill
#   falls further short of its peak than decode does of its bandwidth
#   ([the check](#spark-equation-check)).
# - Prefill uses at most {glue:text}`peta_frac_oss_max:.1%` of the petaFLOP, a sparse
#   figure; of the dense rates its builds ran in, at most {glue:text}`oss_int8_frac_max:.1%`
#   of INT8 and {glue:text}`oss_last_frac_roof:.1%` of dense FP4. Decode runs at
#   {glue:text}`decode_share_min:.0%` to {glue:text}`decode_share_max:.0%` of the ceiling its
#   bandwidth sets ([prefill against the peaks](#fig-spark-prefill-flops)).
# - Prefill loses the larger share of its speed with context in
#   {glue:text}`share_pp_falls_more:.0%` of the cases measured, so the gap narrows with
#   depth, to {glue:text}`gap_deep:.1f`x at the deepest point of the newest build
#   ([the gap against depth](#fig-spark-ratio-depth)).
# - A reader waits in seconds, not rates: for a {glue:text}`wait_prompt:,d`-token prompt and
#   a {glue:text}`wait_answer:,d`-token answer of gpt-oss-120b, DGX Spark finishes in
#   {glue:text}`wait_spark_total_s:.0f` s and the M2 Ultra, which decodes
#   {glue:text}`wait_mac_tg_x:.2f` times as fast, in {glue:text}`wait_mac_total_s:.0f` s
#   ([what a reader waits](#spark-wait)).
# - Discrete GPUs show large gaps too: on the one test every family ran, DGX Spark's is
#   {glue:text}`spark_l_gap:.1f`x and the median discrete GPU's {glue:text}`gpu_l_median:.1f`x.
#   What sets DGX Spark apart is slow decode: {glue:text}`gpus_faster_tg:.0%` of the discrete
#   GPU runs decode faster ([like for like](#fig-spark-like-for-like)).
# ```
#
# **What this chapter does.** NVIDIA's DGX Spark pairs a great deal of arithmetic on paper
# ({glue:text}`spark_fp4:,.0f` TFLOPS of *sparse FP4*, in NVIDIA's words) with
# {glue:text}`spark_bw:.0f` GB/s of memory bandwidth and {glue:text}`spark_gib:.0f` GiB of
# unified memory (NVIDIA's "128 GB", read as binary gigabytes like every capacity in this
# book). The essay's evidence that such a box is fast at one phase of inference and slow at
# the other is a single pair of llama.cpp numbers for gpt-oss-120b:
# {glue:text}`essay_pp:,.0f` tokens/s of prompt processing against
# {glue:text}`essay_tg:.2f` tokens/s of generation, a {glue:text}`essay_gap:.0f`x gap. The
# essay cites the llama.cpp DGX Spark discussion {cite}`llamacpp_dgx_spark_16578`, whose own
# text we could not read. What we did read: the benchmark file in the llama.cpp repository
# {cite}`llamacpp_dgx_spark` and two later versions of it kept by forks, a mirror of the
# discussion's first post, and two runs posted on NVIDIA's forum (see `data/README.md`). We
# look for the pair in those copies, build by build; set the petaFLOP beside other chips'
# arithmetic and turn the prefill number into FLOP/s; use the rest of the file to see how the
# gap moves with context length and model; set DGX Spark beside its mirror image (an M2
# Ultra run with the same command) and beside every machine that ran the same model and
# test; and finally measure the gap on the machine reading this page.
#
# Why a gap should exist at all, in one line. If prefill runs at the chip's peak arithmetic
# rate $F$ and decode at its memory bandwidth $BW$, then with $b$ bytes per weight and
# $2$ FLOPs per weight per token,
#
# ```{math}
# :label: eq-phase-gap
# \text{gap} \;=\; \frac{\text{prefill tokens/s}}{\text{decode tokens/s}}
# \;\approx\; \frac{F / 2P}{BW / bP} \;=\; \frac{b}{2}\cdot\frac{F}{BW}
# ```
#
# where $P$ is the parameters each token touches (it cancels) and $F/BW$ is the chip's
# *ridge point*, the subject of the {doc}`next chapter <03_h100_ridge>`. $F$ is the peak of
# the arithmetic the kernels actually run, which need not be the headline figure. In this
# model a box with a lot of arithmetic per byte of bandwidth has a large gap, and a box with
# a lot of bandwidth per unit of arithmetic a small one.
#
# Where the chapter turns a measured prefill rate into FLOP/s, the FLOPs per prompt token
# come from the model's configuration: two per layer weight the token multiplies, plus its
# attention over the tokens before it.
#
# ```{literalinclude} ../lib/napkin/phases/compute.py
# :language: python
# :pyobject: prefill_flops_per_token
# ```

# %% tags=["hide-input"]
import pandas as pd

import napkin
from napkin import catalog, errata, essay, hardware, measure, phases, tables
from napkin.phases import figures as charts
from napkin.prose import glue, glue_all, glue_markdown
from napkin.units import GB, TFLOPS, GiB

spark = hardware.chip("DGX Spark")
glue_all({
    "spark_fp4": essay.claim("spark_fp4_sparse"),
    "spark_bw": spark.bandwidth_bytes_per_s / GB,
    "spark_gib": spark.capacity_bytes / GiB,
    "essay_pp": essay.claim("spark_pp2048"),
    "essay_tg": essay.claim("spark_tg32"),
    "essay_gap": essay.claim("spark_gap"),
})
depths = sorted(phases.spark_bench()["context_depth_tokens"].unique())
glue_markdown("depth_list", ", ".join(f"{d:,}" for d in depths[:-1]) + f" and {depths[-1]:,}")
builds = phases.essay_pair_by_build()
first, mid, last = builds.iloc[0], builds.iloc[1], builds.iloc[-1]
glue_all({
    "build_first": first["build"],
    "build_mid": mid["build"],
    "build_last": last["build"],
})

# %% [markdown]
# ## The essay's pair, build by build
#
# The benchmark file runs llama-bench's prefill test `pp2048` and decode test `tg32` with
# {glue:md}`depth_list` tokens already in the cache. The file was written at build
# {glue:text}`build_first:d` and later re-run at builds {glue:text}`build_mid:d` and
# {glue:text}`build_last:d`; the data here were read from the file and from forks that kept
# the later versions. At empty context, gpt-oss-120b measures:

# %%
tables.styled(builds, "spark-builds", {
    "label": "Run", "pp_tok_per_s": "Prefill pp2048 (tok/s)",
    "tg_tok_per_s": "Decode tg32 (tok/s)", "ratio": "Gap (x)"}, formats={"ratio": "{:.1f}"})

# %% tags=["hide-input"]
copies = phases.spark_bench(file_only=False)
pp_hits = phases.matches(essay.claim("spark_pp2048"), decimals=0)
tg_hits = phases.matches(essay.claim("spark_tg32"), decimals=2)
hit = pp_hits.iloc[0]
hit_partner = phases.partner(hit)
glue_all({
    "hit_depth": hit["context_depth_tokens"],
    "hit_build": hit["build"],
    "hit_value": hit["throughput_tok_per_s"],
    "hit_tg": hit_partner["throughput_tok_per_s"],
    "hit_gap": hit["throughput_tok_per_s"] / hit_partner["throughput_tok_per_s"],
    "n_pp_hits": len(pp_hits),
    "n_pp_rows": int((copies["test"] == "pp2048").sum()),
})
glue_markdown("tg_hits_sentence",
              f"No copy shows the decode figure {essay.claim('spark_tg32'):.2f}." if tg_hits.empty
              else f"The decode figure {essay.claim('spark_tg32'):.2f} appears in "
                   f"{len(tg_hits)} row(s).")
near = phases.nearest(essay.claim("spark_tg32"), "tg32")
glue_all({
    "near_tg": near["throughput_tok_per_s"],
    "near_build": near["build"],
})
cited = copies[copies["source_kind"].str.contains("16578", regex=False)]
glue_markdown("cited_models", " and ".join(sorted(cited["model"].unique())))
early = copies[copies["source_kind"].str.contains("LOW confidence", regex=False)
               & copies["model"].str.startswith("gpt-oss-120b")
               & (copies["context_depth_tokens"] == 0)].set_index("phase")
glue_all({
    "early_build": phases.build_number(early["llama_cpp_build"].iloc[0]),
    "early_pp": early.loc[phases.PREFILL, "throughput_tok_per_s"],
    "early_tg": early.loc[phases.DECODE, "throughput_tok_per_s"],
    "own_gap": essay.claim("spark_pp2048") / essay.claim("spark_tg32"),
    "gap_first": first["ratio"],
    "gap_mid": mid["ratio"],
    "gap_last": last["ratio"],
    "pp_first": first["pp_tok_per_s"],
    "pp_last": last["pp_tok_per_s"],
    "tg_change": last["tg_tok_per_s"] / first["tg_tok_per_s"] - 1,
})
glue_markdown("survives", "Yes." if errata.erratum("spark_gap").conclusion_holds else "No.")

# %% [markdown]
# Neither of the essay's numbers is at depth 0 in any copy read. The prefill figure
# {glue:text}`essay_pp:,.0f` matches {glue:text}`n_pp_hits:d` of the
# {glue:text}`n_pp_rows:d` prefill rows of all the copies: build {glue:text}`hit_build:d` at
# a depth of {glue:text}`hit_depth:,d` tokens ({glue:text}`hit_value:,.2f` tokens/s). That
# run's decode figure is {glue:text}`hit_tg:.2f`, a gap of {glue:text}`hit_gap:.1f`x rather
# than the essay's, so the match is more likely a coincidence than the pair's origin.
# {glue:md}`tg_hits_sentence` The nearest decode figure at empty context is
# {glue:text}`near_tg:.2f` (build {glue:text}`near_build:d`). The discussion the essay cites
# is the one copy that could settle it, and the mirror of it that was read holds only
# {glue:md}`cited_models` rows; secondary notes give the thread's first gpt-oss-120b pair,
# at build {glue:text}`early_build:d`, as {glue:text}`early_pp:,.0f` and
# {glue:text}`early_tg:.1f` tokens/s (low confidence), so the thread's figures changed as
# llama.cpp did. Where the essay's pair came from, the copies read cannot say.
#
# **Does the conclusion survive?** {glue:md}`survives` The file's own empty-context pairs
# give gaps of {glue:text}`gap_first:.1f`x, {glue:text}`gap_mid:.1f`x and
# {glue:text}`gap_last:.1f`x, and the essay's own pair, whatever its origin, gives
# {glue:text}`own_gap:.1f`x. The newest build prefills faster ({glue:text}`pp_last:,.0f`
# against {glue:text}`pp_first:,.0f` tokens/s) while its decode speed moved by only
# {glue:text}`tg_change:+.1%`, so the gap has grown. The
# {doc}`errata page <../book/errata>` records both findings.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spark-pair",
    chart=charts.essay_pair(essay.claim("spark_pp2048"), essay.claim("spark_tg32"), builds),
    caption="At empty context, every build of the benchmark file shows a gap of about the "
            "essay's size or larger; the essay's exact pair appears in no copy read.",
    source="llama.cpp benches/dgx-spark.md (build 6918) and later copies (builds 6989, 7941); "
           "the essay's figures from data/essay_claims.csv.",
)

# %% tags=["hide-input"]
glue_all({
    "spark_fp32": spark.peak("fp32").flops_per_s / 1e12,
    "spark_fp4_dense": spark.peak("fp4").flops_per_s / 1e12,
    "spark_int8": spark.peak("int8").flops_per_s / 1e12,
    "spark_fp16": spark.peak("fp16").flops_per_s / 1e12,
    "spark_fp16_halved": spark.peak("fp16").flops_per_s / 2e12,
})
peers = phases.peak_comparison()

# %% [markdown]
# ## Where is the petaFLOP?
#
# The essay says two things about the petaFLOP: "That is datacenter-class compute bolted to
# laptop-class memory", and it "shows up in the first number and is entirely absent from
# the second". The first is about the chip, and the chips' specs can test it; the second is
# about the two measured numbers.
#
# **Datacenter-class compute?** The petaFLOP counts *sparse FP4*: 4-bit floating point on
# matrices with two of every four weights zero (2:4 sparsity). It is the only tensor figure
# NVIDIA states for GB10, beside {glue:text}`spark_fp32:.0f` TFLOPS of plain FP32. The dense
# FP4 ({glue:text}`spark_fp4_dense:.0f`), FP8 and INT8 ({glue:text}`spark_int8:.0f`) and
# FP16 ({glue:text}`spark_fp16:.0f` TFLOPS) rates used below are derived from it (half, a
# quarter and an eighth), not stated by NVIDIA, and the FP16 one assumes GB10 accumulates in
# FP32 at full rate; if it halves that rate as GeForce cards do, it is
# {glue:text}`spark_fp16_halved:.1f`. Arithmetic by arithmetic, DGX Spark's peak as a share
# of other chips' (an empty cell: that chip has no figure for it):

# %%
peer_table = peers.pivot_table(index="kind", columns="peer", values="share", sort=False)
peer_table = peer_table[[p for p in phases.DATACENTER_PEERS + phases.DESKTOP_PEERS
                         if p in peer_table]].reset_index()
tables.styled(peer_table, "spark-peer-peaks",
              {c: (f"of the {c}'s" if c != "kind" else "DGX Spark's peak") for c in peer_table},
              formats={c: (lambda v: "" if pd.isna(v) else f"{v:.1%}")
                       for c in peer_table if c != "kind"})

# %% tags=["hide-input"]
dc = peers[peers["peer_class"] == "datacenter"]
desk = peers[peers["peer_class"] == "desktop"]
by_peer = peers.set_index(["kind", "peer"])["share"]
sparse_kind = spark.peak("fp4", sparse=True).kind
glue_all({
    "b200_sparse_share": by_peer[(sparse_kind, "B200")],
    "rtx5090_sparse_share": by_peer[(sparse_kind, "RTX 5090")],
    "dc_min": dc[dc["chip_derived"]]["share"].min(),
    "dc_max": dc[dc["chip_derived"]]["share"].max(),
    "desk_min": desk["share"].min(),
    "desk_max": desk["share"].max(),
})
h100 = hardware.chip("H100 SXM")
glue_all({
    "h100_fp16": h100.peak("fp16").flops_per_s / 1e12,
    "h100_fp16_share": by_peer[(spark.peak("fp16").kind, "H100 SXM")],
})
int8_h100 = peers[(peers["arithmetic"] == "int8") & (peers["peer"] == "H100 SXM")].iloc[0]
glue_all({
    "spark_int8_per_byte": int8_h100["chip_flop_per_byte"],
    "h100_int8_per_byte": int8_h100["peer_flop_per_byte"],
})
# FP16 per byte at the halved reading (accumulating in FP32 at half rate), against the H100
halved_per_byte = spark.peak("fp16").flops_per_s / 2 / spark.bandwidth_bytes_per_s
h100_fp16_per_byte = h100.peak("fp16").flops_per_s / h100.bandwidth_bytes_per_s
assert halved_per_byte < h100_fp16_per_byte  # the prose: "below the H100 SXM's"
glue_all({
    "spark_fp16_halved_per_byte": halved_per_byte,
    "h100_fp16_per_byte": h100_fp16_per_byte,
})
# the same comparison from a rate measured on GB10 rather than one derived from the petaFLOP
measured_fp8 = spark.specs["fp8_tensor_dense_gemm_measured_TFLOPS"] * TFLOPS
glue_all({
    "spark_fp8_measured": measured_fp8 / TFLOPS,
    "spark_fp8_measured_per_byte": measured_fp8 / spark.bandwidth_bytes_per_s,
    "h100_fp8_per_byte": h100.peak("fp8").flops_per_s / h100.bandwidth_bytes_per_s,
})
assert (measured_fp8 / spark.bandwidth_bytes_per_s
        > h100.peak("fp8").flops_per_s / h100.bandwidth_bytes_per_s)  # "still", checked
laptop = hardware.chip(phases.LAPTOP_PEER)
glue("laptop_bw", laptop.bandwidth_bytes_per_s / GB)
glue_markdown("laptop_name", phases.LAPTOP_PEER)
datacenter = errata.erratum("spark_datacenter_compute")
glue_markdown("datacenter_verdict",
              "So on paper the data do not bear out \"datacenter-class compute\": in every "
              "arithmetic, DGX Spark's peak is below each datacenter GPU's here, and below both "
              "GeForce cards'."
              if datacenter.verdict != "agrees" else
              "So on paper the data bear out \"datacenter-class compute\".")
glue_markdown("imbalance_verdict",
              "holds" if datacenter.conclusion_holds else "does not hold")

# %% [markdown]
# At sparse FP4, the petaFLOP's own arithmetic, DGX Spark has
# {glue:text}`b200_sparse_share:.1%` of a B200's peak and
# {glue:text}`rtx5090_sparse_share:.0%` of an RTX 5090's. At the derived dense rates it has
# {glue:text}`dc_min:.1%` to {glue:text}`dc_max:.0%` of the datacenter GPUs' and
# {glue:text}`desk_min:.0%` to {glue:text}`desk_max:.0%` of the GeForce cards'. The
# petaFLOP reads like a datacenter figure because it is close to the H100 SXM's
# {glue:text}`h100_fp16:,.0f` TFLOPS, but that is dense FP16, where DGX Spark has
# {glue:text}`h100_fp16_share:.1%` of the H100's. {glue:md}`datacenter_verdict` The memory
# half holds: its {glue:text}`spark_bw:.0f` GB/s is the {glue:text}`laptop_bw:.0f` GB/s
# Apple states for the {glue:md}`laptop_name` of its MacBook Pro laptops. And the imbalance
# the essay draws from the pair {glue:md}`imbalance_verdict`: per byte of bandwidth DGX
# Spark has more arithmetic than each datacenter GPU in every arithmetic they share, at the
# derived rates (at the halved FP16 reading its FP16 comes to
# {glue:text}`spark_fp16_halved_per_byte:,.0f` FLOP per byte, below the H100 SXM's
# {glue:text}`h100_fp16_per_byte:,.0f`, so there the claim rests on INT8 and FP8:
# {glue:text}`spark_int8_per_byte:,.0f` INT8 operations per byte against the H100 SXM's
# {glue:text}`h100_int8_per_byte:,.0f`; a dense FP8 GEMM measured on GB10, at
# {glue:text}`spark_fp8_measured:,.0f` TFLOPS, still comes to
# {glue:text}`spark_fp8_measured_per_byte:,.0f` per byte against the H100's dense FP8 peak of
# {glue:text}`h100_fp8_per_byte:,.0f`). That ratio, not the size of the petaFLOP, is what
# {eq}`eq-phase-gap` reads the gap from; the data say how far the equation goes.

# %% tags=["hide-input"]
equation = phases.equation_gap()
glue_all({
    "eq_runs": len(equation),
    "eq_derived": int(equation["peak_origin"].str.startswith("computed").sum()),
    "q4_bits": napkin.models.bits_per_weight("Q4_0"),
    "q4_bytes": napkin.models.bits_per_weight("Q4_0") / 8,
    "eq_over_min": equation["over"].min(),
    "eq_over_max": equation["over"].max(),
    "eq_rank": equation[["measured", "predicted"]].corr(method="spearman").iloc[0, 1],
    "eq_decode_min": equation["decode_share"].min(),
    "eq_decode_max": equation["decode_share"].max(),
    "eq_prefill_min": equation["prefill_share"].min(),
    "eq_prefill_max": equation["prefill_share"].max(),
})
eq_spark = equation[equation["chip"] == "DGX Spark"].iloc[0]
glue_all({
    "eq_spark_predicted": eq_spark["predicted"],
    "eq_spark_measured": eq_spark["measured"],
})
tables.styled(equation, "spark-equation-check", {
    "machine": "Run (as the scoreboard names it)", "chip": "Chip",
    "peak_origin": "INT8 figure", "measured": "Measured gap", "predicted": "Equation's gap",
    "over": "Equation / measured", "decode_share": "Decode, share of bandwidth",
    "prefill_share": "Prefill, share of INT8 figure"},
    {"measured": "{:.1f}x", "predicted": "{:.0f}x", "over": "{:.1f}x",
     "decode_share": "{:.0%}", "prefill_share": "{:.0%}"})

# %% [markdown]
# On the one test every family ran (Llama-2-7B Q4_0 `pp512` / `tg128`, the like-for-like
# section below), the {glue:text}`eq_runs:d` runs of llama.cpp's CUDA backend on chips with a
# dense INT8 figure in the data (the arithmetic of its Q4_0 matmuls there;
# {glue:text}`eq_derived:d` of those figures are derived, not stated by the maker, DGX
# Spark's among them; the A100 and H100 runs are left out, since the scoreboard's copies do
# not say, or disagree on, whether the card was PCIe or SXM) let the equation be checked, with $b$ = {glue:text}`q4_bits:.1f` bits,
# {glue:text}`q4_bytes:.4f` bytes. On every one of them it overstates the measured gap, by
# {glue:text}`eq_over_min:.1f` to {glue:text}`eq_over_max:.1f` times (DGX Spark:
# {glue:text}`eq_spark_predicted:.0f`x against a measured
# {glue:text}`eq_spark_measured:.1f`x), and it orders them only loosely (a rank correlation
# of {glue:text}`eq_rank:.2f` between the two). That is what these runs show, not a law:
# the equation's gap over the measured one is exactly the share of its bandwidth decode
# reached over the share of its peak prefill reached, and here decode reached
# {glue:text}`eq_decode_min:.0%` to {glue:text}`eq_decode_max:.0%` of its bandwidth where
# prefill reached {glue:text}`eq_prefill_min:.0%` to {glue:text}`eq_prefill_max:.0%` of its
# INT8 figure. The equation reads a gap from what each phase could do; the measured gap is
# what each did, and prefill falls further short of its roof.

# %% tags=["hide-input"]
compute = phases.prefill_compute()
peaks = phases.spark_peak_fractions(compute)
oss_cfg = catalog.config("gpt-oss-120b")
glue_all({
    "oss_routed": oss_cfg["num_experts_per_tok"],
    "oss_experts": oss_cfg["num_local_experts"],
    "oss_layers": oss_cfg["num_hidden_layers"],
    "oss_layer_params_b": phases.layer_params(oss_cfg) / 1e9,
    "oss_active_b": catalog.params("gpt-oss-120b", active=True) / 1e9,
    "oss_gflop_per_token": phases.prefill_flops_per_token("gpt-oss-120b", 2048) / 1e9,
    "native_build": phases.NATIVE_MXFP4_BUILD,
})
glue_markdown("native_date", phases.NATIVE_MXFP4_DATE)

# %% [markdown]
# **What prefill reaches.** A prefill rate becomes FLOP/s once we know the FLOPs of one
# prompt token: two per weight the token is multiplied by, plus its attention over the
# tokens before it. For gpt-oss-120b that is the attention projections and the
# {glue:text}`oss_routed:d` experts each token is routed to, out of
# {glue:text}`oss_experts:d`, in each of its {glue:text}`oss_layers:d` layers:
# {glue:text}`oss_layer_params_b:.2f` billion weights. The model's
# {glue:text}`oss_active_b:.2f` billion active parameters also count the output layer, which
# llama-bench's prompt test runs for the last prompt token only. With the prompt's attention
# (`napkin.roofline.step_work`, sliding windows honoured) a `pp2048` prompt token costs
# {glue:text}`oss_gflop_per_token:.2f` GFLOP.
#
# Which peak to hold that against depends on the arithmetic llama.cpp's CUDA kernels run.
# Before build {glue:text}`native_build:d` they unpack each MXFP4 weight to an 8-bit integer
# through a lookup table and multiply on the INT8 tensor cores, against activations
# quantized to 8 bits. PR 17906 {cite}`llamacpp_pr17906`, merged on {glue:md}`native_date`
# as build {glue:text}`native_build:d`, added Blackwell's native block-scaled FP4 instruction
# for the sm_120 family of chips (GB10 is sm_121), with the activations quantized to MXFP4
# as well; since PR 18457 {cite}`llamacpp_pr18457` a build for the local GPU compiles that
# path by itself. So builds {glue:text}`build_first:d` and {glue:text}`build_mid:d` ran INT8
# and build {glue:text}`build_last:d` most likely FP4 (the file does not record how llama.cpp
# was compiled). Either way the instructions are dense: nothing runs the 2:4-sparse
# arithmetic the petaFLOP counts. Each DGX Spark prefill run as a share of each of the
# chip's peaks:

# %%
wide_peaks = peaks.pivot_table(index="run", columns="peak", values="fraction", sort=False)
wide_peaks = wide_peaks[[p for p in peaks["peak"].drop_duplicates()]].reset_index()
tables.styled(wide_peaks, "spark-peaks", {c: (f"share of {c}" if c != "run" else
                                              "DGX Spark prefill run") for c in wide_peaks},
              formats={c: "{:.1%}" for c in wide_peaks if c != "run"})

# %% tags=["hide-input"]
oss_runs = compute[(compute["chip"] == "DGX Spark") & (compute["model"] == "gpt-oss-120b")]
glue_all({
    "oss_tflops_min": oss_runs["achieved_flops_per_s"].min() / 1e12,
    "oss_tflops_max": oss_runs["achieved_flops_per_s"].max() / 1e12,
    "oss_last_frac_roof": oss_runs.iloc[-1]["fraction_of_roof"],
    "oss_int8_frac_max": oss_runs[oss_runs["arithmetic"] == "int8"]["fraction_of_roof"].max(),
})
sparse = peaks[peaks["peak"].str.contains("sparse")]
glue_all({
    "peta_frac_oss_max": sparse[sparse["model"] == "gpt-oss-120b"]["fraction"].max(),
    "peta_frac_max": sparse["fraction"].max(),
})
llama = compute[compute["model"] == "Llama-2-7B"].set_index("machine")
h100_runs = llama[llama["chip"].str.startswith("H100")]
h100_flops = h100_runs["achieved_flops_per_s"].iloc[0]
glue_all({
    "llama_spark_tflops": llama.loc["DGX Spark", "achieved_flops_per_s"] / 1e12,
    "llama_spark_frac": llama.loc["DGX Spark", "fraction_of_roof"],
    "llama_h100_tflops": h100_flops / 1e12,
    "llama_h100_frac_sxm": h100_runs.loc["H100 (read as H100 SXM)", "fraction_of_roof"],
    "llama_h100_frac_pcie": h100_runs.loc["H100 (read as H100 PCIe)", "fraction_of_roof"],
    "llama_rtx_tflops": llama.loc["RTX 4090", "achieved_flops_per_s"] / 1e12,
    "llama_rtx_frac": llama.loc["RTX 4090", "fraction_of_roof"],
    "spark_over_h100": llama.loc["DGX Spark", "achieved_flops_per_s"] / h100_flops,
    "spark_over_rtx": llama.loc["DGX Spark", "achieved_flops_per_s"]
     / llama.loc["RTX 4090", "achieved_flops_per_s"],
})
glue_markdown("h100_vs_rtx", "below" if h100_flops < llama.loc["RTX 4090", "achieved_flops_per_s"]
              else "above")
pro = compute[compute["chip"] == "RTX PRO 6000 Blackwell"].iloc[0]
glue_markdown("pro_name", pro["machine"])
glue_markdown("pro_confidence", pro["confidence"])
glue_markdown("pro_arith", pro["arithmetic"].upper())
glue_all({
    "pro_tflops": pro["achieved_flops_per_s"] / 1e12,
    "pro_frac": pro["fraction_of_roof"],
    "spark_int8_over_pro": oss_runs[oss_runs["arithmetic"] == "int8"]["achieved_flops_per_s"]
     .max() / pro["achieved_flops_per_s"],
    "spark_fp4_over_pro": oss_runs[oss_runs["arithmetic"] == "fp4"]["achieved_flops_per_s"]
     .max() / pro["achieved_flops_per_s"],
})

# %% [markdown]
# DGX Spark's gpt-oss-120b prefill reaches {glue:text}`oss_tflops_min:.1f` to
# {glue:text}`oss_tflops_max:.1f` TFLOPS: at most {glue:text}`peta_frac_oss_max:.1%` of the
# petaFLOP, at most {glue:text}`oss_int8_frac_max:.1%` of the INT8 rate its first two builds
# ran in, and {glue:text}`oss_last_frac_roof:.1%` of the dense FP4 rate of build
# {glue:text}`build_last:d`. No run in the table reaches more than
# {glue:text}`peta_frac_max:.1%` of the petaFLOP.
#
# Can measured prefill rank chips' compute? On the one model and test that DGX Spark, an
# H100 and an RTX 4090 all ran (Llama-2-7B Q4_0, `pp512`, INT8 kernels on all three), DGX
# Spark reaches {glue:text}`llama_spark_tflops:.0f` TFLOPS
# ({glue:text}`llama_spark_frac:.0%` of its derived INT8 peak), the H100
# {glue:text}`llama_h100_tflops:.0f` ({glue:text}`llama_h100_frac_sxm:.1%` of its INT8 peak
# read as the SXM card, {glue:text}`llama_h100_frac_pcie:.1%` as the PCIe one) and the RTX
# 4090 {glue:text}`llama_rtx_tflops:.0f` ({glue:text}`llama_rtx_frac:.0%`): DGX Spark
# prefills at {glue:text}`spark_over_h100:.0%` of the H100's FLOP/s and
# {glue:text}`spark_over_rtx:.0%` of the RTX 4090's. But a test on which the H100 uses a few
# per cent of its peak and lands {glue:md}`h100_vs_rtx` a GeForce card measures how well
# llama.cpp's kernels drive each chip on a small model, not the chip's arithmetic: it cannot
# say whether DGX Spark's compute is datacenter-class, and the specs above are the evidence
# on that. The same holds for gpt-oss-120b, where the {glue:md}`pro_name` of the gpt-oss
# guide reaches {glue:text}`pro_tflops:.0f` TFLOPS ({glue:text}`pro_frac:.1%` of its
# {glue:md}`pro_arith` peak, also derived); that is one row of
# {glue:md}`pro_confidence` confidence, read second-hand, from a build before the FP4 path.
# DGX Spark's INT8 builds reach {glue:text}`spark_int8_over_pro:.0%` of it and its FP4 build
# {glue:text}`spark_fp4_over_pro:.0%`.

# %% tags=["hide-input"]
path = phases.arithmetic_path_change()
glue_all({
    "path_pp_min": path["prefill_change"].min(),
    "path_pp_max": path["prefill_change"].max(),
    "path_tg_min": path["decode_change"].min(),
    "path_tg_max": path["decode_change"].max(),
})
mirror = phases.mirror_table()
spark_over_m2 = 1 / mirror[mirror["kind"] != "bandwidth"].set_index("row")["m2_over_spark"]
kinds = mirror[mirror["kind"] != "bandwidth"].set_index("row")["kind"]
glue_all({
    "mir_pp_min": spark_over_m2[kinds == "prefill"].min(),
    "mir_pp_max": spark_over_m2[kinds == "prefill"].max(),
    "mir_tg_min": spark_over_m2[kinds == "decode"].min(),
    "mir_tg_max": spark_over_m2[kinds == "decode"].max(),
})
oss_mirror = mirror[mirror["model"] == "gpt-oss-120b"].set_index("kind")["m2_over_spark"]
glue_all({
    "mir_oss_pp": 1 / oss_mirror["prefill"],
    "mir_oss_tg": 1 / oss_mirror["decode"],
    "n_mirror": int((mirror["kind"] == "decode").sum()),
})
oss_bytes = phases.bench_decode_weight_bytes("gpt-oss-120b")
glue_all({
    "oss_decode_gb": oss_bytes["weight_bytes"] / GB,
    "oss_other_bpw": oss_bytes["other_bytes_per_weight"],
    "oss_expert_bits": oss_bytes["expert_bytes_per_weight"] * 8,
})
decode_share = builds["tg_tok_per_s"] / (spark.bandwidth_bytes_per_s / oss_bytes["weight_bytes"])
glue_all({
    "decode_share_min": decode_share.min(),
    "decode_share_max": decode_share.max(),
})
petaflop = errata.erratum("spark_petaflop")
glue_markdown("literal_verdict", "Read literally, the sentence fails"
              if petaflop.verdict != "agrees" else "Read literally, the sentence holds")
glue_markdown("compute_verdict", "the data bear it out" if petaflop.conclusion_holds
              else "the data do not bear it out")

# %% [markdown]
# **In the first number, absent from the second?** {glue:md}`literal_verdict`: prefill uses
# at most {glue:text}`peta_frac_oss_max:.1%` of the petaFLOP. Read as "compute sets the first
# number and not the second", {glue:md}`compute_verdict`. Moving to the faster arithmetic
# (from builds {glue:text}`build_first:d` and {glue:text}`build_mid:d` to build
# {glue:text}`build_last:d`) changed prefill by {glue:text}`path_pp_min:+.0%` to
# {glue:text}`path_pp_max:+.0%` and decode by {glue:text}`path_tg_min:+.1%` to
# {glue:text}`path_tg_max:+.1%`. Against the M2 Ultra (the mirror image below), DGX Spark
# prefills gpt-oss-120b {glue:text}`mir_oss_pp:.2f`x as fast and decodes it only
# {glue:text}`mir_oss_tg:.2f`x as fast (across the file's {glue:text}`n_mirror:d` models,
# {glue:text}`mir_pp_min:.2f`x to {glue:text}`mir_pp_max:.2f`x and
# {glue:text}`mir_tg_min:.2f`x to {glue:text}`mir_tg_max:.2f`x). And its decode
# runs at {glue:text}`decode_share_min:.0%` to {glue:text}`decode_share_max:.0%` of the
# ceiling its bandwidth sets for the {glue:text}`oss_decode_gb:.2f` GB of weights a
# generated token reads (the routed experts at MXFP4's {glue:text}`oss_expert_bits:.2f`
# bits per weight, the rest at the {glue:text}`oss_other_bpw:.2f` bytes per weight the file
# leaves for them). Compute does show up in the first number, at a few per cent of the
# headline, and is absent from the second. The {doc}`errata page <../book/errata>` records
# both checks.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spark-prefill-flops",
    chart=charts.prefill_flops(compute, essay.claim("spark_fp4_sparse")),
    caption="What published prefill runs reached in FLOP/s, against the dense peak of the "
            "arithmetic llama.cpp runs them in and DGX Spark's sparse-FP4 petaFLOP.",
    source="FLOPs per prompt token from the model configs in data/models (napkin.phases); "
           "prefill rates from llama.cpp benches/dgx-spark.md and copies, discussions 15013 "
           "and 15396; peaks from data/hardware_specs.csv (DGX Spark's dense peaks and the "
           "RTX PRO 6000's INT8 are derived, not vendor-stated); arithmetic per llama.cpp "
           "PR 17906.",
)

# %% [markdown]
# ## Both phases slow down as the context grows
#
# Every prompt token attends to the tokens before it (all of them in a full-attention layer,
# the last few in a sliding-window one), and so does every generated token, so both phases
# do more work, and read more cache, at depth. Pick a model in the chart; the lines are each
# phase's speed as a share of its speed at empty context.

# %% tags=["hide-input"]
retention = phases.retention()
napkin.Figure(
    name="fig-spark-depth",
    chart=charts.depth_retention(retention, "gpt-oss-120b"),
    caption="Prefill (solid) usually loses more of its speed with depth than decode "
            "(dashed); pick a model to see each one.",
    source="llama.cpp benchmark files for DGX Spark (builds 6918, 6989, 7941) and M2 Ultra "
           "(build 7948), pp2048 and tg32 at depths 0-32768.",
)

# %% tags=["hide-input"]
deep = retention[(retention["model"] == "gpt-oss-120b")
                 & (retention["context_depth_tokens"] == retention["context_depth_tokens"].max())]
max_depth = int(deep["context_depth_tokens"].iloc[0])
glue("max_depth", max_depth)
spark_last = deep[(deep["machine"] == "DGX Spark") & (deep["build"] == last["build"])]
keep = spark_last.set_index("phase")["fraction_of_depth0"]
glue_all({
    "keep_pp": keep["prefill"],
    "keep_tg": keep["decode"],
})
m2_deep = deep[deep["machine"] == "M2 Ultra"].set_index("phase")["fraction_of_depth0"]
glue_all({
    "m2_keep_pp": m2_deep["prefill"],
    "m2_keep_tg": m2_deep["decode"],
})
pairs = phases.depth_pairs()
share_faster = (retention.pivot_table(index=["label", "model", "context_depth_tokens"],
                                      columns="phase", values="fraction_of_depth0")
                .query("context_depth_tokens > 0"))
glue("share_pp_falls_more", (share_faster["prefill"] < share_faster["decode"]).mean())
gap_deep = pairs[(pairs["model"] == "gpt-oss-120b") & (pairs["machine"] == "DGX Spark")
                 & (pairs["build"] == last["build"])].set_index("context_depth_tokens")["ratio"]
glue("gap_deep", gap_deep.loc[gap_deep.index.max()])
growth = phases.depth_growth("gpt-oss-120b", 2048, max_depth, oss_bytes["weight_bytes"])
glue_all({
    "work_growth": growth["prefill_flops_ratio"],
    "bytes_growth": growth["decode_bytes_ratio"],
    "work_keep": 1 / growth["prefill_flops_ratio"],
    "bytes_keep": 1 / growth["decode_bytes_ratio"],
})

# %% [markdown]
# At {glue:text}`max_depth:,d` tokens of context, DGX Spark (build {glue:text}`build_last:d`)
# keeps {glue:text}`keep_pp:.0%` of its gpt-oss-120b prefill speed and
# {glue:text}`keep_tg:.0%` of its decode speed; the M2 Ultra keeps {glue:text}`m2_keep_pp:.0%`
# and {glue:text}`m2_keep_tg:.0%`. Across every machine, model and depth in the file,
# prefill loses the larger share in {glue:text}`share_pp_falls_more:.0%` of cases. The
# roofline's count of the work says why this is to be expected for gpt-oss-120b: from empty
# context to that depth, a prompt token's FLOPs (weights plus attention) grow
# {glue:text}`work_growth:.2f`x, while a generated token's bytes (the
# {glue:text}`oss_decode_gb:.2f` GB of weights above, plus the f16 cache) grow
# {glue:text}`bytes_growth:.2f`x. A phase bound by what grows would keep
# {glue:text}`work_keep:.0%` and {glue:text}`bytes_keep:.0%` of its speed. The count comes
# close to what decode keeps on both machines and gets prefill's direction, prefill's work
# growing faster than decode's bytes, not the share each machine keeps. So the gap narrows
# with depth, to {glue:text}`gap_deep:.1f`x at the deepest point in the newest build:

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spark-ratio-depth",
    chart=charts.ratio_by_depth(pairs, "gpt-oss-120b"),
    caption="For gpt-oss-120b (pick another model), the prefill/decode gap ends lower at "
            "full depth than at empty context on DGX Spark and M2 Ultra alike, and stays "
            "larger on DGX Spark.",
    source="llama.cpp benchmark files for DGX Spark and M2 Ultra (pp2048 / tg32).",
)

# %% tags=["hide-input"]
ratios = phases.spark_ratios()
spark_models = ratios[ratios["machine"] == "DGX Spark"]
glue_all({
    "model_gap_min": spark_models["ratio"].min(),
    "model_gap_max": spark_models["ratio"].max(),
})

# %% [markdown]
# (spark-wait)=
# ## What a reader waits

# %% tags=["hide-input"]
wait = phases.wait_table()
by_machine = wait.set_index("machine")
spark_w, mac_w = by_machine.loc["DGX Spark"], by_machine.loc["M2 Ultra"]
glue_all({
    "wait_prompt": phases.long_prompt_tokens(),
    "wait_answer": int(spark_w["answer_tokens"]),
    "wait_beyond": int(spark_w["tokens_past_deepest"]),
})

# %% [markdown]
# Rates are what spec sheets and scoreboards compare; a reader waits in seconds. For the
# essay's coding agent, a prompt of {glue:text}`wait_prompt:,d` tokens pasted into gpt-oss-120b
# and an answer of {glue:text}`wait_answer:,d` tokens, the depth sweeps give the wait directly:
# each `pp2048` run times the prompt tokens at its depth, so the prefill's seconds are the
# sum over the prompt of the seconds per token measured around each depth
# (`napkin.phases.wait_seconds`; the last {glue:text}`wait_beyond:,d` tokens lie past the
# deepest run and are counted at its rate, a floor), and the answer is decoded at the
# deepest measured rate.

# %% tags=["hide-input"]
tables.styled(wait[["machine", "build", "pp_empty_tok_per_s", "tg_empty_tok_per_s",
                    "prefill_s", "tg_deepest_tok_per_s", "answer_s", "total_s"]],
              "table-spark-wait", {
                  "machine": "Machine", "build": "Build",
                  "pp_empty_tok_per_s": "Prefill, empty (tokens/s)",
                  "tg_empty_tok_per_s": "Decode, empty (tokens/s)",
                  "prefill_s": "Prompt (s)", "tg_deepest_tok_per_s": "Decode, deepest (tokens/s)",
                  "answer_s": "Answer (s)", "total_s": "Whole request (s)"},
              formats={"pp_empty_tok_per_s": "{:,.0f}", "tg_empty_tok_per_s": "{:.1f}",
                       "prefill_s": "{:.1f}", "tg_deepest_tok_per_s": "{:.1f}",
                       "answer_s": "{:.1f}", "total_s": "{:.1f}"})

# %% tags=["hide-input"]
# the prose: the Mac decodes faster yet answers later, and its prompt is most of its wait
assert mac_w["tg_empty_tok_per_s"] > spark_w["tg_empty_tok_per_s"]
assert spark_w["total_s"] < mac_w["total_s"] and mac_w["prefill_s"] > mac_w["answer_s"]
glue_all({
    "wait_spark_prompt_s": spark_w["prefill_s"],
    "wait_mac_prompt_s": mac_w["prefill_s"],
    "wait_spark_total_s": spark_w["total_s"],
    "wait_mac_total_s": mac_w["total_s"],
    "wait_mac_tg_x": mac_w["tg_empty_tok_per_s"] / spark_w["tg_empty_tok_per_s"],
})

# %% [markdown]
# The M2 Ultra decodes {glue:text}`wait_mac_tg_x:.2f` times as fast at an empty context, yet
# the prompt takes it {glue:text}`wait_mac_prompt_s:.0f` s against DGX Spark's
# {glue:text}`wait_spark_prompt_s:.0f` s, and the whole request
# {glue:text}`wait_mac_total_s:.0f` s against {glue:text}`wait_spark_total_s:.0f` s: DGX
# Spark answers first. At this length the prompt, not the answer, is most of
# the wait on the Mac; chapter 8 ranks every machine by it.

# %% [markdown]
# ## Other models in the file
#
# The file measures more than gpt-oss. At empty context the gap on DGX Spark runs from
# {glue:text}`model_gap_min:.0f`x to {glue:text}`model_gap_max:.0f`x across its models and
# builds:

# %%
wide = spark_models.pivot_table(index="model", columns="detail", values="ratio").reset_index()
tables.styled(wide, "spark-models", {c: (c if c != "model" else "Model (gap, x)")
                                     for c in wide.columns},
              formats={c: (lambda v: "" if pd.isna(v) else f"{v:.1f}")
                       for c in wide.columns if c != "model"})

# %% tags=["hide-input"]
lowest = spark_models.loc[spark_models["ratio"].idxmin()]
highest = spark_models.loc[spark_models["ratio"].idxmax()]
moe = spark_models[spark_models["moe"]]["ratio"]
dense = spark_models[~spark_models["moe"]]["ratio"]
n_dense = spark_models[~spark_models["moe"]]["model"].nunique()
n_moe = spark_models[spark_models["moe"]]["model"].nunique()
per_expert = phases.tokens_per_expert("gpt-oss-120b", 2048)
glue_markdown("moe_sentence",
              f"Every dense model's gap ({dense.min():.0f}x to {dense.max():.0f}x) is larger "
              f"than every mixture-of-experts model's ({moe.min():.0f}x to {moe.max():.0f}x), "
              f"though with {n_dense} dense models against {n_moe} that is thin evidence. "
              "A plausible reading, not tested here: in prefill each expert multiplies only "
              "the share of the prompt routed to it (in a 2,048-token gpt-oss-120b prompt, "
              f"{per_expert:.0f} tokens per expert on average), so its weights are reused far "
              "fewer times per byte read than a dense model's."
              if dense.min() > moe.max() else
              "Dense and mixture-of-experts models overlap, so the architecture alone does not "
              "set the gap.")
glue_markdown("model_extremes",
              f"the smallest gap belongs to {lowest['model']} ({lowest['detail']}), the "
              f"largest to {highest['model']} ({highest['detail']})")

# %% [markdown]
# Of these, {glue:md}`model_extremes`. {glue:md}`moe_sentence`

# %% tags=["hide-input"]
glue_all({
    "build_gap": mirror.attrs["m2_build"] - mirror.attrs["spark_build"],
    "bw_ratio": mirror["m2_over_spark"].iloc[0],
})

# %% [markdown]
# ## The mirror image
#
# The llama.cpp repository also holds the same benchmark run on an M2 Ultra Mac Studio,
# with a build only {glue:text}`build_gap:d` builds away from DGX Spark's newest. Apple's
# chip has {glue:text}`bw_ratio:.1f`x the memory bandwidth and no matrix units (its GPU's
# only peak in `data/hardware_specs.csv` is a vector one). Phase by phase, as a ratio of M2
# Ultra to DGX Spark:

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spark-mirror",
    chart=charts.mirror(mirror),
    caption="M2 Ultra decodes every model faster than DGX Spark and prefills every model "
            "slower.",
    source="llama.cpp benches/dgx-spark.md (build 7941 copy) and benches/mac-m2-ultra.md "
           "(build 7948 copy), pp2048 / tg32 at depth 0; bandwidth from "
           "data/hardware_specs.csv.",
)

# %% tags=["hide-input"]
by_kind = mirror.groupby("kind")["m2_over_spark"]
glue_all({
    "dec_min": by_kind.min()["decode"],
    "dec_max": by_kind.max()["decode"],
    "pre_min": by_kind.min()["prefill"],
    "pre_max": by_kind.max()["prefill"],
})
oss = mirror[mirror["model"] == "gpt-oss-120b"].set_index("kind")
glue_all({
    "m2_tg_120": oss.loc["decode", "m2"],
    "m2_pp_120": oss.loc["prefill", "m2"],
    "m2_gap_120": oss.loc["prefill", "m2"] / oss.loc["decode", "m2"],
})

# %% [markdown]
# Across the {glue:text}`n_mirror:d` models, the M2 Ultra decodes {glue:text}`dec_min:.2f`x
# to {glue:text}`dec_max:.2f`x as fast as DGX Spark and prefills at
# {glue:text}`pre_min:.2f`x to {glue:text}`pre_max:.2f`x its speed. Decode never gains the
# full bandwidth ratio, but the direction never changes. On gpt-oss-120b the M2 Ultra's gap
# is {glue:text}`m2_gap_120:.1f`x ({glue:text}`m2_pp_120:,.0f` against
# {glue:text}`m2_tg_120:.1f` tokens/s): the same weights on a machine built the other way
# round. This is the essay's "mirror-image problem" measured with one protocol.

# %% tags=["hide-input"]
same = phases.like_for_like()
llama_same = same[same["comparison"] == f"{phases.LLAMA2_Q4}, pp512 / tg128"]
spark_l = llama_same[llama_same["family"] == "DGX Spark"].iloc[0]
strix_all = phases.strix_llama2_q4()
strix = strix_all[strix_all["confidence"] == "high"]
strix_chip = hardware.chip("Strix Halo")
glue_all({
    "strix_bw": strix_chip.bandwidth_bytes_per_s / GB,
    "strix_fp16": strix_chip.peak("fp16").flops_per_s / 1e12,
    "n_strix_runs": len(strix),
    "n_strix_fa": int((strix["flash_attention"] == "on").sum()),
    "strix_pp_best": strix["pp_tok_per_s"].max(),
    "strix_tg_best": strix["tg_tok_per_s"].max(),
    "strix_gap_min": strix["ratio"].min(),
    "strix_gap_max": strix["ratio"].max(),
    "spark_l_pp": spark_l["pp_tok_per_s"],
    "spark_l_tg": spark_l["tg_tok_per_s"],
    "spark_l_gap": spark_l["ratio"],
    "spark_over_strix_pp": spark_l["pp_tok_per_s"] / strix["pp_tok_per_s"].max(),
    "spark_over_strix_tg": spark_l["tg_tok_per_s"] / strix["tg_tok_per_s"].max(),
})
glue_markdown("strix_gap_rank", "larger than any of Strix Halo's"
              if spark_l["ratio"] > strix["ratio"].max() else "within the range of Strix Halo's")
strix_oss = phases.strix_ratios()
strix_oss = strix_oss[strix_oss["model"].str.contains("gpt-oss 120B")]
glue_all({
    "strix_oss_min": strix_oss["ratio"].min(),
    "strix_oss_max": strix_oss["ratio"].max(),
})

# %% [markdown]
# ## Strix Halo
#
# AMD's Ryzen AI Max+ 395 has nearly DGX Spark's bandwidth ({glue:text}`strix_bw:.0f` GB/s,
# computed from its memory bus) and a dense FP16 peak of {glue:text}`strix_fp16:.0f` TFLOPS
# in its integrated GPU (derived by the tester, not stated by AMD). One model and test was
# run on both, Llama-2-7B Q4_0 `pp512` / `tg128` {cite}`lhl_strix_halo_testing`
# {cite}`llamacpp_cuda_15013`. Over the tester's {glue:text}`n_strix_runs:d` high-confidence
# runs (Vulkan backends, {glue:text}`n_strix_fa:d` of them with flash attention on), Strix
# Halo's best prefill is {glue:text}`strix_pp_best:,.0f` tokens/s and its best decode
# {glue:text}`strix_tg_best:.1f`, against DGX Spark's {glue:text}`spark_l_pp:,.0f` and
# {glue:text}`spark_l_tg:.1f` with flash attention off, so the two are close to, not
# exactly, like for like. DGX Spark prefills {glue:text}`spark_over_strix_pp:.1f`x as fast
# and decodes {glue:text}`spark_over_strix_tg:.2f`x as fast, so its gap
# ({glue:text}`spark_l_gap:.1f`x) is {glue:md}`strix_gap_rank`
# ({glue:text}`strix_gap_min:.1f`x to {glue:text}`strix_gap_max:.1f`x). Strix Halo's own
# gpt-oss-120b runs give gaps of {glue:text}`strix_oss_min:.1f`x to
# {glue:text}`strix_oss_max:.1f`x, on `pp512` / `tg128`: not comparable with the DGX Spark
# file's `pp2048` / `tg32`.

# %% tags=["hide-input"]
others = llama_same[llama_same["family"] != "DGX Spark"]
glue("n_strix_l", int((others["family"] == "Strix Halo").sum()))
glue_markdown("strix_l_confidence", ", ".join(sorted(
    others[others["family"] == "Strix Halo"]["confidence"].unique())))

# %% [markdown]
# ## Like for like
#
# A gap depends on the test as well as the machine: the prompt's length, the number of
# tokens generated, the model, flash attention. So compare machines where model and test
# are the same. Every family ran one such test, Llama-2-7B Q4_0 `pp512` / `tg128` (the
# scoreboards of chapter 1, Strix Halo). There the book keeps a run only if flash attention
# was off or not recorded, as on DGX Spark's, by the same rule for every family; Strix
# Halo's own runs all have it on, which leaves it {glue:text}`n_strix_l:d` scoreboard run of
# {glue:md}`strix_l_confidence` confidence. DGX Spark and the M2 Ultra also share the
# benchmark file's gpt-oss tests, and the gpt-oss guide's machines share its own (all with
# flash attention on).

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spark-like-for-like",
    chart=charts.like_for_like(same),
    caption="Prefill/decode gap of each run, grouped by model and test; DGX Spark's runs "
            "drawn large.",
    source="llama.cpp discussions 4167, 15013, 15021, 10879 and 15396; llama.cpp "
           "benches/dgx-spark.md and copies, benches/mac-m2-ultra.md; lhl/strix-halo-testing.",
)

# %% tags=["hide-input"]
larger = others[others["ratio"] > spark_l["ratio"]]
top = llama_same.loc[llama_same["ratio"].idxmax()]
gpus_l = others[others["family"] == "Discrete GPU"]
h100_l = gpus_l[gpus_l["machine"].str.startswith("H100")].iloc[0]
m2_l = llama_same[llama_same["machine"] == "M2 Ultra 76-core GPU"].iloc[0]
glue_all({
    "n_llama_others": len(others),
    "n_larger": len(larger),
    "top_gap": top["ratio"],
})
glue_markdown("top_machine", top["machine"])
glue_all({
    "h100_gap": h100_l["ratio"],
    "m2_l_gap": m2_l["ratio"],
    "gpu_l_median": gpus_l["ratio"].median(),
    "n_gpus_l": len(gpus_l),
    "gpus_faster_pp": (gpus_l["pp_tok_per_s"] > spark_l["pp_tok_per_s"]).mean(),
    "gpus_faster_tg": (gpus_l["tg_tok_per_s"] > spark_l["tg_tok_per_s"]).mean(),
})
oss_same = same[same["comparison"] == "gpt-oss-120b MXFP4, pp2048 / tg32"]
glue_all({
    "oss_spark_gap_min": oss_same[oss_same["family"] == "DGX Spark"]["ratio"].min(),
    "oss_spark_gap_max": oss_same[oss_same["family"] == "DGX Spark"]["ratio"].max(),
    "oss_m2_gap": oss_same[oss_same["machine"] == "M2 Ultra"]["ratio"].iloc[0],
})
glue_markdown("spark_gap_rank",
              "is not the largest" if len(larger) else "is the largest of them all")

# %% [markdown]
# On Llama-2-7B Q4_0 `pp512` / `tg128`, DGX Spark's gap is {glue:text}`spark_l_gap:.1f`x. It
# {glue:md}`spark_gap_rank`: {glue:text}`n_larger:d` of the {glue:text}`n_llama_others:d`
# other runs show a larger one, up to {glue:text}`top_gap:.1f`x ({glue:md}`top_machine`);
# the median of the {glue:text}`n_gpus_l:d` discrete GPU runs is
# {glue:text}`gpu_l_median:.1f`x, the H100's {glue:text}`h100_gap:.1f`x, the 76-core M2
# Ultra's {glue:text}`m2_l_gap:.1f`x. What sets DGX Spark apart among the GPUs is that both
# its numbers are low: {glue:text}`gpus_faster_pp:.0%` of the discrete GPU runs prefill
# faster and {glue:text}`gpus_faster_tg:.0%` decode faster. On gpt-oss-120b `pp2048` /
# `tg32`, its gap is {glue:text}`oss_spark_gap_min:.1f`x to {glue:text}`oss_spark_gap_max:.1f`x
# across builds against the M2 Ultra's {glue:text}`oss_m2_gap:.1f`x. A gap the size of the
# essay's is real, but it is no sign of a box with unusual arithmetic: discrete GPUs show
# gaps as large on this test, and on DGX Spark the gap comes with slow decode.

# %% [markdown]
# ## Every machine, side by side
#
# For the record, the same ratio for every machine and model in the book's data, whatever
# the test: DGX Spark and M2 Ultra from the benchmark files, Strix Halo, the gpt-oss guide's
# GPUs and Macs {cite}`llamacpp_gpt_oss_15396`, and chapter 1's Llama-2-7B scoreboards. The
# shape of each point gives its test; medians across shapes mix tests.

# %% tags=["hide-input"]
everyone = phases.all_ratios()
napkin.Figure(
    name="fig-phase-ratio",
    chart=charts.ratio_strip(everyone, essay.claim("spark_gap")),
    caption="Prefill/decode gap of the published runs by family, whatever the test (shape). "
            "Dashed: the essay's gap.",
    source="llama.cpp benchmark files (DGX Spark, M2 Ultra), lhl/strix-halo-testing, "
           "llama.cpp discussions 15396, 4167, 15013, 15021 and 10879.",
)

# %% tags=["hide-input"]
med = everyone.groupby("family")["ratio"].median()
glue_all({
    "med_spark": med["DGX Spark"],
    "med_gpu": med["Discrete GPU"],
    "med_apple": med["Apple Silicon"],
    "med_strix": med["Strix Halo"],
    "n_everyone": len(everyone),
})
spark_points = everyone[everyone["family"] == "DGX Spark"]
glue_all({
    "n_spark_points": len(spark_points),
    "spark_pp2048_share": (spark_points["protocol"] == "pp2048 / tg32").mean(),
})
gpu_points = everyone[everyone["family"] == "Discrete GPU"]
glue("gpu_pp512_share", (gpu_points["protocol"] == "pp512 / tg128").mean())

# %% [markdown]
# Over {glue:text}`n_everyone:d` points, one per published run (a machine appears once per
# model, build, backend and setting it was run with; runs that measured another device
# than the one named, Strix Halo's CPU backend and a GPU that offloaded part of the model,
# are left out), the median gap is {glue:text}`med_spark:.0f`x on DGX Spark,
# {glue:text}`med_gpu:.0f`x on discrete GPUs, {glue:text}`med_strix:.0f`x on Strix Halo and
# {glue:text}`med_apple:.0f`x on Apple Silicon. These medians mix tests:
# {glue:text}`spark_pp2048_share:.0%` of DGX Spark's {glue:text}`n_spark_points:d` points
# are `pp2048` / `tg32` runs, while {glue:text}`gpu_pp512_share:.0%` of the discrete GPUs'
# are `pp512` / `tg128`. The like for like comparison above is the one to quote.

# %% [markdown]
# ## Your machine
#
# The same ratio, measured where this page was built: llama.cpp prefilling and generating
# with a synthetic model (see [Rerun it on your machine](../book/rerun.ipynb)). The
# {doc}`next chapter <03_h100_ridge>` measures this machine's ridge point and sets the two
# side by side. The memory probe runs again here, as in every live section; on a shared
# machine it moves with the load, so it need not match chapter 1's for the same build.

# %% tags=["nbval-ignore-output"]
live = measure.live(measure.plan_from_env())
live_ratio = phases.live_ratio(live)
tables.styled(live_ratio, "live-ratio", {
    "machine": "Machine", "model": "Model", "protocol": "Test",
    "pp_tok_per_s": "Prefill (tok/s)", "pp_stddev_tok_per_s": "± prefill",
    "tg_tok_per_s": "Decode (tok/s)", "tg_stddev_tok_per_s": "± decode", "ratio": "Gap (x)"},
    formats={"pp_tok_per_s": "{:,.1f}", "pp_stddev_tok_per_s": "{:,.1f}",
             "tg_tok_per_s": "{:,.1f}", "tg_stddev_tok_per_s": "{:,.1f}", "ratio": "{:.1f}"})

# %% tags=["hide-input", "nbval-ignore-output"]
if live_ratio.empty:
    glue_markdown("live_sentence", "llama.cpp could not run where this page was built, so "
                  "there is no live point; run the notebook on your machine to add yours.")
else:
    r = live_ratio.iloc[0]
    pp, pp_sd, tg, tg_sd = (r["pp_tok_per_s"], r["pp_stddev_tok_per_s"], r["tg_tok_per_s"],
                            r["tg_stddev_tok_per_s"])
    glue_markdown("live_sentence",
                  f"On the machine that built this page ({r['machine']}, {r['detail']}), "
                  f"llama.cpp prefilled at **{pp:,.0f} ± {pp_sd:,.0f} tokens/s** and decoded "
                  f"at **{tg:,.1f} ± {tg_sd:,.1f} tokens/s** ({r['protocol']}, the spread "
                  f"over its repetitions): a gap of **{r['ratio']:.1f}x**, or "
                  f"{max(pp - pp_sd, 0) / (tg + tg_sd):.1f}x to "
                  f"{(pp + pp_sd) / max(tg - tg_sd, 1e-9):.1f}x a standard deviation either "
                  "way. On a machine shared with other work a second run moves (chapter 1's "
                  "live run is another one). The test is not DGX Spark's: a small synthetic "
                  "model, a short prompt and few generated tokens, so it says how this "
                  "machine's two phases compare, not how its gap compares with the essay's.")

# %% [markdown]
# {glue:md}`live_sentence`

# %% tags=["hide-input", "nbval-ignore-output"]
napkin.Figure(
    name="fig-phase-ratio-live",
    chart=charts.ratio_strip(pd.concat([everyone, live_ratio], ignore_index=True)
                             if not live_ratio.empty else everyone, essay.claim("spark_gap"),
                             title="This machine beside the published gaps"),
    caption=f"This machine's live prefill/decode gap beside the published ones. Live point: "
            f"{measure.who(live)}.",
    source="Live: napkin.measure (llama.cpp on a synthetic model); published: as above.",
    live=True,
    machine=measure.who(live),
)
