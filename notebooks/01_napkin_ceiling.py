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
# row of which names its source.

# %% tags=["remove-cell"]
import pandas as pd

import napkin
from napkin import catalog, essay, hardware, measure, models, published, tables
from napkin.figures import ceiling as charts
from napkin.prose import glue, glue_markdown
from napkin.units import GB

# %% [markdown]
# ## The essay's table, recomputed
#
# The essay takes Llama-2-7B at Q4_0, a file Hugging Face lists at
# {glue:text}`q4_file_gb:.2f` GB, and Apple's stated bandwidths:
# {glue:text}`max_bw:.0f` GB/s for the M1 Max and M2 Max,
# {glue:text}`ultra_bw:.0f` GB/s for the M1 Ultra and M2 Ultra.

# %%
file_bytes = models.gguf_size_bytes("Q4_0", kind="file")
table = published.essay_table()
tables.styled(table, "essay-table", {
    "machine": "Chip", "bandwidth_bytes_per_s": "Bandwidth (GB/s)",
    "ceiling_tokens_per_s": "Ceiling (tok/s)", "tokens_per_s": "Measured tg128 (tok/s)",
    "fraction_of_ceiling": "Fraction of ceiling"})

# %% tags=["remove-cell"]
by_chip = table.set_index("chip")
uplift = published.ultra_uplift(table)
glue("q4_file_gb", file_bytes / GB)
glue("max_bw", hardware.chip("M1 Max").bandwidth_bytes_per_s / GB)
glue("ultra_bw", hardware.chip("M1 Ultra").bandwidth_bytes_per_s / GB)
glue("ceiling_400", by_chip.loc["M1 Max", "ceiling_tokens_per_s"])
glue("ceiling_800", by_chip.loc["M1 Ultra", "ceiling_tokens_per_s"])
for chip in by_chip.index:
    key = chip.lower().replace(" ", "_")
    glue(f"{key}_tg", by_chip.loc[chip, "tokens_per_s"])
    glue(f"{key}_frac", by_chip.loc[chip, "fraction_of_ceiling"])
glue("uplift_m1", uplift.loc["M1", "speed_ratio"])
glue("uplift_m2", uplift.loc["M2", "speed_ratio"])
glue("bw_ratio", uplift.loc["M1", "bandwidth_ratio"])
glue("essay_uplift", essay.claim("ultra_uplift") / 100)
glue("frac_min", table["fraction_of_ceiling"].min())
glue("frac_max", table["fraction_of_ceiling"].max())

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

# %% [markdown]
# One refinement the essay skips: a decode step does not read the whole file. The token
# embedding table is looked up one row at a time, and the GGUF header is metadata. llama.cpp
# itself reports {glue:text}`q4_tensor_gb:.3f` GB of tensor data for this file, so the
# ceiling on tensor data is only {glue:text}`tensor_vs_file:.1%` higher than on file size.
# The napkin survives this kind of detail; the next sections use tensor data throughout.

# %% tags=["remove-cell"]
tensor_bytes = models.gguf_size_bytes("Q4_0", kind="tensors")
glue("q4_tensor_gb", tensor_bytes / GB)
glue("kv_share", napkin.kv_cache_bytes(catalog.config("Llama-2-7B"), 128) / tensor_bytes)
glue("tensor_vs_file", file_bytes / tensor_bytes - 1)

# %% [markdown]
# ## Does the rule of thumb hold?
#
# The same llama.cpp thread measured every Apple chip from M1 to M4, and at three weight
# formats, not one. Each point below is one chip and format, as a fraction of its own
# ceiling; the shaded band is the essay's range,
# {glue:text}`band_low:.0%`–{glue:text}`band_high:.0%`.

# %% tags=["hide-input"]
apple = published.apple()
band = (essay.claim("decode_fraction_low") / 100, essay.claim("decode_fraction_high") / 100)
napkin.Figure(
    name="fig-apple-fraction",
    chart=charts.fraction_strip(apple, band),
    caption="The essay's range describes Q4_0 on the big chips. F16 and Q8_0 run much closer "
            "to the ceiling, and the Ultra parts sit lowest of all.",
    source="llama.cpp discussion 4167 (Llama-2-7B, tg128); bandwidth from Apple via "
           "data/hardware_specs.csv; tensor sizes as reported by llama-bench.",
)

# %% tags=["remove-cell"]
glue("band_low", band[0])
glue("band_high", band[1])
medians = apple.groupby("quant")["fraction_of_ceiling"].median()
for quant, value in medians.items():
    glue(f"median_{quant.lower()}", value)
inside = apple["fraction_of_ceiling"].between(*band)
glue("share_inside", inside.mean())
glue("n_apple", len(apple))
q4 = apple[apple["quant"] == "Q4_0"]
ultra_q4 = q4[q4["chip"].str.endswith("Ultra")]["fraction_of_ceiling"]
base_q4 = q4[q4["chip"].str.fullmatch(r"M\d")]["fraction_of_ceiling"]
glue("ultra_q4_max", ultra_q4.max())
glue("base_q4_min", base_q4.min())
big_q4 = (apple["quant"] == "Q4_0") & apple["chip"].str.contains("Max|Ultra")
glue("inside_big_q4", inside[big_q4].mean())
glue("inside_rest", inside[~big_q4].mean())

# %% [markdown]
# Only {glue:text}`share_inside:.0%` of the {glue:text}`n_apple:d` runs fall inside the band.
# The median run reaches {glue:text}`median_f16:.0%` of its ceiling at F16,
# {glue:text}`median_q8_0:.0%` at Q8_0 and {glue:text}`median_q4_0:.0%` at Q4_0. Two things
# go with the fraction:
#
# - **The format.** The fewer bytes per weight, the lower the fraction. A plausible reading,
#   which these runs cannot test: Q4_0 weights must be unpacked and rescaled before they are
#   multiplied, so the GPU does more work per byte, while F16 is a plain load.
# - **The chip's size.** No Ultra reaches more than {glue:text}`ultra_q4_max:.0%` at Q4_0,
#   while no base M-series chip falls below {glue:text}`base_q4_min:.0%`. A plausible reading,
#   not measured here: a small model on a wide chip is too short a job to keep all that
#   bandwidth busy, and each Ultra is two Max dies joined by an interconnect, as Apple
#   describes it.
#
# So the rule of thumb is a rule for 4-bit weights on large chips, the setting the essay
# chose: the band holds {glue:text}`inside_big_q4:.0%` of the Q4_0 runs on Max and Ultra
# chips and {glue:text}`inside_rest:.0%` of all the others.

# %% [markdown]
# ## GPUs and CPUs on the same chart
#
# The scoreboards for CUDA and Vulkan list Llama-2-7B Q4_0 on many GPUs; the book keeps the
# {glue:text}`n_gpu_runs:d` whose memory bandwidth is sourced, all discrete cards except DGX
# Spark's integrated GB10. Some llama.cpp issues report CPU runs with the memory bandwidth of
# the machine. For the CPU runs the bytes per token are estimated as parameters times the
# bits per weight of the format in use at the time of the run (see `data/README.md`).

# %% tags=["hide-input"]
machines = published.all_machines()
napkin.Figure(
    name="fig-all-machines",
    chart=charts.all_machines(machines, band),
    caption="Measured decode over the napkin ceiling for every published run: GPUs, Apple's "
            "chips at Q4_0 and CPUs. No run exceeds its ceiling.",
    source="llama.cpp discussions 4167, 15013 (CUDA), 10879 (Vulkan) and CPU results from "
           "llama.cpp issues 34, 1437, 11744 and PR 1556; bandwidth from vendors' figures "
           "as listed in data/.",
)

# %% tags=["remove-cell"]
fam = machines.groupby("family")["fraction_of_ceiling"]
glue("n_gpu_runs", int(machines["family"].str.startswith("GPU").sum()))
glue("gpu_median", fam.median()["GPU (CUDA)"])
glue("n_cuda", int(fam.size()["GPU (CUDA)"]))
glue("max_fraction_all", machines["fraction_of_ceiling"].max())
apple_big_q4 = machines[(machines["family"] == "Apple Silicon")
                        & machines["machine"].str.contains("Max|Ultra")]
glue("apple_big_median", apple_big_q4["fraction_of_ceiling"].median())

# %% [markdown]
# The median of the {glue:text}`n_cuda:d` CUDA runs sits at {glue:text}`gpu_median:.0%` of
# its ceiling, above the essay's band, against {glue:text}`apple_big_median:.0%` for Apple's
# Max and Ultra chips at Q4_0; no run anywhere exceeds {glue:text}`max_fraction_all:.0%`: the
# napkin is an upper bound everywhere.
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

# %% tags=["remove-cell"]
by_reading = readings.set_index("reading")
rtx = machines[machines["machine"] == "RTX 4090 (CUDA)"].iloc[0]
glue("h100_tg", by_reading["tokens_per_s"].iloc[0])
glue("h100_ms", 1e3 / by_reading["tokens_per_s"].iloc[0])
glue("rtx_tg", rtx["tokens_per_s"])
glue("h100_over_rtx", by_reading["tokens_per_s"].iloc[0] / rtx["tokens_per_s"])
for key, name in (("sxm", "H100 SXM"), ("pcie", "H100 PCIe")):
    r = by_reading.loc[name]
    glue(f"h100_{key}_bw", r["bandwidth_bytes_per_s"] / GB)
    glue(f"h100_{key}_ceiling", r["ceiling_tokens_per_s"])
    glue(f"h100_{key}_frac", r["fraction_of_ceiling"])
    glue(f"h100_{key}_ms", 1e3 / r["ceiling_tokens_per_s"])
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
# {glue:text}`h100_pcie_ms:.1f` ms at the PCIe one. A plausible reading, which these runs
# cannot test: fixed per-token costs that do not shrink with bandwidth (kernel launches,
# synchronisation, sampling) fill the rest, so a 7B model is too small a job to keep this
# card's memory busy.

# %% [markdown]
# ## The quantization lever
#
# Decode is bound by the very quantity quantization shrinks. Going from F16 to Q4_0 cuts
# the bytes per token by {glue:text}`bytes_cut:.2f`x. The speed gain is smaller, a median of
# {glue:text}`speed_gain:.2f`x across the {glue:text}`n_both:d` chips measured at both (the
# unpacking work above is a plausible reason, not one these runs measure).

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-quantization-lever",
    chart=charts.quantization_lever(apple),
    caption="Fewer bytes per token, more tokens per second, on every chip; the gain is less "
            "than the cut in bytes.",
    source="llama.cpp discussion 4167 (Llama-2-7B tg128); tensor sizes reported by "
           "llama-bench.",
)

# %% tags=["remove-cell"]
sizes = {q: published.llama2_7b_bytes_per_token(q) for q in ("F16", "Q4_0")}
glue("bytes_cut", sizes["F16"] / sizes["Q4_0"])
wide = apple.pivot_table(index="machine", columns="quant", values="tokens_per_s").dropna()
glue("speed_gain", (wide["Q4_0"] / wide["F16"]).median())
glue("n_both", len(wide))

# %% [markdown]
# ## Your own napkin
#
# The essay's buying rule: divide bandwidth by the quantized model's size, then discount to
# {glue:text}`discount:.0%`. Drag the sliders to try a machine and a model; the chart works
# in the static page, with no Python behind it.

# %% tags=["hide-input"]
discount = essay.claim("buying_discount") / 100
glue("discount", discount)
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
# the point becomes yours.

# %% tags=["nbval-ignore-output"]
live = measure.live(measure.QUICK)
glue_markdown("live_sentence", measure.sentence(live))
tables.styled(measure.frame(live), "live-table", {
    "machine": "Machine and model", "bytes_per_token": "Bytes/token (GB)",
    "bandwidth_bytes_per_s": "Probe (GB/s)", "ceiling_tokens_per_s": "Ceiling (tok/s)",
    "tokens_per_s": "Measured tg (tok/s)", "fraction_of_ceiling": "Fraction"})

# %% [markdown]
# {glue:md}`live_sentence`

# %% tags=["hide-input", "nbval-ignore-output"]
napkin.Figure(
    name="fig-your-machine",
    chart=charts.all_machines(pd.concat([machines, measure.frame(live)]), band,
                              title="This machine beside every published run"),
    caption="This machine's live point beside every published run: measured tg over the "
            f"napkin ceiling. Live point: {measure.who(live)}.",
    source="Live: napkin.measure (memory probe and llama.cpp on a synthetic model); "
           "published: as in the chart above.",
    live=True,
    machine=measure.who(live),
)
