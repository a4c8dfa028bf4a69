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
# tensor data. Every number below is computed by `napkin` from the tables in `data/`, each
# row of which names its source.

# %% tags=["remove-cell"]
import pandas as pd

import napkin
from napkin import essay, hardware, measure, models, published, tables
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

# %% [markdown]
# Only {glue:text}`share_inside:.0%` of the {glue:text}`n_apple:d` runs fall inside the band.
# The median run reaches {glue:text}`median_f16:.0%` of its ceiling at F16,
# {glue:text}`median_q8_0:.0%` at Q8_0 and {glue:text}`median_q4_0:.0%` at Q4_0. Two things
# move the fraction:
#
# - **The format.** Q4_0 weights must be unpacked and rescaled before they are multiplied,
#   so the GPU does more work per byte; F16 is a plain load. The fewer the bytes, the more
#   the arithmetic shows.
# - **The chip's size.** No Ultra reaches more than {glue:text}`ultra_q4_max:.0%` at Q4_0,
#   while no base M-series chip falls below {glue:text}`base_q4_min:.0%`. A small model on a
#   wide chip is too short a job to keep all that bandwidth busy, and an Ultra is two dies
#   joined by an interconnect.
#
# So the rule of thumb is really a rule for 4-bit weights on large chips: the setting the
# essay chose, and the one most people run.

# %% [markdown]
# ## GPUs and CPUs on the same chart
#
# The scoreboards for CUDA and Vulkan list Llama-2-7B Q4_0 on dozens of discrete GPUs, and
# some llama.cpp issues report CPU runs with the memory bandwidth of the machine. For the
# CPU runs the bytes per token are estimated as parameters times the bits per weight of the
# format in use at the time of the run (see `data/README.md`).

# %% tags=["hide-input"]
machines = published.all_machines()
napkin.Figure(
    name="fig-all-machines",
    chart=charts.all_machines(machines, band),
    caption="Discrete GPUs reach a larger share of their ceiling than Apple's big chips do; "
            "CPUs scatter widely. The napkin bounds every run.",
    source="llama.cpp discussions 4167, 15013 (CUDA), 10879 (Vulkan) and CPU results from "
           "llama.cpp issues 34, 1437, 11744 and PR 1556; bandwidth from vendors' figures "
           "as listed in data/.",
)

# %% tags=["remove-cell"]
fam = machines.groupby("family")["fraction_of_ceiling"]
glue("gpu_median", fam.median()["GPU (CUDA)"])
glue("n_cuda", int(fam.size()["GPU (CUDA)"]))
glue("max_fraction_all", machines["fraction_of_ceiling"].max())
h100 = machines[machines["machine"].str.startswith("H100")].iloc[0]
glue("h100_frac", h100["fraction_of_ceiling"])
glue("h100_tg", h100["tokens_per_s"])
glue("h100_ceiling", h100["ceiling_tokens_per_s"])

# %% [markdown]
# The median of the {glue:text}`n_cuda:d` CUDA cards sits at {glue:text}`gpu_median:.0%` of
# its ceiling, above the essay's band, and no run anywhere exceeds
# {glue:text}`max_fraction_all:.0%`: the napkin is an upper bound everywhere. The outlier is
# instructive. The H100 decodes this small model at {glue:text}`h100_tg:.0f` tokens/s
# against a ceiling of {glue:text}`h100_ceiling:.0f`, only {glue:text}`h100_frac:.0%`: at
# these speeds each token takes a fraction of a millisecond, and fixed per-token costs
# (kernel launches, synchronisation, sampling) that a slower chip hides start to dominate.
# A 7B model is simply too small to keep an H100's memory system busy.

# %% [markdown]
# ## The quantization lever
#
# Decode is bound by the very quantity quantization shrinks. Going from F16 to Q4_0 cuts
# the bytes per token by {glue:text}`bytes_cut:.2f`x. The speed gain is smaller, a median of
# {glue:text}`speed_gain:.2f`x across the chips measured at both, because of the unpacking
# work seen above.

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
