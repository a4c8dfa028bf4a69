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
# # The ridge point and batching
#
# ```{admonition} In one minute
# :class: tip
# - The essay's arithmetic holds: the H100 SXM's dense FP16 ridge is {glue:text}`ridge:.1f`
#   FLOP/byte, so FP16 decode, counting the weights alone, turns compute-bound from a batch of
#   {glue:text}`b_first:d` and a
#   {glue:text}`essay_prompt:,.0f`-token prefill sits {glue:text}`over:.2f`x past the ridge.
#   The sparse figure would double the ridge; every figure here is dense
#   (<a href="#fig-ridge-points">every chip's ridges</a>). In seconds: a
#   {glue:text}`long_prompt:,d`-token prompt to Llama 3.3 70B at 16 bits on four H100 SXM
#   GPUs waits {glue:text}`long_ttft_cal_s:.1f` s for its first token on chapter 9's
#   calibrated step model ({glue:text}`long_ttft_roof_s:.1f` s on the plain roofline).
# - Ridges span {glue:md}`fp16_range` at FP16; the datacenter parts sit between
#   {glue:text}`dc_min:.0f` and {glue:text}`dc_max:.0f`, and a smaller number format moves a
#   chip's ridge with its speed-up (<a href="#fig-roofline-chips">the roofs</a>).
# - Counting weights only, batching cuts the roofline's bound on cost per token
#   {glue:text}`cost_cut:.0f`-fold from batch 1 to {glue:text}`b64:d` on four H100s
#   (<a href="#fig-batch-cost">cost against batch</a>); chapter 9's calibrated step model
#   turns compute-bound at a batch of {glue:text}`b_star_cal:d`.
# - Counting every sequence's cache, no batch reaches an H100's ridge beyond
#   {glue:text}`limit:,.0f` tokens of context for Llama 3.3 70B at FP16
#   (<a href="#fig-ridge-batch-context">the batch the ridge needs</a>): batching amortises
#   the weights, not the cache.
# ```
#
# **What this chapter does.** The essay explains why hosted inference is cheap with one
# roofline: an H100 can do {glue:text}`ridge:.0f` FLOPs in the time it reads one byte, a
# decode step at batch $B$ does about $B$ FLOPs per byte of weights, so decode stays
# memory-bound until some {glue:text}`essay_batch:.0f` sequences share each pass, while a
# {glue:text}`essay_prompt:,.0f`-token prefill is compute-bound at batch one. We recompute
# that arithmetic (keeping dense and sparse FLOPs apart), draw the roof of every chip in the
# book, turn batching into tokens/s and cost per token, then put back what the essay's
# crossover arithmetic leaves out, the KV cache that every sequence reads for itself, and
# finally measure the roofline of the machine that built this page and set its batched decode
# against it.
#
# A chip's **ridge point** is its peak arithmetic rate over its memory bandwidth; a kernel's
# **arithmetic intensity** is the FLOPs it does per byte it reads {cite}`williams2009roofline`:
#
# ```{math}
# :label: eq-ridge
# \text{ridge} = \frac{F\ \text{(FLOP/s)}}{BW\ \text{(bytes/s)}}, \qquad
# \text{attainable FLOP/s} = \min\left(F,\; I \cdot BW\right)
# ```
#
# A matmul that uses each of $P$ weights, stored in $b$ bytes each, for $n$ tokens in one
# pass does $2Pn$ FLOPs (a multiply and an add) against $bP$ bytes:
#
# ```{math}
# :label: eq-matmul-intensity
# I_{\text{weights}} = \frac{2Pn}{bP} = \frac{2n}{b}
# \;\;\xrightarrow{\;b\,=\,2\ (\text{FP16})\;}\;\; n
# ```
#
# Decode has $n = B$, the batch; prefill has $n$ = the prompt length. Both equations are a
# line each in `napkin.roofline`:
#
# ```{literalinclude} ../lib/napkin/roofline/roof.py
# :language: python
# :pyobject: ridge_point
# ```
#
# ```{literalinclude} ../lib/napkin/roofline/roof.py
# :language: python
# :pyobject: matmul_intensity
# ```

# %% tags=["hide-input"]
import numpy as np
import pandas as pd

import napkin
from napkin import capacity, deployment, essay, hardware, phases, roofline, tables
from napkin.roofline import figures as charts
from napkin.measure import batched
from napkin.predict import ROOFLINE
from napkin.predict import step as predict_step
from napkin.predict.calibration import calibrated
from napkin.prose import glue, glue_all, glue_markdown
from napkin.units import GiB, TFLOPS
from napkin.validation import report as validation_report

h100 = roofline.chip_roof("H100 SXM")
glue_all({
    "ridge": h100.ridge,
    "essay_batch": essay.claim("decode_batch_crossover"),
    "essay_prompt": essay.claim("prefill_intensity"),
})

# %% [markdown]
# ## The essay's arithmetic

# %% tags=["hide-input"]
h100_chip = hardware.chip("H100 SXM")
glue_all({
    "h100_sparse": h100_chip.specs["fp16_tensor_sparse_TFLOPS"],
    "h100_dense": h100_chip.specs["fp16_tensor_dense_TFLOPS"],
    "h100_bw": h100.bandwidth_bytes_per_s / 1e9,
    "essay_ridge": essay.claim("h100_ridge"),
    "sparse_ridge": roofline.ridge_point(h100_chip.specs["fp16_tensor_sparse_TFLOPS"] * TFLOPS,
                                          h100.bandwidth_bytes_per_s),
})
b64 = int(essay.claim("batch_example"))
glue_all({
    "b64": b64,
    "i_b1": roofline.matmul_intensity(1),
    "i_b64": roofline.matmul_intensity(b64),
    "b_star": h100.ridge / roofline.matmul_intensity(1),
    "b_first": int(np.floor(h100.ridge / roofline.matmul_intensity(1))) + 1,
})
i_prefill = roofline.matmul_intensity(essay.claim("prefill_intensity"))
glue_all({
    "i_prefill": i_prefill,
    "over": i_prefill / h100.ridge,
    "essay_over": essay.claim("prefill_over_ridge"),
})
# what a reader waits for a coding agent's long prompt, on the setup of this chapter
long_prompt = dict(n_chips=4, weights="fp16", kv="fp16",
                   input_tokens=phases.long_prompt_tokens(), output_tokens=1000, batch=1)
waits = {name: napkin.predict("H100 SXM", "Llama-3.3-70B", calibration=cal, **long_prompt)
         for name, cal in (("calibrated", None), ("roofline", ROOFLINE))}
glue_all({
    "long_prompt": phases.long_prompt_tokens(),
    "long_ttft_cal_s": waits["calibrated"].ttft_s,
    "long_ttft_roof_s": waits["roofline"].ttft_s,
    "long_tpot_cal_ms": 1e3 * waits["calibrated"].tpot_s,
})

# %% [markdown]
# NVIDIA lists the H100 SXM at {glue:text}`h100_sparse:,.0f` FP16 tensor TFLOPS *with 2:4
# sparsity*, which is {glue:text}`h100_dense:,.0f` TFLOPS for the dense matmuls inference
# actually runs, and {glue:text}`h100_bw:,.0f` GB/s of HBM3 bandwidth. The dense figure gives
# a ridge of {glue:text}`ridge:.1f` FLOP/byte (the essay: {glue:text}`essay_ridge:.0f`); the
# sparse one would give {glue:text}`sparse_ridge:.1f`, twice as far to the right and wrong
# for a dense model. Every FLOP/s figure in this chapter is dense unless its label says
# otherwise.
#
# With FP16 weights, decode at batch one sits at an intensity of
# {glue:text}`i_b1:.0f` FLOP/byte and at the essay's batch of {glue:text}`b64:d`, at
# {glue:text}`i_b64:.0f`. It reaches the ridge at a batch of {glue:text}`b_star:.1f`, so the
# first whole batch past it is {glue:text}`b_first:d`; the essay rounds to
# {glue:text}`essay_batch:.0f`. A {glue:text}`essay_prompt:,.0f`-token
# prefill sits at {glue:text}`i_prefill:,.0f` FLOP/byte, {glue:text}`over:.2f`x the ridge:
# the essay's {glue:text}`essay_over:.0f` times over is right.
#
# In seconds, a reader waits for that compute: a coding agent's
# {glue:text}`long_prompt:,d`-token prompt to Llama 3.3 70B at 16 bits on four H100 SXM GPUs
# reaches its first token after {glue:text}`long_ttft_roof_s:.1f` s on the plain roofline and
# {glue:text}`long_ttft_cal_s:.1f` s on chapter 9's calibrated step model, which then gives
# a token every {glue:text}`long_tpot_cal_ms:.0f` ms.

# %% [markdown]
# ## Every chip's roof
#
# The same division for every chip in `data/hardware_specs.csv`, for every arithmetic the
# chip states a dense peak for.

# %% tags=["hide-input"]
CHIPS = ["H100 SXM", "H100 PCIe", "H200", "B200", "A100 SXM", "A100 PCIe", "MI300X",
         "RTX 4090", "RTX 5090", "DGX Spark", "M2 Ultra", "Strix Halo"]
DATACENTER = ["H100 SXM", "H100 PCIe", "H200", "B200", "A100 SXM", "A100 PCIe", "MI300X"]
ridges = roofline.ridge_table(CHIPS)
spark = hardware.chip("DGX Spark")
rtx = hardware.chip("RTX 4090")
glue_all({
    "geforce_acc": roofline.peak_for("RTX 4090", "F16").flops_per_s / rtx.peak("fp16").flops_per_s,
    "geforce_int8": rtx.peak("int8").flops_per_s / rtx.peak("fp16").flops_per_s,
    "spark_fp4": spark.peak("fp4", sparse=True).flops_per_s / TFLOPS,
    "spark_fp4_dense": spark.peak("fp4").flops_per_s / TFLOPS,
    "spark_int8": spark.peak("int8").flops_per_s / TFLOPS,
    "spark_fp16": spark.peak("fp16").flops_per_s / TFLOPS,
})
r5090 = hardware.chip("RTX 5090")
b200 = hardware.chip("B200")
glue_all({
    "b200_fp4_over_fp8": b200.peak("fp4").flops_per_s / b200.peak("fp8").flops_per_s,
    "r5090_fp4_over_fp8": r5090.peak("fp4").flops_per_s / r5090.peak("fp8").flops_per_s,
    "r5090_fp4_over_fp16": r5090.peak("fp4").flops_per_s / r5090.peak("fp16").flops_per_s,
})
# what a GeForce-style GB10 would have at FP8, against a dense FP8 GEMM measured on one
geforce_style_fp8 = spark.peak("fp4").flops_per_s / (r5090.peak("fp4").flops_per_s
                                                     / r5090.peak("fp8").flops_per_s)
# GeForce halves FP8 only with FP32 accumulate; with FP16 accumulate it keeps this rate
geforce_style_fp8_fp16acc = spark.peak("fp4").flops_per_s / (
    r5090.peak("fp4").flops_per_s / (r5090.specs["fp8_tensor_dense_fp16acc_TFLOPS"] * TFLOPS))
measured_fp8 = spark.specs["fp8_tensor_dense_gemm_measured_TFLOPS"] * TFLOPS
glue_all({
    "spark_fp8_geforce": geforce_style_fp8 / TFLOPS,
    "spark_fp8_geforce_fp16acc": geforce_style_fp8_fp16acc / TFLOPS,
    "spark_fp8_measured": measured_fp8 / TFLOPS,
    "spark_fp8_measured_share": measured_fp8 / spark.peak("fp8").flops_per_s,
})
# the prose: above the GeForce-style FP32-accumulate rate, within the FP16-accumulate one
assert geforce_style_fp8 < measured_fp8 <= geforce_style_fp8_fp16acc
by_arith = ridges.pivot_table(index="chip", columns="arithmetic", values="ridge_flop_per_byte")
dense_fp16 = by_arith["fp16"]
fp16_derived = ridges[ridges["arithmetic"] == "fp16"].set_index("chip")["derived"]


def _end(chip: str) -> str:
    return (f"{dense_fp16[chip]:.0f} FLOP/byte ({chip}"
            + (", a derived figure)" if fp16_derived[chip] else ")"))


glue_markdown("fp16_range", f"{_end(dense_fp16.idxmin())} to {_end(dense_fp16.idxmax())}")
glue_all({
    "dc_min": dense_fp16.loc[DATACENTER].min(),
    "dc_max": dense_fp16.loc[DATACENTER].max(),
    "h100_fp8_ridge": by_arith.loc["H100 SXM", "fp8"],
    "spark_ridge_fp4": by_arith.loc["DGX Spark", "fp4"],
})
markers = pd.DataFrame({
    "intensity": [roofline.matmul_intensity(1), roofline.matmul_intensity(b64), i_prefill],
    "label": ["decode, batch 1 (FP16)", f"decode, batch {b64} (FP16)",
              f"prefill, {essay.claim('prefill_intensity'):,.0f}-token prompt (FP16)"],
    "short": ["decode B=1", f"B={b64}", f"prefill {essay.claim('prefill_intensity'):,.0f}"]})

# %% [markdown]
# Which peak a chip is held to matters as much as the division, because a matmul runs at the
# rate of the arithmetic it actually uses:
#
# - **Datacenter GPUs** (H100, H200, B200, A100, MI300X): dense tensor throughput in each
#   format; FP8 and INT8 run at twice the FP16 rate on Hopper and Blackwell, FP4 at four
#   times on Blackwell.
# - **GeForce cards** (RTX 4090, RTX 5090): FP16 tensor throughput *with FP32 accumulate*,
#   the rate of a GEMM that accumulates in FP32, as frameworks' half-precision matmuls do;
#   with FP16 accumulate, which llama.cpp's F16 GEMMs use (next section), the RTX 4090 is
#   listed {glue:text}`geforce_acc:.1f`x faster, and its INT8 tensor rate is
#   {glue:text}`geforce_int8:.1f`x the FP32-accumulate FP16 one.
# - **M2 Ultra**: no matrix units; its GPU's FP16 peak equals its FP32 peak, and it has no
#   faster integer path (a third party's figure, computed, not stated by Apple).
# - **Strix Halo**: the theoretical FP16 and INT8 peaks of its integrated GPU's matrix
#   instructions, computed, not stated by AMD.
# - **DGX Spark**: NVIDIA states only {glue:text}`spark_fp4:,.0f` TFLOPS of *sparse FP4*.
#   The dense figures here are derived by the B200's ratios, datacenter Blackwell's, where
#   FP4 runs at {glue:text}`b200_fp4_over_fp8:.0f`x the FP8 rate
#   ({glue:text}`spark_fp4_dense:,.0f` FP4, {glue:text}`spark_int8:,.0f` FP8 and INT8,
#   {glue:text}`spark_fp16:,.0f` FP16), not vendor-stated. GeForce Blackwell does otherwise:
#   with FP32 accumulate the RTX 5090's FP4 rate is {glue:text}`r5090_fp4_over_fp8:.0f`x its
#   FP8 rate and {glue:text}`r5090_fp4_over_fp16:.0f`x its FP16 rate, so a GeForce-style GPU
#   accumulating in FP32 would have half these FP8 and FP16 figures
#   ({glue:text}`spark_fp8_geforce:,.0f` TFLOPS of FP8, against
#   {glue:text}`spark_fp8_geforce_fp16acc:,.0f` with FP16 accumulate). A dense FP8 GEMM
#   measured on GB10 reached {glue:text}`spark_fp8_measured:,.0f` TFLOPS
#   ({glue:text}`spark_fp8_measured_share:.0%` of the derived figure; a community measurement
#   on NVIDIA's developer forum, `data/hardware_specs.csv`),
#   more than a GeForce-style GPU could reach with FP32 accumulate, but not more than with
#   FP16 accumulate. The data row records the rate and that the GEMM ran in CUTLASS, not
#   which precision it accumulated in, and the argument needs FP32: only if it accumulated in
#   FP32 does DGX Spark's FP8 not follow GeForce. No measurement in the data settles its FP16
#   with FP32 accumulate. Hollow points and dotted lines mark derived figures.

# %%
wide = ridges.pivot_table(index="chip", columns="arithmetic", values="flops_per_s") / TFLOPS
shown = (by_arith.round(0).add_suffix("_ridge").join(wide.add_suffix("_peak"))
         .reindex(CHIPS).reset_index()
         .assign(bw=lambda d: [hardware.chip(c).bandwidth_bytes_per_s / 1e9 for c in d["chip"]],
                 derived=lambda d: [", ".join(a.upper() for a in ridges[(ridges["chip"] == c)
                                              & ridges["derived"]]["arithmetic"]) or "none"
                                    for c in d["chip"]]))
tables.styled(shown, "ridge-table", {
    "chip": "Chip", "bw": "Bandwidth (GB/s)", "fp16_peak": "FP16 peak (TFLOP/s)",
    "fp16_ridge": "FP16 ridge", "fp8_ridge": "FP8 ridge", "int8_ridge": "INT8 ridge",
    "fp4_ridge": "FP4 ridge", "derived": "Derived, not vendor-stated"})

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-ridge-points",
    chart=charts.ridge_dots(ridges, markers.iloc[[0, 2]]),
    caption="Every chip's ridge point for each arithmetic the data give it a dense peak for "
            "(hollow: derived, not vendor-stated), with batch-1 decode and a prefill of the "
            "essay's prompt length marked at FP16.",
    source="data/hardware_specs.csv (vendor figures, some via secondary compilations; DGX "
           "Spark's dense, Strix Halo's and M2 Ultra's computed); ridges by napkin.roofline.",
)

# %% [markdown]
# Dense FP16 ridges run from {glue:md}`fp16_range`; the datacenter parts all sit between {glue:text}`dc_min:.0f` and {glue:text}`dc_max:.0f`.
# Each halving of the number format doubles the ridge on chips whose tensor cores double their
# rate for it: the H100's FP8 ridge is {glue:text}`h100_fp8_ridge:.0f`, DGX Spark's derived
# FP4 ridge {glue:text}`spark_ridge_fp4:,.0f`. On the full FP16 roofline, with the workloads
# marked:

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-roofline-chips",
    chart=charts.roofline_lines(ridges[ridges["arithmetic"] == "fp16"], markers),
    caption="Each chip's dense FP16 roof with batch-1 decode, batch-64 decode and a prefill "
            "of the essay's prompt length marked by their FP16 weight intensity.",
    source="data/hardware_specs.csv; rooflines and workload intensities computed by "
           "napkin.roofline (weights only, FP16).",
)

# %% [markdown]
# ## Which roof a weight format sees

# %% tags=["hide-input"]
glue_markdown("accumulate_link", f"[its CUDA backend]({roofline.ACCUMULATE_SOURCE})")

# %% [markdown]
# A format changes both sides of the division. With $b$ bytes per weight the weight matmuls
# do $2B/b$ FLOPs per byte at batch $B$ (equation {eq}`eq-matmul-intensity`), and they run at
# the rate of the arithmetic the format uses: FP8 weights on FP8 tensor cores, FP4 on FP4 ones,
# llama.cpp's 4-bit and 8-bit blocks through its INT8 kernels (it multiplies them with 8-bit
# integer dot products), and its F16 weights, at the batches where the crossover lies, through
# cuBLAS GEMMs that accumulate in FP16 ({glue:md}`accumulate_link`), so on a GeForce card at
# the FP16-accumulate rate. The batch at which decode reaches the ridge is therefore
#
# ```{math}
# :label: eq-format-crossover
# B^{\times} = \frac{R_{\text{arithmetic}} \cdot b}{2}
# ```
#
# (weights only, as in the essay):

# %%
crossover = roofline.crossover_table(["H100 SXM", "B200", "RTX 4090", "DGX Spark"],
                                     ["F16", "FP8", "Q8_0", "Q4_K", "FP4"])
tables.styled(crossover.assign(
    arith=crossover["flops_kind"] + np.where(crossover["derived"], " (derived)", "")),
    "format-crossover-table", {
        "chip": "Chip", "weight_format": "Weights", "bytes_per_weight": "Bytes per weight",
        "arith": "Runs in", "ridge_flop_per_byte": "Ridge (FLOP/byte)",
        "crossover_batch": "Crossover batch"},
    formats={"ridge_flop_per_byte": "{:,.0f}", "crossover_batch": "{:,.0f}"})

# %% tags=["hide-input"]
cx = crossover.set_index(["chip", "weight_format"])["crossover_batch"]
glue_all({
    "cx_h100_f16": cx[("H100 SXM", "F16")],
    "cx_h100_fp8": cx[("H100 SXM", "FP8")],
    "cx_h100_q4": cx[("H100 SXM", "Q4_K")],
    "cx_b200_fp4": cx[("B200", "FP4")],
})
nvfp4 = roofline.crossover_table(["B200"], ["NVFP4"]).iloc[0]
glue_all({
    "cx_b200_nvfp4": nvfp4["crossover_batch"],
    "nvfp4_bits": nvfp4["bytes_per_weight"] * 8,
    "fp4_bits": crossover.set_index(["chip", "weight_format"]).loc[("B200", "FP4"),
                                                                  "bytes_per_weight"] * 8,
    "cx_4090_f16": cx[("RTX 4090", "F16")],
    "cx_4090_q4": cx[("RTX 4090", "Q4_K")],
})
# a GEMM that accumulates in FP32 runs at the RTX 4090's FP32-accumulate FP16 rate
cx_4090_fp32acc = roofline.chip_roof("RTX 4090").ridge / roofline.matmul_intensity(1)
glue("cx_4090_fp32acc", cx_4090_fp32acc)
# what the prose says in words, checked
assert abs(cx[("H100 SXM", "FP8")] / cx[("H100 SXM", "F16")] - 1) < 0.01
assert cx[("H100 SXM", "Q4_K")] < cx[("H100 SXM", "F16")]
assert cx[("RTX 4090", "Q4_K")] < cx[("RTX 4090", "F16")]
assert cx_4090_fp32acc < cx[("RTX 4090", "Q4_K")]

# %% [markdown]
# FP8 weights on an H100 cross at a batch of {glue:text}`cx_h100_fp8:.0f`, where FP16 crossed
# at {glue:text}`cx_h100_f16:.0f`: half the bytes per weight, twice the FLOP/s, the same
# crossover; FP4 on a B200 does about the same ({glue:text}`cx_b200_fp4:.0f` at
# {glue:text}`fp4_bits:.0f` bits a weight, {glue:text}`cx_b200_nvfp4:.0f` counting NVFP4's block scales,
# {glue:text}`nvfp4_bits:.1f` bits a weight). Formats whose bytes
# shrink faster than their arithmetic speeds up move it down: llama.cpp's Q4_K reaches the
# INT8 ridge at {glue:text}`cx_h100_q4:.0f` on an H100. Under llama.cpp an RTX 4090 keeps that
# order: its F16 weights cross at {glue:text}`cx_4090_f16:.0f` on the FP16-accumulate roof,
# Q4_K at {glue:text}`cx_4090_q4:.0f`. The order flips only for a GEMM that accumulates in
# FP32: its FP16 roof on the card is half as high, and the card's INT8 rate is
# {glue:text}`geforce_int8:.0f` times it, so there FP16 crosses at
# {glue:text}`cx_4090_fp32acc:.0f`, below Q4_K. Every crossover in this section counts weights
# only; the next sections add the cache.

# %% [markdown]
# ## Batching on a datacenter GPU

# %% tags=["hide-input"]
model = roofline.llama_3_3_70b()
KV_SHARE = 0.5
n_gpus = roofline.chips_to_hold(model, h100, KV_SHARE)
glue_all({
    "kv_share": KV_SHARE,
    "h100_cap": h100.capacity_bytes / GiB,
})
group = h100.times(n_gpus)
glue_all({
    "params_b": model.params / 1e9,
    "weights_gib": model.weight_bytes / GiB,
    "n_gpus": n_gpus,
})
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
CONTEXTS = [0, 1024, 8192, 32768, 131072]
curve = roofline.batch_curve(model, group, BATCHES, CONTEXTS)
zero = curve[curve["context_tokens"] == 0].set_index("batch")
glue_all({
    "tps_1": zero.loc[1, "tokens_per_s"],
    "tps_64": zero.loc[b64, "tokens_per_s"],
    "cost_1": zero.loc[1, "chip_s_per_mtok"],
    "cost_64": zero.loc[b64, "chip_s_per_mtok"],
    "cost_cut": zero.loc[1, "chip_s_per_mtok"] / zero.loc[b64, "chip_s_per_mtok"],
})
top = zero["tokens_per_s"].max()
glue_all({
    "tps_top": top,
    "cost_top": zero["chip_s_per_mtok"].min(),
})
MID_CONTEXT = 8192
glue_all({
    "mid_context": MID_CONTEXT,
    "fit_mid": roofline.max_batch(model, group, MID_CONTEXT),
    "kv_seq_mid": model.kv_bytes(MID_CONTEXT) / GiB,
})

# %% [markdown]
# Take the essay's model, Llama 3.3 70B, with FP16 weights and an FP16 cache
# ({glue:text}`params_b:.1f` billion parameters, {glue:text}`weights_gib:.0f` GiB of weights).
# It does not fit on one {glue:text}`h100_cap:.0f` GiB H100, so shard it, tensor-parallel,
# over {glue:text}`n_gpus:d` of them: the smallest power of two that leaves at least
# {glue:text}`kv_share:.0%` of their memory for the cache. Sharding splits FLOPs and bytes
# alike, so the ridge point and every intensity below are those of one H100; throughput is
# the group's, and cost is counted in
# **GPU-seconds per million tokens**, which becomes a price once multiplied by what a
# GPU-hour costs you.
#
# A decode step runs at the slower of its arithmetic and its memory traffic. For now, as the
# essay does, count only the weights (context 0):

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-batch-throughput",
    chart=charts.batch_lines(curve, "tokens_per_s"),
    caption=f"Llama 3.3 70B (FP16) on {n_gpus} H100 SXM: throughput grows in proportion to "
            "batch while the weights dominate the bytes, then flattens, earlier the longer "
            "the context.",
    source="Model from its config (Meta model card via model_configs); H100 SXM figures from "
           "data/hardware_specs.csv; roofline time per step computed by napkin.roofline.",
)

# %% [markdown]
# At context 0 the roofline bounds the group at {glue:text}`tps_1:,.0f` tokens/s at batch 1
# and {glue:text}`tps_64:,.0f` at batch {glue:text}`b64:d`: one weight read per step, shared
# by more sequences. These are ceilings, not forecasts: real decode lands well below its
# bandwidth ceiling (chapter 1 measures how far), and the bound leaves out the communication
# tensor parallelism adds. What carries over is the ratio: the bound on cost per token falls
# {glue:text}`cost_cut:.0f`-fold, from {glue:text}`cost_1:,.0f` to
# {glue:text}`cost_64:,.0f` GPU-seconds per million tokens; past the ridge, throughput stops
# at {glue:text}`tps_top:,.0f` tokens/s and cost at {glue:text}`cost_top:,.1f`. This is the
# essay's "entire economic basis of hosted inference".
#
# The other lines are what the essay skips. With context, every sequence also reads its own
# cache, {glue:text}`kv_seq_mid:.2f` GiB per sequence at {glue:text}`mid_context:,d` tokens,
# and that read grows with the batch instead of being shared. The faded points are batches
# whose caches no longer fit beside the weights: at {glue:text}`mid_context:,d` tokens, only
# {glue:text}`fit_mid:d` sequences fit in the group's memory at all.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-batch-cost",
    chart=charts.batch_lines(curve, "chip_s_per_mtok"),
    caption="Cost per token against batch: at long context the cache, read once per "
            "sequence, puts a floor under cost that batching cannot lower.",
    source="As above; cost = GPUs x step time / batch.",
)

# %% tags=["hide-input"]
served = deployment.deploy("Llama-3.3-70B", "H100 SXM", n_chips=n_gpus, weights="BF16")
calibrated_tps = {b: b / predict_step.step_seconds(served, b, 0) for b in (1, b64)}
band = validation_report.error_band("offline", "new")
roof_band = validation_report.error_band("offline", "new", "plain roofline")
fitted = calibrated()
glue_all({
    "cal_tps_1": calibrated_tps[1],
    "cal_tps_64": calibrated_tps[b64],
    "offline_roof_x": roof_band["bias"],
    "offline_median": band["median"],
    "offline_p90": band["p90"],
    "eta": fitted.bandwidth_efficiency,
})
b_star_cal = predict_step.compute_bound_batch(served, 0)
glue("b_star_cal", b_star_cal)
b_star_roof = h100.ridge / roofline.matmul_intensity(1)
glue("b_star_roof", b_star_roof)
assert abs(b_star_cal / b_star_roof - 1) < 0.05  # the prose: the essay's crossover stands

# %% [markdown]
# How far to trust these bounds, chapter 9 measures. On MLPerf Offline results whose chip and
# model the fit had not seen together, the plain roofline promises {glue:text}`offline_roof_x:.1f`
# times the throughput real servers reach for the median row, while the book's calibrated
# step model is within x{glue:text}`offline_median:.2f` of it for half the rows and
# x{glue:text}`offline_p90:.2f` for nine in ten (cross-validated). Its servers reach
# {glue:text}`eta:.0%` of both peaks and pay fixed costs every step and for their
# all-reduces: for this group it gives {glue:text}`cal_tps_1:,.0f` tokens/s at batch 1 and
# {glue:text}`cal_tps_64:,.0f` at batch {glue:text}`b64:d`. Chapter 9 found no evidence in
# the published rows for a share of peak FLOP/s apart from the share of peak bandwidth, so
# one share scales both roofs alike, and the model's own verdict (the batch at which its
# step turns compute-bound, `napkin.predict.step.compute_bound_batch`) is a batch of
# {glue:text}`b_star_cal:d` for weights-only decode, against the datasheet's
# {glue:text}`b_star_roof:.0f`: the essay's crossover stands.

# %% [markdown]
# ## What batching cannot amortise

# %% tags=["hide-input"]
glue_all({
    "kv_per_token": model.kv_bytes_per_token(),
    "attn_intensity": model.attention_flops(1) / model.kv_bytes(1),
})
limit = roofline.context_limit(model, h100.ridge)
glue("limit", limit)
SHORT_CONTEXT = 1024
glue_all({
    "short_context": SHORT_CONTEXT,
    "b_at_short": roofline.batch_to_ridge(model, h100.ridge, SHORT_CONTEXT),
    "b_at_half": roofline.batch_to_ridge(model, h100.ridge, int(limit // 2)),
    "half_limit": int(limit // 2),
})
ROOFS = [roofline.chip_roof(c) for c in ("A100 SXM", "H100 SXM", "H200", "B200", "MI300X")]
limits = {r.name: roofline.context_limit(model, r.ridge) for r in ROOFS}
glue_all({
    "limit_min": min(limits.values()),
    "limit_min_chip": min(limits, key=limits.get),
    "limit_max": max(limits.values()),
    "limit_max_chip": max(limits, key=limits.get),
    "n_roofs": len(ROOFS),
})
# the same limit for every chip of the chapter, datacenter or not
all_limits = {c: roofline.context_limit(model, roofline.chip_roof(c).ridge) for c in CHIPS}
glue("all_limit_min", min(all_limits.values()))
shortest, longest = min(all_limits, key=all_limits.get), max(all_limits, key=all_limits.get)
glue_markdown("all_limit_min_chip", shortest + (", whose FP16 peak is derived"
                                                if fp16_derived[shortest] else ""))
glue_all({
    "all_limit_max": all_limits[longest],
    "all_limit_max_chip": longest,
})
assert longest == dense_fp16.idxmin()  # "whose ridge is the lowest"
glue("n_chips", len(CHIPS))
glue_markdown("turn_chips", ", ".join(f"one {c}" for c in capacity.DATACENTER[:-1])
              + f" and one {capacity.DATACENTER[-1]}")
# capacity aside so far: what the four H100s can hold
glue_all({
    "fit_short": roofline.max_batch(model, group, SHORT_CONTEXT),
    "turn_group": roofline.capacity_turn(model, group)["turn_tokens"],
})

# %% [markdown]
# With a cache, one decode step of $B$ sequences, each with $c$ tokens of context, does
# $B(2P + a\,c)$ FLOPs, where $a$ is the attention arithmetic per cached token, and reads
# $W + B\,k\,c$ bytes, where $W$ is the weights and $k$ the cache bytes per token
# ({glue:text}`kv_per_token:,d` bytes for this model, from `napkin.kv_bytes_per_token`):
#
# ```{math}
# :label: eq-decode-intensity-kv
# I(B, c) = \frac{B\,(2P + a\,c)}{W + B\,k\,c}
# \;\xrightarrow{\;B \to \infty\;}\; \frac{2P + a\,c}{k\,c}
# ```
#
# This pools the step's FLOPs and bytes into one intensity, the step as a whole: the weight
# matmuls and attention are separate kernels, but every step runs both. As the batch grows
# the weights stop mattering and the intensity tends to that of one sequence's own work over
# its own cache. Attention does {glue:text}`attn_intensity:.0f`
# FLOPs per cached byte at FP16 (as many as there are query heads per KV head), far below
# any ridge. The intensity reaches the ridge $R$ at
#
# ```{math}
# :label: eq-batch-to-ridge
# B^{*} = \frac{R\,W}{2P + a\,c - R\,k\,c}, \qquad
# \text{and never once}\quad c \;\ge\; \frac{2P}{R\,k - a}
# ```
#
# which `napkin.roofline` computes, with attention allowed its own roof:
#
# ```{literalinclude} ../lib/napkin/roofline/decode.py
# :language: python
# :pyobject: batch_to_ridge
# ```

# %% [markdown]
# For Llama 3.3 70B on an H100, the batch that reaches the ridge is
# {glue:text}`b_star:.1f` at context 0, {glue:text}`b_at_half:,.0f` at
# {glue:text}`half_limit:,d` tokens, {glue:text}`b_at_short:,.0f` at
# {glue:text}`short_context:,d`, and **no batch at all beyond {glue:text}`limit:,.0f` tokens
# of context**. That counts arithmetic and bytes only; memory runs out sooner. The group of
# four GPUs holds only {glue:text}`fit_short:,d` sequences of {glue:text}`short_context:,d`
# tokens beside the weights, and from {glue:text}`turn_group:,d` tokens on it holds fewer than
# the ridge needs (chapter 4 finds a turn of the same kind on {glue:md}`turn_chips`, single
# GPUs with 8-bit weights, at other contexts).
# Among the {glue:text}`n_roofs:d` datacenter GPUs in the figure below, the chips with lower
# ridge points hold out longer ({glue:text}`limit_max:,.0f` tokens on the
# {glue:text}`limit_max_chip`), the ones with higher ridge points give up sooner
# ({glue:text}`limit_min:,.0f` on the {glue:text}`limit_min_chip`), but for every one of them
# a chat-length context keeps decode memory-bound however many users share the GPU. Over all
# {glue:text}`n_chips:d` chips of this chapter the limit runs from
# {glue:text}`all_limit_min:,.0f` tokens (the {glue:md}`all_limit_min_chip`) to
# {glue:text}`all_limit_max:,.0f` (the {glue:text}`all_limit_max_chip`, whose ridge is the
# lowest). Batching still pays: it amortises the
# weights, which at short context are most of the bytes, and the weight matmuls, taken alone,
# still turn compute-bound from a batch of {glue:text}`b_first:d` at any context. What it
# cannot do is turn a long-context decode step as a whole into a compute-bound one.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-ridge-batch-context",
    chart=charts.ridge_batch_by_context(model, ROOFS, [0, 128, 256, 512, 768, 1024, 1280,
                                                       1536, 1792, 2048, 3072, 4096]),
    caption="The batch a decode step needs to reach each chip's ridge (arithmetic and bytes "
            "only, memory capacity aside) grows without bound as context grows; past the "
            "dashed line no batch reaches it.",
    source="Llama 3.3 70B at FP16 (weights and cache); chip figures from "
           "data/hardware_specs.csv; napkin.roofline.batch_to_ridge.",
)

# %% [markdown]
# Try it: the sliders set the batch and the context per sequence; the line is the decode
# step's intensity at every batch for that context, the dashed line the H100's ridge, and
# the title says where the chosen point lands. Slide the context to zero for the essay's
# picture, then up again and watch the curve flatten below the ridge.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-batch-explorer",
    chart=charts.batch_explorer(model, group, batch=b64, context=SHORT_CONTEXT),
    caption=f"Intensity of one decode step of Llama 3.3 70B (FP16) on {n_gpus} H100 SXM "
            "against batch, at the chosen context; hover the point for tokens/s and cost.",
    source="napkin.roofline, evaluated in the page: FLOPs 2P + attention per sequence, bytes "
           "= weights + each sequence's cache.",
)

# %% tags=["hide-input"]
glue("overhead_share", batched.OVERHEAD_SHARE)
glue_markdown("quick_plan", batched.plan_sentence(batched.QUICK))
glue_markdown("full_plan", batched.plan_sentence(batched.FULL))

# %% [markdown]
# ## Your machine
#
# The same roofline, measured where this page was built. A roof must be the rate of the
# arithmetic that actually runs, so the compute side is llama.cpp's own: it prefills the
# synthetic Q8_0 model with a prompt in one pass (its length is in the plans below), where
# every weight serves every prompt token, and the FLOPs of that pass over its time are the rate this machine reached
# running llama.cpp's 8-bit integer matmul kernels (a measured rate, with attention and the
# rest of the pass in it, so at best a lower bound on the kernels' own). A float32 matrix
# product through numpy's BLAS is reported beside it as a yardstick, not as the roof: it is a
# different arithmetic. The bandwidth is chapter 1's probe, run again here before and after
# the batch runs; on a shared machine it moves from run to run, so this chapter's ridge is its
# own, not chapter 1's. Then llama.cpp decodes the same model with several sequences at once,
# one token each per step, from batch 1 up, and each measured point is set against the
# roofline prediction min(compute bound, memory bound) for that batch.
#
# Batch 1 of that harness is checked before anything is read from it. Before and after the
# batches, llama.cpp also decodes the same model plainly, one sequence alone in a fresh
# context, the way chapter 1 measures it. The two run the same model through the same
# library, so they should agree; where batch 1 falls below
# {glue:text}`overhead_share:.0%` of the slower plain run, the harness's own cost per step,
# not the machine's memory, set it, and the page says so instead of reading the curve
# against the roofline. A book build runs the quick plan, under a minute: {glue:md}`quick_plan`,
# enough to see the shape roughly. `NAPKIN_BATCH=full` (or `make book FULL=1`) runs the full
# one: {glue:md}`full_plan`. The figure names the plan that ran.

# %% tags=["nbval-ignore-output"]
live_batch = batched.live(batched.plan_from_env())
live_frame = batched.frame(live_batch)
live_plain = batched.plain_decode(live_batch) if live_batch else None
glue_markdown("live_batch_sentence", batched.sentence(live_batch))
tables.styled(live_frame, "live-batch", {
    "batch": "Batch", "tokens_per_s": "Measured (tok/s)", "stddev": "±",
    "predicted_tokens_per_s": "Predicted (tok/s)", "intensity": "FLOP/byte",
    "bound": "Predicted bound"},
    formats={"tokens_per_s": "{:,.1f}", "stddev": "{:,.1f}", "predicted_tokens_per_s": "{:,.1f}",
             "intensity": "{:,.1f}"})

# %% [markdown]
# {glue:md}`live_batch_sentence`

# %% tags=["hide-input", "nbval-ignore-output"]
napkin.Figure(
    name="fig-live-batching",
    chart=charts.live_batching(live_frame, batched.who(live_batch),
                               plain=live_plain["mean"] if live_plain else None),
    caption="Measured aggregate decode throughput against the roofline prediction from this "
            "machine's own measured llama.cpp prefill rate and probed bandwidth, with "
            "llama.cpp's plain decode of the same model at batch 1.",
    source="Live: napkin.measure.batched (llama.cpp, synthetic model: batched decode and its "
           "prefill rate), napkin.measure.probe.",
    live=True,
    machine=batched.who(live_batch),
)

# %% [markdown]
# ## Closing note

# %% tags=["hide-input", "nbval-ignore-output"]
glue_markdown("closing", batched.closing_note(live_batch, essay.claim("spark_gap"), h100.ridge))

# %% [markdown]
# {glue:md}`closing`
