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
# **What this chapter does.** NVIDIA's DGX Spark pairs a great deal of arithmetic
# ({glue:text}`spark_fp4:,.0f` TFLOPS of *sparse FP4*, in NVIDIA's words) with
# {glue:text}`spark_bw:.0f` GB/s of memory bandwidth. The essay's evidence that such a box
# is fast at one phase of inference and slow at the other is a single pair of llama.cpp
# numbers for gpt-oss-120b: {glue:text}`essay_pp:,.0f` tokens/s of prompt processing
# against {glue:text}`essay_tg:.2f` tokens/s of generation, a
# {glue:text}`essay_gap:.0f`x gap. We rebuild that pair from its source, the benchmark file
# Georgi Gerganov wrote into the llama.cpp repository {cite}`llamacpp_dgx_spark`, build by
# build; then use the rest of the file to see how the gap moves with context length and
# model, set DGX Spark beside its mirror image (an M2 Ultra run with the same command) and
# beside every other machine in the book, and finally measure the gap on the machine
# reading this page.
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
# *ridge point*, the subject of the {doc}`next chapter <03_h100_ridge>`. A box with a lot of
# arithmetic per byte of bandwidth has a large gap; a box with a lot of bandwidth per unit
# of arithmetic has a small one.

# %% tags=["remove-cell"]
import pandas as pd

import napkin
from napkin import errata, essay, hardware, measure, phases, tables
from napkin.figures import spark as charts
from napkin.prose import glue, glue_markdown

glue("spark_fp4", essay.claim("spark_fp4_sparse"))
glue("spark_bw", hardware.chip("DGX Spark").bandwidth_bytes_per_s / 1e9)
glue("essay_pp", essay.claim("spark_pp2048"))
glue("essay_tg", essay.claim("spark_tg32"))
glue("essay_gap", essay.claim("spark_gap"))
depths = sorted(phases.spark_bench()["context_depth_tokens"].unique())
glue_markdown("depth_list", ", ".join(f"{d:,}" for d in depths[:-1]) + f" and {depths[-1]:,}")

# %% [markdown]
# ## The essay's pair, build by build
#
# The benchmark file runs llama-bench's prefill test `pp2048` and decode test `tg32` with
# {glue:md}`depth_list` tokens already in the cache. The file was written at build
# {glue:text}`build_first:d` and later re-run at builds {glue:text}`build_mid:d` and
# {glue:text}`build_last:d`; the data here were read from the file and from forks that kept
# the later versions. At empty context, gpt-oss-120b measures:

# %%
builds = phases.essay_pair_by_build()
tables.styled(builds.round({"ratio": 1}), "spark-builds", {
    "label": "Run", "pp_tok_per_s": "Prefill pp2048 (tok/s)",
    "tg_tok_per_s": "Decode tg32 (tok/s)", "ratio": "Gap (x)"})

# %% tags=["remove-cell"]
first, mid, last = builds.iloc[0], builds.iloc[1], builds.iloc[-1]
glue("build_first", first["build"])
glue("build_mid", mid["build"])
glue("build_last", last["build"])
for name, row in (("first", first), ("mid", mid), ("last", last)):
    glue(f"pp_{name}", row["pp_tok_per_s"])
    glue(f"tg_{name}", row["tg_tok_per_s"])
    glue(f"gap_{name}", row["ratio"])
pp_hits = phases.matches(essay.claim("spark_pp2048"), decimals=0)
tg_hits = phases.matches(essay.claim("spark_tg32"), decimals=2)
hit = pp_hits.iloc[0]
glue("hit_depth", hit["context_depth_tokens"])
glue("hit_build", hit["build"])
glue("hit_value", hit["throughput_tok_per_s"])
glue("n_pp_hits", len(pp_hits))
glue("n_tg_hits", len(tg_hits))
near = phases.nearest(essay.claim("spark_tg32"), "tg32")
glue("near_tg", near["throughput_tok_per_s"])
glue("near_build", near["build"])
glue("gap_min", builds["ratio"].min())
glue("gap_max", builds["ratio"].max())
glue("own_gap", essay.claim("spark_pp2048") / essay.claim("spark_tg32"))
glue("tg_change", last["tg_tok_per_s"] / first["tg_tok_per_s"] - 1)
glue_markdown("survives", "Yes." if errata.spark_gap().conclusion_holds else "No.")

# %% [markdown]
# Neither of the essay's numbers is at depth 0 in any build. The prefill figure
# {glue:text}`essay_pp:,.0f` matches {glue:text}`n_pp_hits:d` row in the whole table: build
# {glue:text}`hit_build:d` at a depth of {glue:text}`hit_depth:,d` tokens
# ({glue:text}`hit_value:,.2f` tokens/s), measured behind a long context rather than an empty
# one. The decode figure {glue:text}`essay_tg:.2f` matches {glue:text}`n_tg_hits:d`
# rows; the nearest at empty context is {glue:text}`near_tg:.2f` (build
# {glue:text}`near_build:d`). The pair looks like a prefill number read from the wrong row,
# set beside a decode number from elsewhere.
#
# **Does the conclusion survive?** {glue:md}`survives` The file's own empty-context pairs
# give gaps of {glue:text}`gap_first:.1f`x, {glue:text}`gap_mid:.1f`x and
# {glue:text}`gap_last:.1f`x, and
# the essay's own pair, whatever its origin, gives {glue:text}`own_gap:.1f`x. The newest
# build prefills faster ({glue:text}`pp_last:,.0f` against {glue:text}`pp_first:,.0f`
# tokens/s) while its decode speed moved by only {glue:text}`tg_change:+.1%`, so the gap has
# grown. The
# {doc}`errata page <../book/errata>` records both findings.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spark-pair",
    chart=charts.essay_pair(essay.claim("spark_pp2048"), essay.claim("spark_tg32"), builds),
    caption="At empty context, every build of the benchmark file shows a gap of about the "
            "essay's size or larger; the essay's exact pair appears in none of them.",
    source="llama.cpp benches/dgx-spark.md (build 6918) and later copies (builds 6989, 7941); "
           "the essay's figures from data/essay_claims.csv.",
)

# %% [markdown]
# ## Both phases slow down as the context grows
#
# Every prompt token attends to everything before it, and so does every generated token, so
# both phases do more work, and read more cache, at depth. Pick a model in the chart; the
# lines are each phase's speed as a share of its speed at empty context.

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

# %% tags=["remove-cell"]
deep = retention[(retention["model"] == "gpt-oss-120b")
                 & (retention["context_depth_tokens"] == retention["context_depth_tokens"].max())]
glue("max_depth", int(deep["context_depth_tokens"].iloc[0]))
spark_last = deep[(deep["machine"] == "DGX Spark") & (deep["build"] == last["build"])]
keep = spark_last.set_index("phase")["fraction_of_depth0"]
glue("keep_pp", keep["prefill"])
glue("keep_tg", keep["decode"])
m2_deep = deep[deep["machine"] == "M2 Ultra"].set_index("phase")["fraction_of_depth0"]
glue("m2_keep_pp", m2_deep["prefill"])
glue("m2_keep_tg", m2_deep["decode"])
pairs = phases.depth_pairs()
share_faster = (retention.pivot_table(index=["label", "model", "context_depth_tokens"],
                                      columns="phase", values="fraction_of_depth0")
                .query("context_depth_tokens > 0"))
glue("share_pp_falls_more", (share_faster["prefill"] < share_faster["decode"]).mean())
gap_deep = pairs[(pairs["model"] == "gpt-oss-120b") & (pairs["machine"] == "DGX Spark")
                 & (pairs["build"] == last["build"])].set_index("context_depth_tokens")["ratio"]
glue("gap_deep", gap_deep.loc[gap_deep.index.max()])

# %% [markdown]
# At {glue:text}`max_depth:,d` tokens of context, DGX Spark (build {glue:text}`build_last:d`)
# keeps {glue:text}`keep_pp:.0%` of its gpt-oss-120b prefill speed and
# {glue:text}`keep_tg:.0%` of its decode speed; the M2 Ultra keeps {glue:text}`m2_keep_pp:.0%`
# and {glue:text}`m2_keep_tg:.0%`. Across every machine, model and depth in the file,
# prefill loses the larger share in {glue:text}`share_pp_falls_more:.0%` of cases. Each
# prompt token's attention arithmetic grows with the depth while its weight arithmetic stays
# fixed; each generated token's cache read grows with the depth while its weight read stays
# fixed. On these machines the first grows faster against its base than the second, so the
# gap narrows with depth, to {glue:text}`gap_deep:.1f`x at the deepest point in the newest
# build:

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-spark-ratio-depth",
    chart=charts.ratio_by_depth(pairs, "gpt-oss-120b"),
    caption="The prefill/decode gap ends lower at full depth than at empty context, on DGX "
            "Spark and on M2 Ultra alike, and stays far larger on DGX Spark.",
    source="llama.cpp benchmark files for DGX Spark and M2 Ultra (pp2048 / tg32).",
)

# %% [markdown]
# ## Other models in the file
#
# The file measures more than gpt-oss. At empty context the gap on DGX Spark runs from
# {glue:text}`model_gap_min:.0f`x to {glue:text}`model_gap_max:.0f`x across its models and
# builds:

# %% tags=["remove-cell"]
ratios = phases.spark_ratios()
spark_models = ratios[ratios["machine"] == "DGX Spark"]
glue("model_gap_min", spark_models["ratio"].min())
glue("model_gap_max", spark_models["ratio"].max())
lowest = spark_models.loc[spark_models["ratio"].idxmin()]
highest = spark_models.loc[spark_models["ratio"].idxmax()]
moe = spark_models[spark_models["moe"]]["ratio"]
dense = spark_models[~spark_models["moe"]]["ratio"]
glue_markdown("moe_sentence",
              f"Every dense model's gap ({dense.min():.0f}x to {dense.max():.0f}x) is larger "
              f"than every mixture-of-experts model's ({moe.min():.0f}x to {moe.max():.0f}x). "
              "A plausible reading: a decode step reads only the experts its one token is "
              "routed to, while in prefill each expert multiplies only the share of the prompt "
              "routed to it, so its weights are reused far fewer times per byte than a dense "
              "model's."
              if dense.min() > moe.max() else
              "Dense and mixture-of-experts models overlap, so the architecture alone does not "
              "set the gap.")
glue_markdown("model_extremes",
              f"the smallest gap belongs to {lowest['model']} ({lowest['detail']}), the "
              f"largest to {highest['model']} ({highest['detail']})")

# %%
wide = (spark_models.pivot_table(index="model", columns="detail", values="ratio")
        .round(1).reset_index())
tables.styled(wide, "spark-models", {c: (c if c != "model" else "Model (gap, x)")
                                     for c in wide.columns})

# %% [markdown]
# Of these, {glue:md}`model_extremes`. {glue:md}`moe_sentence`

# %% [markdown]
# ## The mirror image
#
# The llama.cpp repository also holds the same benchmark run on an M2 Ultra Mac Studio,
# with a build only {glue:text}`build_gap:d` builds away from DGX Spark's newest. Apple's
# chip has {glue:text}`bw_ratio:.1f`x the memory bandwidth and no tensor cores. Phase by
# phase, as a ratio of M2 Ultra to DGX Spark:

# %% tags=["hide-input"]
mirror = phases.mirror_table()
napkin.Figure(
    name="fig-spark-mirror",
    chart=charts.mirror(mirror),
    caption="M2 Ultra decodes every model faster than DGX Spark and prefills every model "
            "slower: bandwidth wins one phase, arithmetic the other.",
    source="llama.cpp benches/dgx-spark.md (build 7941 copy) and benches/mac-m2-ultra.md "
           "(build 7948 copy), pp2048 / tg32 at depth 0; bandwidth from "
           "data/hardware_specs.csv.",
)

# %% tags=["remove-cell"]
glue("build_gap", mirror.attrs["m2_build"] - mirror.attrs["spark_build"])
glue("bw_ratio", mirror["m2_over_spark"].iloc[0])
by_kind = mirror.groupby("kind")["m2_over_spark"]
glue("dec_min", by_kind.min()["decode"])
glue("dec_max", by_kind.max()["decode"])
glue("pre_min", by_kind.min()["prefill"])
glue("pre_max", by_kind.max()["prefill"])
oss = mirror[mirror["model"] == "gpt-oss-120b"].set_index("kind")
glue("m2_tg_120", oss.loc["decode", "m2"])
glue("m2_pp_120", oss.loc["prefill", "m2"])
glue("m2_gap_120", oss.loc["prefill", "m2"] / oss.loc["decode", "m2"])

# %% [markdown]
# Across the {glue:text}`n_mirror:d` models, the M2 Ultra decodes {glue:text}`dec_min:.2f`x
# to {glue:text}`dec_max:.2f`x as fast as DGX Spark and prefills at
# {glue:text}`pre_min:.2f`x to {glue:text}`pre_max:.2f`x its speed. Decode never gains the
# full bandwidth ratio, but the direction never changes. On gpt-oss-120b the M2 Ultra's gap
# is {glue:text}`m2_gap_120:.1f`x ({glue:text}`m2_pp_120:,.0f` against
# {glue:text}`m2_tg_120:.1f` tokens/s): the same weights on a machine built the other way
# round. This is the essay's "mirror-image problem" measured with one protocol.

# %% tags=["remove-cell"]
glue("n_mirror", int((mirror["kind"] == "decode").sum()))
strix = phases.strix_ratios()
strix_oss = strix[strix["model"].str.contains("gpt-oss 120B")]
glue("strix_bw", hardware.chip("Strix Halo").bandwidth_bytes_per_s / 1e9)
glue("strix_fp16", hardware.chip("Strix Halo").specs["fp16_dense_TFLOPS"])
glue("strix_oss_min", strix_oss["ratio"].min())
glue("strix_oss_max", strix_oss["ratio"].max())
glue("strix_median", strix["ratio"].median())
glue("n_strix", len(strix))
glue("spark_over_strix", builds["ratio"].min() / strix_oss["ratio"].max())

# %% [markdown]
# ## Strix Halo
#
# AMD's Ryzen AI Max+ 395 has nearly DGX Spark's bandwidth ({glue:text}`strix_bw:.0f` GB/s,
# computed from its memory bus) but a theoretical {glue:text}`strix_fp16:.0f` dense FP16
# TFLOPS in its integrated GPU. Its published runs {cite}`lhl_strix_halo_testing` (pp512
# and tg128, a shorter prompt than the Spark file's) put gpt-oss-120b's gap at
# {glue:text}`strix_oss_min:.1f`x to {glue:text}`strix_oss_max:.1f`x, and the median over
# all {glue:text}`n_strix:d` model and backend pairs at {glue:text}`strix_median:.1f`x. With
# bandwidth this close, equation {eq}`eq-phase-gap` reads the difference as arithmetic: on
# gpt-oss-120b DGX Spark's gap is {glue:text}`spark_over_strix:.1f`x Strix Halo's best, so
# it brings roughly that many times the usable prefill arithmetic (with the caveat of the
# shorter prompt on the AMD side).

# %% [markdown]
# ## Every machine, side by side
#
# The same ratio for every machine in the book's data: DGX Spark and M2 Ultra from the
# benchmark files, Strix Halo, the gpt-oss guide's GPUs and Macs
# {cite}`llamacpp_gpt_oss_15396`, and chapter 1's Llama-2-7B scoreboards. The tests differ
# (pp2048 against tg32 or tg128, pp512 against tg128) and a longer prompt raises the ratio,
# so compare within a shape before across.

# %% tags=["hide-input"]
everyone = phases.all_ratios()
napkin.Figure(
    name="fig-phase-ratio",
    chart=charts.ratio_strip(everyone, essay.claim("spark_gap")),
    caption="DGX Spark has the largest median prefill/decode gap of any family; Apple "
            "Silicon and Strix Halo the smallest. Dashed: the essay's gap.",
    source="llama.cpp benchmark files (DGX Spark, M2 Ultra), lhl/strix-halo-testing, "
           "llama.cpp discussions 15396, 4167, 15013, 15021 and 10879.",
)

# %% tags=["remove-cell"]
med = everyone.groupby("family")["ratio"].median()
glue("med_spark", med["DGX Spark"])
glue("med_gpu", med["Discrete GPU"])
glue("med_apple", med["Apple Silicon"])
glue("med_strix", med["Strix Halo"])
glue("n_everyone", len(everyone))

# %% [markdown]
# Over {glue:text}`n_everyone:d` machine-and-model pairs, the median gap is
# {glue:text}`med_spark:.0f`x on DGX Spark, {glue:text}`med_gpu:.0f`x on discrete GPUs,
# {glue:text}`med_strix:.0f`x on Strix Halo and {glue:text}`med_apple:.0f`x on Apple
# Silicon. Discrete GPUs have both arithmetic and bandwidth, so their gap is large but their
# decode is fast too; DGX Spark has the arithmetic without the bandwidth.

# %% [markdown]
# ## Your machine
#
# The same ratio, measured where this page was built: llama.cpp prefilling and generating
# with a synthetic model (see [Rerun it on your machine](../book/rerun.ipynb)). The
# {doc}`next chapter <03_h100_ridge>` measures this machine's ridge point and sets the two
# side by side.

# %% tags=["nbval-ignore-output"]
live = measure.live(measure.QUICK)
live_ratio = phases.live_ratio(live)
tables.styled(live_ratio.round({"pp_tok_per_s": 1, "tg_tok_per_s": 1, "ratio": 1}),
              "live-ratio", {
    "machine": "Machine", "model": "Model", "protocol": "Test",
    "pp_tok_per_s": "Prefill (tok/s)", "tg_tok_per_s": "Decode (tok/s)", "ratio": "Gap (x)"})

# %% tags=["remove-cell", "nbval-ignore-output"]
if live_ratio.empty:
    glue_markdown("live_sentence", "llama.cpp could not run where this page was built, so "
                  "there is no live point; run the notebook on your machine to add yours.")
else:
    r = live_ratio.iloc[0]
    glue_markdown("live_sentence",
                  f"On the machine that built this page ({r['machine']}, {r['detail']}), "
                  f"llama.cpp prefilled at **{r['pp_tok_per_s']:,.0f} tokens/s** and decoded "
                  f"at **{r['tg_tok_per_s']:,.1f} tokens/s** ({r['protocol']}): a gap of "
                  f"**{r['ratio']:.1f}x**, against the essay's "
                  f"{essay.claim('spark_gap'):.0f}x on DGX Spark.")

# %% [markdown]
# {glue:md}`live_sentence`

# %% tags=["hide-input", "nbval-ignore-output"]
napkin.Figure(
    name="fig-phase-ratio-live",
    chart=charts.ratio_strip(pd.concat([everyone, live_ratio], ignore_index=True)
                             if not live_ratio.empty else everyone, essay.claim("spark_gap"),
                             title="This machine beside every published gap"),
    caption=f"This machine's live prefill/decode gap beside every published one. Live point: "
            f"{measure.who(live)}.",
    source="Live: napkin.measure (llama.cpp on a synthetic model); published: as above.",
    live=True,
    machine=measure.who(live),
)
