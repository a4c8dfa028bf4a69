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
# # What a token costs, in dollars and joules

# %% [markdown]
# ```{admonition} In one minute
# :class: tip
# - At a service level a chat user accepts (each user's answer streaming at
#   {glue:text}`lvl_speed:.1f` tokens/s or faster, the first token within
#   {glue:text}`lvl_first:.0f` s) {glue:text}`head_model` at 8 bits costs
#   {glue:text}`lvl_best_usd:.2f` dollars per million output tokens on
#   {glue:text}`lvl_best_way` serving {glue:text}`lvl_best_users:d` users, the slowest
#   user's whole reply in {glue:text}`lvl_best_reply:.0f` s, at the median on-demand quote
#   ({glue:text}`lvl_best_low:.2f`
#   to {glue:text}`lvl_best_high:.2f` within the calibrated model's 90th-percentile factor
#   for MLPerf's Server scenario), against a median blended API price (output plus input
#   tokens) of {glue:text}`api_mid:.2f` ([the table](#sec-cost-service)). An MI300X, priced
#   beside the table on thinner quotes and with the wider band of a pair the model has not
#   seen, would cost {glue:text}`mi_usd:.2f` ({glue:text}`mi_low:.2f` to
#   {glue:text}`mi_high:.2f`).
# - Of the desk machines, {glue:md}`lvl_desk_ok` (bought and used {glue:text}`hours:.0f` h
#   a day for {glue:text}`life:.0f` years; a graphics card whose host computer is not
#   priced); the others miss the level ([why](#sec-cost-service)).
# - One user at a time, every way of getting a token (a machine, and whether it is bought
#   or rented) costs more than the dearest API provider's blended
#   price. The dearest single stream bought or rented on demand is {glue:text}`one_dearest`'s
#   ({glue:text}`one_dearest_usd:.0f` dollars per million, bought and used
#   {glue:text}`hours:.0f` h a day for {glue:text}`life:.0f` years), and a stream rented on
#   demand on an H100, H200 or B200 ({glue:text}`rent1_lo:.0f` to {glue:text}`rent1_hi:.0f`)
#   costs more than one on {glue:md}`one_below_rent`, {glue:md}`one_below_ties`
#   ([one user](#sec-cost-one-user)).
# - Counted at the same boundary (whole system at the wall, both upper bounds; for the
#   server its GPUs' measured power, the rest of the server at its rating and the data
#   center's PUE), a token of one local stream of a 70B model at
#   {glue:text}`desk_format` takes some {glue:text}`dc_ratio_q8:.0f` to
#   {glue:text}`dc_ratio_q8_hi:.0f` times the energy of one from a measured
#   {glue:text}`dc_gpus:d`-GPU H100 server running BF16 at a batch of
#   {glue:text}`dc_batch:.0f`; desk runs measured with a model quantized below
#   {glue:text}`desk_format` give {glue:text}`dc_ratio:.0f` to {glue:text}`dc_ratio_hi:.0f` times. Neither pair has the
#   same weights on both sides ([energy](#sec-cost-energy)).
# - The essay's "hundreds of users" holds: measured servers reach the APIs' median
#   *output* price ({glue:text}`out_median:.2f` dollars per million, input not counted) from
#   about {glue:text}`be_h100:.0f` sequences at once on H100 GPUs and
#   {glue:text}`be_b200:.0f` on B200 GPUs ([the measured servers](#sec-cost-essay-sentence)).
# ```
#
# **What this chapter does.** The essay ends on money. A provider amortises the weight read
# "across hundreds of users, which is how per-token prices land where they do", and the last
# row of its buying table says that cost per token is someone else's batch. This chapter
# prices a token every way a reader can get one. A *way* is a machine and how it is paid
# for: a desk machine bought outright, a datacenter GPU rented by the hour (on demand) or on
# a contract that pays every hour of a year, or an API's price per token. The prices are
# sourced and dated, the throughputs come from the book's own models (chapter 9's
# calibrated step model for the rented GPUs, chapter 8's estimate for the desk machines),
# and the energy comes from measured or rated power, with the energy model checked against
# ML.ENERGY's measured GPUs.
#
# A way that serves more users at once makes each token cheaper and each stream slower, so
# a price means little without the speed it was bought at. The chapter's headline is
# therefore a *service level*: each way serves as many users as it can while each of them
# still sees its answer stream at reading speed and its first token within the time that
# keeps a user's attention. The workload is {glue:text}`head_model` at 8 bits
# ({glue:text}`head_format` on a rented GPU, llama.cpp's {glue:text}`desk_format` on a
# desk), a {glue:text}`head_prompt:,d`-token prompt and a
# {glue:text}`head_output:,d`-token answer, a bought machine used {glue:text}`hours:.0f`
# hours a day for {glue:text}`life:.0f` years. At that level a million output tokens cost
# {glue:md}`lvl_list`; the API's median blended price is {glue:text}`api_mid:.2f` USD.
#
# **Why it matters.** People who cite this book in a talk are asked exactly this: is a desk
# machine cheaper per token than renting an H100 or paying an API, and at what use does it
# break even? The answer depends less on the hardware than on how many users share each
# read of the weights at a speed they accept, and it moves with prices that change within
# weeks. So every price here carries its date, the chapter says how old they are when the
# book is built, and the calculator at the end lets a reader put in their own service
# level, hours, electricity and years.

# %% tags=["hide-input"]
import datetime as dt

import pandas as pd

import napkin
from napkin import buying, catalog, costs, decide, errata, tables
from napkin.costs import chapter, energy, page, power, prices, service
from napkin.costs import figures as charts
from napkin.prose import count, glue, glue_all, glue_markdown
from napkin.predict import calibration
from napkin.validation.report import error_band

w = chapter.headline()
usage = costs.Usage().resolved()
level = service.chat()
glue_all({
    "head_model": w.model.replace("-", " "),
    "head_format": w.weight_format,
    "desk_format": costs.desk_format(w.weight_format),
    "head_prompt": w.prompt_tokens,
    "head_output": w.output_tokens,
    "hours": usage.hours_per_day,
    "life": usage.life_years,
    "pro_name": "RTX PRO 6000 Blackwell",
    "lvl_speed": level.tokens_per_s_per_user,
    "lvl_first": level.first_token_s,
})

one = costs.cost_table(w, 1, usage)
served = costs.cost_table(w, level, usage)
most = costs.cost_table(w, None, usage)
o1, ol, om = (t.set_index("option") for t in (one, served, most))
api_head = prices.api_price(w.model, w.prompt_tokens, w.output_tokens)
out_price = prices.api_quotes(w.model)["output_usd_per_mtok"]
glue_all({
    "api_mid": api_head["median"],
    "api_low": api_head["low"],
    "api_high": api_head["high"],
    "out_median": float(out_price.median()),
})

# the headline: the cheapest way at the service level, and the desk machines' verdicts
lvl_ok = served[served["fits"] & (served["kind"] != "api")]
best = lvl_ok.iloc[0]
glue_all({
    "lvl_best_way": chapter.way_name(best),
    "lvl_best_usd": best["usd_per_mtok"],
    "lvl_best_low": best["usd_per_mtok_low"],
    "lvl_best_high": best["usd_per_mtok_high"],
    "lvl_best_users": int(best["users"]),
    "lvl_best_reply": best["latency_s"],
    "lvl_best_median": best["band_median"],
    "lvl_best_p90": best["band_p90"],
})
desk_ok = lvl_ok[lvl_ok["kind"] == "owned"]
assert len(desk_ok) >= 1 and desk_ok["price_scope"].str.startswith("graphics card").all()
glue_markdown("lvl_desk_ok", ("only " if len(desk_ok) == 1 else "") + "; ".join(
    f"{chapter.way_name(r)} serves it, at {r.usd_per_mtok:.2f} dollars for "
    f"{count(int(r.users), 'user')}, each at {r.per_user_tokens_per_s:.1f} tokens a second, the "
    f"slowest user's whole reply in {r.latency_s:,.0f} s" for r in desk_ok.itertuples()))
desk_miss = served[(served["kind"] == "owned") & ~served["fits"] &
                   served["reason"].str.startswith("misses")]["option"]
glue_markdown("lvl_desk_miss", "; ".join(
    f"the {o} streams {o1.loc[o, 'per_user_tokens_per_s']:.1f} tokens a second"
    + (" (too slow)" if o1.loc[o, "per_user_tokens_per_s"] < level.tokens_per_s_per_user
       else "") + f" and its first token comes in {o1.loc[o, 'first_token_s']:.1f} s"
    + (" (too late)" if o1.loc[o, "first_token_s"] > level.first_token_s else "")
    for o in desk_miss))
n_below = int((lvl_ok["usd_per_mtok"] < api_head["median"]).sum())
# a graphics card is priced without its host computer: what a host may cost before the card
# no longer beats the API's median (the host's own electricity aside)
card = desk_ok.iloc[0]
assert card["usd_per_mtok"] < api_head["median"]  # "it stays below that median only while"
host_room = costs.breakeven_price_usd(card["tokens_per_s"], card["power_W"],
                                      api_head["median"], usage) - card["price_usd"]
glue_all({
    "card_name": card["option"],
    "card_host_room": host_room,
})
glue("n_lvl_ways", len(lvl_ok))
glue_markdown("n_lvl_below_api", "all of them" if n_below == len(lvl_ok) else f"{n_below}")
glue_markdown("lvl_list", chapter.priced_list(served, reply=True))
assert best["kind"] == "rented" and best["usd_per_mtok"] < api_head["median"]

# one user at a time: what the table says about single streams
singles = one[one["fits"] & (one["kind"] != "api")]
glue_markdown("one_list", chapter.priced_list(one, reply=True))
dearest = singles.iloc[-1] if singles.iloc[-1]["kind"] != "committed" else \
    singles[singles["kind"] != "committed"].iloc[-1]
glue_all({
    "one_dearest": chapter.way_name(dearest),
    "one_dearest_usd": dearest["usd_per_mtok"],
})
rent1 = singles[singles["kind"] == "rented"]
desk1 = singles[singles["kind"] == "owned"]
below_rent = desk1[desk1["usd_per_mtok"] < rent1["usd_per_mtok"].min()]
glue_markdown("one_below_rent", chapter.join([chapter.way_name(r)[4:] for r in
                                              below_rent.itertuples()]).replace(" and ", " or "))
cheapest_rent = rent1.loc[rent1["usd_per_mtok"].idxmin()]
tied = below_rent[below_rent["usd_per_mtok_high"] >= cheapest_rent["usd_per_mtok_low"]]
glue_markdown("one_below_ties", f"by the middle estimates; {count(len(tied), 'of them', 'of them')}"
              f" overlap{'s' if len(tied) == 1 else ''} the cheapest rented stream's range, a tie "
              "by this chapter's rule" if len(tied) else "at every end of the ranges")
glue_all({
    "rent1_lo": rent1["usd_per_mtok"].min(),
    "rent1_hi": rent1["usd_per_mtok"].max(),
})
assert (singles["usd_per_mtok"] > api_head["high"]).all() and len(below_rent) >= 1
assert dearest["kind"] == "owned"

# the in-one-minute box's energy and essay findings are computed where their sections are;
# the break-even and the measured servers come first here so the box can quote them
be_one = costs.breakeven_table(w, 1, usage, table=one)
be_lvl = costs.breakeven_table(w, level, usage, table=served)

# %% tags=["hide-input"]
local = power.local_stream_energy()
dc_runs = energy.at_the_wall(energy.measurements().query(
    "model == 'Llama-3.3-70B' and gpu == 'H100' and task == 'LM Arena chat'"))
dc = dc_runs.iloc[(dc_runs["mean_batch"] - 256).abs().argmin()]
glue_all({
    "ls_n": len(local),
    "ls_lo": local["joules_per_token"].min(),
    "ls_hi": local["joules_per_token"].max(),
    "dc_j": dc["energy_J_per_token"],
    "dc_wall_j": dc["wall_J_per_token"],
    "dc_batch": dc["mean_batch"],
    "dc_gpus": int(dc["n_gpus"]),
    "dc_ratio_gpu": local["joules_per_token"].min() / dc["energy_J_per_token"],
    "dc_ratio": local["joules_per_token"].min() / dc["wall_J_per_token"],
    "dc_ratio_hi": local["joules_per_token"].max() / dc["wall_J_per_token"],
})
# the same desk machines at the chapter's 8 bits: their measured power over the rate the
# one-user table estimates (set below the measured runs, whose weights had fewer bits)
desk8 = o1.loc[local["machine"], "joules_per_token"]
glue_all({
    "dc_ratio_q8": desk8.min() / dc["wall_J_per_token"],
    "dc_ratio_q8_hi": desk8.max() / dc["wall_J_per_token"],
    "desk8_lo": desk8.min(),
    "desk8_hi": desk8.max(),
})
assert (dc_runs["weights"] == "bfloat16").all()
# the fastest measured desk run bounds its bits per weight: at most its bandwidth a second
fast = local.loc[local["tok_per_s"].idxmax()]
fast_bw = buying.machine(fast["machine"]).bandwidth_bytes_per_s
fast_bits = 8 * fast_bw / fast["tok_per_s"] / catalog.params("Llama-3.1-70B")
assert fast_bits < 8, "a measured desk run could be 8-bit: revisit the energy comparison"
glue_all({
    "fast_machine": fast["machine"],
    "fast_rate": fast["tok_per_s"],
    "fast_bw_GBps": fast_bw / 1e9,
    "fast_bits": fast_bits,
})
runs = chapter.measured_serving()
crossing = chapter.price_crossing(runs, float(out_price.median()))
glue_all({
    "be_h100": crossing.loc["4 x H100", "batch"],
    "be_b200": crossing.loc["2 x B200", "batch"],
    "be_h100_above": crossing.loc["4 x H100", "above"],
    "be_h100_below": crossing.loc["4 x H100", "below"],
    "be_b200_above": crossing.loc["2 x B200", "above"],
    "be_b200_below": crossing.loc["2 x B200", "below"],
})
# the same crossing at the blended price a provider is paid (input tokens counted too)
blended = chapter.price_crossing(runs, float(api_head["median"]))
glue_all({
    "be_h100_blend": blended.loc["4 x H100", "batch"],
    "be_b200_blend": blended.loc["2 x B200", "batch"],
})

# %% tags=["hide-input"]
rent = prices.rental_price("H100 SXM")
glue_all({
    "n_rent_rows": len(tables.load("gpu_rental_prices")),
    "h100_low": rent["low"],
    "h100_high": rent["high"],
    "h100_n": rent["quotes"],
    "h100_median": rent["median"],
})
contract = prices.committed_price("H100 SXM")
glue_all({
    "h100_contract": contract["price"],
    "h100_contract_date": contract["day"].isoformat()[:7],
    "n_contracts": count(len(prices.committed_quotes()), "such rate"),
    "in_weight": w.prompt_tokens / w.output_tokens,
})
listed = prices.list_prices()
new = listed[listed["confidence"] == "low"]
glue_all({
    "n_new_prices": len(new),
    "pro_price": listed[listed["chip"] == "RTX PRO 6000 Blackwell"]["price"].iloc[0],
})
m3 = listed[listed["chip"] == "M3 Ultra"]
assert len(m3) == 1
glue("m3_gb", m3["memory_GiB"].iloc[0])
elec = prices.electricity()
glue_all({
    "elec": elec["usd_per_kWh"],
    "elec_period": elec["period"],
})
elec_lo, elec_hi = prices.electricity_range()
glue_all({
    "elec_lo": elec_lo,
    "elec_hi": elec_hi,
})

# %% [markdown]
# ## The prices, and how old they are
#
# Four kinds of price, each curated into `data/` with its source and the date it was read
# (the tables' README sections say how):
#
# - **Renting a GPU** (`data/gpu_rental_prices.csv`): on-demand prices per GPU-hour from
#   cloud and GPU providers, {glue:text}`n_rent_rows:d` readings. A provider read twice
#   counts once, at its later reading; the chapter uses the median of the providers' latest
#   quotes, and the cheapest and the dearest beside it. The quotes for an H100 SXM run from
#   {glue:text}`h100_low:.2f` to {glue:text}`h100_high:.2f` dollars an hour
#   ({glue:text}`h100_n:d` providers, median {glue:text}`h100_median:.2f`): a hyperscaler's
#   instance that comes with a host costs several times a GPU marketplace's. A buyer who
#   can use a GPU every hour can instead sign a contract that pays every hour of a year,
#   used or not: the table holds {glue:text}`n_contracts`, an index of one-year
#   H100 contracts at GPU clouds at {glue:text}`h100_contract:.2f` dollars per GPU-hour
#   ({glue:text}`h100_contract_date`, from a secondary report of SemiAnalysis' data, which
#   does not name the H100's variant: the chapter prices it as the SXM part, which GPU
#   clouds' 8-GPU servers use). No contract rate for an H200 or a B200 is recorded.
# - **An API** (`data/api_prices.csv`): each provider's price per million input and output
#   tokens. The chapter names two prices and never sets them side by side unnamed: the
#   *output price*, what a provider charges per million tokens it writes, and the *blended
#   price* of a request, per million output tokens, which adds the input tokens weighted by
#   the prompt's share; for the chapter's chat request that is the output price plus
#   {glue:text}`in_weight:.0f` times the input price. Superseded prices (a model a provider
#   has since replaced) are kept in the table and left out of the medians.
# - **Buying a desk machine**: chapter 8's vendor prices (`data/machine_prices.csv`),
#   extended with {glue:text}`n_new_prices:d` rows this chapter needed, each from a single
#   secondary page and marked `low` confidence: the {glue:text}`pro_name` card
#   ({glue:text}`pro_price:,.0f` dollars) and an RTX 4090 card. A graphics card's price buys
#   the card alone: the computer it needs is not priced, so its cost per token is a lower
#   bound. A Mac is priced in its cheapest recorded configuration, the M3 Ultra in its
#   {glue:text}`m3_gb:.0f` GB one; a larger one, whose price no source here states in full,
#   is not priced.
# - **Electricity**: the U.S. residential average, {glue:text}`elec:.3f` dollars per kWh
#   ({glue:text}`elec_period`, EIA's Electric Power Monthly {cite}`eia_epm_table_5_6_a`,
#   read in a copy that quotes it), with regional averages from
#   {glue:text}`elec_lo:.3f` to {glue:text}`elec_hi:.3f` as the calculator's range.
#
# A GPU rented on demand includes its electricity and its host, and is paid only for the
# hours it is used; one on a contract, and a bought machine, cost the same whether they run
# or not, so their cost per token depends on how many hours a day they work
# ({glue:text}`hours:.0f` by default, a working day) and, for a bought machine, how many
# years it lasts ({glue:text}`life:.0f`). Both are the book's choices, not sourced figures,
# and both are sliders in the calculator. A bought machine pays its own electricity.

# %% tags=["hide-input"]
tables.styled(chapter.rental_display(), "table-cost-rental", {
    "chip": "GPU", "median": "On demand, median (USD per GPU-hour)", "quotes": "Providers",
    "range": "Cheapest–dearest", "dates": "Read",
    "committed": "One-year contract (USD per GPU-hour)"})

# %% tags=["hide-input"]
tables.styled(chapter.api_display(w.prompt_tokens, w.output_tokens), "table-cost-api", {
    "model": "Model",
    "median": f"Blended price, median (USD per million output tokens: output + "
              f"{w.prompt_tokens / w.output_tokens:.0f} x input)",
    "range": "Blended, cheapest–dearest", "output": "Output price, median (input not counted)",
    "providers": "Providers", "dates": "Read"})

# %% tags=["hide-input"]
tables.styled(chapter.list_price_display(costs.DESK), "table-cost-list-prices", {
    "machine": "Machine", "price": "USD", "configuration": "Configuration", "date": "Date",
    "kind": "Price", "scope": "What it buys", "confidence": "Confidence"})

# %% tags=["hide-input"]
when = prices.price_dates()
glue_all({
    "dates_from": when["day"].min().isoformat(),
    "dates_to": when["day"].max().isoformat(),
})

# %% [markdown]
# These prices were read or announced between {glue:text}`dates_from` and
# {glue:text}`dates_to`, and they move within weeks: one provider in the table raised its
# H100 price between two readings weeks apart. On the day this page was built:

# %% tags=["hide-input", "nbval-ignore-output"]
live_age = prices.age_days(dt.date.today(), when)
glue_markdown("live_price_age", "; ".join(
    f"the {r.kind} prices are {r.newest:,d} to {r.oldest:,d} days old ({r.quotes} quotes)"
    if r.newest != r.oldest else f"the {r.kind} price is {r.newest:,d} days old"
    for r in live_age.itertuples()) + f" (built {dt.date.today().isoformat()}).")

# %% tags=["hide-input"]
# the table's rented chips were all seen by the fit with this model (the MI300X, beside it,
# was not): their rows carry the "seen" bands
(case,) = {costs.throughput.band_case(c, w.model) for c in costs.throughput.RENTED}
bands = {s: error_band(s, case) for s in ("static", "server", "offline")}
for s, b in bands.items():
    glue(f"band_{s}_median", b["median"])
    glue(f"band_{s}_p90", b["p90"])
new_server = error_band("server", "new")
glue_all({
    "band_server_new_median": new_server["median"],
    "band_server_new_p90": new_server["p90"],
})
seen_via = napkin.validation.seen_in(costs.throughput.RENTED, w.model)
assert set(seen_via["stack"]) <= {"published/NVIDIA/TensorRT-LLM"}  # "vendors' tables" below
glue_markdown("seen_via", "the vendor's own tables (" + chapter.join(
    f"{n} rows of {s}" for s, n in seen_via["source"].value_counts().items()) + ")")
glue_all({
    "tp_sizes": chapter.join(map(str, costs.throughput.TP_SIZES), article="").replace(
    " and ", " or "),
    "q8_bits": napkin.models.bits_per_weight("Q8_0"),
    "fp8_bits": napkin.models.bits_per_weight("FP8"),
})
spark_m = napkin.buying.machine("DGX Spark")
glue_all({
    "spark_usable": spark_m.usable_bytes / napkin.units.GiB,
    "spark_cap": spark_m.capacity_bytes / napkin.units.GiB,
})
strix_m = napkin.buying.machine("Strix Halo")
glue("strix_usable", strix_m.usable_bytes / napkin.units.GiB)
m3_usable = [p[1] for p in napkin.buying.machine("M3 Ultra").prices][0]
glue_all({
    "m3_usable": m3_usable / napkin.units.GiB,
    "m3_users_q8": int(om.loc["M3 Ultra", "users"]),
})
node = power.node("H100 SXM")
facility = power.pue()
glue_all({
    "node_kw": node["server_W"] / 1000,
    "node_gpu_kw": node["gpus"] * node["gpu_W"] / 1000,
    "node_per_gpu": node["power_W"],
    "node_typ_lo": node["typical_W"][0] * node["gpus"] / 1000,
    "node_typ_hi": node["typical_W"][1] * node["gpus"] / 1000,
    "pue": facility["pue"],
    "pue_period": facility["period"],
})
uptime_own = power.pue(year=int(facility["period"]) - 1)
glue_all({
    "pue_own": uptime_own["pue"],
    "pue_own_period": uptime_own["period"],
    "pue_lo": power.pue_range()[0],
    "b200_node_kw": power.node("B200")["server_W"] / 1000,
})

# %% [markdown]
# {glue:md}`live_price_age`
#
# ## The model
#
# A way of getting tokens makes $T$ output tokens per second for the workload. GPUs rented
# on demand, $n$ of them at $p$ dollars per GPU-hour each, cost
#
# ```{math}
# :label: eq-cost-rented
# C_{\text{rented}} = \frac{n\,p}{3600\;T} \times 10^{6}
# \quad \text{dollars per million output tokens;}
# ```
#
# on a contract at $p_c$ dollars per GPU-hour, paid for every hour of a day of which $h$
# are used,
#
# ```{math}
# :label: eq-cost-committed
# C_{\text{contract}} = \frac{24}{h}\,\frac{n\,p_c}{3600\;T} \times 10^{6}.
# ```
#
# A machine bought for $P$ dollars, used $h$ hours a day for $L$ years, drawing $W$ watts
# while it generates, with electricity at $e$ dollars per kWh, costs
#
# ```{math}
# :label: eq-cost-owned
# C_{\text{owned}} = \left(\frac{P}{365\,L\,h \cdot 3600} + \frac{W e}{3.6 \times 10^{6}}\right)
# \frac{10^{6}}{T}
# ```
#
# (its price spread over every second it works, plus its electricity). An API quotes
# $p_{\text{in}}$ and $p_{\text{out}}$ per million input and output tokens; a request of
# $L_{\text{in}}$ tokens in and $L_{\text{out}}$ out costs, per million output tokens, the
# blended price
#
# ```{math}
# :label: eq-cost-api
# C_{\text{API}} = p_{\text{out}} + p_{\text{in}} \frac{L_{\text{in}}}{L_{\text{out}}}.
# ```
#
# Energy per output token is the draw over the rate:
#
# ```{math}
# :label: eq-energy
# E = \frac{W}{T} = \frac{n\,W_{\text{GPU}}\; t_{\text{step}}(B)}{B}
# ```
#
# where the second form is one decode step of $B$ sequences on $n$ GPUs, each making one
# token. Owning beats a reference price $C_{\text{ref}}$ (renting on demand, or the API)
# above
#
# ```{math}
# :label: eq-breakeven
# h^{*} = \frac{P}{365\,L \cdot 3600\,\left(T\,C_{\text{ref}} / 10^{6} - W e / 3.6 \times
# 10^{6}\right)}
# ```
#
# hours a day: the price over what each second of use saves. Where the bracket is not
# positive (the electricity alone costs more per token than the reference), or $h^{*}$ is
# more than a day, owning never breaks even. Against a contract there is no such threshold:
# both are paid whether used or not, so both cost less per token the more hours they work,
# and the chapter compares them at the same hours. Each formula is written once, as an
# expression the library evaluates and the page's calculator runs unchanged:
#
# ```{literalinclude} ../lib/napkin/costs/model.py
# :language: python
# :start-after: "DEFAULT_LIFE_YEARS = "
# :end-before: "_NAME ="
# ```
#
# **Where $T$ comes from, and how wrong it may be.** For rented GPUs, the calibrated step
# model of chapter 9 (`napkin.predict`), on an engine of {glue:text}`tp_sizes` GPUs in
# tensor parallel, whichever makes a token cheapest, at {glue:text}`head_format`. Each
# rented row carries the cross-validated band of its case, on chips and models the fit has
# seen, and the tables say which: one user's requests, one after another, are Argonne's
# static batches of one (the model within x{glue:text}`band_static_median:.2f` for half the
# rows and x{glue:text}`band_static_p90:.2f` for nine in ten); users held to a service
# level arrive at random under latency limits, MLPerf's Server scenario
# (x{glue:text}`band_server_median:.2f` and x{glue:text}`band_server_p90:.2f`); as many
# users as fit keep an engine busy, MLPerf's Offline (x{glue:text}`band_offline_median:.2f`
# and x{glue:text}`band_offline_p90:.2f`). A row's range is its 90th-percentile factor
# either way. The fit has seen the rented chips with this model only in {glue:md}`seen_via`,
# the group of engines' and vendors' tables where it errs most (chapter 9), and the bands
# come from rows of other models too; on chips and models it had not seen, the Server band is
# x{glue:text}`band_server_new_median:.2f` for half the rows and
# x{glue:text}`band_server_new_p90:.2f` for nine in ten. For a desk machine, chapter 8's estimate: one decode step of all users
# costed on the roofline and discounted by the fraction of the bandwidth ceiling that
# published runs of the same family reach, the first token from the prefill rates those
# runs reached, its range chapter 8's (the quartiles of the decode discount, the range of
# the prefill runs). Here each request's prompt is also counted in the time, since a desk
# machine prefills one prompt at a time and decodes while it does not:
#
# ```{math}
# :label: eq-cost-desk
# T_{\text{desk}} = \frac{U\,L_{\text{out}}}{U\,t_{\text{first}} + L_{\text{out}} / s}
# ```
#
# for $U$ users each decoding at $s$ tokens per second once their first token, which took
# $t_{\text{first}}$, is out:
#
# ```{literalinclude} ../lib/napkin/costs/throughput.py
# :language: python
# :pyobject: desk_tokens_per_s
# ```
#
# **What a desk machine runs.** llama.cpp's 8-bit format is Q8_0: blocks of 8-bit weights,
# each block with a 16-bit scale, {glue:text}`q8_bits:.1f` bits per weight where a serving
# engine's FP8 is {glue:text}`fp8_bits:.0f`, so a desk machine is priced at Q8_0 and a rented
# GPU at FP8. Its users are sized within the memory its GPU may use once the operating system has
# kept its share: the Mac's default GPU limit (chapter 8), and elsewhere what the driver
# or the operating system reports, where a public log shows it. A DGX Spark's Linux
# reports {glue:text}`spark_usable:.1f` of its {glue:text}`spark_cap:.0f` GiB; a Strix Halo
# maps {glue:text}`strix_usable:.0f` GiB for its GPU with the limit its owner set; an
# M3 Ultra's {glue:text}`m3_gb:.0f` GB let its GPU use {glue:text}`m3_usable:.0f` GiB,
# room for {glue:text}`m3_users_q8:d` users of this workload at Q8_0. The programs the
# operating system runs come out of that memory too, so a machine's largest number of
# users is an upper bound.
#
# **Power, like with like.** A desk machine's draw is what a source measured at the wall
# while it generated, whole system, at its peak (a DGX Spark-class Dell, a Mac Studio, a
# Framework Desktop, a PC with an RTX 4090: Jeff Geerling's runs
# {cite}`geerling_ai_benchmarks`), and where nobody measured it, the board's rating: the
# {glue:text}`pro_name` and the RTX 5090 cards, without the computer around them. A rented
# GPU's rating covers the GPU alone, and the GPU is only part of what it takes from the
# grid: an 8-GPU DGX H100 is rated {glue:text}`node_kw:.1f` kW at most for
# {glue:text}`node_gpu_kw:.1f` kW of GPUs (a secondary source puts its typical draw at
# {glue:text}`node_typ_lo:.1f` to {glue:text}`node_typ_hi:.1f` kW), a DGX B200
# {glue:text}`b200_node_kw:.1f` kW, and the data center spends more on cooling and power
# conversion. So a rented GPU is charged an eighth of its server's maximum
# ({glue:text}`node_per_gpu:,.0f` W for an H100) times the industry's average power usage
# effectiveness, {glue:text}`pue:.2f` (Uptime Institute's survey of
# {glue:text}`pue_period`, as a dataset's description quotes it; Uptime's own report gives
# {glue:text}`pue_own:.2f` for {glue:text}`pue_own_period` {cite}`uptime_pue_2023`; a
# hyperscaler's fleet reports {glue:text}`pue_lo:.2f`): an upper
# bound, as a desk machine's peak draw is. The cache is kept in 16 bits everywhere, as in
# chapter 8.

# %% tags=["hide-input"]
sources = service.sources()
glue_all({
    "read_wpm": sources["silent_reading_rate"]["value"],
    "words_per_token": sources["words_per_token"]["value"],
})
mlperf = tables.row("mlperf_datasets", "benchmark_model", "llama2-70b-99")
glue_all({
    "mlperf_tpot_ms": float(mlperf["tpot_limit_server_ms"]),
    "mlperf_ttft_s": float(mlperf["ttft_limit_server_ms"]) / 1000,
    "mlperf_speed": 1000 / float(mlperf["tpot_limit_server_ms"]),
})
spark_most = om.loc["DGX Spark"]
glue_all({
    "spark_most_users": int(spark_most["users"]),
    "spark_most_speed": spark_most["per_user_tokens_per_s"],
    "spark_most_first": spark_most["first_token_s"],
    "spark_most_usd": spark_most["usd_per_mtok"],
})

# %% [markdown]
# (sec-cost-service-level)=
# ## A service level
#
# Serving more users at once makes each token cheaper, and each user's stream slower and
# first token later. Priced at as many users as its memory holds, a DGX Spark makes a
# million tokens for {glue:text}`spark_most_usd:.2f` dollars, but for
# {glue:text}`spark_most_users:d` users each reading {glue:text}`spark_most_speed:.1f`
# tokens a second, the last of them waiting {glue:text}`spark_most_first:,.0f` s for a
# first token: a price nobody would pay it. The chapter prices each way at the largest
# number of users it serves within a service level instead, stated here:
#
# - **Speed per user: no slower than reading.** Adults read English non-fiction silently
#   at {glue:text}`read_wpm:.0f` words a minute (a meta-analysis of published studies
#   {cite}`brysbaert2019reading`), and a token of English is about
#   {glue:text}`words_per_token:.2f` words {cite}`openai_tokens_help`: a stream slower than
#   {glue:text}`lvl_speed:.1f` tokens a second makes its reader wait for words. MLPerf's
#   Server scenario for Llama 2 70B asks for much the same, a time per output token within
#   {glue:text}`mlperf_tpot_ms:.0f` ms ({glue:text}`mlperf_speed:.0f` tokens a second) at
#   the 99th percentile {cite}`mlperf_inference_rules`.
# - **First token: within {glue:text}`lvl_first:.0f` s.** About ten seconds is the limit
#   for keeping a user's attention on a dialogue; past it users turn to other things
#   {cite}`nielsen_response_times`. MLPerf's Server limit is far tighter,
#   {glue:text}`mlperf_ttft_s:.0f` s for prompts a tenth of this chapter's; a reader who
#   wants it sets it in the calculator.
#
# The speed is the mean a stream sees while its answer is written. The first token is the
# slowest user's: on a desk machine, which prefills one prompt at a time, the last of a
# round of prompts; on a rented engine, the 99th percentile under random arrivals at the
# rate it serves (chapter 9's model). Both numbers are the book's choices from these
# sources, and both are sliders in the calculator.

# %% [markdown]
# (sec-cost-service)=
# ## A million tokens of Llama 3.3 70B, at the service level
#
# The chapter's workload: {glue:text}`head_model` at 8 bits, chapter 8's chat request
# ({glue:text}`head_prompt:,d` tokens in, {glue:text}`head_output:,d` out), each way serving
# as many users as it can at {glue:text}`lvl_speed:.1f` tokens a second each or faster, the
# first token within {glue:text}`lvl_first:.0f` s. Dollars first: on a phone the other
# columns scroll.

# %% tags=["hide-input"]
tables.styled(chapter.cost_display(served), "table-cost-service-level", chapter.COST_COLUMNS)

# %% [markdown]
# Within the service level, {glue:text}`n_lvl_ways:d` ways serve the model, and
# {glue:md}`n_lvl_below_api` make a token for less than the API's median
# blended price ({glue:text}`api_mid:.2f` dollars per million output tokens; its providers
# run from {glue:text}`api_low:.2f` to {glue:text}`api_high:.2f`). The
# {glue:text}`card_name` among them is priced as a graphics card alone: it stays below that
# median only while the computer it sits in costs less than {glue:text}`card_host_room:,.0f`
# dollars, before that computer's own electricity. The cheapest is
# {glue:text}`lvl_best_way`, at {glue:text}`lvl_best_usd:.2f` dollars for
# {glue:text}`lvl_best_users:d` users, the slowest of whom has a whole reply in
# {glue:text}`lvl_best_reply:.0f` s; its range is the calibrated model's 90th-percentile
# factor in MLPerf's Server scenario, x{glue:text}`lvl_best_p90:.2f` either way
# (x{glue:text}`lvl_best_median:.2f` for half the rows). Of the desk machines,
# {glue:md}`lvl_desk_ok`. The others miss the level even with one user:
# {glue:md}`lvl_desk_miss`. A rented engine
# holds so many users because its memory holds their caches and its arithmetic keeps every
# stream above reading speed; a desk machine's slower memory makes even one stream of a
# 70B model at 8 bits slower than a reader, or its slower arithmetic keeps the first token
# waiting.

# %% tags=["hide-input"]
# The MI300X, priced beside the table: too few quotes for it, and a pair the fit never saw
mi = costs.rented("MI300X", w, level)
mi_frame = costs.cost_table(w, level, usage, desk=(), rented_chips=("MI300X",),
                            include_api=False)
mi_usd = mi_frame.iloc[0]
mi_quote = prices.rental_price("MI300X")
assert (prices.rental_quotes("MI300X")["confidence"] == "low").all()  # "rated low" below
mi_overlap = mi_usd["usd_per_mtok_high"] >= best["usd_per_mtok_low"]
assert mi.n_chips == 1  # the prose below: "one chip holds the weights and ... caches"
# the stacks chapter 9's fit knows on AMD's chips (10 rows or more), against the typical one
amd_stacks = [st.efficiency for n, st in calibration.stacks().items()
              if "/AMD/" in n and st.rows >= 10]
assert max(amd_stacks) < 1  # the prose: "would be higher"
glue_all({
    "mi_quotes": mi_quote["quotes"],
    "mi_q_low": mi_quote["low"],
    "mi_q_high": mi_quote["high"],
    "mi_q_min": min(prices.rental_price(c)["quotes"] for c in costs.throughput.RENTED),
    "mi_usd": mi_usd["usd_per_mtok"],
    "mi_low": mi_usd["usd_per_mtok_low"],
    "mi_high": mi_usd["usd_per_mtok_high"],
    "mi_users": int(mi.users),
    "mi_chips": mi.n_chips,
    "mi_speed": mi.per_user_tokens_per_s,
    "mi_p90": mi.band_p90,
    "mi_seen_p90": best["band_p90"],
    "mi_vs_best": best["usd_per_mtok"] / mi_usd["usd_per_mtok"],
    "amd_eff_low": min(amd_stacks),
    "amd_eff_high": max(amd_stacks),
})
glue_all({"mi_dear_end": mi_usd["usd_per_mtok_high"],
          "mi_best_cheap_end": best["usd_per_mtok_low"]})
glue_markdown("mi_best_way", chapter.way_name(best))
assert mi_overlap  # the prose: the two ranges overlap

# %% [markdown]
# One chip the data price is left out of the table: AMD's MI300X, rented at
# {glue:text}`mi_q_low:.2f` to {glue:text}`mi_q_high:.2f` dollars per GPU-hour in
# only {glue:text}`mi_quotes:d` providers' latest quotes, from secondary pages the data rate
# low in confidence, where every chip in the table has at least {glue:text}`mi_q_min:d`. The calibrated model was never
# fitted on an MI300X serving this model, so its rate carries the wider band of a chip and
# model the fit has not seen (x{glue:text}`mi_p90:.2f` at the 90th percentile, against
# x{glue:text}`mi_seen_p90:.2f` for the table's rented rows). With those caveats, at the same
# service level {glue:text}`mi_chips:d` MI300X would serve {glue:text}`mi_users:d` users at
# {glue:text}`mi_speed:.1f` tokens a second each for {glue:text}`mi_usd:.2f` dollars per
# million output tokens ({glue:text}`mi_low:.2f` to {glue:text}`mi_high:.2f`), while the
# table's cheapest way costs {glue:text}`mi_vs_best:.1f` times as much; but
# the two ranges overlap ({glue:text}`mi_dear_end:.2f` at the MI300X's dear end,
# {glue:text}`mi_best_cheap_end:.2f` at the cheap end of {glue:md}`mi_best_way`), so the
# order is not settled by this model. It is priced on the typical serving stack, and chapter 9's fit puts
# the stacks it has seen on AMD's chips at {glue:text}`amd_eff_low:.2f` to
# {glue:text}`amd_eff_high:.2f` times the typical stack's share of peak: on such a stack the
# MI300X's price would be higher than this. One chip holds the weights and all those users'
# caches, so one GPU-hour's price buys the whole engine; chapter 12 prices pools of it on the
# same quotes.

# %% [markdown]
# Read against their bands, the ways that meet the level rank as below: each against the
# cheapest, at both ends of both ranges. Where the cheapest's dear end is above another's
# cheap end, the model cannot tell the two apart, and the table says tie.

# %% tags=["hide-input"]
decision_ways = pd.concat([served, mi_frame], ignore_index=True)
decision = decide.against_best(decision_ways[decision_ways["fits"]], "usd_per_mtok",
                               "usd_per_mtok_low", "usd_per_mtok_high")
ties = decision[decision["verdict"] == "tie"]
apart = int((decision["verdict"] == "behind").sum())
glue("dec_best", chapter.way_name(decision.iloc[0]))
glue_markdown("dec_ties", f"{count(len(ties), 'way')} {'ties' if len(ties) == 1 else 'tie'} "
              "with it inside the bands" + (" (" + chapter.join(
                  [chapter.way_name(r) for r in ties.itertuples()], article="") + ")"
                  if len(ties) else ""))
glue_markdown("dec_apart", f"{count(apart, 'way')} {'is' if apart == 1 else 'are'}")
tables.styled(chapter.decision_display(decision_ways), "table-cost-decision", {
    "way": "Way (service level)", "usd": "USD per million output tokens",
    "margin": "Times the cheapest", "verdict": "At the ends of the bands"})

# %% tags=["hide-input"]
buyer = error_band("server", "new stack")
at_buyer = decide.against_best(chapter.at_band(decision_ways[decision_ways["fits"]],
                                               buyer["p90"]),
                               "usd_per_mtok", "usd_per_mtok_low", "usd_per_mtok_high")
buyer_ties = at_buyer[at_buyer["verdict"] == "tie"]
glue_all({
    "buyer_p90": buyer["p90"],
    "buyer_median": buyer["median"],
    "buyer_best": chapter.way_name(at_buyer.iloc[0]),
    "buyer_ties": chapter.join([chapter.way_name(r) for r in buyer_ties.itertuples()],
                               article="") or "no other way",
    "buyer_apart": int((at_buyer["verdict"] == "behind").sum()),
})

# %% [markdown]
# At the point values the cheapest is {glue:text}`dec_best`; {glue:md}`dec_ties`, and
# {glue:md}`dec_apart` dearer at every end of both. A buyer who rents and serves on a stack of
# their own should read the wider band of chapter 9 for a serving stack the fit never saw
# (x{glue:text}`buyer_median:.2f` for half the Server rows, x{glue:text}`buyer_p90:.2f` for
# nine in ten). Every modelled way's range widened to it, the cheapest by its middle is the
# {glue:text}`buyer_best`; tied with it: {glue:text}`buyer_ties`;
# {glue:text}`buyer_apart:d` dearer at every end.

# %% tags=["hide-input"]
m3_one = o1.loc["M3 Ultra"]
glue_all({
    "m3_1_speed": m3_one["per_user_tokens_per_s"],
    "m3_1_rate": m3_one["tokens_per_s"],
    "m3_1_first": m3_one["first_token_s"],
    "m3_1_reply": m3_one["latency_s"],
    "j1_spark": o1.loc["DGX Spark", "joules_per_token"],
    "j1_h100": o1.loc["H100 SXM (rented)", "joules_per_token"],
})
too_small = one[~one["fits"]]["option"].tolist()
glue_all({
    "too_small": chapter.join(too_small, article=""),
    "api_providers": api_head["quotes"],
})

# %% [markdown]
# (sec-cost-one-user)=
# ## One user at a time
#
# The same workload, one user at a time (the calibrated model's static band on the rented
# rows):

# %% tags=["hide-input"]
tables.styled(chapter.cost_display(one), "table-cost-one-user", chapter.COST_COLUMNS)

# %% [markdown]
# For one stream every way costs more than the dearest of the
# {glue:text}`api_providers:d` API providers' blended prices ({glue:text}`api_high:.2f`),
# but one local stream is not the dearest way to get a token. Per million output tokens:
# {glue:md}`one_list`. The dearest single stream bought or rented on demand is
# {glue:text}`one_dearest`'s; a stream on a GPU rented on demand costs
# {glue:text}`rent1_lo:.1f` to {glue:text}`rent1_hi:.1f`, more than one on
# {glue:md}`one_below_rent`, since it is paid by the hour and one stream leaves most of each
# hour's arithmetic unused; a contract that pays every hour is dearer still for one stream
# used {glue:text}`hours:.0f` hours a day. The
# {glue:text}`too_small` cannot hold the model at all and are not priced.
#
# Two speeds stand in the table because a user sees two things. The decode speed is how
# fast the answer streams once it has begun: {glue:text}`m3_1_speed:.1f` tokens a second on
# the M3 Ultra. The output rate counts the whole request, the prompt's prefill included:
# the M3 Ultra spends {glue:text}`m3_1_first:.1f` s on the {glue:text}`head_prompt:,d`-token
# prompt before the first token, so over the whole reply of {glue:text}`m3_1_reply:.0f` s it
# makes {glue:text}`m3_1_rate:.1f` tokens a second, and that rate is what the cost divides
# by. The energy follows the same pattern: a token of one local stream on the DGX Spark
# takes about {glue:text}`j1_spark:.0f` joules at the wall, one on a rented H100 engine
# {glue:text}`j1_h100:.0f` joules, its server's share and the data center's overhead
# counted.

# %% tags=["hide-input"]
curves = costs.compare.trade_curves(w, usage)
speed = 20.0
at_speed = costs.compare.cheapest_at_speed(curves, speed)
glue_all({
    "speed": speed,
    "at_speed_option": f"rented {at_speed['option'].removesuffix(' (rented)')} engine "
                        f"({count(int(at_speed['n_chips']), 'GPU')})"
     if at_speed["kind"] == "rented" else at_speed["option"],
    "at_speed_cost": at_speed["usd_per_mtok"],
    "at_speed_users": int(at_speed["users"]),
})
desk = curves[curves["kind"] == "owned"]
fastest = desk.loc[desk["per_user_tokens_per_s"].idxmax()]
fast = desk[desk["per_user_tokens_per_s"] >= speed]["option"].unique()
assert not len(fast)  # the prose: no desk machine reaches that speed
glue_markdown("desk_fastest", fastest["option"])
glue("desk_fastest_tps", fastest["per_user_tokens_per_s"])

# %% [markdown]
# ## The trade a buyer makes
#
# Cost per token and speed per user pull against each other: more users at once make each
# token cheaper and each stream slower. Each line below is one way of getting tokens as its
# batch grows from one user to as many as it holds, named at its cheapest end; the API is a
# price, not a speed, and is drawn across.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-cost-trade",
    chart=charts.trade(
        curves, api_head, "Cheaper tokens, slower streams",
        [f"{w.model}, {costs.desk_format(w.weight_format)} bought, "
         f"{w.weight_format} rented",
         f"{w.prompt_tokens:,} tokens in, {w.output_tokens:,} out",
         f"bought: {usage.hours_per_day:.0f} h/day, {usage.life_years:.0f} years",
         "dashed: rented on demand"]),
    caption="Dollars per million output tokens against the tokens per second each user sees, "
            "one line per way of serving as the users at once grow (bought: solid, rented on "
            "demand: dashed; each way its own colour and point shape, named at its cheapest "
            "end), and the API's median blended price with its providers' spread (shaded).",
    source=f"napkin.costs.compare.trade_curves: napkin.predict (rented), napkin.buying "
           f"(bought); prices from data/gpu_rental_prices.csv, machine_prices.csv and "
           f"api_prices.csv, read {prices.span_text(when['day'])}.",
)

# %% [markdown]
# Each line runs down and to the left as users are added: cheaper tokens, slower streams,
# as far as the machine's memory lets it go. Pick a speed, say {glue:text}`speed:.0f` tokens
# per second for each user: the cheapest way on the chart to give it is the
# {glue:text}`at_speed_option`, at {glue:text}`at_speed_cost:.2f` dollars per million tokens
# for {glue:text}`at_speed_users:d` users. No desk machine reaches that speed on this model:
# the fastest stream, the {glue:md}`desk_fastest`'s with one user, gets
# {glue:text}`desk_fastest_tps:.0f` tokens per second. The buyer's trade is
# therefore less a desk against a datacenter than a batch against a stream, and the API's
# blended price sits below every single stream.
#
# ## When buying breaks even
#
# Hours of use a day above which a bought machine makes tokens cheaper than the cheapest
# GPU rented on demand for the same users, and than the API's median blended price
# (equation {eq}`eq-breakeven`; "never": not within a day); beside them, for one user, the
# machine's cost against the cheapest GPU on a one-year contract at the same
# {glue:text}`hours:.0f` hours a day (equation {eq}`eq-cost-committed`). One user, then as
# many as each machine serves at the service level:

# %% tags=["hide-input"]
b1, bl = be_one.set_index("option"), be_lvl.set_index("option")
glue_all({
    "be1_rent_pro": b1.loc["RTX PRO 6000 Blackwell", "hours_to_beat_renting"],
    "be1_rent_spark": b1.loc["DGX Spark", "hours_to_beat_renting"],
    "be1_rent_ref": be_one["rented_reference"].iloc[0].removesuffix(" (rented)"),
    "be1_commit_ref": be_one["committed_reference"].iloc[0].split(" (")[0],
    "be1_commit_usd": be_one["committed_usd_per_mtok"].iloc[0],
})
# the prose: every bought machine that holds the model makes a single stream's token for less
assert be_one["cheaper_than_committed"].all()
pro_lvl = bl.loc["RTX PRO 6000 Blackwell"]
glue_all({
    "bel_api_pro": pro_lvl["hours_to_beat_api"],
    "bel_pro_usd": pro_lvl["usd_per_mtok"],
    "bel_rent_ref": be_lvl["rented_reference"].iloc[0].removesuffix(" (rented)"),
    "bel_rent_usd": be_lvl["rented_usd_per_mtok"].iloc[0],
    "bel_commit_usd": be_lvl["committed_usd_per_mtok"].iloc[0],
})
assert (be_one["hours_to_beat_api"] == float("inf")).all()
assert pro_lvl["hours_to_beat_renting"] == float("inf") and not pro_lvl["cheaper_than_committed"]
assert pro_lvl["hours_to_beat_api"] < float("inf")

# %% tags=["hide-input"]
tables.styled(chapter.breakeven_display(be_one, be_lvl), "table-cost-breakeven", {
    "option": "Bought machine", "rent_1": "One user: beats renting on demand (h/day)",
    "api_1": "One user: beats the API's blended price (h/day)",
    "committed_1": f"One user: USD per million vs a one-year contract, "
                   f"{usage.hours_per_day:.0f} h/day",
    "users_level": "Service level: users", "rent_level": "Service level: beats renting (h/day)",
    "api_level": "Service level: beats the API (h/day)"})

# %% [markdown]
# For one stream, a bought machine beats renting the cheapest GPU on demand for the same
# stream (a {glue:text}`be1_rent_ref`) from about {glue:text}`be1_rent_pro:.1f` hours a day
# for the {glue:text}`pro_name` card to {glue:text}`be1_rent_spark:.0f` for the DGX Spark:
# a rented GPU idles through one stream too, and is paid by the hour. A one-year contract
# is dearer still for one stream used {glue:text}`hours:.0f` hours a day
# ({glue:text}`be1_commit_usd:.0f` dollars per million tokens on an
# {glue:text}`be1_commit_ref`), since it pays the hours nobody uses:
# every bought machine that holds the model makes a single stream's token for less. Against
# the API, no bought machine
# ever breaks even on one stream. At the service level the {glue:text}`pro_name` card
# ({glue:text}`bel_pro_usd:.2f` dollars per million) beats the API's blended price above
# {glue:text}`bel_api_pro:.1f` hours a day, but never a {glue:text}`bel_rent_ref` engine
# rented on demand at the same level ({glue:text}`bel_rent_usd:.2f`), and not an H100
# engine on a one-year contract either ({glue:text}`bel_commit_usd:.2f`).

# %% tags=["hide-input"]
check = energy.check()
summary = energy.error_summary(check).set_index("group")
glue_all({
    "n_scored": len(check),
    "n_excluded": int((energy.measurements()["excluded"] != "").sum()),
    "err_all": summary.loc["all", "median_abs"],
    "err_all_p90": summary.loc["all", "p90_abs"],
    "err_dense": summary.loc["dense", "median_abs"],
    "err_l70": summary.loc["70B dense", "median_abs"],
    "draw_dense": summary.loc["dense", "draw_over_rating"],
    "errp_dense": summary.loc["dense", "measured_power_median_abs"],
    "bias_moe": summary.loc["mixture of experts", "bias"],
})
small = check[(check["model"] == "Llama-3.3-70B") & (check["engine"] == "4 x H100")]
small = small.sort_values("mean_batch").iloc[0]
glue_all({
    "small_batch": small["mean_batch"],
    "small_gpus": int(small["n_gpus"]),
    "cap_lo": int(check["max_batch"].min()),
    "cap_hi": int(check["max_batch"].max()),
    "small_draw": small["draw_over_rating"],
    "small_err": small["error"],
    "small_power_factor": 1 / small["draw_over_rating"],
    "small_time_factor": small["model_step_s"] / small["measured_step_s"],
    "small_model_ms": 1e3 * small["model_step_s"],
    "small_meas_ms": 1e3 * small["measured_step_s"],
})
MOE_BIG = 512
moe_big = check[(check["kind"] != "dense") & (check["mean_batch"] >= MOE_BIG)]
glue_all({
    "moe_big_batch": MOE_BIG,
    "moe_big_step": -moe_big["step_error"].median(),
    "moe_big_meas": -moe_big["error_measured_power"].median(),
})
# what the cost tables charge a rented H100 instead of its rating
rented_h100 = power.rented_draw("H100 SXM")
glue_all({
    "rented_h100_w": rented_h100["power_W"],
    "rented_h100_x": rented_h100["power_W"] / power.rating("H100 SXM")["power_W"],
    "moe_big_err": moe_big["error"].median(),
})
# the prose's signs: a short step, too little energy at the measured power, too much at
# the rating, for the large batches and for the median run of a mixture of experts
assert moe_big["step_error"].median() < 0 and moe_big["error_measured_power"].median() < 0
assert moe_big["error"].median() > 0 and summary.loc["mixture of experts", "bias"] > 0
shown = ["Llama-3.3-70B", "Llama-3.1-70B", "Llama-3.1-8B", "gpt-oss-120b", "gpt-oss-20b"]

# %% [markdown]
# (sec-cost-energy)=
# ## Energy per token, and how wrong the model is
#
# The energy model is equation {eq}`eq-energy`: the step time of the calibrated model times
# the GPUs' rated power, over the tokens a step makes. Nothing in it is fitted to energy: the
# step model's parameters were fitted to chapter 9's training rows (MLPerf and Argonne), and
# the power is the vendor's rating. ML.ENERGY's leaderboard {cite}`mlenergy_leaderboard`
# {cite}`chung2025mlenergy` measured GPU energy per output token of vLLM serving chat and
# reasoning prompts on H100 and B200 GPUs, at batch caps from {glue:text}`cap_lo:d`
# sequences to {glue:text}`cap_hi:,d`,
# with the GPUs' average power in each run. All {glue:text}`n_scored:d` of its runs the step
# model can represent are held out ({glue:text}`n_excluded:d` others are not scored: a model
# the book has no config for, or expert parallelism, which the step model does not run).
# ML.ENERGY states each run's mean batch and answer length but not its prompts' length, so
# the step is taken at half the mean answer's depth and the prompts' prefill, and its share
# of the time and energy, is left out.

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-cost-energy-check",
    chart=charts.energy_check(check, shown, "The energy model against ML.ENERGY"),
    caption="Joules per output token against the batch: ML.ENERGY's measured GPU energy "
            "(points) and the model, the calibrated step time times the GPUs' rated power "
            "(lines), one colour per engine; a menu picks the model.",
    source=f"data/mlenergy_llm.csv (ML.ENERGY leaderboard data of "
           f"{prices.span_text(map(prices.day, check['date']))}, github.com/ml-energy/"
           f"leaderboard); model: napkin.costs.energy.check, ratings from "
           f"data/machine_power.csv.",
)

# %% tags=["hide-input"]
tables.styled(chapter.error_display(summary.reset_index()), "table-cost-energy-error", {
    "group": "Runs", "n": "Scored", "median": "Median |error|", "p90": "90th percentile",
    "bias": "Median error", "measured_power": "Median |error|, measured power",
    "draw": "Measured draw / rating (median)"})

# %% [markdown]
# Over all {glue:text}`n_scored:d` runs the model is within {glue:text}`err_all:.0%` of the
# measured energy for half and {glue:text}`err_all_p90:.0%` for nine in ten; on dense models
# within {glue:text}`err_dense:.0%` for half, on the two Llama 70B models within
# {glue:text}`err_l70:.0%`. Two errors make it up, and the measured power separates them.
# **The power**: GPUs serving a small batch draw well below their rating. At a batch of
# {glue:text}`small_batch:.0f`, {glue:text}`small_gpus:d` H100 GPUs serving Llama 3.3 70B drew
# {glue:text}`small_draw:.0%` of their rated power, and the model, which charges the
# rating, is {glue:text}`small_err:.0%` too high there. The rating accounts for a factor of
# {glue:text}`small_power_factor:.2f` of that, and the step for the other
# {glue:text}`small_time_factor:.2f`: the model's step takes
# {glue:text}`small_model_ms:.1f` ms where the measured one (the batch over the measured
# rate) took {glue:text}`small_meas_ms:.1f` ms. Over dense models the median draw is
# {glue:text}`draw_dense:.0%` of the rating. With the measured power in place of the rating
# the dense models' error is {glue:text}`errp_dense:.0%`. **The time**: on the mixtures of
# experts (gpt-oss) at large batches the step model is too fast (its step is
# {glue:text}`moe_big_step:.0%` shorter than the measured one, median, at mean batches of
# {glue:text}`moe_big_batch:d` and more), so with the measured power its energy there is
# too low, by {glue:text}`moe_big_meas:.0%` for the median run. Charged at the rating (this
# check's basis, not the cost tables': they charge a rented GPU its share of its server's
# maximum input times the data center's PUE, {glue:text}`rented_h100_w:,.0f` W for an H100,
# {glue:text}`rented_h100_x:.1f` times its rating), the rating's excess outweighs the short
# step: those runs come out
# {glue:text}`moe_big_err:.0%` too high for the median, and the median mixture-of-experts
# run over all batches {glue:text}`bias_moe:.0%` too high. The measured servers slow down
# at those batches in ways the roofline does not see (scheduling and sampling per sequence,
# an expert kernel not at its roof), so the model's energy for large batches of a mixture
# of experts is a floor only when it is given the measured power.
#
# For desk machines the only measured energy is whole-system: Geerling measured the wall
# power and the rate of one stream of Llama 3.1 70B on {glue:text}`ls_n:d` of them, which
# puts one local token at {glue:text}`ls_lo:.0f` to {glue:text}`ls_hi:.0f` joules (peak
# power over the mean rate, so an upper bound). ML.ENERGY measured {glue:text}`dc_j:.2f`
# joules of GPU energy for a token of a {glue:text}`dc_gpus:d`-GPU H100 server serving
# Llama 3.3 70B at a batch of {glue:text}`dc_batch:.0f`; set against the wall, that ratio,
# {glue:text}`dc_ratio_gpu:.0f` to one, compares a whole machine with its GPUs alone and
# overstates the gap. Counted at the same boundary, the GPUs' measured power plus their share of
# the rest of the server at its maximum input (CPUs, NICs, switches, fans: the DGX H100's
# {glue:text}`node_kw:.1f` kW less {glue:text}`node_gpu_kw:.1f` kW of GPUs) times the data
# center's PUE of {glue:text}`pue:.2f` (above: Uptime Institute's {glue:text}`pue_period`
# survey as a dataset's description quotes it), the server's token takes
# {glue:text}`dc_wall_j:.2f` joules from the grid, an upper bound as the desk figure is: one
# local stream's token takes some {glue:text}`dc_ratio:.0f` to
# {glue:text}`dc_ratio_hi:.0f` times as much. That pair does not have the same weights on
# both sides: ML.ENERGY's server ran BF16, and Geerling's desk runs are of a model quantized
# below {glue:text}`desk_format` (the {glue:text}`fast_machine` made
# {glue:text}`fast_rate:.1f` tokens a second, so
# even reading at its full {glue:text}`fast_bw_GBps:,.0f` GB/s a token could read at most
# {glue:text}`fast_bits:.1f` bits a weight). At this chapter's {glue:text}`desk_format`, the same machines' measured
# power over the rate the one-user table estimates for them gives
# {glue:text}`desk8_lo:.0f` to {glue:text}`desk8_hi:.0f` joules, and the ratio is
# {glue:text}`dc_ratio_q8:.0f` to {glue:text}`dc_ratio_q8_hi:.0f`. Neither reading sets
# equal weights side by side: the book holds no measured server run of this model at
# {glue:text}`desk_format`'s precision or FP8. The tables' rented rows are counted the same
# way (a DGX B200's maximum is {glue:text}`b200_node_kw:.1f` kW {cite}`nvidia_dgx_b200_guide`).
# %% [markdown]
# (sec-cost-essay-sentence)=
# ## The essay's per-token sentence
#
# "A provider amortises that read across hundreds of users, which is how per-token prices
# land where they do." The measured servers test it without the book's model: price
# ML.ENERGY's measured rates of Llama 3.3 70B at the median rental quote of the GPUs they ran
# on, and set the cost per million output tokens beside the APIs' output price (the output
# price alone, not the blended price the rest of the chapter uses: a provider is also paid
# for the input tokens, so this is the harder test).

# %% tags=["hide-input"]
quote_span = prices.span_text([d for c in runs["chip"].unique()
                               for d in prices.rental_quotes(c)["day"]])
out_api = {"median": float(out_price.median()), "low": float(out_price.min()),
           "high": float(out_price.max()),
           "providers": ", ".join(prices.api_quotes("Llama-3.3-70B")["provider"])}
first = runs.sort_values("mean_batch").groupby("engine").first()
glue_all({
    "h100_b8": first.loc["4 x H100", "usd_per_mtok"],
    "dense_up_to": page.DENSE_UP_TO,
    "n_h100_engine": int(first.loc["4 x H100", "n_gpus"]),
    "n_b200_engine": int(first.loc["2 x B200", "n_gpus"]),
    "b200_b8": first.loc["2 x B200", "usd_per_mtok"],
    "min_batch": first["mean_batch"].min(),
})
amortised = errata.erratum("per_token_prices_amortised")
stream = errata.erratum("one_local_stream_not_cheap")
assert amortised.conclusion_holds and stream.conclusion_holds
glue_markdown("erratum_amortised", f"**{amortised.topic}** ({amortised.verdict}): "
                                   f"{amortised.data_says}.")
glue_markdown("erratum_stream", f"**{stream.topic}** ({stream.verdict}): {stream.data_says}.")

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-cost-measured-serving",
    chart=charts.measured_cost(
        runs, out_api, "Measured servers reach the APIs' output price",
        ["Llama 3.3 70B, BF16, ML.ENERGY's chat runs", "GPUs at their median rental quote",
         f"(read {quote_span})"]),
    caption="Dollars per million output tokens of ML.ENERGY's measured vLLM runs against the "
            "sequences in flight, each GPU at its median on-demand rental quote, and the APIs' "
            "median output price (input tokens not counted) for the same model with its "
            "providers' spread (shaded).",
    source=f"data/mlenergy_llm.csv (ML.ENERGY leaderboard data of "
           f"{prices.span_text(map(prices.day, runs['date']))}), data/gpu_rental_prices.csv "
           f"(read {quote_span}), data/api_prices.csv (read "
           f"{prices.span_text(prices.api_quotes('Llama-3.3-70B')['day'])}).",
)

# %% [markdown]
# At a batch of {glue:text}`min_batch:.0f` a million tokens cost {glue:text}`h100_b8:.2f`
# dollars on {glue:text}`n_h100_engine:d` rented H100 GPUs and {glue:text}`b200_b8:.2f` on
# {glue:text}`n_b200_engine:d` B200 GPUs, many times the
# APIs' median output price of {glue:text}`out_median:.2f` (the output price alone; the
# blended price of the chapter's request is {glue:text}`api_mid:.2f`). The cost reaches that
# price at a batch of about {glue:text}`be_b200:.0f` sequences on the B200 GPUs and
# {glue:text}`be_h100:.0f` on the H100 GPUs (read between the measured batches either side,
# {glue:text}`be_b200_above:.0f` and {glue:text}`be_b200_below:.0f`, and
# {glue:text}`be_h100_above:.0f` and {glue:text}`be_h100_below:.0f`, along a straight line
# in log-log): hundreds of users per read of the weights, as the essay says, against the
# output price. The harder test for the price is the easier one for the count: at the blended
# price a provider is paid, input tokens counted, the cost comes down to it from about
# {glue:text}`be_b200_blend:.0f` sequences on the B200 GPUs and
# {glue:text}`be_h100_blend:.0f` on the H100 GPUs, so "hundreds" is the output-price reading.
# The errata page records both of the essay's money claims:
#
# - {glue:md}`erratum_amortised`
# - {glue:md}`erratum_stream`

# %% [markdown]
# (sec-cost-moe-chat)=
# ## A large mixture of experts at chat speed
#
# The workload so far is a dense model. What the frontier serves is larger and sparse:
# DeepSeek-R1, which runs a small share of its parameters for each token. Chapter 9 costs it
# on a GB200 NVL72 rack at MLPerf's interactive limits; here is the same arithmetic for a
# rack, a server of eight GPUs and one GPU, and what a million output tokens costs at that
# speed. Each machine gets three answers, which [chapter 9](#sec-validation-rack) explains:
# the fit's reading of a deployment that states no layout (tensor-parallel engines of
# eight), the best of chapter 9's layouts without drafts (data-parallel attention with the
# experts spread, prefill on its own pool), and the full layout, which adds three drafts of
# multi-token prediction.

# %%
moe_speed = costs.moe.at_chat_speed()
moe_band = napkin.validation.chapter.moe_interactive_band(costs.moe.BENCHMARK)
stream = costs.moe.fastest_stream("B200", 8)
chat_steps = napkin.validation.chapter.moe_chat_steps()
moe_i, moe_o = napkin.validation.chapter.benchmark_lengths(costs.moe.BENCHMARK)
api_moe = prices.api_price(costs.moe.MODEL, moe_i, moe_o)
tables.styled(costs.moe.display(moe_speed), "table-cost-moe-chat", costs.moe.COLUMNS)

# %% tags=["hide-input"]
by = moe_speed.set_index("machine")
rack, b200, h200 = by.loc["GB200 NVL72 rack"], by.loc["8 x B200"], by.loc["8 x H200"]
one_b200 = napkin.predict.engine("B200", costs.moe.MODEL, n_chips=8, weights="NVFP4",
                                 kv=costs.moe.KV)
per_gpu = chat_steps["batch"] / chat_steps["engine_gpus"]
glue_all({
    "moe_params_b": catalog.params(costs.moe.MODEL) / 1e9,
    "moe_active_b": catalog.params(costs.moe.MODEL, active=True) / 1e9,
    "moe_tpot_ms": 1e3 * napkin.validation.chapter.interactive_limits(costs.moe.BENCHMARK)[1],
    "moe_pace": moe_band["pace_tokens_per_s"],
    "moe_b200_fit_usd": b200["fit_usd_per_mtok"], "moe_b200_full_usd": b200["full_usd_per_mtok"],
    "moe_b200_span": b200["fit_usd_per_mtok"] / b200["full_usd_per_mtok"],
    "moe_b200_drafts_gain": b200["full_tokens_per_s"] / b200["no_drafts_tokens_per_s"],
    "moe_rack_layout_gain": rack["no_drafts_tokens_per_s"] / rack["fit_tokens_per_s"],
    "moe_rack_drafts_gain": rack["full_tokens_per_s"] / rack["no_drafts_tokens_per_s"],
    "moe_h200_fit_usd": h200["fit_usd_per_mtok"], "moe_h200_full_usd": h200["full_usd_per_mtok"],
    "moe_rack_price": rack["usd_per_gpu_hour"], "moe_rack_quotes": int(rack["quotes"]),
    "moe_rack_fit_usd": rack["fit_usd_per_mtok"], "moe_rack_full_usd": rack["full_usd_per_mtok"],
    "moe_weights_gib": one_b200.model.weight_bytes / napkin.units.GiB,
    "moe_b200_gib": one_b200.deployment.roof.capacity_bytes / 8 / napkin.units.GiB,
    "moe_stream_rate": stream["tokens_per_s"], "moe_stream_drafts": int(stream["draft_tokens"]),
    "moe_stream_usd": stream["usd_per_mtok"],
    "moe_api_usd": api_moe["median"], "moe_api_n": api_moe["quotes"],
    "moe_band_median": moe_band["median"], "moe_band_p90": moe_band["p90"],
    "moe_band_worst": moe_band["worst"], "moe_band_runs": moe_band["runs"],
    "moe_band_rows": moe_band["rows"],
    "moe_chat_step_ratio": chat_steps["ratio"].median(),
    "moe_chat_step_worst": chat_steps["factor"].max(), "moe_chat_step_n": len(chat_steps),
    "moe_chat_step_faster": int((chat_steps["ratio"] < 1).sum()),
    "moe_chat_pace_low": 1e3 / chat_steps["tpot_ms"].max(),
    "moe_chat_pace_high": 1e3 / chat_steps["tpot_ms"].min(),
    "moe_chat_b3": per_gpu[chat_steps["drafts"] == 3].max(),
    "moe_chat_b1": per_gpu[chat_steps["drafts"] == 1].max(),
})
# the prose: neither GPU holds the model alone; on eight B200 the best layout without drafts
# is the fit's reading; the band's runs are single streams that the model overrates; most
# batched runs are slower than the model's step
assert moe_speed.loc[moe_speed["n_chips"] == 1, "why_not"].str.len().gt(0).all()
assert b200["no_drafts_tokens_per_s"] == b200["fit_tokens_per_s"]
assert moe_band["largest_batch"] == 1 and moe_band["bias"] > 1
assert (chat_steps["ratio"] < 1).sum() > len(chat_steps) / 2

# %% [markdown]
# DeepSeek-R1 holds {glue:text}`moe_params_b:,.0f` billion parameters and runs
# {glue:text}`moe_active_b:.0f` billion of them for each token. The speed asked of it is
# MLPerf's Interactive limit: a request's mean time per output token within
# {glue:text}`moe_tpot_ms:.0f` ms at the 99th percentile, at least
# {glue:text}`moe_pace:.0f` tokens a second, where the reading pace above is
# {glue:text}`lvl_speed:.1f`.
#
# The drafts decide most of the answer. On eight B200 no layout without drafts beats the
# fit's reading, and a million tokens costs {glue:text}`moe_b200_fit_usd:.2f` dollars; with
# three drafts the server makes x{glue:text}`moe_b200_drafts_gain:.0f` the tokens and the
# million costs {glue:text}`moe_b200_full_usd:.2f` (x{glue:text}`moe_b200_span:.0f` apart).
# At this limit a step's fixed costs leave little of the {glue:text}`moe_tpot_ms:.0f` ms to
# its sequences (chapter 9), so a step that keeps several tokens carries many more of them.
# On the rack, data-parallel attention and a prefill pool gain
# x{glue:text}`moe_rack_layout_gain:.1f` over the fit's reading before any draft, and the
# drafts x{glue:text}`moe_rack_drafts_gain:.1f` more. Priced at the one quote the book has
# for a GB200 superchip, shared by its two GPUs ({glue:text}`moe_rack_price:.2f` dollars a
# GPU-hour, {glue:text}`moe_rack_quotes:d` provider, for a superchip, not a rack), the rack
# makes a million tokens for {glue:text}`moe_rack_fit_usd:.2f` dollars in the fit's reading
# and {glue:text}`moe_rack_full_usd:.2f` with the full layout. Eight H200, which hold the
# model in FP8, cost {glue:text}`moe_h200_fit_usd:.2f` to
# {glue:text}`moe_h200_full_usd:.2f`. One GPU does not hold the model: its weights are
# {glue:text}`moe_weights_gib:.0f` GiB even in NVFP4, a B200 has
# {glue:text}`moe_b200_gib:.0f` GiB.
#
# Two prices frame these. The fastest single stream among the book's rows for this model, on
# eight B200 with {glue:text}`moe_stream_drafts:d` drafts, ran at
# {glue:text}`moe_stream_rate:.0f` tokens a second (TensorRT-LLM's DeepSeek-R1 guide,
# {cite}`trtllm_deepseek_r1`): one user alone on the server costs
# {glue:text}`moe_stream_usd:.0f` dollars a million tokens at the median rental price. The
# book's API prices quote DeepSeek-V3, whose architecture DeepSeek-R1 shares: at these
# lengths {glue:text}`moe_api_usd:.2f` dollars a million output tokens, input included
# (median of {glue:text}`moe_api_n:d` providers, who do not state their speed).
#
# How far to trust the model here. On runs of a mixture of experts at this pace it misses by
# x{glue:text}`moe_band_median:.2f` at the median run and x{glue:text}`moe_band_p90:.2f` at
# the 90th percentile, x{glue:text}`moe_band_worst:.2f` on the worst (an H200 run), promising
# more speed than was measured ({glue:text}`moe_band_runs:d` runs,
# {glue:text}`moe_band_rows:d` published rows, each predicted by a fit that never saw the
# model; [chapter 9](#sec-validation-rack)). Every one of those runs served one sequence at
# a time. Batched runs published since the book's data, at
# {glue:text}`moe_chat_pace_low:.0f` to {glue:text}`moe_chat_pace_high:.0f` tokens a second
# for each user, check the step the full layout rests on: read as their recipes ran them,
# the model's time per token is x{glue:text}`moe_chat_step_ratio:.2f` of the measured median
# at the median run, faster than measured in {glue:text}`moe_chat_step_faster:d` of
# {glue:text}`moe_chat_step_n:d`, and within x{glue:text}`moe_chat_step_worst:.2f` at worst.
# They cover three drafts at up to {glue:text}`moe_chat_b3:.0f` sequences per GPU and one
# draft at up to {glue:text}`moe_chat_b1:.0f`, and the tokens a draft keeps are the book's,
# not measured on them: the full layout's step is checked that far, its throughput not at
# all.

# %% [markdown]
# ## A calculator
#
# Choose a workload and a service level (the speed each user must see and the longest
# wait for the first token), then the hours a day, the electricity price and the years a
# bought machine lasts. Each way is priced at the cheapest load whose users all get that
# level; under it, in words, are its users, their speed, the slowest user's first token
# and whole reply, its energy per token, and for a bought machine the hours a day above
# which it beats renting on demand and the API. Every cost, energy and break-even figure is
# computed in the page from the same formulas as the tables above (a test renders the page
# and checks it against `napkin.costs` on a grid of settings); the throughputs are the
# library's, computed for every number of users up to
# {glue:text}`dense_up_to:d` and on a log-spaced grid beyond (on every engine size for a
# rented GPU), since the step model does not run in a page: away from the book's default
# level the page may stop a few users short of the largest load.

# %% tags=["hide-input"]
calc_presets = page.presets()
napkin.Figure(
    name="fig-cost-calculator",
    chart=charts.calculator(page.rows(calc_presets), calc_presets, (elec_lo, elec_hi),
                            start={"hours": usage.hours_per_day, "life": usage.life_years,
                                   "elec": round(usage.usd_per_kWh, 2)}),
    caption="Dollars per million output tokens of every way to serve the chosen workload at "
            "the chosen service level, each at the cheapest load whose users all get it: the "
            "middle estimate (point) and the model's band (line), with the load, the wait "
            "and the break-even hours written under each; ways that cannot serve it at that "
            "level are left out.",
    source=f"napkin.costs.page over napkin.predict and napkin.buying; prices from data/ "
           f"(read {prices.span_text(when['day'])}).",
)

# %% [markdown]
# ## What this leaves out
#
# - **A bought machine's other costs.** Only its price and its electricity while it
#   generates are counted: not the host computer a graphics card needs, not idle power (a
#   machine left on all day draws some), not resale. A GPU rented on demand includes all of
#   these for the hours it is rented.
# - **Whether the users exist.** A way is priced at as many users as it serves within the
#   service level; it is only that cheap if that many requests arrive together. The API's
#   price holds for one request.
# - **What each price buys.** API providers serve the model at weight formats they do not
#   always state, with rate limits, and some cache prompts, which makes repeated input
#   cheaper. A 4-bit model on a desk is not the same model as an 8-bit one behind an API,
#   and llama.cpp's Q8_0 is not a serving engine's FP8. The one-year contract rate is an
#   index of GPU clouds' contracts from a secondary report, for the H100 only.
# - **Power at a batch.** A desk machine's draw is the one measured for one stream; at a
#   batch it draws more, toward its rating, and its energy per token is a little higher than
#   shown. A rented GPU is charged its server's maximum, a measured server draws less.
# - **The model's own errors.** Each range is the band its row names; chapter 9 and the
#   energy check above say how they were measured.
#
# Chapter 8 ranks machines for the essay's three buyers without their running costs; the
# cost column it can show is `napkin.costs.cost_column`, the same arithmetic as this
# chapter's tables.
