"""napkin.costs: the cost formulas by hand, prices and their dates, workloads that do not fit,
bad input, the energy check's bookkeeping, and the in-page calculator against the library."""

from __future__ import annotations

import datetime as dt
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from napkin import buying, catalog, costs, kvcache, models, tables
from napkin.costs import chapter, compare, energy, model, page, power, prices, service, throughput
from napkin.prose import count
from napkin.units import GiB

W70 = buying.Workload("chat", 2000, 500, 1, "Llama-3.3-70B", "FP8")
USAGE = costs.Usage(hours_per_day=10, life_years=1, usd_per_kWh=0.2)

# -- the formulas, by hand ---------------------------------------------------------------------


def test_rented_cost_by_hand():
    # 4 dollars an hour, 1,000 tokens a second: 3.6 million tokens an hour
    assert model.rented_usd_per_mtok(4.0, 1000.0) == pytest.approx(4.0 / 3.6)


def test_owned_cost_by_hand():
    # 3,600 dollars over 1 year of 10-hour days: 3600 / (365 * 10 * 3600) = 1/3650 dollar a
    # second; 100 W at 0.2 dollars per kWh: 100 * 0.2 / 3.6e6 dollar a second; 10 tokens/s
    per_s = 1 / 3650 + 100 * 0.2 / 3.6e6
    got = model.owned_usd_per_mtok(3600.0, 10.0, 100.0, USAGE)
    assert got == pytest.approx(per_s * 1e6 / 10)
    assert got == pytest.approx(27.9528, rel=1e-5)


def test_energy_and_api_and_desk_rate_by_hand():
    assert model.joules_per_token(700.0, 35.0) == pytest.approx(20.0)
    # output price plus the input price times prompt / answer
    assert prices.api_usd_per_mtok(0.5, 1.0, 2000, 500) == pytest.approx(3.0)
    # two users, 100-token answers, 1 s to the first token, then 10 tokens/s each
    assert throughput.desk_tokens_per_s(2, 100, 1.0, 10.0) == pytest.approx(200 / 12)


def test_breakeven_by_hand():
    # 3,650 dollars, 1 year, 10 tokens/s against 100 dollars per million: each second of use
    # saves 10 * 100 / 1e6 = 1e-3 dollar, less 36 W at 0.1 dollar/kWh = 1e-6
    u = costs.Usage(hours_per_day=8, life_years=1, usd_per_kWh=0.1)
    h = model.breakeven_hours_per_day(3650.0, 10.0, 36.0, 100.0, u)
    assert h == pytest.approx(3650 / (365 * 3600 * (1e-3 - 1e-6)))
    # at that many hours a day owning costs exactly the reference
    at = costs.Usage(hours_per_day=h, life_years=1, usd_per_kWh=0.1)
    assert model.owned_usd_per_mtok(3650.0, 10.0, 36.0, at) == pytest.approx(100.0)
    # electricity alone dearer than the reference, or more than a day needed: never
    assert model.breakeven_hours_per_day(3650.0, 10.0, 36.0, 0.5, u) == math.inf
    assert model.breakeven_hours_per_day(3650.0, 0.01, 36.0, 100.0, u) == math.inf


def test_breakeven_price_by_hand():
    # 8 h a day for a year is 365 * 8 * 3,600 s, each saving 1e-3 - 1e-6 dollar (above)
    u = costs.Usage(hours_per_day=8, life_years=1, usd_per_kWh=0.1)
    top = model.breakeven_price_usd(10.0, 36.0, 100.0, u)
    assert top == pytest.approx(365 * 8 * 3600 * (1e-3 - 1e-6))
    # a machine at that price makes tokens at exactly the reference's price
    assert model.owned_usd_per_mtok(top, 10.0, 36.0, u) == pytest.approx(100.0)
    assert model.breakeven_price_usd(10.0, 36.0, 0.05, u) == 0.0  # electricity alone dearer


def test_formulas_evaluate_on_arrays_and_write_the_same_expression_for_the_page():
    rates = np.array([10.0, 20.0])
    got = model.evaluate("rented_usd_per_mtok", usd_per_hour=3.6, tokens_per_s=rates)
    assert got == pytest.approx([100.0, 50.0])
    js = model.js("owned_usd_per_mtok", {"hours_per_day": "hours"})
    assert "datum.price_usd" in js and "hours" in js and "datum.hours_per_day" not in js
    with pytest.raises(ValueError, match="needs tokens_per_s"):
        model.evaluate("joules_per_token", power_W=1.0)
    with pytest.raises(ValueError, match="unknown formula"):
        model.js("nope")


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("field,value", [
    ("hours_per_day", 0), ("hours_per_day", -1), ("hours_per_day", 25),
    ("life_years", 0), ("life_years", -3), ("usd_per_kWh", 0), ("usd_per_kWh", -0.1)])
def test_bad_usage_is_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        costs.Usage(**{field: value})


@pytest.mark.parametrize("kwargs,field", [
    (dict(price_usd=0.0, tokens_per_s=10.0, power_W=100.0), "price_usd"),
    (dict(price_usd=-5.0, tokens_per_s=10.0, power_W=100.0), "price_usd"),
    (dict(price_usd=100.0, tokens_per_s=0.0, power_W=100.0), "tokens_per_s"),
])
def test_bad_owned_prices_are_refused_by_name(kwargs, field):
    with pytest.raises(ValueError, match=field):
        model.owned_usd_per_mtok(usage=USAGE, **kwargs)


def test_bad_rented_prices_and_users_are_refused():
    with pytest.raises(ValueError, match="usd_per_hour"):
        model.rented_usd_per_mtok(-1.0, 10.0)
    with pytest.raises(ValueError, match="usd_per_hour"):
        model.rented_usd_per_mtok(0.0, 10.0)
    with pytest.raises(ValueError, match="users"):
        costs.owned("DGX Spark", W70, 0)
    with pytest.raises(ValueError, match="no desk machine"):
        costs.owned("Nope", W70)
    with pytest.raises(ValueError, match="no on-demand rental price"):
        prices.rental_price("Nope")
    with pytest.raises(ValueError, match="no listed API price"):
        prices.api_quotes("Nope")


# -- prices and their dates --------------------------------------------------------------------

def test_a_provider_read_twice_counts_once_at_its_later_reading():
    q = prices.rental_quotes("H100 SXM")
    secure = q[q["provider"] == "RunPod (Secure Cloud)"]
    assert secure["price"].tolist() == [3.99]                 # 3.49 on 2026-09-25 superseded
    assert secure["day"].tolist() == [dt.date(2026, 11, 9)]
    assert q.groupby("provider")["day"].nunique().max() == 1
    assert q["provider"].is_unique  # one quote per provider
    lambda_ = q[q["provider"] == "Lambda"].iloc[0]  # 1x at 4.29 and 8x at 3.99 on one day
    assert lambda_["products"] == 2 and lambda_["price"] == pytest.approx((4.29 + 3.99) / 2)
    assert not q["offer"].isin(["spot", "reserved (capacity block)"]).any()
    r = prices.rental_price("H100 SXM")
    assert r["median"] == pytest.approx(float(q["price"].median()))
    assert r["low"] <= r["median"] <= r["high"] and r["quotes"] == len(q)


def test_api_price_weights_input_by_the_workload():
    q = prices.api_quotes("Llama-3.3-70B")
    groq = q[q["provider"] == "Groq"].iloc[0]
    assert (groq["input_usd_per_mtok"], groq["output_usd_per_mtok"]) == (0.59, 0.79)
    p = prices.api_price("Llama-3.3-70B", 2000, 500)
    assert p["low"] == pytest.approx(0.79 + 0.59 * 4)      # Groq is the cheapest
    superseded = tables.load("api_prices").query("status == 'superseded'")["provider"]
    assert "DeepSeek (official API)" in set(superseded)
    assert "DeepSeek (official API)" not in set(prices.api_quotes("DeepSeek-V3")["provider"])


def test_ages_are_counted_from_a_day_and_a_clock_set_wrong_is_refused():
    dates = prices.price_dates()
    newest = dates["day"].max()
    ages = prices.age_days(newest + dt.timedelta(days=10), dates).set_index("kind")
    assert ages["newest"].min() == 10
    assert set(ages.index) == {"GPU rental", "API", "desk machine", "electricity"}
    with pytest.raises(ValueError, match="dated after"):
        prices.age_days(newest - dt.timedelta(days=1), dates)
    with pytest.raises(ValueError, match="datetime.date"):
        prices.age_days("2026-12-01", dates)


def test_every_machine_priced_here_has_a_power_figure_and_the_tables_agree():
    for chip in costs.DESK:
        assert power.used(chip)["power_W"] > 0
    for chip in costs.RENTED:
        assert power.rating(chip)["power_W"] > 0
        assert prices.rental_price(chip)["quotes"] >= 3
    assert power.measured("DGX Spark")["power_W"] == 156.0     # the highest measured draw
    assert power.measured("RTX PRO 6000 Blackwell") is None
    assert power.used("RTX PRO 6000 Blackwell")["basis"].startswith("maximum board power")
    m = tables.load("mlenergy_llm")
    assert np.allclose(m["energy_J_per_token"], m["gpu_power_W"] / m["output_tok_per_s"],
                       rtol=0.02)                               # ML.ENERGY's own arithmetic


# -- workloads that do not fit are never priced ----------------------------------------------


def test_a_workload_too_big_for_a_machine_is_shown_as_not_fitting():
    s = costs.owned("RTX 4090", W70)
    assert not s.fits and "needs" in s.reason and "GiB" in s.reason
    assert math.isnan(s.tokens_per_s) and math.isnan(s.price_usd)
    big = buying.Workload("big", 2000, 500, 1, "Llama-3.1-405B", "F16")
    r = costs.rented("H100 SXM", big, 1, sizes=(1,))
    assert not r.fits and "no engine of 1 x H100 SXM" in r.reason
    assert math.isnan(r.usd_per_hour)


def test_cost_table_prices_what_fits_and_lists_the_rest_last_unpriced():
    t = costs.cost_table(W70, 1, USAGE, desk=("DGX Spark", "RTX 4090"),
                         rented_chips=("H100 SXM",))
    assert t["option"].tolist()[-1] == "RTX 4090"
    last = t.iloc[-1]
    assert not last["fits"] and math.isnan(last["usd_per_mtok"])
    assert math.isnan(last["joules_per_token"])
    assert t[t["fits"]]["usd_per_mtok"].is_monotonic_increasing


def test_a_rented_and_an_owned_row_follow_the_formulas():
    t = costs.cost_table(W70, 1, USAGE, desk=("DGX Spark",), rented_chips=("H100 SXM",))
    h = t.set_index("option").loc["H100 SXM (rented)"]
    quote = prices.rental_price("H100 SXM")
    assert h["usd_per_hour"] == pytest.approx(h["n_chips"] * quote["median"])
    assert h["usd_per_mtok"] == pytest.approx(h["usd_per_hour"] / 3600 * 1e6 / h["tokens_per_s"])
    assert h["usd_per_mtok_low"] < h["usd_per_mtok"] < h["usd_per_mtok_high"]
    # one user is a static batch of one: its band is that scenario's cross-validated
    # 90th-percentile factor, cost / f to cost x f
    f = throughput.band(throughput.band_scenario(1), "seen")["p90"]
    assert throughput.band_scenario(1) == "static" and throughput.band_scenario(8) == "offline"
    assert h["usd_per_mtok_low"] == pytest.approx(h["usd_per_mtok"] / f)
    assert h["usd_per_mtok_high"] == pytest.approx(h["usd_per_mtok"] * f)
    s = t.set_index("option").loc["DGX Spark"]
    per_s = s["price_usd"] / (365 * 10 * 3600) + s["power_W"] * 0.2 / 3.6e6
    assert s["usd_per_mtok"] == pytest.approx(per_s * 1e6 / s["tokens_per_s"])
    assert s["price_usd"] == 3999 and s["power_W"] == 156.0


def test_serving_more_users_makes_tokens_cheaper_and_streams_slower():
    one = costs.owned("DGX Spark", W70, 1)
    most = costs.owned("DGX Spark", W70, None)
    assert most.users > one.users
    assert most.tokens_per_s > one.tokens_per_s
    assert most.per_user_tokens_per_s < one.per_user_tokens_per_s


def test_breakeven_table_and_chapter_8s_cost_column():
    be = costs.breakeven_table(W70, 1, USAGE)
    assert set(be["option"]) <= set(costs.DESK)
    assert (be["hours_to_beat_api"] == math.inf).all()        # one stream never beats an API
    col = costs.cost_column(buying.presets()["chat"],
                            machines=["DGX Spark", "H100 SXM", "M4 Max (40-core GPU)"])
    c = col.set_index("machine")
    assert c.loc["DGX Spark", "how"] == "owned" and c.loc["H100 SXM", "how"] == "rented"
    assert c.loc["DGX Spark", "usd_per_mtok"] > 0
    assert "no vendor or rental price" in c.loc["M4 Max (40-core GPU)", "reason"]


def test_a_rented_gpu_with_no_stated_rating_is_priced_without_an_energy_figure():
    c = costs.cost_column(W70, USAGE, machines=["H100 NVL"]).iloc[0]
    assert c["how"] == "rented" and c["usd_per_mtok"] > 0
    assert math.isnan(c["joules_per_token"])


# -- the energy check --------------------------------------------------------------------------


def test_the_energy_model_is_rated_power_times_step_over_batch():
    c = energy.check()
    r = c.iloc[0]
    assert r["model_J_per_token"] == pytest.approx(r["rated_W"] * r["model_step_s"] / r["batch"])
    assert r["error"] == pytest.approx(r["model_J_per_token"] / r["energy_J_per_token"] - 1)
    assert (c["tensor_parallel"] == c["n_gpus"]).all()
    m = energy.measurements()
    assert set(m["excluded"]) - {""}                          # something is left out, and why
    s = energy.error_summary(c).set_index("group")
    assert s.loc["all", "n"] == len(c)
    assert s.loc["dense", "n"] + s.loc["mixture of experts", "n"] == len(c)


# -- the service level -----------------------------------------------------------------------

LEVEL = service.chat()


def test_the_default_service_level_is_reading_speed_and_the_attention_limit():
    src = service.sources()
    assert service.reading_tokens_per_s() == pytest.approx(
        src["silent_reading_rate"]["value"] / src["words_per_token"]["value"] / 60)
    assert service.reading_tokens_per_s() == pytest.approx(238 / 0.75 / 60)
    assert LEVEL.tokens_per_s_per_user == round(238 / 0.75 / 60, 1)
    assert LEVEL.first_token_s == src["attention_limit"]["value"] == 10
    assert LEVEL.met(5.3, 10.0) and not LEVEL.met(5.2, 1.0) and not LEVEL.met(50, 10.5)


@pytest.mark.parametrize("field,value", [("tokens_per_s_per_user", 0),
                                         ("tokens_per_s_per_user", -1.0),
                                         ("first_token_s", math.nan), ("first_token_s", True)])
def test_a_bad_service_level_is_refused_by_name(field, value):
    good = {"tokens_per_s_per_user": 5.0, "first_token_s": 10.0}
    with pytest.raises(ValueError, match=field):
        service.ServiceLevel(**(good | {field: value}))


def test_a_desk_machine_serves_the_most_users_that_each_get_the_level():
    fast = service.ServiceLevel(12.0, 10.0)
    s = costs.owned("RTX PRO 6000 Blackwell", W70, fast)
    assert s.fits and s.users > 1
    assert s.per_user_tokens_per_s >= fast.tokens_per_s_per_user
    assert s.first_token_s <= fast.first_token_s
    more = costs.owned("RTX PRO 6000 Blackwell", W70, s.users + 1)
    assert not fast.met(more.per_user_tokens_per_s, more.first_token_s)
    # the slowest user's first token is the last of a round of prompts prefilled one by one
    one = costs.owned("RTX PRO 6000 Blackwell", W70, 1)
    assert s.first_token_s == pytest.approx(s.users * one.first_token_s)
    assert s.latency_s == pytest.approx(s.first_token_s + W70.output_tokens /
                                        s.per_user_tokens_per_s)
    # a machine too slow for the level even alone is not served, and says why
    spark = costs.owned("DGX Spark", W70, LEVEL)
    assert not spark.fits and spark.reason.startswith("misses") and "one user" in spark.reason
    assert math.isnan(spark.tokens_per_s)


def test_a_rented_engine_at_the_level_meets_it_and_carries_the_server_band():
    r = costs.rented("H100 SXM", W70, LEVEL)
    assert r.fits and LEVEL.met(r.per_user_tokens_per_s, r.first_token_s)
    assert r.band.startswith("server") and throughput.band_scenario(LEVEL) == "server"
    f = throughput.band("server", "seen")
    assert (r.band_median, r.band_p90) == (f["median"], f["p90"])
    assert r.tokens_per_s_low == pytest.approx(r.tokens_per_s / f["p90"])
    assert costs.rented("H100 SXM", W70, 1).band.startswith("static")
    assert costs.rented("H100 SXM", W70, None).band.startswith("offline")
    t = costs.cost_table(W70, LEVEL, USAGE)
    shown = chapter.cost_display(t).set_index("option")
    assert f"x{f['p90']:.2f} p90" in shown.loc["H100 SXM (rented)", "band"]
    assert f"x{f['median']:.2f} median" in shown.loc["H100 SXM (rented)", "band"]


def test_a_rented_chip_the_fit_never_saw_with_the_model_carries_the_new_pairs_band():
    """The MI300X can be rented (chapter 11 prices it beside its table), but the calibrated
    model was never fitted on it with Llama 3.3 70B: its rate carries the wider band of a new
    pair."""
    assert throughput.band_case("MI300X", W70.model) == "new"
    assert throughput.band_case("H100 SXM", W70.model) == "seen"
    r = costs.rented("MI300X", W70, LEVEL)
    new, seen = throughput.band("server", "new"), throughput.band("server", "seen")
    assert r.band == "server, new chips and models" and r.band_p90 == new["p90"]
    assert new["p90"] > seen["p90"]
    assert r.tokens_per_s_low == pytest.approx(r.tokens_per_s / new["p90"])
    with pytest.raises(ValueError, match="users"):
        costs.owned("DGX Spark", W70, "fast")


# -- what the operating system keeps, and the format a desk runs --------------------------------


def test_desk_machines_run_llama_cpps_q8_0_at_8_5_bits():
    assert models.bits_per_weight("Q8_0") == 8.5 and models.bits_per_weight("FP8") == 8.0
    assert costs.desk_format("FP8") == "Q8_0" and costs.desk_format("Q4_K") == "Q4_K"
    m3 = costs.owned("M3 Ultra", W70, None)
    assert m3.weight_format == "Q8_0"
    usable = buying.machine("M3 Ultra").prices[0][1]                # the 96 GB one's GPU limit
    weights = catalog.params(W70.model) * 8.5 / 8
    assert m3.users == kvcache.max_batch(catalog.config(W70.model), W70.context_tokens, usable,
                                         weights, throughput.KV)
    assert costs.rented("H100 SXM", W70, 1).weight_format == "FP8"   # a serving engine's FP8


def test_users_are_sized_within_what_the_operating_system_leaves():
    spark = costs.owned("DGX Spark", W70, None)
    visible = buying.machine("DGX Spark").usable_bytes
    assert visible / GiB == pytest.approx(121.7, abs=0.05)
    weights = catalog.params(W70.model) * 8.5 / 8
    kv = kvcache.kv_cache_bytes(catalog.config(W70.model), W70.context_tokens, 1, throughput.KV)
    assert spark.users == int((visible - weights) // kv)
    assert spark.users < int((128 * GiB - weights) // kv)


# -- power like with like ------------------------------------------------------------------------


def test_a_rented_gpu_draws_its_share_of_its_server_times_the_pue():
    n = power.node("H100 SXM")
    assert n["server_W"] == 10200 and n["gpus"] == 8 and n["gpu_W"] == 700
    assert n["power_W"] == pytest.approx(10200 / 8)
    assert power.node("B200")["server_W"] == 14300
    pue = power.pue()
    assert pue["pue"] == pytest.approx(float(tables.load("datacenter_pue").query(
        "scope == 'industry average'").sort_values("year")["pue"].iloc[-1]))
    assert 1 < power.pue_range()[0] < pue["pue"] <= power.pue_range()[1]
    # a named year gives that year's row (Uptime's own 2023 figure), an absent one says so
    assert power.pue(year=2023)["pue"] == pytest.approx(1.58)
    assert power.pue(year=int(pue["period"]))["pue"] == pue["pue"]
    with pytest.raises(ValueError, match="year 1990"):
        power.pue(year=1990)
    d = power.rented_draw("H200")
    assert d["power_W"] == pytest.approx(10200 / 8 * pue["pue"]) and "PUE" in d["basis"]
    r = costs.rented("H100 SXM", W70, 1)
    assert r.power_W == pytest.approx(r.n_chips * 10200 / 8 * pue["pue"])
    with pytest.raises(ValueError, match="server power"):
        power.node("RTX 4090")
    # ML.ENERGY's GPU energy at the wall: the rest of the server and the PUE added
    runs = energy.measurements().query("model == 'Llama-3.3-70B' and gpu == 'H100'")
    wall = energy.at_the_wall(runs).iloc[0]
    rest = wall["n_gpus"] * (10200 - 8 * 700) / 8
    assert wall["wall_J_per_token"] == pytest.approx(
        (wall["gpu_power_W"] + rest) * pue["pue"] / wall["output_tok_per_s"])
    assert wall["wall_J_per_token"] > 2 * wall["energy_J_per_token"]


# -- a contract that pays every hour -------------------------------------------------------------


def test_a_contract_pays_every_hour_and_is_read_with_its_date():
    q = prices.committed_price("H100 SXM")
    assert q["offer"] == "committed, 1 year" and q["price"] == 2.35
    assert q["day"] == dt.date(2026, 3, 1) and q["source_url"].startswith("https://")
    assert prices.committed_price("B200") is None
    assert "committed, 1 year" not in set(prices.rental_quotes()["offer"])  # not on demand
    # paid 24 hours a day: at 24 hours of use it costs what renting at that rate would
    assert model.committed_usd_per_mtok(2.0, 100.0, costs.Usage(24, 3, 0.2)) == pytest.approx(
        model.rented_usd_per_mtok(2.0, 100.0))
    assert model.committed_usd_per_mtok(2.0, 100.0, costs.Usage(8, 3, 0.2)) == pytest.approx(
        3 * model.rented_usd_per_mtok(2.0, 100.0))
    c = costs.committed("H100 SXM", W70, 1)
    r = costs.rented("H100 SXM", W70, 1)
    assert c.kind == "committed" and c.option == "H100 SXM (rented, 1-year contract)"
    assert c.tokens_per_s == r.tokens_per_s and c.usd_per_hour == c.n_chips * 2.35
    assert costs.committed("B200", W70, 1) is None
    be = costs.breakeven_table(W70, 1, USAGE).iloc[0]
    row = costs.cost_table(W70, 1, USAGE).set_index("option").loc[c.option]
    assert be["committed_usd_per_mtok"] == pytest.approx(row["usd_per_mtok"])
    assert be["cheaper_than_committed"] == (be["usd_per_mtok"] < be["committed_usd_per_mtok"])


# -- the words the chapter writes ----------------------------------------------------------------


def test_counts_are_written_in_the_right_number_never_with_an_s_in_brackets():
    assert count(1, "GPU") == "1 GPU" and count(8, "GPU") == "8 GPUs"
    assert count(1, "user") == "1 user" and count(1200, "user") == "1,200 users"
    with pytest.raises(ValueError, match="whole number"):
        count(1.5, "user")
    texts = []
    for users in (1, None, LEVEL):
        t = costs.cost_table(W70, users, USAGE, rented_chips=("H100 SXM", "B200"))
        texts += list(t["reason"].fillna("")) + list(chapter.cost_display(t).astype(str)
                                                      .to_numpy().ravel())
        texts.append(chapter.priced_list(t, reply=True))
    texts.append(costs.rented("H100 SXM", buying.Workload("big", 2000, 500, 1,
                                                          "Llama-3.1-405B", "F16"), 1,
                              sizes=(1,)).reason)
    assert texts and not [x for x in texts if "(s)" in x or re.search(r"\b1 (GPUs|users)\b", x)]
    assert "(1 GPU)" in chapter.priced_list(costs.cost_table(W70, 1, USAGE,
                                                            rented_chips=("B200",)))


# -- the in-page calculator is the library's arithmetic -----------------------------------------

GRID = [  # workload, speed per user, first token, hours a day, USD per kWh, years
    ("Llama 3.3 70B, 8-bit, chat", None, None, 8.0, 0.19, 3.0),     # the book's default level
    ("Llama 3.3 70B, 8-bit, chat", 12.0, 30.0, 12.0, 0.25, 4.0),
    ("Llama 3.1 8B, 16-bit, chat", 20.0, 5.0, 2.0, 0.14, 1.5),
    ("Llama 3.3 70B, 4-bit, coding agent", 3.0, 60.0, 24.0, 0.3, 8.0),
]


@pytest.fixture(scope="module")
def page_rows():
    shown = {k: page.presets()[k] for k in dict.fromkeys(g[0] for g in GRID)}
    return shown, page.rows(shown)


def _page(rows, presets, wl, speed, first, hours, elec, life) -> dict:
    import vl_convert as vlc

    from napkin.costs import figures as charts

    start = {"hours": hours, "elec": elec, "life": life}
    if speed is not None:
        start |= {"speed": speed, "first": first}
    chart = charts.calculator(rows, presets, prices.electricity_range(), default=wl,
                              start=start, audit=True)
    svg = vlc.vegalite_to_svg(chart.to_dict() | {"width": 600})
    out = {}
    for label in re.findall(r'aria-label="([^"]*)"', svg):
        if label.startswith("option="):
            fields = dict(part.split("=", 1) for part in label.split(";"))
            out[fields["option"]] = fields
    return out


def _num(v: str) -> float:
    return math.nan if v in ("null", "NaN", "undefined") else float(v)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and (math.isnan(b) or b == math.inf)) or a == pytest.approx(b,
                                                                                      rel=1e-9)


def _level(speed, first) -> service.ServiceLevel:
    """The level the page starts at (the book's), or the one the grid sets."""
    return LEVEL if speed is None else service.ServiceLevel(speed, first)


@pytest.mark.parametrize("wl,speed,first,hours,elec,life", GRID)
def test_the_calculator_page_agrees_with_the_library(page_rows, wl, speed, first, hours, elec,
                                                     life):
    presets, rows = page_rows
    shown = _page(rows, presets, wl, speed, first, hours, elec, life)
    usage = costs.Usage(hours, life, elec)
    level = _level(speed, first)
    picked = page.pick(rows, wl, level, usage).set_index("option")
    assert sorted(shown) == sorted(picked.index)
    # the page picks what pick() picks; the library's exact search finds at least as many
    # users, at no more cost
    exact = costs.cost_table(presets[wl], level, usage)
    be = costs.breakeven_table(presets[wl], level, usage, table=exact).set_index("option")
    lib = exact[exact["fits"]].set_index("option")
    assert set(picked.index) <= set(lib.index)
    for name, f in shown.items():
        row, p = lib.loc[name], picked.loc[name]
        assert int(f["users"]) == p["users"] <= max(row["users"], 0) or row["kind"] == "api"
        assert _num(f["cost_mid"]) == pytest.approx(p["cost_mid"], rel=1e-9)
        assert _num(f["cost_mid"]) >= row["usd_per_mtok"] * (1 - 1e-9)
        if speed is None:  # at the book's level the page is the chapter's table, exactly
            for key, col in (("cost_mid", "usd_per_mtok"), ("cost_low", "usd_per_mtok_low"),
                             ("cost_high", "usd_per_mtok_high"),
                             ("joules", "joules_per_token")):
                assert _same(_num(f[key]), row[col]), (name, key, f[key], row[col])
            if row["kind"] == "owned":
                assert _same(_num(f["beat_rent"]), be.loc[name, "hours_to_beat_renting"])
                assert _same(_num(f["beat_api"]), be.loc[name, "hours_to_beat_api"])
        if row["kind"] != "owned":
            assert f["beat_rent"] == "null" and f["beat_api"] == "null"


def test_the_grid_reaches_both_kinds_of_break_even(page_rows):
    """Some grid point has an owned machine that breaks even, and one that never does."""
    presets, _ = page_rows
    found = pd.concat([costs.breakeven_table(presets[wl], _level(v, t), costs.Usage(h, y, e))
                       for wl, v, t, h, e, y in GRID])
    hours = pd.concat([found["hours_to_beat_renting"], found["hours_to_beat_api"]])
    assert (hours == math.inf).any() and (hours < math.inf).any()


def test_the_calculator_writes_counts_in_the_right_number(page_rows):
    from napkin.costs import figures as charts

    presets, rows = page_rows
    spec = charts.calculator(rows, presets, prices.electricity_range()).to_dict()
    text = json.dumps(spec)
    assert "user(s)" not in text and "GPU(s)" not in text and "GPUs)" not in text
    assert "== 1 ? ' user' : ' users'" in text           # "1 user", "7 users" in the page


def test_page_rows_hold_each_ways_candidates_and_never_a_dominated_one(page_rows):
    _, rows = page_rows
    r = rows[rows["workload"] == GRID[0][0]]
    assert compare.API in set(r["option"]) and (r[r["kind"] == "api"]["users"] == 0).all()
    spark = r[r["option"] == "DGX Spark"]
    assert spark["users"].min() == 1 and spark["users"].is_unique
    pruned = page.prune(r)
    assert len(pruned) == len(r)                                     # rows() already pruned
    loads, ways = page.split(r)
    assert ways["k"].is_unique and set(loads["k"]) == set(ways["k"]) and len(loads) == len(r)
    assert len(ways) == r["option"].nunique()
    back = loads.merge(ways, on="k")
    assert np.allclose(back["n_chips"].clip(lower=1) * back["usd_per_gpu_hour"],
                       r["usd_per_hour"].to_numpy())
    assert np.allclose(back["tokens_per_s"], r["tokens_per_s"], rtol=1e-10)


def test_the_price_crossing_is_read_between_the_measured_batches():
    """Cost per token halving per doubling of the batch is a straight line in log-log: the
    crossing of a price between two measured batches is exact on it."""
    runs = pd.DataFrame({"engine": ["a"] * 3 + ["b"] * 2 + ["c"] * 2,
                         "mean_batch": [8.0, 16.0, 32.0, 8.0, 16.0, 8.0, 16.0],
                         "usd_per_mtok": [4.0, 2.0, 1.0, 9.0, 8.0, 0.5, 0.25]})
    got = chapter.price_crossing(runs, 1.5)
    assert got.loc["a", "batch"] == pytest.approx(16 * 2 ** (math.log2(2 / 1.5)))
    assert (got.loc["a", "above"], got.loc["a", "below"]) == (16.0, 32.0)
    assert math.isnan(got.loc["b", "batch"])   # never that cheap
    assert math.isnan(got.loc["c", "batch"])   # always cheaper: no crossing was measured


def test_at_band_widens_only_modelled_rows_and_never_narrows_them():
    ways = pd.DataFrame({"usd_per_mtok": [2.0, 3.0, 5.0], "usd_per_mtok_low": [1.5, 1.0, 4.0],
                         "usd_per_mtok_high": [2.5, 9.0, 6.0],
                         "band_p90": [1.25, 3.0, float("nan")]})
    out = chapter.at_band(ways, 2.0)
    assert out["usd_per_mtok_low"].tolist() == pytest.approx([1.0, 1.0, 4.0])
    assert out["usd_per_mtok_high"].tolist() == pytest.approx([4.0, 9.0, 6.0])
    assert ways["usd_per_mtok_low"].tolist() == [1.5, 1.0, 4.0]  # the input is left as it was


# -- a large mixture of experts at chat speed (napkin.costs.moe) ----------------------------

@pytest.fixture(scope="module")
def moe_chat():
    return costs.moe.at_chat_speed()


def test_one_gpu_does_not_hold_deepseek_and_says_why(moe_chat):
    one = moe_chat[moe_chat["n_chips"] == 1]
    assert len(one) == 2
    assert one["why_not"].str.contains("leaves no room for a KV cache").all()
    assert one[["fit_tokens_per_s", "full_tokens_per_s", "full_usd_per_mtok"]].isna().all().all()


def test_the_best_layout_without_drafts_serves_at_least_the_fit_reading(moe_chat):
    held = moe_chat[moe_chat["why_not"] == ""]
    assert len(held) == 3
    assert (held["no_drafts_tokens_per_s"] >= held["fit_tokens_per_s"]).all()
    assert (held["fit_tokens_per_s"] > 0).all()


def test_the_rack_is_priced_at_its_superchip_quote_shared_by_two_gpus(moe_chat):
    rack = moe_chat[moe_chat["n_chips"] == 72].iloc[0]
    quote = prices.rental_price("GB200 superchip (2 GPUs)")
    assert rack["usd_per_gpu_hour"] == pytest.approx(quote["median"] / 2)
    for reading in costs.moe.READINGS:
        per_gpu_hour = rack[f"{reading}_per_gpu"] * 3600
        assert rack[f"{reading}_usd_per_mtok"] == pytest.approx(
            rack["usd_per_gpu_hour"] / per_gpu_hour * 1e6)


def test_the_fastest_stream_is_the_fastest_per_user_row_of_the_data():
    s = costs.moe.fastest_stream("B200", 8)
    rows = tables.load("serving_measurements")
    rows = rows[rows["model"].str.contains("DeepSeek-(?:R1|V3)") & (rows["gpu"] == "B200") &
                (rows["n_gpus"] == 8) & (rows["unit"] == "tokens/s/user") &
                rows["concurrency_or_batch"].str.contains(r"concurrency=1\b")]
    assert s["tokens_per_s"] == rows["value"].max()
    assert s["row_id"] in set(rows["row_id"])
    with pytest.raises(ValueError, match="no single stream of DeepSeek-V3 on 8 x MI300X"):
        costs.moe.fastest_stream("MI300X", 8)


def test_the_chat_band_holds_only_runs_at_the_pace_and_grows_as_the_pace_slows():
    from napkin.validation import chapter as vc
    fast = vc.moe_interactive_band("deepseek-r1")       # a token every 15 ms
    slow = vc.moe_interactive_band("gpt-oss-120b")      # every 20 ms
    assert fast["pace_tokens_per_s"] == pytest.approx(1e3 / 15)
    assert 0 < fast["rows"] <= slow["rows"] and 0 < fast["drafted_runs"] <= fast["runs"]
    assert fast["runs"] == fast["n"] <= slow["runs"] <= slow["rows"]
    assert 1 <= fast["median"] <= fast["p90"] <= fast["worst"]
    with pytest.raises(ValueError, match="no MLPerf benchmark 'llama-9'"):
        vc.moe_interactive_band("llama-9")
