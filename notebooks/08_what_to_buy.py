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
# t_{\text{first}} \approx \frac{2\,N_{\text{active}}\,L + 2 g\, e\,\tfrac{1}{2}L(L+1)}
#                               {\text{prefill FLOP/s the machine reaches}}
# ```
#
# (the second term is attention, chapter 7's equation {eq}`eq-serving-pairs` over the whole
# prompt), and each later token waits for one read of what decode touches,
#
# ```{math}
# :label: eq-buy-decode
# \text{tokens/s} \approx f \cdot \frac{\text{bandwidth}}{W_{\text{active}} + b\,\bar{c}}
# ```
#
# with $W_{\text{active}}$ the bytes of the weights a token uses at the chosen format,
# $b\,\bar{c}$ the cache at the mean context, and $f$ the fraction of that ceiling machines of
# the same family reach in published runs (chapter 1).

# %% tags=["remove-cell"]
import numpy as np

import napkin
from napkin import buying, catalog, errata, essay, hardware, phases, tables
from napkin.figures import buying as charts
from napkin.prose import glue, glue_markdown

presets = buying.presets()
agent, chat, many = presets["coding agent"], presets["chat"], presets["many users"]
fleet = buying.machines()
inputs = buying.machine_table(fleet)
runs = buying.prefill_runs()
fleet_runs = runs[runs["chip"].isin(inputs["machine"])].dropna(subset=["fraction_of_roof"])
quart = buying.fraction_quartiles().set_index("family")
glue("essay_discount", essay.claim("buying_discount") / 100)
glue("agent_prompt", agent.prompt_tokens)
glue("n_machines", len(fleet))
glue("n_prefill", int((inputs["prefill_runs"] > 0).sum()))
glue("n_priced", int((inputs["priced_configs"] > 0).sum()))
glue("ref_gflop", buying.reference_flops_per_token() / 1e9)
glue("ref_tokens", buying.REFERENCE_TOKENS)
for fam, key in (("Apple Silicon", "apple"), ("GPU (CUDA)", "cuda"), (buying.POOLED, "all")):
    glue(f"q25_{key}", quart.loc[fam, "q25"])
    glue(f"q50_{key}", quart.loc[fam, "q50"])
    glue(f"q75_{key}", quart.loc[fam, "q75"])
    glue(f"runs_{key}", int(quart.loc[fam, "runs"]))
# the roofs
rtx = hardware.chip("RTX 4090")
rtx_best = runs[runs["chip"] == "RTX 4090"]["flops_per_s"].max()
glue("rtx4090_best", rtx_best / 1e12)
glue("rtx4090_fp16", rtx.peak("fp16").flops_per_s / 1e12)
glue("rtx4090_int8", rtx.peak("int8").flops_per_s / 1e12)
glue("rtx4090_int8_frac", rtx_best / rtx.peak("int8").flops_per_s)
glue("n_runs_roof", len(fleet_runs))
glue("max_run_frac", fleet_runs["fraction_of_roof"].max())
assert rtx_best > rtx.peak("fp16").flops_per_s and (fleet_runs["fraction_of_roof"] < 1).all()
has_roof = inputs[inputs["roof_TFLOPS"].notna()]
glue("n_roof", len(has_roof))
glue("n_derived", int(has_roof["roof_label"].str.contains("derived").sum()))
glue("no_roof", ", ".join(inputs[inputs["roof_TFLOPS"].isna()]["machine"]))
spark_m = buying.machine("DGX Spark")
glue("spark_int8", spark_m.roof("Q4_0")[1] / 1e12)
glue("strix_roof", buying.machine("Strix Halo").roof("Q4_0")[1] / 1e12)
assert buying.machine("Strix Halo").roof("F16")[1] == buying.machine("Strix Halo").roof("Q4_0")[1]
# the disputed H100 decode run, both ways
h100_read = buying.h100_decode_readings().set_index("reading")
glue("h100_tg", h100_read["tg128_tok_per_s"].iloc[0])
for variant, key in (("H100 SXM", "sxm"), ("H100 PCIe", "pcie")):
    glue(f"h100_frac_{key}", h100_read.loc[variant, "fraction_of_ceiling"])
    glue(f"h100_bw_{key}", h100_read.loc[variant, "bandwidth_GB_per_s"])
with_h100 = [buying.fraction_quartiles(v).set_index("family").loc["GPU (CUDA)", "q50"]
             for v in ("H100 SXM", "H100 PCIe")]
glue("cuda_q50_with_h100", f"{with_h100[0]:.0%} under either reading"
     if f"{with_h100[0]:.0%}" == f"{with_h100[1]:.0%}"
     else f"{with_h100[0]:.0%} (SXM reading) or {with_h100[1]:.0%} (PCIe reading)")
# a Mac's default GPU limit
limits = buying.gpu_memory_limits()
measured = limits[limits["kind"] == "measured"]
small_frac, _ = buying.default_gpu_fraction(16)
large_frac, _ = buying.default_gpu_fraction(512)
glue("small_frac", small_frac)
glue("large_frac", large_frac)
glue("small_gib", buying.SMALL_MAC_GiB)
top_rec = measured.loc[measured["fraction"].idxmax()]
glue("top_frac", top_rec["fraction"])
glue("top_frac_gib", top_rec["memory_GiB"])
glue("n_limit_records", len(measured))
glue("h100_cap_gb", hardware.chip("H100 SXM").capacity_bytes / 2**30)

# %% [markdown]
# ## The inputs, traced
#
# The calculator ranks the {glue:text}`n_machines:d` chips in `data/hardware_specs.csv` that
# have both a bandwidth and a memory capacity. Four of their figures need a word.
#
# **Prefill speed is measured, then set against the roof of the arithmetic that runs.** The
# first token is estimated from the prefill rate each machine reached in published llama.cpp
# runs of one reference model, Llama-2-7B at Q4_0 with a {glue:text}`ref_tokens:d`-token
# prompt: at {glue:text}`ref_gflop:.1f` GFLOP per prompt token (equation {eq}`eq-buy-ttft`),
# a run's tokens per second become FLOP/s. {glue:text}`n_prefill:d` machines have such runs;
# where there are several (GPU core counts, backends, flash attention on or off), their
# spread is the range. Beside each estimate stands a roofline bound, and its roof is the
# dense peak of the arithmetic the matmuls actually run in on that machine's llama.cpp
# backend (`napkin.roofline.arithmetic_for`). On NVIDIA's GPUs (CUDA) and AMD's (ROCm),
# llama.cpp multiplies quantized weights (Q4_0, Q4_K, Q8_0, MXFP4) with INT8 MMQ kernels on
# the tensor cores, so they are held to their dense INT8 figure; on Apple's GPUs (Metal)
# every format is dequantized to FP16 before the matmul, so the roof is the FP16 figure.
# Strix Halo runs ROCm/HIP and Vulkan builds; it is held to the ROCm (INT8) roof, which its
# data puts at the same rate as its FP16 one ({glue:text}`strix_roof:.0f` TOPS, a
# third party's derivation). The choice matters on GeForce cards, whose 16-bit figure with
# FP32 accumulation is not the arithmetic llama.cpp runs there: the RTX 4090's best
# published run reached {glue:text}`rtx4090_best:.0f` TFLOP/s, more than its
# {glue:text}`rtx4090_fp16:.0f` TFLOP/s of FP16, and {glue:text}`rtx4090_int8_frac:.0%` of
# its {glue:text}`rtx4090_int8:.0f` INT8 TOPS. Held to the right roof, none of the
# {glue:text}`n_runs_roof:d` published runs passes it (the closest reaches
# {glue:text}`max_run_frac:.0%`). {glue:text}`n_roof:d` machines have a figure for the
# arithmetic they run in; {glue:text}`n_derived:d` of these are derivations no vendor states,
# marked as such in the table (DGX Spark's {glue:text}`spark_int8:.0f` INT8 TOPS, for one,
# is derived from NVIDIA's sparse FP4 petaFLOP: NVIDIA states no dense rate). Apple states
# no GPU figure for its M3 and M4 chips, so these have no bound: {glue:text}`no_roof`. A
# bound never stands in for a missing measurement.
#
# **Decode is discounted by family.** Published decode runs reach a fraction of the
# bandwidth ceiling: on Apple Silicon a median of {glue:text}`q50_apple:.0%` (quartiles
# {glue:text}`q25_apple:.0%` to {glue:text}`q75_apple:.0%`, {glue:text}`runs_apple:d` runs), on
# CUDA GPUs {glue:text}`q50_cuda:.0%` ({glue:text}`q25_cuda:.0%` to {glue:text}`q75_cuda:.0%`,
# {glue:text}`runs_cuda:d` runs). AMD's chips have no decode runs of their own in chapter 1's
# data and get every run pooled ({glue:text}`q25_all:.0%` to {glue:text}`q75_all:.0%`). The
# essay's {glue:text}`essay_discount:.0%` is more cautious than any of these medians. One
# run is left out: the scoreboard's H100, which one copy of the scoreboard labels SXM and
# another PCIe. Its {glue:text}`h100_tg:.0f` tokens/s are {glue:text}`h100_frac_sxm:.0%` of an
# SXM card's ceiling ({glue:text}`h100_bw_sxm:,.0f` GB/s) or {glue:text}`h100_frac_pcie:.0%`
# of a PCIe card's ({glue:text}`h100_bw_pcie:,.0f` GB/s); put back in, the CUDA median is
# {glue:text}`cuda_q50_with_h100`.
#
# **Memory is binary, and a Mac's GPU may not use all of it.** Capacities are in GiB: an
# H100's {glue:text}`h100_cap_gb:.0f` "GB" of HBM are {glue:text}`h100_cap_gb:.0f` GiB. Apple's chips are taken at their largest
# configuration, the others as stated. On a Mac, macOS lets the GPU use only part of the
# unified memory by default (Metal's `recommendedMaxWorkingSetSize`, which llama.cpp
# prints at start-up); Apple documents no percentage. The table below holds the
# {glue:text}`n_limit_records:d` values people recorded on their own Macs. The book counts on
# the lowest fraction recorded for a Mac of the same class: {glue:text}`small_frac:.0%` of
# the memory of a Mac with at most {glue:text}`small_gib:d` GiB, {glue:text}`large_frac:.0%`
# above (the highest recorded, {glue:text}`top_frac:.0%` on {glue:text}`top_frac_gib:.0f` GiB
# Macs under a newer macOS, is not what every Mac gets). A Mac that holds a workload only
# above that limit is listed as "fits only after raising iogpu.wired_limit_mb", and is not
# ranked: raising it (`sudo sysctl iogpu.wired_limit_mb=<MiB>`, undone at reboot) takes
# memory from everything else the Mac runs, a choice the reader can make but the ranking
# does not. A price, where a vendor states one, is for the smallest recorded configuration
# whose GPU may use enough ({glue:text}`n_priced:d` machines have a recorded price; no
# datacenter GPU has one, because no vendor states one).

# %%
tables.styled(limits.assign(
    share=limits["fraction"].map(lambda v: "" if v != v else f"{v:.1%}"),
    mem=limits["memory_GiB"].map(lambda v: "" if v != v else f"{v:,.0f}"),
    lim=limits["limit_GiB"].map(lambda v: "" if v != v else f"{v:,.2f}")),
    "table-buy-gpu-limits", {"machine": "Mac", "mem": "Memory (GiB)",
                             "lim": "GPU limit by default (GiB)", "share": "Share",
                             "reported_as": "As reported", "macos": "macOS", "date": "Date",
                             "kind": "Kind", "source_url": "Source"})

# %%
tables.styled(inputs.assign(
    bw=inputs["bandwidth_GB_per_s"].map("{:,.0f}".format),
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
           zip(inputs["prefill_runs"], inputs["prefill_note"])]),
    "table-buy-inputs", {"machine": "Machine", "bw": "Bandwidth (GB/s)",
                         "cap": "Memory (GiB)", "usable": "GPU may use by default (GiB)",
                         "backend": "llama.cpp backend",
                         "roof": "Roof for Q4_0 (dense TFLOP/s or TOPS: arithmetic)",
                         "pre": "Prefill TFLOP/s reached (published runs)",
                         "reached": "Of the roof", "runs_": "Runs (†: variant disputed)",
                         "fraction_basis": "Decode discount from"})

# %% [markdown]
# ## The coding agent
#
# The essay's hardest case: a local coding agent that pastes {glue:text}`agent_prompt:,d`
# tokens of files and gets {glue:text}`agent_output:,d` tokens back, for one user, running
# {glue:text}`agent_model` at {glue:text}`agent_format` (about
# {glue:text}`agent_weights_gib:.0f` GiB of weights; with the cache it needs
# {glue:text}`agent_need_gib:.0f` GiB). The prompt is the essay's; the answer length and the
# model are this book's choice, the essay's running example at a common local format.

# %% tags=["hide-input"]
ranked = buying.rank(agent)
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
           "(CUDA, ROCm) or FP16 (Metal) peak in data/hardware_specs.csv.",
)

# %%
tables.styled(buying.ranking_display(ranked[ranked["fits"] | ranked["fits_after_raising"]]),
              "table-buy-coding-agent", {
    "rank": "Rank", "machine": "Machine (†: one run, variant disputed)",
    "ttft": "First token (s): median run (range)", "bound": "Roofline bound (s)",
    "roof": "Roof (dense TFLOP/s or TOPS)", "reached": "Runs reached of the roof",
    "decode": "Then tokens/s", "memory": "Memory needed (GPU may use)",
    "price": "Price", "note": "Not ranked because"})

# %% tags=["remove-cell"]
r = ranked.set_index("machine")
top = ranked[ranked["rank"].notna()]
apple = top[top["family"] == "Apple Silicon"]
glue("agent_output", agent.output_tokens)
glue("agent_model", agent.model.replace("-", " "))
glue("agent_format", agent.weight_format)
glue("agent_weights_gib", r["weights_GiB"].iloc[0])
glue("agent_need_gib", r["need_GiB"].iloc[0])
first = top.iloc[0]
second = top[top["ttft_mid_s"] > first["ttft_mid_s"]]
second = second[second["ttft_mid_s"] == second["ttft_mid_s"].iloc[0]]
glue("first_machine", first["machine"])
glue("first_ttft", first["ttft_mid_s"])
glue("second_machines", " and the ".join(second["machine"]))
glue("second_ttft", second["ttft_mid_s"].iloc[0])
assert set(second["machine"]) == {"H100 SXM", "H100 PCIe"}
glue("spark_ttft", r.loc["DGX Spark", "ttft_mid_s"])
glue("spark_rank", int(r.loc["DGX Spark", "rank"]))
glue("spark_reached", r.loc["DGX Spark", "prefill_fraction_high"])
best_apple = apple.iloc[0]
glue("apple_best", best_apple["machine"])
glue("apple_best_ttft", best_apple["ttft_mid_s"])
glue("apple_best_min", best_apple["ttft_mid_s"] / 60)
glue("apple_best_rank", int(best_apple["rank"]))
glue("apple_best_decode", best_apple["decode_mid_tok_per_s"])
glue("apple_answer_s", agent.output_tokens / best_apple["decode_mid_tok_per_s"])
glue("strix_ttft", r.loc["Strix Halo", "ttft_mid_s"])
glue("strix_fast", r.loc["Strix Halo", "ttft_fast_s"])
glue("strix_slow", r.loc["Strix Halo", "ttft_slow_s"])
glue("n_ranked", len(top))
non_apple_after = top[(top["family"] != "Apple Silicon") &
                      (top["rank"] > best_apple["rank"])]["machine"].tolist()
glue("non_apple_after", ", ".join(non_apple_after) or "none")
raised = ranked[ranked["fits_after_raising"]]
glue("agent_raised", " and the ".join(raised["machine"]))
glue("agent_raised_cap", raised["capacity_GiB"].iloc[0])
glue("agent_raised_usable", raised["usable_GiB"].iloc[0])
assert raised["capacity_GiB"].nunique() == 1 and raised["usable_GiB"].nunique() == 1
for variant, key in (("H100 SXM", "sxm"), ("H100 PCIe", "pcie")):
    glue(f"h100_bound_{key}", r.loc[variant, "ttft_bound_s"])
    glue(f"h100_reached_{key}", r.loc[variant, "prefill_fraction_high"])
    glue(f"h100_roof_{key}", r.loc[variant, "roof_TFLOPS"])
glue("h100_ttft", r.loc["H100 SXM", "ttft_mid_s"])
glue("unranked_fit", ", ".join(ranked[ranked["fits"] & ranked["rank"].isna()]["machine"]))
glue("too_small", ", ".join(ranked[~ranked["fits"] & ~ranked["fits_after_raising"]]["machine"]))
glue("prefill_share", first["ttft_mid_s"] / (first["ttft_mid_s"] + agent.output_tokens /
                                              first["decode_mid_tok_per_s"]))
glue("apple_prefill_share", best_apple["ttft_mid_s"] / (
    best_apple["ttft_mid_s"] + agent.output_tokens / best_apple["decode_mid_tok_per_s"]))
# what the prose says in words, checked so that it cannot drift from the numbers; the
# errata page's check of the essay's coding agent: only NVIDIA GPUs rank above the best Apple
# chip, and prefill is most of that chip's request
assert errata.erratum("coding_agent_prefill_wall").conclusion_holds
above = top[top["rank"] < best_apple["rank"]]
assert (ranked[ranked["fits"] & ranked["rank"].isna()]["ttft_bound_s"].notna()).all()
assert r.loc["H100 SXM", "ttft_mid_s"] == r.loc["H100 PCIe", "ttft_mid_s"]
assert set(inputs[inputs["roof_TFLOPS"].isna()]["machine"].str[:2]) <= {"M3", "M4"}

# %% [markdown]
# The {glue:text}`first_machine` answers first, after about {glue:text}`first_ttft:.0f` s,
# then the {glue:text}`second_machines` ({glue:text}`second_ttft:.0f` s: one published run,
# counted for both cards because one copy of the scoreboard calls it SXM and another PCIe).
# DGX Spark, whose sparse FP4 petaFLOP the essay says "shows up in the first number", ranks
# {glue:text}`spark_rank:d`: {glue:text}`spark_ttft:.0f` s, its published run having reached
# {glue:text}`spark_reached:.0%` of the INT8 roof derived for it. The best Apple chip, the
# {glue:text}`apple_best`, ranks {glue:text}`apple_best_rank:d` and needs
# {glue:text}`apple_best_ttft:.0f` s, about {glue:text}`apple_best_min:.0f` minutes, before
# it writes a word; it then writes the whole answer at about
# {glue:text}`apple_best_decode:.0f` tokens/s in {glue:text}`apple_answer_s:.0f` s. The wait
# for the first token is {glue:text}`apple_prefill_share:.0%` of the {glue:text}`apple_best`'s
# time for the whole request, against {glue:text}`prefill_share:.0%` on the
# {glue:text}`first_machine`: prefill is the wall the essay says it is, and the wall is highest
# on the machines slowest at it. Every machine that ranks above the best Apple chip is an
# NVIDIA GPU; below it come the other Apple chips and {glue:text}`non_apple_after`. Strix
# Halo's published runs spread widely ({glue:text}`strix_fast:.0f` to
# {glue:text}`strix_slow:,.0f` s, depending on the backend), so it sits among Apple's chips
# rather than clearly below or above them. The {glue:text}`agent_raised` hold the model in
# their {glue:text}`agent_raised_cap:.0f` GiB, but their GPUs may use only
# {glue:text}`agent_raised_usable:.0f` GiB by default: they would run it only after the
# limit is raised, and are not ranked.
#
# The bounds show how far published prefill is from the arithmetic. On the H100 the INT8
# roofline allows {glue:text}`h100_bound_sxm:.1f` s if the card is an SXM
# ({glue:text}`h100_roof_sxm:,.0f` TOPS) or {glue:text}`h100_bound_pcie:.1f` s if a PCIe
# ({glue:text}`h100_roof_pcie:,.0f` TOPS); llama.cpp's best published run reached
# {glue:text}`h100_reached_sxm:.0%` or {glue:text}`h100_reached_pcie:.0%` of that roof,
# hence {glue:text}`h100_ttft:.0f` s either way. llama.cpp is not what datacenter GPUs
# usually run, and a serving stack built for them may come much closer to the bound; but the
# datacenter GPUs without a published llama.cpp run ({glue:text}`unranked_fit`) are listed
# with their bounds and not ranked: there is nothing measured to rank them by. The model does
# not fit at all on the {glue:text}`too_small`.

# %% tags=["remove-cell"]
split = buying.hardware_and_software(ranked)
swaps = buying.swapped_pairs(split)
by_backend = buying.backend_fractions(list(inputs["machine"])).set_index(
    ["vendor", "run_backend"])
for (vendor, backend), key in ((("Apple", "Metal"), "metal"), (("NVIDIA", "CUDA"), "cuda"),
                               (("NVIDIA", "Vulkan"), "nv_vulkan"),
                               (("AMD", "Vulkan"), "strix_vulkan"), (("AMD", "ROCm"), "strix_rocm")):
    row = by_backend.loc[(vendor, backend)]
    glue(f"fr_{key}_med", row["median"])
    glue(f"fr_{key}_low", row["low"])
    glue(f"fr_{key}_high", row["high"])
    glue(f"fr_{key}_runs", int(row["runs"]))
s_ = split.set_index("machine")
glue("split_n", len(split))
glue("split_pairs", len(split) * (len(split) - 1) // 2)
glue("split_swaps", len(swaps))
glue("split_swap_list", "; ".join(f"the {a} before the {b}" for a, b in swaps))
glue("bound_gap", s_.loc["M2 Ultra", "ttft_bound_s"] / s_.loc["DGX Spark", "ttft_bound_s"])
glue("runs_gap", s_.loc["M2 Ultra", "ttft_mid_s"] / s_.loc["DGX Spark", "ttft_mid_s"])
glue("strix_bound", s_.loc["Strix Halo", "ttft_bound_s"])
glue("m2u_bound", s_.loc["M2 Ultra", "ttft_bound_s"])
glue("bound_span", split["ttft_bound_s"].max() / split["ttft_bound_s"].min())
glue("runs_span", split["ttft_mid_s"].max() / split["ttft_mid_s"].min())
assert ("Strix Halo", "M2 Ultra") in swaps
assert s_.loc["Strix Halo", "ttft_bound_s"] < s_.loc["M2 Ultra", "ttft_bound_s"]

# %% [markdown]
# ### How much of this ranking is software
#
# Each estimate is a bound divided by the share of its roof the machine's published runs
# reached. The bound is hardware; the share is mostly software: the backend, its kernels,
# the build, and it differs by backend. Apple's Metal runs reach a
# median of {glue:text}`fr_metal_med:.0%` of their FP16 roof ({glue:text}`fr_metal_low:.0%`
# to {glue:text}`fr_metal_high:.0%`, {glue:text}`fr_metal_runs:d` runs); NVIDIA's CUDA runs
# {glue:text}`fr_cuda_med:.0%` of their INT8 roof ({glue:text}`fr_cuda_low:.0%` to
# {glue:text}`fr_cuda_high:.0%`, {glue:text}`fr_cuda_runs:d` runs; the disputed H100 and
# A100 runs left out); Vulkan runs on the same GeForce cards {glue:text}`fr_nv_vulkan_med:.0%`;
# Strix Halo's Vulkan runs {glue:text}`fr_strix_vulkan_med:.0%`
# ({glue:text}`fr_strix_vulkan_low:.0%` to {glue:text}`fr_strix_vulkan_high:.0%`) and its one
# ROCm run {glue:text}`fr_strix_rocm_med:.0%`. So across the {glue:text}`split_n:d` ranked
# machines with a bound and an undisputed run, the bounds span a factor of
# {glue:text}`bound_span:.0f` and the estimates only {glue:text}`runs_span:.0f`: llama.cpp
# narrows the hardware's gap. By the roofs, DGX Spark would answer
# {glue:text}`bound_gap:.1f` times sooner than the M2 Ultra; by the published runs,
# {glue:text}`runs_gap:.1f` times. The order moves less than the gaps: of
# {glue:text}`split_pairs:d` pairs, the runs reverse {glue:text}`split_swaps:d`
# ({glue:text}`split_swap_list`). That one is software: Strix Halo's bound
# ({glue:text}`strix_bound:.0f` s) is shorter than the M2 Ultra's
# ({glue:text}`m2u_bound:.0f` s), and its runs reach a smaller share of it.

# %%
tables.styled(buying.backend_fractions(list(inputs["machine"])).assign(
    low_=lambda d: d["low"].map("{:.0%}".format), med=lambda d: d["median"].map("{:.0%}".format),
    high_=lambda d: d["high"].map("{:.0%}".format)),
    "table-buy-software", {"vendor": "Vendor", "run_backend": "Backend of the run",
                           "runs": "Runs", "low_": "Of the roof: lowest", "med": "median",
                           "high_": "highest", "machines": "Machines"})

# %% [markdown]
# ## Checking the method against runs it did not see
#
# The ranking turns one short prompt of one small dense model into the first token of a
# {glue:text}`agent_prompt:,d`-token prompt of a 70B model. The data holds a test of that
# step: published pp2048 runs of other models on machines that also have reference runs.
# The llama.cpp benchmark file measures DGX Spark and the M2 Ultra with
# {glue:text}`check_depths` tokens already cached, for two mixture-of-experts models
# (gpt-oss-20b and gpt-oss-120b) and a dense one (Qwen2.5-Coder-7B, costed with the
# architecture of Qwen2.5-7B in `data/models`: llama-bench counts
# {glue:text}`qwen_bench_b:.2f` B parameters in the file, the config
# {glue:text}`qwen_config_b:.2f` B); the gpt-oss guide measures
# {glue:text}`n_guide_machines:d` machines on gpt-oss at no depth. Exactly the ranking's
# method predicts each rate: the machine's FLOP/s on its median reference run, times the
# target run's prompt tokens, over their prefill FLOPs after the cached tokens
# (`napkin.roofline.step_work`; a mixture of experts by its active parameters).

# %% tags=["hide-input"]
check = buying.extrapolation_check()
napkin.Figure(
    name="fig-buy-extrapolation",
    chart=charts.extrapolation(
        check, "How far one reference run carries",
        "predicted / measured prefill rate of other models; above 1 the method is too fast"),
    caption="Prefill rate predicted from each machine's Llama-2-7B Q4_0 pp512 runs, over the "
            "rate measured for other models, by the tokens cached at the end of the prompt; "
            "one line per machine, model and llama.cpp build, log scales.",
    source="napkin.buying.extrapolation_check over data/spark_bench_llamacpp.csv (llama.cpp "
           "benchmark file and its copies) and data/gpt_oss_llamacpp.csv, with the reference "
           "runs of data/apple_silicon_llama2_7b.csv and gpu_llama2_7b_q4_0.csv.",
)

# %%
summary = buying.extrapolation_summary(check)
tables.styled(summary.assign(**{c + "_": summary[c].map("{:.2f}".format) for c in
                                ("median", "q25", "q75", "low", "high")}),
              "table-buy-extrapolation", {
    "group": "Runs", "runs": "Count", "median_": "Predicted / measured: median",
    "q25_": "first quartile", "q75_": "third quartile", "low_": "lowest", "high_": "highest"})

# %% tags=["remove-cell"]
sm = summary.set_index("group")
bench = check[check["source"].str.startswith("benchmark file")]
glue("check_depths", ", ".join(f"{d:,}" for d in sorted(bench["depth_tokens"].unique())))
glue("qwen_bench_b", float(phases.spark_bench().query(
    "model.str.startswith('Qwen2.5-Coder-7B')", engine="python")["model_params_B"].iloc[0]))
glue("qwen_config_b", catalog.params("Qwen2.5-7B-Instruct") / 1e9)
glue("n_guide_machines", check[check["source"] == "gpt-oss guide"]["machine"].nunique())
glue("n_check", len(check))
for group, key in (("all", "all"), ("dense", "dense"), ("MoE", "moe"),
                   ("Metal (Apple)", "metal"), ("CUDA (NVIDIA)", "cuda"),
                   ("dense, deepest context", "deep")):
    for stat in ("median", "q25", "q75", "low", "high"):
        glue(f"chk_{key}_{stat}", sm.loc[group, stat])
    glue(f"chk_{key}_n", int(sm.loc[group, "runs"]))
dense = check[~check["moe"]]
glue("dense_machines", " and ".join(sorted(dense["machine"].unique())))
glue("deepest", int((check["depth_tokens"] + check["prompt_tokens"]).max()))
moe_cuda = check[check["moe"] & (check["backend"] == "CUDA")]
glue("moe_cuda_low", moe_cuda["ratio"].min())
glue("moe_cuda_high", moe_cuda["ratio"].max())
dense_by = dense.groupby("backend")["ratio"].agg(["min", "max"])
glue("dense_cuda_low", dense_by.loc["CUDA", "min"])
glue("dense_cuda_high", dense_by.loc["CUDA", "max"])
glue("dense_metal_low", dense_by.loc["Metal", "min"])
glue("dense_metal_high", dense_by.loc["Metal", "max"])
band = buying.ttft_check_band(top, check).set_index("machine")
glue("spark_check_high", band.loc["DGX Spark", "ttft_check_high_s"])
glue("apple_check_low", band.loc[best_apple["machine"], "ttft_check_low_s"])
nvidia_above = band.loc[above["machine"], "ttft_check_high_s"]
assert nvidia_above.max() < band.loc[best_apple["machine"], "ttft_check_low_s"]
assert sm.loc["dense", "high"] < sm.loc["MoE", "high"] and moe_cuda["ratio"].min() > 1
assert check["ratio"].max() == moe_cuda["ratio"].max() and sm.loc["Metal (Apple)", "median"] < 1
assert (dense_by["max"] < dense_by.loc["CUDA", "max"] + 1e-12).all()
glue("size_ratio", catalog.params(agent.model, active=True) /
     catalog.params("Qwen2.5-7B-Instruct"))
glue("agent_beyond", agent.prompt_tokens / int((check["depth_tokens"] +
                                                check["prompt_tokens"]).max()) - 1)

# %% [markdown]
# Over all {glue:text}`n_check:d` runs, predicted over measured has a median of
# {glue:text}`chk_all_median:.2f` (quartiles {glue:text}`chk_all_q25:.2f` to
# {glue:text}`chk_all_q75:.2f`, range {glue:text}`chk_all_low:.2f` to
# {glue:text}`chk_all_high:.2f`). The widest errors are mixtures of experts on NVIDIA's
# GPUs. For the dense model the median is {glue:text}`chk_dense_median:.2f` and every run lies between
# {glue:text}`chk_dense_low:.2f` and {glue:text}`chk_dense_high:.2f`
# ({glue:text}`chk_dense_n:d` runs on {glue:text}`dense_machines`). For the mixtures of
# experts, the method is too fast on every NVIDIA GPU, by a factor of
# {glue:text}`moe_cuda_low:.2f` to {glue:text}`moe_cuda_high:.2f`: llama.cpp's CUDA build
# runs gpt-oss's experts at a far smaller share of the card than it runs dense Llama-2-7B,
# and counting active parameters does not capture that. On Apple's GPUs it is too slow
# rather than too fast (median {glue:text}`chk_metal_median:.2f`): there the target runs
# reached more FLOP/s than the chip's Llama-2-7B reference runs.
#
# **How far the coding agent's first token can be trusted.** Its model is dense, so the
# dense runs are the check that applies. They reach {glue:text}`deepest:,d` tokens of
# context, and the agent's prompt is {glue:text}`agent_beyond:.0%` longer than that, on a
# model {glue:text}`size_ratio:.0f` times the size: an extrapolation, not an interpolation.
# At the deepest context ({glue:text}`chk_deep_n:d` dense runs), predicted over measured is
# {glue:text}`chk_deep_low:.2f` to {glue:text}`chk_deep_high:.2f`. Read as time,
# the first token would come after {glue:text}`dense_cuda_low:.2f` to
# {glue:text}`dense_cuda_high:.2f` times the estimate on a CUDA machine and
# {glue:text}`dense_metal_low:.2f` to {glue:text}`dense_metal_high:.2f` times on a Mac, if
# the method errs there as it did here. Applied to the ranking, that error does not change
# which family comes first: DGX Spark's first token would come after at most
# {glue:text}`spark_check_high:.0f` s, the {glue:text}`apple_best`'s after at least
# {glue:text}`apple_check_low:.0f` s. So the order between NVIDIA's GPUs and Apple's chips
# is robust to the error the data shows; the seconds are good to about the factors above;
# Strix Halo (no runs of its own in the check), the datacenter GPUs (no reference runs)
# and mixtures of experts on NVIDIA GPUs (too optimistic by up to
# {glue:text}`moe_cuda_high:.1f` times) are not covered by it.

# %% [markdown]
# ## Chat: one stream, short prompts
#
# One user, {glue:text}`chat_prompt:,d`-token prompts and {glue:text}`chat_output:,d`-token
# answers with the same model: ranked by decode speed, where bandwidth over the bytes read
# per token is the headline.

# %%
ranked_chat = buying.rank(chat)
tables.styled(buying.ranking_display(ranked_chat[ranked_chat["fits"]]), "table-buy-chat", {
    "rank": "Rank", "machine": "Machine", "decode": "Tokens/s: median (quartiles)",
    "ttft": "First token (s)", "memory": "Memory needed (GPU may use)", "price": "Price"})

# %% tags=["remove-cell"]
c = ranked_chat[ranked_chat["rank"].notna()]
glue("chat_prompt", chat.prompt_tokens)
glue("chat_output", chat.output_tokens)
glue("chat_first", c.iloc[0]["machine"])
glue("chat_first_tps", c.iloc[0]["decode_mid_tok_per_s"])
priced = c[c["price"].notna()]
cheapest = priced.sort_values("price_per_tok_per_s").iloc[0]
glue("chat_priced", ", ".join(f"{m} ({cur} {p:,.0f})" for m, p, cur in
                              zip(priced["machine"], priced["price"], priced["currency"])))
glue("chat_cheapest", cheapest["machine"])
glue("chat_cheapest_per", cheapest["price_per_tok_per_s"])
local = c[c["family"] == "Apple Silicon"].iloc[0]
glue("chat_apple", local["machine"])
glue("chat_apple_tps", local["decode_mid_tok_per_s"])
glue("chat_apple_low", local["decode_low_tok_per_s"])
glue("chat_apple_high", local["decode_high_tok_per_s"])
glue("chat_apple_ceiling", local["ceiling_tok_per_s"])
rc = ranked_chat.set_index("machine")
glue("chat_spark_tps", rc.loc["DGX Spark", "decode_mid_tok_per_s"])
glue("chat_strix_tps", rc.loc["Strix Halo", "decode_mid_tok_per_s"])
glue("chat_spark_ttft", rc.loc["DGX Spark", "ttft_mid_s"])
glue("chat_apple_ttft", local["ttft_mid_s"])
glue("chat_h100_sxm", rc.loc["H100 SXM", "decode_mid_tok_per_s"])
glue("chat_h100_pcie", rc.loc["H100 PCIe", "decode_mid_tok_per_s"])
glue("chat_h100_sxm_rank", int(rc.loc["H100 SXM", "rank"]))
glue("chat_h100_pcie_rank", int(rc.loc["H100 PCIe", "rank"]))
assert rc.loc["DGX Spark", "ttft_mid_s"] < local["ttft_mid_s"]
assert rc.loc["DGX Spark", "decode_mid_tok_per_s"] < local["decode_mid_tok_per_s"]
assert np.isnan(c.iloc[0]["price"])
desk = c[c["family"].eq("Apple Silicon") | c["machine"].isin(["DGX Spark", "Strix Halo"])]
assert desk.iloc[0]["machine"] == local["machine"]

# %% [markdown]
# The ranking is bandwidth, discounted: the {glue:text}`chat_first` leads at about
# {glue:text}`chat_first_tps:.0f` tokens/s. The H100 ranks {glue:text}`chat_h100_sxm_rank:d`
# if it is an SXM card ({glue:text}`chat_h100_sxm:.0f` tokens/s) or
# {glue:text}`chat_h100_pcie_rank:d` if a PCIe one ({glue:text}`chat_h100_pcie:.0f`): here
# the two readings part, since their bandwidths differ. Among machines on a desk, the
# {glue:text}`chat_apple` leads: its ceiling is {glue:text}`chat_apple_ceiling:.0f` tokens/s,
# and Apple's published runs put it at {glue:text}`chat_apple_tps:.0f`
# ({glue:text}`chat_apple_low:.0f` to {glue:text}`chat_apple_high:.0f`), against
# {glue:text}`chat_spark_tps:.1f` on DGX Spark and {glue:text}`chat_strix_tps:.1f` on Strix
# Halo. Here it is the other way round from the coding agent: DGX Spark answers first
# ({glue:text}`chat_spark_ttft:.0f` s against {glue:text}`chat_apple_ttft:.0f` s) and then
# writes more slowly. The essay's mirror image, computed. Of the machines with a vendor price
# ({glue:text}`chat_priced`), the {glue:text}`chat_cheapest` costs least per token/s of
# decode: about {glue:text}`chat_cheapest_per:,.0f` dollars for each.
#
# ## Many users
#
# {glue:text}`many_users:d` users at once (the essay's batch example), with
# {glue:text}`many_prompt:,d`-token prompts and {glue:text}`many_output:,d`-token answers, the
# model at {glue:text}`many_format` ({glue:text}`many_weights_gib:.0f` GiB of weights). Now
# memory decides first: the weights and every user's cache
# ({glue:text}`many_kv_gib:.2f` GiB each, {glue:text}`many_need_gib:.0f` GiB in all) must fit.

# %%
ranked_many = buying.rank(many)
tables.styled(buying.ranking_display(ranked_many), "table-buy-many-users", {
    "rank": "Rank", "machine": "Machine", "per_user": "Tokens/s per user: median (quartiles)",
    "memory": "Memory needed (GPU may use)", "users": "Users that fit",
    "note": "Not ranked because"})

# %% tags=["remove-cell"]
m_ = ranked_many[ranked_many["rank"].notna()]
rm = ranked_many.set_index("machine")
glue("many_users", many.users)
glue("many_prompt", many.prompt_tokens)
glue("many_output", many.output_tokens)
glue("many_format", many.weight_format)
glue("many_weights_gib", rm["weights_GiB"].iloc[0])
glue("many_kv_gib", rm["kv_per_user_GiB"].iloc[0])
glue("many_need_gib", rm["need_GiB"].iloc[0])
glue("many_n_fit", len(m_))
glue("many_first", m_.iloc[0]["machine"])
glue("many_first_tps", m_.iloc[0]["per_user_mid_tok_per_s"])
glue("many_first_total", many.users * m_.iloc[0]["per_user_mid_tok_per_s"])
glue("h100_users", int(rm.loc["H100 SXM", "max_users"]))
glue("h100_cap", rm.loc["H100 SXM", "capacity_GiB"])
assert rm.loc["H100 SXM", "max_users"] == rm.loc["H100 PCIe", "max_users"]
many_raised = ranked_many[ranked_many["fits_after_raising"]]
glue("many_raised", " and the ".join(many_raised["machine"]))
glue("many_raised_usable", many_raised["usable_GiB"].iloc[0])
assert many_raised["usable_GiB"].nunique() == 1
desk = m_[(m_["vendor"] == "Apple") | m_["machine"].isin(["DGX Spark", "Strix Halo"])].iloc[0]
glue("many_desk", desk["machine"])
glue("many_desk_tps", desk["per_user_mid_tok_per_s"])
glue("many_desk_users", int(desk["max_users"]))
assert m_.head(4)["price"].isna().all() and "H100 SXM" not in set(m_["machine"])
assert (m_.head(4)["compute_basis"].str.startswith("roof")).all()

# %% [markdown]
# {glue:text}`many_n_fit:d` machines hold it. The H100 is not among them, SXM or PCIe: its
# {glue:text}`h100_cap:.0f` GiB hold the weights and the caches of only
# {glue:text}`h100_users:d` such users, the capacity wall of chapter 4. Nor are the
# {glue:text}`many_raised`: their GPUs may use {glue:text}`many_raised_usable:.0f` GiB by
# default, less than the batch needs, though their whole memory would hold it. The
# {glue:text}`many_first` leads, at about {glue:text}`many_first_tps:.0f` tokens/s per user,
# {glue:text}`many_first_total:,.0f` in all: one read of the weights now serves every user.
# The large unified memories on a desk hold the batch too, but compute and bandwidth run out:
# the {glue:text}`many_desk` could hold {glue:text}`many_desk_users:d` users and gives each
# about {glue:text}`many_desk_tps:.1f` tokens/s. The comparison flatters the datacenter
# parts: with no published llama.cpp run, their step is costed at their roofs (FP8 where
# the chip states an FP8 figure), a bound, while the desk machines are costed at the rate
# their published runs reached. The gap is still the essay's "someone else's batch": at this
# concurrency the machines that serve well are the ones nobody prices in public.
#
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

# %% tags=["remove-cell"]
glue("trust_moe_high", moe_cuda["ratio"].max())
glue("n_derived_ranked", int(top["roof_label"].str.contains("derived").sum()))
glue("derived_ranked", ", ".join(top[top["roof_label"].str.contains("derived")]["machine"]))

# %% [markdown]
# ## Where this stops being trustworthy
#
# - **One reference run stands for all prefill.** A machine's prefill rate comes from a
#   short prompt of a small dense model at one format. Checked against
#   {glue:text}`n_check:d` published runs of other models, the method's predicted rate is
#   {glue:text}`chk_all_low:.2f` to {glue:text}`chk_all_high:.2f` times the measured one
#   (median {glue:text}`chk_all_median:.2f`). For a dense model it was within
#   {glue:text}`chk_dense_low:.2f` to {glue:text}`chk_dense_high:.2f`, on two machines only
#   and never at a prompt as long as the coding agent's; for mixtures of experts on NVIDIA
#   GPUs it was too fast by up to {glue:text}`trust_moe_high:.1f` times, so a MoE model's
#   first token on those machines comes that much later than the calculator says. The
#   family order of the coding-agent ranking survives the dense error; its seconds do not
#   carry more than that.
# - **Machines without a published run are not ranked for the first token.** The datacenter
#   GPUs have bounds only, and the ones with a published run (the H100 and the A100) are
#   measured with llama.cpp, which is not the software such GPUs usually serve with. Their
#   runs' variant is disputed, so they count for both.
# - **Some roofs are derivations.** {glue:text}`n_derived_ranked:d` of the ranked machines
#   are held to a figure no vendor states ({glue:text}`derived_ranked`), and the M3 and M4
#   chips have none. A bound from a derived roof is only as good as the derivation.
# - **The decode discount is a family's, not the machine's.** A machine's own runs can sit
#   anywhere in its family's range, and AMD's chips are discounted by every run pooled.
# - **Memory is taken whole, except on a Mac.** A Mac gets the lowest default GPU limit
#   recorded for its class; a given Mac and macOS version may allow more. Everywhere else the
#   whole capacity counts: drivers expose a little less, the runtime and its buffers take
#   some, and on Strix Halo and DGX Spark the operating system shares the memory with the
#   GPU; a machine near the limit may not fit what the table says fits.
# - **Prices move.** Each has a date and a source in `data/machine_prices.csv`; a graphics
#   card needs a computer around it, which its price does not include.
#
# ## Closing note
#
# {glue:md}`closing_note`

# %% tags=["remove-cell"]
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
    f"Against measured runs of a dense model, that method's rate was "
    f"{sm.loc['dense', 'low']:.2f} to {sm.loc['dense', 'high']:.2f} times the measured one. "
    "Holding the model only after raising the Mac's GPU memory limit: "
    f"{', '.join(ranked[ranked['fits_after_raising']]['machine'])}. "
    "Not ranked, for want of a published prefill run, though they hold the model: "
    f"{', '.join(ranked[ranked['fits'] & ranked['rank'].isna()]['machine'])}. "
    f"Too small for it: {', '.join(ranked[~ranked['fits'] & ~ranked['fits_after_raising']]['machine'])}.",
]))
