"""Chapter 11, what a token costs: the essay's per-token sentence (a provider amortises the
weight read over hundreds of users, which is where per-token prices land) and its last row of
advice (cost per token is someone else's batch, not one local stream), against sourced
prices, ML.ENERGY's measured serving and the book's throughput model."""

from __future__ import annotations

import math

from .. import essay
from ..errata.finding import Finding
from . import compare, energy, model, page, prices, service
from .chapter import price_crossing

#: The notebook these checks belong to (the errata page groups them by it).
CHAPTER = "11_cost_and_energy"

#: The measured runs the first check prices: Llama 3.3 70B on the GPUs ML.ENERGY ran it on.
MEASURED_CHIPS = ("H100 SXM", "B200")
MODEL = "Llama-3.3-70B"


def per_token_prices_amortised() -> Finding:
    api = prices.api_quotes(MODEL)
    output_price = float(api["output_usd_per_mtok"].median())
    hundreds = essay.claim("provider_users")
    found, parts = [], []
    for chip in MEASURED_CHIPS:
        quote = prices.rental_price(chip)
        runs = energy.cost_from_measurements(MODEL, chip, quote["median"])
        # the chapter's own reading: between the measured batches either side, in log-log
        batch = float(price_crossing(runs.assign(engine=chip), output_price)["batch"].iloc[0])
        small = runs.iloc[0]
        found.append(batch)
        parts.append(f"on {int(small['n_gpus'])} x {chip} at ${quote['median']:.2f} per "
                     f"GPU-hour (median of {quote['quotes']} providers) a million output tokens "
                     f"cost ${small['usd_per_mtok']:.2f} at a batch of "
                     f"{small['mean_batch']:.0f} and fall to the APIs' median output price "
                     + (f"from a batch of about {batch:,.0f}" if batch == batch else
                        "at no batch measured"))
    holds = all(b == b and b >= hundreds for b in found)
    return Finding(
        data_says="; ".join(parts) + f" (the APIs' median output price for {MODEL}: "
                  f"${output_price:.2f} per million, {len(api)} providers)",
        verdict="agrees" if holds else "inconsistent",
        conclusion_holds=bool(holds),
        explanation="Measured rates: ML.ENERGY's leaderboard (vLLM, BF16 weights, chat "
                    "prompts), priced at the median on-demand rental quote. The comparison "
                    "counts only the output price, so a provider also paid for input tokens "
                    "breaks even at a smaller batch than this. At the batches where rented "
                    "GPUs reach the quoted prices, each weight read is shared by hundreds of "
                    "sequences, as the essay says.",
    )


def one_local_stream_not_cheap() -> Finding:
    key = "Llama 3.3 70B, 8-bit, chat"
    w = page.presets()[key]
    level = service.chat()
    one = compare.cost_table(w, 1)
    one_desk = one[(one["kind"] == "owned") & one["fits"]]
    at_day = compare.breakeven_table(w, 1, table=one)
    served = compare.breakeven_table(w, level)
    api = float(one[one["kind"] == "api"]["usd_per_mtok"].iloc[0])
    never = bool(len(at_day) and (at_day["hours_to_beat_api"] == math.inf).all())
    batched = served[served["hours_to_beat_api"] < math.inf]
    cards = {s.option for s in compare.servings(w, level) if s.fits and s.card_only}
    fmt = one_desk["weight_format"].iloc[0] if len(one_desk) else ""
    return Finding(
        data_says=f"{key} ({fmt} on a desk), one user: the desk machines that hold it make a "
                  f"million output tokens for ${one_desk['usd_per_mtok'].min():.2f} to "
                  f"${one_desk['usd_per_mtok'].max():.2f} used {model.DEFAULT_HOURS_PER_DAY:.0f} "
                  f"hours a day over {model.DEFAULT_LIFE_YEARS:.0f} years, "
                  f"against ${api:.2f} through an API (median blended price: output plus input "
                  f"tokens); "
                  + ("none of them beats the API at any hours a day" if never else
                     "some beat the API") +
                  (f"; serving as many users as each holds at {level.text()}, "
                   + ", ".join(f"the {r.option} ({'the card alone, ' if r.option in cards else ''}"
                               f"{r.users} users) beats it above {r.hours_to_beat_api:.1f} "
                               f"hours a day" for r in batched.itertuples())
                   if len(batched) else f"; not even at {level.text()}"),
        verdict="agrees" if never else "inconsistent",
        conclusion_holds=never,
        explanation="Owned cost: list price spread over its years of use plus electricity at "
                    "the U.S. residential average, over the tokens chapter 8's estimate says the "
                    "machine makes (prefill included) at llama.cpp's 8-bit format, in the memory "
                    "its GPU may use once the operating system has kept its share. A local "
                    "machine is cheap per token only when it, too, serves a batch, and only some "
                    "serve one at a speed a reader accepts: the essay's advice is about the "
                    "single stream, and it holds.",
    )
