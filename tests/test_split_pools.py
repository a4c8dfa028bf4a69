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


# --- Splitwise, redone (napkin.split.published) ---------------------------------------------

from napkin.split import published  # noqa: E402


def test_the_service_level_is_a_slowdown_of_the_request_alone_on_an_a100():
    for trace in ("coding", "conversation"):
        ttft0, tbt0 = published.alone("DGX-A100", trace)
        lv = published.limits(trace)
        assert lv["tpot_limit_s"] == pytest.approx(1.25 * tbt0)
        e2e = 1.25 * (ttft0 + (lv["output_tokens"] - 1) * tbt0)
        assert lv["ttft_limit_s"] + (lv["output_tokens"] - 1) * lv["tpot_limit_s"] <= \
            e2e * (1 + 1e-12)
        assert lv["ttft_limit_s"] <= 2 * ttft0


def test_bloom_has_the_papers_shape_and_size():
    from napkin.models import load_config
    cfg = load_config(published.bloom_config())
    assert cfg["num_hidden_layers"] == 70 and cfg.kv_heads == 112
    assert 175e9 < cfg.dense_params < 177e9     # BLOOM-176B


@pytest.fixture(scope="module")
def conversation():
    return published.designs("conversation")


def test_every_design_meets_the_level_and_the_capped_pool_draws_less(conversation):
    assert set(conversation) == set(published.DESIGNS)
    assert all(d.met for d in conversation.values())
    hh, cap = conversation["Splitwise-HH"], conversation["Splitwise-HHcap"]
    assert cap.pools[1].watts < hh.pools[1].watts and cap.pools[0] == hh.pools[0]
    assert cap.tokens_per_s_per_kw > hh.tokens_per_s_per_kw
    assert cap.usd_per_mtok == pytest.approx(hh.usd_per_mtok)


def test_each_check_is_a_factor_of_its_prediction_over_the_publication():
    c = published.check("Llama-2-70B")
    assert set(c["predictor"]) == set(published.PREDICTORS)
    assert (c["error"] >= 1).all()
    ratio = c.apply(lambda r: max(r.predicted / r.published, r.published / r.predicted),
                    axis=1)
    assert c["error"].to_numpy() == pytest.approx(ratio.to_numpy(), rel=1e-12)
    one = c[(c["predictor"] == "one machine for both")
            & c["comparison"].str.contains("/ Baseline-A100")]
    assert (one["predicted"] == 1).all()        # a split of A100s gains nothing over them


def test_table_ivs_phases_are_the_models_request_alone():
    rows = published.phase_check()
    assert len(rows) == 16 and (rows["error"] >= 1).all()
    a100 = rows[(rows["machine"] == "DGX-A100") & (rows["trace"] == "coding")
                & (rows["predictor"] == published.PREDICTORS[0])].set_index("quantity")
    ttft, tbt = published.alone("DGX-A100", "coding", model="Llama-2-70B")
    assert a100.loc["P50 TTFT", "predicted_ms"] == pytest.approx(ttft * 1e3)
    assert a100.loc["P50 TBT", "predicted_ms"] == pytest.approx(tbt * 1e3)


def test_an_unknown_model_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="BLOOM-176B, Llama-2-70B"):
        published.check("Llama-3.1-8B")


# --- the page's calculator (napkin.split.figures.calculator) --------------------------------

CALC = [  # prefill, decode, link, model, weights, prompt, answer, streamed
    ("DGX Spark", "M3 Ultra", "10 GbE", "Llama-3.1-8B", "F16", 8192, 500, True),
    ("DGX Spark", "M3 Ultra", "Thunderbolt 5", "Llama-3.3-70B", "Q4_K", 40000, 1000, False),
    ("RTX PRO 6000 Blackwell", "M3 Ultra", "10 GbE", "gpt-oss-120b", "MXFP4", 16000, 200,
     True),
    ("M3 Ultra", "M3 Ultra", "10 GbE", "Llama-3.1-8B", "Q8_0", 2000, 2, True),
]


@pytest.fixture(scope="module")
def calc_inputs():
    from napkin import buying, catalog, kvcache, tables
    models = [m for m, _ in desk.MODELS]
    formats = ["F16", "Q8_0", "Q4_K", "MXFP4"]
    rows = buying.calculator_rows(models, formats)
    rows = rows[rows["machine"].isin(desk.desk_chips())]
    layers = {m: len(kvcache.layers(catalog.config(m))) for m in models}
    return rows, layers, tables.load("links"), formats


@pytest.mark.parametrize("p, d, link, model, fmt, prompt, answer, streamed", CALC)
def test_the_page_computes_what_predict_split_does(calc_inputs, p, d, link, model, fmt,
                                                   prompt, answer, streamed):
    """Render the calculator (vl-convert runs Vega) and read each bar's audit description."""
    import re

    import vl_convert as vlc

    import napkin
    from napkin import tables
    from napkin.split import figures as charts

    rows, layers, links, formats = calc_inputs
    start = dict(prefill=p, decode=d, link=link, model=model, fmt=fmt, prompt=prompt,
                 answer=answer, streamed=streamed)
    chart = charts.calculator(rows, layers, links, formats, start=start, audit=True)
    svg = vlc.vegalite_to_svg(chart.to_dict() | {"width": 600})
    shown = {}
    for label in re.findall(r'aria-label="(way=[^"]*)"', svg):
        f = dict(part.split("=", 1) for part in label.replace("&gt;", ">").split(";"))
        shown[f.pop("way")] = f
    gbps = float(tables.row("links", "link", link)["bandwidth_GB_per_s"])
    kw = dict(weights=fmt, kv="f16", input_tokens=prompt, output_tokens=answer)
    want = {f"{p} -> {d}": napkin.predict_split(p, d, model, link_gb_per_s=None if p == d
                                                else gbps, overlap=streamed, **kw),
            f"{p} alone": napkin.predict_split(p, p, model, link_gb_per_s=None, **kw)}
    if d != p:
        want[f"{d} alone"] = napkin.predict_split(d, d, model, link_gb_per_s=None, **kw)
    assert set(shown) == set(want)
    for way, s in want.items():
        got = shown[way]
        assert float(got["ttft"]) == pytest.approx(s.ttft_s, rel=1e-9), way
        assert float(got["e2e"]) == pytest.approx(s.e2e_latency_s, rel=1e-9), way
