"""Pools of split and single machines at a service level (napkin.split.pools), and which desk
pairs win (napkin.split.desk)."""

from __future__ import annotations

import math

import pytest

from napkin.split import desk, pools

#: Splitwise's conversation trace's medians on Llama-2-70B, at a loose service level.
CHAT = dict(input_tokens=1020, output_tokens=129, ttft_limit_s=2.0, tpot_limit_s=0.1)


def _one(chip, **kw):
    return pools.one_machine((chip, 8), "Llama-2-70B", **{**CHAT, **kw})


def _split(p, d, link=200.0, **kw):
    return pools.design((p, 8), (d, 8), "Llama-2-70B", link_gb_per_s=link, **{**CHAT, **kw})


@pytest.fixture(scope="module")
def h100():
    return _one("H100 SXM")


@pytest.fixture(scope="module")
def h100_h100():
    return _split("H100 SXM", "H100 SXM")


def test_a_design_meets_its_service_level(h100, h100_h100):
    for d in (h100, h100_h100):
        assert d.met and d.ttft_s <= CHAT["ttft_limit_s"] and d.tpot_s <= CHAT["tpot_limit_s"]
        assert d.usd_per_mtok > 0 and d.joules_per_token > 0
    assert [p.phase for p in h100_h100.pools] == ["prefill", "decode"]
    assert 0 < h100_h100.prefill_share < 1 and math.isnan(h100.prefill_share)


def test_splitting_one_kind_of_machine_over_a_fast_link_never_costs_more(h100, h100_h100):
    """Without interference each phase runs its own largest batch: the split's answer batch is
    at least one machine's, its prompt batch the same, so it costs no more."""
    assert h100_h100.pools[1].batch >= h100.pools[0].batch
    assert h100_h100.usd_per_mtok <= h100.usd_per_mtok


def test_a_thinner_link_costs_more_once_it_binds(h100_h100):
    thin = _split("H100 SXM", "H100 SXM", link=0.5)
    assert thin.met and thin.usd_per_mtok > h100_h100.usd_per_mtok


def test_cost_scales_with_the_price_and_joules_with_the_draw():
    one = _split("H100 SXM", "A100 SXM", usd_per_chip_hour=lambda c: 1.0,
                 watts_per_chip=lambda c: 100.0)
    two = _split("H100 SXM", "A100 SXM", usd_per_chip_hour=lambda c: 2.0,
                 watts_per_chip=lambda c: 300.0)
    assert two.usd_per_mtok == pytest.approx(2 * one.usd_per_mtok)
    assert two.joules_per_token == pytest.approx(3 * one.joules_per_token)
    assert one.tokens_per_s_per_usd_hour == pytest.approx(1e6 / 3600 / one.usd_per_mtok)


@pytest.mark.parametrize("limits, words", [
    (dict(ttft_limit_s=1e-4), "first token takes"),
    (dict(tpot_limit_s=1e-5), "ms a token"),
])
def test_a_missed_service_level_says_which_phase_and_by_how_much(limits, words):
    for d in (_one("A100 SXM", **limits), _split("H100 SXM", "A100 SXM", **limits)):
        assert not d.met and words in d.missed and math.isnan(d.usd_per_mtok)


def test_a_link_of_zero_is_refused():
    with pytest.raises(ValueError, match="positive bandwidth"):
        _split("H100 SXM", "A100 SXM", link=0)


@pytest.fixture(scope="module")
def small_table():
    return desk.pair_table(1.25, chips=["DGX Spark", "M3 Ultra", "M4 Max (40-core GPU)"])


def test_the_pair_table_holds_each_machine_alone_and_every_pair_that_fits(small_table):
    t = small_table
    assert set(t["workload"]) == {w.name for w in desk.WORKLOADS}
    alone = t[t["alone"]]
    assert (alone["prefill"] == alone["decode"]).all() and (alone["transfer_s"] == 0).all()
    pairs = t[~t["alone"]]
    assert (pairs["prefill"] != pairs["decode"]).all() and (pairs["transfer_s"] > 0).all()
    assert (t["e2e_latency_s"] >= t["ttft_s"]).all()


def test_verdicts_compare_the_best_pair_with_the_best_machine_alone(small_table):
    v = desk.verdicts(small_table, owned="M3 Ultra", candidate="DGX Spark")
    assert len(v) == len(desk.WORKLOADS) * len(desk.MODELS)
    assert (v["pair_over_alone"] == v["best_alone_s"] / v["best_pair_s"]).all()
    owner = v.dropna(subset=["helper_gain"])
    assert (owner["helper_gain"] == owner["owned_s"] / owner["helper_s"]).all()
    assert (owner["helper_gain"] >= owner["candidate_gain"].fillna(0)).all()


def test_a_thinner_link_never_makes_a_pair_faster():
    fast = desk.pair_table(25.0, chips=["DGX Spark", "M3 Ultra"])
    thin = desk.pair_table(0.125, chips=["DGX Spark", "M3 Ultra"])
    key = ["workload", "model", "prefill", "decode"]
    both = fast.merge(thin, on=key, suffixes=("_fast", "_thin"))
    assert len(both) == len(fast) == len(thin)
    assert (both["e2e_latency_s_thin"] >= both["e2e_latency_s_fast"]).all()
