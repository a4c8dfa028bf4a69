"""napkin.costs: the cost formulas by hand, prices and their dates, workloads that do not fit,
bad input, the energy check's bookkeeping, and the in-page calculator against the library."""

from __future__ import annotations

import datetime as dt
import math
import re

import numpy as np
import pandas as pd
import pytest

from napkin import buying, costs, tables
from napkin.costs import compare, energy, model, page, power, prices, throughput

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
    f = throughput.band(throughput.band_scenario(1))["p90"]
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


# -- the in-page calculator is the library's arithmetic -----------------------------------------

GRID = [  # workload, users, hours a day, USD per kWh, years
    ("Llama 3.3 70B, 8-bit, chat", 1, 8.0, 0.19, 3.0),
    ("Llama 3.3 70B, 8-bit, chat", 0, 12.0, 0.25, 4.0),
    ("Llama 3.1 8B, 16-bit, chat", 8, 2.0, 0.14, 1.5),
    ("Llama 3.3 70B, 4-bit, coding agent", 64, 24.0, 0.3, 8.0),
]


@pytest.fixture(scope="module")
def page_rows():
    shown = {k: page.presets()[k] for k in dict.fromkeys(g[0] for g in GRID)}
    return shown, page.rows(shown)


def _page(rows, presets, wl, users, hours, elec, life) -> dict:
    import vl_convert as vlc

    from napkin.figures import costs as charts

    chart = charts.calculator(rows, presets, prices.electricity_range(), default=wl,
                              start={"users": page.USERS_LABELS[users], "hours": hours,
                                     "elec": elec, "life": life}, audit=True)
    svg = vlc.vegalite_to_svg(chart.to_dict() | {"width": 600})
    group = svg[svg.index('class="mark-text role-mark'):]
    group = group[:group.index("</g>")]
    out = {}
    for label in re.findall(r'aria-label="([^"]*)"', group):
        fields = dict(part.split("=", 1) for part in label.split(";"))
        out[fields["option"]] = fields
    return out


def _num(v: str) -> float:
    return math.nan if v in ("null", "NaN", "undefined") else float(v)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and (math.isnan(b) or b == math.inf)) or a == pytest.approx(b,
                                                                                      rel=1e-9)


@pytest.mark.parametrize("wl,users,hours,elec,life", GRID)
def test_the_calculator_page_agrees_with_the_library(page_rows, wl, users, hours, elec, life):
    presets, rows = page_rows
    shown = _page(rows, presets, wl, users, hours, elec, life)
    w = presets[wl]
    usage = costs.Usage(hours, life, elec)
    table = costs.cost_table(w, users or None, usage)
    be = costs.breakeven_table(w, users or None, usage, table=table).set_index("option")
    lib = table[table["fits"]].set_index("option")
    assert sorted(shown) == sorted(lib.index)
    for name, f in shown.items():
        row = lib.loc[name]
        for key, col in (("cost_mid", "usd_per_mtok"), ("cost_low", "usd_per_mtok_low"),
                         ("cost_high", "usd_per_mtok_high"), ("joules", "joules_per_token")):
            assert _same(_num(f[key]), row[col]), (name, key, f[key], row[col])
        if row["kind"] == "owned":
            assert _same(_num(f["beat_rent"]), be.loc[name, "hours_to_beat_renting"]), name
            assert _same(_num(f["beat_api"]), be.loc[name, "hours_to_beat_api"]), name
        else:
            assert f["beat_rent"] == "null" and f["beat_api"] == "null"


def test_the_grid_reaches_both_kinds_of_break_even(page_rows):
    """Some grid point has an owned machine that breaks even, and one that never does."""
    presets, _ = page_rows
    found = pd.concat([costs.breakeven_table(presets[wl], u or None, costs.Usage(h, y, e))
                       for wl, u, h, e, y in GRID])
    hours = pd.concat([found["hours_to_beat_renting"], found["hours_to_beat_api"]])
    assert (hours == math.inf).any() and (hours < math.inf).any()


def test_page_rows_carry_the_references_owning_is_compared_with(page_rows):
    _, rows = page_rows
    r = rows[(rows["workload"] == GRID[0][0]) & (rows["users_key"] == "1")]
    rent = r[(r["kind"] == "rented") & r["fits"]]
    cost = rent["usd_per_hour"] / 3600 * 1e6 / rent["tokens_per_s"]
    assert r["ref_rent_usd_per_mtok"].iloc[0] == pytest.approx(cost.min())
    assert (r["api_usd_per_mtok"] == r["api_usd_per_mtok"].iloc[0]).all()
    assert compare.API in set(r["option"])
