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
# # Grouped-query attention

# %% [markdown]
# ```{admonition} In one minute
# :class: tip
# - GQA cuts Llama 3.3 70B's KV cache {glue:text}`cut:.0f`-fold, as the essay says, but what a
#   decode step of one sequence reads at {glue:text}`full_tokens:,d` tokens falls only
#   {glue:text}`step_cut:.1f`-fold, because the weights are read either way; MQA saves another
#   {glue:text}`mqa_vs_gqa:.2f`x at that depth ([the three layouts](#gqa-variants-table)).
#   With the essay's batch of {glue:text}`essay_batch:d` sequences of
#   {glue:text}`essay_depth:,d` tokens, whose caches outweigh the weights, a step reads
#   {glue:text}`batch_step_cut:.1f`-fold less.
# - The essay's {glue:text}`essay_mha_mib:.2f` MiB per token for full multi-head attention is
#   neither unit: it is {glue:text}`mha_token_mb:.2f` MB, or {glue:text}`mha_token_mib:.2f` MiB
#   ([the three layouts](#gqa-variants-table)).
# - On one H200, with the same 8-bit weights for both, the MHA model runs out of memory at
#   {glue:text}`mha_fit_depth:,d` tokens of a single sequence, while GQA's bandwidth ceiling
#   at {glue:text}`full_tokens:,d` is still {glue:text}`tg_gqa_full:.0f` tokens/s; chapter 9's
#   calibrated step model puts it at {glue:text}`cal_gqa_full:.0f`
#   ([decode at depth](#fig-gqa-decode-depth)).
# ```
#
# **What this chapter does.** In multi-head attention (MHA) every query head has its own key
# and value head, and all of them are cached. Grouped-query attention (GQA) lets a group of
# query heads share one K and V head; multi-query attention (MQA) shares a single one among
# all {cite}`ainslie2023gqa`. The essay credits GQA with an
# {glue:text}`essay_cut:.0f`-fold cut in KV traffic and footprint, "why 128k contexts are
# servable at all". We put the three layouts of one 70B model side by side, predict how decode
# speed falls with context depth for each, and then measure that fall with llama.cpp on two
# synthetic models that differ only in their KV heads.
#
# At batch one a decode step reads every weight once and the whole cache once, so the napkin
# of chapter 1 becomes, at a context depth of $d$ tokens,
#
# ```{math}
# :label: eq-decode-at-depth
# \text{tokens/s} \;\le\; \frac{\text{bandwidth}}{\text{weight bytes} \;+\;
#   \text{cache}(d)}
# ```
#
# with $\text{cache}(d)$ from {eq}`eq-kv-cache`. The cache term grows linearly with depth and
# with the number of KV heads; the weight term does not move. The chapter's predictions are
# that bound, for each layout and depth:
#
# ```{literalinclude} ../lib/napkin/gqa/__init__.py
# :language: python
# :pyobject: decode_at_depth
# ```

# %% tags=["hide-input"]
from dataclasses import replace

import napkin
from napkin import catalog, deployment, essay, gqa, hardware, kvcache, measure, phases, tables
from napkin.gqa import figures as charts
from napkin.predict import step as predict_step
from napkin.predict.calibration import calibrated
from napkin.prose import glue, glue_all, glue_markdown
from napkin.units import GB, MB, GiB, MiB
from napkin.validation import report as validation_report

# %% [markdown]
# ## Three layouts of one model

# %% tags=["hide-input"]
llama = catalog.config("Llama-3.3-70B")
weights = catalog.weight_bytes("Llama-3.3-70B", "FP8")
glue_all({
    "kv_heads": llama["num_key_value_heads"],
    "weights_gb": weights / GB,
})

# %% [markdown]
# Take Llama 3.3 70B's shape and change only its KV heads: one per query head (MHA), the
# {glue:text}`kv_heads:d` it has (GQA), or a single one (MQA). The weights are held at
# {glue:text}`weights_gb:.1f` GB (8-bit) for all three, so that only the cache differs.

# %%
full = int(essay.claim("kv_full_context_tokens"))
layouts = gqa.variant_table(llama, full, weights, depths=(8192, 32768, full))
tables.styled(gqa.variant_display(layouts, depths=(8192, 32768, full)), "gqa-variants-table", {
    "variant": "Attention", "kv_heads": "KV heads", "per_token": "Cache per token",
    "at_context": f"One sequence at {full:,} tokens",
    **{f"read_{d}": f"Read per token, {d:,} deep" for d in (8192, 32768, full)}})

# %% tags=["hide-input"]
row = layouts.set_index("variant")
glue_all({
    "essay_cut": essay.claim("gqa_cut"),
    "mha_token_mb": row.loc["MHA", "kv_per_token_bytes"] / MB,
    "mha_token_mib": row.loc["MHA", "kv_per_token_bytes"] / MiB,
    "essay_mha_mib": essay.claim("mha_per_token_mib"),
    "mha_full_gb": row.loc["MHA", "kv_at_context_bytes"] / GB,
    "mha_full_gib": row.loc["MHA", "kv_at_context_bytes"] / GiB,
    "essay_mha_gb": essay.claim("mha_128k_gb"),
    "cut": row.loc["MHA", "kv_per_token_bytes"] / row.loc["GQA", "kv_per_token_bytes"],
    "full_tokens": full,
})
step_cut = row.loc["MHA", f"read_at_{full}_bytes"] / row.loc["GQA", f"read_at_{full}_bytes"]
glue("step_cut", step_cut)
read_full = row[f"read_at_{full}_bytes"]
glue("mqa_vs_gqa", read_full["GQA"] / read_full["MQA"])
# the essay's batch: many sequences read many caches, so the layout matters more
essay_batch = int(essay.claim("kv_example_batch"))
essay_depth = int(essay.claim("kv_example_context"))
batch_read = {name: kvcache.decode_step_bytes(cfg, weights, essay_depth, essay_batch)
              for name, cfg in gqa.variants(llama).items()}
glue_all({
    "essay_batch": essay_batch,
    "essay_depth": essay_depth,
    "batch_step_cut": batch_read["MHA"] / batch_read["GQA"],
    "h200_gib": hardware.chip("H200").capacity_bytes / GiB,
})

# %% [markdown]
# Full multi-head attention needs {glue:text}`mha_token_mb:.2f` MB per token, which is
# {glue:text}`mha_token_mib:.2f` MiB; the essay's {glue:text}`essay_mha_mib:.2f` MiB is neither
# (it is the KiB figure divided by a thousand, see the [errata](../book/errata.ipynb)). One
# sequence at {glue:text}`full_tokens:,d` tokens would hold {glue:text}`mha_full_gb:.1f` GB
# ({glue:text}`mha_full_gib:.0f` GiB), the essay's {glue:text}`essay_mha_gb:.0f` GB. GQA cuts
# the cache {glue:text}`cut:.0f`-fold, exactly as stated. What a decode step reads falls by
# less, {glue:text}`step_cut:.1f`-fold at that depth for one sequence, because the weights
# are read either way; and going further to MQA saves only another
# {glue:text}`mqa_vs_gqa:.2f`x, since by then the weights dominate. A batch reads one cache
# per sequence beside the one copy of the weights, so there the layout counts for more: for
# the essay's {glue:text}`essay_batch:d` sequences of {glue:text}`essay_depth:,d` tokens a
# step reads {glue:text}`batch_step_cut:.1f`-fold less with GQA.

# %% [markdown]
# ## Decode at depth, on paper
#
# Spread over every depth, on an H200 (the H100's successor, with the same arithmetic and
# {glue:text}`h200_gib:.0f` GiB of memory, enough for these weights with room to spare), the
# ceiling of {eq}`eq-decode-at-depth` looks like this. Each line is solid while weights and
# cache fit in the chip's memory.

# %% tags=["hide-input"]
h200 = hardware.chip("H200")
capacity_bytes = h200.capacity_bytes
ceiling = gqa.decode_at_depth(gqa.variants(llama), weights, h200.bandwidth_bytes_per_s,
                              gqa.depth_grid(full), capacity_bytes)
napkin.Figure(
    name="fig-gqa-decode-depth",
    chart=charts.decode_at_depth(ceiling, "H200", capacity_bytes / GiB),
    caption="The napkin ceiling of one sequence falls as its context deepens; with one KV head "
            "per query head it falls fastest and soon stops fitting at all.",
    source="Llama 3.3 70B config (data/models) with its KV heads varied; H200 bandwidth and "
           "memory from data/hardware_specs.csv; computed by napkin.gqa.",
)

# %% tags=["hide-input"]
at = ceiling.set_index(["variant", "depth_tokens"])
variants = gqa.variants(llama)
glue_all({
    "mha_equal_depth": gqa.depth_where_cache_equals_weights(variants["MHA"], weights),
    "gqa_equal_depth": gqa.depth_where_cache_equals_weights(variants["GQA"], weights),
    "tg_empty": at.loc[("GQA", 0), "tokens_per_s"],
    "tg_gqa_full": at.loc[("GQA", full), "tokens_per_s"],
    "tg_mqa_full": at.loc[("MQA", full), "tokens_per_s"],
    "mha_fit_depth": kvcache.max_context(variants["MHA"], capacity_bytes, weights),
})
# one MHA sequence at the full context with the 8-bit weights, in H200s' memory
mha_full_bytes = weights + kvcache.kv_cache_bytes(variants["MHA"], full)
engine_bytes = (1 - deployment.paper_overhead_share()) * capacity_bytes  # chapters 6 and 7
glue_all({
    "mha_full_gb_total": mha_full_bytes / GB,
    "mha_h200s": int(-(-mha_full_bytes // capacity_bytes)),
    "gqa_fit_full": kvcache.max_batch(variants["GQA"], full, capacity_bytes, weights),
    "engine_overhead": deployment.paper_overhead_share(),
    "mha_fit_engine": kvcache.max_context(variants["MHA"], engine_bytes, weights),
    "mha_h200s_engine": int(-(-mha_full_bytes // engine_bytes)),
})
# what chapter 9's calibrated step model makes of that ceiling, and how far to trust it
served = deployment.deploy("Llama-3.3-70B", "H200", weights="FP8", kv="f16")
glue_all({
    "cal_gqa_full": 1 / predict_step.step_seconds(served, 1, full),
    "eta": calibrated().bandwidth_efficiency,
})
glue_markdown("static_band", validation_report.error_band("static", "new")["text"])
# what a reader waits before that first token: the prompt, on the same model and chip
first_token = {n: napkin.predict("H200", "Llama-3.3-70B", weights="FP8", kv="f16",
                                 input_tokens=n, output_tokens=1, batch=1).ttft_s
               for n in (phases.long_prompt_tokens(), full - 1)}
glue_all({
    "long_prompt": phases.long_prompt_tokens(),
    "ttft_long_s": first_token[phases.long_prompt_tokens()],
    "ttft_full_s": first_token[full - 1],
})
assert kvcache.max_batch(variants["GQA"], full, capacity_bytes, weights) == 1  # "such sequence"

# %% [markdown]
# Three readings of the chart. With an empty context all three layouts share the same
# ceiling, {glue:text}`tg_empty:.0f` tokens/s, because only the weights are read. The MHA
# cache outweighs the weights from {glue:text}`mha_equal_depth:,d` tokens on; for the GQA model
# that point, {glue:text}`gqa_equal_depth:,d` tokens, lies beyond the context it serves. And
# the MHA model runs out of the H200's {glue:text}`h200_gib:.0f` GiB at
# {glue:text}`mha_fit_depth:,d` tokens of a single sequence, while GQA's ceiling at
# {glue:text}`full_tokens:,d` is still {glue:text}`tg_gqa_full:.0f` tokens/s (MQA:
# {glue:text}`tg_mqa_full:.0f`). That is what the essay's "why 128k contexts are servable at
# all" comes to in numbers, and it is about one GPU: with GQA one H200 holds
# {glue:text}`gqa_fit_full:d` such sequence beside the weights, while with MHA a single one
# needs {glue:text}`mha_full_gb_total:.0f` GB, the memory of {glue:text}`mha_h200s:d` H200
# GPUs. MHA at that context is servable, then, but at several GPUs per sequence rather than
# several sequences per GPU. These counts use all of the H200's memory; a serving engine keeps
# part of it for activations and its own buffers ({glue:text}`engine_overhead:.1%` in the vLLM
# paper's accounting, which chapter 6 and chapter 7 use), and with that set aside the MHA sequence
# runs out at {glue:text}`mha_fit_engine:,d` tokens and needs {glue:text}`mha_h200s_engine:d`
# H200 GPUs.
#
# These are ceilings, not speeds. Chapter 9's calibrated step model (`napkin.predict`), whose
# servers reach {glue:text}`eta:.0%` of peak bandwidth and pay fixed costs every step, gives the
# one GQA sequence {glue:text}`cal_gqa_full:.0f` tokens/s at {glue:text}`full_tokens:,d` tokens
# of context; on Argonne's static-batch latencies that model is {glue:md}`static_band`.
# Before that token a reader waits for the prompt, which the same model prices too: a
# {glue:text}`long_prompt:,d`-token prompt reaches its first token after
# {glue:text}`ttft_long_s:.0f` s on the H200, and a prompt that fills the context after
# {glue:text}`ttft_full_s:.0f` s.

# %% [markdown]
# ## Measured here

# %% tags=["hide-input"]
# the quick plan stops short of the depth where the MHA model's cache equals its weights, where
# the bytes predict a fall no larger than this machine's noise; measure past it
quick = measure.depth.plan_from_env()
pair_by = measure.depth.models_table(quick).set_index("attention")
equal_depth = int(pair_by.loc["MHA", "cache_equals_weights_tokens"])
deep = -(-equal_depth // 1024) * 1024  # the next whole 1,024 tokens past it
plan = quick if max(quick.depths) > equal_depth else replace(quick, depths=(0, deep // 2, deep))
glue_all({
    "synthetic_group": int(pair_by.loc["GQA", "heads"] // pair_by.loc["GQA", "kv_heads"]),
    "equal_depth": equal_depth,
    "n_gen": plan.n_gen,
    "reps": plan.reps,
    "depth_max": max(plan.depths),
    "read_page": measure.kvalloc.CELL_PADDING,
})
glue_markdown("n_kv_link", f"[llama.cpp's source]({measure.kvalloc.LLAMA_CPP_N_KV_SOURCE})")

# %% [markdown]
# The prediction can be set against a measurement on any machine; whether the measurement
# tests it depends on the machine's decode being bound by its memory bandwidth, which the
# sentence under the table checks. The two models below are synthetic llama
# models written by `napkin.measure` with random weights (speed does not depend on their
# values): the same layers, hidden size and query heads, one with a KV head per query head and
# one with {glue:text}`synthetic_group:d` query heads per KV head. The GQA model's
# feed-forward block is widened by exactly the weights its smaller K and V projections save,
# so both hold the same bytes of weights. A narrow feed-forward block and few layers make the
# cache large beside the weights already a few thousand tokens deep: the MHA model's equals its
# weights at {glue:text}`equal_depth:,d` tokens.

# %%
measure.depth.shown_models(plan)

# %% [markdown]
# The cell below measures what `llama-bench -d` measures, at each depth up to
# {glue:text}`depth_max:,d` tokens, past that point: the cache is filled, then
# {glue:text}`n_gen:d` tokens are generated and timed, {glue:text}`reps:d` times
# (`NAPKIN_DEPTH=full` measures more depths; `python -m napkin depth` does the same from a
# shell). Flash attention is off, so that attention reads the cache through llama.cpp's
# ordinary matrix kernels. Even at an empty context the table counts a cache read: llama.cpp
# attends over whole pages of {glue:text}`read_page:d` cells, masked where empty but read
# ({glue:md}`n_kv_link`), and the prediction counts them too.

# %% tags=["nbval-ignore-output"]
live = measure.depth.live(plan)
glue_markdown("live_depth_sentence", measure.depth.sentence(live))
measure.depth.shown(live)

# %% [markdown]
# {glue:md}`live_depth_sentence`

# %% tags=["hide-input", "nbval-ignore-output"]
napkin.Figure(
    name="fig-gqa-live-depth",
    chart=charts.live_vs_prediction(measure.depth.prediction(plan), measure.depth.relative(live),
                                    measure.who(live)),
    caption="Decode speed relative to an empty context. The dashed lines are the napkin's "
            "prediction from bytes alone; the points are llama.cpp on the machine that built "
            f"this page ({measure.who(live)}).",
    source="Live: napkin.measure.depth (synthetic models, llama.cpp, memory probe); "
           "prediction: napkin.kv_cache_bytes and the models' tensor bytes.",
    live=True,
    machine=measure.who(live),
)

# %% [markdown]
# Read the chart by its two slopes and by the gap between them. The bytes model predicts both
# only where decode waits on memory; on a CPU the share of the ceiling reached varies from run
# to run with whatever else the machine is doing (the table gives it), and where it is small,
# something other than the bytes sets the speed. Both models can then fall faster than their
# bytes predict. One possible cause, not measured here: scoring each cached token costs
# arithmetic for every query head, and the two models have the same query heads, so on a
# machine short of arithmetic that cost would slow them alike. What the KV heads change is the
# bytes, so the number to hold against the napkin is the ratio of the two speeds at the
# deepest depth, which the sentence above gives beside its prediction and its spread. The
# bandwidth behind the ceiling is probed again here, so it too moves with the load and need not
# match chapter 1's for the same build.

# %% [markdown]
# ## What was checked
#
# Chapter 4's cache formula is compared here, as there, with llama.cpp's own allocation for
# multi-head, grouped and multi-query shapes, with a 16-bit and a `q8_0` cache each
# (`tests/test_kvalloc.py` repeats it). The last two columns are the whole cache by the formula
# and as llama.cpp logs it, in MiB to two decimals, converted to bytes.

# %% tags=["nbval-ignore-output"]
allocations = measure.kvalloc.live_compare()
checked = measure.kvalloc.case_table()
if allocations is None:
    checked = checked.assign(napkin_bytes=float("nan"), llamacpp_bytes=float("nan"))
    glue_markdown("checked_sentence", "llama.cpp could not run where this page was built, so "
                  "only the formula's side is shown.")
else:
    checked = checked.merge(allocations[["case", "kv_dtype", "batch", "napkin_bytes",
                                         "llamacpp_bytes"]], on=["case", "kv_dtype", "batch"])
    glue_markdown("checked_sentence", f"{int(allocations['match'].sum())} of "
                  f"{len(allocations)} agree to the hundredth of a MiB the log resolves.")
tables.styled(checked, "gqa-checked-shapes-table", {
    "case": "Shape", "attention": "Attention", "kv_dtype": "Cache type", "batch": "Sequences",
    "kv_bytes_per_token": "Bytes per token", "napkin_bytes": "Cache, formula (bytes)",
    "llamacpp_bytes": "Cache, llama.cpp log (bytes)"},
    formats={c: (lambda v: "" if v != v else f"{v:,.0f}") for c in ("napkin_bytes",
                                                                    "llamacpp_bytes")})

# %% [markdown]
# {glue:md}`checked_sentence`

# %% [markdown]
# And this machine's decode speed at each depth, for the MHA and the GQA model, is the table
# under "Measured here" above.
