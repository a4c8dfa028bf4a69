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
# # The KV cache
#
# ```{admonition} In one minute
# :class: tip
# - Llama 3.3 70B caches {glue:text}`per_token_kib:.0f` KiB per token at 16 bits, so one
#   sequence at its full {glue:text}`full_tokens:,d`-token context holds
#   {glue:text}`full_gb:.2f` GB; the essay's {glue:text}`batch:d` sequences of
#   {glue:text}`short:,d` tokens are exactly the H100's {glue:text}`h100_gib:.0f` GiB, not
#   {glue:text}`over_mixed:.1%` more (<a href="#T_kv-units-table">every unit</a>).
# - Calculators that know only the hidden size overstate gpt-oss-120b's cache
#   {glue:text}`gpt_naive_x:.0f`-fold and DeepSeek-V3's {glue:text}`ds_naive_x:.0f`-fold:
#   they miss grouped queries, sliding windows, latents, and heads wider or narrower than
#   the hidden size over the heads (<a href="#fig-kv-models">{glue:text}`n_models:d` models</a>).
# - The chip moves the batch that fits: the M2 Ultra holds {glue:text}`llama_chip_x:.1f`
#   times as many {glue:text}`short_ctx:,d`-token sequences of Llama 3.3 70B as an H100
#   (<a href="#T_kv-max-batch-table">sequences that fit</a>).
# - With 8-bit weights on an H100 the batch that fits falls below the batch that reaches the
#   ridge at {glue:text}`h100_turn:,d` tokens of context, and from {glue:text}`h100_never:,d`
#   no batch reaches it at all (from {glue:text}`h100_never_16bit:,d` with chapter 3's 16-bit
#   weights); chapter 9's calibrated step model, which scales both roofs by one share, puts
#   both in the same place. Past that, far short of the essay's {glue:text}`short:,d` tokens,
#   decode is memory-bound with any memory
#   (<a href="#fig-kv-capacity-turn">the turn on three chips</a>).
# ```
#
# **What this chapter does.** Every sequence being decoded keeps the keys and values of all
# its earlier tokens, in every layer, so that attention does not recompute them. That cache
# grows by one entry per layer per token, it has to sit in memory beside the weights, and
# every decode step reads all of it. The essay sizes it for Llama 3.3 70B and concludes that
# long context turns a bandwidth problem into a capacity problem. We recompute its numbers
# from the model's `config.json`, check the formula against the cache llama.cpp actually
# allocates, size the cache of {glue:text}`n_models:d` models, count the sequences that fit on five
# machines, and find where that count starts to cap the batch on the three datacenter GPUs.
#
# For a layer that caches K and V per head, one token costs
#
# ```{math}
# :label: eq-kv-per-token
# \text{bytes per token} \;=\; 2 \times n_\text{kv heads} \times d_\text{head}
#   \times n_\text{layers} \times \text{bytes per element}
# ```
#
# where the factor $2$ counts K and V. A sequence of $n$ tokens then holds, summing over layers
# $\ell$ that may keep only a window $w_\ell$ of recent tokens,
#
# ```{math}
# :label: eq-kv-cache
# \text{cache}(n) \;=\; \sum_{\ell} 2\, n^{(\ell)}_\text{kv heads}\, d_\text{head}\,
#   \min(n, w_\ell) \times \text{bytes per element}
# ```
#
# Both are `napkin.kv_bytes_per_token` and `napkin.kv_cache_bytes`, which read any Hugging
# Face `config.json`; the second is the sum above, a windowed layer holding at most its
# window:
#
# ```{literalinclude} ../lib/napkin/kvcache.py
# :language: python
# :pyobject: kv_cache_bytes
# ```

# %% tags=["hide-input"]
import napkin
from napkin import (capacity, catalog, deployment, errata, essay, hardware, kvcache, measure,
                    models, tables)
from napkin.capacity import figures as charts
from napkin.prose import glue, glue_all, glue_markdown
from napkin.units import GB, KB, GiB, KiB, MiB

# %% [markdown]
# ## The essay's numbers, recomputed

# %% tags=["hide-input"]
llama = catalog.config("Llama-3.3-70B")
glue_all({
    "layers": llama["num_hidden_layers"],
    "heads": llama["num_attention_heads"],
    "kv_heads": llama["num_key_value_heads"],
    "head_dim": kvcache.head_dim(llama),
})
per_token = napkin.kv_bytes_per_token(llama)
glue_all({
    "per_token_bytes": per_token,
    "per_token_kib": per_token / KiB,
    "per_token_kb": per_token / KB,
})

# %% [markdown]
# The essay reads Llama 3.3 70B's config as {glue:text}`layers:d` layers,
# {glue:text}`heads:d` query heads, {glue:text}`kv_heads:d` KV heads and a head width of
# {glue:text}`head_dim:d`; the config it links says the same (the file is
# `data/models/Llama-3.3-70B.json`). At 16 bits that is
# {glue:text}`per_token_bytes:,d` bytes per token: exactly {glue:text}`per_token_kib:.0f` KiB,
# or {glue:text}`per_token_kb:.2f` KB. The same cache in every unit:

# %%
full = int(essay.claim("kv_full_context_tokens"))
batch = int(essay.claim("kv_example_batch"))
short = int(essay.claim("kv_example_context"))
decimal_full, decimal_short = 128_000, 8_000  # "128k" and "8k" read as decimal thousands
cases = [("one token", 1, 1), (f"one sequence of {full:,} tokens", full, 1),
         (f"one sequence of {decimal_full:,} tokens", decimal_full, 1),
         (f"{batch} sequences of {short:,} tokens", short, batch),
         (f"{batch} sequences of {decimal_short:,} tokens", decimal_short, batch)]
units = capacity.units_table(llama, cases)
tables.styled(capacity.units_display(units), "kv-units-table", {
    "case": "Llama 3.3 70B, 16-bit cache", "bytes": "Bytes", "binary": "Binary (KiB, GiB)",
    "decimal": "Decimal (KB, GB)"})

# %% tags=["hide-input"]
by_case = units.set_index("context_tokens")
glue_all({
    "full_tokens": full,
    "full_gb": by_case.loc[full, "GB"],
    "full_gib": by_case.loc[full, "GiB"],
    "full_128000_gb": by_case.loc[decimal_full, "GB"],
    "decimal_full": decimal_full,
    "decimal_short": decimal_short,
    "essay_full_gb": essay.claim("kv_full_context_gb"),
    # "smaller" and "less" are measured from the larger figure, "larger" from the smaller one
    "gib_smaller": 1 - GB / GiB,
    "gb_larger": GiB / GB - 1,
    "decimal_less": 1 - by_case.loc[decimal_full, "bytes"] / by_case.loc[full, "bytes"],
    "batch": batch,
    "short": short,
    "batch_gb": by_case.loc[short, "GB"],
    "batch_gib": by_case.loc[short, "GiB"],
    "essay_batch_gb": essay.claim("kv_batch32_8k_gb"),
})
h100 = hardware.chip("H100 SXM")
glue_all({
    "h100_gib": h100.capacity_bytes / GiB,
    "h100_gb": h100.capacity_bytes / GB,
})
h100_driver = h100.specs["driver_visible_memory_MiB"] * MiB
glue_all({
    "h100_driver_gib": h100_driver / GiB,
    "over_driver": by_case.loc[short, "bytes"] / h100_driver - 1,
    "over_mixed": by_case.loc[short, "bytes"] / (essay.claim("h100_capacity") * GB) - 1,
    "decimal_short_gib": by_case.loc[decimal_short, "GiB"],
})
# what the prose says in words, checked
assert by_case.loc[short, "bytes"] == h100.capacity_bytes > h100_driver
assert by_case.loc[decimal_short, "bytes"] < h100.capacity_bytes
# the errata page's check of the example: a GB/GiB slip in the comparison, and the point holds
batch_check = errata.erratum("kv_batch_example")
assert batch_check.verdict == "unit slip" and batch_check.conclusion_holds

# %% [markdown]
# At the full {glue:text}`full_tokens:,d`-token context one sequence holds
# {glue:text}`full_gb:.2f` GB, which the essay rounds to {glue:text}`essay_full_gb:.0f` GB.
# Published figures for this very cache disagree for two reasons that the table separates:
#
# - **GiB against GB.** The same bytes are {glue:text}`full_gib:.2f` GiB. A figure printed
#   by a tool that counts in GiB and read as GB comes out {glue:text}`gib_smaller:.1%`
#   smaller (the GB figure is {glue:text}`gb_larger:.1%` larger).
# - **Thousands against powers of two.** Taking "128k" as {glue:text}`decimal_full:,d`
#   tokens instead of {glue:text}`full_tokens:,d` gives {glue:text}`full_128000_gb:.1f` GB,
#   {glue:text}`decimal_less:.1%` less.
#
# The batch example lands on a round number: {glue:text}`batch:d` sequences of
# {glue:text}`short:,d` tokens hold {glue:text}`batch_gb:.1f` GB, which is exactly
# {glue:text}`batch_gib:.0f` GiB. The essay's {glue:text}`essay_batch_gb:.0f` GB is right, but
# its units are mixed: it sets those decimal GB against "a single 80 GB H100", whose memory is
# binary, {glue:text}`h100_gib:.0f` GiB ({glue:text}`h100_gb:.1f` GB). In one unit the cache
# alone exactly fills the H100; the driver keeps a little back (nvidia-smi reports
# {glue:text}`h100_driver_gib:.2f` GiB in all), so the cache is {glue:text}`over_driver:.1%`
# more than that total, and CUDA and the engine's own runtime take more still; it is not the
# {glue:text}`over_mixed:.1%` that comparing GB with GiB suggests. The essay's point survives because the weights need room too: with
# any weights at all, these caches do not fit. (Read "8k" as {glue:text}`decimal_short:,d`
# tokens and the cache is {glue:text}`decimal_short_gib:.1f` GiB, which would fit by
# itself.)

# %% [markdown]
# ## What calculators get wrong
#
# Many online KV-cache calculators know only `hidden_size` and the layer count. For the
# original Llama 2 7B that is right, because every query head has its own K and V head and
# the head width is the hidden size divided by the heads. For almost every model since, it is
# not. Here is every model in `data/models`, each from its own `config.json`, with the cache
# one sequence needs at the context the model serves, beside what a hidden-size-only
# calculator would say.

# %%
sizes = capacity.model_table()
tables.styled(capacity.model_display(sizes), "kv-models-table", {
    "model": "Model", "layout": "Cache layout",
    "per_token": "Per token, all layers, before windows (16-bit)",
    "context": "Context (tokens)", "at_context": "At that context",
    "at_context_gib": "(GiB)", "naive": "Hidden-size formula"})

# %% tags=["hide-input"]
by_model = sizes.set_index("model")
gpt = catalog.config("gpt-oss-120b")
glue_all({
    "n_models": len(sizes),
    "gpt_head_dim": gpt["head_dim"],
    "gpt_hidden_over_heads": gpt["hidden_size"] / gpt["num_attention_heads"],
    "gpt_window": gpt["sliding_window"],
})
gpt_naive_x = (by_model.loc["gpt-oss-120b", "naive_at_context_bytes"]
               / by_model.loc["gpt-oss-120b", "kv_at_context_bytes"])
glue("gpt_naive_x", gpt_naive_x)
# the overstatement, factor by factor: naive / real = (heads / kv heads) x
# ((hidden / heads) / head_dim) x (tokens every layer would keep / tokens the layers keep)
gpt_gqa_x = gpt["num_attention_heads"] / gpt["num_key_value_heads"]
gpt_width_x = gpt["head_dim"] / (gpt["hidden_size"] / gpt["num_attention_heads"])
glue_all({
    "gpt_heads": gpt["num_attention_heads"],
    "gpt_kv_heads": gpt["num_key_value_heads"],
    "gpt_gqa_x": gpt_gqa_x,
    "gpt_width_x": gpt_width_x,
    "gpt_window_x": gpt_naive_x * gpt_width_x / gpt_gqa_x,
})
mistral = catalog.config("Mistral-7B-v0.1")
glue_all({
    "mistral_window": mistral["sliding_window"],
    "mistral_gb": by_model.loc["Mistral-7B-v0.1", "kv_at_context_bytes"] / GB,
})
deepseek = catalog.config("DeepSeek-V3")
glue_all({
    "ds_latent": deepseek["kv_lora_rank"],
    "ds_rope": deepseek["qk_rope_head_dim"],
    "ds_heads": deepseek["num_attention_heads"],
    "ds_naive_x": by_model.loc["DeepSeek-V3", "naive_at_context_bytes"]
     / by_model.loc["DeepSeek-V3", "kv_at_context_bytes"],
})
qwen = catalog.config("Qwen2.5-7B-Instruct")
glue("qwen_window", qwen["sliding_window"])
# what the prose says in words, checked: Qwen2.5's window is as long as the context it serves
assert qwen["sliding_window"] >= kvcache.max_context_tokens(qwen)
assert (sizes["context_basis"] != "served").sum() == 1  # Mistral 7B's, named in the prose
gpt_context = kvcache.max_context_tokens(gpt)
gpt_llamacpp = measure.kvalloc.llama_cpp_cache_bytes(gpt, gpt_context)
glue_all({
    "ubatch": measure.kvalloc.LLAMA_CPP_UBATCH,
    "page": measure.kvalloc.CELL_PADDING,
})
glue_markdown("iswa_link", f"[its allocator]({measure.kvalloc.LLAMA_CPP_ISWA_SOURCE})")
glue_all({
    "gpt_llamacpp_gb": gpt_llamacpp / GB,
    "gpt_formula_gb": by_model.loc["gpt-oss-120b", "kv_at_context_bytes"] / GB,
    "gpt_margin": gpt_llamacpp / by_model.loc["gpt-oss-120b", "kv_at_context_bytes"] - 1,
})

# %% [markdown]
# Four things separate the two columns, and `napkin.kvcache` handles each from the config:
#
# - **Grouped-query attention** (`num_key_value_heads`) {cite}`ainslie2023gqa`: Llama 3 and
#   Qwen2.5 cache a handful of KV heads, each shared by a group of query heads. Chapter 5 is
#   about this.
# - **An explicit `head_dim`**: gpt-oss's heads are {glue:text}`gpt_head_dim:d` wide although
#   its hidden size divided by its heads is {glue:text}`gpt_hidden_over_heads:.0f`.
# - **Sliding windows** {cite}`jiang2023mistral`: every layer of Mistral 7B keeps only the last
#   {glue:text}`mistral_window:,d` tokens, so its cache stops growing at
#   {glue:text}`mistral_gb:.2f` GB; every other layer of gpt-oss keeps
#   {glue:text}`gpt_window:d` tokens. A hidden-size calculator overstates gpt-oss-120b's cache
#   {glue:text}`gpt_naive_x:.0f`-fold: grouped-query attention ({glue:text}`gpt_heads:d` query
#   heads share {glue:text}`gpt_kv_heads:d` KV heads) accounts for
#   {glue:text}`gpt_gqa_x:.0f`x, the windowed layers for {glue:text}`gpt_window_x:.1f`x, and its
#   heads, wider than the hidden size over the heads, take back {glue:text}`gpt_width_x:.2f`x.
#   A window field can also be there and off: Qwen2.5's config carries a `sliding_window` of
#   {glue:text}`qwen_window:,d` tokens but switches it off with `use_sliding_window: false`.
#   napkin reads the switch; at the contexts Qwen2.5 serves, applying the window would change
#   nothing (it is as long as the context), but the same slip on a config with a shorter
#   window would understate the cache.
# - **Multi-head latent attention** {cite}`deepseek2024v2`: DeepSeek-V3 caches, per layer,
#   one compressed latent of {glue:text}`ds_latent:d` values and a rope key of
#   {glue:text}`ds_rope:d`, instead of K and V for each of its {glue:text}`ds_heads:d` heads;
#   the hidden-size formula is {glue:text}`ds_naive_x:.0f` times too large.
#
# A layer type the module cannot size (a recurrent or linear-attention layer, whose state
# does not grow with the context) is an error that says so, not a guess. One context in the
# table is a stand-in: no served context is recorded for Mistral 7B, so its row uses the
# config's position limit.
#
# Engines add margins of their own to windowed layers. llama.cpp keeps, per windowed layer,
# the window plus one micro-batch of {glue:text}`ubatch:d` tokens, rounded up to whole
# pages of {glue:text}`page:d` cells ({glue:md}`iswa_link` is the source): for gpt-oss-120b at its full context it reserves {glue:text}`gpt_llamacpp_gb:.3f`
# GB where the formula counts {glue:text}`gpt_formula_gb:.3f` GB, {glue:text}`gpt_margin:.1%`
# more. The margin matters only at short contexts, where the window is most of the cache.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-kv-models",
    chart=charts.model_sizes(sizes),
    caption="The KV cache of one sequence at each model's full context, from its config.json, "
            "against a calculator that knows only the hidden size and the layer count.",
    source="Model configs in data/models (research notes, with each model's config.json); "
           "computed by napkin.kv_cache_bytes.",
)

# %% [markdown]
# ## The formula against llama.cpp

# %% tags=["hide-input"]
shapes_checked = measure.kvalloc.case_table()
glue_all({
    "alloc_min_layers": int(shapes_checked["layers"].min()),
    "alloc_max_layers": int(shapes_checked["layers"].max()),
    "q8_block": kvcache.KV_BLOCK["q8_0"],
    "cell_page": measure.kvalloc.CELL_PADDING,
    "q8_block_bytes": float(kvcache.dtype_bytes("q8_0") * kvcache.KV_BLOCK["q8_0"]),
})

# %% [markdown]
# A formula is only as good as its agreement with what an engine allocates. When llama.cpp
# creates a context it reserves the whole cache at once and logs its size in MiB, to two
# decimals. The cell below builds tiny synthetic models of several shapes (multi-head,
# grouped and multi-query attention; head widths that are and are not the hidden size over
# the heads; {glue:text}`alloc_min_layers:d` to {glue:text}`alloc_max_layers:d` layers), asks
# llama.cpp for a context with a 16-bit and with a `q8_0` cache
# ({glue:text}`q8_block_bytes:.0f` bytes per {glue:text}`q8_block:d` values, which needs flash
# attention for V), and reads the allocation back. Two details keep the comparison exact
# to what the log can show: llama.cpp rounds the context up to whole pages of
# {glue:text}`cell_page:d` cells, so the cell count is read from its log, not assumed; and each
# context length is chosen so that the formula's cache is a whole number of quarter MiB,
# which two decimals print without loss. Agreement then means agreement to the hundredth of
# a MiB the log resolves: the byte columns below are the logged MiB converted to bytes, and a
# difference of a few kilobytes would not show.

# %% tags=["nbval-ignore-output"]
allocations = measure.kvalloc.live_compare()
glue_markdown("alloc_sentence", measure.kvalloc.sentence(allocations))
measure.kvalloc.shown(allocations)

# %% [markdown]
# {glue:md}`alloc_sentence` The same comparison runs in the test suite
# (`tests/test_kvalloc.py`), so a change in either the formula or llama.cpp's allocator that
# breaks the agreement fails the build.

# %% [markdown]
# ## How many sequences fit

# %% tags=["hide-input"]
glue("weight_bits", models.bits_per_weight(capacity.WEIGHTS))
b200 = hardware.chip("B200")
glue_all({
    "b200_gib": b200.capacity_bytes / GiB,
    "b200_announced": b200.specs["memory_capacity_announced_GiB"],
    "b200_driver_gib": b200.specs["driver_visible_memory_MiB"] * MiB / GiB,
    "b200_driver_gb": b200.specs["driver_visible_memory_MiB"] * MiB / GB,
    "b200_physical": b200.specs["memory_physical_GiB"],
})
h200 = hardware.chip("H200")
glue_all({
    "h200_gib": h200.capacity_bytes / GiB,
    "h200_physical": h200.specs["memory_physical_GiB"],
})
chips = capacity.chip_table()
mac = chips.set_index("chip").loc["M2 Ultra"]
glue_all({
    "m2u_gib": mac["capacity_bytes"] / GiB,
    "m2u_usable_gib": mac["gpu_usable_bytes"] / GiB,
    "m2u_share": mac["gpu_usable_bytes"] / mac["capacity_bytes"],
})

# %% [markdown]
# The cache has to share memory with the weights. The table counts the sequences of a given
# length whose caches fit beside them, with every model's weights at
# {glue:text}`weight_bits:.0f` bits (FP8) and the cache at 16 bits, on five machines. Memory is
# the vendor's figure read as binary (an "80 GB" H100 holds {glue:text}`h100_gib:.0f` GiB), the
# whole of it, except on the Mac. The M2 Ultra is counted in its largest configuration,
# {glue:text}`m2u_gib:.0f` GiB, of which macOS lets the GPU use
# {glue:text}`m2u_usable_gib:.0f` GiB ({glue:text}`m2u_share:.0%`) by default: chapter 8's rule,
# the lowest default recorded for a Mac of its class (raising `iogpu.wired_limit_mb` lifts the
# cap). Two datacenter parts carry more memory than they enable, and the table counts what
# is enabled. The B200 carries eight HBM3e stacks, {glue:text}`b200_physical:.0f` GiB, the
# {glue:text}`b200_announced:.0f` "GB" NVIDIA announced, and enables
# {glue:text}`b200_gib:.0f` GiB of them (nvidia-smi reports {glue:text}`b200_driver_gib:.1f`
# GiB, which is {glue:text}`b200_driver_gb:.1f` GB, so the announcement also reads as the
# enabled memory counted in decimal); the H200 carries six stacks,
# {glue:text}`h200_physical:.0f` GiB, and enables {glue:text}`h200_gib:.0f`. The stack counts
# are from a compilation and press reports of NVIDIA's launches (their sources are in
# `data/hardware_specs.csv`); NVIDIA does not say why part is left off. Cells say why a number
# is missing: the weights alone do not fit, or the context is longer than the model serves.

# %%
tables.styled(capacity.chip_display(chips), "kv-chips-table", {
    "chip": "Chip", "capacity": "Memory", "which": "Figure", "gpu": "GPU may use",
    "bandwidth": "Bandwidth"})

# %%
fits = capacity.max_batch_table()
grid = capacity.max_batch_grid(fits).assign(
    context_tokens=lambda d: d["context_tokens"].map("{:,}".format))
tables.styled(grid, "kv-max-batch-table", {"model": "Model",
                                           "context_tokens": "Context per sequence",
                                           **{c: c for c in capacity.CHIPS}})

# %% tags=["hide-input"]
cell = fits.set_index(["model", "chip", "context_tokens"])["max_batch"]
glue_all({
    "llama_h100_short": int(cell[("Llama-3.3-70B", "H100 SXM", capacity.CONTEXTS[0])]),
    "llama_b200_long": int(cell[("Llama-3.3-70B", "B200", capacity.CONTEXTS[-1])]),
    "short_ctx": capacity.CONTEXTS[0],
    "long_ctx": capacity.CONTEXTS[-1],
    "gpt_fp8_gib": catalog.weight_bytes("gpt-oss-120b", "FP8") / GiB,
})
# llama-bench's own size of the MXFP4 GGUF: the experts in MXFP4, the rest wider
bench = tables.load("spark_bench_llamacpp")
glue_all({
    "gpt_gguf_gib": bench[bench["model"] == "gpt-oss-120b"]["model_size_GiB"].dropna().iloc[0],
    "gpt20_h100_long": int(cell[("gpt-oss-20b", "H100 SXM", capacity.CONTEXTS[-1])]),
    "llama8_h100_long": int(cell[("Llama-3.1-8B", "H100 SXM", capacity.CONTEXTS[-1])]),
    "llama8_share": catalog.params("Llama-3.1-8B") / catalog.params("gpt-oss-20b"),
})
gpt20 = {c: cell[("gpt-oss-20b", c, capacity.CONTEXTS[-1])] for c in capacity.CHIPS}
glue_all({
    "gpt20_arch_x": gpt20["H100 SXM"] / cell[("Llama-3.1-8B", "H100 SXM", capacity.CONTEXTS[-1])],
    "gpt20_chip_x": max(gpt20.values()) / gpt20["H100 SXM"],
    "llama_chip_x": cell[("Llama-3.3-70B", "M2 Ultra", capacity.CONTEXTS[0])]
     / cell[("Llama-3.3-70B", "H100 SXM", capacity.CONTEXTS[0])],
})

# %% tags=["hide-input"]
# the same count read two other ways: Spark at what its Linux reports, and every chip with
# the share a serving engine keeps for activations and buffers (chapters 6 and 7)
spark = hardware.chip("DGX Spark")
spark_visible = spark.gpu_share()[0] * spark.capacity_bytes
llama_fp8 = catalog.weight_bytes("Llama-3.3-70B", capacity.WEIGHTS)
llama_cfg = catalog.config("Llama-3.3-70B")
engine_share = 1 - deployment.paper_overhead_share()
glue_all({
    "spark_visible_gib": spark_visible / GiB,
    "spark_full_batch": int(cell[("Llama-3.3-70B", "DGX Spark", capacity.CONTEXTS[0])]),
    "spark_visible_batch": int(kvcache.max_batch(llama_cfg, capacity.CONTEXTS[0], spark_visible,
                                                 llama_fp8, "f16")),
    "engine_overhead": deployment.paper_overhead_share(),
    "h100_engine_batch": int(kvcache.max_batch(
        llama_cfg, capacity.CONTEXTS[0], engine_share * hardware.chip("H100 SXM").capacity_bytes,
        llama_fp8, "f16")),
})

# %% [markdown]
# Two readings of the memory would lower these counts. DGX Spark is counted at its whole
# capacity, but its Linux reports {glue:text}`spark_visible_gib:.1f` GiB, the figure chapter 8
# and chapter 11 size it within: counted there, Llama 3.3 70B leaves room for
# {glue:text}`spark_visible_batch:d` sequences of {glue:text}`short_ctx:,d` tokens instead of
# {glue:text}`spark_full_batch:d`. And a serving engine keeps part of every GPU for activations
# and its own buffers ({glue:text}`engine_overhead:.1%` of the card in the vLLM paper's
# accounting, which chapter 6 and chapter 7 use): with that set aside an H100 holds
# {glue:text}`h100_engine_batch:d` sequences instead of {glue:text}`llama_h100_short:d`. This
# table counts the memory itself, so its counts are upper bounds.
#
# Llama 3.3 70B leaves an H100 room for {glue:text}`llama_h100_short:d` sequences of
# {glue:text}`short_ctx:,d` tokens, and even a B200 holds only
# {glue:text}`llama_b200_long:d` at {glue:text}`long_ctx:,d`. For a 70B model the chip is what
# moves the count: the M2 Ultra holds {glue:text}`llama_chip_x:.1f` times as many sequences of
# {glue:text}`short_ctx:,d` tokens as an H100. Among small models the architecture can move it
# more: at the full context an H100 holds {glue:text}`gpt20_h100_long:d` sequences of
# gpt-oss-20b (windowed layers, few KV heads) but {glue:text}`llama8_h100_long:d` of Llama 3.1
# 8B, a model with {glue:text}`llama8_share:.0%` of its parameters, a factor of
# {glue:text}`gpt20_arch_x:.0f` where the best chip here adds
# {glue:text}`gpt20_chip_x:.1f`x. One caveat on the uniform 8-bit weights: gpt-oss ships its
# experts in MXFP4, and llama-bench counts that GGUF of gpt-oss-120b at
# {glue:text}`gpt_gguf_gib:.1f` GiB rather than the {glue:text}`gpt_fp8_gib:.0f` GiB of FP8
# weights, which does fit on an H100; the calculator at the end of the chapter takes any
# format.

# %% [markdown]
# ## From bandwidth to capacity

# %% tags=["hide-input"]
turns = {c: capacity.roofline_turn("Llama-3.3-70B", c) for c in capacity.DATACENTER}
h100_turn = turns["H100 SXM"]
glue_all({
    "h100_ridge": h100_turn["ridge_flop_per_byte"],
    "h100_weights_only": h100_turn["weights_only_crossover"],
    "h100_attn_ridge": h100_turn["attention_ridge_flop_per_byte"],
    "h100_fits_at_turn": h100_turn["fits_at_turn"],
})
# chapter 3's case: 16-bit weights on the 16-bit roof ("about half" in the prose, checked)
never_16bit = capacity.roofline_turn("Llama-3.3-70B", "H100 SXM", "BF16")["never_beyond_tokens"]
glue("h100_never_16bit", never_16bit)
assert abs(h100_turn["never_beyond_tokens"] / never_16bit - 0.5) < 0.05
calibrated = {c: capacity.calibrated_turn("Llama-3.3-70B", c) for c in capacity.DATACENTER}
for chip, key in (("H100 SXM", "h100"), ("H200", "h200"), ("B200", "b200")):
    glue(f"{key}_turn", turns[chip]["turn_tokens"])
    glue(f"{key}_never", turns[chip]["never_beyond_tokens"])
    glue(f"cal_{key}_turn", calibrated[chip]["turn_tokens"])
    glue(f"cal_{key}_never", calibrated[chip]["never_beyond_tokens"])
fit = calibrated["H100 SXM"]
glue("cal_share", fit["bandwidth_share"])
same = all(calibrated[c][k] == turns[c][k] for c in capacity.DATACENTER
           for k in ("turn_tokens", "never_beyond_tokens"))
one_share = fit["bandwidth_share"] == fit["compute_share"]
assert same and one_share  # the prose: the same contexts, one share of both peaks
assert all(t["never_beyond_tokens"] < short for t in calibrated.values())

# %% [markdown]
# Chapter 3 put back what the essay's crossover leaves out: every sequence in a batch reads
# its own cache, so the batch a decode step needs to reach the ridge grows with the context,
# and beyond some context no batch reaches it. Here the weights are 8-bit, so their matmuls
# run on the FP8 roof ({glue:text}`h100_ridge:.0f` FLOP/byte on an H100), while attention over
# the 16-bit cache runs on the FP16 one ({glue:text}`h100_attn_ridge:.0f`): counting weights
# alone, decode would cross at a batch of {glue:text}`h100_weights_only:.0f`, as 16-bit
# weights do on the 16-bit roof. Counting the cache, the chart sets the batch needed
# (dashed) against the batch that fits beside the weights (solid), as the context grows.

# %% tags=["hide-input"]
curves = capacity.batch_limit_curves()
essay_point = {"context_tokens": short, "max_batch": batch,
               "label": f"the essay's example: {batch} sequences of {short:,} tokens",
               "kv_GiB": by_case.loc[short, "GiB"]}
napkin.Figure(
    name="fig-kv-capacity-turn",
    chart=charts.turn_chart(curves, essay_point, "Llama-3.3-70B"),
    caption="Per chip, the largest batch that fits beside the weights (solid) and the batch a "
            "decode step needs to reach the ridge with every cache read counted, weights on "
            "the FP8 roof and attention on the FP16 one (dashed, ending where no batch reaches "
            "it); ringed: where the first falls below the second. Pick another model from the "
            "menu.",
    source="Capacity (binary), bandwidth and FP8 peaks from data/hardware_specs.csv; models "
           "from data/models; computed by napkin.capacity and napkin.roofline.",
)

# %% tags=["hide-input"]
cost = capacity.extra_sequence_cost("Llama-3.3-70B", [2048, 32768]).set_index("context_tokens")
glue_all({
    "extra_2k": cost.loc[2048, "share_of_weights"],
    "extra_32k": cost.loc[32768, "share_of_weights"],
    "short_extra": 2048,
    "long_extra": 32768,
})
# what the prose says in words, checked
assert all(t["turn_tokens"] < t["never_beyond_tokens"] <= 2048 for t in turns.values())
assert all(t["never_beyond_tokens"] < short for t in turns.values())
# the errata page's check of the essay's sentence: it needs a correction, its point holds
capacity_check = errata.erratum("capacity_problem")
assert capacity_check.verdict == "inconsistent" and capacity_check.conclusion_holds

# %% [markdown]
# For Llama 3.3 70B on an H100, the batch that fits drops below the batch that would reach
# the ridge at {glue:text}`h100_turn:,d` tokens of context ({glue:text}`h100_fits_at_turn:,d`
# sequences fit there), and from {glue:text}`h100_never:,d` tokens on no batch reaches the
# ridge at all, however much memory there were. That is about half chapter 3's context for
# the same model and chip ({glue:text}`h100_never_16bit:,d` tokens), because chapter 3 counts
# 16-bit weights on the 16-bit roof: 8-bit weights on the FP8 roof halve the time of each
# sequence's weight matmuls, while its read of the 16-bit cache takes as long as before. The H200 turns at {glue:text}`h200_turn:,d`
# tokens (none from {glue:text}`h200_never:,d`), the B200 at {glue:text}`b200_turn:,d` (none
# from {glue:text}`b200_never:,d`).
#
# Those are the roofline's contexts, and a roofline promises more than servers deliver.
# Chapter 9's calibrated step model (`napkin.predict`, whose published fit reaches
# {glue:text}`cal_share:.0%` of each peak), asked at every context for the smallest batch
# whose step it calls compute-bound (`napkin.capacity.calibrated_turn`), turns at
# {glue:text}`cal_h100_turn:,d` tokens on an H100 and finds no such batch from
# {glue:text}`cal_h100_never:,d` ({glue:text}`cal_h200_turn:,d` and
# {glue:text}`cal_h200_never:,d` on the H200, {glue:text}`cal_b200_turn:,d` and
# {glue:text}`cal_b200_never:,d` on the B200): the same contexts as the roofline, because
# its fit reaches one share of both peaks, and a share that scales both roofs alike leaves
# every ridge where it was (its fixed costs per step slow every batch but bind neither roof).
#
# Set that against the essay's whole sentence: "Long context turns a bandwidth problem into a
# capacity problem, and the capacity problem caps your batch size, which drags you back onto
# the bad side of the decode roofline." Where it ends is right: at long context the capacity
# caps the batch and decode is memory-bound. How it gets there holds only in a band: between
# {glue:text}`h100_turn:,d` and {glue:text}`h100_never:,d` tokens on an H100, a compute-bound
# batch exists but does not fit, and there it is the capacity that drags decode back. Past that
# band, which on all three chips ends well short of the essay's own example of
# {glue:text}`short:,d` tokens, each sequence's own cache reads keep decode memory-bound however
# much memory there were. There capacity decides how large the batch can be, the batch decides
# how many tokens share each read of the weights, and so memory sets the throughput of a
# decode that was memory-bound anyway (chapter 3's throughput curves).
#
# In that regime an extra sequence costs only its own cache read. At
# {glue:text}`short_extra:,d` tokens that read is {glue:text}`extra_2k:.1%` of the weights'
# bytes, and an extra sequence is nearly free throughput; at {glue:text}`long_extra:,d` tokens
# it is {glue:text}`extra_32k:.0%`, and it is not.

# %% [markdown]
# ## Your own numbers
#
# Pick a model, a context, a batch, a cache type and a weight format; the bar shows weights
# and cache against each machine's memory. The cache uses the same formula as
# `napkin.kv_cache_bytes`, windows included, evaluated in the page.

# %% tags=["hide-input"]
dtypes = {name: float(kvcache.dtype_bytes(name)) for name in ("f16", "fp8", "q8_0", "q4_0")}
formats = {name: models.bits_per_weight(name) / 8 for name in ("FP8", "BF16", "Q4_0", "MXFP4")}
napkin.Figure(
    name="fig-kv-calculator",
    chart=charts.calculator(capacity.calculator_rows(), chips, dtypes, formats,
                            "Llama-3.3-70B", short, batch),
    caption="Weights plus KV cache for any model in data/models, against the memory of "
            f"{len(chips)} machines. Starts at the essay's example: Llama 3.3 70B, {batch} "
            f"sequences of {short:,} tokens.",
    source="Models from data/models; capacities from data/hardware_specs.csv; formula of "
           "napkin.kv_cache_bytes.",
)
