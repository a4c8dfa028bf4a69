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
#
# **What this chapter does.** The essay ends on money. A provider amortises the weight read
# "across hundreds of users, which is how per-token prices land where they do", and the last
# row of its buying table says that cost per token is someone else's batch. This chapter
# prices a token three ways: on a desk machine you buy, on datacenter GPUs you rent by the
# hour, and through an API. The prices are sourced and dated, the throughputs come from the
# book's own models (chapter 9's calibrated step model for the rented GPUs, chapter 8's
# estimate for the desk machines), and the energy comes from measured or rated power, with
# the energy model checked against ML.ENERGY's measured GPUs.
#
# The answer, for {glue:text}`head_model` at {glue:text}`head_format` weights, a
# {glue:text}`head_prompt:,d`-token prompt and a {glue:text}`head_output:,d`-token answer,
# one user at a time, a machine bought for {glue:text}`life:.0f` years and used
# {glue:text}`hours:.0f` hours a day: a million output tokens cost about
# {glue:text}`b1_spark:,.0f` dollars on a DGX Spark, {glue:text}`b1_m3:,.0f` on an M3 Ultra
# Mac Studio, {glue:text}`b1_pro:,.0f` on an {glue:text}`pro_name` (the card alone),
# {glue:text}`b1_h100:,.0f` on a rented H100, and {glue:text}`api_mid:,.2f` through an API.
# Served to as many users as each holds, the same tokens cost {glue:text}`best_spark:,.2f`,
# {glue:text}`best_m3:,.2f`, {glue:text}`best_pro:,.2f` and {glue:text}`best_h100:,.2f`
# dollars, and {glue:text}`n_below_api:d` of the {glue:text}`n_ways:d` ways that hold the
# model then make a token for less than the API's median price. One local stream is the
# dearest way to get a token; owning never beats the API for one stream, at any hours a day.
#
# **Why it matters.** People who cite this book in a talk are asked exactly this: is a desk
# machine cheaper per token than renting an H100 or paying an API, and at what use does it
# break even? The answer depends less on the hardware than on how many users share each
# read of the weights, and it moves with prices that change within weeks. So every price
# here carries its date, the chapter says how old they are when the book is built, and the
# calculator at the end lets a reader put in their own hours, electricity and years.

# %% tags=["remove-cell"]
import datetime as dt

import napkin
from napkin import costs, errata, tables
from napkin.costs import chapter, energy, page, power, prices
from napkin.figures import costs as charts
from napkin.prose import counted, glue, glue_markdown
from napkin.validation.report import error_band

w = chapter.headline()
usage = costs.Usage().resolved()
glue("head_model", w.model.replace("-", " "))
glue("head_format", w.weight_format)
glue("head_prompt", w.prompt_tokens)
glue("head_output", w.output_tokens)
glue("hours", usage.hours_per_day)
glue("life", usage.life_years)
glue("pro_name", "RTX PRO 6000 Blackwell")

# %% tags=["remove-cell"]
rent = prices.rental_price("H100 SXM")
glue("n_rent_rows", len(tables.load("gpu_rental_prices")))
glue("h100_low", rent["low"])
glue("h100_high", rent["high"])
glue("h100_n", rent["quotes"])
glue("h100_median", rent["median"])
glue("in_weight", w.prompt_tokens / w.output_tokens)
listed = prices.list_prices()
new = listed[listed["confidence"] == "low"]
glue("n_new_prices", len(new))
glue("pro_price", listed[listed["chip"] == "RTX PRO 6000 Blackwell"]["price"].iloc[0])
m3 = listed[listed["chip"] == "M3 Ultra"]
assert len(m3) == 1
glue("m3_gb", m3["memory_GiB"].iloc[0])
elec = prices.electricity()
glue("elec", elec["usd_per_kWh"])
glue("elec_period", elec["period"])
elec_lo, elec_hi = prices.electricity_range()
glue("elec_lo", elec_lo)
glue("elec_hi", elec_hi)

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
#   instance that comes with a host costs several times a GPU marketplace's.
# - **An API** (`data/api_prices.csv`): each provider's price per million input and output
#   tokens. A request's price per output token counts its input too, weighted by the prompt's
#   share; for the chapter's chat request that is the output price plus
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
# A rented GPU's price includes its electricity and its host; a bought machine pays its own.
# APIs and rentals charge only for what is used; a bought machine costs the same whether it
# runs or not, so its cost per token depends on how many hours a day it works
# ({glue:text}`hours:.0f` by default, a working day) and how many years it lasts
# ({glue:text}`life:.0f`). Both are the book's choices, not sourced figures, and both are
# sliders in the calculator.

# %% tags=["hide-input"]
tables.styled(chapter.rental_display(), "table-cost-rental", {
    "chip": "GPU", "quotes": "Providers", "median": "Median (USD per GPU-hour)",
    "range": "Cheapest–dearest", "dates": "Read"})

# %% tags=["hide-input"]
tables.styled(chapter.api_display(w.prompt_tokens, w.output_tokens), "table-cost-api", {
    "model": "Model", "providers": "Providers",
    "median": "Median (USD per million output tokens, input included)",
    "range": "Cheapest–dearest", "dates": "Read"})

# %% tags=["hide-input"]
tables.styled(chapter.list_price_display(costs.DESK), "table-cost-list-prices", {
    "machine": "Machine", "configuration": "Configuration", "price": "USD", "date": "Date",
    "kind": "Price", "scope": "What it buys", "confidence": "Confidence"})

# %% tags=["remove-cell"]
when = prices.price_dates()
glue("dates_from", when["day"].min().isoformat())
glue("dates_to", when["day"].max().isoformat())

# %% [markdown]
# These prices were read or announced between {glue:text}`dates_from` and
# {glue:text}`dates_to`, and they move within weeks: one provider in the table raised its
# H100 price between two readings weeks apart. On the day this page was built:

# %% tags=["nbval-ignore-output", "remove-input"]
live_age = prices.age_days(dt.date.today(), when)
glue_markdown("live_price_age", "; ".join(
    f"the {r.kind} prices are {r.newest:,d} to {r.oldest:,d} days old ({r.quotes} quotes)"
    if r.newest != r.oldest else f"the {r.kind} price is {r.newest:,d} days old"
    for r in live_age.itertuples()) + f" (built {dt.date.today().isoformat()}).")

# %% tags=["remove-cell"]
off = error_band(costs.throughput.BAND_SCENARIO)
glue("band_median", off["median_abs"])
glue("band_p90", off["p90_abs"])
glue("tp_sizes", chapter.join(map(str, costs.throughput.TP_SIZES), article="").replace(
    " and ", " or "))

# %% [markdown]
# {glue:md}`live_price_age`
#
# ## The model
#
# A way of getting tokens makes $T$ output tokens per second for the workload. Rented GPUs,
# $n$ of them at $p$ dollars per GPU-hour each, cost
#
# ```{math}
# :label: eq-cost-rented
# C_{\text{rented}} = \frac{n\,p}{3600\;T} \times 10^{6}
# \quad \text{dollars per million output tokens.}
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
# $L_{\text{in}}$ tokens in and $L_{\text{out}}$ out costs, per million output tokens,
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
# token. Owning beats a reference price $C_{\text{ref}}$ (renting, or the API) above
#
# ```{math}
# :label: eq-breakeven
# h^{*} = \frac{P}{365\,L \cdot 3600\,\left(T\,C_{\text{ref}} / 10^{6} - W e / 3.6 \times
# 10^{6}\right)}
# ```
#
# hours a day: the price over what each second of use saves. Where the bracket is not
# positive (the electricity alone costs more per token than the reference), or $h^{*}$ is
# more than a day, owning never breaks even. Each formula is written once, as an expression
# the library evaluates and the page's calculator runs unchanged:
#
# ```{literalinclude} ../lib/napkin/costs/model.py
# :language: python
# :start-after: "DEFAULT_LIFE_YEARS = "
# :end-before: "_NAME ="
# ```
#
# **Where $T$ comes from.** For rented GPUs, the calibrated step model of chapter 9
# (`napkin.predict`), on an engine of {glue:text}`tp_sizes` GPUs in tensor parallel,
# whichever makes a token cheapest; on MLPerf Offline rows it never saw, that model is
# within {glue:text}`band_median:.0%` of the measured throughput for half the rows and
# {glue:text}`band_p90:.0%` for nine in ten, and the chapter's bands are the first of
# these. For a desk machine, chapter 8's estimate: one decode step of all users costed on
# the roofline and discounted by the fraction of the bandwidth ceiling that published runs
# of the same family reach, the first token from the prefill rates those runs reached. Here
# each request's prompt is also counted in the time, since a desk machine prefills one
# prompt at a time and decodes while it does not:
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
# Its bands are chapter 8's: the quartiles of the decode discount and the range of the
# prefill runs. A bought machine is priced in its cheapest recorded configuration whose GPU
# may hold the workload. The power is what a source measured at the wall while the machine
# generated, whole system, at its peak (a DGX Spark-class Dell, a Mac Studio, a Framework
# Desktop, a PC with an RTX 4090: Jeff Geerling's runs {cite}`geerling_ai_benchmarks`), and
# where nobody measured it, the board's rating: the {glue:text}`pro_name` and the RTX 5090
# cards, and every datacenter GPU. The cache is kept in 16 bits everywhere, as in chapter 8.

# %% [markdown]
# ## A million tokens of Llama 3.3 70B
#
# The chapter's workload: {glue:text}`head_model` at {glue:text}`head_format`, chapter 8's
# chat request ({glue:text}`head_prompt:,d` tokens in, {glue:text}`head_output:,d` out).
# First one user at a time:

# %% tags=["remove-cell"]
one = costs.cost_table(w, 1, usage)
many = costs.cost_table(w, None, usage)
o1, om = one.set_index("option"), many.set_index("option")
for key, name in {"spark": "DGX Spark", "m3": "M3 Ultra", "pro": "RTX PRO 6000 Blackwell",
                  "h100": "H100 SXM (rented)"}.items():
    glue(f"b1_{key}", o1.loc[name, "usd_per_mtok"])
    glue(f"best_{key}", om.loc[name, "usd_per_mtok"])
glue("best_b200", om.loc["B200 (rented)", "usd_per_mtok"])
glue("b1_speed_spark", o1.loc["DGX Spark", "per_user_tokens_per_s"])
glue("b1_speed_h100", o1.loc["H100 SXM (rented)", "per_user_tokens_per_s"])
glue("best_users_h100", int(om.loc["H100 SXM (rented)", "users"]))
glue("best_users_spark", int(om.loc["DGX Spark", "users"]))
glue("best_users_m3", int(om.loc["M3 Ultra", "users"]))
glue("best_speed_spark", om.loc["DGX Spark", "per_user_tokens_per_s"])
glue("best_speed_h100", om.loc["H100 SXM (rented)", "per_user_tokens_per_s"])
holds = many[many["fits"] & (many["kind"] != "api")]
glue("n_ways", len(holds))
glue("n_below_api", int((holds["usd_per_mtok"] < om.loc[costs.API, "usd_per_mtok"]).sum()))
glue("api_mid", o1.loc[costs.API, "usd_per_mtok"])
glue("api_low", o1.loc[costs.API, "usd_per_mtok_low"])
glue("api_high", o1.loc[costs.API, "usd_per_mtok_high"])
glue("j1_spark", o1.loc["DGX Spark", "joules_per_token"])
glue("j1_h100", o1.loc["H100 SXM (rented)", "joules_per_token"])
glue("jbest_h100", om.loc["H100 SXM (rented)", "joules_per_token"])
glue("jbest_b200", om.loc["B200 (rented)", "joules_per_token"])
glue("best_chips_h100", int(om.loc["H100 SXM (rented)", "n_chips"]))
too_small = one[~one["fits"]]["option"].tolist()
glue("too_small", chapter.join(too_small, article=""))
cheapest_one = one[one["kind"] != "api"].iloc[0]
glue("cheapest_one", cheapest_one["option"])
assert cheapest_one["usd_per_mtok"] > o1.loc[costs.API, "usd_per_mtok"]
assert (one[(one["kind"] != "api") & one["fits"]]["usd_per_mtok"] >
        o1.loc[costs.API, "usd_per_mtok_high"]).all()

# %% tags=["hide-input"]
COLUMNS = {"option": "Way", "as": "As", "users": "Users at once",
           "tokens": "Output tokens/s (band)", "per_user": "Tokens/s per user",
           "usd": "USD per million output tokens (band)", "joules": "Joules per token (band)",
           "note": "Why not"}
tables.styled(chapter.cost_display(one), "table-cost-one-user", COLUMNS)

# %% [markdown]
# For one stream every way costs more per token than the API, whose providers' prices run
# from {glue:text}`api_low:.2f` to {glue:text}`api_high:.2f` dollars (median
# {glue:text}`api_mid:.2f`). The cheapest single stream is the {glue:text}`cheapest_one`'s, at
# {glue:text}`b1_pro:.1f` dollars per million tokens for a card whose computer is not
# priced; a DGX Spark's stream, about {glue:text}`b1_speed_spark:.1f` tokens per second,
# costs {glue:text}`b1_spark:.0f`. A rented H100 streams {glue:text}`b1_speed_h100:.0f`
# tokens per second for {glue:text}`b1_h100:.0f` dollars per million: it is paid by the hour
# and one stream leaves most of each hour's arithmetic unused. The {glue:text}`too_small`
# cannot hold the model at all and are not priced. The energy follows the same pattern: a
# token of one local stream on the DGX Spark takes about {glue:text}`j1_spark:.0f` joules
# at the wall, one on a rented H100 {glue:text}`j1_h100:.0f` joules at its rated power.
#
# Now each way serves as many users as it can hold:

# %% tags=["hide-input"]
tables.styled(chapter.cost_display(many), "table-cost-best-batch", COLUMNS)

# %% [markdown]
# Every way's token gets cheaper, since one read of the weights now serves every user: a rented H100 engine ({glue:text}`best_chips_h100:d`
# GPUs, the size that makes the most tokens per GPU here) serving
# {glue:text}`best_users_h100:d` users makes a million tokens for
# {glue:text}`best_h100:.2f` dollars, and a B200 engine for {glue:text}`best_b200:.2f`,
# below the API's median. A DGX Spark serving {glue:text}`best_users_spark:d` users costs
# {glue:text}`best_spark:.2f`, an M3 Ultra Mac Studio, whose {glue:text}`m3_gb:.0f` GB hold
# only {glue:text}`best_users_m3:d` users within its default GPU limit, {glue:text}`best_m3:.2f`. But the speed each user
# sees falls with the batch: {glue:text}`best_speed_spark:.1f` tokens per second on the
# Spark, {glue:text}`best_speed_h100:.1f` on the H100 engine. The energy per token falls with
# it, to {glue:text}`jbest_h100:.2f` joules on the H100 GPUs and {glue:text}`jbest_b200:.2f` on
# the B200 GPUs at their rated power.
#
# ## The trade a buyer makes
#
# Cost per token and speed per user pull against each other: more users at once make each
# token cheaper and each stream slower. Each line below is one way of getting tokens as its
# batch grows from one user to as many as it holds; the API is a price, not a speed, and is
# drawn across.

# %% tags=["remove-cell"]
curves = costs.compare.trade_curves(w, usage)
api_head = prices.api_price(w.model, w.prompt_tokens, w.output_tokens)
speed = 20.0
at_speed = costs.compare.cheapest_at_speed(curves, speed)
glue("speed", speed)
glue("at_speed_option", f"rented {at_speed['option'].removesuffix(' (rented)')} engine "
                        f"({counted(int(at_speed['n_chips']), 'GPU')})"
     if at_speed["kind"] == "rented" else at_speed["option"])
glue("at_speed_cost", at_speed["usd_per_mtok"])
glue("at_speed_users", int(at_speed["users"]))
desk = curves[curves["kind"] == "owned"]
fastest = desk.loc[desk["per_user_tokens_per_s"].idxmax()]
fast = desk[desk["per_user_tokens_per_s"] >= speed]["option"].unique()
glue_markdown("desk_at_speed", (
    f"Of the desk machines, {' and the '.join(fast)} reach that speed on this model"
    if len(fast) else
    f"No desk machine reaches that speed on this model: the fastest stream, the "
    f"{fastest['option']}'s with one user, gets {fastest['per_user_tokens_per_s']:.0f} tokens "
    f"per second"))

# %% tags=["hide-input"]
napkin.Figure(
    name="fig-cost-trade",
    chart=charts.trade(
        curves, api_head, "Cheaper tokens, slower streams",
        [f"{w.model} at {w.weight_format}, {w.prompt_tokens:,} in, {w.output_tokens:,} out",
         f"bought: {usage.hours_per_day:.0f} h/day for {usage.life_years:.0f} years; "
         f"dashed: rented"]),
    caption="Dollars per million output tokens against the tokens per second each user sees, "
            "one line per way of serving as the users at once grow (bought: solid, rented: "
            "dashed), and the API's median quoted price with its providers' spread (shaded).",
    source=f"napkin.costs.compare.trade_curves: napkin.predict (rented), napkin.buying "
           f"(bought); prices from data/gpu_rental_prices.csv, machine_prices.csv and "
           f"api_prices.csv, read {prices.span_text(when['day'])}.",
)

# %% [markdown]
# Each line runs down and to the left as users are added: cheaper tokens, slower streams,
# as far as the machine's memory lets it go. Pick a speed, say {glue:text}`speed:.0f` tokens
# per second for each user: the cheapest way on the chart to give it is the
# {glue:text}`at_speed_option`, at {glue:text}`at_speed_cost:.2f` dollars per million tokens
# for {glue:text}`at_speed_users:d` users. {glue:md}`desk_at_speed`. The buyer's trade is
# therefore less a desk against a datacenter than a batch against a stream, and the API's
# price sits below every single stream.
#
# ## When buying breaks even
#
# Hours of use a day above which a bought machine makes tokens cheaper than the cheapest
# rented GPU serving the same users, and than the API (equation {eq}`eq-breakeven`;
# "never": not within a day). One user, then as many as each machine holds:

# %% tags=["remove-cell"]
be_one = costs.breakeven_table(w, 1, usage, table=one)
be_many = costs.breakeven_table(w, None, usage, table=many)
b1, bm = be_one.set_index("option"), be_many.set_index("option")
glue("be1_rent_pro", b1.loc["RTX PRO 6000 Blackwell", "hours_to_beat_renting"])
glue("be1_rent_spark", b1.loc["DGX Spark", "hours_to_beat_renting"])
glue("be1_rent_ref", be_one["rented_reference"].iloc[0].removesuffix(" (rented)"))
glue("bem_api_spark", bm.loc["DGX Spark", "hours_to_beat_api"])
glue("bem_api_pro", bm.loc["RTX PRO 6000 Blackwell", "hours_to_beat_api"])
glue("bem_api_m3", bm.loc["M3 Ultra", "hours_to_beat_api"])
glue("bem_rent_ref", be_many["rented_reference"].iloc[0].removesuffix(" (rented)"))
never_rent = be_many[be_many["hours_to_beat_renting"] == float("inf")]["option"].tolist()
glue("never_rent_many", chapter.join(never_rent))
assert never_rent and (be_one["hours_to_beat_api"] == float("inf")).all()
assert (bm.loc[["DGX Spark", "RTX PRO 6000 Blackwell", "M3 Ultra"], "hours_to_beat_api"] <
        float("inf")).all()

# %% tags=["hide-input"]
tables.styled(chapter.breakeven_display(be_one, be_many), "table-cost-breakeven", {
    "option": "Bought machine", "rent_1": "Beats renting, one user (h/day)",
    "api_1": "Beats the API, one user (h/day)", "users_many": "Users it holds",
    "rent_many": "Beats renting, each at its full batch (h/day)",
    "api_many": "Beats the API, that many users (h/day)"})

# %% [markdown]
# For one stream, a bought machine beats renting the cheapest GPU for the same stream
# (a {glue:text}`be1_rent_ref`) from about {glue:text}`be1_rent_pro:.1f` hours a day for the
# {glue:text}`pro_name` card to {glue:text}`be1_rent_spark:.0f` for the DGX Spark: a rented
# GPU idles through one stream too, and is paid by the hour. Against the API, no bought
# machine ever breaks even on one stream. Served to as many users as they hold, they do:
# the DGX Spark above {glue:text}`bem_api_spark:.1f` hours a day, the
# {glue:text}`pro_name` card above {glue:text}`bem_api_pro:.1f` and the M3 Ultra above
# {glue:text}`bem_api_m3:.1f`, at speeds per user the previous chart shows. Against a
# rented {glue:text}`bem_rent_ref` engine serving its own full batch,
# {glue:text}`never_rent_many` never do.

# %% tags=["remove-cell"]
check = energy.check()
summary = energy.error_summary(check).set_index("group")
glue("n_scored", len(check))
glue("n_excluded", int((energy.measurements()["excluded"] != "").sum()))
glue("err_all", summary.loc["all", "median_abs"])
glue("err_all_p90", summary.loc["all", "p90_abs"])
glue("err_dense", summary.loc["dense", "median_abs"])
glue("err_l70", summary.loc["70B dense", "median_abs"])
glue("draw_dense", summary.loc["dense", "draw_over_rating"])
glue("errp_dense", summary.loc["dense", "measured_power_median_abs"])
glue("bias_moe", summary.loc["mixture of experts", "bias"])
small = check[(check["model"] == "Llama-3.3-70B") & (check["engine"] == "4 x H100")]
small = small.sort_values("mean_batch").iloc[0]
glue("small_batch", small["mean_batch"])
glue("small_gpus", int(small["n_gpus"]))
glue("cap_lo", int(check["max_batch"].min()))
glue("cap_hi", int(check["max_batch"].max()))
glue("small_draw", small["draw_over_rating"])
glue("small_err", small["error"])
moe_big = check[(check["kind"] != "dense") & (check["mean_batch"] >= 512)]
glue("moe_big_step", -moe_big["step_error"].median())
assert moe_big["step_error"].median() < 0
shown = ["Llama-3.3-70B", "Llama-3.1-70B", "Llama-3.1-8B", "gpt-oss-120b", "gpt-oss-20b"]

# %% tags=["remove-cell"]
local = power.local_stream_energy()
glue("ls_n", len(local))
glue("ls_lo", local["joules_per_token"].min())
glue("ls_hi", local["joules_per_token"].max())
dc = tables.load("mlenergy_llm")
dc = dc[(dc["model"] == "Llama-3.3-70B") & (dc["gpu"] == "H100")]
dc = dc.iloc[(dc["mean_batch"] - 256).abs().argmin()]
glue("dc_j", dc["energy_J_per_token"])
glue("dc_batch", dc["mean_batch"])
glue("dc_ratio", local["joules_per_token"].min() / dc["energy_J_per_token"])

# %% [markdown]
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
# rating, is {glue:text}`small_err:.0%` too high there; over dense models the median draw is
# {glue:text}`draw_dense:.0%` of the rating. With the measured power in place of the rating
# the dense models' error is {glue:text}`errp_dense:.0%`. **The time**: on the mixtures of
# experts (gpt-oss) at large batches the step model is far too fast (its step is
# {glue:text}`moe_big_step:.0%` shorter than the measured one, median, at batches of
# hundreds and more), so its energy is too low: {glue:text}`bias_moe:.0%` for the median mixture-of-experts
# run. The measured servers slow down at those batches in ways the roofline does not see
# (scheduling and sampling per sequence, an expert kernel not at its roof), and a reader
# should read the model's energy for large batches of a mixture of experts as a floor.
#
# For desk machines the only measured energy is whole-system: Geerling measured the wall
# power and the rate of one stream of Llama 3.1 70B on {glue:text}`ls_n:d` of them, which puts one local
# token at {glue:text}`ls_lo:.0f` to {glue:text}`ls_hi:.0f` joules (peak power over the
# mean rate, so an upper bound), against {glue:text}`dc_j:.2f` joules for a token of a
# measured H100 server at a batch of {glue:text}`dc_batch:.0f` (GPU only, so a lower one):
# some {glue:text}`dc_ratio:.0f` times less.

# %% [markdown]
# ## The essay's per-token sentence
#
# "A provider amortises that read across hundreds of users, which is how per-token prices
# land where they do." The measured servers test it without the book's model: price
# ML.ENERGY's measured rates of Llama 3.3 70B at the median rental quote of the GPUs they ran
# on, and set the cost per million output tokens beside the APIs' output price (the output
# price alone: a provider is also paid for the input tokens, so this is the harder test).

# %% tags=["remove-cell"]
runs = chapter.measured_serving()
quote_span = prices.span_text([d for c in runs["chip"].unique()
                               for d in prices.rental_quotes(c)["day"]])
out_price = prices.api_quotes("Llama-3.3-70B")["output_usd_per_mtok"]
out_api = {"median": float(out_price.median()), "low": float(out_price.min()),
           "high": float(out_price.max()),
           "providers": ", ".join(prices.api_quotes("Llama-3.3-70B")["provider"])}
first = runs.sort_values("mean_batch").groupby("engine").first()
glue("h100_b8", first.loc["4 x H100", "usd_per_mtok"])
glue("n_h100_engine", int(first.loc["4 x H100", "n_gpus"]))
glue("n_b200_engine", int(first.loc["2 x B200", "n_gpus"]))
glue("b200_b8", first.loc["2 x B200", "usd_per_mtok"])
glue("min_batch", first["mean_batch"].min())
glue("out_median", out_api["median"])
be = runs[runs["usd_per_mtok"] <= out_api["median"]].groupby("engine")["mean_batch"].min()
glue("be_h100", be["4 x H100"])
glue("be_b200", be["2 x B200"])
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
        runs, out_api, "Measured servers reach API prices",
        ["Llama 3.3 70B, BF16, ML.ENERGY's chat runs", "GPUs at their median rental quote",
         f"(read {quote_span})"]),
    caption="Dollars per million output tokens of ML.ENERGY's measured vLLM runs against the "
            "sequences in flight, each GPU at its median on-demand rental quote, and the APIs' "
            "median output price for the same model with its providers' spread (shaded).",
    source=f"data/mlenergy_llm.csv (ML.ENERGY leaderboard data of "
           f"{prices.span_text(map(prices.day, runs['date']))}), data/gpu_rental_prices.csv "
           f"(read {quote_span}), data/api_prices.csv (read "
           f"{prices.span_text(prices.api_quotes('Llama-3.3-70B')['day'])}).",
)

# %% [markdown]
# At a batch of {glue:text}`min_batch:.0f` a million tokens cost {glue:text}`h100_b8:.2f`
# dollars on {glue:text}`n_h100_engine:d` rented H100 GPUs and {glue:text}`b200_b8:.2f` on
# {glue:text}`n_b200_engine:d` B200 GPUs, many times the
# APIs' median output price of {glue:text}`out_median:.2f`. The cost reaches that price at
# a batch of about {glue:text}`be_b200:.0f` sequences on the B200 GPUs and
# {glue:text}`be_h100:.0f` on the H100 GPUs: hundreds of users per read of the weights, as the
# essay says. The errata page records both of the essay's money claims:
#
# - {glue:md}`erratum_amortised`
# - {glue:md}`erratum_stream`

# %% [markdown]
# ## A calculator
#
# Choose a workload and the users served at once, then set the hours a day, the electricity
# price and the years a bought machine lasts. Every cost, energy and break-even figure is
# computed in the page from the same formulas as the tables above (a test renders the page
# and checks it against `napkin.costs` on a grid); the throughputs are the library's, since
# the step model does not run in a page. Hover over a way for its speed per user, its energy
# per token, the hours a day at which buying it beats renting and the API, and the dates of
# its prices.

# %% tags=["hide-input"]
calc_presets = page.presets()
napkin.Figure(
    name="fig-cost-calculator",
    chart=charts.calculator(page.rows(calc_presets), calc_presets, (elec_lo, elec_hi),
                            start={"hours": usage.hours_per_day, "life": usage.life_years,
                                   "elec": round(usage.usd_per_kWh, 2)}),
    caption="Dollars per million output tokens of every way to serve the chosen workload to "
            "the chosen number of users: the middle estimate (dot) and the model's band "
            "(line); ways that cannot hold it are left out.",
    source=f"napkin.costs.page over napkin.predict and napkin.buying; prices from data/ "
           f"(read {prices.span_text(when['day'])}).",
)

# %% [markdown]
# ## What this leaves out
#
# - **A bought machine's other costs.** Only its price and its electricity while it
#   generates are counted: not the host computer a graphics card needs, not idle power (a
#   machine left on all day draws some), not cooling, not resale. A rented GPU's price
#   includes all of these for the hours it is rented.
# - **Whether the batch exists.** The cheapest rows serve as many users as memory holds; a
#   desk machine or a rented GPU is only that cheap if that many requests arrive at once.
#   The API's price holds for one request.
# - **What each price buys.** API providers serve the model at weight formats they do not
#   always state, with rate limits, and some cache prompts, which makes repeated input
#   cheaper. A 4-bit model on a desk is not the same model as an 8-bit one behind an API.
# - **Power at a batch.** A desk machine's draw is the one measured for one stream; at a
#   batch it draws more, toward its rating, and its energy per token is a little higher than
#   shown.
# - **The model's own errors.** The bands are the models' medians; chapter 9 and the
#   energy check above give the tails.
#
# Chapter 8 ranks machines for the essay's three buyers without their running costs; the
# cost column it can show is `napkin.costs.cost_column`, the same arithmetic as this
# chapter's tables.
