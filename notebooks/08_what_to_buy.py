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
# hardest case: a coding agent pasting {glue:text}`agent_prompt:,d`-token files.
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
from napkin import buying, essay, tables
from napkin.figures import buying as charts
from napkin.prose import glue, glue_markdown

presets = buying.presets()
agent, chat, many = presets["coding agent"], presets["chat"], presets["many users"]
fleet = buying.machines()
inputs = buying.machine_table(fleet)
quart = buying.fraction_quartiles().set_index("family")
glue("essay_discount", essay.claim("buying_discount") / 100)
glue("agent_prompt", agent.prompt_tokens)
glue("n_machines", len(fleet))
glue("n_prefill", int((inputs["prefill_runs"] > 0).sum()))
glue("n_dense", int(inputs["dense_TFLOPS"].notna().sum()))
glue("n_priced", int((inputs["priced_configs"] > 0).sum()))
glue("ref_gflop", buying.reference_flops_per_token() / 1e9)
glue("ref_tokens", buying.REFERENCE_TOKENS)
for fam, key in (("Apple Silicon", "apple"), ("GPU (CUDA)", "cuda"), (buying.POOLED, "all")):
    glue(f"q25_{key}", quart.loc[fam, "q25"])
    glue(f"q50_{key}", quart.loc[fam, "q50"])
    glue(f"q75_{key}", quart.loc[fam, "q75"])
    glue(f"runs_{key}", int(quart.loc[fam, "runs"]))

# %% [markdown]
# ## The inputs, traced
#
# The calculator ranks the {glue:text}`n_machines:d` chips in `data/hardware_specs.csv` that
# have both a bandwidth and a memory capacity. Three of their figures need a word.
#
# **Prefill speed is measured, not taken from a spec sheet.** A vendor's dense 16-bit FLOP/s
# is a bound no prefill reaches, and for some machines there is none to take: DGX Spark's
# figures are sparse FP4 and FP32, and the only figures for Apple's chips are a third
# party's derivations, for the older chips. So the first
# token is estimated from the prefill rate each machine reached in published llama.cpp runs
# of the same reference model, Llama-2-7B at Q4_0 with a {glue:text}`ref_tokens:d`-token
# prompt: at {glue:text}`ref_gflop:.1f` GFLOP per prompt token (equation {eq}`eq-buy-ttft`),
# a run's tokens per second become FLOP/s. {glue:text}`n_prefill:d` machines have such runs;
# where there are several (GPU core counts, backends, flash attention on or off), their
# spread is the range. The roofline bound from the vendor's dense 16-bit figure is shown
# beside it for the {glue:text}`n_dense:d` machines that have one, and never stands in for a
# missing measurement.
#
# **Decode is discounted by family.** Published decode runs reach a fraction of the
# bandwidth ceiling: on Apple Silicon a median of {glue:text}`q50_apple:.0%` (quartiles
# {glue:text}`q25_apple:.0%` to {glue:text}`q75_apple:.0%`, {glue:text}`runs_apple:d` runs), on
# CUDA GPUs {glue:text}`q50_cuda:.0%` ({glue:text}`q25_cuda:.0%` to {glue:text}`q75_cuda:.0%`,
# {glue:text}`runs_cuda:d` runs). AMD's chips have no decode runs of their own in chapter 1's
# data and get every run pooled ({glue:text}`q25_all:.0%` to {glue:text}`q75_all:.0%`). The
# essay's {glue:text}`essay_discount:.0%` is more cautious than any of these medians.
#
# **Memory is the largest configuration** for Apple's chips, as shipped for B200, as stated
# otherwise; a price, where a vendor states one, is for the smallest recorded configuration
# that holds the workload ({glue:text}`n_priced:d` machines have a recorded price; no
# datacenter GPU has one, because no vendor states one).

# %%
tables.styled(inputs.assign(
    bw=inputs["bandwidth_GB_per_s"].map("{:,.0f}".format),
    cap=inputs["capacity_GB"].map("{:,.0f}".format) + " (" + inputs["capacity_basis"] + ")",
    dense=inputs["dense_TFLOPS"].map(lambda v: "" if v != v else f"{v:,.0f}"),
    pre=["" if not n else f"{a:,.0f}" if f"{a:,.0f}" == f"{b:,.0f}" else f"{a:,.0f}–{b:,.0f}"
         for a, b, n in zip(inputs["prefill_TFLOPS_low"], inputs["prefill_TFLOPS_high"],
                            inputs["prefill_runs"])]),
    "table-buy-inputs", {"machine": "Machine", "bw": "Bandwidth (GB/s)",
                         "cap": "Memory (GB)", "dense": "Dense 16-bit TFLOP/s (vendor)",
                         "pre": "Prefill TFLOP/s reached (published runs)",
                         "prefill_runs": "Runs", "fraction_basis": "Decode discount from"})

# %% [markdown]
# ## The coding agent
#
# The essay's hardest case: a local coding agent that pastes {glue:text}`agent_prompt:,d`
# tokens of files and gets {glue:text}`agent_output:,d` tokens back, for one user, running
# {glue:text}`agent_model` at {glue:text}`agent_format` (about
# {glue:text}`agent_weights_gb:.0f` GB of weights; with the cache it needs
# {glue:text}`agent_need_gb:.0f` GB). The prompt is the essay's; the answer length and the
# model are this book's choice, the essay's running example at a common local format.

# %% tags=["hide-input"]
ranked = buying.rank(agent)
napkin.Figure(
    name="fig-buy-coding-agent",
    chart=charts.ttft_ranking(
        ranked, "Prefill is the wall: seconds before a coding agent answers",
        f"{agent.model} at {agent.weight_format}, a {agent.prompt_tokens:,}-token prompt; "
        "line: published prefill runs, tick: roofline bound"),
    caption="With a prompt this long, the first token takes from under a minute on the "
            "fastest GPUs to many minutes on Apple's chips and Strix Halo; the roofline "
            "bounds (ticks) sit far to the left of what published runs reach.",
    source="napkin.buying: prefill FLOPs of the prompt over the FLOP/s published llama.cpp "
           "pp512 runs of Llama-2-7B Q4_0 reached (data/apple_silicon_llama2_7b.csv, "
           "gpu_llama2_7b_q4_0.csv, strix_halo_llamacpp.csv); bounds from dense 16-bit "
           "FLOP/s (data/hardware_specs.csv).",
)

# %%
tables.styled(buying.ranking_display(ranked[ranked["fits"]]), "table-buy-coding-agent", {
    "rank": "Rank", "machine": "Machine", "ttft": "First token (s): median run (range)",
    "bound": "Roofline bound (s)", "decode": "Then tokens/s", "memory": "Memory needed",
    "price": "Price", "note": "Not ranked because"})

# %% tags=["remove-cell"]
r = ranked.set_index("machine")
top = ranked[ranked["rank"].notna()]
apple = top[top["family"] == "Apple Silicon"]
glue("agent_output", agent.output_tokens)
glue("agent_model", agent.model.replace("-", " "))
glue("agent_format", agent.weight_format)
glue("agent_weights_gb", r["weights_GB"].iloc[0])
glue("agent_need_gb", r["need_GB"].iloc[0])
first, second = top.iloc[0], top.iloc[1]
glue("first_machine", first["machine"])
glue("first_ttft", first["ttft_mid_s"])
glue("second_machine", second["machine"])
glue("second_ttft", second["ttft_mid_s"])
glue("spark_ttft", r.loc["DGX Spark", "ttft_mid_s"])
glue("spark_rank", int(r.loc["DGX Spark", "rank"]))
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
h = r.loc["H100 SXM"]
glue("h100_ttft", h["ttft_mid_s"])
glue("h100_bound", h["ttft_bound_s"])
glue("h100_reached", h["prefill_TFLOPS_high"] / h["dense_TFLOPS"])
glue("unranked_fit", ", ".join(ranked[ranked["fits"] & ranked["rank"].isna()]["machine"]))
glue("too_small", ", ".join(ranked[~ranked["fits"]]["machine"]))
glue("prefill_share", first["ttft_mid_s"] / (first["ttft_mid_s"] + agent.output_tokens /
                                              first["decode_mid_tok_per_s"]))
glue("apple_prefill_share", best_apple["ttft_mid_s"] / (
    best_apple["ttft_mid_s"] + agent.output_tokens / best_apple["decode_mid_tok_per_s"]))
# what the prose says in words, checked so that it cannot drift from the numbers
above = top[top["rank"] < best_apple["rank"]]
assert (above["vendor"] == "NVIDIA").all() and len(above) > 0
assert (ranked[ranked["fits"] & ranked["rank"].isna()]["ttft_bound_s"].notna()).all()

# %% [markdown]
# The {glue:text}`first_machine` answers first, after about {glue:text}`first_ttft:.0f` s,
# then the {glue:text}`second_machine` ({glue:text}`second_ttft:.0f` s). DGX Spark, whose
# petaFLOP the essay doubts, ranks {glue:text}`spark_rank:d`: {glue:text}`spark_ttft:.0f` s.
# The best Apple chip, the {glue:text}`apple_best`, ranks {glue:text}`apple_best_rank:d` and
# needs {glue:text}`apple_best_ttft:.0f` s, about {glue:text}`apple_best_min:.0f` minutes,
# before it writes a word; it then writes the whole answer at about
# {glue:text}`apple_best_decode:.0f` tokens/s in {glue:text}`apple_answer_s:.0f` s. The wait
# for the first token is {glue:text}`apple_prefill_share:.0%` of the {glue:text}`apple_best`'s
# time for the whole request, against {glue:text}`prefill_share:.0%` on the
# {glue:text}`first_machine`: prefill is the wall the essay says it is, and the wall is highest
# on the machines slowest at it. Every machine that ranks above the best Apple chip is an
# NVIDIA GPU; below it come the other Apple chips and {glue:text}`non_apple_after`. Strix
# Halo's published runs spread widely ({glue:text}`strix_fast:.0f` to
# {glue:text}`strix_slow:,.0f` s, depending on the backend), so it sits among Apple's chips
# rather than clearly below or above them.
#
# The bounds show how far published prefill is from the vendor's arithmetic: on the H100 the
# dense 16-bit roofline allows {glue:text}`h100_bound:.0f` s, and llama.cpp's best published
# run reached {glue:text}`h100_reached:.0%` of that FLOP/s figure, hence
# {glue:text}`h100_ttft:.0f` s. llama.cpp is not what datacenter GPUs usually run, and a
# serving stack built for them may come much closer to the bound; but the datacenter GPUs
# without a published llama.cpp run ({glue:text}`unranked_fit`) are listed with their bounds
# and not ranked: there is nothing measured to rank them by. The model does not fit at all
# on the {glue:text}`too_small`.
#
# ## Chat: one stream, short prompts
#
# One user, {glue:text}`chat_prompt:,d`-token prompts and {glue:text}`chat_output:,d`-token
# answers with the same model: ranked by decode speed, where bandwidth over the bytes read
# per token is the headline.

# %%
ranked_chat = buying.rank(chat)
tables.styled(buying.ranking_display(ranked_chat[ranked_chat["fits"]]), "table-buy-chat", {
    "rank": "Rank", "machine": "Machine", "decode": "Tokens/s: median (quartiles)",
    "ttft": "First token (s)", "memory": "Memory needed", "price": "Price"})

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
assert rc.loc["DGX Spark", "ttft_mid_s"] < local["ttft_mid_s"]
assert rc.loc["DGX Spark", "decode_mid_tok_per_s"] < local["decode_mid_tok_per_s"]
assert np.isnan(c.iloc[0]["price"])

# %% [markdown]
# The ranking is bandwidth, discounted: the {glue:text}`chat_first` leads at about
# {glue:text}`chat_first_tps:.0f` tokens/s. Among machines on a desk, the
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
# model at {glue:text}`many_format` ({glue:text}`many_weights_gb:.0f` GB of weights). Now
# memory decides first: the weights and every user's cache
# ({glue:text}`many_kv_gb:.2f` GB each, {glue:text}`many_need_gb:.0f` GB in all) must fit.

# %%
ranked_many = buying.rank(many)
tables.styled(buying.ranking_display(ranked_many), "table-buy-many-users", {
    "rank": "Rank", "machine": "Machine", "per_user": "Tokens/s per user: median (quartiles)",
    "memory": "Memory needed", "users": "Users that fit", "note": "Not ranked because"})

# %% tags=["remove-cell"]
m_ = ranked_many[ranked_many["rank"].notna()]
rm = ranked_many.set_index("machine")
glue("many_users", many.users)
glue("many_prompt", many.prompt_tokens)
glue("many_output", many.output_tokens)
glue("many_format", many.weight_format)
glue("many_weights_gb", rm["weights_GB"].iloc[0])
glue("many_kv_gb", rm["kv_per_user_GB"].iloc[0])
glue("many_need_gb", rm["need_GB"].iloc[0])
glue("many_n_fit", len(m_))
glue("many_first", m_.iloc[0]["machine"])
glue("many_first_tps", m_.iloc[0]["per_user_mid_tok_per_s"])
glue("many_first_total", many.users * m_.iloc[0]["per_user_mid_tok_per_s"])
glue("h100_users", int(rm.loc["H100 SXM", "max_users"]))
glue("h100_cap", rm.loc["H100 SXM", "capacity_GB"])
desk = m_[(m_["vendor"] == "Apple") | m_["machine"].isin(["DGX Spark", "Strix Halo"])].iloc[0]
glue("many_desk", desk["machine"])
glue("many_desk_tps", desk["per_user_mid_tok_per_s"])
glue("many_desk_users", int(desk["max_users"]))
assert m_.head(4)["price"].isna().all() and "H100 SXM" not in set(m_["machine"])
assert (m_.head(4)["compute_basis"] != "published prefill runs").all()

# %% [markdown]
# {glue:text}`many_n_fit:d` machines hold it. The H100 is not among them: its
# {glue:text}`h100_cap:.0f` GB hold the weights and the caches of only
# {glue:text}`h100_users:d` such users, the capacity wall of chapter 4. The
# {glue:text}`many_first` leads, at about {glue:text}`many_first_tps:.0f` tokens/s per user,
# {glue:text}`many_first_total:,.0f` in all: one read of the weights now serves every user.
# The large unified memories on a desk hold the batch too, but compute and bandwidth run out:
# the {glue:text}`many_desk` could hold {glue:text}`many_desk_users:d` users and gives each about
# {glue:text}`many_desk_tps:.1f` tokens/s. The comparison flatters the datacenter parts: with
# no published llama.cpp run, their step is costed at their vendors' dense FLOP/s, a bound,
# while the desk machines are costed at the rate their published runs reached. The gap is
# still the essay's "someone else's batch": at this concurrency the machines that serve well
# are the ones nobody prices in public.
#
# ## The calculator
#
# Choose one of the three workloads, or "custom" and set the sliders; choose what to rank by.
# Every number is recomputed in the page from the same inputs, with the same arithmetic as
# the tables above (`napkin.buying.js_expressions`, tested against `napkin.buying.estimate`).
# Hover over a machine for the figures behind it.

# %% tags=["hide-input"]
shown = ["Llama-3.3-70B", "Llama-3.1-8B", "Qwen2.5-72B-Instruct", "gpt-oss-120b",
         "gpt-oss-20b", "Mistral-7B-v0.1"]
napkin.Figure(
    name="fig-buy-calculator",
    chart=charts.calculator(buying.calculator_rows(shown), presets,
                            ["Q4_K", "Q4_0", "MXFP4", "Q8_0", "FP8", "F16"], shown),
    caption="The ranking for any prompt, answer length, number of users, model and weight "
            "format. Dots are the middle estimate, lines the range from published runs.",
    source="napkin.buying over data/hardware_specs.csv, the llama.cpp runs of chapters 1 "
           "and 2, data/models and data/machine_prices.csv.",
)

# %% [markdown]
# ## Where this stops being trustworthy
#
# - **One reference run stands for all prefill.** A machine's prefill rate comes from a
#   short prompt of a small model at one format. Long prompts run slower (attention grows with
#   the prompt, and chapter 2 shows prefill falling with depth), other formats and larger
#   models can run faster or slower, and newer llama.cpp builds change the numbers. The ranking
#   is more trustworthy than the seconds.
# - **Machines without a published run are not ranked for the first token.** The datacenter
#   GPUs have bounds only, and the one with a published run (the H100) is measured with
#   llama.cpp, which is not the software such GPUs usually serve with.
# - **The decode discount is a family's, not the machine's.** A machine's own runs can sit
#   anywhere in its family's range, and AMD's chips are discounted by every run pooled.
# - **Memory is taken whole.** The operating system, the runtime and its buffers take some of
#   it; a machine near the limit may not fit what the table says fits.
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
         for _, row in top.iterrows()]
glue_markdown("closing_note", "\n".join([
    f"The coding-agent preset ({agent.prompt_tokens:,}-token prompt, {agent.output_tokens:,}-"
    f"token answer, {agent.model} at {agent.weight_format}, one user), ranked by time to the "
    "first token estimated from published llama.cpp prefill runs (median run, range in "
    "brackets):", "", *lines, "",
    "Not ranked, for want of a published prefill run, though they hold the model: "
    f"{', '.join(ranked[ranked['fits'] & ranked['rank'].isna()]['machine'])}. "
    f"Too small for it: {', '.join(ranked[~ranked['fits']]['machine'])}.",
]))
