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
# # The napkin ceiling
#
# ```{admonition} In one minute
# :class: tip
# - The essay's table holds: Llama-2-7B at Q4_0 decodes at {glue:text}`frac_min:.0%` to
#   {glue:text}`frac_max:.0%` of the bandwidth ceiling on its four Macs
#   (<a href="#fig-napkin-ceiling">the chart</a>). Its rule of thumb does not travel: only
#   {glue:text}`share_inside:.0%` of {glue:text}`n_apple:d` Apple runs at three formats land in
#   its {glue:text}`band_low:.0%`–{glue:text}`band_high:.0%` band, and the median run reaches
#   {glue:text}`median_f16:.0%` at F16 but {glue:text}`median_q4_0:.0%` at Q4_0
#   (<a href="#fig-apple-fraction">every run</a>).
# - A fixed cost per token explains the pattern: with {glue:text}`eff_min:.0%` to
#   {glue:text}`eff_max:.0%` of paper bandwidth plus {glue:text}`fixed_min_ms:.0f` to
#   {glue:text}`fixed_max_ms:.0f` ms a token, the F16 and Q8_0 runs predict Q4_0's to within
#   a median {glue:text}`residual_abs_ms:.1f` ms. Such a cost weighs most where the read is
#   short: small formats and wide chips (<a href="#fig-apple-fraction">the same chart</a>).
# - CUDA GPUs reach a median {glue:text}`gpu_median:.0%` of their ceiling; no published plain
#   decode run in this chapter passes {glue:text}`max_fraction_any:.1%` of its own
#   (<a href="#fig-all-machines">every machine</a>). Speculative decoding does pass it:
#   chapter 10's published EAGLE-3 stream runs at {glue:text}`spec_per_read:.2f`x the ceiling.
# - Quantizing from F16 to Q4_0 cuts the bytes {glue:text}`bytes_cut:.2f`x and buys a median
#   {glue:text}`speed_gain:.2f`x (<a href="#fig-quantization-lever">the lever</a>).
# ```
#
# **What this chapter does.** At batch size one, generating a token means reading every
# weight of the model out of memory once. That gives an upper bound on decode speed that
# needs no knowledge of FLOPs at all. We rebuild the essay's table from its sources, then
# ask the questions it leaves open: does its rule of thumb, that real decode lands at
# {glue:text}`band_low:.0%` to {glue:text}`band_high:.0%` of the ceiling, hold beyond four
# Macs, for other weight formats, for discrete GPUs and for CPUs?
#
# ```{math}
# :label: eq-decode-ceiling
# \text{tokens/s} \;\le\; \frac{\text{memory bandwidth (bytes/s)}}{\text{bytes read per token}}
# ```
#
# At batch one, the bytes read per token are essentially the weights: the GGUF file's
# tensor data (for the `tg128` runs below, the KV cache adds at most
# {glue:text}`kv_share:.1%` to the bytes of a step). Every number below is computed by `napkin` from the tables in `data/`, each
# row of which names its source. The ceiling itself is one division, checked for nonsense
# inputs and nothing more:
#
# ```{literalinclude} ../lib/napkin/ceiling/__init__.py
# :language: python
# :pyobject: decode_ceiling
# ```

# %% tags=["hide-input"]
import pandas as pd

import napkin
from napkin import catalog, essay, hardware, measure, models, phases, published, tables
from napkin.ceiling import figures as charts
from napkin.prose import glue, glue_all, glue_markdown
from napkin.speculative import published as speculative
from napkin.units import GB, GiB

# %% tags=["hide-input"]
file_bytes = models.gguf_size_bytes("Q4_0", kind="file")
table = published.essay_table()
by_chip = table.set_index("chip")
uplift = published.ultra_uplift(table)
glue_all({
    "q4_file_gb": file_bytes / GB,
    "max_bw": hardware.chip("M1 Max").bandwidth_bytes_per_s / GB,
    "ultra_bw": hardware.chip("M1 Ultra").bandwidth_bytes_per_s / GB,
    "ceiling_400": by_chip.loc["M1 Max", "ceiling_tokens_per_s"],
    "ceiling_800": by_chip.loc["M1 Ultra", "ceiling_tokens_per_s"],
    "frac_min": table["fraction_of_ceiling"].min(),
    "frac_max": table["fraction_of_ceiling"].max(),
    "bw_ratio": uplift.loc["M1", "bandwidth_ratio"],
    "uplift_m1": uplift.loc["M1", "speed_ratio"],
    "uplift_m2": uplift.loc["M2", "speed_ratio"],
    "essay_uplift": essay.claim("ultra_uplift") / 100,
})

# %% [markdown]
# ## The essay's table, recomputed
#
# The essay takes Llama-2-7B at Q4_0, a file Hugging Face lists at
# {glue:text}`q4_file_gb:.2f` GB, and Apple's stated bandwidths:
# {glue:text}`max_bw:.0f` GB/s for the M1 Max and M2 Max,
# {glue:text}`ultra_bw:.0f` GB/s for the M1 Ultra and M2 Ultra.

# %%
tables.styled(table, "essay-table", {
    "machine": "Chip", "bandwidth_bytes_per_s": "Bandwidth (GB/s)",
    "ceiling_tokens_per_s": "Ceiling (tok/s)", "tokens_per_s": "Measured tg128 (tok/s)",
    "fraction_of_ceiling": "Fraction of ceiling"})

# %% [markdown]
# The ceilings are {glue:text}`ceiling_400:.1f` tokens/s at {glue:text}`max_bw:.0f` GB/s and
# {glue:text}`ceiling_800:.1f` tokens/s at {glue:text}`ultra_bw:.0f` GB/s. The measured
# `tg128` speeds from the llama.cpp Apple Silicon thread land at
# {glue:text}`frac_min:.0%` to {glue:text}`frac_max:.0%` of them, exactly the essay's table.
# Doubling paper bandwidth from Max to Ultra ({glue:text}`bw_ratio:.0f`x) buys
# {glue:text}`uplift_m1:.2f`x on M1 and {glue:text}`uplift_m2:.2f`x on M2: about the
# {glue:text}`essay_uplift:.0%` more throughput the essay reports.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-napkin-ceiling",
    chart=charts.essay_bars(table),
    caption="Measured decode lands well below the bandwidth ceiling, and doubling paper "
            "bandwidth from Max to Ultra buys far less than double the speed.",
    source="tg128 from the llama.cpp Apple Silicon thread (ggml-org/llama.cpp discussion "
           "4167); bandwidth as stated by Apple; file size from TheBloke/Llama-2-7B-GGUF. "
           "Ceilings computed by napkin.",
)

# %% tags=["hide-input"]
tensor_bytes = models.gguf_size_bytes("Q4_0", kind="tensors")
embedding_bytes = published.llama2_7b_embedding_bytes("Q4_0")
llama_cfg = catalog.config("Llama-2-7B")
glue_all({
    "q4_tensor_gb": tensor_bytes / GB,
    "q4_tensor_gib": tensor_bytes / GiB,
    "tensor_vs_file": file_bytes / tensor_bytes - 1,
    "embedding_mb": embedding_bytes / 1e6,
    "vocab": llama_cfg["vocab_size"],
    "hidden": llama_cfg["hidden_size"],
    "embedding_share": embedding_bytes / tensor_bytes,
    "embedding_rise": tensor_bytes / (tensor_bytes - embedding_bytes) - 1,
    "kv_share": napkin.kv_cache_bytes(llama_cfg, 128) / tensor_bytes,
})

# %% [markdown]
# One refinement the essay skips: the file is not what a decode step reads. Its GGUF header
# is metadata: llama.cpp reports {glue:text}`q4_tensor_gb:.3f` GB
# ({glue:text}`q4_tensor_gib:.2f` GiB) of tensor data for this file, so the ceiling on
# tensor data is only {glue:text}`tensor_vs_file:.1%` higher than on file size. The tensor
# data still hold the token embedding table, {glue:text}`vocab:,d` ×
# {glue:text}`hidden:,d` weights at Q4_0, {glue:text}`embedding_mb:.1f` MB
# ({glue:text}`embedding_share:.1%` of the tensor data), of which a step looks up one row;
# leaving it out too would raise every ceiling by a further
# {glue:text}`embedding_rise:.1%`. The napkin survives this kind of detail. The next
# sections use llama.cpp's tensor data throughout, embedding table included, so their
# ceilings are that little bit low and their fractions that little bit high.

# %% tags=["hide-input"]
apple = published.apple()
band = (essay.claim("decode_fraction_low") / 100, essay.claim("decode_fraction_high") / 100)
glue_all({
    "band_low": band[0],
    "band_high": band[1],
})

# %% [markdown]
# ## Does the rule of thumb hold?
#
# The same llama.cpp thread measured every Apple chip from M1 to M4, and at three weight
# formats, not one. Each point below is one chip and format, as a fraction of its own
# ceiling; the shaded band is the essay's range,
# {glue:text}`band_low:.0%`–{glue:text}`band_high:.0%`.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-apple-fraction",
    chart=charts.fraction_strip(apple, band),
    caption="The essay's range describes Q4_0 on the big chips. F16 and Q8_0 run much closer "
            "to the ceiling, and the Ultra parts sit lowest of all.",
    source="llama.cpp discussion 4167 (Llama-2-7B, tg128); bandwidth from "
           "data/hardware_specs.csv (Apple's figures, or the thread's community table for the "
           "chips whose figure from Apple was not found); tensor sizes as reported by "
           "llama-bench.",
)

# %% tags=["hide-input"]
medians = apple.groupby("quant")["fraction_of_ceiling"].median()
glue_all({
    "median_f16": medians["F16"],
    "median_q8_0": medians["Q8_0"],
    "median_q4_0": medians["Q4_0"],
})
inside = apple["fraction_of_ceiling"].between(*band)
glue_all({
    "share_inside": inside.mean(),
    "n_apple": len(apple),
})
fit = published.fixed_cost_fit(apple)
glue_all({
    "n_fit": len(fit),
    "n_q4_less": int((fit["beyond_Q4_0_s"] < fit["beyond_F16_s"]).sum()),
    "beyond_f16_ms": fit["beyond_F16_s"].median() * 1e3,
    "beyond_q4_ms": fit["beyond_Q4_0_s"].median() * 1e3,
    "eff_min": fit["effective_share"].min(),
    "eff_max": fit["effective_share"].max(),
    "fixed_min_ms": fit["fixed_s"].min() * 1e3,
    "fixed_max_ms": fit["fixed_s"].max() * 1e3,
    "residual_ms": fit["residual_s"].median() * 1e3,
    "residual_share": (fit["residual_s"] / fit["measured_s"]).median(),
    "residual_abs_ms": fit["residual_s"].abs().median() * 1e3,
    "residual_abs_share": (fit["residual_s"].abs() / fit["measured_s"]).median(),
    "n_q4_slower": int((fit["residual_s"] > 0).sum()),
})

# %% [markdown]
# Only {glue:text}`share_inside:.0%` of the {glue:text}`n_apple:d` runs fall inside the band.
# The median run reaches {glue:text}`median_f16:.0%` of its ceiling at F16,
# {glue:text}`median_q8_0:.0%` at Q8_0 and {glue:text}`median_q4_0:.0%` at Q4_0: the fewer
# bytes per weight, the lower the fraction. With three formats per chip the runs can say
# why. One guess is that Q4_0 weights must be unpacked and rescaled before they are
# multiplied, extra work an F16 load does not need. Split each token's time into reading
# the weights at paper bandwidth and the rest: on {glue:text}`n_q4_less:d` of the
# {glue:text}`n_fit:d` chip configurations measured at all three formats, the rest is
# smaller at Q4_0 than at F16 (a median {glue:text}`beyond_q4_ms:.1f` ms per token against
# {glue:text}`beyond_f16_ms:.1f` ms), but that comparison cannot isolate unpacking: F16's
# rest also holds whatever it loses reading its larger weights below paper bandwidth. A line
# per configuration separates the two: through its F16 and Q8_0 times, time =
# bytes ÷ effective bandwidth + a fixed cost gives an effective bandwidth of
# {glue:text}`eff_min:.0%` to {glue:text}`eff_max:.0%` of paper and a fixed cost of
# {glue:text}`fixed_min_ms:.0f` to {glue:text}`fixed_max_ms:.0f` ms, and predicts the Q4_0
# time to within a median {glue:text}`residual_abs_ms:.1f` ms either way
# ({glue:text}`residual_abs_share:.1%` of the step). The misses lean one way: Q4_0 is slower
# than the line on {glue:text}`n_q4_slower:d` of the {glue:text}`n_fit:d` configurations, and
# the median miss, counted with its sign, is {glue:text}`residual_ms:.1f` ms slow
# ({glue:text}`residual_share:.1%` of the step). That is all that is left for unpacking: a
# cost of its own, if Q4_0 has one, is about that size. A fixed cost weighs more on a shorter step, and Q4_0's step is the shortest.

# %% tags=["hide-input"]
q4 = apple[apple["quant"] == "Q4_0"]
ultra_q4 = q4[q4["chip"].str.endswith("Ultra")]["fraction_of_ceiling"]
base_q4 = q4[q4["chip"].str.fullmatch(r"M\d")]["fraction_of_ceiling"]
glue_all({
    "ultra_q4_max": ultra_q4.max(),
    "base_q4_min": base_q4.min(),
})
ultra_fit = fit[fit["chip"].str.endswith("Ultra")]
glue_all({
    "ultra_fixed_min_ms": ultra_fit["fixed_s"].min() * 1e3,
    "ultra_fixed_max_ms": ultra_fit["fixed_s"].max() * 1e3,
})
q4_bytes = published.llama2_7b_bytes_per_token("Q4_0")
glue_all({
    "ultra_read_ms": q4_bytes / hardware.chip("M2 Ultra").bandwidth_bytes_per_s * 1e3,
    "m2_read_ms": q4_bytes / hardware.chip("M2").bandwidth_bytes_per_s * 1e3,
})
big_q4 = (apple["quant"] == "Q4_0") & apple["chip"].str.contains("Max|Ultra")
glue_all({
    "inside_big_q4": inside[big_q4].mean(),
    "inside_rest": inside[~big_q4].mean(),
})

# %% [markdown]
# The chip's size goes with the fraction too: at Q4_0 the best Ultra reaches
# {glue:text}`ultra_q4_max:.1%`, the worst base M-series chip
# {glue:text}`base_q4_min:.1%`. The same fixed cost goes a long way to explain it. On the
# Ultras it comes to {glue:text}`ultra_fixed_min_ms:.1f` to
# {glue:text}`ultra_fixed_max_ms:.1f` ms, about as long as reading the Q4_0 weights at their
# paper bandwidth ({glue:text}`ultra_read_ms:.1f` ms), where on a base M2 the read alone
# takes {glue:text}`m2_read_ms:.0f` ms: a small model on a wide chip is a short job, and the
# fixed part of it weighs most there.
#
# So the rule of thumb is a rule for 4-bit weights on large chips, the setting the essay
# chose: the band holds {glue:text}`inside_big_q4:.0%` of the Q4_0 runs on Max and Ultra
# chips and {glue:text}`inside_rest:.0%` of all the others.

# %% tags=["hide-input"]
machines = published.all_machines()
board = tables.load("gpu_llama2_7b_q4_0")
# the ROCm scoreboard's decode runs: none of their GPUs' bandwidth is sourced, so none is kept
rocm = board[(board["test"] == "tg128") & (board["backend"] == "ROCm")]
assert rocm["memory_bandwidth_GB_per_s"].isna().all()  # the prose: "none of them"
# CUDA runs the scoreboard gives no bandwidth for, but whose card the hardware table holds
blank = board[(board["test"] == "tg128") & (board["backend"] == "CUDA")
              & (board["flash_attention"].astype(str) == "0")
              & board["memory_bandwidth_GB_per_s"].isna() & board["gpu"].isin(hardware.chips())]
blank_fraction = blank["throughput_tok_per_s"].astype(float) * published.llama2_7b_bytes_per_token(
    "Q4_0") / blank["gpu"].map(lambda g: hardware.chip(g).bandwidth_bytes_per_s)
cuda_kept = machines[machines["family"] == "GPU (CUDA)"]["fraction_of_ceiling"]
glue_markdown("blank_cards", " and the ".join(blank["gpu"]))
glue_all({
    "n_blank": len(blank),
    "cuda_median_kept": cuda_kept.median(),
    "cuda_median_with_blank": pd.concat([cuda_kept, blank_fraction]).median(),
})
board = board[(board["test"] == "tg128") & board["memory_bandwidth_GB_per_s"].notna()]
fa = board["flash_attention"].astype(str)
fam = machines.groupby("family")["fraction_of_ceiling"]
glue_all({
    "n_gpu_runs": int(machines["family"].str.startswith("GPU").sum()),
    "n_cuda": int(fam.size()["GPU (CUDA)"]),
    "n_vulkan": int(fam.size()["GPU (Vulkan)"]),
    "n_fa_on": int((fa == "1").sum()),
    "n_fa_unknown": int((fa == "unknown").sum()),
    "n_rocm": len(rocm),
    "n_rocm_gpus": rocm["gpu"].nunique(),
})
glue_markdown("unknown_confidence", ", ".join(sorted(board[fa == "unknown"]["confidence"]
                                                      .unique())))
cpus = machines[machines["family"] == "CPU"]
kind = cpus["bandwidth_kind"].str.lower()
glue_all({
    "n_cpu": len(cpus),
    "n_cpu_reported": int(kind.str.startswith(("measured", "as stated")).sum()),
    "n_cpu_inferred": int(kind.str.contains("inferred").sum()),
})

# %% [markdown]
# ## GPUs and CPUs on the same chart
#
# The scoreboards for CUDA and Vulkan list Llama-2-7B Q4_0 on many GPUs. The book keeps the
# {glue:text}`n_gpu_runs:d` runs recorded with flash attention off whose GPU's memory
# bandwidth the scoreboard's copies give with a source ({glue:text}`n_cuda:d` CUDA,
# {glue:text}`n_vulkan:d` Vulkan), all discrete cards except DGX Spark's integrated GB10. For
# {glue:text}`n_blank:d` more CUDA runs, the {glue:md}`blank_cards`, the copies give no
# bandwidth though the book's hardware table holds one; counted at it, the CUDA runs' median
# share of the ceiling would be {glue:text}`cuda_median_with_blank:.1%` instead of
# {glue:text}`cuda_median_kept:.1%`. The book leaves out the
# {glue:text}`n_fa_on:d` repeats with flash attention on and the
# {glue:text}`n_fa_unknown:d` Vulkan runs whose setting is not recorded (of
# {glue:md}`unknown_confidence` confidence), and all
# {glue:text}`n_rocm:d` decode runs of the ROCm scoreboard ({glue:text}`n_rocm_gpus:d` AMD
# GPUs): the data hold no sourced bandwidth for any of them, so a reader choosing an AMD
# graphics card gets no point from this chapter (chapter 8 discounts AMD's Strix Halo by its
# own runs). Some llama.cpp issues report CPU runs; for
# {glue:text}`n_cpu_reported:d` of the {glue:text}`n_cpu:d` the poster measured or stated
# the memory bandwidth, for the rest it is the theoretical figure of the memory
# ({glue:text}`n_cpu_inferred:d` of them inferred from the memory configuration; see
# `bandwidth_kind` in `data/cpu_llamacpp.csv`). For the CPU runs the bytes per token are
# estimated as parameters times the bits per weight of the format in use at the time of the
# run (see `data/README.md`).

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-all-machines",
    chart=charts.all_machines(machines, band),
    caption="Measured decode over the napkin ceiling for the published runs the book keeps: "
            "GPUs, Apple's chips at Q4_0 and CPUs. No run exceeds its ceiling.",
    source="llama.cpp discussions 4167, 15013 (CUDA), 10879 (Vulkan) and CPU results from "
           "llama.cpp issues 34, 1437, 11744 and PR 1556; bandwidth from vendors' figures "
           "as listed in data/.",
)

# %% tags=["hide-input"]
glue_all({
    "gpu_median": fam.median()["GPU (CUDA)"],
    "max_fraction_chart": machines["fraction_of_ceiling"].max(),
})
top = apple.loc[apple["fraction_of_ceiling"].idxmax()]
glue("max_fraction_any", max(top["fraction_of_ceiling"], machines["fraction_of_ceiling"].max()))
glue_markdown("max_any_run", f"{top['machine']} at {top['quant']}"
              if top["fraction_of_ceiling"] >= machines["fraction_of_ceiling"].max() else
              "a run on this chart")
glue("spec_per_read", speculative.beyond_ceiling()["per_read"])
apple_big_q4 = machines[(machines["family"] == "Apple Silicon")
                        & machines["machine"].str.contains("Max|Ultra")]
glue("apple_big_median", apple_big_q4["fraction_of_ceiling"].median())

# %% [markdown]
# The median of the {glue:text}`n_cuda:d` CUDA runs sits at {glue:text}`gpu_median:.0%` of
# its ceiling, above the essay's band, against {glue:text}`apple_big_median:.0%` for Apple's
# Max and Ultra chips at Q4_0. No run on this chart exceeds
# {glue:text}`max_fraction_chart:.0%`, and none of this chapter's runs exceeds
# {glue:text}`max_fraction_any:.1%` ({glue:md}`max_any_run`): for plain decoding, one token
# per read of the weights, the napkin is an upper bound. Speculative decoding breaks it on
# purpose: a small draft proposes several tokens and one read of the weights checks them all,
# and chapter 10's published EAGLE-3 stream on an H100 runs at
# {glue:text}`spec_per_read:.2f`x the ceiling ({doc}`10_speculative_decoding`).
#
# The lowest GPU point as plotted is the scoreboard's H100, and its ceiling is in doubt: one
# copy of the scoreboard labels the card SXM (it has HBM3 memory), another an H100 PCIe. The
# chart plots the SXM reading; the table gives both, each with its bandwidth from
# `data/hardware_specs.csv`.

# %%
readings = published.variant_readings()
tables.styled(readings[["reading", "bandwidth_bytes_per_s", "tokens_per_s",
                        "ceiling_tokens_per_s", "fraction_of_ceiling"]], "h100-readings", {
    "reading": "H100 read as", "bandwidth_bytes_per_s": "Bandwidth (GB/s)",
    "tokens_per_s": "Measured tg128 (tok/s)", "ceiling_tokens_per_s": "Ceiling (tok/s)",
    "fraction_of_ceiling": "Fraction of ceiling"})

# %% tags=["hide-input"]
by_reading = readings.set_index("reading")
rtx = machines[machines["machine"] == "RTX 4090 (CUDA)"].iloc[0]
h100_s = 1 / by_reading["tokens_per_s"].iloc[0]
glue_all({
    "h100_tg": by_reading["tokens_per_s"].iloc[0],
    "h100_ms": h100_s * 1e3,
    "rtx_tg": rtx["tokens_per_s"],
    "h100_over_rtx": by_reading["tokens_per_s"].iloc[0] / rtx["tokens_per_s"],
})
for key, name in (("sxm", "H100 SXM"), ("pcie", "H100 PCIe")):
    r = by_reading.loc[name]
    glue(f"h100_{key}_bw", r["bandwidth_bytes_per_s"] / GB)
    glue(f"h100_{key}_ceiling", r["ceiling_tokens_per_s"])
    glue(f"h100_{key}_frac", r["fraction_of_ceiling"])
    glue(f"h100_{key}_ms", 1e3 / r["ceiling_tokens_per_s"])
    glue(f"h100_{key}_rest_ms", (h100_s - 1 / r["ceiling_tokens_per_s"]) * 1e3)
    glue(f"h100_{key}_bw_over_rtx", r["bandwidth_bytes_per_s"] / rtx["bandwidth_bytes_per_s"])

# %% [markdown]
# Read as the SXM card ({glue:text}`h100_sxm_bw:,.0f` GB/s) the H100 decodes at
# {glue:text}`h100_tg:.0f` tokens/s against a ceiling of {glue:text}`h100_sxm_ceiling:.0f`,
# only {glue:text}`h100_sxm_frac:.0%`; read as the PCIe card ({glue:text}`h100_pcie_bw:,.0f`
# GB/s) the ceiling is {glue:text}`h100_pcie_ceiling:.0f` and the fraction
# {glue:text}`h100_pcie_frac:.0%`. Either way it is only {glue:text}`h100_over_rtx:.2f`x as
# fast as the RTX 4090 ({glue:text}`rtx_tg:.0f` tokens/s) with
# {glue:text}`h100_sxm_bw_over_rtx:.1f`x (SXM) or {glue:text}`h100_pcie_bw_over_rtx:.1f`x
# (PCIe) its bandwidth. Each token takes {glue:text}`h100_ms:.1f` ms, where reading the
# weights alone would take {glue:text}`h100_sxm_ms:.1f` ms at the SXM bandwidth or
# {glue:text}`h100_pcie_ms:.1f` ms at the PCIe one. The rest,
# {glue:text}`h100_sxm_rest_ms:.1f` or {glue:text}`h100_pcie_rest_ms:.1f` ms, is comparable
# with the fixed cost per token the Apple runs show above ({glue:text}`fixed_min_ms:.0f` to
# {glue:text}`fixed_max_ms:.0f` ms); with one format, these runs cannot split it further. If
# that is what it is, a 7B model is too small a job to keep this card's memory busy.

# %% tags=["hide-input"]
sizes = {q: published.llama2_7b_bytes_per_token(q) for q in ("F16", "Q4_0")}
glue("bytes_cut", sizes["F16"] / sizes["Q4_0"])
wide = apple.pivot_table(index="machine", columns="quant", values="tokens_per_s").dropna()
glue_all({
    "speed_gain": (wide["Q4_0"] / wide["F16"]).median(),
    "n_both": len(wide),
})

# %% [markdown]
# ## The quantization lever
#
# Decode is bound by the very quantity quantization shrinks. Going from F16 to Q4_0 cuts
# the bytes per token by {glue:text}`bytes_cut:.2f`x. The speed gain is smaller, a median of
# {glue:text}`speed_gain:.2f`x across the {glue:text}`n_both:d` chip configurations measured
# at both, because the fixed cost per token found above does not shrink with the bytes.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-quantization-lever",
    chart=charts.quantization_lever(apple),
    caption="Fewer bytes per token, more tokens per second, on every chip; the gain is less "
            "than the cut in bytes.",
    source="llama.cpp discussion 4167 (Llama-2-7B tg128); tensor sizes reported by "
           "llama-bench.",
)

# %% tags=["hide-input"]
discount = essay.claim("buying_discount") / 100
glue("discount", discount)

# %% tags=["hide-input"]
by_read = phases.rule_by_read(discount)
oss = by_read.set_index(["machine", "model"]).loc[("DGX Spark", "gpt-oss-120b")]
glue_all({
    "moe_file_gb": oss["file_GB"],
    "moe_read_gb": oss["read_GB"],
    "moe_by_file": oss["by_file_tok_per_s"],
    "moe_by_read": oss["by_read_tok_per_s"],
    "moe_measured": oss["measured_tok_per_s"],
    "moe_pairs": len(by_read),
})
for way in ("file", "read"):
    glue(f"moe_{way}_err_min", by_read[f"by_{way}_error"].min())
    glue(f"moe_{way}_err_max", by_read[f"by_{way}_error"].max())

# %% [markdown]
# ## Your own napkin
#
# The essay's buying rule: divide bandwidth by the quantized model's size, then discount to
# {glue:text}`discount:.0%`. The size stands for what one token reads, and for a dense model
# the two are nearly the same. A mixture of experts reads far less than its file: each token
# passes through the few experts it is routed to and the layers every token shares. Read over
# the file, the rule gives gpt-oss-120b on DGX Spark {glue:text}`moe_by_file:.1f` tokens/s
# for its {glue:text}`moe_file_gb:.1f` GB; over the {glue:text}`moe_read_gb:.2f` GB a token
# reads (chapter 2 counts them), {glue:text}`moe_by_read:.0f`; the published builds decode it
# at a median of {glue:text}`moe_measured:.0f`. Over the {glue:text}`moe_pairs:d` machine and
# mixture pairs of chapter 2's benchmark files, the file's reading misses by
# x{glue:text}`moe_file_err_min:.1f` to x{glue:text}`moe_file_err_max:.1f`, the token's by
# x{glue:text}`moe_read_err_min:.2f` to x{glue:text}`moe_read_err_max:.2f`, either way (the
# table gives each pair's direction); what is left is the discount, which runs from machine
# to machine as the sections above found.

# %%
tables.styled(by_read, "moe-rule", {
    "machine": "Machine", "model": "Mixture of experts", "file_GB": "File (GB)",
    "read_GB": "Read per token (GB)", "by_file_tok_per_s": "Rule over the file (tok/s)",
    "by_read_tok_per_s": "Rule over the read (tok/s)",
    "measured_tok_per_s": "Measured tg32, median (tok/s)", "by_file_error": "Miss, file",
    "by_read_error": "Miss, read"},
    {"file_GB": "{:.1f}", "read_GB": "{:.2f}", "by_file_tok_per_s": "{:.1f}",
     "by_read_tok_per_s": "{:.0f}", "measured_tok_per_s": "{:.0f}",
     "by_file_error": "x{:.1f}", "by_read_error": "x{:.2f}"})

# %% tags=["hide-input"]
# a rate is not a wait: chapter 2's depth sweeps, for a coding agent's long prompt
wait = phases.wait_table().set_index("machine")
glue_all({
    "wait_prompt": phases.long_prompt_tokens(),
    "wait_spark_prompt_s": wait.loc["DGX Spark", "prefill_s"],
    "wait_mac_prompt_s": wait.loc["M2 Ultra", "prefill_s"],
    "wait_spark_total_s": wait.loc["DGX Spark", "total_s"],
    "wait_mac_total_s": wait.loc["M2 Ultra", "total_s"],
})
assert wait.loc["DGX Spark", "total_s"] < wait.loc["M2 Ultra", "total_s"]  # "answers first"

# %% [markdown]
# So for a mixture, set the calculator's bytes per token to what a token reads. Drag the
# sliders to try a machine and a model; the chart works in the static page, with no Python
# behind it. The rule ranks machines by decode rate, and a rate is not what a reader waits
# for. Before the first token comes the prompt: a coding agent's
# {glue:text}`wait_prompt:,d`-token prompt to gpt-oss-120b takes DGX Spark
# {glue:text}`wait_spark_prompt_s:.0f` s and the M2 Ultra {glue:text}`wait_mac_prompt_s:.0f` s,
# so the Spark, the slower of the two by this rule, answers first
# ({glue:text}`wait_spark_total_s:.0f` s against {glue:text}`wait_mac_total_s:.0f` s for the
# whole request, as chapter 2 measures it).

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-ceiling-calculator",
    chart=charts.calculator(hardware.chip("M2 Ultra").bandwidth_bytes_per_s / GB,
                            round(tensor_bytes / GB, 1), discount),
    caption="Decode ceiling and the essay's discounted estimate for any bandwidth and model "
            "size. Starts at an M2 Ultra running Llama-2-7B Q4_0.",
    source="Formula from the essay; default discount is the essay's buying rule.",
)

# %% [markdown]
# ## Your machine
#
# The same arithmetic, measured where this page was built. The cell below probes the
# machine's memory read bandwidth, writes a synthetic llama-architecture model far larger
# than its caches, and times llama.cpp generating tokens from it, the way `llama-bench`
# does (see [Rerun it on your machine](../book/rerun.ipynb)). Run the notebook yourself and
# the point becomes yours. Every chapter that measures live runs the probe again; on a machine
# shared with other work it moves with the load, so the bandwidth another chapter reports for
# the same build can differ from the one here.

# %% tags=["nbval-ignore-output"]
live = measure.live(measure.plan_from_env())
glue_markdown("live_sentence", measure.sentence(live))
tables.styled(measure.frame(live), "live-table", {
    "machine": "Machine and model", "bytes_per_token": "Bytes/token (GB)",
    "bandwidth_bytes_per_s": "Probe (GB/s)", "ceiling_tokens_per_s": "Ceiling (tok/s)",
    "tokens_per_s": "Measured tg (tok/s)", "fraction_of_ceiling": "Fraction"})

# %% [markdown]
# {glue:md}`live_sentence`
#
# Readers' machines, measured so and shared, are on the {doc}`readers' page <../book/readers>`.

# %% tags=["hide-input", "nbval-ignore-output"]
napkin.Figure(
    name="fig-your-machine",
    chart=charts.all_machines(pd.concat([machines, measure.frame(live)]), band,
                              title="This machine beside the published runs"),
    caption="This machine's live point beside the published runs: measured tg over the "
            f"napkin ceiling. Live point: {measure.who(live)}.",
    source="Live: napkin.measure (memory probe and llama.cpp on a synthetic model); "
           "published: as in the chart above.",
    live=True,
    machine=measure.who(live),
)
